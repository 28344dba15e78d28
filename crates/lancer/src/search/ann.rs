//! Approximate nearest-neighbour search through a dataset's vector index, combined the
//! way the reference combines it (format guide "Vector Indices"; query semantics in
//! `docs/vector-index-format.md` §6):
//!
//! 1. every segment of the column's index is searched over its nearest partitions
//!    (`nprobes`, or `min_nprobes`..`max_nprobes` while fewer than the wanted
//!    candidates were found); rows deleted since the build, rows of fragments no
//!    longer in the version and rows a prefilter rejects are skipped before ranking;
//! 2. candidates of all segments are merged by the index's estimated distance, `k`
//!    of them (`k × refine_factor` with refine);
//! 3. unless `fast_search`, when fragments are not covered by the index (rows appended
//!    after it was built) their exact top-`k` is added; with refine or such fragments
//!    every candidate is re-ranked by its exact distance — so `_distance` is exact
//!    exactly when pylance's is.
//!
//! Without an index of the request's metric on the column, or with `use_index` off,
//! the search is exact (`search::streamed_top_k`) — or, with `fast_search`, finds
//! nothing (only indexed rows are searched, as pylance 14 does).

use std::sync::Arc;

use lancer_index::vector::ivf::{self, IvfSegment, Probe};

use crate::catalog::stable_id_addresses;
use crate::search::exact::{self as search, Hit, Metric, Nearest};
use crate::{Dataset, Error, Result};

/// How a search may use a vector index (the reference's query parameters).
#[derive(Clone, Debug)]
pub struct AnnParams {
    /// Use the column's index when it has one (the reference's `use_index`, default
    /// true); false forces an exact search.
    pub use_index: bool,
    /// Partitions to search (sets both bounds below).
    pub nprobes: Option<usize>,
    /// Partitions always searched (default 1, or `nprobes`; raised by the reference's
    /// early pruning to the partitions whose centroids are about as near as the
    /// nearest).
    pub min_nprobes: Option<usize>,
    /// Partitions searched at most while fewer than `k` rows were found (default: all,
    /// or `nprobes`).
    pub max_nprobes: Option<usize>,
    /// Re-rank `k × refine_factor` candidates by their exact distance.
    pub refine_factor: Option<u32>,
    /// Search only what the index covers, with its estimated distances (the
    /// reference's `fast_search`).
    pub fast_search: bool,
    /// Beam width of HNSW graph searches (the reference's `ef`; default `1.5 × k ×
    /// refine_factor`, refused below `k × refine_factor`). Other index kinds ignore
    /// it, as pylance's do.
    pub ef: Option<usize>,
    /// The reference's `approx_mode`: `Fast` walks HNSW graphs past a filter
    /// ACORN-style (kept nodes only, reaching past rejected ones); IVF_RQ indexes
    /// refuse `Fast` and `Accurate`; other kinds ignore it, as pylance's do.
    pub approx_mode: ApproxMode,
}

pub use lancer_index::vector::ivf::ApproxMode;

impl Default for AnnParams {
    fn default() -> Self {
        Self {
            use_index: true,
            nprobes: None,
            min_nprobes: None,
            max_nprobes: None,
            refine_factor: None,
            fast_search: false,
            ef: None,
            approx_mode: ApproxMode::Normal,
        }
    }
}

/// The reference's default minimum of partitions searched.
pub const DEFAULT_MIN_NPROBES: usize = 1;

impl AnnParams {
    pub(crate) fn probe(&self, k: usize, wanted: usize) -> Probe {
        let (min, max) = match self.nprobes {
            Some(n) => (n, Some(n)),
            None => (
                self.min_nprobes.unwrap_or(DEFAULT_MIN_NPROBES),
                self.max_nprobes,
            ),
        };
        Probe {
            k,
            min_nprobes: min.max(1),
            max_nprobes: max.map(|m| m.max(1)),
            wanted,
            round: lancer_util::cores(),
            ef: self.ef,
            approx: self.approx_mode,
            keeps_all: false,
            keep_token: None,
        }
    }
}

