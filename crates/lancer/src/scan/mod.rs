//! Scans: the rows of a dataset version, projected, filtered, limited (reference:
//! performance guide, "Scanning Data" — streaming batches, default `batch_size` 8192,
//! ordered scans that still overlap fragment reads; file format, "Reading Strategy").
//!
//! A scan is planned as tasks of at most `batch_size` physical rows each, in dataset
//! order. With a filter, a task reads only the filter's columns first, evaluates the
//! filter, then reads the other columns for just the surviving rows (late
//! materialization; when more than half survive it reads the task's rows whole and
//! drops the rest, which is cheaper than many short runs). Without a filter, `offset`
//! and `limit` choose the tasks' rows directly, so `limit 10` reads ten rows. Tasks run
//! on worker threads with a bounded window of finished-but-unread batches (bounded memory,
//! read-ahead); output keeps dataset order unless `ordered(false)`.

pub(crate) mod columns;
mod exec;
mod explain;
pub(crate) use explain::{data_uri, lance_read};
mod options;
mod order;
mod system;

use system::System;
pub use system::ROW_OFFSET;

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancer_table::Dataset;

pub use exec::ScanStream;
pub use order::SortKey;

use crate::filter::{Expression, Filter};
use crate::{Error, Result};
use columns::ColumnPath;

/// A scan's batch as it leaves the scan: stored JSON columns (JSONB) decoded to text of
/// Arrow's JSON type, as the reference's reads return them ([`lancer_format::json`]).
pub(crate) fn json_text(batch: &RecordBatch) -> Result<RecordBatch> {
    Ok(lancer_format::json::to_text(batch).map_err(lancer_table::TableError::from)?)
}

/// The default rows per batch (the reference's default too).
pub const DEFAULT_BATCH_SIZE: usize = 8192;
/// Name of the stable-row-id output column.
pub const ROW_ID: &str = "_rowid";
/// Name of the row-address output column (`fragment id << 32 | row`).
pub const ROW_ADDRESS: &str = "_rowaddr";

/// A function run on every batch inside the scan's worker threads (e.g. scoring
/// vectors), with the schema of what it returns.
#[derive(Clone)]
pub(crate) struct BatchMap {
    pub(crate) f: Arc<dyn Fn(RecordBatch) -> Result<RecordBatch> + Send + Sync>,
    pub(crate) schema: SchemaRef,
}

impl std::fmt::Debug for BatchMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchMap")
            .field("schema", &self.schema)
            .finish()
    }
}

/// Scan workers on object stores at least: each task waits on a few requests in turn,
/// so more tasks in flight hide the latency.
pub const REMOTE_SCAN_THREADS: usize = 16;

/// Builds a scan of one dataset version.
#[derive(Debug, Clone)]
pub struct Scanner {
    ds: Dataset,
    columns: Option<Vec<String>>,
    computed: Option<Vec<(String, String)>>,
    filter: Option<String>,
    limit: Option<u64>,
    offset: u64,
    batch_size: usize,
    with_row_id: bool,
    with_row_address: bool,
    ordered: bool,
    fragments: Option<Vec<u64>>,
    threads: Option<usize>,
    map: Option<BatchMap>,
    deleted_as_null: bool,
    use_scalar_index: bool,
    /// The scalar index answer to the filter when already computed (a count that
    /// falls back to scanning plans with it instead of asking the indexes again).
    indexed: Option<Arc<Option<crate::plan::scalar::IndexedRows>>>,
    /// Sort keys (`order_by`; see `order.rs`).
    order: Vec<SortKey>,
    /// Search options of pylance's scanner (see `options.rs`).
    opts: options::ScanOptions,
}

impl Scanner {
    /// A scan of every column and row of `ds`.
    pub fn new(ds: &Dataset) -> Self {
        Self {
            ds: ds.clone(),
            columns: None,
            computed: None,
            filter: None,
            limit: None,
            offset: 0,
            batch_size: ds
                .store()
                .context()
                .batch_size()
                .unwrap_or(DEFAULT_BATCH_SIZE),
            with_row_id: false,
            with_row_address: false,
            ordered: true,
            fragments: None,
            threads: None,
            map: None,
            deleted_as_null: false,
            use_scalar_index: true,
            indexed: None,
            order: Vec::new(),
            opts: options::ScanOptions::default(),
        }
    }

    /// Whether the filter may be answered through the dataset's scalar indexes (default
    /// yes; the rows are the same either way).
    pub fn use_scalar_index(mut self, yes: bool) -> Self {
        self.use_scalar_index = yes;
        self
    }

    /// Runs `map` on every batch in the worker threads; the stream yields what it
    /// returns. Offset and limit count the scan's rows, so they cannot be combined.
    pub(crate) fn map_batches(mut self, map: BatchMap) -> Self {
        self.map = Some(map);
        self
    }

    /// For a mapped scan without a filter: each task reads the span of physical rows
    /// from its first kept row to its last in one piece (zero-copy where the encoding
    /// allows, e.g. full-zip vectors) and hands deleted rows to the map as nulls in every
    /// column (row ids / addresses cover the whole span). Output columns become nullable.
    /// This keeps an exact search from copying every batch to drop deleted rows.
    pub(crate) fn deleted_as_null(mut self) -> Self {
        self.deleted_as_null = true;
        self
    }

