//! Batched nearest-neighbour search: several query vectors in one call, each
//! answered as a single search of it would be, the results stacked in query order
//! with a 0-based Int32 non-null `query_index` column first (reference: batched vector
//! queries, PR #6828, "Batched results carry a synthetic 0-based `query_index`
//! discriminator column" — `lance-reference.txt` ~line 14790; pylance 14's `nearest`
//! with a 2-D `q`).
//!
//! The work is shared: through a vector index each IVF segment visits every partition
//! once for all the queries probing it (`IvfSegment::search_batch`); the index's
//! candidates of every query are re-ranked (refine, unindexed fragments) from one take
//! of their union; an exact search (no index, `use_index` off, another metric) and the
//! unindexed fragments are scanned once, every decoded batch scored against every
//! query. A prefilter and the live rows are worked out once.
//!
//! As pylance 14: rows come by query, nearest first; a postfilter drops rows of each
//! query's `k`; a dataset that has a `query_index` column is refused.

use std::collections::BinaryHeap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, UInt32Type, UInt64Type};
use arrow_array::{ArrayRef, Float32Array, Int32Array, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};

use crate::search::ann::{self, AnnParams};
use crate::search::exact::{self as search, Filtering, Hit, Metric, RowMeta};
use crate::{Dataset, Error, Result};

/// The output column naming which query a row answers.
pub const QUERY_INDEX: &str = "query_index";

/// Rows scored against every query before the next rows (exact search): 1024 rows of
/// 64-d f32 vectors are 256 KiB, within a core's L2.
const CHUNK: usize = 1024;

/// A batched search request: the `k` nearest rows to each of `queries`.
#[derive(Clone, Debug)]
pub struct BatchNearest<'a> {
    /// Vector column.
    pub column: &'a str,
    /// The query vectors (each as wide as the column's vectors).
    pub queries: Vec<Vec<f32>>,
    /// Results wanted per query.
    pub k: usize,
    /// Distance.
    pub metric: Metric,
}

/// The `query_index` output field (Int32, non-null, as pylance's).
pub fn query_index_field() -> Field {
    Field::new(QUERY_INDEX, DataType::Int32, false)
}

/// Refuses a dataset with its own `query_index` column (the output's would clash), as
/// pylance 14 does.
fn check_schema(ds: &Dataset) -> Result<()> {
    if ds.schema().fields().iter().any(|f| f.name() == QUERY_INDEX) {
        return Err(Error::InvalidArgument {
            what: format!(
                "batch nearest neighbor search cannot be used on datasets with column \
                 '{QUERY_INDEX}' (rename the column, or search one query vector at a time)"
            ),
        });
    }
    Ok(())
}

/// The `k` nearest rows of each query as `(distance, row address)`, nearest first,
/// through the index when one applies (what an ANN library returns), one list per
/// query in their order.
pub fn nearest_batch_addresses(
    ds: &Dataset,
    req: &BatchNearest<'_>,
    prefilter: Option<&str>,
    params: &AnnParams,
) -> Result<Vec<Vec<(f32, u64)>>> {
    check_schema(ds)?;
    Ok(top_k_batch(ds, req, prefilter, params)?
        .into_iter()
        .map(|hits| hits.into_iter().map(|h| (h.0, h.1)).collect())
        .collect())
}

