//! Hybrid search: a vector search and a full-text search over the same dataset, fused
//! by reciprocal rank (Cormack et al., SIGIR 2009) as LanceDB's default hybrid reranker
//! fuses them: each list keeps its best `limit` rows; a row scores the sum over the
//! lists it appears in of `1 / (rank + k)` (rank from 1, `k` = 60 by default); rows are
//! returned best first (ties in first-appearance order, vector results first) with
//! `_relevance_score`, and with `_distance` / `_score` from the list(s) that found them
//! (null where a list did not).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, RecordBatch};
use arrow_schema::{DataType, Field};
use lancer_index::inverted::search::FtsQuery;

use crate::search::ann::AnnParams;
use crate::search::exact::Nearest;
use crate::search::fts::{full_text_addresses, FtsOptions};
use crate::{Dataset, Error, Result};

/// The default rank constant (LanceDB's `RRFReranker(K=60)`).
pub const RRF_K: f32 = 60.0;

/// How a hybrid search runs and what it returns.
#[derive(Clone, Debug)]
pub struct HybridOptions {
    /// Rows wanted; each of the two searches keeps this many.
    pub limit: usize,
    /// A SQL filter, applied to both searches.
    pub filter: Option<String>,
    /// Apply `filter` before ranking (else to each list's best rows).
    pub prefilter: bool,
    /// The rank constant `k` of `1 / (rank + k)`.
    pub rrf_k: f32,
    /// Columns to return besides the scores (default all).
    pub columns: Option<Vec<String>>,
    /// Vector index settings.
    pub ann: AnnParams,
    /// Full-text: search only what the indexes cover.
    pub fast_search: bool,
}

impl Default for HybridOptions {
    fn default() -> Self {
        Self {
            limit: 10,
            filter: None,
            prefilter: true,
            rrf_k: RRF_K,
            columns: None,
            ann: AnnParams::default(),
            fast_search: false,
        }
    }
}

/// One fused row: its address, relevance, and what each search said of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fused {
    /// Row address.
    pub address: u64,
    /// `Σ 1 / (rank + k)` over the lists holding the row.
    pub relevance: f32,
    /// Its distance, when the vector search found it.
    pub distance: Option<f32>,
    /// Its BM25 score, when the full-text search found it.
    pub score: Option<f32>,
}

/// Fuses a vector result list (address, distance; nearest first) and a full-text one
/// (address, score; best first) by reciprocal rank; best first.
pub fn fuse(vector: &[(u64, f32)], text: &[(u64, f32)], k: f32, limit: usize) -> Vec<Fused> {
    let mut out: Vec<Fused> = Vec::with_capacity(vector.len() + text.len());
    let mut at: HashMap<u64, usize> = HashMap::new();
    let mut sums: Vec<f64> = Vec::new();
    for (list, is_vector) in [(vector, true), (text, false)] {
        for (rank, &(addr, v)) in list.iter().enumerate() {
            let i = *at.entry(addr).or_insert_with(|| {
                out.push(Fused {
                    address: addr,
                    relevance: 0.0,
                    distance: None,
                    score: None,
                });
                sums.push(0.0);
                out.len() - 1
            });
            sums[i] += 1.0 / ((rank + 1) as f64 + f64::from(k));
            if is_vector {
                out[i].distance.get_or_insert(v);
            } else {
                out[i].score.get_or_insert(v);
            }
        }
    }
    for (f, s) in out.iter_mut().zip(&sums) {
        f.relevance = *s as f32;
    }
    // stable: ties keep first-appearance order
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|a, b| sums[*b].total_cmp(&sums[*a]));
    order.truncate(limit);
    order.into_iter().map(|i| out[i]).collect()
}

