//! Flat compression: uncompressed fixed-width values (spec: "Compression" → "Flat"),
//! and the fixed-size-list wrapper that flattens lists of fixed-width items (spec:
//! "Fixed Size List"), whose optional item validity is a bitmap buffer of its own.

use arrow_buffer::{BooleanBuffer, Buffer};

use super::general;
use crate::block::DataBlock;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::{FixedSizeList, Flat};
use crate::{FormatError, Result};

/// Bytes needed for `n` values of `bits` bits.
pub fn bytes_for(bits: u64, n: u64) -> Result<u64> {
    bits.checked_mul(n)
        .map(|b| b.div_ceil(8))
        .ok_or_else(|| FormatError::corrupt("value buffer size overflows"))
}

fn fixed(bits: u64, buf: Buffer, num_values: u64) -> Result<DataBlock> {
    if bits == 0 || bits > 1 << 20 {
        return Err(FormatError::corrupt(format!("flat values of {bits} bits")));
    }
    let need = bytes_for(bits, num_values)?;
    if (buf.len() as u64) < need {
        return Err(FormatError::corrupt(format!(
            "flat buffer holds {} bytes, {num_values} values of {bits} bits need {need}",
            buf.len()
        )));
    }
    Ok(DataBlock::Fixed {
        bits_per_value: bits,
        data: buf.slice_with_length(0, need as usize),
        num_values,
    })
}

/// A mini-block chunk of flat values.
pub fn decode_miniblock(f: &Flat, buf: Buffer, num_values: u64) -> Result<DataBlock> {
    fixed(f.bits_per_value, buf, num_values)
}

/// A whole buffer of flat values, possibly wrapped in general compression.
pub fn decode_block(f: &Flat, buf: Buffer, num_values: u64) -> Result<DataBlock> {
    let buf = match &f.data {
        Some(c) => general::decompress(Some(c), &buf)?,
        None => buf,
    };
    fixed(f.bits_per_value, buf, num_values)
}

/// Fixed-size lists: `[validity of this layer?] ++ inner buffers`.
pub fn decode_fsl_miniblock(
    f: &FixedSizeList,
    buffers: Vec<Buffer>,
    num_values: u64,
) -> Result<DataBlock> {
    let dim = f.items_per_value;
    if dim == 0 {
        return Err(FormatError::corrupt(
            "fixed-size list with 0 items per value",
        ));
    }
    let items = num_values
        .checked_mul(dim)
        .ok_or_else(|| FormatError::corrupt("fixed-size list item count overflows"))?;
    let mut buffers = buffers.into_iter();
    let validity = if f.has_validity {
        let v = buffers
            .next()
            .ok_or_else(|| FormatError::corrupt("fixed-size list validity buffer missing"))?;
        let need = items.div_ceil(8);
        if (v.len() as u64) < need {
            return Err(FormatError::corrupt(
                "fixed-size list validity buffer too short",
            ));
        }
        Some(BooleanBuffer::new(v, 0, items as usize))
    } else {
        None
    };
    let rest: Vec<Buffer> = buffers.collect();
    let inner = super::compression_of(f.values.as_deref(), "fixed-size list values")?;
    let child = match inner {
        Compression::FixedSizeList(inner_fsl) => decode_fsl_miniblock(inner_fsl, rest, items)?,
        other => super::miniblock(other, rest, items)?,
    };
    Ok(DataBlock::FixedSizeList {
        dim,
        child: Box::new(child),
        validity,
    })
}