    /// Output columns, in this order: top-level names or struct paths (`a.b`).
    pub fn columns<S: AsRef<str>>(mut self, columns: &[S]) -> Self {
        self.columns = Some(columns.iter().map(|c| c.as_ref().to_string()).collect());
        self.computed = None;
        self
    }

    /// Output columns computed by SQL expressions, as `(name, expression)` in order —
    /// `("id2", "id * 2")`, `("lang", "meta.lang")`, `("up", "upper(s)")` — like
    /// pylance's `columns={name: expression}`. Replaces [`Scanner::columns`].
    pub fn project<N: AsRef<str>, E: AsRef<str>>(mut self, exprs: &[(N, E)]) -> Self {
        self.computed = Some(
            exprs
                .iter()
                .map(|(n, e)| (n.as_ref().to_string(), e.as_ref().to_string()))
                .collect(),
        );
        self.columns = None;
        self
    }

    /// Keeps only rows for which the SQL boolean expression is true.
    pub fn filter(mut self, sql: &str) -> Self {
        self.filter = Some(sql.to_string());
        self
    }

    /// At most this many rows (after the filter and offset).
    pub fn limit(mut self, limit: Option<u64>) -> Self {
        self.limit = limit;
        self
    }

    /// Skips this many rows (after the filter).
    pub fn offset(mut self, offset: u64) -> Self {
        self.offset = offset;
        self
    }

