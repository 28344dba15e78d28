//! Exact nearest-neighbour search over a fixed-size-list vector column (spec: vector
//! search, "distance_type"): every (non-deleted, prefiltered) row's distance to the
//! query, the `k` smallest kept in a bounded heap.
//!
//! Distances are Lance's: `l2` is the squared Euclidean distance, `cosine` is
//! `1 - cos(a, b)`, `dot` is `1 - a·b`, `hamming` counts differing bits of `uint8`
//! vectors. Kernels are plain loops over slices in 8-wide chunks, which the compiler
//! vectorizes; `tests/` checks them against NumPy.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Float32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::{Dataset, TableError};

/// The distance of a vector search, exact or through an index (hamming is exact only:
/// [`Metric::indexable`]).
pub use lancer_index::distance::Metric;

/// The distance kernels (vectorized, in `lancer-index`).
pub use lancer_index::distance::{dot, hamming, l2};

/// A scored row: distance and row address.
#[derive(PartialEq, Clone, Copy, Debug)]
pub(crate) struct Hit(pub(crate) f32, pub(crate) u64);
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Hit {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

/// The values of a vector column: borrowed when already f32 or u8.
pub(crate) enum Vectors {
    F32(Float32Array),
    Owned(Vec<f32>),
    U8(arrow_array::UInt8Array),
}

impl Vectors {
    fn f32s(&self) -> Option<&[f32]> {
        match self {
            Vectors::F32(a) => Some(a.values()),
            Vectors::Owned(v) => Some(v),
            Vectors::U8(_) => None,
        }
    }
}

pub(crate) fn vectors(col: &ArrayRef) -> Result<(Vectors, usize), TableError> {
    let fsl = col
        .as_fixed_size_list_opt()
        .ok_or_else(|| TableError::NotFound {
            what: format!(
                "a vector column (fixed-size list); this column is {}",
                col.data_type()
            ),
        })?;
    let dim = fsl.value_length() as usize;
    let items = fsl.values().slice(fsl.offset() * dim, fsl.len() * dim);
    let v = match items.data_type() {
        DataType::Float32 => Vectors::F32(items.as_primitive::<Float32Type>().clone()),
        DataType::Float16 => Vectors::Owned(
            items
                .as_primitive::<Float16Type>()
                .values()
                .iter()
                .map(|x| x.to_f32())
                .collect(),
        ),
        DataType::Float64 => Vectors::Owned(
            items
                .as_primitive::<Float64Type>()
                .values()
                .iter()
                .map(|&x| x as f32)
                .collect(),
        ),
        DataType::UInt8 => Vectors::U8(items.as_primitive::<UInt8Type>().clone()),
        other => {
            return Err(TableError::NotFound {
                what: format!("vectors of float16/32/64 or uint8; this column holds {other}"),
            })
        }
    };
    Ok((v, dim))
}

impl Vectors {
    /// The values as f32 (None for uint8 vectors).
    pub(crate) fn as_f32(&self) -> Option<&[f32]> {
        match self {
            Vectors::F32(a) => Some(a.values()),
            Vectors::Owned(v) => Some(v),
            Vectors::U8(_) => None,
        }
    }
}

/// Top-k of rows `range` (row indexes), by distance then row.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_range(
    range: std::ops::Range<usize>,
    vecs: &Vectors,
    dim: usize,
    query: &[f32],
    qbytes: &[u8],
    qnorm: f32,
    metric: Metric,
    k: usize,
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> BinaryHeap<Hit> {
    let mut heap: BinaryHeap<Hit> = BinaryHeap::with_capacity(k + 1);
    let mut push = |d: f32, i: usize| {
        if d.is_nan() {
            return;
        }
        if heap.len() == k {
            match heap.peek() {
                Some(top) if d.total_cmp(&top.0).then((i as u64).cmp(&top.1)).is_lt() => {
                    heap.pop();
                }
                _ => return,
            }
        }
        heap.push(Hit(d, i as u64));
    };
    // Scratch rows for the metric/type pairs that convert each vector first.
    let mut as_f32: Vec<f32> = Vec::new();
    let mut as_u8: Vec<u8> = Vec::new();
    for i in range {
        if !keep(i) {
            continue;
        }
        let d = match (vecs, metric) {
            (Vectors::U8(v), Metric::Hamming) => {
                hamming(qbytes, &v.values()[i * dim..(i + 1) * dim])
            }
            (Vectors::U8(v), m) => {
                as_f32.clear();
                as_f32.extend(
                    v.values()[i * dim..(i + 1) * dim]
                        .iter()
                        .map(|&x| f32::from(x)),
                );
                distance(m, query, &as_f32, qnorm)
            }
            (v, Metric::Hamming) => {
                as_u8.clear();
                if let Some(s) = v.f32s() {
                    as_u8.extend(s[i * dim..(i + 1) * dim].iter().map(|&x| x as u8));
                }
                hamming(qbytes, &as_u8)
            }
            (v, m) => match v.f32s() {
                Some(s) => distance(m, query, &s[i * dim..(i + 1) * dim], qnorm),
                None => f32::NAN,
            },
        };
        if k > 0 {
            push(d, i);
        }
    }
    heap
}

/// What a prefilter returns: true for rows to consider.
pub type FilterResult = Result<BooleanArray, TableError>;

/// A search request.
#[derive(Clone, Debug)]
pub struct Nearest<'a> {
    /// Vector column.
    pub column: &'a str,
    /// The query vector.
    pub query: Vec<f32>,
    /// Results wanted.
    pub k: usize,
    /// Distance.
    pub metric: Metric,
}

