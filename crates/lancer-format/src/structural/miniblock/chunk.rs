//! Decoding mini-block chunks: a chunk's header and buffers, its repetition and
//! definition levels, its values (FSST strings expanded, dictionary indices resolved)
//! into a stream of the page's structural layers.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, UInt64Array};
use arrow_buffer::Buffer;
use arrow_schema::DataType;

use crate::block::{to_arrow, DataBlock, Offsets};
use crate::compression::{self, compression_of};
use crate::pb::enc21::compressive_encoding::Compression;
use crate::structural::Stream;
use crate::{FormatError, Result};

use super::{pad, MiniBlockPage};

impl MiniBlockPage {
    /// Decodes the chunks of `span`, whose bytes are `bytes`, into one stream.
    pub(super) fn decode_span(
        &self,
        span: &Range<usize>,
        bytes: Buffer,
        value_c: &Compression,
        value_type: &DataType,
    ) -> Result<Stream> {
        let base = self.chunks[span.start].offset;
        let has_rep = self.layout.rep_compression.is_some();
        let has_def = self.layout.def_compression.is_some();
        let mut rep: Option<Vec<u16>> = has_rep.then(Vec::new);
        let mut def: Option<Vec<u16>> = has_def.then(Vec::new);
        let mut values: Vec<ArrayRef> = Vec::with_capacity(span.len());
        let idx_type = self.dictionary.as_ref().map(|_| DataType::UInt64);
        for c in span.clone() {
            let meta = self.chunks[c];
            let start = (meta.offset - base) as usize;
            let chunk = bytes.slice_with_length(start, meta.size as usize);
            let (r, d, vals) = self.decode_chunk(&chunk, meta.num_values, value_c)?;
            if let (Some(out), Some(r)) = (rep.as_mut(), r) {
                out.extend_from_slice(&r);
            }
            if let (Some(out), Some(d)) = (def.as_mut(), d) {
                out.extend_from_slice(&d);
            }
            let arr = match &idx_type {
                Some(_) => indices_array(vals)?,
                None => to_arrow(vals, value_type, None)?,
            };
            values.push(arr);
        }
        let refs: Vec<&dyn Array> = values.iter().map(|a| a.as_ref()).collect();
        let values = if refs.len() == 1 {
            values.swap_remove(0)
        } else {
            arrow_select::concat::concat(&refs)?
        };
        Ok(Stream { rep, def, values })
    }

    #[allow(clippy::type_complexity)]
    fn decode_chunk(
        &self,
        chunk: &Buffer,
        num_values: u64,
        value_c: &Compression,
    ) -> Result<(Option<Vec<u16>>, Option<Vec<u16>>, DataBlock)> {
        let parts = self.chunk_parts(chunk)?;
        let n = parts.num_levels;
        let rep = self.levels(&self.layout.rep_compression, parts.rep, n)?;
        let def = self.levels(&self.layout.def_compression, parts.def, n)?;
        let values = compression::miniblock(value_c, parts.values, num_values)?;
        Ok((rep, def, values))
    }