    /// Rows per output batch (at most).
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows.max(1);
        self
    }

    /// Adds `_rowid` (the stable row id, or the address when the dataset has none).
    pub fn with_row_id(mut self, yes: bool) -> Self {
        self.with_row_id = yes;
        self
    }

    /// Adds `_rowaddr` (`fragment id << 32 | row in fragment`).
    pub fn with_row_address(mut self, yes: bool) -> Self {
        self.with_row_address = yes;
        self
    }

    /// Whether batches come in dataset order (default) or as soon as they are read.
    pub fn ordered(mut self, yes: bool) -> Self {
        self.ordered = yes;
        self
    }

    /// Scans only these fragments (by id), in the given order.
    pub fn fragments(mut self, ids: &[u64]) -> Self {
        self.fragments = Some(ids.to_vec());
        self
    }

    /// Worker threads (default: available cores; on object stores at least
    /// [`REMOTE_SCAN_THREADS`], whose work is mostly waiting on requests).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n.max(1));
        self
    }

    /// The schema of the batches this scan yields.
    pub fn schema(&self) -> Result<SchemaRef> {
        Ok(self.plan()?.yields())
    }

    /// Starts the scan.
    pub fn stream(&self) -> Result<ScanStream> {
        self.opts.check(self.with_row_id)?;
        let stream = self.stream_unchecked()?;
        Ok(match self.opts.strict_batch_size {
            true => ScanStream::exact(stream, self.batch_size),
            false => stream,
        })
    }

    fn stream_unchecked(&self) -> Result<ScanStream> {
        if !self.order.is_empty() {
            return self.sorted_stream();
        }
        let plan = Arc::new(self.plan()?);
        let threads = self
            .threads
            .unwrap_or_else(|| match self.ds.store().local_root() {
                Some(_) => lancer_util::cores(),
                None => lancer_util::cores().max(REMOTE_SCAN_THREADS),
            });
        Ok(ScanStream::start(plan, threads))
    }

    /// The whole result as one batch.
    pub fn to_batch(&self) -> Result<RecordBatch> {
        let stream = self.stream()?;
        let schema = stream.schema();
        let batches = stream.collect::<Result<Vec<_>>>()?;
        Ok(lancer_table::dataset::concat_batches(&schema, &batches)?)
    }

    /// How many rows the scan yields, reading only the filter's columns.
    pub fn count_rows(&self) -> Result<u64> {
        self.opts.check(self.with_row_id)?;
        let mut counting = self.clone();
        counting.opts.strict_batch_size = false;
        if counting.opts.include_deleted_rows {
            // deleted rows count too: no index answer (it leaves them out)
            counting.use_scalar_index = false;
        }
        counting.columns = Some(Vec::new());
        counting.computed = None;
        counting.map = None;
        counting.with_row_id = false;
        counting.with_row_address = false;
        if counting.filter.is_none() {
            let plan = counting.plan()?;
            return Ok(plan.tasks.iter().map(Task::rows).sum());
        }
        // An exact index answer counts its fragments without reading them: the
        // answer's rows in each kept run of the fragment, by bitmap cardinality.
        let schema = self.ds.schema();
        let filter = counting
            .filter
            .as_deref()
            .map(|f| Filter::new(f, &system::filter_schema(&schema)))
            .transpose()?;
        // The index answer, asked once: a count that scans (an inexact answer, or
        // fragments the index does not cover) plans with it.
        if let Some(f) = filter
            .as_ref()
            .filter(|_| counting.use_scalar_index && self.offset == 0 && self.limit.is_none())
        {
            counting.indexed = Some(Arc::new(crate::plan::scalar::plan(&self.ds, f)?));
        }
        let exact = counting
            .indexed
            .as_deref()
            .and_then(Option::as_ref)
            .filter(|ix| ix.exact);
        if let Some(ix) = exact {
            let frags = self.ds.fragments();
            let chosen: Vec<&lancer_table::pb::DataFragment> = self
                .fragment_order()?
                .into_iter()
                .map(|i| &frags[i])
                .collect();
            self.ds.prefetch_deletions(&chosen)?;
            let mut n = 0u64;
            let mut rest = Vec::new();
            for f in chosen {
                match u32::try_from(f.id)
                    .ok()
                    .filter(|id| ix.covered.contains(*id))
                {
                    Some(id) => n += index_count(self.ds.kept_runs(f)?.runs(), &ix.rows, id),
                    None => rest.push(f.id),
                }
            }
            // fast_search: only what the index covers
            if !rest.is_empty() && !counting.opts.fast_search {
                for b in counting
                    .clone()
                    .fragments(&rest)
                    .ordered(false)
                    .stream_unchecked()?
                {
                    n += b?.num_rows() as u64;
                }
            }
            return Ok(n);
        }
        let mut n = 0u64;
        for b in counting.ordered(false).stream_unchecked()? {
            n += b?.num_rows() as u64;
        }
        Ok(n)
    }

    /// Positions (in the version's fragment list) of the fragments to scan, in order.
    fn fragment_order(&self) -> Result<Vec<usize>> {
        let frags = self.ds.fragments();
        match &self.fragments {
            None => Ok((0..frags.len()).collect()),
            Some(ids) => {
                ids.iter()
                    .map(|id| {
                        frags.iter().position(|f| f.id == *id).ok_or_else(|| {
                            Error::InvalidArgument {
                                what: format!(
                                    "fragment {id} is not in version {} (see `lancer inspect`)",
                                    self.ds.version()
                                ),
                            }
                        })
                    })
                    .collect()
            }
        }
    }

    fn plan(&self) -> Result<Plan> {
        let schema = self.ds.schema();
        let outputs: Vec<Output> = match &self.computed {
            Some(exprs) => exprs
                .iter()
                .map(|(n, e)| Ok(Output::Computed(n.clone(), Expression::new(e, &schema)?)))
                .collect::<Result<_>>()?,
            None => match &self.columns {
                // system columns (`_rowid`, `_rowaddr`, `_rowoffset`) where named
                Some(cols) => cols
                    .iter()
                    .map(|c| match System::named(c, &schema) {
                        Some(sys) => Ok(Output::System(sys)),
                        None => columns::ColumnPath::resolve(&schema, c).map(Output::Path),
                    })
                    .collect::<Result<_>>()?,
                None => columns::resolve_all(&schema, None)?
                    .into_iter()
                    .map(Output::Path)
                    .collect(),
            },
        };
        let filter = self
            .filter
            .as_deref()
            .map(|f| Filter::new(f, &system::filter_schema(&schema)))
            .transpose()?;
        // the system columns the filter names, computed for each task's rows
        let filter_system: Vec<System> = filter
            .as_ref()
            .map(|f| {
                f.columns()
                    .iter()
                    .filter_map(|c| System::named(c, &schema))
                    .collect()
            })
            .unwrap_or_default();
        let offset_bases = match outputs
            .iter()
            .any(|o| matches!(o, Output::System(System::Offset)))
        {
            true => system::offset_bases(&self.ds)?,
            false => Vec::new(),
        };

        let indexed = match (&self.indexed, &filter) {
            _ if self.opts.include_deleted_rows => None,
            (Some(known), Some(_)) => known.as_ref().clone(),
            (_, Some(f)) if self.use_scalar_index => crate::plan::scalar::plan(&self.ds, f)?,
            _ => None,
        };
        // Top-level columns to read, in schema order (and those the outputs alone need,
        // for rows an exact index answer leaves: no filter to evaluate there).
        let mut read = Vec::new();
        let mut out_read = Vec::new();
        for f in schema.fields() {
            let n = f.name();
            let by_output = outputs.iter().any(|o| o.reads(n));
            if by_output || filter.as_ref().is_some_and(|fl| fl.columns().contains(n)) {
                read.push(n.clone());
            }
            if by_output {
                out_read.push(n.clone());
            }
        }
        let deleted_as_null = self.deleted_as_null && self.map.is_some() && filter.is_none();
        let mut fields: Vec<Field> = outputs
            .iter()
            .map(|o| {
                let f = o.field();
                let nullable = f.is_nullable() || deleted_as_null;
                f.with_nullable(nullable)
            })
            .collect();
        if self.with_row_id {
            fields.push(Field::new(ROW_ID, DataType::UInt64, true));
        }
        if self.with_row_address {
            fields.push(Field::new(ROW_ADDRESS, DataType::UInt64, true));
        }
        let output = Arc::new(Schema::new(fields).with_metadata(schema.metadata().clone()));

        let frags = self.ds.fragments();
        let order = self.fragment_order()?;
        // Without a filter, offset/limit pick rows directly.
        let (mut skip, mut left) = match filter {
            None => (self.offset, self.limit.unwrap_or(u64::MAX)),
            Some(_) => (0, u64::MAX),
        };
        // each fragment's deletion file: on object stores, all in flight together
        let wanted: Vec<&lancer_table::pb::DataFragment> =
            order.iter().map(|&i| &frags[i]).collect();
        self.ds.prefetch_deletions(&wanted)?;
        let mut tasks = Vec::new();
        for fi in order {
            if left == 0 {
                break;
            }
            let kept = self.ds.kept_runs(&frags[fi])?;
            let covered = indexed
                .as_ref()
                .filter(|ix| u32::try_from(frags[fi].id).is_ok_and(|id| ix.covered.contains(id)));
            if self.opts.fast_search && indexed.is_some() && covered.is_none() {
                continue;
            }
            let physical = 0..frags[fi].physical_rows;
            let kept_runs: &[Range<u64>] = match self.opts.include_deleted_rows {
                true => std::slice::from_ref(&physical),
                false => kept.runs(),
            };
            // A local scan leaves the rows of an index answer (which comes with a
            // filter, so with no offset or limit to apply here) to the workers, in
            // windows of `batch_size` rows; a remote one plans their runs, which its
            // fetch-ahead needs anyway.
            if let Some(ix) = covered.filter(|_| !self.ds.is_remote()) {
                let rows = kept_index_rows(kept.runs(), &ix.rows, frags[fi].id);
                tasks.extend(picked_tasks(
                    fi,
                    &Arc::new(rows.into_owned()),
                    self.batch_size as u64,
                ));
                continue;
            }
            let narrowed;
            let runs: &[Range<u64>] = match covered {
                Some(ix) => {
                    narrowed = index_runs(kept.runs(), &ix.rows, frags[fi].id);
                    &narrowed
                }
                None => kept_runs,
            };
            let total = run_rows(runs);
            if skip >= total {
                skip -= total;
                continue;
            }
            let mut chunk: Vec<Range<u64>> = Vec::new();
            let mut in_chunk = 0u64;
            for r in runs {
                let mut r = r.clone();
                let cut = skip.min(r.end - r.start);
                r.start += cut;
                skip -= cut;
                while r.start < r.end && left > 0 {
                    let room = (self.batch_size as u64 - in_chunk).min(left);
                    let end = r.end.min(r.start + room);
                    chunk.push(r.start..end);
                    in_chunk += end - r.start;
                    left -= end - r.start;
                    r.start = end;
                    if in_chunk == self.batch_size as u64 {
                        tasks.push(Task {
                            frag: fi,
                            selection: Selection::Runs(std::mem::take(&mut chunk)),
                            indexed: covered.is_some(),
                        });
                        in_chunk = 0;
                    }
                }
            }
            if !chunk.is_empty() {
                tasks.push(Task {
                    frag: fi,
                    selection: Selection::Runs(chunk),
                    indexed: covered.is_some(),
                });
            }
        }
        let (offset, limit) = match &filter {
            Some(_) => (self.offset, self.limit),
            None => (0, None),
        };
        if self.map.is_some() && (offset > 0 || limit.is_some()) {
            return Err(Error::InvalidArgument {
                what: "a mapped scan with an offset or limit".into(),
            });
        }
        let mut ahead: HashMap<usize, Ahead> = HashMap::new();
        if self.ds.is_remote() {
            let columns: Vec<String> = match &filter {
                Some(f) => read
                    .iter()
                    .filter(|c| f.columns().contains(c))
                    .cloned()
                    .collect(),
                None => read.clone(),
            };
            for t in &tasks {
                let a = ahead.entry(t.frag).or_insert_with(|| Ahead {
                    columns: columns.clone(),
                    runs: Vec::new(),
                    held: OnceLock::new(),
                    tasks_left: AtomicUsize::new(0),
                });
                a.runs.extend(t.runs().iter().cloned());
                a.tasks_left.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(Plan {
            ds: self.ds.clone(),
            map: self.map.clone(),
            outputs,
            read,
            out_read,
            filter,
            filter_system,
            offset_bases,
            indexed,
            output,
            tasks,
            offset,
            limit,
            with_row_id: self.with_row_id,
            with_row_address: self.with_row_address,
            ordered: self.ordered,
            deleted_as_null,
            include_deleted: self.opts.include_deleted_rows,
            ahead,
        })
    }
}

/// The kept rows (`kept`, physical ranges of fragment `frag`) that the index left, as
/// runs.
fn index_runs(kept: &[Range<u64>], rows: &roaring::RoaringTreemap, frag: u64) -> Vec<Range<u64>> {
    let bm = kept_index_rows(kept, rows, frag);
    bitmap_runs(&bm, .., bm.len())
}

/// The rows of `bm` in `window` as runs (ascending, neighbours merged); `rows` rows
/// expected (the runs reserved, at most one a row).
fn bitmap_runs(
    bm: &roaring::RoaringBitmap,
    window: impl std::ops::RangeBounds<u32>,
    rows: u64,
) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::with_capacity(usize::try_from(rows).unwrap_or(0));
    // (internal iteration: the bitmap walks its containers itself)
    bm.range(window).for_each(|row| {
        let row = u64::from(row);
        match out.last_mut() {
            Some(last) if last.end == row => last.end = row + 1,
            _ => out.push(row..row + 1),
        }
    });
    out
}

