//! 2.0 fixed-width value encodings: `Flat` (plain values or a bitmap, optionally one
//! compressed block), `Bitpacked` (a little-endian bit stream of narrow values,
//! sign-extended when `signed`), `BitpackedForNonNeg` (FastLanes blocks of 1024
//! values) and `Constant`.
//!
//! Uncompressed buffers are read only where the requested rows lie; a compressed
//! buffer is read and decompressed whole.

use std::ops::Range;

use arrow_buffer::{BooleanBufferBuilder, Buffer, MutableBuffer};

use super::page::{total, PageCtx, Source};
use crate::block::DataBlock;
use crate::compression::{bitpacking, general};
use crate::pb::enc20;
use crate::pb::enc21;
use crate::{FormatError, Result};

/// Decompresses a `Flat` buffer compressed with the named scheme.
fn decompress(c: &enc20::Compression, data: &[u8]) -> Result<Buffer> {
    match c.scheme.as_str() {
        "" | "none" => Ok(Buffer::from_slice_ref(data)),
        "zstd" => general::zstd(data).map(Buffer::from_vec),
        "lz4" => general::lz4(data).map(Buffer::from_vec),
        other => Err(FormatError::unsupported(
            format!("2.0 buffer compression {other:?}"),
            "only zstd and lz4 compressed flat buffers are known",
        )),
    }
}

/// `Flat`: values of `bits_per_value` bits (1 = a bitmap) for the rows in `ranges`.
pub(crate) fn flat(f: &enc20::Flat, ctx: &PageCtx<'_>, ranges: &[Range<u64>]) -> Result<DataBlock> {
    let src = ctx.source(f.buffer.as_ref(), "flat values")?;
    match &f.compression {
        None => fixed(&src, f.bits_per_value, ranges),
        Some(c) => {
            if total(ranges) == 0 {
                return fixed(
                    &Source::Memory(Buffer::from_vec(Vec::<u8>::new())),
                    f.bits_per_value,
                    ranges,
                );
            }
            let raw = src.all()?;
            let plain = decompress(c, raw.as_slice())?;
            fixed(&Source::Memory(plain), f.bits_per_value, ranges)
        }
    }
}

/// Values of `bits` bits for the rows in `ranges` of a plain buffer.
pub(crate) fn fixed(src: &Source<'_>, bits: u64, ranges: &[Range<u64>]) -> Result<DataBlock> {
    let n = total(ranges);
    if bits == 1 {
        return bitmap(src, ranges);
    }
    if bits == 0 || !bits.is_multiple_of(8) {
        return Err(FormatError::unsupported(
            format!("flat values of {bits} bits"),
            "2.0 flat values must be a bitmap or whole bytes wide",
        ));
    }
    let parts = super::page::scale(ranges, bits / 8, "flat values")?;
    let data = src.read_concat(&parts, "flat values")?;
    Ok(DataBlock::Fixed {
        bits_per_value: bits,
        data,
        num_values: n,
    })
}

/// Bits for the rows in `ranges` of a bitmap, realigned to start at bit 0.
fn bitmap(src: &Source<'_>, ranges: &[Range<u64>]) -> Result<DataBlock> {
    let n = total(ranges);
    let parts: Vec<Range<u64>> = ranges
        .iter()
        .map(|r| r.start / 8..r.end.div_ceil(8))
        .collect();
    let bufs = src.read(&parts, "bitmap")?;
    let mut out = BooleanBufferBuilder::new(usize::try_from(n).unwrap_or(0));
    for (r, b) in ranges.iter().zip(&bufs) {
        let off = (r.start % 8) as usize;
        let len = (r.end - r.start) as usize;
        if (off + len).div_ceil(8) > b.len() {
            return Err(FormatError::corrupt("bitmap read returned too few bytes"));
        }
        out.append_packed_range(off..off + len, b.as_slice());
    }
    Ok(DataBlock::Fixed {
        bits_per_value: 1,
        data: out.finish().into_inner(),
        num_values: n,
    })
}

/// Checks an uncompressed width and returns it in bytes.
fn value_bytes(bits: u64, what: &str) -> Result<usize> {
    match bits {
        8 | 16 | 32 | 64 => Ok((bits / 8) as usize),
        _ => Err(FormatError::corrupt(format!(
            "{what}: values of {bits} bits (must be 8, 16, 32 or 64)"
        ))),
    }
}

/// Reads `width` bits starting at bit `bit` of `b` (least significant bit first).
fn read_bits(b: &[u8], bit: u64, width: u64) -> Result<u64> {
    let first = (bit / 8) as usize;
    let last = (bit + width).div_ceil(8) as usize;
    let bytes = b
        .get(first..last)
        .ok_or_else(|| FormatError::corrupt("bitpacked values run past their buffer"))?;
    let mut acc: u128 = 0;
    for (i, &x) in bytes.iter().enumerate() {
        acc |= u128::from(x) << (8 * i);
    }
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    Ok(((acc >> (bit % 8)) as u64) & mask)
}