/// Exact top-`k` over `ds`, every row scored (no index), whatever indexes the column
/// has; rows for which `prefilter` is false are skipped (filter, then top-k). Returns the
/// `columns` asked for (all by default) plus `_distance`, nearest first. SQL filters,
/// indexed search and row ids are [`nearest`]'s ([`SearchOptions`]).
pub fn exact_nearest(
    ds: &Dataset,
    req: &Nearest<'_>,
    prefilter: Option<&dyn Fn(&RecordBatch) -> FilterResult>,
    columns: Option<&[&str]>,
) -> crate::Result<RecordBatch> {
    let (rows, distances) = nearest_rows(ds, req, prefilter, columns)?;
    let mut fields: Vec<Field> = rows
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let mut cols: Vec<ArrayRef> = rows.columns().to_vec();
    fields.push(distance_field());
    cols.push(Arc::new(distances));
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// The `_distance` output column.
pub(crate) fn distance_field() -> Field {
    // nullable, as pylance 14 declares it
    Field::new("_distance", DataType::Float32, true)
}

/// [`nearest`]'s rows and distances, apart.
fn nearest_rows(
    ds: &Dataset,
    req: &Nearest<'_>,
    prefilter: Option<&dyn Fn(&RecordBatch) -> FilterResult>,
    columns: Option<&[&str]>,
) -> Result<(RecordBatch, Float32Array), TableError> {
    let Some(prefilter) = prefilter else {
        // No closure to evaluate over whole rows: score the vectors as the scan reads
        // them.
        let hits = streamed_top_k(ds, req, None, None).map_err(|e| match e {
            crate::Error::Table(t) => t,
            other => TableError::NotFound {
                what: other.to_string(),
            },
        })?;
        let addrs: Vec<u64> = hits.iter().map(|h| h.1).collect();
        let rows = ds.take_addresses(&addrs, columns)?;
        return Ok((rows, hits.iter().map(|h| h.0).collect()));
    };
    // The closure sees every column of every kept row (JSON as stored, as filters
    // read it).
    let all = ds.to_batch_stored(None)?;
    let col = all
        .column_by_name(req.column)
        .ok_or_else(|| TableError::NotFound {
            what: format!("column {:?}", req.column),
        })?;
    let (vecs, dim) = vectors(col)?;
    if req.query.len() != dim {
        return Err(TableError::NotFound {
            what: format!(
                "Query vector size {} does not match index column size {}",
                req.query.len(),
                dim
            ),
        });
    }
    let mask = prefilter(&all)?;
    let hits = top_k(&vecs, dim, col, Some(&mask), req);
    // Fetch the result rows (only those bytes) for the columns asked for.
    let offsets: Vec<u64> = hits.iter().map(|h| h.1).collect();
    let rows = ds.take(&offsets, columns)?;
    Ok((rows, hits.iter().map(|h| h.0).collect()))
}

/// The `k` nearest of `vecs` (the values of vector column `col`, `dim` wide), skipping
/// null vectors and rows `mask` rejects; nearest first, ties by row. The rows are split
/// over the cores, each part keeping its own top-k.
fn top_k(
    vecs: &Vectors,
    dim: usize,
    col: &ArrayRef,
    mask: Option<&BooleanArray>,
    req: &Nearest<'_>,
) -> Vec<Hit> {
    let valid = col.logical_nulls();
    let keep = |i: usize| -> bool {
        mask.is_none_or(|m| m.is_valid(i) && m.value(i))
            && valid.as_ref().is_none_or(|n| n.is_valid(i))
    };
    let qnorm = dot(&req.query, &req.query).sqrt();
    let qbytes: Vec<u8> = req.query.iter().map(|&x| x as u8).collect();
    let n = col.len();
    let parts = lancer_util::cores().min(n / 16_384 + 1).max(1);
    let step = n.div_ceil(parts);
    let mut heap: BinaryHeap<Hit> = BinaryHeap::new();
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..parts)
            .map(|p| {
                let (query, qbytes, keep) = (&req.query, &qbytes, &keep);
                let r = p * step..((p + 1) * step).min(n);
                sc.spawn(move || {
                    scan_range(r, vecs, dim, query, qbytes, qnorm, req.metric, req.k, keep)
                })
            })
            .collect();
        for h in handles {
            if let Ok(part) = h.join() {
                heap.extend(part);
            }
        }
    });
    let mut hits = heap.into_sorted_vec();
    hits.truncate(req.k);
    hits
}

