//! Compression (spec: "Lance Encoding Strategy" → "Compression"): turns the buffers of a
//! mini-block chunk, a whole block, or one full-zip value back into a [`DataBlock`].
//!
//! One file per technique. [`miniblock`] and [`block`] dispatch on the protobuf
//! `CompressiveEncoding`; full-zip per-value decoding lives in `structural::fullzip`.

pub mod bitpacking;
pub mod bss;
pub mod flat;
pub mod fsst;
pub mod general;
pub mod packed;
pub mod rle;
pub mod variable;

use arrow_buffer::Buffer;

use crate::block::DataBlock;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::CompressiveEncoding;
use crate::{FormatError, Result};

/// Upper bound on values a single chunk or block may claim, to bound allocations.
pub const MAX_VALUES_PER_BLOCK: u64 = 1 << 32;

/// The compression of an encoding, or an error naming where it is missing.
pub fn compression_of<'a>(
    enc: Option<&'a CompressiveEncoding>,
    what: &str,
) -> Result<&'a Compression> {
    enc.and_then(|e| e.compression.as_ref())
        .ok_or_else(|| FormatError::corrupt(format!("{what}: compression description missing")))
}

/// Name of a compression variant, for messages and the inspector.
pub fn name(c: &Compression) -> &'static str {
    match c {
        Compression::Flat(_) => "flat",
        Compression::Variable(_) => "variable",
        Compression::Constant(_) => "constant",
        Compression::OutOfLineBitpacking(_) => "out-of-line bitpacking",
        Compression::InlineBitpacking(_) => "inline bitpacking",
        Compression::Fsst(_) => "fsst",
        Compression::Dictionary(_) => "dictionary",
        Compression::Rle(_) => "rle",
        Compression::ByteStreamSplit(_) => "byte-stream-split",
        Compression::General(_) => "general",
        Compression::FixedSizeList(_) => "fixed-size-list",
        Compression::PackedStruct(_) => "packed-struct",
        Compression::VariablePackedStruct(_) => "variable-packed-struct",
        Compression::Range(_) => "range",
        Compression::Delta(_) => "delta",
    }
}

fn check_count(num_values: u64) -> Result<()> {
    if num_values > MAX_VALUES_PER_BLOCK {
        return Err(FormatError::corrupt(format!(
            "a block claims {num_values} values"
        )));
    }
    Ok(())
}

/// Decompresses one mini-block chunk's value buffers into `num_values` values.
pub fn miniblock(c: &Compression, buffers: Vec<Buffer>, num_values: u64) -> Result<DataBlock> {
    check_count(num_values)?;
    match c {
        Compression::Flat(f) => flat::decode_miniblock(f, first(buffers)?, num_values),
        Compression::InlineBitpacking(b) => {
            bitpacking::decode_inline(b.uncompressed_bits_per_value, &first(buffers)?, num_values)
        }
        Compression::Variable(v) if !crate::v23::seq::inline_offsets(v) => {
            crate::v23::seq::variable_miniblock(v, buffers, num_values)
        }
        Compression::Variable(v) => variable::decode_miniblock(v, &first(buffers)?, num_values),
        Compression::Range(_) | Compression::Delta(_) => {
            crate::v23::seq::miniblock(c, buffers.first(), num_values)
        }
        Compression::Fsst(f) => {
            let inner = compression_of(f.values.as_deref(), "fsst values")?;
            let block = miniblock(inner, buffers, num_values)?;
            fsst::decode(&f.symbol_table, block)
        }
        Compression::Rle(r) => rle::decode_miniblock(r, buffers, num_values),
        Compression::ByteStreamSplit(b) => bss::decode(b, &first(buffers)?, num_values),
        Compression::General(g) => {
            let inner = compression_of(g.values.as_deref(), "general values")?;
            let mut buffers = buffers;
            let b0 = buffers
                .first()
                .ok_or_else(|| FormatError::corrupt("general chunk without buffers"))?;
            let plain = general::decompress(g.compression.as_ref(), b0)?;
            buffers[0] = plain;
            miniblock(inner, buffers, num_values)
        }
        Compression::FixedSizeList(f) => flat::decode_fsl_miniblock(f, buffers, num_values),
        Compression::PackedStruct(p) => packed::decode_fixed(p, buffers, num_values),
        other => Err(FormatError::unsupported(
            name(other),
            "not valid as mini-block value compression",
        )),
    }
}

/// Decompresses a whole buffer (levels, dictionaries, repetition indexes).
pub fn block(c: &Compression, buf: Buffer, num_values: u64) -> Result<DataBlock> {
    check_count(num_values)?;
    match c {
        Compression::Flat(f) => flat::decode_block(f, buf, num_values),
        Compression::InlineBitpacking(b) => {
            bitpacking::decode_inline_block(b.uncompressed_bits_per_value, &buf, num_values)
        }
        Compression::OutOfLineBitpacking(b) => bitpacking::decode_out_of_line(b, &buf, num_values),
        Compression::Constant(k) => Ok(match &k.value {
            Some(v) => DataBlock::Constant {
                value: Buffer::from_slice_ref(v),
                num_values,
            },
            None => DataBlock::AllNull { num_values },
        }),
        Compression::Variable(_) => variable::decode_block(&buf, num_values),
        Compression::FixedSizeList(f) if f.has_validity => {
            crate::v23::seq::fsl_with_validity_block(f, &buf, num_values)
        }
        Compression::FixedSizeList(f) => flat::decode_fsl_miniblock(f, vec![buf], num_values),
        Compression::General(g) => {
            let inner = compression_of(g.values.as_deref(), "general values")?;
            let plain = general::decompress(g.compression.as_ref(), &buf)?;
            block(inner, plain, num_values)
        }
        Compression::Rle(r) => rle::decode_block(r, &buf, num_values),
        Compression::Fsst(f) => {
            let inner = compression_of(f.values.as_deref(), "fsst values")?;
            let b = block(inner, buf, num_values)?;
            fsst::decode(&f.symbol_table, b)
        }
        Compression::ByteStreamSplit(b) => bss::decode(b, &buf, num_values),
        Compression::Range(_) | Compression::Delta(_) | Compression::Dictionary(_) => {
            crate::v23::seq::block(c, Some(&buf), num_values)
        }
        other => Err(FormatError::unsupported(
            name(other),
            "not valid as block compression",
        )),
    }
}

fn first(buffers: Vec<Buffer>) -> Result<Buffer> {
    buffers
        .into_iter()
        .next()
        .ok_or_else(|| FormatError::corrupt("mini-block chunk has no value buffer"))
}

/// Reads little-endian fixed values of `width` bytes from a buffer into u64s.
pub fn read_uints(buf: &[u8], width: usize, n: usize) -> Result<Vec<u64>> {
    let need = width
        .checked_mul(n)
        .ok_or_else(|| FormatError::corrupt("integer buffer size overflows"))?;
    let bytes = buf.get(..need).ok_or_else(|| {
        FormatError::corrupt(format!(
            "expected {n} {width}-byte integers, buffer has {} bytes",
            buf.len()
        ))
    })?;
    Ok(match width {
        1 => bytes.iter().map(|&b| u64::from(b)).collect(),
        2 => bytes
            .chunks_exact(2)
            .map(|c| u64::from(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
        4 => bytes
            .chunks_exact(4)
            .map(|c| u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        8 => bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
        _ => {
            return Err(FormatError::corrupt(format!(
                "unsupported integer width {width}"
            )))
        }
    })
}
