//! HNSW graph searches inside an IVF segment (`IVF_HNSW_FLAT` / `_SQ` / `_PQ`): a
//! partition's graph ([`crate::vector::hnsw`]) walked with the partition's stored vectors
//! scored one row at a time, as the partition scan would score them (format guide
//! "Vector Indices" → HNSW, lines ~2504–2563).

use super::{pq_table, sq_code, ApproxMode, IvfSegment, Metric, Probe, Scratch, Storage, TopK};
use crate::distance::{dot, l2};
use crate::{IndexError, Result};

/// Kept vectors (bytes) past which a directly scored search uses the bounded kernel.
const BOUNDED_BYTES: usize = 16 << 20;

/// How the graphs of an HNSW index are walked for one query.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Beam {
    pub(crate) ef: usize,
    pub(crate) acorn: bool,
    /// Every row passes the caller's filter: no mask is built.
    pub(crate) keeps_all: bool,
    /// The caller's filter as a fixed set ([`Probe::keep_token`]).
    pub(crate) keep_token: Option<u64>,
}

impl IvfSegment {
    /// Partition `p`'s mask of the fixed filter `token` (`keep` of each row), built
    /// once and kept for the next queries with the same filter.
    fn mask(&self, token: u64, p: usize, keep: &dyn Fn(u64) -> bool) -> std::sync::Arc<Vec<bool>> {
        let lock = || self.masks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = lock().iter().find(|m| m.0 == token && m.1 == p) {
            return m.2.clone();
        }
        let (start, len) = self.partitions[p];
        let m: std::sync::Arc<Vec<bool>> = std::sync::Arc::new(
            self.row_ids[start..start + len]
                .iter()
                .map(|&id| keep(id))
                .collect(),
        );
        let mut masks = lock();
        if masks.len() >= super::KEPT_MASKS {
            masks.remove(0);
        }
        masks.push((token, p, m.clone()));
        m
    }

    /// How this segment's graphs are walked for `probe`: the beam (default `1.5 × k`,
    /// refused below `k` on an HNSW index, as the reference refuses it) and the
    /// `approx_mode` (other than normal refused on IVF_RQ, whose estimate the
    /// reference trades under it).
    pub(crate) fn beam(&self, probe: &Probe) -> Result<Beam> {
        if probe.approx != ApproxMode::Normal && matches!(self.storage, Storage::Rq(_)) {
            return Err(IndexError::InvalidArgument {
                what: format!(
                    "approx_mode={:?} on IVF_RQ index {} is not supported by Lancer yet (it always uses the multi-bit estimate): search with approx_mode=\"normal\"",
                    probe.approx.name(),
                    self.name
                ),
            });
        }
        let ef = probe.ef.unwrap_or(probe.k.saturating_add(probe.k / 2));
        if self.graphs.is_some() && ef < probe.k {
            return Err(IndexError::InvalidArgument {
                what: format!(
                    "ef must be greater than or equal to k: ef {ef} for {} candidates (k × refine_factor) of HNSW index {}",
                    probe.k, self.name
                ),
            });
        }
        Ok(Beam {
            ef,
            acorn: probe.approx == ApproxMode::Fast,
            keeps_all: probe.keeps_all,
            keep_token: probe.keep_token,
        })
    }

