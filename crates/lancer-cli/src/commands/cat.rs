//! `lancer cat` and `lancer take`: print rows of a dataset or data file.

use std::path::Path;

use super::source::Source;
use super::{projection, CmdResult};
use crate::args::{Format, VersionArgs};
use crate::output::print_batch;

/// Prints rows `offset..offset+limit`.
pub fn cat(
    path: &Path,
    columns: &[String],
    offset: u64,
    limit: Option<u64>,
    format: Format,
    at: &VersionArgs,
) -> CmdResult {
    let src = Source::open(path, at)?;
    let n = src.num_rows();
    let start = offset.min(n);
    let end = limit.map_or(n, |l| start.saturating_add(l).min(n));
    let proj = projection(columns);
    let batch = src.range(start, end, proj.as_deref())?;
    print_batch(&batch, format)
}

/// Prints the rows at `rows`.
pub fn take(
    path: &Path,
    rows: &[u64],
    columns: &[String],
    format: Format,
    at: &VersionArgs,
) -> CmdResult {
    let src = Source::open(path, at)?;
    let proj = projection(columns);
    let batch = src.take(rows, proj.as_deref())?;
    print_batch(&batch, format)
}
