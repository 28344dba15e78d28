//! Multivector columns: a row holds a list of vectors (`list<fixed_size_list<float>>`,
//! e.g. one embedding per token for late-interaction retrieval), a query several
//! vectors of the same dimension. A row's distance to a query is the reference's
//! max-sim score turned distance: for each query vector the best similarity
//! `1 − d(q, v)` over the row's vectors, summed, subtracted from the number of query
//! vectors — `Σ_q min_v d(q, v)` with the column's metric (l2, cosine, dot), computed
//! in that order as pylance 14 does (its answers on such columns agree to the last
//! bits). Rows whose list is null or empty have no distance and are never returned.
//!
//! Reference: pylance 14's `nearest` on a list-of-vectors column (`q` a 2-D array is
//! one multivector query there, not a batch), checked against it in
//! `python/tests/test_multivector.py`.

use std::collections::{BinaryHeap, HashMap};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use crate::search::exact::{self as search, Hit, Metric, Nearest};
use crate::{Dataset, Error, Result};

/// Rows each query vector contributes to an indexed multivector search, as a multiple
/// of `k`: its index search returns its `k × OVERFETCH` best rows (the reference's
/// default XTR over-fetch, `LANCE_XTR_OVERFETCH`).
pub const OVERFETCH: u32 = 10;

/// Whether `t` is a multivector column's type (a list of fixed-size-list vectors).
pub fn is_multivector(t: &DataType) -> bool {
    match t {
        DataType::List(f) | DataType::LargeList(f) => {
            matches!(f.data_type(), DataType::FixedSizeList(_, _))
        }
        _ => false,
    }
}

/// The vector dimension of multivector type `t`.
pub fn dimension(t: &DataType) -> Option<usize> {
    match t {
        DataType::List(f) | DataType::LargeList(f) => match f.data_type() {
            DataType::FixedSizeList(_, d) => usize::try_from(*d).ok(),
            _ => None,
        },
        _ => None,
    }
}

/// The list offsets (one per row, plus the end) and the vectors of multivector column
/// `col`.
pub(crate) fn parts(col: &ArrayRef) -> Result<(Vec<usize>, ArrayRef)> {
    Ok(match col.data_type() {
        DataType::List(_) => {
            let l = col.as_list::<i32>();
            (
                l.value_offsets()
                    .iter()
                    .map(|&o| o.max(0) as usize)
                    .collect(),
                l.values().clone(),
            )
        }
        DataType::LargeList(_) => {
            let l = col.as_list::<i64>();
            (
                l.value_offsets()
                    .iter()
                    .map(|&o| o.max(0) as usize)
                    .collect(),
                l.values().clone(),
            )
        }
        other => {
            return Err(Error::InvalidArgument {
                what: format!("a multivector column (list of vectors); this column is {other}"),
            })
        }
    })
}

/// The `k` nearest rows of multivector column `col` (rows `keep` passes) to the query
/// vectors `query` (`m × dim`, row-major), as (distance, row index); a heap of at most
/// `k`.
pub(crate) fn top_k(
    col: &ArrayRef,
    query: &[f32],
    metric: Metric,
    k: usize,
    keep: &dyn Fn(usize) -> bool,
) -> Result<BinaryHeap<Hit>> {
    let (offsets, values) = parts(col)?;
    let (vecs, dim) = search::vectors(&values)?;
    let Some(flat) = vecs.as_f32() else {
        return Err(Error::InvalidArgument {
            what: "multivector search over uint8 vectors is not supported".into(),
        });
    };
    if dim == 0 || query.is_empty() || !query.len().is_multiple_of(dim) {
        return Err(Error::InvalidArgument {
            what: format!(
                "Query vector size {} does not match index column size {dim} (a multivector query gives one or more whole vectors)",
                query.len()
            ),
        });
    }
    let qs: Vec<(&[f32], f32)> = query
        .chunks_exact(dim)
        .map(|q| (q, search::dot(q, q).sqrt()))
        .collect();
    let nq = qs.len() as f32;
    let valid = col.logical_nulls();
    let stored = flat.len() / dim;
    let mut heap: BinaryHeap<Hit> = BinaryHeap::with_capacity(k.saturating_add(1).min(1 << 16));
    for row in 0..col.len() {
        if !keep(row) || valid.as_ref().is_some_and(|n| n.is_null(row)) {
            continue;
        }
        let (a, b) = (offsets[row], offsets[row + 1].min(stored));
        if a >= b {
            continue;
        }
        let mut sim = 0f32;
        for &(q, qn) in &qs {
            let best = (a..b)
                .map(|v| 1.0 - search::distance(metric, q, &flat[v * dim..(v + 1) * dim], qn))
                .fold(f32::NEG_INFINITY, f32::max);
            sim += best;
        }
        let d = nq - sim;
        if d.is_nan() || k == 0 {
            continue;
        }
        heap.push(Hit(d, row as u64));
        if heap.len() > k {
            heap.pop();
        }
    }
    Ok(heap)
}

/// The vector dimension of column `column` of `ds` when it holds multivectors.
pub fn column_dim(ds: &Dataset, column: &str) -> Option<usize> {
    let schema = ds.schema();
    let f = schema.field_with_name(column).ok()?;
    if is_multivector(f.data_type()) {
        dimension(f.data_type())
    } else {
        None
    }
}

/// An indexed multivector search (the reference's XTR scoring): each query vector
/// (`req.query` is `m × dim`) is searched alone by `search` — its `k × OVERFETCH`
/// nearest rows by their best vector, at the index's estimated distances (exact when
/// the search re-ranks: `refine_factor`, or fragments the index does not cover); a row's similarity to that query vector is
/// `1 − distance`, and a row a query vector did not return is given that vector's
/// lowest returned similarity (what it can at most have). Summed over the query
/// vectors, subtracted from `m`: the distance; the `k` smallest, ties by row.
pub(crate) fn indexed_top_k(
    req: &Nearest<'_>,
    dim: usize,
    mut search: impl FnMut(&Nearest<'_>) -> Result<Vec<Hit>>,
) -> Result<Vec<Hit>> {
    if dim == 0 || req.query.is_empty() || !req.query.len().is_multiple_of(dim) {
        return Err(Error::InvalidArgument {
            what: format!(
                "Query vector size {} does not match index column size {dim} (a multivector query of {:?} gives one or more whole vectors)",
                req.query.len(),
                req.column
            ),
        });
    }
    let m = req.query.len() / dim;
    let mut sims: HashMap<u64, f32> = HashMap::new();
    let mut missed = 0f32;
    for q in req.query.chunks_exact(dim) {
        let single = Nearest {
            column: req.column,
            query: q.to_vec(),
            k: req.k.saturating_mul(OVERFETCH as usize),
            metric: req.metric,
        };
        let hits = search(&single)?;
        let floor = hits.last().map_or(0.0, |h| 1.0 - h.0);
        let mut these: HashMap<u64, f32> = HashMap::with_capacity(hits.len());
        for h in &hits {
            these.entry(h.1).or_insert(1.0 - h.0);
        }
        for (row, s) in sims.iter_mut() {
            *s += these.get(row).copied().unwrap_or(floor);
        }
        for (row, s) in these {
            sims.entry(row).or_insert(s + missed);
        }
        missed += floor;
    }
    let mut out: Vec<Hit> = sims
        .into_iter()
        .map(|(row, s)| Hit(m as f32 - s, row))
        .filter(|h| !h.0.is_nan())
        .collect();
    out.sort_unstable();
    out.truncate(req.k);
    Ok(out)
}