/// Every query's `k` nearest rows: `query_index` (Int32), the `columns` asked for (all
/// by default; struct fields as `a.b`), `_distance`, then the row identity columns
/// `meta` asks for. Rows by query, nearest first; `filtering` as in
/// [`search::nearest`] (a postfilter applies to each query's `k`).
pub fn nearest_batch(
    ds: &Dataset,
    req: &BatchNearest<'_>,
    filtering: Filtering<'_>,
    columns: Option<&[&str]>,
    ann: &AnnParams,
    meta: RowMeta,
) -> Result<RecordBatch> {
    use crate::scan::columns;
    check_schema(ds)?;
    let schema = ds.schema();
    let paths = columns::resolve_all(&schema, columns)?;
    let tops = columns::tops(&paths);
    let prefilter = match filtering {
        Filtering::Pre(sql) => Some(sql),
        _ => None,
    };
    let per_query = top_k_batch(ds, req, prefilter, ann)?;
    let mut qidx: Vec<i32> = Vec::new();
    let mut hits: Vec<Hit> = Vec::new();
    for (i, h) in per_query.iter().enumerate() {
        qidx.extend(std::iter::repeat_n(i as i32, h.len()));
        hits.extend_from_slice(h);
    }
    let post = match filtering {
        Filtering::Post(sql) => Some(crate::Filter::new(sql, &schema)?),
        _ => None,
    };
    let mut wanted = tops.clone();
    if let Some(f) = &post {
        for c in f.columns() {
            if !wanted.contains(&c.as_str()) {
                wanted.push(c);
            }
        }
    }
    let (mut rows, mut distances, mut addrs) = search::fetch(ds, &hits, &wanted)?;
    let mut qidx = Int32Array::from(qidx);
    if let Some(filter) = post {
        let mask = filter.evaluate(&rows)?;
        rows = arrow_select::filter::filter_record_batch(&rows, &mask)?;
        distances = arrow_select::filter::filter(&distances, &mask)?
            .as_primitive::<Float32Type>()
            .clone();
        qidx = arrow_select::filter::filter(&qidx, &mask)?
            .as_primitive::<arrow_array::types::Int32Type>()
            .clone();
        addrs = addrs
            .iter()
            .zip(mask.iter())
            .filter(|(_, keep)| keep.unwrap_or(false))
            .map(|(a, _)| *a)
            .collect();
    }
    let distance: ArrayRef = Arc::new(distances);
    // nullable, as pylance 14's batched `_distance`
    let mut extra = vec![(Field::new("_distance", DataType::Float32, true), distance)];
    extra.extend(search::row_meta_columns(ds, &addrs, meta)?);
    let out = search::json_text(&columns::project(&paths, &rows, extra)?)?;
    let mut fields = vec![Arc::new(query_index_field())];
    fields.extend(out.schema().fields().iter().cloned());
    let mut cols: Vec<ArrayRef> = vec![Arc::new(qidx)];
    cols.extend(out.columns().iter().cloned());
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// Each query's `k` nearest (distance, row address), through the index when one
/// applies — [`ann::top_k`] for every query at once.
pub(crate) fn top_k_batch(
    ds: &Dataset,
    req: &BatchNearest<'_>,
    prefilter: Option<&str>,
    params: &AnnParams,
) -> Result<Vec<Vec<Hit>>> {
    if req.queries.is_empty() {
        // still a column the search could run on
        crate::catalog::indexable_field(ds, req.column, "in the dataset")?;
        return Ok(Vec::new());
    }
    let segments = if params.use_index {
        ann::index_segments(ds, req.column)?
    } else {
        Vec::new()
    };
    let metric = Some(req.metric).filter(|m| m.indexable());
    if segments.is_empty() || segments.iter().any(|s| Some(s.metric) != metric) {
        if params.fast_search {
            // pylance 14: fast_search searches only what an index covers; with no
            // usable index (none, another metric, use_index off) that is nothing
            return Ok(vec![Vec::new(); req.queries.len()]);
        }
        return streamed_top_k_batch(ds, req, prefilter, None);
    }
    let addresses = crate::catalog::stable_id_addresses(ds)?;
    let address = |id: u64| match &addresses {
        Some(m) => m.get(&id).copied(),
        None => Some(id),
    };
    let live = ds.live_addresses()?;
    let pass = prefilter.map(|sql| ann::passing(ds, sql)).transpose()?;
    // a prefilter passes live rows only: its set alone decides
    let keep = |id: u64| {
        address(id).is_some_and(|a| {
            pass.as_ref()
                .map_or_else(|| live.contains(a), |p| p.contains(a))
        })
    };
    let wanted = req.k * params.refine_factor.unwrap_or(1).max(1) as usize;
    let probe = params.probe(wanted, req.k);
    let queries: Vec<&[f32]> = req.queries.iter().map(Vec::as_slice).collect();
    let mut cands: Vec<Vec<lancer_index::vector::ivf::Candidate>> = vec![Vec::new(); queries.len()];
    for s in &segments {
        let found = s.search_batch(&queries, &probe, &keep)?;
        for (acc, c) in cands.iter_mut().zip(found) {
            acc.extend(c);
        }
    }
    for c in &mut cands {
        c.sort_by(|a, b| {
            a.distance
                .total_cmp(&b.distance)
                .then(a.row_id.cmp(&b.row_id))
        });
        c.truncate(wanted);
        for x in c.iter_mut() {
            x.row_id = address(x.row_id).unwrap_or(u64::MAX);
        }
        c.retain(|x| x.row_id != u64::MAX);
    }
    let mut covered = roaring::RoaringBitmap::new();
    for s in &segments {
        covered |= &s.fragments;
    }
    let unindexed: Vec<u64> = if params.fast_search {
        Vec::new()
    } else {
        crate::catalog::uncovered_fragments(ds, &covered)
    };
    if params.refine_factor.is_none() && unindexed.is_empty() {
        return Ok(cands
            .into_iter()
            .map(|mut c| {
                c.truncate(req.k);
                c.iter().map(|c| Hit(c.distance, c.row_id)).collect()
            })
            .collect());
    }
    let addrs: Vec<Vec<u64>> = cands
        .iter()
        .map(|c| c.iter().map(|c| c.row_id).collect())
        .collect();
    let mut hits = exact_batch(ds, req, &addrs)?;
    if !unindexed.is_empty() {
        let more = streamed_top_k_batch(ds, req, prefilter, Some(&unindexed))?;
        for (h, m) in hits.iter_mut().zip(more) {
            h.extend(m);
        }
    }
    for h in &mut hits {
        h.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        h.dedup_by_key(|h| h.1);
        h.truncate(req.k);
    }
    Ok(hits)
}

/// A query's forms the kernels take: the vector, its bytes (hamming) and its norm.
struct Prepared<'a> {
    q: &'a [f32],
    bytes: Vec<u8>,
    norm: f32,
}