/// `Bitpacked`: value `i` is bits `i * w .. (i + 1) * w` of the buffer.
pub(crate) fn bitpacked(
    b: &enc20::Bitpacked,
    ctx: &PageCtx<'_>,
    ranges: &[Range<u64>],
) -> Result<DataBlock> {
    let size = value_bytes(b.uncompressed_bits_per_value, "bitpacked")?;
    let w = b.compressed_bits_per_value;
    if w == 0 || w > b.uncompressed_bits_per_value {
        return Err(FormatError::corrupt(format!(
            "bitpacked: {w}-bit packing of {}-bit values",
            b.uncompressed_bits_per_value
        )));
    }
    let src = ctx.source(b.buffer.as_ref(), "bitpacked values")?;
    let bit_ranges = super::page::scale(ranges, w, "bitpacked values")?;
    let parts: Vec<Range<u64>> = bit_ranges
        .iter()
        .map(|r| r.start / 8..r.end.div_ceil(8))
        .collect();
    let bufs = src.read(&parts, "bitpacked values")?;
    let n = total(ranges);
    let mut out = MutableBuffer::with_capacity(usize::try_from(n).unwrap_or(0) * size);
    for (r, buf) in bit_ranges.iter().zip(&bufs) {
        let mut bit = r.start % 8;
        let end = bit + (r.end - r.start);
        while bit < end {
            let mut v = read_bits(buf.as_slice(), bit, w)?;
            if b.signed && w < 64 && (v >> (w - 1)) & 1 == 1 {
                v |= u64::MAX << w;
            }
            out.extend_from_slice(v.to_le_bytes().get(..size).unwrap_or_default());
            bit += w;
        }
    }
    Ok(DataBlock::Fixed {
        bits_per_value: b.uncompressed_bits_per_value,
        data: out.into(),
        num_values: n,
    })
}

/// `BitpackedForNonNeg`: FastLanes blocks of 1024 values, each `128 * w` bytes; only
/// the blocks holding requested rows are read.
pub(crate) fn bitpacked_non_neg(
    b: &enc20::BitpackedForNonNeg,
    ctx: &PageCtx<'_>,
    ranges: &[Range<u64>],
) -> Result<DataBlock> {
    const BLOCK: u64 = bitpacking::BLOCK as u64;
    let bits = b.uncompressed_bits_per_value;
    let size = value_bytes(bits, "bitpacked-for-non-negative")?;
    let w = b.compressed_bits_per_value;
    if w > bits {
        return Err(FormatError::corrupt(format!(
            "bitpacked-for-non-negative: {w}-bit packing of {bits}-bit values"
        )));
    }
    let block_bytes = BLOCK * w / 8;
    // Spans of consecutive blocks, each with the row ranges it serves.
    let mut spans: Vec<(Range<u64>, Vec<Range<u64>>)> = Vec::new();
    for r in ranges.iter().filter(|r| r.start < r.end) {
        let (b0, b1) = (r.start / BLOCK, (r.end - 1) / BLOCK + 1);
        match spans.last_mut() {
            Some((s, rs)) if b0 <= s.end => {
                s.end = s.end.max(b1);
                rs.push(r.clone());
            }
            _ => spans.push((b0..b1, vec![r.clone()])),
        }
    }
    let src = ctx.source(b.buffer.as_ref(), "bitpacked-for-non-negative values")?;
    let parts = spans.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>();
    let parts = super::page::scale(&parts, block_bytes, "bitpacked-for-non-negative values")?;
    let bufs = src.read(&parts, "bitpacked-for-non-negative values")?;
    let spec = enc21::OutOfLineBitpacking {
        uncompressed_bits_per_value: bits,
        values: Some(Box::new(enc21::CompressiveEncoding {
            compression: Some(enc21::compressive_encoding::Compression::Flat(
                enc21::Flat {
                    bits_per_value: w,
                    data: None,
                },
            )),
        })),
    };
    let n = total(ranges);
    let mut out = MutableBuffer::with_capacity(usize::try_from(n).unwrap_or(0) * size);
    for ((span, rs), buf) in spans.iter().zip(&bufs) {
        let count = (span.end - span.start) * BLOCK;
        let DataBlock::Fixed { data, .. } = bitpacking::decode_out_of_line(&spec, buf, count)?
        else {
            return Err(FormatError::corrupt(
                "bitpacked blocks decoded to a non-fixed block",
            ));
        };
        let base = span.start * BLOCK;
        for r in rs {
            let s = (r.start - base) as usize * size;
            let e = (r.end - base) as usize * size;
            let vals = data
                .as_slice()
                .get(s..e)
                .ok_or_else(|| FormatError::corrupt("bitpacked blocks shorter than expected"))?;
            out.extend_from_slice(vals);
        }
    }
    Ok(DataBlock::Fixed {
        bits_per_value: bits,
        data: out.into(),
        num_values: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bits_across_bytes() {
        // Values 5, 3, 6 packed in 3 bits each: 101 011 110 -> bits LSB first.
        let packed = [0b1001_1101u8, 0b0000_0001];
        assert_eq!(read_bits(&packed, 0, 3).ok(), Some(5));
        assert_eq!(read_bits(&packed, 3, 3).ok(), Some(3));
        assert_eq!(read_bits(&packed, 6, 3).ok(), Some(6));
        assert!(read_bits(&packed, 14, 3).is_err());
    }
}
