//! Structural encodings of 2.1+ pages (spec: "Structural Encoding").
//!
//! Every 2.1+ page belongs to one leaf column and carries repetition / definition
//! levels for all of the leaf's ancestors. A page decoder turns the rows asked for into
//! a [`LeafRun`]: levels plus the visible leaf values. [`unravel`] turns levels into
//! validity and offsets; the file reader stitches leaves of a struct back together.
//!
//! Layouts: [`miniblock`] (small values in opaque chunks), [`fullzip`] (large values
//! zipped with their control words), [`constant`] (all-null / one value), and blob
//! pages (large binaries out of line), handled in the reader.

pub(crate) mod assemble;
pub mod constant;
pub mod fullzip;
pub mod miniblock;
pub mod unravel;

use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_schema::DataType;

use crate::pb::enc21::RepDefLayer;
use crate::{FormatError, Result};

/// The meaning of one structural level (inner-most first in a page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// A struct or leaf without nulls.
    AllValidItem,
    /// A struct or leaf with nulls (one definition level).
    NullableItem,
    /// A list without nulls or empty lists.
    AllValidList,
    /// A list with nulls (one definition level).
    NullableList,
    /// A list with empty lists (one definition level).
    EmptyableList,
    /// A list with nulls and empty lists (two definition levels: null, then empty).
    NullAndEmptyList,
}

impl Layer {
    /// Maps the protobuf enum.
    pub fn from_pb(v: i32) -> Result<Self> {
        Ok(match RepDefLayer::try_from(v) {
            Ok(RepDefLayer::RepdefAllValidItem) => Self::AllValidItem,
            Ok(RepDefLayer::RepdefNullableItem) => Self::NullableItem,
            Ok(RepDefLayer::RepdefAllValidList) => Self::AllValidList,
            Ok(RepDefLayer::RepdefNullableList) => Self::NullableList,
            Ok(RepDefLayer::RepdefEmptyableList) => Self::EmptyableList,
            Ok(RepDefLayer::RepdefNullAndEmptyList) => Self::NullAndEmptyList,
            _ => {
                return Err(FormatError::unsupported(
                    format!("repetition/definition layer {v}"),
                    "unknown structural layer",
                ))
            }
        })
    }

    /// Maps a list of protobuf layers.
    pub fn list_from_pb(v: &[i32]) -> Result<Vec<Self>> {
        if v.is_empty() {
            return Err(FormatError::corrupt("page has no structural layers"));
        }
        if v.len() > 64 {
            return Err(FormatError::corrupt(
                "page has more than 64 structural layers",
            ));
        }
        v.iter().map(|&l| Self::from_pb(l)).collect()
    }

    /// True for list layers.
    pub fn is_list(self) -> bool {
        matches!(
            self,
            Self::AllValidList | Self::NullableList | Self::EmptyableList | Self::NullAndEmptyList
        )
    }

    /// Definition levels this layer uses.
    pub fn def_levels(self) -> u16 {
        match self {
            Self::AllValidItem | Self::AllValidList => 0,
            Self::NullableItem | Self::NullableList | Self::EmptyableList => 1,
            Self::NullAndEmptyList => 2,
        }
    }
}

/// Level facts derived from a page's layers.
#[derive(Debug, Clone, Copy)]
pub struct LevelInfo {
    /// Repetition level that starts a new top-level row (the number of list layers).
    pub max_rep: u16,
    /// Entries with a definition level up to this one have a leaf value slot.
    pub max_visible_def: u16,
}

impl LevelInfo {
    /// Computes the facts for `layers` (inner-most first).
    pub fn new(layers: &[Layer]) -> Self {
        Self {
            max_rep: layers.iter().filter(|l| l.is_list()).count() as u16,
            max_visible_def: layers
                .iter()
                .take_while(|l| !l.is_list())
                .map(|l| l.def_levels())
                .sum(),
        }
    }
}

/// Levels and visible values for a run of rows of one leaf column.
#[derive(Debug, Clone)]
pub struct LeafRun {
    /// Repetition levels, one per entry (absent without lists).
    pub rep: Option<Vec<u16>>,
    /// Definition levels, one per entry (absent when everything is valid).
    pub def: Option<Vec<u16>>,
    /// Number of top-level rows.
    pub num_rows: u64,
    /// Visible leaf values (null slots included, validity not applied).
    pub values: ArrayRef,
}

/// A decoded stream of entries; may begin with a preamble (the tail of a row that
/// started earlier) when decoded from mini-block chunks.
#[derive(Debug, Clone)]
pub struct Stream {
    /// Repetition levels.
    pub rep: Option<Vec<u16>>,
    /// Definition levels.
    pub def: Option<Vec<u16>>,
    /// Visible values.
    pub values: ArrayRef,
}

/// Entries of a level stream: one per repetition level, else one per definition level,
/// else (no levels at all) `values`, one entry per value.
pub fn num_entries(rep: Option<&Vec<u16>>, def: Option<&Vec<u16>>, values: usize) -> usize {
    rep.map(Vec::len)
        .or_else(|| def.map(Vec::len))
        .unwrap_or(values)
}

impl Stream {
    fn num_entries(&self) -> usize {
        num_entries(self.rep.as_ref(), self.def.as_ref(), self.values.len())
    }

