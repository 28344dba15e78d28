//! Directly scored prefiltered HNSW searches (issue 42: a filter keeping under a tenth
//! of a graph's nodes scores the kept rows directly, as the reference does): the kept
//! rows of a random or clustered mask scored whole ([`lancer_index::distance::l2`], every
//! row's vector fetched ahead) against the bounded kernel
//! ([`lancer_index::distance::l2_within`], only each row's first 128 bytes fetched ahead
//! while most rows are cut there: [`lancer_index::distance::CutRate`]), one thread, the
//! same top-k checked equal.
//!
//!     cargo run --profile profiling -p lancer-index --example kept_scoring -- ROWS DIM PERCENT
//!
//! Vectors and 200 queries from `$HNSW_DATA/v{ROWS}_{DIM}.f32` / `q{ROWS}_{DIM}.f32`
//! (`bench/hnsw_graph_data.py`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use lancer_index::distance::{l2, l2_within, prefetch, CutRate};
use lancer_index::vector::hnsw::Graph;

#[path = "common/data.rs"]
mod data;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (n, dim, percent): (usize, usize, f64) = (
        a[0].parse().unwrap(),
        a[1].parse().unwrap(),
        a[2].parse().unwrap(),
    );
    let dir = std::env::var("HNSW_DATA").expect("HNSW_DATA");
    let (v, q) = data::vectors_and_queries(&dir, n, dim);
    let nq = q.len() / dim;
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut unit = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let random: Vec<bool> = (0..n).map(|_| unit() * 100.0 < percent).collect();
    let clustered: Vec<bool> = (0..n)
        .map(|i| (i as f64) < n as f64 * percent / 100.0)
        .collect();
    let row = |i: u32| &v[i as usize * dim..(i as usize + 1) * dim];
    for (name, mask) in [("random", &random), ("clustered", &clustered)] {
        let kept = mask.iter().filter(|&&b| b).count();
        let mut times = [0f64; 2];
        for round in 0..2 {
            for (which, t) in times.iter_mut().enumerate() {
                let start = Instant::now();
                for j in 0..nq {
                    let qv = &q[j * dim..(j + 1) * dim];
                    let found = if which == 0 {
                        Graph::score_kept(10, mask, &mut |i, _| l2(qv, row(i)), &mut |i| {
                            prefetch(row(i))
                        })
                    } else {
                        let rate = CutRate::default();
                        Graph::score_kept(
                            10,
                            mask,
                            &mut |i, bound| {
                                let d = l2_within(qv, row(i), bound);
                                rate.record(d >= bound);
                                d
                            },
                            &mut |i| {
                                let v = row(i);
                                prefetch(if rate.mostly_cut() {
                                    &v[..dim.min(32)]
                                } else {
                                    v
                                })
                            },
                        )
                    };
                    std::hint::black_box(found);
                }
                if round == 1 {
                    *t = start.elapsed().as_secs_f64();
                }
            }
        }
        // the same answers
        for j in 0..nq {
            let qv = &q[j * dim..(j + 1) * dim];
            let a = Graph::score_kept(10, mask, &mut |i, _| l2(qv, row(i)), &mut |_| {});
            let b = Graph::score_kept(
                10,
                mask,
                &mut |i, bd| l2_within(qv, row(i), bd),
                &mut |_| {},
            );
            let ids = |x: &[lancer_index::vector::hnsw::Scored]| {
                x.iter()
                    .map(|s| (s.id, s.dist.to_bits()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids(&a), ids(&b), "query {j}");
        }
        println!(
            "{name} {percent}% ({kept} rows kept of {n}): whole rows {:.0} QPS, bounded {:.0} QPS ({:.2}x)",
            nq as f64 / times[0],
            nq as f64 / times[1],
            times[0] / times[1]
        );
    }
}
