//! `lancer cat` and `lancer take`: print rows of a dataset or data file.

use lancer::Session;
use std::path::Path;

use lancer::{DatasetExt, Filter};

use super::source::Source;
use super::{projection, CmdResult};
use crate::args::{Format, VersionArgs};
use crate::output::{print_batch, RowSink};

/// Rows a table shows when no --limit is given.
const TABLE_ROWS: u64 = 100;

/// What `cat` prints.
pub struct CatArgs<'a> {
    /// Columns (top-level or struct paths); empty for all.
    pub columns: &'a [String],
    /// Computed columns, `NAME=SQL`.
    pub exprs: &'a [String],
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
    /// Print the plan instead of rows.
    pub explain: bool,
    /// Do not use scalar indexes.
    pub no_index: bool,
}

/// Prints the rows `args` selects; datasets stream through the scanner.
pub fn cat(
    s: &Session,
    path: &Path,
    args: &CatArgs<'_>,
    format: Format,
    at: &VersionArgs,
) -> CmdResult {
    match Source::open(s, path, at)? {
        Source::Dataset(ds) => {
            // A table is for people: without --limit it shows the first rows only.
            let capped = format == Format::Table && args.limit.is_none();
            let limit = if capped { Some(TABLE_ROWS) } else { args.limit };
            let mut scan = ds.scan().offset(args.offset).limit(limit);
            if !args.exprs.is_empty() {
                scan = scan.project(&projection_pairs(&ds.schema(), args.columns, args.exprs)?);
            } else if !args.columns.is_empty() {
                scan = scan.columns(args.columns);
            }
            if let Some(f) = args.filter {
                scan = scan.filter(f);
            }
            let scan = scan
                .with_row_id(args.with_row_id)
                .with_row_address(args.with_row_address)
                .use_scalar_index(!args.no_index);
            if args.explain {
                print!("{}", scan.explain()?);
                return Ok(());
            }
            let stream = scan.stream()?;
            let mut sink = RowSink::new(format, stream.schema())?;
            let mut shown = 0u64;
            for b in stream {
                let b = b?;
                shown += b.num_rows() as u64;
                sink.write(&b)?;
            }
            sink.finish()?;
            if capped && shown == TABLE_ROWS {
                eprintln!(
                    "(the first {TABLE_ROWS} rows; --limit N shows more, --format csv|jsonl|arrow-ipc|parquet streams them all)"
                );
            }
            Ok(())
        }
        src @ Source::File(_) => {
            if args.with_row_id || args.with_row_address || !args.exprs.is_empty() || args.explain {
                return Err(
                    "--with-row-id, --with-row-address, --expr and --explain apply to datasets"
                        .into(),
                );
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

/// `--columns` (all when empty) as SQL that names them, followed by the `--expr`
/// NAME=SQL pairs: one projection of computed columns.
fn projection_pairs(
    schema: &arrow_schema::Schema,
    columns: &[String],
    exprs: &[String],
) -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    let quote = |name: &str| format!("`{}`", name.replace('`', "``"));
    let names: Vec<String> = if columns.is_empty() && exprs.is_empty() {
        schema.fields().iter().map(|f| f.name().clone()).collect()
    } else {
        columns.to_vec()
    };
    let mut pairs = Vec::new();
    for c in names {
        // A top-level name (even one holding dots) is quoted whole; else a struct path.
        let sql = if schema.field_with_name(&c).is_ok() {
            quote(&c)
        } else {
            c.split('.').map(quote).collect::<Vec<_>>().join(".")
        };
        pairs.push((c, sql));
    }
    for e in exprs {
        let (name, sql) = e
            .split_once('=')
            .filter(|(n, s)| !n.trim().is_empty() && !s.trim().is_empty())
            .ok_or_else(|| lancer::Error::InvalidArgument {
                what: format!("--expr {e:?}: expected NAME=SQL, e.g. total=price * qty"),
            })?;
        pairs.push((name.trim().to_string(), sql.trim().to_string()));
    }
    Ok(pairs)
}

/// Prints the rows at `rows`.
pub fn take(
    s: &Session,
    path: &Path,
    rows: &[u64],
    columns: &[String],
    format: Format,
    at: &VersionArgs,
) -> CmdResult {
    let src = Source::open(s, path, at)?;
    let proj = projection(columns);
    let batch = src.take(rows, proj.as_deref())?;
    print_batch(&batch, format)
}