pub(crate) fn distance(m: Metric, q: &[f32], v: &[f32], qnorm: f32) -> f32 {
    match m {
        Metric::L2 => l2(q, v),
        Metric::Dot => 1.0 - dot(q, v),
        Metric::Cosine => {
            let n = dot(v, v).sqrt() * qnorm;
            if n == 0.0 {
                f32::NAN
            } else {
                1.0 - dot(q, v) / n
            }
        }
        Metric::Hamming => f32::NAN,
    }
}

/// How a SQL filter combines with a search.
#[derive(Debug, Clone, Copy, Default)]
pub enum Filtering<'a> {
    /// No filter.
    #[default]
    None,
    /// Filter first, then take the `k` nearest of the rows that pass (always `k`
    /// results when that many rows pass) — the default in the reference.
    Pre(&'a str),
    /// Take the `k` nearest, then drop those the filter rejects (fewer than `k` may
    /// remain; cheaper when the filter is expensive and the data large).
    Post(&'a str),
}

/// Row identity columns a search can add after its score: `_rowid` (the stable row id,
/// or the address without stable ids) and `_rowaddr`, in that order (as pylance).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowMeta {
    /// Add `_rowid`.
    pub row_id: bool,
    /// Add `_rowaddr`.
    pub row_address: bool,
}

/// The `_rowid` / `_rowaddr` columns `meta` asks for, of the rows at `addrs`.
pub(crate) fn row_meta_columns(
    ds: &Dataset,
    addrs: &[u64],
    meta: RowMeta,
) -> crate::Result<Vec<(Field, ArrayRef)>> {
    use crate::scan::{ROW_ADDRESS, ROW_ID};
    let mut out = Vec::new();
    if meta.row_id {
        let ids: Vec<u64> = if ds.uses_stable_row_ids() {
            let mut by_fragment: std::collections::HashMap<u64, Option<Arc<Vec<u64>>>> =
                std::collections::HashMap::new();
            let mut ids = Vec::with_capacity(addrs.len());
            for &a in addrs {
                let frag = a >> 32;
                if let std::collections::hash_map::Entry::Vacant(e) = by_fragment.entry(frag) {
                    let got = match ds.fragments().iter().find(|f| f.id == frag) {
                        Some(f) => ds.fragment_row_ids(f)?,
                        None => None,
                    };
                    e.insert(got);
                }
                let id = by_fragment
                    .get(&frag)
                    .and_then(|m| m.as_ref())
                    .and_then(|m| m.get((a & 0xffff_ffff) as usize).copied())
                    .ok_or_else(|| crate::Error::InvalidArgument {
                        what: format!("row address {a} names no row of the version"),
                    })?;
                ids.push(id);
            }
            ids
        } else {
            addrs.to_vec()
        };
        out.push((
            Field::new(ROW_ID, DataType::UInt64, true),
            Arc::new(arrow_array::UInt64Array::from(ids)) as ArrayRef,
        ));
    }
    if meta.row_address {
        out.push((
            Field::new(ROW_ADDRESS, DataType::UInt64, true),
            Arc::new(arrow_array::UInt64Array::from(addrs.to_vec())) as ArrayRef,
        ));
    }
    Ok(out)
}

