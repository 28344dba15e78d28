//! Which rows a rank's worker reads in an epoch.
//!
//! The shards' surviving rows, in the epoch's shard order, form one sequence of
//! `N` rows. Rank `r` of `W` takes the contiguous slice `[r·N/W, (r+1)·N/W)` (sizes
//! differ by at most one: balanced by rows, not by fragment count), and worker `w` of
//! `K` the same way within its rank's slice — so every row is read exactly once per
//! epoch across all ranks and workers. A shard may thus be split between two ranks
//! (Lancer reads any range of a fragment's rows), unlike a loader that can only hand
//! out whole files. With [`Tail::DropLast`] every rank gets `⌊N/W⌋` rows (the last
//! `N mod W` are not read); with [`Tail::Pad`] every rank gets `⌈N/W⌉`, the missing
//! ones repeated from the start of the sequence (as a distributed sampler pads).

use serde::{Deserialize, Serialize};

use crate::plan::Plan;
use crate::rng;

/// What happens to rows that do not divide evenly among ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Tail {
    /// Every row read once; ranks differ by at most one row.
    #[default]
    Keep,
    /// Every rank reads `⌊N/W⌋` rows; the rest are skipped this epoch.
    DropLast,
    /// Every rank reads `⌈N/W⌉` rows; short ranks repeat rows from the start.
    Pad,
}

/// A run of surviving rows of one shard: rows `start..end` counted among the
/// fragment's surviving rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// Index of the shard in the plan.
    pub shard: usize,
    /// The fragment's id.
    pub fragment_id: u64,
    /// First surviving row (0-based among the fragment's surviving rows).
    pub start: u64,
    /// One past the last.
    pub end: u64,
}

impl Part {
    /// Rows in the part.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether the part has no rows.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// The shard order of an epoch: the plan's order, or a permutation drawn from
/// `(seed, epoch)` (the same on every rank).
pub fn shard_order(plan: &Plan, shuffle: bool, seed: u64, epoch: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..plan.shards.len()).collect();
    if shuffle {
        rng::shuffle(&mut order, rng::mix(&[seed, epoch, 0x5348_4152_4453]));
    }
    order
}

/// `[lo, hi)` of `total` items for slot `i` of `n` (contiguous, sizes differ by ≤ 1).
pub fn slot(total: u64, i: u64, n: u64) -> (u64, u64) {
    let n = n.max(1);
    let lo = (total as u128 * i as u128 / n as u128) as u64;
    let hi = (total as u128 * (i + 1) as u128 / n as u128) as u64;
    (lo, hi)
}

/// The global row ranges (positions in the epoch's sequence of `total` rows) rank
/// `rank` of `world` reads, before the worker split; with [`Tail::Pad`] a range may
/// wrap to the start.
pub fn rank_ranges(total: u64, rank: u64, world: u64, tail: Tail) -> Vec<(u64, u64)> {
    let world = world.max(1);
    match tail {
        Tail::Keep => vec![slot(total, rank, world)],
        Tail::DropLast => {
            let q = total / world;
            vec![(rank * q, rank * q + q)]
        }
        Tail::Pad => {
            if total == 0 {
                return vec![];
            }
            let q = total.div_ceil(world);
            let (mut lo, hi) = (rank * q, rank * q + q);
            let mut out = Vec::new();
            // wrap around the sequence as often as needed (world may exceed total)
            while lo < hi {
                let at = lo % total;
                let n = (hi - lo).min(total - at);
                out.push((at, at + n));
                lo += n;
            }
            out
        }
    }
}

/// Splits a list of global ranges (total `len`) into worker `worker` of `workers`'s
/// share (contiguous within the concatenation, sizes differ by ≤ 1).
pub fn worker_ranges(ranges: &[(u64, u64)], worker: u64, workers: u64) -> Vec<(u64, u64)> {
    let len: u64 = ranges.iter().map(|(a, b)| b - a).sum();
    let (lo, hi) = slot(len, worker, workers);
    let mut out = Vec::new();
    let mut at = 0u64;
    for &(a, b) in ranges {
        let n = b - a;
        let (s, e) = (lo.max(at), hi.min(at + n));
        if s < e {
            out.push((a + (s - at), a + (e - at)));
        }
        at += n;
    }
    out
}