fn prepare(queries: &[Vec<f32>]) -> Vec<Prepared<'_>> {
    queries
        .iter()
        .map(|q| Prepared {
            q,
            bytes: q.iter().map(|&x| x as u8).collect(),
            norm: search::dot(q, q).sqrt(),
        })
        .collect()
}

/// Exact distances of each query's candidate rows `cands[query]` (re-ranking), each
/// query's `k` nearest in no order; the union of the candidates is taken once, one
/// fragment at a time.
fn exact_batch(ds: &Dataset, req: &BatchNearest<'_>, cands: &[Vec<u64>]) -> Result<Vec<Vec<Hit>>> {
    let mut union: Vec<u64> = cands.iter().flatten().copied().collect();
    union.sort_unstable();
    union.dedup();
    // each query's candidates, sorted, to mark them in a fragment's rows
    let sorted: Vec<Vec<u64>> = cands
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.sort_unstable();
            c
        })
        .collect();
    let prepared = prepare(&req.queries);
    let mut hits: Vec<Vec<Hit>> = vec![Vec::new(); cands.len()];
    let mut mark = Vec::new();
    for frag in union.chunk_by(|a, b| a >> 32 == b >> 32) {
        let b = ds.take_addresses_stored(frag, Some(&[req.column]))?;
        let (vecs, dim) = search::vectors(b.column(0))?;
        let valid = b.column(0).logical_nulls();
        let (lo, hi) = (frag[0], frag[frag.len() - 1]);
        for ((p, mine), out) in prepared.iter().zip(&sorted).zip(hits.iter_mut()) {
            let from = mine.partition_point(|&a| a < lo);
            let to = mine.partition_point(|&a| a <= hi);
            if from == to {
                continue;
            }
            mark.clear();
            mark.resize(frag.len(), false);
            for a in &mine[from..to] {
                if let Ok(i) = frag.binary_search(a) {
                    mark[i] = true;
                }
            }
            let keep = |i: usize| mark[i] && valid.as_ref().is_none_or(|n| n.is_valid(i));
            let heap = search::scan_range(
                0..b.num_rows(),
                &vecs,
                dim,
                p.q,
                &p.bytes,
                p.norm,
                req.metric,
                req.k,
                &keep,
            );
            out.extend(heap.into_iter().map(|h| Hit(h.0, frag[h.1 as usize])));
        }
    }
    Ok(hits)
}

