//! Constant pages (spec: "Constant Page Layout"): every visible value is null (no
//! scalar) or the same scalar. The scalar is inline in the layout when it is small, or
//! serialized in buffer 0 (then `count: u32`, the `count` buffer sizes as `u32`, and
//! the scalar's Arrow buffers, the value bytes last). Structure, when there is any, is
//! stored as repetition then definition levels after the scalar buffer (buffers 1 and
//! 2) or from buffer 0 when there is none: flat 16-bit values in older 2.1 files and in
//! pylance 14's 2.2 pages (count given by the buffer length), or block-compressed as
//! described by `rep_compression` / `def_compression`. A page of one nullable level and
//! no buffers is simply all null.

use std::ops::Range;

use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::miniblock::decode_levels;
use super::{concat_runs, Layer, LeafRun, LevelInfo, Stream};
use crate::block::{to_arrow, DataBlock};
use crate::compression::compression_of;
use crate::container::PageInfo;
use crate::pb::enc21::ConstantLayout;
use crate::read::RangeRead;
use crate::{FormatError, Result};

/// A constant page with its levels loaded.
#[derive(Debug)]
pub struct ConstantPage {
    layers: Vec<Layer>,
    info: LevelInfo,
    rep: Option<Vec<u16>>,
    def: Option<Vec<u16>>,
    value: Option<Buffer>,
    num_rows: u64,
}

fn flat16(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// Parses a serialized scalar: `count: u32`, `count` buffer sizes (`u32` each), then
/// the buffers back to back — the buffers of a one-value Arrow array (for strings and
/// binaries: offsets `[0, len]`, then the bytes). The value is the last buffer.
fn scalar_buffer(b: &[u8]) -> Result<Buffer> {
    let rd = |p: usize| -> Result<usize> {
        b.get(p..p + 4)
            .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as usize)
            .ok_or_else(|| FormatError::corrupt("constant scalar buffer truncated"))
    };
    let count = rd(0)?;
    if count == 0 || count > 16 {
        return Err(FormatError::corrupt(format!(
            "constant scalar with {count} buffers"
        )));
    }
    let mut start = 4 + 4 * count;
    let mut last = &b[0..0];
    for i in 0..count {
        let len = rd(4 + 4 * i)?;
        last = b
            .get(start..start.saturating_add(len))
            .ok_or_else(|| FormatError::corrupt("constant scalar buffer truncated"))?;
        start += len;
    }
    Ok(Buffer::from_slice_ref(last))
}

impl ConstantPage {
    /// Loads the levels of `page`.
    pub fn load(page: &PageInfo, layout: &ConstantLayout, io: &dyn RangeRead) -> Result<Self> {
        let layers = Layer::list_from_pb(&layout.layers)?;
        let info = LevelInfo::new(&layers);
        // Buffer layouts: [rep, def] (all null, or an inline scalar); [scalar] (one
        // out-of-line scalar, no levels); [scalar, rep, def] (an out-of-line scalar with
        // structure — e.g. "" or null, or every list holding the same string).
        let scalar_first = layout.inline_value.is_none() && matches!(page.buffers.len(), 1 | 3);
        let bufs: Vec<Range<u64>> = page.buffers.iter().take(3).cloned().collect();
        let got = if bufs.iter().any(|r| r.end > r.start) {
            io.read_ranges(&bufs)?
        } else {
            Vec::new()
        };
        let value = if scalar_first {
            let b = got
                .first()
                .ok_or_else(|| FormatError::corrupt("constant page without its scalar buffer"))?;
            Some(scalar_buffer(b)?)
        } else {
            layout.inline_value.as_ref().map(Buffer::from_slice_ref)
        };
        let first_level = usize::from(scalar_first);
        let level = |i: usize,
                     enc: &Option<crate::pb::enc21::CompressiveEncoding>,
                     n: u64|
         -> Result<Option<Vec<u16>>> {
            let Some(b) = got.get(first_level + i).filter(|b| !b.is_empty()) else {
                return Ok(None);
            };
            match enc {
                Some(e) => {
                    let c = compression_of(Some(e), "constant page levels")?;
                    decode_levels(c, Buffer::from(b.clone()), n).map(Some)
                }
                None => Ok(Some(flat16(b))),
            }
        };
        let rep = level(0, &layout.rep_compression, layout.num_rep_values)?;
        let mut def = level(1, &layout.def_compression, layout.num_def_values)?;
        if rep.is_none() && def.is_none() && value.is_none() {
            // All null at the leaf's own level.
            let leaf_level = match layers.first() {
                Some(Layer::NullableItem) => 1,
                _ => {
                    return Err(FormatError::corrupt(
                        "all-null page without levels whose leaf is not nullable",
                    ))
                }
            };
            let n =
                usize::try_from(page.num_rows).map_err(|_| FormatError::corrupt("row count"))?;
            def = Some(vec![leaf_level; n]);
        }
        Ok(Self {
            layers,
            info,
            rep,
            def,
            value,
            num_rows: page.num_rows,
        })
    }

    /// Structural layers (inner-most first).
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Reads rows `ranges`.
    pub fn read(&self, ranges: &[Range<u64>], value_type: &DataType) -> Result<LeafRun> {
        let entries =
            super::num_entries(self.rep.as_ref(), self.def.as_ref(), self.num_rows as usize);
        let visible = match &self.def {
            Some(d) => d
                .iter()
                .filter(|&&x| x <= self.info.max_visible_def)
                .count(),
            None => entries,
        } as u64;
        let block = match &self.value {
            Some(v) => DataBlock::Constant {
                value: v.clone(),
                num_values: visible,
            },
            None => DataBlock::AllNull {
                num_values: visible,
            },
        };
        let stream = Stream {
            rep: self.rep.clone(),
            def: self.def.clone(),
            values: to_arrow(block, value_type, None)?,
        };
        let mut runs = Vec::new();
        for r in ranges.iter().filter(|r| r.start < r.end) {
            if r.end > self.num_rows {
                return Err(FormatError::OutOfRange {
                    what: format!("rows {r:?} of a {}-row page", self.num_rows),
                });
            }
            runs.push(stream.slice_rows(self.info, false, r.clone())?);
        }
        concat_runs(runs, self.info, value_type)
    }
}
