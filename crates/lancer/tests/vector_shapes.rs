//! Vector indexes on awkward shapes, both ways (scripts/gen_vector_shapes.py writes them
//! with pylance 14, 12 and 11): a partly-null vector column, an all-null one, an empty
//! dataset, an all-deleted one, one vector on every row, zero vectors under cosine,
//! float16 / float64 elements, a 256-d column in ten pages (storage 2.0 and 2.1).
//!
//! - Lancer searches every index pylance built on them: every partition probed and every
//!   candidate re-ranked gives pylance's exact answer (the same distances; the same ids
//!   wherever distances do not tie).
//! - Lancer builds IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ / IVF_HNSW_SQ for l2 and cosine on the same data:
//!   it builds every one (an index of no rows where there are no vectors, as pylance 14
//!   does for empty and all-deleted data), its index covers the rows pylance's covers, its full-probe answer is the exact one, and
//!   pylance 14, 12 and 11 open the index, count the same indexed rows, give the exact
//!   answer with every partition probed and Lancer's one-probe answer.

use std::path::{Path, PathBuf};
use std::process::Command;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use lancer::index::{create_vector_index, list_indices, VectorIndexOptions};
use lancer::search::AnnParams;
use lancer::search::{nearest, Filtering, Metric, Nearest, SearchOptions};
use lancer::Dataset;
use lancer_index::distance::Metric as IndexMetric;
use lancer_index::vector::ivf::Quantizer;
use serde_json::Value;

use lancer_testkit::oracle::live_dir;

use crate::common::{copy_dir, pylance, repo, TempDir};

/// The live shapes directory of pylance `v`, or None when the test script did not make
/// them (a failure with LANCER_REQUIRE_PYLANCE).
fn shapes_dir(v: &str) -> Option<PathBuf> {
    let p = live_dir("LANCER_VECTOR_SHAPES_LIVE")?.join(format!("pylance-{v}"));
    assert!(p.join("shapes.json").exists(), "{} missing", p.display());
    Some(p)
}