/// The rows of fragment `frag` in `rows` (an index answer) that lie in its `kept` runs.
/// (Borrowed when nothing is deleted.)
fn kept_index_rows<'a>(
    kept: &[Range<u64>],
    rows: &'a roaring::RoaringTreemap,
    frag: u64,
) -> Cow<'a, roaring::RoaringBitmap> {
    let Some(bm) = u32::try_from(frag)
        .ok()
        .and_then(|f| rows.bitmaps().find(|(hi, _)| *hi == f).map(|(_, b)| b))
    else {
        return Cow::Owned(roaring::RoaringBitmap::new());
    };
    let to_u32 = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
    // (no deletions: one run from row 0 past the last row the index names)
    if let [only] = kept {
        if only.start == 0 && bm.max().is_none_or(|m| u64::from(m) < only.end) {
            return Cow::Borrowed(bm);
        }
    }
    let mut keep = roaring::RoaringBitmap::new();
    for r in kept {
        keep.insert_range(to_u32(r.start)..to_u32(r.end));
    }
    Cow::Owned(keep & bm)
}

/// Tasks of fragment `frag` (index `fi`) over `rows`, `batch` rows each.
fn picked_tasks(
    fi: usize,
    rows: &Arc<roaring::RoaringBitmap>,
    batch: u64,
) -> impl Iterator<Item = Task> + '_ {
    let total = rows.len();
    let batch = batch.max(1);
    (0..total.div_ceil(batch)).filter_map(move |i| {
        let first = i * batch;
        let count = batch.min(total - first);
        let lo = rows.select(u32::try_from(first).ok()?)?;
        let hi = match rows.select(u32::try_from(first + count).ok()?) {
            Some(next) => next,
            None => rows.max()?.checked_add(1)?,
        };
        Some(Task {
            frag: fi,
            selection: Selection::Picked {
                rows: rows.clone(),
                window: lo..hi,
                count,
            },
            indexed: true,
        })
    })
}

