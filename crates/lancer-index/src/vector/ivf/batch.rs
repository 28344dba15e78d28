//! Batched IVF search: several query vectors against one segment, each answered
//! exactly as [`IvfSegment::search`] answers it alone (the same candidates and
//! estimated distances), with the work shared (reference: batched vector queries,
//! `Scanner::nearest` with several query vectors, PR #6828 — lance-reference.txt
//! ~line 14790).
//!
//! Each query's always-searched partitions (its `min_nprobes`, raised by early
//! pruning) are grouped by partition, and each partition is visited once for every
//! query probing it: FLAT and SQ rows are scored against all those queries block by
//! block (a block of rows is read once and stays in cache while every query scores
//! it), PQ partitions build each query's lookup table and sum the codes while the
//! partition's codes are in cache, HNSW and RQ partitions run one search per query.
//! Partitions are dealt among the cores, each thread keeping its own top-k per
//! query, merged after. Queries that found fewer than `k` rows then probe further
//! partitions in rounds exactly as a single search does.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::{
    dot, l2, sq_code, Candidate, IvfSegment, Metric, Probe, Ranked, Scratch, Storage, TopK,
};
use crate::{IndexError, Result};

/// Rows scored per query before moving to the next query (FLAT / SQ): a block of
/// 64-d f32 rows is 32 KiB, an L1's worth.
const BLOCK: usize = 128;

/// Work (rows × queries) from which the partitions are shared among threads.
const PARALLEL_WORK: usize = 32 * 1024;

/// One query's plan: the prepared vector, the partitions in search order and how many
/// are always searched / searched at most.
struct Plan {
    q: Vec<f32>,
    order: Vec<usize>,
    min: usize,
    max: usize,
    rq: Option<crate::vector::rabitq::QueryTables>,
}