fn load(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("shapes.json")).unwrap()).unwrap()
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn i64s(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

/// An answer: ids and distances in rank order.
type Answer = (Vec<i64>, Vec<f32>);

fn answer_of(v: &Value) -> Answer {
    let d = v["distances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().map_or(f32::NAN, |f| f as f32))
        .collect();
    (i64s(&v["ids"]), d)
}

fn close(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-4 + 2e-3 * a.abs().max(b.abs())
}

/// A fully probed, refined search against the exact answer: the same answer for the
/// IVF kinds; for HNSW graphs (a walk reaches only what the graph links: on shapes of
/// many equal or zero vectors a graph — pylance's as Lancer's — leaves a few nodes
/// unlinked) 8 of the k rows at least, with their distances.
fn assert_full_probe(kind: &str, got: &Answer, want: &Answer, at: &str) {
    if !kind.contains("HNSW") {
        return assert_same(got, want, at);
    }
    assert_eq!(got.0.len(), want.0.len(), "{at}: {got:?} vs {want:?}");
    // a row tied with the exact answer's k-th distance counts as one of its rows
    let kth = want.1.last().copied().unwrap_or(f32::NAN);
    let common = got
        .0
        .iter()
        .zip(&got.1)
        .filter(|(i, d)| want.0.contains(i) || close(**d, kth))
        .count();
    assert!(
        common * 10 >= got.0.len() * 8,
        "{at}: {common} common: {got:?} vs {want:?}"
    );
}

/// The same answer: equal length, the same distances rank by rank and, within every
/// run of equal distances except a last one cut by k, the same ids.
fn assert_same(got: &Answer, want: &Answer, at: &str) {
    assert_eq!(
        got.0.len(),
        want.0.len(),
        "{at}: lengths {got:?} vs {want:?}"
    );
    for (i, (a, b)) in got.1.iter().zip(&want.1).enumerate() {
        assert!(close(*a, *b), "{at}: distance {i}: {got:?} vs {want:?}");
    }
    let n = want.1.len();
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && close(want.1[end], want.1[start]) {
            end += 1;
        }
        if end < n || n == 0 {
            let mut a = got.0[start..end].to_vec();
            let mut b = want.0[start..end].to_vec();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(
                a, b,
                "{at}: ids of ranks {start}..{end}: {got:?} vs {want:?}"
            );
        }
        start = end;
    }
}

fn metric_of(m: &str) -> (Metric, IndexMetric) {
    match m {
        "l2" => (Metric::L2, IndexMetric::L2),
        "cosine" => (Metric::Cosine, IndexMetric::Cosine),
        other => panic!("metric {other}"),
    }
}

fn quantizer_of(kind: &str) -> Quantizer {
    match kind {
        "IVF_FLAT" => Quantizer::Flat,
        "IVF_PQ" => Quantizer::Pq {
            sub_vectors: 4,
            bits: 8,
        },
        "IVF_SQ" | "IVF_HNSW_SQ" => Quantizer::Sq,
        "IVF_RQ" => Quantizer::Rq { bits: 1 },
        other => panic!("kind {other}"),
    }
}

fn search(ds: &Dataset, q: &[f32], metric: Metric, k: usize, p: &AnnParams) -> Answer {
    let req = Nearest {
        column: "vec",
        query: q.to_vec(),
        k,
        metric,
    };
    let b = nearest(
        ds,
        &req,
        &SearchOptions {
            filtering: Filtering::None,
            columns: Some(&["id"]),
            ann: p.clone(),
            ..Default::default()
        },
    )
    .unwrap();
    let ids = b.column(0).as_primitive::<Int64Type>().values().to_vec();
    let d = b.column(1).as_primitive::<Float32Type>().values().to_vec();
    (ids, d)
}

fn full_probe() -> AnnParams {
    AnnParams {
        nprobes: Some(1 << 16),
        refine_factor: Some(1000),
        ..Default::default()
    }
}

fn one_probe() -> AnnParams {
    AnnParams {
        nprobes: Some(1),
        ..Default::default()
    }
}

#[test]
fn lancer_searches_pylance_indexes_on_shapes() {
    for v in ["14", "12", "11"] {
        let Some(dir) = shapes_dir(v) else { return };
        let doc = load(&dir);
        let k = doc["k"].as_u64().unwrap() as usize;
        let mut searched = 0;
        for shape in doc["shapes"].as_array().unwrap() {
            let name = shape["name"].as_str().unwrap();
            let queries: Vec<Vec<f32>> = shape["queries"]
                .as_array()
                .unwrap()
                .iter()
                .map(f32s)
                .collect();
            for b in shape["builds"].as_array().unwrap() {
                if b["status"] != "ok" {
                    continue;
                }
                let kind = b["kind"].as_str().unwrap();
                let m = b["metric"].as_str().unwrap();
                let at = format!("pylance {v} {name} {kind} {m}");
                let ds = Dataset::open(dir.join(name).join(format!("{}_{m}", kind.to_lowercase())))
                    .unwrap_or_else(|e| panic!("{at}: {e}"));
                let info = list_indices(&ds).unwrap();
                assert_eq!(info.len(), 1, "{at}");
                let (metric, _) = metric_of(m);
                for (qi, (q, a)) in queries
                    .iter()
                    .zip(b["answers"].as_array().unwrap())
                    .enumerate()
                {
                    let exact = answer_of(&a["exact"]);
                    let got = search(&ds, q, metric, k, &full_probe());
                    if kind.contains("HNSW") {
                        // pylance's graph, walked as pylance walks it: pylance's own
                        // fully probed answer (which on shapes of equal or zero vectors
                        // can miss exact rows its graph leaves unlinked)
                        let theirs = answer_of(&a["full"]);
                        assert_same(&got, &theirs, &format!("{at} query {qi} full probe"));
                    } else {
                        assert_same(&got, &exact, &format!("{at} query {qi} full probe"));
                    }
                    let plain = search(
                        &ds,
                        q,
                        metric,
                        k,
                        &AnnParams {
                            use_index: false,
                            ..Default::default()
                        },
                    );
                    assert_same(&plain, &exact, &format!("{at} query {qi} exact"));
                    searched += 1;
                }
            }
        }
        // pylance 11 / 12 refuse the empty and all-deleted shapes (14 builds them)
        assert!(searched > 140, "pylance {v}: {searched} searches");
    }
}

/// Lancer builds every kind on every shape; pylance 14 / 12 / 11 open what it built.
#[test]
fn lancer_builds_indexes_on_shapes_pylance_opens() {
    let Some(dir) = shapes_dir("14") else { return };
    let doc = load(&dir);
    let k = doc["k"].as_u64().unwrap() as usize;
    let tmp = TempDir::new("vshapes");
    let mut checked = 0;
    // every shape's Lancer-built indexes, checked by one pylance process per version
    // (starting pylance costs ~1 s)
    let (mut list, mut expect) = (Vec::new(), Vec::new());
    for shape in doc["shapes"].as_array().unwrap() {
        let name = shape["name"].as_str().unwrap();
        let queries: Vec<Vec<f32>> = shape["queries"]
            .as_array()
            .unwrap()
            .iter()
            .map(f32s)
            .collect();
        for b in shape["builds"].as_array().unwrap() {
            let kind = b["kind"].as_str().unwrap();
            let m = b["metric"].as_str().unwrap();
            let at = format!("{name} {kind} {m}");
            let (metric, imetric) = metric_of(m);
            let out = tmp.join(name).join(format!("{}_{m}", kind.to_lowercase()));
            copy_dir(&dir.join(name).join("data"), &out);
            let ds = Dataset::open(&out).unwrap();
            let mut opts = VectorIndexOptions::new(quantizer_of(kind), imetric);
            opts.num_partitions = Some(4);
            if kind.contains("HNSW") {
                opts.hnsw = Some(lancer_index::vector::hnsw::HnswBuild {
                    m: 8,
                    ef_construction: 40,
                    max_level: 7,
                });
            }
            let built = create_vector_index(&ds, "vec", &opts);
            // Where pylance 14 refuses (k-means on no vectors: all-null FLAT / SQ / RQ),
            // Lancer commits an index of no rows, as pylance 14 does for IVF_PQ there
            let ds = built.unwrap_or_else(|e| panic!("{at}: {e}"));
            let info = list_indices(&ds).unwrap();
            assert_eq!(info.len(), 1, "{at}");
            let mut lancer_np1 = Vec::new();
            for (qi, q) in queries.iter().enumerate() {
                let exact = if b["status"] == "ok" {
                    answer_of(&b["answers"][qi]["exact"])
                } else {
                    // no pylance answer recorded: Lancer's own exact search
                    search(
                        &ds,
                        q,
                        metric,
                        k,
                        &AnnParams {
                            use_index: false,
                            ..Default::default()
                        },
                    )
                };
                let got = search(&ds, q, metric, k, &full_probe());
                assert_full_probe(kind, &got, &exact, &format!("{at} query {qi} full probe"));
                lancer_np1.push(search(&ds, q, metric, k, &one_probe()));
            }
            list.push(serde_json::json!({
                "dir": out, "metric": m, "queries": queries, "k": k
            }));
            expect.push((
                at,
                b.clone(),
                lancer_np1,
                shape["live_rows"].as_u64().unwrap(),
            ));
        }
    }
    let lfile = tmp.join("all.json");
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        let seen = check_vector_shapes(&py, &lfile, &Value::Array(list.clone()));
        let seen = seen.as_array().unwrap();
        assert_eq!(seen.len(), expect.len(), "pylance {v} checks every index");
        for (r, (at, b, np1, live)) in seen.iter().zip(&expect) {
            let at = format!("pylance {v} on Lancer's {at}");
            assert!(r.get("error").is_none(), "{at}: {}", r["error"]);
            assert_eq!(r["indices"].as_array().unwrap().len(), 1, "{at}");
            let empty = *live == 0 || b["indexed_rows"] == 0 || b["status"] != "ok";
            if let Some(e) = r.get("stats_error") {
                // pylance 11 / 12 cannot describe an index of no rows (pylance 14's
                // own neither); searching it works
                assert!(empty && v != "14", "{at}: {e}");
                continue_answers(r, b, np1, &at);
                checked += 1;
                continue;
            }
            let indexed = r["indexed_rows"].as_u64().unwrap();
            if b["status"] == "ok" {
                assert_eq!(
                    Some(indexed),
                    b["indexed_rows"].as_u64(),
                    "{at}: indexed rows"
                );
            } else {
                assert!(indexed <= *live, "{at}: indexed rows {indexed}");
            }
            continue_answers(r, b, np1, &at);
            checked += 1;
        }
    }
    assert!(checked >= 150, "{checked} pylance checks");
}