/// How many of `rows`' addresses in fragment `frag` lie in its `kept` runs.
fn index_count(kept: &[Range<u64>], rows: &roaring::RoaringTreemap, frag: u32) -> u64 {
    let base = u64::from(frag) << 32;
    kept.iter()
        .map(|r| rows.range_cardinality(base + r.start..base + r.end))
        .sum()
}

fn run_rows(runs: &[Range<u64>]) -> u64 {
    runs.iter().map(|r| r.end - r.start).sum()
}

/// One output column: a (possibly nested) column, or a computed SQL expression.
#[derive(Debug)]
pub(crate) enum Output {
    Path(ColumnPath),
    Computed(String, Expression),
    System(System),
}

impl Output {
    /// Whether it needs the top-level column `name`.
    fn reads(&self, name: &String) -> bool {
        match self {
            Output::Path(p) => &p.top == name,
            Output::Computed(_, e) => e.columns().contains(name),
            Output::System(_) => false,
        }
    }

    fn field(&self) -> Field {
        match self {
            Output::Path(p) => p.field.as_ref().clone(),
            Output::Computed(n, e) => Field::new(n, e.data_type().clone(), true),
            Output::System(sys) => sys.field(),
        }
    }
}

/// A unit of work: some physical rows of one fragment.
#[derive(Debug)]
pub(crate) struct Task {
    frag: usize,
    selection: Selection,
    /// Its rows are what a scalar index left (see [`Plan::indexed`]).
    indexed: bool,
}

/// The rows of a task.
#[derive(Debug)]
enum Selection {
    /// Physical row runs.
    Runs(Vec<Range<u64>>),
    /// Rows `window` of `rows` (the kept rows of one fragment that an index left, `count`
    /// of them in the window), turned into runs by the worker that reads them rather
    /// than while planning: a selective index still leaves ~100,000 one-row runs in a
    /// 10M-row dataset, a serial cost before any read begins.
    Picked {
        rows: Arc<roaring::RoaringBitmap>,
        window: Range<u32>,
        count: u64,
    },
}

impl Task {
    /// How many rows it reads.
    fn rows(&self) -> u64 {
        match &self.selection {
            Selection::Runs(runs) => run_rows(runs),
            Selection::Picked { count, .. } => *count,
        }
    }

    /// Its rows as runs (ascending, merged where neighbours).
    fn runs(&self) -> Cow<'_, [Range<u64>]> {
        match &self.selection {
            Selection::Runs(runs) => Cow::Borrowed(runs),
            Selection::Picked {
                rows,
                window,
                count,
            } => Cow::Owned(bitmap_runs(rows, window.clone(), *count)),
        }
    }
}

