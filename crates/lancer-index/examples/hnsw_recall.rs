//! Graph quality of HNSW builds (issue 42): build time, each level's size, mean degree
//! and how its lists were chosen (the share the paper's heuristic keeps, the overlap with
//! each node's exact nearest on the level), where ef-10 searches enter level 0, and
//! recall@10 against the exact answer with distances computed per query at several beam
//! widths: one graph over all rows.
//!
//!     cargo run --release -p lancer-index --example hnsw_recall -- ROWS DIM [M EF_C THREADS]
//!
//! Vectors: clustered (1,000 Gaussian centres scaled by 4, unit noise; queries perturbed
//! rows), drawn here, or bench/index.py's exact draws from `$HNSW_DATA/v{ROWS}_{DIM}.f32`
//! and `q{ROWS}_{DIM}.f32` (`bench/hnsw_graph_data.py` writes them). `HNSW_SEED` seeds
//! the level draws (default 42). `HNSW_PYLANCE=<index dir>` measures pylance's graph
//! (`index.idx` / `auxiliary.idx` of its one-partition IVF_HNSW_FLAT index over the same
//! vectors) instead of building one; `HNSW_QUERIES=N` adds N queries drawn the same way;
//! `HNSW_SHOW=1` prints a few nodes' level-0 lists
//! (`*`: kept by the heuristic).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Instant;

use lancer_index::vector::hnsw::{Graph, GraphQuery, Visited, HNSW_METADATA_KEY};

#[path = "common/data.rs"]
mod data;
use lancer_index::vector::hnsw::{build_graph, HnswBuild, Space};

struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f32 {
        let (a, b) = (self.unit(), self.unit());
        ((-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()) as f32
    }
}

fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

fn main() {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    let (n, dim) = (a[0], a[1]);
    let m = a.get(2).copied().unwrap_or(20);
    let efc = a.get(3).copied().unwrap_or(150);
    let threads = a.get(4).copied().unwrap_or(2);
    // bench/index.py's draws when `$HNSW_DATA` names them, else drawn here
    let (v, queries) = match std::env::var("HNSW_DATA") {
        Ok(dir) => data::vectors_and_queries(&dir, n, dim),
        Err(_) => {
            let mut r = Rng(0x9e37_79b9_7f4a_7c15);
            let centres: Vec<f32> = (0..1000 * dim).map(|_| r.normal() * 4.0).collect();
            let mut v = Vec::with_capacity(n * dim);
            for _ in 0..n {
                let c = (r.unit() * 1000.0) as usize % 1000;
                for j in 0..dim {
                    v.push(centres[c * dim + j] + r.normal());
                }
            }
            let nq = 200;
            let queries: Vec<f32> = (0..nq)
                .flat_map(|_| {
                    let i = (r.unit() * n as f64) as usize % n;
                    let row: Vec<f32> = v[i * dim..(i + 1) * dim].to_vec();
                    row.into_iter()
                        .map(|x| x + r.normal() * 0.5)
                        .collect::<Vec<_>>()
                })
                .collect();
            (v, queries)
        }
    };
    // `HNSW_QUERIES=N`: N more queries, rows perturbed as bench/index.py perturbs them
    // (200 queries leave a recall@10 uncertain by about 0.01)
    let queries = match std::env::var("HNSW_QUERIES") {
        Ok(more) => {
            let mut r = Rng(0x5851_f42d_4c95_7f2d);
            let mut all = queries;
            for _ in 0..more.parse::<usize>().unwrap() {
                let i = (r.unit() * n as f64) as usize % n;
                for j in 0..dim {
                    all.push(v[i * dim + j] + r.normal() * 0.5);
                }
            }
            all
        }
        Err(_) => queries,
    };
    if let Ok(dir) = std::env::var("HNSW_PYLANCE") {
        // pylance's graph over these vectors: node i is the auxiliary file's row i
        let open = |f: &str| {
            let b = bytes::Bytes::from(std::fs::read(format!("{dir}/{f}")).unwrap());
            lancer_format::reader::FileReader::open(Arc::new(b)).unwrap()
        };
        let aux = open("auxiliary.idx").read_all(Some(&["_rowid"])).unwrap();
        let ids = aux
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::UInt64Array>()
            .unwrap();
        let mut pv = Vec::with_capacity(n * dim);
        for &r in ids.values() {
            pv.extend_from_slice(&v[r as usize * dim..(r as usize + 1) * dim]);
        }
        let idx = open("index.idx");
        let rows = idx.read_all(Some(&["__vector_id"])).unwrap().num_rows();
        let graph = Graph::load_all(&idx, &[(0, rows)], &[n], "p")
            .unwrap()
            .remove(0)
            .unwrap();
        report(&graph, &pv, &queries, n, dim, 0.0, "pylance");
        return;
    }
    let t = Instant::now();
    let space = Space {
        vectors: &v,
        dim,
        dot: false,
    };
    let params = HnswBuild {
        m,
        ef_construction: efc,
        max_level: 7,
    };
    let seed = std::env::var("HNSW_SEED").map_or(42, |s| s.parse().unwrap());
    let g = build_graph(space, params, seed, threads);
    let build = t.elapsed().as_secs_f64();
    let (batch, meta) = g.to_batch().unwrap();
    let json = serde_json::to_string(&vec![meta.to_json().to_string()]).unwrap();
    let schema = batch
        .schema()
        .as_ref()
        .clone()
        .with_metadata([(HNSW_METADATA_KEY.to_string(), json)].into());
    let batch = batch.with_schema(Arc::new(schema)).unwrap();
    let graph = Graph::from_batch(&batch, n, "x").unwrap();
    report(
        &graph,
        &v,
        &queries,
        n,
        dim,
        build,
        &format!("m {m} efc {efc} threads {threads}"),
    );
}

