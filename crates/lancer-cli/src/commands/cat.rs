//! `lancer cat` and `lancer take`: print rows.

use std::path::Path;

use super::{open_traced, projection, CmdResult};
use crate::args::Format;
use crate::output::print_batch;

/// Prints rows `offset..offset+limit`.
pub fn cat(
    path: &Path,
    columns: &[String],
    offset: u64,
    limit: Option<u64>,
    format: Format,
) -> CmdResult {
    let (reader, _) = open_traced(path)?;
    let n = reader.num_rows();
    let start = offset.min(n);
    let end = limit.map_or(n, |l| start.saturating_add(l).min(n));
    let proj = projection(columns);
    let batch = reader.read_range(start..end, proj.as_deref())?;
    print_batch(&batch, format)
}

/// Prints the rows at `rows`.
pub fn take(path: &Path, rows: &[u64], columns: &[String], format: Format) -> CmdResult {
    let (reader, _) = open_traced(path)?;
    let proj = projection(columns);
    let batch = reader.take(rows, proj.as_deref())?;
    print_batch(&batch, format)
}