/// The most bytes of one fragment's files fetched ahead for a scan of a remote dataset
/// (up to [`REMOTE_SCAN_THREADS`] fragments are in flight); a larger fragment's tasks
/// fetch ahead their own rows, at most `lancer_table::dataset::READ_AHEAD_BYTES` each.
pub const FRAGMENT_AHEAD_BYTES: u64 = 32 * 1024 * 1024;

/// One fragment of a scan of a remote dataset: the bytes of its rows fetched ahead in a
/// few large requests by the first of its tasks to start (the others wait for them
/// instead of asking for the same bytes), let go when its last task is done.
struct Ahead {
    /// The columns fetched ahead: the filter's when there is one (the other columns
    /// are read for the rows that pass), else every column read.
    columns: Vec<String>,
    /// Every row its tasks read.
    runs: Vec<Range<u64>>,
    held: OnceLock<Mutex<Vec<lancer_format::read::Prefetched>>>,
    tasks_left: AtomicUsize,
}

impl std::fmt::Debug for Ahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ahead")
            .field("columns", &self.columns)
            .field("runs", &self.runs.len())
            .field("tasks_left", &self.tasks_left)
            .finish()
    }
}

/// A planned scan: what to read, how to filter and what to output.
#[derive(Debug)]
pub(crate) struct Plan {
    ds: Dataset,
    map: Option<BatchMap>,
    outputs: Vec<Output>,
    read: Vec<String>,
    /// The columns the outputs need (`read` minus filter-only columns).
    out_read: Vec<String>,
    filter: Option<Filter>,
    /// The system columns the filter names (computed, not read).
    filter_system: Vec<System>,
    /// Per fragment, the live rows before it (only when `_rowoffset` is an output).
    offset_bases: Vec<u64>,
    /// What the scalar indexes left of the filter's rows, if they apply.
    indexed: Option<crate::plan::scalar::IndexedRows>,
    output: SchemaRef,
    tasks: Vec<Task>,
    /// Rows to skip / keep after filtering (0 / None when pushed into the tasks).
    offset: u64,
    limit: Option<u64>,
    with_row_id: bool,
    with_row_address: bool,
    ordered: bool,
    deleted_as_null: bool,
    /// Deleted rows are scanned too; their `_rowid` is null.
    include_deleted: bool,
    /// Per fragment (index in the version), on remote datasets only.
    ahead: HashMap<usize, Ahead>,
}

/// The physical rows where `mask` is true, `mask` laid over `runs` in order.
fn surviving_runs(runs: &[Range<u64>], mask: &arrow_array::BooleanArray) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    let mut i = 0usize;
    for r in runs {
        for row in r.clone() {
            if mask.value(i) {
                match out.last_mut() {
                    Some(last) if last.end == row => last.end = row + 1,
                    _ => out.push(row..row + 1),
                }
            }
            i += 1;
        }
    }
    out
}

impl Plan {
    /// Runs one task: its rows that pass the filter, as an output batch.
    /// The schema of what the scan yields (after any batch map).
    pub(crate) fn yields(&self) -> SchemaRef {
        let stored = self
            .map
            .as_ref()
            .map_or_else(|| self.output.clone(), |m| m.schema.clone());
        lancer_format::json::text_schema(&stored)
    }