/// How [`nearest`] answers beyond its request: the SQL filter and how it combines, the
/// columns returned, the index settings, the row identity columns added.
#[derive(Clone, Debug, Default)]
pub struct SearchOptions<'a> {
    /// A SQL filter applied before (the reference's default) or after the top-k; none by
    /// default.
    pub filtering: Filtering<'a>,
    /// Columns returned beside `_distance` (all by default); struct fields may be named
    /// (`meta.lang`).
    pub columns: Option<&'a [&'a str]>,
    /// How a vector index is used (nprobes, refine factor, ef, `use_index`...).
    pub ann: crate::search::ann::AnnParams,
    /// `_rowid` / `_rowaddr` added after `_distance`.
    pub row_meta: RowMeta,
}

/// The `k` nearest rows of `req`, nearest first: through the column's vector index when
/// it has one of the request's metric and `opts.ann.use_index` (rows appended after the
/// index are searched exactly and merged; deleted rows never returned), else exact. A
/// prefilter is a scan of the vector column with the filter (filter columns read first,
/// vectors only for passing rows), then top-k over what passed; results are fetched by
/// row address.
pub fn nearest(
    ds: &Dataset,
    req: &Nearest<'_>,
    opts: &SearchOptions<'_>,
) -> crate::Result<RecordBatch> {
    let (filtering, columns, ann, meta) = (opts.filtering, opts.columns, &opts.ann, opts.row_meta);
    use crate::scan::columns;
    let schema = ds.schema();
    let paths = columns::resolve_all(&schema, columns)?;
    let tops = columns::tops(&paths);
    let (rows, distances, addrs) = match filtering {
        Filtering::None => fetch(ds, &crate::search::ann::top_k(ds, req, None, ann)?, &tops)?,
        Filtering::Post(sql) => {
            let filter = crate::Filter::new(sql, &schema)?;
            let mut wanted = tops.clone();
            for c in filter.columns() {
                if !wanted.contains(&c.as_str()) {
                    wanted.push(c);
                }
            }
            let (rows, distances, addrs) =
                fetch(ds, &crate::search::ann::top_k(ds, req, None, ann)?, &wanted)?;
            let mask = filter.evaluate(&rows)?;
            let rows = arrow_select::filter::filter_record_batch(&rows, &mask)?;
            let distances = arrow_select::filter::filter(&distances, &mask)?;
            let addrs = addrs
                .iter()
                .zip(mask.iter())
                .filter(|(_, keep)| keep.unwrap_or(false))
                .map(|(a, _)| *a)
                .collect();
            (rows, distances.as_primitive::<Float32Type>().clone(), addrs)
        }
        Filtering::Pre(sql) => fetch(
            ds,
            &crate::search::ann::top_k(ds, req, Some(sql), ann)?,
            &tops,
        )?,
    };
    let distance: ArrayRef = Arc::new(distances);
    let mut extra = vec![(distance_field(), distance)];
    extra.extend(row_meta_columns(ds, &addrs, meta)?);
    Ok(json_text(&columns::project(&paths, &rows, extra)?)?)
}

/// Search results leave with JSON columns as text of Arrow's JSON type, as scans'
/// (`lancer_format::json`); filters on them run before, on the stored JSONB.
pub(crate) fn json_text(b: &RecordBatch) -> Result<RecordBatch, TableError> {
    Ok(lancer_format::json::to_text(b)?)
}

/// The rows `hits` point at (row addresses), with their distances and addresses.
pub(crate) fn fetch(
    ds: &Dataset,
    hits: &[Hit],
    columns: &[&str],
) -> crate::Result<(RecordBatch, Float32Array, Vec<u64>)> {
    let addrs: Vec<u64> = hits.iter().map(|h| h.1).collect();
    let rows = ds.take_addresses_stored(&addrs, Some(columns))?;
    Ok((rows, hits.iter().map(|h| h.0).collect(), addrs))
}