/// The vector index segments on the top-level column `column`.
fn vector_metas<'a>(
    ds: &'a Dataset,
    column: &str,
) -> Result<Vec<&'a lancer_table::pb::IndexMetadata>> {
    let id = crate::catalog::indexable_field(ds, column, "in the dataset")?;
    Ok(ds
        .indices()?
        .iter()
        .filter(|m| m.fields.as_slice() == [id] && ivf::is_vector_index(m))
        .collect())
}

/// The segments of the vector index on `column` (the first index by name when there
/// are several), opened or from the cache. Empty when the column has none.
pub fn index_segments(ds: &Dataset, column: &str) -> Result<Vec<Arc<IvfSegment>>> {
    let mut metas = vector_metas(ds, column)?;
    let Some(first) = metas.iter().map(|m| m.name.clone()).min() else {
        return Ok(Vec::new());
    };
    // Segments covering no fragment add no rows (and may have no files).
    metas.retain(|m| m.name == first && !ivf::covers_nothing(m));
    let mut out = Vec::with_capacity(metas.len());
    for m in metas {
        match cached_ivf_segment(ds, m) {
            Ok(seg) => out.push(seg),
            // A kind this build cannot search (HNSW sub-indexes): its fragments are
            // left uncovered, so their rows are searched exactly; the session warns.
            Err(e @ lancer_index::IndexError::Unsupported { .. }) => {
                ds.store().context().warn(&format!(
                    "vector index skipped, rows are searched exactly: {e}"
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// The metric of the vector index on `column`, if it has one (what a search of that
/// column should use when the caller names none).
pub fn column_index_metric(ds: &Dataset, column: &str) -> Result<Option<Metric>> {
    if let Some(s) = index_segments(ds, column)?.first() {
        return Ok(Some(s.metric));
    }
    // An index of no rows yet: the metric its details record.
    let mut metas = vector_metas(ds, column)?;
    metas.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(metas
        .first()
        .and_then(|m| lancer_index::vector::ivf::details_model(m))
        .map(|(_, m)| m))
}

/// Largest prefilter result kept in the session's metadata cache (a bit per row:
/// 128 Mi rows).
const CACHED_PASSING_BYTES: u64 = 16 << 20;

/// Row addresses that pass `sql` (the index search's prefilter): live rows only (the
/// scan skips deleted ones), a bit per physical row.
///
/// A version's rows never change, so the set of a repeatable filter (one calling no
/// `random()` or `now()`) is kept in the session's metadata cache by dataset root,
/// version, the manifest's timestamp and transaction, and the filter's text: a search
/// repeating a filter (a tenant, a category) evaluates it once.
pub(crate) fn passing(
    ds: &Dataset,
    sql: &str,
) -> Result<Arc<crate::search::address_set::AddressSet>> {
    let pb = &ds.manifest().pb;
    let stamp = pb
        .timestamp
        .as_ref()
        .map_or((0, 0), |t| (t.seconds, t.nanos));
    let id = [
        b"prefilter:".as_slice(),
        &ds.version().to_le_bytes(),
        &stamp.0.to_le_bytes(),
        &stamp.1.to_le_bytes(),
        pb.transaction_file.as_bytes(),
        b"\0",
        sql.as_bytes(),
    ]
    .concat();
    let cache = ds.store().context().metadata_cache();
    let root = crate::session::root_key(ds);
    // (only repeatable filters are kept: a hit needs no compiling)
    if let Some(set) = cache.get::<crate::search::address_set::AddressSet>(&root, &id) {
        return Ok(set);
    }
    let filter = crate::Filter::new(sql, &ds.schema())?;
    let set = Arc::new(evaluate_passing(ds, sql, &filter)?.sealed());
    if filter.repeatable() && set.bytes() <= CACHED_PASSING_BYTES {
        cache.insert(&root, &id, set.clone());
    }
    Ok(set)
}

fn evaluate_passing(
    ds: &Dataset,
    sql: &str,
    filter: &crate::Filter,
) -> Result<crate::search::address_set::AddressSet> {
    use crate::scan::{DatasetExt, ROW_ADDRESS};
    use arrow_array::cast::AsArray;
    let first: Vec<&str> = filter
        .columns()
        .iter()
        .take(1)
        .map(String::as_str)
        .collect();
    let mut out = crate::search::address_set::AddressSet::with_fragments(
        ds.fragments().iter().map(|f| (f.id, f.physical_rows)),
    );
    let scan = ds
        .scan()
        .columns(&first)
        .filter(sql)
        .with_row_address(true)
        .ordered(false);
    for b in scan.stream()? {
        let b = b?;
        let col = b
            .column_by_name(ROW_ADDRESS)
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::UInt64Type>())
            .ok_or_else(|| Error::InvalidArgument {
                what: "row addresses missing from the prefilter scan".into(),
            })?;
        out.extend(col.values());
    }
    Ok(out)
}

/// Exact distances of the rows at `addrs` (re-ranking): each fragment's `req.k` nearest,
/// in no order (the caller sorts and cuts the merged hits).
fn exact(ds: &Dataset, req: &Nearest<'_>, addrs: &[u64]) -> Result<Vec<Hit>> {
    // In file order, one fragment at a time: each take reads its rows in one pass and
    // returns them without a reordering or concatenating copy; the ranking does not
    // care about the order.
    let mut sorted = addrs.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let qnorm = lancer_index::distance::dot(&req.query, &req.query).sqrt();
    let qbytes: Vec<u8> = req.query.iter().map(|&x| x as u8).collect();
    let mut hits = Vec::new();
    for frag in sorted.chunk_by(|a, b| a >> 32 == b >> 32) {
        let b = ds.take_addresses_stored(frag, Some(&[req.column]))?;
        if crate::search::multivector::is_multivector(b.column(0).data_type()) {
            let heap = crate::search::multivector::top_k(
                b.column(0),
                &req.query,
                req.metric,
                req.k,
                &|_| true,
            )?;
            hits.extend(heap.into_iter().map(|h| Hit(h.0, frag[h.1 as usize])));
            continue;
        }
        let (vecs, dim) = search::vectors(b.column(0))?;
        let valid = b.column(0).logical_nulls();
        let keep = |i: usize| valid.as_ref().is_none_or(|n| n.is_valid(i));
        let heap = search::scan_range(
            0..b.num_rows(),
            &vecs,
            dim,
            &req.query,
            &qbytes,
            qnorm,
            req.metric,
            req.k,
            &keep,
        );
        hits.extend(heap.into_iter().map(|h| Hit(h.0, frag[h.1 as usize])));
    }
    Ok(hits)
}

/// The `k` nearest rows as `(distance, row address)`, nearest first, through the index
/// when one applies — the search without fetching any column (what an ANN library
/// returns).
pub fn nearest_addresses(
    ds: &Dataset,
    req: &Nearest<'_>,
    prefilter: Option<&str>,
    params: &AnnParams,
) -> Result<Vec<(f32, u64)>> {
    Ok(top_k(ds, req, prefilter, params)?
        .into_iter()
        .map(|h| (h.0, h.1))
        .collect())
}

/// The `k` nearest rows (distance, row address), through the index when one applies.
pub(crate) fn top_k(
    ds: &Dataset,
    req: &Nearest<'_>,
    prefilter: Option<&str>,
    params: &AnnParams,
) -> Result<Vec<Hit>> {
    let segments = if params.use_index {
        index_segments(ds, req.column)?
    } else {
        Vec::new()
    };
    let metric = Some(req.metric).filter(|m| m.indexable());
    if segments.is_empty() || segments.iter().any(|s| Some(s.metric) != metric) {
        if params.fast_search {
            // pylance 14: fast_search searches only what an index covers; with no
            // usable index (none, another metric, use_index off) that is nothing
            return Ok(Vec::new());
        }
        return search::streamed_top_k(ds, req, prefilter, None);
    }
    // a multivector query through the index: one search per query vector, scored
    if let Some(dim) = crate::search::multivector::column_dim(ds, req.column) {
        // each query vector: its k x OVERFETCH best rows by the index's estimates
        return crate::search::multivector::indexed_top_k(req, dim, |single| {
            indexed_top_k(ds, single, prefilter, params, &segments, false)
        });
    }
    indexed_top_k(ds, req, prefilter, params, &segments, true)
}

/// [`top_k`] through the index `segments` (searched with `req.metric`): their
/// candidates, re-ranked exactly when asked or when fragments they do not cover are
/// searched exactly beside them. A multivector row is indexed once per vector: with
/// `unique` its best counts once, else (the reference's per-query-vector lists of XTR
/// scoring) every vector's hit stays a candidate.
fn indexed_top_k(
    ds: &Dataset,
    req: &Nearest<'_>,
    prefilter: Option<&str>,
    params: &AnnParams,
    segments: &[Arc<IvfSegment>],
    unique: bool,
) -> Result<Vec<Hit>> {
    // With stable row ids the index holds ids, not addresses: they are mapped to the
    // rows' current addresses (compaction moves rows and keeps their ids).
    let addresses = stable_id_addresses(ds)?;
    let address = |id: u64| match &addresses {
        Some(m) => m.get(&id).copied(),
        None => Some(id),
    };
    let live = ds.live_addresses()?;
    let pass = prefilter.map(|sql| passing(ds, sql)).transpose()?;
    // a prefilter passes live rows only: its set alone decides
    let keep = |id: u64| {
        address(id).is_some_and(|a| {
            pass.as_ref()
                .map_or_else(|| live.contains(a), |p| p.contains(a))
        })
    };
    let wanted = req.k * params.refine_factor.unwrap_or(1).max(1) as usize;
    let mut probe = params.probe(wanted, req.k);
    probe.keep_token = pass.as_ref().map(|p| p.token()).filter(|&t| t != 0);
    // nothing to skip: no prefilter, ids are addresses, and every fragment the
    // segments cover is there without deleted rows
    probe.keeps_all = prefilter.is_none() && addresses.is_none() && {
        let clean: std::collections::HashSet<u64> = ds
            .fragments()
            .iter()
            .filter(|d| d.deletion_file.is_none())
            .map(|d| d.id)
            .collect();
        segments
            .iter()
            .all(|s| s.fragments.iter().all(|f| clean.contains(&u64::from(f))))
    };
    let mut cands = Vec::new();
    for s in segments {
        cands.extend(s.search(&req.query, &probe, &keep)?);
    }
    cands.sort_by(|a, b| {
        a.distance
            .total_cmp(&b.distance)
            .then(a.row_id.cmp(&b.row_id))
    });
    if unique {
        let mut seen = std::collections::HashSet::new();
        cands.retain(|c| seen.insert(c.row_id));
    }
    cands.truncate(wanted);
    for c in &mut cands {
        c.row_id = address(c.row_id).unwrap_or(u64::MAX);
    }
    cands.retain(|c| c.row_id != u64::MAX);
    let mut covered = roaring::RoaringBitmap::new();
    for s in segments {
        covered |= &s.fragments;
    }
    // fast_search leaves out the rows the index does not cover.
    let unindexed: Vec<u64> = if params.fast_search {
        Vec::new()
    } else {
        crate::catalog::uncovered_fragments(ds, &covered)
    };
    if params.refine_factor.is_none() && unindexed.is_empty() {
        cands.truncate(req.k);
        return Ok(cands.iter().map(|c| Hit(c.distance, c.row_id)).collect());
    }
    let addrs: Vec<u64> = cands.iter().map(|c| c.row_id).collect();
    let mut hits = exact(ds, req, &addrs)?;
    if !unindexed.is_empty() {
        hits.extend(search::streamed_top_k(
            ds,
            req,
            prefilter,
            Some(&unindexed),
        )?);
    }
    hits.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    hits.dedup_by_key(|h| h.1);
    hits.truncate(req.k);
    Ok(hits)
}

/// The IVF segment `m` from the session's index cache (by dataset root and uuid; index
/// files never change once written, so entries never go stale), opened into it when
/// absent.
pub(crate) fn cached_ivf_segment(
    ds: &Dataset,
    m: &lancer_table::pb::IndexMetadata,
) -> std::result::Result<Arc<IvfSegment>, lancer_index::IndexError> {
    let uuid = m.uuid.as_ref().map(|u| u.uuid.clone()).unwrap_or_default();
    crate::session::index_cache(ds).get_or_try_insert(&crate::session::root_key(ds), &uuid, || {
        IvfSegment::open(ds, m).map(Arc::new)
    })
}