/// What `scripts/check_vector_shapes.py` run by pylance `py` says of the Lancer-built
/// indexes of `items` (written to `file` for it): one answer per item.
fn check_vector_shapes(py: &Path, file: &Path, items: &Value) -> Value {
    std::fs::write(file, items.to_string()).unwrap();
    let out = Command::new(py)
        .arg(repo().join("scripts/check_vector_shapes.py"))
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        py.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// pylance's answers `r` on Lancer's index: fully probed = pylance's exact answer of
/// the build `b`, one probe = Lancer's (`np1`; by count where distances tie).
fn continue_answers(r: &Value, b: &Value, np1: &[Answer], at: &str) {
    let kind = b["kind"].as_str().unwrap_or("");
    for (qi, a) in r["answers"].as_array().unwrap().iter().enumerate() {
        let full = answer_of(&a["full"]);
        if b["status"] == "ok" {
            assert_full_probe(
                kind,
                &full,
                &answer_of(&b["answers"][qi]["exact"]),
                &format!("{at} query {qi} full"),
            );
        }
        let ids = i64s(&a["np1"]);
        let want = &np1[qi];
        if tie_free(&want.1) {
            assert_eq!(
                ids, want.0,
                "{at} query {qi}: one probe, distances {:?}",
                want.1
            );
        } else {
            assert_eq!(ids.len(), want.0.len(), "{at} query {qi}: one probe");
        }
    }
}

/// No two distances of an answer tie (ids are then fixed by the distances alone).
fn tie_free(d: &[f32]) -> bool {
    d.windows(2).all(|w| !close(w[0], w[1]))
}

/// An index created while the column has no vectors (every row null) is an entry of no
/// rows; the rows appended later are searched exactly, and `optimize_index` trains the
/// index on them (replacing the empty entry) — which pylance then uses.
#[test]
fn empty_index_is_trained_by_optimize() {
    use arrow_array::{ArrayRef, FixedSizeListArray, Float32Array, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use lancer::index::{describe_index, optimize_index};
    use lancer::WriteParams;
    use std::sync::Arc;

    let d = 8;
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("vec", DataType::FixedSizeList(item.clone(), d), true),
    ]));
    let batch = |from: i64, n: i64, null: bool| {
        let id: ArrayRef = Arc::new(Int64Array::from_iter_values(from..from + n));
        let values = Float32Array::from_iter_values(
            (0..n * i64::from(d)).map(|i| ((from * 31 + i * 17) % 101) as f32 / 10.0),
        );
        let nulls = null.then(|| arrow_buffer::NullBuffer::new_null(n as usize));
        let vec: ArrayRef = Arc::new(
            FixedSizeListArray::try_new(item.clone(), d, Arc::new(values), nulls).unwrap(),
        );
        RecordBatch::try_new(schema.clone(), vec![id, vec]).unwrap()
    };
    let scratch = TempDir::new("empty-index");
    let dir = scratch.join("ds");
    let ds = Dataset::write(
        &dir,
        schema.clone(),
        &[batch(0, 50, true)],
        &WriteParams::default(),
    )
    .unwrap();
    let mut opts = VectorIndexOptions::new(
        Quantizer::Pq {
            sub_vectors: 2,
            bits: 8,
        },
        IndexMetric::L2,
    );
    opts.num_partitions = Some(2);
    let ds = create_vector_index(&ds, "vec", &opts).unwrap();
    let info = list_indices(&ds).unwrap();
    assert_eq!(info[0].index_type.as_deref(), Some("IVF_PQ"));
    assert_eq!(info[0].metric.as_deref(), Some("l2"));
    let desc = describe_index(&ds, "vec_idx").unwrap();
    assert_eq!(desc["rows_indexed"], 0, "{desc}");
    let q = vec![1.0f32; d as usize];
    assert!(search(&ds, &q, Metric::L2, 5, &full_probe()).0.is_empty());

    let ds = ds
        .append(&[batch(50, 600, false)], &WriteParams::default())
        .unwrap();
    let exact = search(
        &ds,
        &q,
        Metric::L2,
        10,
        &AnnParams {
            use_index: false,
            ..Default::default()
        },
    );
    assert_eq!(exact.0.len(), 10);
    // before optimize: the new rows are unindexed, searched exactly
    assert_same(
        &search(&ds, &q, Metric::L2, 10, &one_probe()),
        &exact,
        "before optimize",
    );
    let ds = optimize_index(&ds, "vec_idx").unwrap();
    let desc = describe_index(&ds, "vec_idx").unwrap();
    assert_eq!(desc["rows_indexed"], 600, "{desc}");
    assert_eq!(desc["segments"].as_array().unwrap().len(), 1, "{desc}");
    assert_eq!(desc["unindexed_rows"], 0, "{desc}");
    assert_same(
        &search(&ds, &q, Metric::L2, 10, &full_probe()),
        &exact,
        "after optimize",
    );
    // optimizing again changes nothing
    assert_eq!(
        optimize_index(&ds, "vec_idx").unwrap().version(),
        ds.version()
    );

    if let Some(py) = pylance("14") {
        let list = dir.with_extension("json");
        let item = serde_json::json!([{"dir": dir, "metric": "l2", "queries": [q], "k": 10}]);
        let seen = check_vector_shapes(&py, &list, &item);
        let r = &seen[0];
        assert!(r.get("error").is_none(), "{r}");
        // pylance counts the covered fragments' rows, the 50 null vectors included
        assert_eq!(r["indexed_rows"], 650, "{r}");
        assert_same(
            &answer_of(&r["answers"][0]["full"]),
            &exact,
            "pylance after optimize",
        );
        let _ = std::fs::remove_file(&list);
    }
}