fn report(graph: &Graph, v: &[f32], queries: &[f32], n: usize, dim: usize, build: f64, what: &str) {
    let nq = queries.len() / dim;
    for l in 0..graph.levels() {
        let d = graph.degrees(l);
        let mean = d.iter().sum::<usize>() as f64 / d.len().max(1) as f64;
        let full = d
            .iter()
            .filter(|&&x| x >= if l == 0 { 40 } else { 20 })
            .count();
        println!(
            "  level {l}: {} nodes, mean degree {mean:.1}, full {full}",
            graph.level_len(l)
        );
    }
    // how each level's lists were chosen: the share of a list's entries the paper's
    // heuristic would keep (nearer to the node than to every nearer entry kept), and the
    // overlap with the node's exact nearest on the level (sampled nodes)
    for l in 0..graph.levels() {
        let nodes = graph.level_nodes(l);
        if nodes.len() < 2 {
            continue;
        }
        let (mut kept, mut all, mut near, mut nall) = (0usize, 0usize, 0usize, 0usize);
        let step = (nodes.len() / 200).max(1);
        for &x in nodes.iter().step_by(step) {
            let row = |i: u32| &v[i as usize * dim..(i as usize + 1) * dim];
            let mut list: Vec<(f32, u32)> = graph
                .neighbours(l, x)
                .iter()
                .map(|&y| (l2(row(x), row(y)), y))
                .collect();
            list.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut sel: Vec<u32> = Vec::new();
            for &(d, y) in &list {
                if sel.iter().all(|&z| d < l2(row(y), row(z))) {
                    sel.push(y);
                }
            }
            kept += sel.len();
            all += list.len();
            if l > 0 || nodes.len() <= 300_000 {
                let mut ex: Vec<(f32, u32)> = nodes
                    .iter()
                    .filter(|&&y| y != x)
                    .map(|&y| (l2(row(x), row(y)), y))
                    .collect();
                ex.sort_by(|a, b| a.0.total_cmp(&b.0));
                let k = list.len();
                near += ex[..k.min(ex.len())]
                    .iter()
                    .filter(|e| list.iter().any(|q| q.1 == e.1))
                    .count();
                nall += k;
            }
        }
        println!("  level {l}: heuristic keeps {:.2} of list entries; {:.2} of entries are the node's exact nearest on the level", kept as f64 / all.max(1) as f64, near as f64 / nall.max(1) as f64);
    }
    if std::env::var("HNSW_SHOW").is_ok() {
        let row = |i: u32| &v[i as usize * dim..(i as usize + 1) * dim];
        for x in [
            n as u32 - 1,
            n as u32 - 2,
            n as u32 / 2,
            n as u32 / 2 + 1,
            5,
        ] {
            let list = graph.neighbours(0, x);
            let mut sel: Vec<u32> = Vec::new();
            let mut sorted: Vec<(f32, u32)> =
                list.iter().map(|&y| (l2(row(x), row(y)), y)).collect();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            for &(d, y) in &sorted {
                if sel.iter().all(|&z| d < l2(row(y), row(z))) {
                    sel.push(y);
                }
            }
            let desc: Vec<String> = list
                .iter()
                .map(|&y| {
                    format!(
                        "{}{:.0}",
                        if sel.contains(&y) { "*" } else { "" },
                        l2(row(x), row(y))
                    )
                })
                .collect();
            println!("  node {x} ({} links): {}", list.len(), desc.join(" "));
        }
    }
    println!(
        "rows {n} dim {dim} {what}: build {build:.2} s, unreachable {}",
        graph.unreachable()
    );
    let truth: Vec<Vec<u32>> = queries
        .chunks(dim)
        .map(|q| {
            let mut d: Vec<(f32, u32)> = (0..n)
                .map(|i| (l2(q, &v[i * dim..(i + 1) * dim]), i as u32))
                .collect();
            d.select_nth_unstable_by(10, |a, b| a.0.total_cmp(&b.0));
            d[..10].iter().map(|x| x.1).collect()
        })
        .collect();
    {
        // where ef-10 searches start on level 0: near the answer (within 1.5x the 10th
        // nearest's distance) or not, and the recall of each group
        let (mut near, mut near_hit, mut far_hit) = (0usize, 0usize, 0usize);
        for (q, want) in queries.chunks(dim).zip(&truth) {
            let mut dist = |i: u32| l2(q, &v[i as usize * dim..(i as usize + 1) * dim]);
            let t = graph.trace(10, 10, &mut dist);
            let start = t["beam"]["start"].as_u64().unwrap() as u32;
            let tenth = want.iter().map(|&i| dist(i)).fold(0f32, f32::max);
            let hit = t["beam"]["best"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| want.contains(&(b[0].as_u64().unwrap() as u32)))
                .count();
            if dist(start) < 1.5 * tenth {
                near += 1;
                near_hit += hit
            } else {
                far_hit += hit
            }
        }
        let nq = queries.len() / dim;
        println!(
            "  ef 10 starts near the answer: {near} of {nq} (recall {:.3} there, {:.3} elsewhere)",
            near_hit as f64 / (10 * near.max(1)) as f64,
            far_hit as f64 / (10 * (nq - near).max(1)) as f64
        );
    }
    let mut vis = Visited::default();
    for ef in [10, 20, 40, 80] {
        let (mut hit, mut calls) = (0usize, 0usize);
        for (q, want) in queries.chunks(dim).zip(&truth) {
            let mut dist = |i: u32| {
                calls += 1;
                l2(q, &v[i as usize * dim..(i as usize + 1) * dim])
            };
            let got = graph.search(
                GraphQuery {
                    k: 10,
                    ef,
                    acorn: false,
                },
                None,
                &mut vis,
                &mut dist,
            );
            hit += got.iter().filter(|s| want.contains(&s.id)).count();
        }
        println!(
            "  ef {ef:>3}: recall {:.3}, distances per query {}",
            hit as f64 / (10 * nq) as f64,
            calls / nq
        );
    }
}