    /// Runs one task; on remote datasets its fragment's rows are fetched ahead first
    /// (once per fragment) and let go after the fragment's last task.
    fn run(&self, task: &Task) -> Result<Option<RecordBatch>> {
        let Some(a) = self.ahead.get(&task.frag) else {
            return self.run_task(task);
        };
        a.held.get_or_init(|| {
            let frag = &self.ds.fragments()[task.frag];
            let cols: Vec<&str> = a.columns.iter().map(String::as_str).collect();
            // a failed fetch ahead is not an error here: the reads that follow ask
            // again, and report what fails
            Mutex::new(
                self.ds
                    .prefetch_runs(frag, Some(&cols), &a.runs, FRAGMENT_AHEAD_BYTES)
                    .unwrap_or_default(),
            )
        });
        let out = self.run_task(task);
        if a.tasks_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(Ok(mut held)) = a.held.get().map(Mutex::lock) {
                held.clear();
            }
        }
        out
    }

    fn run_task(&self, task: &Task) -> Result<Option<RecordBatch>> {
        let frag = &self.ds.fragments()[task.frag];
        // Rows an exact index answer left need no filter: only the outputs are read.
        let exact = task.indexed && self.indexed.as_ref().is_some_and(|ix| ix.exact);
        let filter = if exact { None } else { self.filter.as_ref() };
        let task_runs = task.runs();
        let truns: &[Range<u64>] = &task_runs;
        let (runs, batch) = match filter {
            None if exact => {
                let cols: Vec<&str> = self.out_read.iter().map(String::as_str).collect();
                (
                    Cow::Borrowed(truns),
                    self.ds.read_runs(frag, Some(&cols), truns)?,
                )
            }
            None if self.deleted_as_null && truns.len() > 1 => {
                let cols: Vec<&str> = self.read.iter().map(String::as_str).collect();
                let span = truns[0].start..truns[truns.len() - 1].end;
                let whole = self
                    .ds
                    .read_runs(frag, Some(&cols), std::slice::from_ref(&span))?;
                (
                    Cow::Owned(vec![span.clone()]),
                    null_out_gaps(&whole, truns, span.start)?,
                )
            }
            None => {
                let cols: Vec<&str> = self.read.iter().map(String::as_str).collect();
                (
                    Cow::Borrowed(truns),
                    self.ds.read_runs(frag, Some(&cols), truns)?,
                )
            }
            Some(filter) => {
                let fcols: Vec<&str> = filter
                    .columns()
                    .iter()
                    .map(String::as_str)
                    .filter(|c| !self.filter_system.iter().any(|sys| sys.name() == *c))
                    .collect();
                let first = self.ds.read_runs(frag, Some(&fcols), truns)?;
                let first =
                    system::with_columns(&self.ds, first, &self.filter_system, frag, truns)?;
                let mask = filter.evaluate(&first)?;
                let passed = mask.true_count();
                if passed == 0 {
                    return Ok(None);
                }
                let rest: Vec<&str> = self
                    .read
                    .iter()
                    .map(String::as_str)
                    .filter(|c| !fcols.contains(c))
                    .collect();
                let survivors = surviving_runs(truns, &mask);
                let kept_first = arrow_select::filter::filter_record_batch(&first, &mask)?;
                let others = if rest.is_empty() {
                    None
                } else if passed * 2 > mask.len() {
                    let all = self.ds.read_runs(frag, Some(&rest), truns)?;
                    Some(arrow_select::filter::filter_record_batch(&all, &mask)?)
                } else {
                    Some(self.ds.read_runs(frag, Some(&rest), &survivors)?)
                };
                (Cow::Owned(survivors), merge(kept_first, others)?)
            }
        };
        let rows = batch.num_rows();
        let mut cols = Vec::with_capacity(self.output.fields().len());
        for o in &self.outputs {
            cols.push(match o {
                Output::Path(p) => p.column_of(&batch)?,
                Output::Computed(_, e) => e.evaluate(&batch)?,
                Output::System(sys) => {
                    let base = self.offset_bases.get(task.frag).copied().unwrap_or(0);
                    Arc::new(system::values(&self.ds, *sys, frag, &runs, base)?)
                }
            });
        }
        if self.with_row_id {
            let ids = system::values(&self.ds, System::Id, frag, &runs, 0)?;
            let ids = match self.include_deleted {
                true => options::null_deleted(ids, &runs, &*self.ds.kept_runs(frag)?)?,
                false => ids,
            };
            cols.push(Arc::new(ids));
        }
        if self.with_row_address {
            cols.push(Arc::new(system::values(
                &self.ds,
                System::Address,
                frag,
                &runs,
                0,
            )?));
        }
        Ok(Some(RecordBatch::try_new_with_options(
            self.output.clone(),
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?))
    }
}

/// `batch` (physical rows from `first`) with the rows outside `runs` made null in every
/// column; only validity bitmaps are new, values are shared.
fn null_out_gaps(batch: &RecordBatch, runs: &[Range<u64>], first: u64) -> Result<RecordBatch> {
    let n = batch.num_rows();
    let mut keep = arrow_buffer::BooleanBufferBuilder::new(n);
    let mut at = first;
    for r in runs {
        keep.append_n((r.start - at) as usize, false);
        keep.append_n((r.end - r.start) as usize, true);
        at = r.end;
    }
    let keep = arrow_buffer::NullBuffer::new(keep.finish());
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut cols = Vec::with_capacity(batch.num_columns());
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        let nulls = arrow_buffer::NullBuffer::union(Some(&keep), c.logical_nulls().as_ref());
        let data = c.to_data().into_builder().nulls(nulls).build()?;
        cols.push(arrow_array::make_array(data));
        fields.push(f.as_ref().clone().with_nullable(true));
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields).with_metadata(batch.schema().metadata().clone())),
        cols,
    )?)
}

