//! Variable compression: uncompressed variable-width values (spec: "Compression" →
//! "Variable").
//!
//! * Mini-block chunk: one buffer, `num_values + 1` offsets (32 or 64 bits) that are
//!   positions within the chunk buffer itself, followed by the value bytes.
//! * Block: a header of `bits_per_offset: u32` then the position where the value bytes
//!   start (`u32` for 32-bit offsets; for 64-bit offsets 4 bytes of padding then `u64`),
//!   the offsets, then the bytes. An older header (`u8` bits, then the value count, then
//!   the data start) is recognised by non-zero bytes 1..4.

use arrow_buffer::Buffer;

use super::read_uints;
use crate::block::{DataBlock, Offsets};
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::Variable;
use crate::{FormatError, Result};

/// The byte width (4 or 8) of a variable encoding's flat offsets.
pub(crate) fn offsets_width(v: &Variable) -> Result<usize> {
    match super::compression_of(v.offsets.as_deref(), "variable offsets")? {
        Compression::Flat(f) if f.bits_per_value == 32 || f.bits_per_value == 64 => {
            Ok(f.bits_per_value as usize / 8)
        }
        other => Err(FormatError::unsupported(
            super::name(other),
            "variable offsets must be flat 32- or 64-bit",
        )),
    }
}

/// Builds a block from absolute offsets `offs` into `buf`, rebasing them to the data.
fn from_offsets(offs: Vec<u64>, buf: &Buffer, width: usize) -> Result<DataBlock> {
    let first = *offs.first().unwrap_or(&0);
    let last = *offs.last().unwrap_or(&0);
    if first > last || last > buf.len() as u64 {
        return Err(FormatError::corrupt(format!(
            "variable-width offsets {first}..{last} outside a {}-byte buffer",
            buf.len()
        )));
    }
    let data = buf.slice_with_length(first as usize, (last - first) as usize);
    let mut prev = first;
    for &o in &offs {
        if o < prev || o > last {
            return Err(FormatError::corrupt("variable-width offsets decrease"));
        }
        prev = o;
    }
    let offsets = if width == 4 {
        Offsets::U32(offs.iter().map(|&o| (o - first) as u32).collect())
    } else {
        Offsets::U64(offs.iter().map(|&o| o - first).collect())
    };
    Ok(DataBlock::Variable { offsets, data })
}

/// One mini-block chunk of variable-width values.
pub fn decode_miniblock(v: &Variable, buf: &Buffer, num_values: u64) -> Result<DataBlock> {
    let width = offsets_width(v)?;
    let n = usize::try_from(num_values + 1).map_err(|_| FormatError::corrupt("count"))?;
    let offs = read_uints(buf.as_slice(), width, n)?;
    from_offsets(offs, buf, width)
}

/// A whole buffer of variable-width values with the block header.
pub fn decode_block(buf: &Buffer, num_values: u64) -> Result<DataBlock> {
    let b = buf.as_slice();
    let head = b
        .get(..8)
        .ok_or_else(|| FormatError::corrupt("variable block shorter than its header"))?;
    let old = head[1] != 0 || head[2] != 0 || head[3] != 0;
    let (width, data_start, offs_start) = if old {
        match head[0] {
            32 => (4, read_uints(b.get(5..).unwrap_or(&[]), 4, 1)?, 9),
            64 => (8, read_uints(b.get(9..).unwrap_or(&[]), 8, 1)?, 17),
            w => {
                return Err(FormatError::corrupt(format!(
                    "variable block with {w}-bit offsets"
                )))
            }
        }
    } else {
        match u32::from_le_bytes([head[0], head[1], head[2], head[3]]) {
            32 => (4, read_uints(&head[4..], 4, 1)?, 8),
            64 => (8, read_uints(b.get(8..).unwrap_or(&[]), 8, 1)?, 16),
            w => {
                return Err(FormatError::corrupt(format!(
                    "variable block with {w}-bit offsets"
                )))
            }
        }
    };
    let data_start = data_start.first().copied().unwrap_or(0);
    if data_start > b.len() as u64 || data_start < offs_start as u64 {
        return Err(FormatError::corrupt(
            "variable block data start out of range",
        ));
    }
    let n = usize::try_from(num_values + 1).map_err(|_| FormatError::corrupt("count"))?;
    let offs_bytes = &b[offs_start..data_start as usize];
    let offs = read_uints(offs_bytes, width, n)?;
    let data = buf.slice(data_start as usize);
    // Offsets are relative to the data section.
    from_offsets(offs, &data, width)
}