    /// A chunk's `n` repetition or definition levels from their buffer, when the
    /// layout has that kind (`enc`).
    pub(super) fn levels(
        &self,
        enc: &Option<crate::pb::enc21::CompressiveEncoding>,
        buf: Option<Buffer>,
        n: usize,
    ) -> Result<Option<Vec<u16>>> {
        match (enc, buf) {
            (Some(e), Some(buf)) => {
                let c = compression_of(Some(e), "levels")?;
                decode_levels(c, buf, n as u64).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A chunk's header read: its level count and its (still encoded) repetition,
    /// definition and value buffers.
    fn chunk_parts(&self, chunk: &Buffer) -> Result<ChunkParts> {
        let l = self.chunk_layout(chunk.as_slice())?;
        let cut = |r: Range<usize>| chunk.slice_with_length(r.start, r.end - r.start);
        Ok(ChunkParts {
            num_levels: l.num_levels,
            rep: l.rep.map(cut),
            def: l.def.map(cut),
            values: l.values.into_iter().map(cut).collect(),
        })
    }

    /// Where a chunk's buffers lie in its bytes `b`, as its header says (every range
    /// checked to lie within `b`).
    fn chunk_layout(&self, b: &[u8]) -> Result<ChunkLayout> {
        let mut values = Vec::new();
        let head = self.walk_chunk(b, &mut |r| {
            values.push(r);
            true
        })?;
        Ok(ChunkLayout {
            num_levels: head.num_levels,
            rep: head.rep,
            def: head.def,
            values,
        })
    }

    /// A chunk's level count, definition levels and first value buffer, without
    /// allocating (a sparse pick reads only these, from each of thousands of chunks).
    pub(super) fn chunk_first_values(
        &self,
        b: &[u8],
    ) -> Result<(usize, Option<Range<usize>>, Range<usize>)> {
        let mut first = None;
        let head = self.walk_chunk(b, &mut |r| {
            first = Some(r);
            false
        })?;
        let first =
            first.ok_or_else(|| FormatError::corrupt("mini-block chunk without a value buffer"))?;
        Ok((head.num_levels, head.def, first))
    }

    /// Reads the header of chunk bytes `b`: returns the level count and the ranges of
    /// its repetition and definition levels, and hands each value buffer's range to
    /// `value` in order until it returns false (every range handed out or returned lies
    /// within `b`).
    fn walk_chunk(
        &self,
        b: &[u8],
        value: &mut dyn FnMut(Range<usize>) -> bool,
    ) -> Result<ChunkHead> {
        let short = || FormatError::corrupt("mini-block chunk header truncated");
        let rd16 = |p: usize| -> Result<usize> {
            b.get(p..p + 2)
                .map(|x| u16::from_le_bytes([x[0], x[1]]) as usize)
                .ok_or_else(short)
        };
        let rd32 = |p: usize| -> Result<usize> {
            b.get(p..p + 4)
                .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as usize)
                .ok_or_else(short)
        };
        let mut p = 0usize;
        let num_levels = rd16(p)?;
        p += 2;
        let rep_size = if self.layout.rep_compression.is_some() {
            p += 2;
            Some(rd16(p - 2)?)
        } else {
            None
        };
        let def_size = if self.layout.def_compression.is_some() {
            p += 2;
            Some(rd16(p - 2)?)
        } else {
            None
        };
        let nbuf = usize::try_from(self.layout.num_buffers)
            .ok()
            .filter(|&n| n <= 64)
            .ok_or_else(|| FormatError::corrupt("mini-block chunk buffer count"))?;
        // the value buffers' sizes, read in place: `nbuf` of 2 (or 4) bytes each
        let (sizes_at, word) = (p, if self.layout.has_large_chunk { 4 } else { 2 });
        let size = |j: usize| -> Result<usize> {
            let at = sizes_at + j * word;
            if word == 4 {
                rd32(at)
            } else {
                rd16(at)
            }
        };
        if nbuf > 0 {
            size(nbuf - 1)?; // the header holds them all
        }
        p = pad(sizes_at + nbuf * word);
        let mut take = |size: usize| -> Result<Range<usize>> {
            if p + size > b.len() {
                return Err(FormatError::corrupt(format!(
                    "mini-block chunk buffer of {size} bytes at {p} overruns a {}-byte chunk",
                    b.len()
                )));
            }
            let out = p..p + size;
            p = pad(p + size);
            Ok(out)
        };
        let rep = rep_size.map(&mut take).transpose()?;
        let def = def_size.map(&mut take).transpose()?;
        for j in 0..nbuf {
            if !value(take(size(j)?)?) {
                break;
            }
        }
        Ok(ChunkHead {
            num_levels,
            rep,
            def,
        })
    }
}

/// Where one mini-block chunk's buffers lie in its bytes.
struct ChunkLayout {
    num_levels: usize,
    rep: Option<Range<usize>>,
    def: Option<Range<usize>>,
    values: Vec<Range<usize>>,
}

/// A mini-block chunk's level count and where its levels lie.
struct ChunkHead {
    num_levels: usize,
    rep: Option<Range<usize>>,
    def: Option<Range<usize>>,
}

/// One mini-block chunk's buffers, as its header lays them out.
struct ChunkParts {
    num_levels: usize,
    rep: Option<Buffer>,
    def: Option<Buffer>,
    values: Vec<Buffer>,
}

/// Decompresses FSST codes (a binary array of still-compressed strings) into `value_type`.
pub(super) fn expand_fsst(
    table: &[u8],
    codes: &ArrayRef,
    value_type: &DataType,
) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    let (offsets, data) = match codes.data_type() {
        DataType::Binary => {
            let b = codes.as_binary::<i32>();
            let offs = b.value_offsets().iter().map(|&o| o as u32).collect();
            (Offsets::U32(offs), b.values().clone())
        }
        DataType::LargeBinary => {
            let b = codes.as_binary::<i64>();
            let offs = b.value_offsets().iter().map(|&o| o as u64).collect();
            (Offsets::U64(offs), b.values().clone())
        }
        other => {
            return Err(FormatError::corrupt(format!(
                "FSST codes decoded as {other}, not binary"
            )))
        }
    };
    let plain = compression::fsst::decode(table, DataBlock::Variable { offsets, data })?;
    to_arrow(plain, value_type, None)
}

/// Decodes a buffer of levels (16-bit values) with its block compression.
pub fn decode_levels(c: &Compression, buf: Buffer, n: u64) -> Result<Vec<u16>> {
    match compression::block(c, buf, n)? {
        DataBlock::Fixed {
            bits_per_value: 16,
            data,
            ..
        } => Ok(data
            .as_slice()
            .chunks_exact(2)
            .take(n as usize)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect()),
        DataBlock::Constant { value, .. } if value.len() == 2 => {
            let v = u16::from_le_bytes([value.as_slice()[0], value.as_slice()[1]]);
            Ok(vec![v; n as usize])
        }
        _ => Err(FormatError::corrupt("levels are not 16-bit values")),
    }
}

/// The values of dictionary `indices` (as decoded: u64), each checked against the
/// dictionary's length.
pub(super) fn expand_dictionary(dict: &ArrayRef, indices: &ArrayRef) -> Result<ArrayRef> {
    let idx = indices
        .as_any()
        .downcast_ref::<UInt64Array>()
        .ok_or_else(|| FormatError::corrupt("dictionary indices are not integers"))?;
    if let Some(bad) = idx.values().iter().find(|&&i| i >= dict.len() as u64) {
        return Err(FormatError::corrupt(format!(
            "dictionary index {bad} out of range for {} items",
            dict.len()
        )));
    }
    Ok(arrow_select::take::take(dict.as_ref(), idx, None)?)
}

/// Widens a block of unsigned dictionary indices to u64.
pub fn indices_array(block: DataBlock) -> Result<ArrayRef> {
    let DataBlock::Fixed {
        bits_per_value,
        data,
        num_values,
    } = block
    else {
        return Err(FormatError::corrupt(
            "dictionary indices are not fixed width",
        ));
    };
    let w = match bits_per_value {
        8 | 16 | 32 | 64 => (bits_per_value / 8) as usize,
        _ => {
            return Err(FormatError::corrupt(format!(
                "dictionary indices of {bits_per_value} bits"
            )))
        }
    };
    let v = compression::read_uints(data.as_slice(), w, num_values as usize)?;
    Ok(Arc::new(UInt64Array::from(v)))
}