/// The columns of `a` and `b` (same rows) in one batch.
fn merge(a: RecordBatch, b: Option<RecordBatch>) -> Result<RecordBatch> {
    let Some(b) = b else { return Ok(a) };
    let rows = a.num_rows();
    let mut fields: Vec<Field> = a
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.extend(b.schema().fields().iter().map(|f| f.as_ref().clone()));
    let mut cols = a.columns().to_vec();
    cols.extend(b.columns().iter().cloned());
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// Scans and deletes through SQL filters on a [`Dataset`].
pub trait DatasetExt {
    /// A scan builder over this version.
    fn scan(&self) -> Scanner;
    /// Deletes the rows matching the SQL filter (a new version); reads only the
    /// filter's columns.
    fn delete(&self, filter: &str) -> Result<Dataset>;
    /// Rows matching the SQL filter.
    fn count_where(&self, filter: &str) -> Result<u64>;
    /// Rows at version offsets (any order, repeats allowed) with `columns` given as
    /// top-level names or struct paths (`meta.lang`); all columns when `None`. JSON
    /// columns come as text of Arrow's JSON type, as scans return them (the table
    /// layer's `Dataset::take` gives their stored JSONB).
    fn take_paths(&self, offsets: &[u64], columns: Option<&[&str]>) -> Result<RecordBatch>;
}

impl DatasetExt for Dataset {
    fn scan(&self) -> Scanner {
        Scanner::new(self)
    }

    fn delete(&self, filter: &str) -> Result<Dataset> {
        let schema = self.schema();
        let f = Filter::new(filter, &system::filter_schema(&schema))?;
        // `_rowid` / `_rowaddr` in the filter are computed for each fragment's rows
        let sys: Vec<System> = f
            .columns()
            .iter()
            .filter_map(|c| System::named(c, &schema))
            .collect();
        let cols: Vec<&str> = f
            .columns()
            .iter()
            .map(String::as_str)
            .filter(|c| !sys.iter().any(|s| s.name() == *c))
            .collect();
        self.delete_rows(filter, Some(&cols), |frag, batch| {
            let all = 0..frag.physical_rows;
            f.evaluate(&system::with_columns(
                self,
                batch.clone(),
                &sys,
                frag,
                std::slice::from_ref(&all),
            )?)
        })
    }

    fn count_where(&self, filter: &str) -> Result<u64> {
        self.scan().filter(filter).count_rows()
    }

    fn take_paths(&self, offsets: &[u64], columns: Option<&[&str]>) -> Result<RecordBatch> {
        let Some(columns) = columns else {
            return Ok(self.take(offsets, None)?);
        };
        let schema = self.schema();
        let paths = columns::resolve_all(&schema, Some(columns))?;
        let rows = self.take_stored(offsets, Some(&columns::tops(&paths)))?;
        let out = columns::project(&paths, &rows, Vec::new())?;
        let with_meta = out
            .schema()
            .as_ref()
            .clone()
            .with_metadata(schema.metadata().clone());
        json_text(&out.with_schema(Arc::new(with_meta))?)
    }
}

#[cfg(test)]
mod tests {
    use super::{index_runs, kept_index_rows, picked_tasks};
    use std::sync::Arc;

    /// One kept run (no deletions) and the same rows split into several kept runs give
    /// the same index runs: the bitmap's rows inside them, adjacent rows merged.
    #[test]
    fn index_runs_keep_the_bitmap_rows_inside_the_kept_runs() {
        let mut rows = roaring::RoaringTreemap::new();
        for r in [0u64, 3, 4, 5, 9, 10, 20, 31, 32] {
            rows.insert((7u64 << 32) | r);
        }
        rows.insert((8u64 << 32) | 4); // another fragment
        let one = index_runs(std::slice::from_ref(&(3..31)), &rows, 7);
        assert_eq!(one, vec![3..6, 9..11, 20..21]);
        assert_eq!(index_runs(&[3..9, 9..31], &rows, 7), one);
        assert_eq!(
            index_runs(&[0..4, 5..10, 30..40], &rows, 7),
            vec![0..1, 3..4, 5..6, 9..10, 31..33]
        );
        assert!(index_runs(std::slice::from_ref(&(0..100)), &rows, 9).is_empty());
        assert!(index_runs(&[], &rows, 7).is_empty());
    }

    /// The tasks of an index answer, made while planning as windows of the bitmap and
    /// turned into runs by the workers, read the same rows as the runs made while
    /// planning, in windows of at most the batch size, whatever the deletions.
    #[test]
    fn picked_tasks_read_the_index_runs_in_batches() {
        let mut rows = roaring::RoaringTreemap::new();
        for r in (0u64..5000).filter(|r| r % 7 == 0 || (1000..1100).contains(r)) {
            rows.insert((3u64 << 32) | r);
        }
        rows.insert(1u64 << 32); // another fragment
        let runs = |r: &[(u64, u64)]| -> Vec<std::ops::Range<u64>> {
            r.iter().map(|&(a, b)| a..b).collect()
        };
        for kept in [
            runs(&[(0, 5000)]),
            runs(&[(0, 900), (1050, 4000), (4500, 5000)]),
            runs(&[(10, 20)]),
            runs(&[]),
        ] {
            let want: Vec<u64> = index_runs(&kept, &rows, 3).into_iter().flatten().collect();
            let bm = Arc::new(kept_index_rows(&kept, &rows, 3).into_owned());
            assert_eq!(bm.len(), want.len() as u64);
            for batch in [1u64, 3, 64, 1000, 100_000] {
                let tasks: Vec<_> = picked_tasks(2, &bm, batch).collect();
                let mut got = Vec::new();
                for t in &tasks {
                    assert_eq!(t.frag, 2);
                    assert!(t.indexed);
                    assert!(t.rows() <= batch && t.rows() > 0);
                    let runs = t.runs();
                    assert_eq!(super::run_rows(&runs), t.rows());
                    assert!(runs.windows(2).all(|w| w[0].end < w[1].start));
                    got.extend(runs.iter().cloned().flatten());
                }
                assert_eq!(got, want, "kept {kept:?}, batch {batch}");
            }
        }
        assert!(kept_index_rows(&runs(&[(0, 10)]), &rows, 9).is_empty());
    }
}
