//! End offsets with null adjustment, as 2.0 `Binary` indices and `List` offsets store
//! them: one value per row, the end of the row's bytes (or items) relative to the
//! page, the start being the previous row's end (0 for the page's first row). A value
//! `>= null_adjustment` marks a null row; subtracting the adjustment gives its end.

use std::ops::Range;

use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder};

use super::decode::{decode, Out};
use super::page::{total, PageCtx};
use crate::block::DataBlock;
use crate::compression::read_uints;
use crate::pb::enc20::ArrayEncoding;
use crate::{FormatError, Result};

/// Unsigned integers decoded for some row ranges of a page, looked up by row.
pub(crate) struct IndexVals {
    /// First row of each decoded range, and where its values start in `vals`.
    starts: Vec<(u64, usize)>,
    vals: Vec<u64>,
}

impl IndexVals {
    /// Decodes `enc` as unsigned integers for sorted, non-overlapping `ranges`.
    pub fn decode(
        enc: &ArrayEncoding,
        ctx: &PageCtx<'_>,
        ranges: &[Range<u64>],
        what: &str,
    ) -> Result<Self> {
        let vals = uints(enc, ctx, ranges, what)?;
        let mut starts = Vec::with_capacity(ranges.len());
        let mut pos = 0usize;
        for r in ranges {
            starts.push((r.start, pos));
            pos += (r.end - r.start) as usize;
        }
        Ok(Self { starts, vals })
    }

    /// The value of row `row`, which must lie in one of the decoded ranges.
    pub fn get(&self, row: u64) -> Result<u64> {
        let i = self.starts.partition_point(|&(s, _)| s <= row);
        i.checked_sub(1)
            .and_then(|i| self.starts.get(i))
            .and_then(|&(s, p)| self.vals.get(p + (row - s) as usize))
            .copied()
            .ok_or_else(|| FormatError::corrupt(format!("offset of row {row} was not decoded")))
    }
}

/// Decodes `enc` (fixed-width, no nulls) for `ranges` into u64 values.
pub(crate) fn uints(
    enc: &ArrayEncoding,
    ctx: &PageCtx<'_>,
    ranges: &[Range<u64>],
    what: &str,
) -> Result<Vec<u64>> {
    let n = total(ranges);
    match decode(enc, ctx, ranges, &arrow_schema::DataType::UInt64)? {
        Out::Block(
            DataBlock::Fixed {
                bits_per_value,
                data,
                num_values,
            },
            None,
        ) if num_values == n && matches!(bits_per_value, 8 | 16 | 32 | 64) => {
            read_uints(data.as_slice(), (bits_per_value / 8) as usize, n as usize)
        }
        Out::Block(DataBlock::Constant { value, num_values }, None) if num_values == n => {
            let v = read_uints(value.as_slice(), value.len().min(8), 1)?;
            Ok(vec![v.first().copied().unwrap_or(0); n as usize])
        }
        _ => Err(FormatError::corrupt(format!(
            "{what}: expected {n} non-null 8/16/32/64-bit integers"
        ))),
    }
}

/// The rows asked for, resolved through their end offsets.
pub(crate) struct Spans {
    /// Output offsets: `n + 1` values starting at 0.
    pub offsets: Vec<u64>,
    /// Validity of the `n` rows.
    pub validity: BooleanBuffer,
    /// For each requested range, the page-relative span of bytes or items it covers.
    pub sources: Vec<Range<u64>>,
}

/// Resolves `ranges` (page-local rows) through the end offsets encoded by `enc`.
/// `limit` bounds the ends (the page's item count), if known.
pub(crate) fn spans(
    enc: &ArrayEncoding,
    ctx: &PageCtx<'_>,
    ranges: &[Range<u64>],
    null_adjustment: u64,
    limit: Option<u64>,
    what: &str,
) -> Result<Spans> {
    // Each range also needs the end of the row before it.
    let mut wanted: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges.iter().filter(|r| r.start < r.end) {
        let s = r.start.saturating_sub(1);
        match wanted.last_mut() {
            Some(last) if s <= last.end => last.end = last.end.max(r.end),
            _ => wanted.push(s..r.end),
        }
    }
    let idx = IndexVals::decode(enc, ctx, &wanted, what)?;
    let end_of = |row: u64| -> Result<(bool, u64)> {
        let v = idx.get(row)?;
        let (valid, end) = if v >= null_adjustment {
            (false, v - null_adjustment)
        } else {
            (true, v)
        };
        if limit.is_some_and(|l| end > l) {
            return Err(FormatError::corrupt(format!(
                "{what}: row {row} ends at {end}, past the page's {} items",
                limit.unwrap_or(0)
            )));
        }
        Ok((valid, end))
    };
    let n = total(ranges);
    let mut offsets = Vec::with_capacity(n as usize + 1);
    offsets.push(0u64);
    let mut validity = BooleanBufferBuilder::new(n as usize);
    let mut sources = Vec::with_capacity(ranges.len());
    let mut out = 0u64;
    for r in ranges {
        let first = if r.start == 0 {
            0
        } else {
            end_of(r.start - 1)?.1
        };
        let mut start = first;
        for row in r.clone() {
            let (valid, end) = end_of(row)?;
            let len = end.checked_sub(start).ok_or_else(|| {
                FormatError::corrupt(format!(
                    "{what}: row {row} ends at {end} before it starts at {start}"
                ))
            })?;
            out = out
                .checked_add(len)
                .ok_or_else(|| FormatError::corrupt(format!("{what}: lengths overflow")))?;
            offsets.push(out);
            validity.append(valid);
            start = end;
        }
        sources.push(first..start);
    }
    Ok(Spans {
        offsets,
        validity: validity.finish(),
        sources,
    })
}