/// Exact top-`k` by streaming: a scan of the vector column (with `filter`, the filter
/// columns first and vectors only for passing rows) whose worker threads score each
/// batch as it is decoded and keep its `k` nearest; the caller merges those. Memory
/// holds about one batch per thread, never the column. Hits carry row addresses.
pub(crate) fn streamed_top_k(
    ds: &Dataset,
    req: &Nearest<'_>,
    filter: Option<&str>,
    fragments: Option<&[u64]>,
) -> crate::Result<Vec<Hit>> {
    use crate::scan::{BatchMap, ROW_ADDRESS};
    let (k, metric, query) = (req.k, req.metric, Arc::new(req.query.clone()));
    let column = req.column.to_string();
    let qnorm = dot(&req.query, &req.query).sqrt();
    let qbytes: Arc<Vec<u8>> = Arc::new(req.query.iter().map(|&x| x as u8).collect());
    let schema = Arc::new(Schema::new(vec![
        distance_field(),
        Field::new(ROW_ADDRESS, DataType::UInt64, false),
    ]));
    let out_schema = schema.clone();
    let score = move |b: RecordBatch| -> crate::Result<RecordBatch> {
        let col = b.column(0);
        let addrs = b
            .column(1)
            .as_primitive_opt::<arrow_array::types::UInt64Type>()
            .ok_or_else(|| crate::Error::InvalidArgument {
                what: "row addresses missing from the scan".into(),
            })?;
        if crate::search::multivector::is_multivector(col.data_type()) {
            let hits = crate::search::multivector::top_k(col, &query, metric, k, &|_| true)?
                .into_sorted_vec();
            let d: Float32Array = hits.iter().map(|h| h.0).collect();
            let a: arrow_array::UInt64Array = hits
                .iter()
                .map(|h| usize::try_from(h.1).map_or(0, |i| addrs.value(i)))
                .collect();
            return Ok(RecordBatch::try_new(
                out_schema.clone(),
                vec![Arc::new(d), Arc::new(a)],
            )?);
        }
        let (vecs, dim) = vectors(col)?;
        if query.len() != dim {
            return Err(crate::Error::InvalidArgument {
                what: format!(
                    "Query vector size {} does not match index column size {dim} (the vectors of {column:?})",
                    query.len()
                ),
            });
        }
        let valid = col.logical_nulls();
        let keep = |i: usize| valid.as_ref().is_none_or(|n| n.is_valid(i));
        let hits = scan_range(
            0..col.len(),
            &vecs,
            dim,
            &query,
            &qbytes,
            qnorm,
            metric,
            k,
            &keep,
        )
        .into_sorted_vec();
        let d: Float32Array = hits.iter().map(|h| h.0).collect();
        let a: arrow_array::UInt64Array = hits
            .iter()
            .map(|h| usize::try_from(h.1).map_or(0, |i| addrs.value(i)))
            .collect();
        Ok(RecordBatch::try_new(
            out_schema.clone(),
            vec![Arc::new(d), Arc::new(a)],
        )?)
    };
    let scan = scored_scan(
        ds,
        req.column,
        filter,
        fragments,
        BatchMap {
            f: Arc::new(score),
            schema,
        },
    );
    let mut heap: BinaryHeap<Hit> = BinaryHeap::with_capacity(k + 1);
    for part in scan.stream()? {
        let part = part?;
        let d = part.column(0).as_primitive::<Float32Type>();
        let a = part
            .column(1)
            .as_primitive::<arrow_array::types::UInt64Type>();
        for (d, a) in d.values().iter().zip(a.values()) {
            heap.push(Hit(*d, *a));
            if heap.len() > k {
                heap.pop();
            }
        }
    }
    Ok(heap.into_sorted_vec())
}

/// A scan of vector column `column` (with `filter`, of `fragments`) whose worker
/// threads run `score` over each batch as it is decoded (rows in any order, deleted
/// rows as nulls, with their row addresses).
pub(crate) fn scored_scan(
    ds: &Dataset,
    column: &str,
    filter: Option<&str>,
    fragments: Option<&[u64]>,
    score: crate::scan::BatchMap,
) -> crate::scan::Scanner {
    use crate::scan::DatasetExt;
    let mut scan = ds
        .scan()
        .columns(&[column])
        .with_row_address(true)
        .ordered(false)
        .deleted_as_null()
        .map_batches(score);
    if let Some(sql) = filter {
        scan = scan.filter(sql);
    }
    if let Some(ids) = fragments {
        scan = scan.fragments(ids);
    }
    scan
}
