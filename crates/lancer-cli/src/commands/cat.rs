//! `lancer cat` and `lancer take`: print rows of a dataset or data file.

use std::path::Path;

use lancer::{DatasetExt, Filter};

use super::source::Source;
use super::{projection, CmdResult};
use crate::args::{Format, VersionArgs};
use crate::output::{print_batch, RowSink};

/// What `cat` prints.
pub struct CatArgs<'a> {
    /// Columns (top-level or struct paths); empty for all.
    pub columns: &'a [String],
    /// SQL filter.
    pub filter: Option<&'a str>,
    /// Rows to skip (after the filter).
    pub offset: u64,
    /// Rows to print at most.
    pub limit: Option<u64>,
    /// Add `_rowid` / `_rowaddr`.
    pub with_row_id: bool,
    /// Add `_rowaddr`.
    pub with_row_address: bool,
}

/// Prints the rows `args` selects; datasets stream through the scanner.
pub fn cat(path: &Path, args: &CatArgs<'_>, format: Format, at: &VersionArgs) -> CmdResult {
    match Source::open(path, at)? {
        Source::Dataset(ds) => {
            let mut scan = ds.scan().offset(args.offset).limit(args.limit);
            if !args.columns.is_empty() {
                scan = scan.columns(args.columns);
            }
            if let Some(f) = args.filter {
                scan = scan.filter(f);
            }
            let scan = scan
                .with_row_id(args.with_row_id)
                .with_row_address(args.with_row_address);
            let stream = scan.stream()?;
            let mut sink = RowSink::new(format, stream.schema())?;
            for b in stream {
                sink.write(&b?)?;
            }
            sink.finish()
        }
        src @ Source::File(_) => {
            if args.with_row_id || args.with_row_address {
                return Err("--with-row-id / --with-row-address apply to datasets".into());
            }
            let n = src.num_rows();
            let proj = projection(args.columns);
            let batch = match args.filter {
                None => {
                    let start = args.offset.min(n);
                    let end = args.limit.map_or(n, |l| start.saturating_add(l).min(n));
                    src.range(start, end, proj.as_deref())?
                }
                Some(sql) => {
                    // A single file: read it, filter, then page.
                    let all = src.range(0, n, None)?;
                    let f = Filter::new(sql, &all.schema())?;
                    let kept = arrow_select::filter::filter_record_batch(&all, &f.evaluate(&all)?)?;
                    let start = (args.offset as usize).min(kept.num_rows());
                    let len = args.limit.map_or(kept.num_rows() - start, |l| {
                        (l as usize).min(kept.num_rows() - start)
                    });
                    let page = kept.slice(start, len);
                    match proj {
                        None => page,
                        Some(cols) => {
                            let idx = cols
                                .iter()
                                .map(|c| page.schema().index_of(c))
                                .collect::<Result<Vec<_>, _>>()?;
                            page.project(&idx)?
                        }
                    }
                }
            };
            print_batch(&batch, format)
        }
    }
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