impl IvfSegment {
    /// What [`Self::search`] returns for each of `queries` (in their order), with the
    /// partitions each query always searches visited once for all queries probing
    /// them. `probe` applies to every query.
    pub fn search_batch(
        &self,
        queries: &[&[f32]],
        probe: &Probe,
        keep: &(dyn Fn(u64) -> bool + Sync),
    ) -> Result<Vec<Vec<Candidate>>> {
        if let Some(q) = queries.iter().find(|q| q.len() != self.dim) {
            return Err(IndexError::InvalidArgument {
                what: format!(
                    "Query vector size {} does not match index column size {} (index {})",
                    q.len(),
                    self.dim,
                    self.name
                ),
            });
        }
        let beam = self.beam(probe)?;
        let plans: Vec<Plan> = queries.iter().map(|q| self.plan(q, probe)).collect();
        // partition -> the queries always searching it
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); self.partitions.len()];
        for (qi, plan) in plans.iter().enumerate() {
            for &p in &plan.order[..plan.min] {
                groups[p].push(qi as u32);
            }
        }
        let mut items: Vec<usize> = (0..groups.len())
            .filter(|&p| !groups[p].is_empty() && self.partitions[p].1 > 0)
            .collect();
        let cost = |p: usize| self.partitions[p].1 * groups[p].len();
        // biggest first, so the last ones dealt are small
        items.sort_by_key(|&p| std::cmp::Reverse(cost(p)));
        let work: usize = items.iter().map(|&p| cost(p)).sum();
        let threads = if work >= PARALLEL_WORK {
            lancer_util::cores().min(items.len()).max(1)
        } else {
            1
        };
        let next = AtomicUsize::new(0);
        let run = || {
            let mut tops: Vec<Option<TopK>> = (0..plans.len()).map(|_| None).collect();
            let mut scratch = self.take_scratch();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&p) = items.get(i) else { break };
                for &qi in &groups[p] {
                    tops[qi as usize].get_or_insert_with(|| TopK::new(probe.k));
                }
                self.visit(p, &groups[p], &plans, beam, &mut scratch, &mut tops, keep);
            }
            self.give_scratch(scratch);
            tops
        };
        let shares: Vec<Vec<Option<TopK>>> = if threads > 1 {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads).map(|_| s.spawn(run)).collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().map_err(|_| IndexError::InvalidArgument {
                            what: format!("a search thread of index {} failed", self.name),
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })?
        } else {
            vec![run()]
        };
        let mut best: Vec<TopK> = (0..plans.len()).map(|_| TopK::new(probe.k)).collect();
        for share in shares {
            for (b, t) in best.iter_mut().zip(share) {
                if let Some(t) = t {
                    b.merge(t);
                }
            }
        }
        // Queries short of k probe on in rounds, as a single search does.
        let round = probe.round.max(1);
        let mut scratch = self.take_scratch();
        for (plan, top) in plans.iter().zip(best.iter_mut()) {
            for (searched, &p) in plan.order.iter().enumerate().skip(plan.min) {
                let round_start = (searched - plan.min) % round == 0;
                if searched >= plan.max || (round_start && top.found >= probe.k) {
                    break;
                }
                self.search_partition(p, &plan.q, plan.rq.as_ref(), beam, &mut scratch, top, keep);
            }
        }
        self.give_scratch(scratch);
        Ok(best
            .into_iter()
            .map(|top| {
                top.into_sorted()
                    .into_iter()
                    .map(|Ranked(distance, row_id)| Candidate { distance, row_id })
                    .collect()
            })
            .collect())
    }

    /// One query's partitions and bounds, as [`Self::search`] works them out.
    fn plan(&self, query: &[f32], probe: &Probe) -> Plan {
        let q = self.prepare(query);
        let dists = self.probe_distances(query);
        let order: Vec<usize> = dists.iter().map(|d| d.1).collect();
        let cd: Vec<f32> = dists.iter().map(|d| d.0).collect();
        let max = probe.max_nprobes.unwrap_or(order.len()).min(order.len());
        let min = probe
            .min_nprobes
            .max(super::early_pruning(&cd, probe.wanted))
            .max(1)
            .min(max);
        let rq = match &self.storage {
            Storage::Rq(r) => Some(crate::vector::rabitq::QueryTables::new(r.rotate(&q))),
            _ => None,
        };
        Plan {
            q,
            order,
            min,
            max,
            rq,
        }
    }

    /// Offers each query of `group` the rows of partition `p` that could enter its
    /// top-k (`tops[query]`, present for every query of the group).
    #[allow(clippy::too_many_arguments)]
    fn visit(
        &self,
        p: usize,
        group: &[u32],
        plans: &[Plan],
        beam: super::graph::Beam,
        scratch: &mut Scratch,
        tops: &mut [Option<TopK>],
        keep: &dyn Fn(u64) -> bool,
    ) {
        let (start, len) = self.partitions[p];
        let dim = self.dim;
        let each = |scratch: &mut Scratch, tops: &mut [Option<TopK>]| {
            for &qi in group {
                let plan = &plans[qi as usize];
                if let Some(top) = tops[qi as usize].as_mut() {
                    self.search_partition(p, &plan.q, plan.rq.as_ref(), beam, scratch, top, keep);
                }
            }
        };
        if self.graphs.is_some() {
            return each(scratch, tops);
        }
        match &self.storage {
            Storage::Flat { vectors } => {
                let metric = self.metric;
                self.blocks(start, len, group, tops, keep, |_, qi| {
                    let q = &plans[qi].q;
                    Box::new(move |r| {
                        let v = &vectors[r * dim..(r + 1) * dim];
                        match metric {
                            // hamming segments are refused when opened and built
                            Metric::L2 | Metric::Hamming => l2(q, v),
                            Metric::Cosine => l2(q, v) / 2.0,
                            Metric::Dot => 1.0 - dot(q, v),
                        }
                    })
                });
            }
            Storage::Sq {
                start: lo,
                end: hi,
                codes,
            } => {
                let step = ((hi - lo) / 255.0) as f32;
                let metric = self.metric;
                // each query's quantized form, computed once for the partition
                let prepared: Vec<(Vec<u8>, Vec<f32>, f32)> = group
                    .iter()
                    .map(|&qi| {
                        let q = &plans[qi as usize].q;
                        (
                            q.iter().map(|&x| sq_code(x, *lo, *hi)).collect(),
                            q.iter().map(|&x| x * step).collect(),
                            q.iter().map(|&x| x * *lo as f32).sum(),
                        )
                    })
                    .collect();
                self.blocks(start, len, group, tops, keep, |slot, _| {
                    let (qc, qs, qlo) = &prepared[slot];
                    Box::new(move |r| {
                        let code = &codes[r * dim..(r + 1) * dim];
                        match metric {
                            Metric::Dot => {
                                let mut s = 0f32;
                                for (x, &cd) in qs.iter().zip(code) {
                                    s += x * f32::from(cd);
                                }
                                1.0 - (qlo + s)
                            }
                            _ => crate::distance::sq_l2(qc, code) as f32 * step * step,
                        }
                    })
                });
            }
            // PQ: each query's table and sums while the partition's codes are cached;
            // RQ: each query's own tables.
            Storage::Pq { .. } | Storage::Rq(_) => each(scratch, tops),
        }
    }

    /// Rows `start..start + len` in blocks of [`BLOCK`], each block scored against
    /// every query of `group` by `scorer(slot in group, query)` (distance of a storage
    /// row) before
    /// the next block; rows at or under a query's bound are offered to its top-k.
    fn blocks<'a>(
        &self,
        start: usize,
        len: usize,
        group: &[u32],
        tops: &mut [Option<TopK>],
        keep: &dyn Fn(u64) -> bool,
        scorer: impl Fn(usize, usize) -> Box<dyn Fn(usize) -> f32 + 'a>,
    ) {
        let scorers: Vec<Box<dyn Fn(usize) -> f32 + 'a>> = group
            .iter()
            .enumerate()
            .map(|(s, &qi)| scorer(s, qi as usize))
            .collect();
        let end = start + len;
        let mut b = start;
        while b < end {
            let e = (b + BLOCK).min(end);
            for (&qi, score) in group.iter().zip(&scorers) {
                let Some(top) = tops[qi as usize].as_mut() else {
                    continue;
                };
                let mut bound = top.bound();
                for r in b..e {
                    let d = score(r);
                    if d <= bound {
                        top.offer(d, self.row_ids[r], keep);
                        bound = top.bound();
                    }
                }
            }
            b = e;
        }
    }
}