/// The parts (shard row runs) the global ranges cover, in order, for the shards in
/// `order`.
pub fn parts(plan: &Plan, order: &[usize], ranges: &[(u64, u64)]) -> Vec<Part> {
    // start of each shard (in `order`) in the global sequence
    let mut starts = Vec::with_capacity(order.len());
    let mut at = 0u64;
    for &s in order {
        starts.push(at);
        at += plan.shards.get(s).map_or(0, |sh| sh.rows);
    }
    let mut out = Vec::new();
    for &(a, b) in ranges {
        let mut pos = a;
        while pos < b {
            // the shard holding global row `pos`
            let i = starts.partition_point(|&st| st <= pos).saturating_sub(1);
            let Some(&s) = order.get(i) else { break };
            let Some(shard) = plan.shards.get(s) else {
                break;
            };
            let shard_start = starts[i];
            let shard_end = shard_start + shard.rows;
            if shard_end <= pos {
                // empty shards share a start with the next one: move on
                pos = shard_end.max(pos + 1).min(b);
                continue;
            }
            let e = b.min(shard_end);
            out.push(Part {
                shard: s,
                fragment_id: shard.fragment_id,
                start: pos - shard_start,
                end: e - shard_start,
            });
            pos = e;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Plan, Shard};

    fn plan(rows: &[u64]) -> Plan {
        let shards: Vec<Shard> = rows
            .iter()
            .enumerate()
            .map(|(i, &r)| Shard {
                fragment_id: i as u64 * 10,
                files: vec![],
                physical_rows: r + 1,
                rows: r,
                bytes: 0,
            })
            .collect();
        Plan {
            uri: "x".into(),
            version: 1,
            rows: rows.iter().sum(),
            bytes: 0,
            shards,
        }
    }

    /// Every (shard, row) pair of a plan, as the splits hand them out.
    fn rows_of(p: &Plan, parts: &[Part]) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        for part in parts {
            assert!(part.end <= p.shards[part.shard].rows);
            for r in part.start..part.end {
                v.push((part.fragment_id, r));
            }
        }
        v
    }

    #[test]
    fn every_row_once_for_all_worlds_and_workers() {
        let p = plan(&[7, 0, 13, 1, 0, 29, 4]);
        for shuffle in [false, true] {
            let order = shard_order(&p, shuffle, 42, 3);
            for world in 1..=8u64 {
                for workers in 1..=4u64 {
                    let mut all = Vec::new();
                    let mut sizes = Vec::new();
                    for rank in 0..world {
                        let rr = rank_ranges(p.rows, rank, world, Tail::Keep);
                        let mut n = 0;
                        for w in 0..workers {
                            let got =
                                rows_of(&p, &parts(&p, &order, &worker_ranges(&rr, w, workers)));
                            n += got.len();
                            all.extend(got);
                        }
                        sizes.push(n);
                    }
                    let max = *sizes.iter().max().unwrap();
                    let min = *sizes.iter().min().unwrap();
                    assert!(max - min <= 1, "{sizes:?}");
                    all.sort_unstable();
                    let mut want: Vec<(u64, u64)> = p
                        .shards
                        .iter()
                        .flat_map(|s| (0..s.rows).map(move |r| (s.fragment_id, r)))
                        .collect();
                    want.sort_unstable();
                    assert_eq!(all, want, "world {world} workers {workers}");
                }
            }
        }
    }

    #[test]
    fn drop_last_and_pad_give_equal_counts() {
        let p = plan(&[5, 6]);
        for world in 1..=13u64 {
            let d: Vec<u64> = (0..world)
                .map(|r| {
                    rank_ranges(11, r, world, Tail::DropLast)
                        .iter()
                        .map(|(a, b)| b - a)
                        .sum()
                })
                .collect();
            assert!(d.iter().all(|&n| n == 11 / world));
            let pad: Vec<u64> = (0..world)
                .map(|r| {
                    rank_ranges(11, r, world, Tail::Pad)
                        .iter()
                        .map(|(a, b)| b - a)
                        .sum()
                })
                .collect();
            assert!(pad.iter().all(|&n| n == 11u64.div_ceil(world)), "{pad:?}");
            let covered: std::collections::BTreeSet<u64> = (0..world)
                .flat_map(|r| rank_ranges(11, r, world, Tail::Pad))
                .flat_map(|(a, b)| a..b)
                .collect();
            assert_eq!(covered.len(), 11);
            let order = shard_order(&p, false, 0, 0);
            assert_eq!(rows_of(&p, &parts(&p, &order, &[(0, 11)])).len(), 11);
        }
    }

    #[test]
    fn shard_order_depends_on_seed_and_epoch_only() {
        let p = plan(&[1; 20]);
        assert_eq!(shard_order(&p, true, 1, 2), shard_order(&p, true, 1, 2));
        assert_ne!(shard_order(&p, true, 1, 2), shard_order(&p, true, 1, 3));
        assert_eq!(shard_order(&p, false, 1, 2), (0..20).collect::<Vec<_>>());
    }
}