    /// Offers `top` the best `top.k` rows of partition `p` that a walk of its HNSW
    /// graph `g` (beam `ef`) finds, among those `keep` passes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search_graph(
        &self,
        g: &crate::vector::hnsw::Graph,
        p: usize,
        q: &[f32],
        beam: Beam,
        scratch: &mut Scratch,
        top: &mut TopK,
        keep: &dyn Fn(u64) -> bool,
    ) {
        let (start, len) = self.partitions[p];
        let Scratch {
            table,
            visited,
            keep: kept,
            ..
        } = scratch;
        kept.clear();
        let shared = match (beam.keeps_all, beam.keep_token) {
            (true, _) => None,
            (false, Some(token)) => Some(self.mask(token, p, keep)),
            (false, None) => {
                kept.extend(self.row_ids[start..start + len].iter().map(|&id| keep(id)));
                None
            }
        };
        let mask: &[bool] = shared.as_deref().map_or(&kept[..], |m| &m[..]);
        let filter = (!mask.iter().all(|&b| b)).then_some(mask);
        // Few rows kept (scored directly, as the reference does), many bytes of FLAT
        // vectors under l2 / cosine: each kept row scored with the bounded kernel (a
        // row whose first values already pass the current k-th is not read further),
        // only its first 128 bytes fetched ahead while most rows stop there — the
        // same rows and distances as scoring each whole. Measured at 1M x 128
        // (`examples/kept_scoring.rs`): 1.2x at 10% kept, 1.1x at 5%, slower at 1%
        // (10k rows, cached across queries: the checks cost more than they save),
        // hence only past BOUNDED_BYTES of kept vectors.
        if let (Some(m), Storage::Flat { vectors }, Metric::L2 | Metric::Cosine) =
            (filter, &self.storage, self.metric)
        {
            let n_kept = m.iter().filter(|&&b| b).count();
            let dim = self.dim;
            if g.scores_directly(n_kept) && n_kept * dim * 4 >= BOUNDED_BYTES {
                let half = self.metric == Metric::Cosine;
                let row =
                    |i: u32| &vectors[(start + i as usize) * dim..(start + i as usize + 1) * dim];
                let rate = crate::distance::CutRate::default();
                let found = crate::vector::hnsw::Graph::score_kept(
                    top.k,
                    m,
                    &mut |i, bound| {
                        let d = if half {
                            crate::distance::l2_within(q, row(i), bound * 2.0) / 2.0
                        } else {
                            crate::distance::l2_within(q, row(i), bound)
                        };
                        rate.record(d >= bound);
                        d
                    },
                    &mut |i| {
                        let v = row(i);
                        crate::distance::prefetch(if rate.mostly_cut() {
                            &v[..v.len().min(32)]
                        } else {
                            v
                        });
                    },
                );
                self.offer_found(start, &found, top);
                return;
            }
        }
        let mut dist = self.row_distance(p, q, table);
        let query = crate::vector::hnsw::GraphQuery {
            k: top.k,
            ef: beam.ef,
            acorn: beam.acorn,
        };
        let found = g.search_prefetching(query, filter, visited, &mut dist, &mut |i| {
            self.prefetch_row(start + i as usize)
        });
        self.offer_found(start, &found, top);
    }

    /// Offers `top` the rows of the nodes `found` (of the partition starting at row
    /// `start`), nearest first.
    fn offer_found(&self, start: usize, found: &[crate::vector::hnsw::Scored], top: &mut TopK) {
        // a multivector row has a node per vector: its nearest (first) stands for it
        // (the reference's graph search answers each row once): a scan of the few
        // before it, a set past 64 nodes (k × refine_factor can be large)
        let mut seen =
            (found.len() > 64).then(|| std::collections::HashSet::with_capacity(found.len()));
        for (i, s) in found.iter().enumerate() {
            let row = self.row_ids[start + s.id as usize];
            let first = match seen.as_mut() {
                Some(set) => set.insert(row),
                None => !found[..i]
                    .iter()
                    .any(|p| self.row_ids[start + p.id as usize] == row),
            };
            if first {
                top.offer(s.dist, row, &|_| true);
            }
        }
    }

    /// The distance of the prepared query `q` to row `i` of partition `p`, one row at
    /// a time (graph walks), equal to what [`Self::score_partition`] computes for it.
    /// Asks the CPU to fetch row `r`'s stored vector (FLAT) or codes (SQ) into cache.
    fn prefetch_row(&self, r: usize) {
        let dim = self.dim;
        match &self.storage {
            Storage::Flat { vectors } => {
                if let Some(v) = vectors.get(r * dim..(r + 1) * dim) {
                    crate::distance::prefetch(v);
                }
            }
            Storage::Sq { codes, .. } => {
                if let Some(c) = codes.get(r * dim..(r + 1) * dim) {
                    crate::distance::prefetch(c);
                }
            }
            _ => {}
        }
    }

    pub(crate) fn row_distance<'a>(
        &'a self,
        p: usize,
        q: &'a [f32],
        table: &'a mut Vec<f32>,
    ) -> Box<dyn FnMut(u32) -> f32 + 'a> {
        let (start, len) = self.partitions[p];
        let dim = self.dim;
        match &self.storage {
            Storage::Flat { vectors } => {
                let metric = self.metric;
                Box::new(move |i| {
                    let r = start + i as usize;
                    let v = &vectors[r * dim..(r + 1) * dim];
                    match metric {
                        // hamming segments are refused when opened and built
                        Metric::L2 | Metric::Hamming => l2(q, v),
                        Metric::Cosine => l2(q, v) / 2.0,
                        Metric::Dot => 1.0 - dot(q, v),
                    }
                })
            }
            Storage::Pq {
                m,
                nbits,
                books,
                codes,
                residual,
                ..
            } => {
                let c = &self.centroids[p * dim..(p + 1) * dim];
                pq_table(q, c, books, *m, *nbits, *residual, dim, table);
                let table: &'a [f32] = table;
                let width = m * *nbits as usize / 8;
                let part = &codes[start * width..(start + len) * width];
                let bias = if *residual { 0.0 } else { 1.0 - *m as f32 };
                let four = *nbits == 4;
                Box::new(move |i| {
                    let i = i as usize;
                    let mut sum = 0f32;
                    for b in 0..width {
                        let code = part[b * len + i] as usize;
                        if four {
                            sum += table[(2 * b) * 16 + (code & 15)];
                            sum += table[(2 * b + 1) * 16 + (code >> 4)];
                        } else {
                            sum += table[b * 256 + code];
                        }
                    }
                    sum + bias
                })
            }
            Storage::Sq {
                start: lo,
                end: hi,
                codes,
            } => {
                let step = ((hi - lo) / 255.0) as f32;
                let qc: Vec<u8> = q.iter().map(|&x| sq_code(x, *lo, *hi)).collect();
                let qs: Vec<f32> = q.iter().map(|&x| x * step).collect();
                let qlo: f32 = q.iter().map(|&x| x * *lo as f32).sum();
                let metric = self.metric;
                Box::new(move |i| {
                    let r = start + i as usize;
                    let code = &codes[r * dim..(r + 1) * dim];
                    match metric {
                        Metric::Dot => {
                            let mut s = 0f32;
                            for (x, &cd) in qs.iter().zip(code) {
                                s += x * f32::from(cd);
                            }
                            1.0 - (qlo + s)
                        }
                        _ => crate::distance::sq_l2(&qc, code) as f32 * step * step,
                    }
                })
            }
            // refused when the segment is opened
            Storage::Rq(_) => Box::new(|_| f32::INFINITY),
        }
    }
}