/// The addresses of the fused rows (see [`hybrid_search`]; `req.k` is not used: both
/// searches keep `opts.limit` rows).
pub fn hybrid_addresses(
    ds: &Dataset,
    req: &Nearest<'_>,
    q: &FtsQuery,
    opts: &HybridOptions,
) -> Result<Vec<Fused>> {
    if !(opts.rrf_k.is_finite() && opts.rrf_k >= 0.0) {
        return Err(Error::InvalidArgument {
            what: format!(
                "the rank constant k must be a finite number >= 0, not {}",
                opts.rrf_k
            ),
        });
    }
    let want = opts.limit;
    if want == 0 {
        return Ok(Vec::new());
    }
    let pre = opts.filter.as_deref().filter(|_| opts.prefilter);
    let vreq = Nearest {
        column: req.column,
        query: req.query.clone(),
        k: want,
        metric: req.metric,
    };
    let mut vector: Vec<(u64, f32)> = crate::search::ann::top_k(ds, &vreq, pre, &opts.ann)?
        .into_iter()
        .map(|h| (h.1, h.0))
        .collect();
    // a postfilter applies to each list's best rows: the passing rows computed once
    let fts = FtsOptions {
        limit: Some(want),
        filter: pre.map(str::to_string),
        prefilter: true,
        fast_search: opts.fast_search,
        columns: None,
        row_meta: Default::default(),
    };
    let mut text = full_text_addresses(ds, q, &fts)?;
    if let (Some(sql), false) = (opts.filter.as_deref(), opts.prefilter) {
        let pass = crate::search::ann::passing(ds, sql)?;
        vector.retain(|(a, _)| pass.contains(*a));
        text.retain(|(a, _)| pass.contains(*a));
    }
    Ok(fuse(&vector, &text, opts.rrf_k, opts.limit))
}

/// Hybrid search: the rows of the fused ranking, best first, with `_distance`,
/// `_score` and `_relevance_score` (see the module documentation).
pub fn hybrid_search(
    ds: &Dataset,
    req: &Nearest<'_>,
    q: &FtsQuery,
    opts: &HybridOptions,
) -> Result<RecordBatch> {
    use crate::scan::columns;
    let fused = hybrid_addresses(ds, req, q, opts)?;
    let schema = ds.schema();
    let names: Option<Vec<&str>> = opts
        .columns
        .as_ref()
        .map(|c| c.iter().map(String::as_str).collect());
    let paths = columns::resolve_all(&schema, names.as_deref())?;
    let tops = columns::tops(&paths);
    let addrs: Vec<u64> = fused.iter().map(|f| f.address).collect();
    let rows = crate::scan::json_text(&ds.take_addresses_stored(&addrs, Some(&tops))?)?;
    let distance: ArrayRef = Arc::new(fused.iter().map(|f| f.distance).collect::<Float32Array>());
    let score: ArrayRef = Arc::new(fused.iter().map(|f| f.score).collect::<Float32Array>());
    let relevance: ArrayRef = Arc::new(Float32Array::from_iter_values(
        fused.iter().map(|f| f.relevance),
    ));
    columns::project(
        &paths,
        &rows,
        vec![
            (Field::new("_distance", DataType::Float32, true), distance),
            (Field::new("_score", DataType::Float32, true), score),
            (
                Field::new("_relevance_score", DataType::Float32, false),
                relevance,
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuse_sums_reciprocal_ranks() {
        let v = [(10, 0.1), (20, 0.2), (30, 0.3)];
        let t = [(30, 9.0), (40, 8.0)];
        let f = fuse(&v, &t, 60.0, 10);
        let addrs: Vec<u64> = f.iter().map(|x| x.address).collect();
        // 30: 1/63 + 1/61 beats 10: 1/61; 40 (1/62) ties 20 (1/62): vector first
        assert_eq!(addrs, vec![30, 10, 20, 40]);
        assert_eq!(f[0].relevance, (1.0 / 63.0 + 1.0 / 61.0) as f32);
        assert_eq!((f[0].distance, f[0].score), (Some(0.3), Some(9.0)));
        assert_eq!((f[3].distance, f[3].score), (None, Some(8.0)));
        assert_eq!(fuse(&v, &t, 60.0, 2).len(), 2);
        assert!(fuse(&[], &[], 60.0, 5).is_empty());
    }
}