    /// Extracts rows `rows` (relative to the first row that starts in the stream, or to
    /// the stream start when there is no preamble to skip).
    pub fn slice_rows(
        &self,
        info: LevelInfo,
        skip_preamble: bool,
        rows: Range<u64>,
    ) -> Result<LeafRun> {
        let n = self.num_entries();
        if let (Some(r), Some(d)) = (&self.rep, &self.def) {
            if r.len() != d.len() {
                return Err(FormatError::corrupt(format!(
                    "{} repetition levels but {} definition levels",
                    r.len(),
                    d.len()
                )));
            }
        }
        let count = |rows: &Range<u64>| rows.end - rows.start;
        let Some(rep) = &self.rep else {
            // No lists: one entry per row, every entry visible.
            let (s, e) = (rows.start as usize, rows.end as usize);
            if rows.end as usize > n || self.values.len() < n {
                return Err(FormatError::corrupt(format!(
                    "asked for rows {rows:?} of a stream of {n} entries and {} values",
                    self.values.len()
                )));
            }
            return Ok(LeafRun {
                rep: None,
                def: self.def.as_ref().map(|d| d[s..e].to_vec()),
                num_rows: count(&rows),
                values: self.values.slice(s, e - s),
            });
        };
        // Find the entry positions where rows `rows.start` and `rows.end` begin. Entries
        // before the first row start (a preamble) are skipped but their values counted.
        let mut next_row = 0u64;
        let mut level_start = None;
        let mut level_end = None;
        let mut visible = 0usize;
        let mut item_start = 0usize;
        let mut item_end = 0usize;
        let is_visible = |i: usize| match &self.def {
            Some(d) => d[i] <= info.max_visible_def,
            None => true,
        };
        for (i, &r) in rep.iter().enumerate() {
            if r == info.max_rep {
                let row_idx = next_row;
                next_row += 1;
                if row_idx == rows.start {
                    level_start = Some(i);
                    item_start = visible;
                }
                if row_idx == rows.end {
                    level_end = Some(i);
                    item_end = visible;
                    break;
                }
            } else if i == 0 && !skip_preamble {
                return Err(FormatError::corrupt(
                    "stream does not start at a row boundary",
                ));
            }
            if is_visible(i) {
                visible += 1;
            }
        }
        let level_start = level_start.ok_or_else(|| {
            FormatError::corrupt(format!("row {} not found in decoded levels", rows.start))
        })?;
        let level_end = match level_end {
            Some(e) => e,
            None => {
                // Rows run to the end of the stream.
                item_end = visible;
                if next_row < rows.end {
                    return Err(FormatError::corrupt(format!(
                        "asked for rows up to {} but the stream has {next_row}",
                        rows.end
                    )));
                }
                n
            }
        };
        if item_end > self.values.len() || item_start > item_end {
            return Err(FormatError::corrupt(format!(
                "levels reference {item_end} values but {} were decoded",
                self.values.len()
            )));
        }
        Ok(LeafRun {
            rep: Some(rep[level_start..level_end].to_vec()),
            def: self
                .def
                .as_ref()
                .map(|d| d[level_start..level_end].to_vec()),
            num_rows: count(&rows),
            values: self.values.slice(item_start, item_end - item_start),
        })
    }
}

/// Concatenates runs of one leaf column (in row order).
pub fn concat_runs(runs: Vec<LeafRun>, info: LevelInfo, value_type: &DataType) -> Result<LeafRun> {
    if runs.is_empty() {
        return Ok(LeafRun {
            rep: None,
            def: None,
            num_rows: 0,
            values: arrow_array::new_empty_array(value_type),
        });
    }
    if runs.len() == 1 {
        if let Some(r) = runs.into_iter().next() {
            return Ok(r);
        }
        return Err(FormatError::corrupt("no runs"));
    }
    let any_rep = runs.iter().any(|r| r.rep.is_some());
    let any_def = runs.iter().any(|r| r.def.is_some());
    let entries = |r: &LeafRun| num_entries(r.rep.as_ref(), r.def.as_ref(), r.values.len());
    let mut rep = any_rep.then(Vec::new);
    let mut def = any_def.then(Vec::new);
    let mut num_rows = 0;
    let mut values = Vec::with_capacity(runs.len());
    for r in &runs {
        let n = entries(r);
        if let Some(out) = rep.as_mut() {
            match &r.rep {
                Some(v) => out.extend_from_slice(v),
                None => out.extend(std::iter::repeat_n(info.max_rep, n)),
            }
        }
        if let Some(out) = def.as_mut() {
            match &r.def {
                Some(v) => out.extend_from_slice(v),
                None => out.extend(std::iter::repeat_n(0, n)),
            }
        }
        num_rows += r.num_rows;
        values.push(r.values.as_ref());
    }
    let values = if values.is_empty() {
        return Err(FormatError::corrupt("no runs"));
    } else {
        arrow_select::concat::concat(&values)?
    };
    Ok(LeafRun {
        rep,
        def,
        num_rows,
        values,
    })
}

/// Merges sorted row ranges that touch or overlap.
pub fn merge_ranges(ranges: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in ranges {
        if r.start >= r.end {
            continue;
        }
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r.clone()),
        }
    }
    out
}