/// Exact top-`k` of every query by one streaming scan of the vector column (with
/// `filter`, over `fragments` when given): each decoded batch is scored against every
/// query, [`CHUNK`] rows at a time, its `k` nearest per query kept; the caller's heaps
/// merge those. Hits carry row addresses; one list per query, nearest first.
pub(crate) fn streamed_top_k_batch(
    ds: &Dataset,
    req: &BatchNearest<'_>,
    filter: Option<&str>,
    fragments: Option<&[u64]>,
) -> Result<Vec<Vec<Hit>>> {
    use crate::scan::{BatchMap, ROW_ADDRESS};
    let (k, metric) = (req.k, req.metric);
    let queries = Arc::new(req.queries.clone());
    let column = req.column.to_string();
    let schema = Arc::new(Schema::new(vec![
        Field::new("query", DataType::UInt32, false),
        search::distance_field(),
        Field::new(ROW_ADDRESS, DataType::UInt64, false),
    ]));
    let out_schema = schema.clone();
    let score = move |b: RecordBatch| -> Result<RecordBatch> {
        let col = b.column(0);
        let (vecs, dim) = search::vectors(col)?;
        if let Some(q) = queries.iter().find(|q| q.len() != dim) {
            return Err(Error::InvalidArgument {
                what: format!(
                    "Query vector size {} does not match index column size {dim} (the vectors of {column:?})",
                    q.len()
                ),
            });
        }
        let addrs = b
            .column(1)
            .as_primitive_opt::<UInt64Type>()
            .ok_or_else(|| Error::InvalidArgument {
                what: "row addresses missing from the scan".into(),
            })?;
        let valid = col.logical_nulls();
        let keep = |i: usize| valid.as_ref().is_none_or(|n| n.is_valid(i));
        let prepared = prepare(&queries);
        let mut heaps: Vec<BinaryHeap<Hit>> = (0..queries.len())
            .map(|_| BinaryHeap::with_capacity(k + 1))
            .collect();
        let n = col.len();
        let mut start = 0;
        while start < n {
            let end = (start + CHUNK).min(n);
            for (p, heap) in prepared.iter().zip(heaps.iter_mut()) {
                let part = search::scan_range(
                    start..end,
                    &vecs,
                    dim,
                    p.q,
                    &p.bytes,
                    p.norm,
                    metric,
                    k,
                    &keep,
                );
                for h in part {
                    heap.push(h);
                    if heap.len() > k {
                        heap.pop();
                    }
                }
            }
            start = end;
        }
        let (mut qs, mut ds_, mut as_) = (Vec::new(), Vec::new(), Vec::new());
        for (qi, heap) in heaps.into_iter().enumerate() {
            for h in heap.into_sorted_vec() {
                qs.push(qi as u32);
                ds_.push(h.0);
                as_.push(usize::try_from(h.1).map_or(0, |i| addrs.value(i)));
            }
        }
        Ok(RecordBatch::try_new(
            out_schema.clone(),
            vec![
                Arc::new(UInt32Array::from(qs)),
                Arc::new(Float32Array::from(ds_)),
                Arc::new(UInt64Array::from(as_)),
            ],
        )?)
    };
    let scan = crate::search::exact::scored_scan(
        ds,
        req.column,
        filter,
        fragments,
        BatchMap {
            f: Arc::new(score),
            schema,
        },
    );
    let mut heaps: Vec<BinaryHeap<Hit>> = (0..req.queries.len())
        .map(|_| BinaryHeap::with_capacity(k + 1))
        .collect();
    for part in scan.stream()? {
        let part = part?;
        let q = part.column(0).as_primitive::<UInt32Type>();
        let d = part.column(1).as_primitive::<Float32Type>();
        let a = part.column(2).as_primitive::<UInt64Type>();
        for ((q, d), a) in q.values().iter().zip(d.values()).zip(a.values()) {
            if let Some(heap) = heaps.get_mut(*q as usize) {
                heap.push(Hit(*d, *a));
                if heap.len() > k {
                    heap.pop();
                }
            }
        }
    }
    Ok(heaps.into_iter().map(|h| h.into_sorted_vec()).collect())
}
