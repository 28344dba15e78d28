//! Indexes Lancer builds: IVF_FLAT, IVF_PQ (8 and 4 bits), IVF_SQ, IVF_RQ (1, 3 and 5
//! bits) for l2 / cosine / dot
//! on a pylance-written dataset (deleted rows, an unindexed appended fragment). Lancer
//! searches them (every partition + full refine = the exact answer; recall of one
//! probe reported), and pylance 14, 12 and 11 open them: `list_indices` names the index,
//! the query plan uses it, the fully probed and refined search equals pylance's exact
//! answer, and pylance's one-probe answers — plain and with a SQL prefilter — equal
//! Lancer's (4-bit PQ: pylance ranks with a quantized table, and RabitQ dot in pylance
//! 11 / 12 estimates differently, so by overlap).

use std::path::{Path, PathBuf};
use std::process::Command;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use lancer::index::{
    create_vector_index, drop_index, list_indices, optimize_index, VectorIndexOptions,
};
use lancer::search::AnnParams;
use lancer::search::{nearest, Filtering, Metric, Nearest, SearchOptions};
use lancer::Dataset;
use lancer_index::distance::Metric as IndexMetric;
use lancer_index::vector::ivf::Quantizer;

use crate::common::{case_queries, copy_dir, pylance, repo, TempDir};

/// Runs scripts/check_lancer_index.py once with pylance `py` on every dataset of
/// `items` (dir, queries in a file, `nprobes`, optional prefilter; k = 10) and returns
/// what pylance saw of each, in order (one process: starting pylance costs ~1 s).
fn pylance_sees_many(
    py: &Path,
    items: &[(PathBuf, PathBuf, &str, Option<&str>)],
    at: &str,
) -> Vec<serde_json::Value> {
    let list: Vec<serde_json::Value> = items
        .iter()
        .map(|(dir, qfile, nprobes, filter)| {
            serde_json::json!({"dir": dir, "queries": qfile, "k": 10, "nprobes": nprobes, "filter": filter})
        })
        .collect();
    let scratch = TempDir::new("index-check");
    let lfile = scratch.join("items.json");
    std::fs::write(&lfile, serde_json::Value::Array(list).to_string()).unwrap();
    let out = Command::new(py)
        .env("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
        .arg(repo().join("scripts/check_lancer_index.py"))
        .arg("--many")
        .arg(&lfile)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{at}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen.len(), items.len(), "{at}: pylance saw every dataset");
    seen
}

/// Runs scripts/check_lancer_index.py with pylance `py` on `dir` (queries in `qfile`,
/// k = 10, `nprobes`, optional prefilter) and returns what pylance saw.
fn pylance_sees(
    py: &Path,
    dir: &Path,
    qfile: &Path,
    nprobes: &str,
    filter: Option<&str>,
    at: &str,
) -> serde_json::Value {
    let out = Command::new(py)
        .env("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
        .arg(repo().join("scripts/check_lancer_index.py"))
        .arg(dir)
        .arg(qfile)
        .args(["10", nprobes])
        .args(filter)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{at}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Ids of one result list (`k`) of what `check_lancer_index.py` printed for a query.
fn result_ids(r: &serde_json::Value, k: &str) -> Vec<i64> {
    r[k].as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

/// pylance's fully probed, refined answers equal its exact ones and its one-probe
/// answers equal Lancer's (`lancer_np1`, per query).
fn assert_pylance_full_exact_and_np1(seen: &serde_json::Value, lancer_np1: &[Vec<i64>], at: &str) {
    for (i, r) in seen["results"].as_array().unwrap().iter().enumerate() {
        assert_eq!(
            result_ids(r, "full"),
            result_ids(r, "exact"),
            "{at} query {i}: full"
        );
        assert_eq!(
            result_ids(r, "np1"),
            lancer_np1[i],
            "{at} query {i}: one probe"
        );
    }
}

/// A fresh temporary directory named after `tag` holding the queries of the pylance-14
/// golden `case` as `queries.json`: the directory, that file and the queries.
fn scratch_with_queries(case: &str, tag: &str) -> (TempDir, PathBuf, Vec<Vec<f32>>) {
    let golden = repo().join("tests/data/indexes/pylance-14");
    let detail: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(golden.join(format!("{case}.json"))).unwrap(),
    )
    .unwrap();
    let queries = case_queries(&detail);
    let tmp = TempDir::new(tag);
    let qfile = tmp.join("queries.json");
    std::fs::write(&qfile, serde_json::to_string(&queries).unwrap()).unwrap();
    (tmp, qfile, queries)
}

/// Every one of `n` partitions probed and every candidate re-ranked: the exact answer.
fn full_probe(n: usize) -> AnnParams {
    AnnParams {
        nprobes: Some(n),
        refine_factor: Some(1000),
        ..Default::default()
    }
}

/// No index: exact search.
fn exact_search() -> AnnParams {
    AnnParams {
        use_index: false,
        ..Default::default()
    }
}

/// The index alone, one partition probed.
fn one_probe() -> AnnParams {
    AnnParams {
        nprobes: Some(1),
        ..Default::default()
    }
}

/// A prefilter passing a third of the rows: the one-probe search must go on probing
/// until k rows pass.
const PREFILTER: &str = "id % 3 = 0";

fn search(ds: &Dataset, q: &[f32], metric: Metric, p: &AnnParams) -> Vec<i64> {
    let req = Nearest {
        column: "vec",
        query: q.to_vec(),
        k: 10,
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
    b.column(0).as_primitive::<Int64Type>().values().to_vec()
}

#[test]
fn lancer_built_ivf_indexes_search_and_open_in_pylance() {
    let golden = repo().join("tests/data/indexes/pylance-14");
    let (tmp, qfile, queries) = scratch_with_queries("ivf_flat_l2_d16", "index-build");
    let plain = [
        (Quantizer::Flat, IndexMetric::L2, Metric::L2),
        (Quantizer::Flat, IndexMetric::Cosine, Metric::Cosine),
        (
            Quantizer::Pq {
                sub_vectors: 4,
                bits: 8,
            },
            IndexMetric::L2,
            Metric::L2,
        ),
        (
            Quantizer::Pq {
                sub_vectors: 4,
                bits: 8,
            },
            IndexMetric::Dot,
            Metric::Dot,
        ),
        (
            Quantizer::Pq {
                sub_vectors: 8,
                bits: 4,
            },
            IndexMetric::Cosine,
            Metric::Cosine,
        ),
        (Quantizer::Sq, IndexMetric::L2, Metric::L2),
        (Quantizer::Sq, IndexMetric::Dot, Metric::Dot),
        (Quantizer::Rq { bits: 1 }, IndexMetric::L2, Metric::L2),
        (Quantizer::Rq { bits: 5 }, IndexMetric::L2, Metric::L2),
        (
            Quantizer::Rq { bits: 3 },
            IndexMetric::Cosine,
            Metric::Cosine,
        ),
        (Quantizer::Rq { bits: 5 }, IndexMetric::Dot, Metric::Dot),
    ];
    // HNSW graphs over FLAT, SQ and PQ storage (pylance answers node for node)
    let hnsw = [
        (Quantizer::Flat, IndexMetric::Cosine, Metric::Cosine),
        (Quantizer::Sq, IndexMetric::L2, Metric::L2),
        (Quantizer::Sq, IndexMetric::Dot, Metric::Dot),
        (
            Quantizer::Pq {
                sub_vectors: 4,
                bits: 8,
            },
            IndexMetric::L2,
            Metric::L2,
        ),
    ];
    let kinds = plain
        .iter()
        .map(|&(q, im, m)| (q, im, m, false))
        .chain(hnsw.iter().map(|&(q, im, m)| (q, im, m, true)));
    let mut built = Vec::new();
    for (quantizer, imetric, metric, graphs) in kinds {
        let type_name = lancer_index::vector::ivf::type_name(quantizer, graphs);
        let label = match quantizer {
            Quantizer::Rq { bits } => format!("IVF_RQ{bits}_{}", imetric.name()),
            _ => format!("{type_name}_{}", imetric.name()),
        };
        let dir = tmp.join(&label);
        copy_dir(&golden.join("ivf_flat_l2_d16"), &dir);
        let ds = Dataset::open(&dir).unwrap();
        let ds = drop_index(&ds, "vec_idx").unwrap();
        let mut opts = VectorIndexOptions::new(quantizer, imetric);
        opts.num_partitions = Some(4);
        if graphs {
            opts.hnsw = Some(lancer_index_hnsw(8, 40));
        }
        let ds = create_vector_index(&ds, "vec", &opts).unwrap();
        let listed = list_indices(&ds).unwrap();
        assert_eq!(listed.len(), 1, "{label}");
        assert_eq!(
            listed[0].index_type.as_deref(),
            Some(type_name.as_str()),
            "{label}"
        );
        assert_eq!(listed[0].unindexed_fragments, Vec::<u64>::new(), "{label}");

        let full = full_probe(4);
        let exact = exact_search();
        let one = one_probe();
        let mut hits = 0;
        let mut lancer_np1 = Vec::new();
        let mut lancer_pre = Vec::new();
        for q in &queries {
            let req = Nearest {
                column: "vec",
                query: q.to_vec(),
                k: 10,
                metric,
            };
            let b = nearest(
                &ds,
                &req,
                &SearchOptions {
                    filtering: Filtering::Pre(PREFILTER),
                    columns: Some(&["id"]),
                    ann: one.clone(),
                    ..Default::default()
                },
            )
            .unwrap();
            lancer_pre.push(b.column(0).as_primitive::<Int64Type>().values().to_vec());
            let want = search(&ds, q, metric, &exact);
            assert_eq!(
                search(&ds, q, metric, &full),
                want,
                "{label}: full probe + refine"
            );
            let np1 = search(&ds, q, metric, &one);
            hits += np1.iter().filter(|i| want.contains(i)).count();
            lancer_np1.push(np1);
        }
        eprintln!(
            "{label}: recall@10 with 1 of 4 partitions: {:.2}",
            hits as f64 / (10 * queries.len()) as f64
        );

        built.push((
            label, dir, type_name, quantizer, imetric, lancer_np1, lancer_pre,
        ));
    }
    // every kind checked by one pylance process per version
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        let items: Vec<_> = built
            .iter()
            .map(|b| (b.1.clone(), qfile.clone(), "4", Some(PREFILTER)))
            .collect();
        let all = pylance_sees_many(&py, &items, &format!("pylance {v}"));
        for ((label, _, type_name, quantizer, imetric, lancer_np1, lancer_pre), seen) in
            built.iter().zip(&all)
        {
            let (quantizer, imetric) = (*quantizer, *imetric);
            // Answers compared by overlap: 4-bit PQ (pylance ranks with a quantized
            // table) and RabitQ dot in 11 / 12 (their estimator differs from 14's).
            let approx = matches!(quantizer, Quantizer::Pq { bits: 4, .. })
                || (matches!(quantizer, Quantizer::Rq { .. })
                    && imetric == IndexMetric::Dot
                    && v != "14");
            assert_eq!(seen["indices"][0]["name"], "vec_idx", "{label} pylance {v}");
            assert_eq!(
                seen["indices"][0]["type"],
                type_name.as_str(),
                "{label} pylance {v}"
            );
            assert_eq!(seen["metric"], imetric.name(), "{label} pylance {v}");
            let plan = seen["plan"].as_str().unwrap();
            assert!(
                plan.contains("ANN"),
                "{label} pylance {v}: plan without the index:\n{plan}"
            );
            for (i, r) in seen["results"].as_array().unwrap().iter().enumerate() {
                let ids = |k: &str| -> Vec<i64> {
                    r[k].as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_i64().unwrap())
                        .collect()
                };
                assert_eq!(
                    ids("full"),
                    ids("exact"),
                    "{label} pylance {v} query {i}: full probe + refine"
                );
                let theirs = ids("np1");
                if !approx {
                    assert_eq!(
                        ids("pre_np1"),
                        lancer_pre[i],
                        "{label} pylance {v} query {i}: prefilter, one probe"
                    );
                }
                if approx {
                    let common = theirs.iter().filter(|x| lancer_np1[i].contains(x)).count();
                    assert!(
                        common >= 5,
                        "{label} pylance {v} query {i}: {theirs:?} vs {:?}",
                        lancer_np1[i]
                    );
                } else {
                    assert_eq!(
                        theirs, lancer_np1[i],
                        "{label} pylance {v} query {i}: one probe"
                    );
                }
            }
        }
    }
}

/// HNSW settings of the tests' builds: `m`, `ef_construction`, 7 levels.
fn lancer_index_hnsw(m: usize, ef_construction: usize) -> lancer_index::vector::hnsw::HnswBuild {
    lancer_index::vector::hnsw::HnswBuild {
        m,
        ef_construction,
        max_level: 7,
    }
}

/// `optimize_index` adds the rows appended after pylance built its index as a delta
/// segment (same centroids and codebook or rotation); pylance 14, 12 and 11 then see no unindexed
/// rows, two segments, and answer a fully probed, refined search exactly; their
/// one-probe answers equal Lancer's.
#[test]
fn lancer_optimize_adds_a_delta_segment_pylance_uses() {
    let golden = repo().join("tests/data/indexes/pylance-14");
    let tmp = TempDir::new("index-optimize");
    for (case, metric) in [
        ("ivf_pq8_l2_d16", Metric::L2),
        ("ivf_sq_cosine_d16", Metric::Cosine),
        ("ivf_flat_dot_d16", Metric::Dot),
        ("ivf_rq5_l2_d32", Metric::L2),
        // a delta segment with HNSW graphs of the index's settings
        ("ivf_hnsw_sq_l2_d16", Metric::L2),
        ("ivf_hnsw_pq8_dot_d16", Metric::Dot),
    ] {
        let detail: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(golden.join(format!("{case}.json"))).unwrap(),
        )
        .unwrap();
        let queries = case_queries(&detail);
        let qfile = tmp.join(format!("{case}.json"));
        std::fs::write(&qfile, serde_json::to_string(&queries).unwrap()).unwrap();
        let dir = tmp.join(case);
        copy_dir(&golden.join(case), &dir);
        let ds = Dataset::open(&dir).unwrap();
        assert_eq!(
            list_indices(&ds).unwrap()[0].unindexed_fragments,
            vec![2],
            "{case}"
        );
        let ds = optimize_index(&ds, "vec_idx").unwrap();
        let info = list_indices(&ds).unwrap();
        assert_eq!(info[0].segments.len(), 2, "{case}");
        assert!(info[0].unindexed_fragments.is_empty(), "{case}");
        let again = optimize_index(&ds, "vec_idx").unwrap();
        assert_eq!(again.version(), ds.version(), "{case}: nothing left to add");
        let one = one_probe();
        let exact = exact_search();
        let full = full_probe(64);
        let mut lancer_np1 = Vec::new();
        for q in &queries {
            assert_eq!(
                search(&ds, q, metric, &full),
                search(&ds, q, metric, &exact),
                "{case}"
            );
            lancer_np1.push(search(&ds, q, metric, &one));
        }
        for v in ["14", "12", "11"] {
            let Some(py) = pylance(v) else { continue };
            let seen = pylance_sees(
                &py,
                &dir,
                &qfile,
                "64",
                None,
                &format!("{case} pylance {v}"),
            );
            assert_eq!(seen["unindexed_rows"], 0, "{case} pylance {v}: {seen}");
            let mut frags: Vec<i64> = seen["indices"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i["name"] == "vec_idx")
                .flat_map(|i| {
                    i["fragment_ids"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_i64().unwrap())
                })
                .collect();
            frags.sort_unstable();
            frags.dedup();
            assert_eq!(frags, vec![0, 1, 2], "{case} pylance {v}: {seen}");
            assert_pylance_full_exact_and_np1(&seen, &lancer_np1, &format!("{case} pylance {v}"));
        }
    }
}

/// Damaged index setups end in an error that names the index and what to do, and an
/// exact search (`use_index = false`) still answers: a missing index file, a query of
/// the wrong dimension.
#[test]
fn broken_indexes_fail_clearly_and_exact_search_still_works() {
    let golden = repo().join("tests/data/indexes/pylance-14");
    let tmp = TempDir::new("index-broken");
    let dir = tmp.join("ds");
    copy_dir(&golden.join("ivf_pq8_l2_d16"), &dir);
    let q = vec![0.5f32; 16];
    let exact = exact_search();
    // Wrong dimension.
    let ds = Dataset::open(&dir).unwrap();
    let req = Nearest {
        column: "vec",
        query: vec![0.5f32; 15],
        k: 10,
        metric: Metric::L2,
    };
    let e = nearest(
        &ds,
        &req,
        &SearchOptions {
            filtering: Filtering::None,
            columns: Some(&["id"]),
            ann: AnnParams::default().clone(),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("15"), "{e}");
    // A missing auxiliary file (a second copy: opened segments are cached per path).
    let dir = tmp.join("ds2");
    copy_dir(&golden.join("ivf_pq8_l2_d16"), &dir);
    for entry in walk(&dir.join("_indices")) {
        if entry.ends_with("auxiliary.idx") {
            std::fs::remove_file(&entry).unwrap();
        }
    }
    let ds = Dataset::open(&dir).unwrap();
    let req = Nearest {
        column: "vec",
        query: q.clone(),
        k: 10,
        metric: Metric::L2,
    };
    let e = nearest(
        &ds,
        &req,
        &SearchOptions {
            filtering: Filtering::None,
            columns: Some(&["id"]),
            ann: AnnParams::default().clone(),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("auxiliary.idx") && e.contains("drop the index"),
        "{e}"
    );
    assert_eq!(search(&ds, &q, Metric::L2, &exact).len(), 10);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// On a dataset with stable row ids whose rows were moved by compaction (ids kept,
/// addresses changed), a Lancer-built index records row ids: Lancer's fully probed and
/// refined search is exact, and pylance 14 / 12 / 11 plan with the index, answer
/// exactly when fully probed and give Lancer's one-probe answers.
#[test]
fn lancer_built_index_on_stable_row_ids() {
    let golden = repo().join("tests/data/indexes/pylance-14");
    let (tmp, qfile, queries) = scratch_with_queries("ivf_pq8_l2_d16_stable", "index-stable");
    let dir = tmp.join("ds");
    copy_dir(&golden.join("ivf_pq8_l2_d16_stable"), &dir);
    let ds = Dataset::open(&dir).unwrap();
    let ds = drop_index(&ds, "vec_idx").unwrap();
    let mut opts = VectorIndexOptions::new(Quantizer::Sq, IndexMetric::L2);
    opts.num_partitions = Some(4);
    let ds = create_vector_index(&ds, "vec", &opts).unwrap();
    let full = full_probe(4);
    let exact = exact_search();
    let one = one_probe();
    let mut lancer_np1 = Vec::new();
    for q in &queries {
        assert_eq!(
            search(&ds, q, Metric::L2, &full),
            search(&ds, q, Metric::L2, &exact),
            "stable ids: full probe + refine"
        );
        lancer_np1.push(search(&ds, q, Metric::L2, &one));
    }
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        let seen = pylance_sees(&py, &dir, &qfile, "4", None, &format!("stable pylance {v}"));
        assert_eq!(seen["indices"][0]["type"], "IVF_SQ", "pylance {v}");
        assert!(
            seen["plan"].as_str().unwrap().contains("ANN"),
            "pylance {v}"
        );
        assert_pylance_full_exact_and_np1(&seen, &lancer_np1, &format!("stable pylance {v}"));
    }
}

/// Enough rows in the probed partitions that one query's partitions are shared among
/// threads: IVF_FLAT over every partition (exact distances) answers as exact search —
/// ids and distances — with deleted rows and a prefilter applied inside the threads,
/// and IVF_PQ over every partition with every candidate re-ranked does too.
#[test]
fn shared_partition_scans_answer_as_exact_search() {
    use arrow_array::types::Float32Type;
    use arrow_array::BooleanArray;
    let tmp = TempDir::new("ivf-threads");
    let (n, dim) = (48_000usize, 8usize);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 20_000) as f32 / 10_000.0 - 1.0
    };
    let (schema, b) = crate::common::id_vec_batch(n, dim, |_| next());
    let params = lancer::WriteParams {
        max_rows_per_file: 20_000,
        ..Default::default()
    };
    let ds = Dataset::write(&tmp, schema, &[b], &params).unwrap();
    ds.delete_where("id % 7 = 2", |b| {
        let ids = b.column(0).as_primitive::<Int64Type>();
        Ok(BooleanArray::from_iter(
            ids.values().iter().map(|&i| Some(i % 7 == 2)),
        ))
    })
    .unwrap();
    let queries: Vec<Vec<f32>> = (0..6).map(|_| (0..dim).map(|_| next()).collect()).collect();
    let answer = |ds: &Dataset, q: &[f32], filter: Option<&str>, p: &AnnParams| {
        let req = Nearest {
            column: "vec",
            query: q.to_vec(),
            k: 10,
            metric: Metric::L2,
        };
        let filtering = filter.map_or(Filtering::None, Filtering::Pre);
        let b = nearest(
            ds,
            &req,
            &SearchOptions {
                filtering,
                columns: Some(&["id"]),
                ann: p.clone(),
                ..Default::default()
            },
        )
        .unwrap();
        let ids = b.column(0).as_primitive::<Int64Type>().values().to_vec();
        let d = b
            .column_by_name("_distance")
            .unwrap()
            .as_primitive::<Float32Type>()
            .values()
            .to_vec();
        (ids, d)
    };
    for quantizer in [
        Quantizer::Flat,
        Quantizer::Pq {
            sub_vectors: 4,
            bits: 8,
        },
    ] {
        let mut opts = VectorIndexOptions::new(quantizer, IndexMetric::L2);
        opts.num_partitions = Some(4);
        // on the latest version, without the previous kind's index
        let latest = Dataset::open(&tmp).unwrap();
        let latest = if list_indices(&latest).unwrap().is_empty() {
            latest
        } else {
            drop_index(&latest, "vec_idx").unwrap()
        };
        let indexed = create_vector_index(&latest, "vec", &opts).unwrap();
        assert_eq!(list_indices(&indexed).unwrap().len(), 1);
        let all = match quantizer {
            Quantizer::Flat => AnnParams {
                nprobes: Some(4),
                ..Default::default()
            },
            _ => full_probe(4),
        };
        for q in &queries {
            for filter in [None, Some(PREFILTER)] {
                let (want_ids, want_d) = answer(&indexed, q, filter, &exact_search());
                let (ids, d) = answer(&indexed, q, filter, &all);
                assert_eq!(ids, want_ids, "{quantizer:?} {filter:?}");
                assert!(ids.iter().all(|i| i % 7 != 2), "deleted rows stay out");
                for (a, b) in d.iter().zip(&want_d) {
                    assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{a} vs {b}");
                }
            }
        }
    }
}

/// `seed` picks the training draw: the same seed builds the same centroids (and the
/// same answers), neighbouring seeds build other ones (the seed generator once folded
/// seeds 2k and 2k + 1 into one stream).
#[test]
fn the_seed_picks_the_training_draw() {
    use lancer_index::vector::ivf::IvfSegment;
    let golden = repo().join("tests/data/indexes/pylance-14");
    let (tmp, _qfile, queries) = scratch_with_queries("ivf_pq8_l2_d16_stable", "index-seed");
    let build = |seed: u64, tag: &str| {
        let dir = tmp.join(tag);
        copy_dir(&golden.join("ivf_pq8_l2_d16_stable"), &dir);
        let ds = drop_index(&Dataset::open(&dir).unwrap(), "vec_idx").unwrap();
        let mut opts = VectorIndexOptions::new(Quantizer::Sq, IndexMetric::L2);
        opts.num_partitions = Some(8);
        opts.seed = Some(seed);
        let ds = create_vector_index(&ds, "vec", &opts).unwrap();
        let meta = ds.indices().unwrap()[0].clone();
        let centroids = IvfSegment::open(&ds, &meta).unwrap().centroids;
        (ds, centroids)
    };
    let (a, ca) = build(2, "a");
    let (b, cb) = build(2, "b");
    let (_, cc) = build(3, "c");
    assert_eq!(ca.len(), 8 * 16);
    assert_eq!(ca, cb, "one seed, one draw");
    assert_ne!(ca, cc, "seeds 2 and 3 drew the same centroids");
    let one = one_probe();
    for q in &queries {
        assert_eq!(
            search(&a, q, Metric::L2, &one),
            search(&b, q, Metric::L2, &one)
        );
    }
}

/// The progress of a vector build, through the Rust API: the reference's stages in its
/// order, each started before it advances and completed once, counts never going
/// back, and the rows shuffled / partitions written equal to the dataset's.
#[test]
fn vector_builds_report_the_references_stages() {
    use lancer_index::progress::{Event, ProgressEvent};
    use std::sync::{Arc, Mutex};
    let golden = repo().join("tests/data/indexes/pylance-14");
    let tmp = TempDir::new("index-progress");
    let dir = tmp.join("d");
    copy_dir(&golden.join("ivf_pq8_l2_d16_stable"), &dir);
    let ds = drop_index(&Dataset::open(&dir).unwrap(), "vec_idx").unwrap();
    type Seen = Vec<(Event, String, u64, Option<u64>, String)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let log = seen.clone();
    let mut opts = VectorIndexOptions::new(Quantizer::Sq, IndexMetric::L2);
    opts.num_partitions = Some(8);
    opts.progress = Some(Arc::new(move |e: &ProgressEvent<'_>| {
        log.lock().unwrap().push((
            e.event,
            e.stage.to_string(),
            e.completed,
            e.total,
            e.unit.to_string(),
        ));
    }));
    create_vector_index(&ds, "vec", &opts).unwrap();
    let seen = seen.lock().unwrap().clone();
    let order: Vec<&str> = seen
        .iter()
        .filter(|e| e.0 == Event::Start)
        .map(|e| e.1.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "train_ivf",
            "train_quantizer",
            "shuffle",
            "merge_partitions"
        ]
    );
    for stage in order {
        let events: Vec<_> = seen.iter().filter(|e| e.1 == stage).collect();
        assert_eq!(events.first().unwrap().0, Event::Start, "{stage}");
        assert_eq!(events.last().unwrap().0, Event::Complete, "{stage}");
        assert_eq!(
            events.iter().filter(|e| e.0 == Event::Complete).count(),
            1,
            "{stage}"
        );
        assert!(events.windows(2).all(|w| w[1].2 >= w[0].2), "{stage}");
    }
    let last = |stage: &str| seen.iter().rev().find(|e| e.1 == stage).unwrap().clone();
    let rows = ds.count_rows();
    assert_eq!(last("shuffle").2, rows);
    assert_eq!(last("shuffle").3, Some(rows));
    assert_eq!(
        (last("merge_partitions").2, last("merge_partitions").3),
        (8, Some(8))
    );
    let ivf = last("train_ivf");
    assert!(ivf.2 >= 1 && ivf.2 <= 50 && ivf.3 == Some(50), "{ivf:?}");
}

/// A repeatable prefilter's passing rows are kept in the session per version: the
/// second search with the same filter does not evaluate it again, a later version (rows
/// deleted) evaluates it afresh, and a filter calling `random()` is never kept.
#[test]
fn prefilter_results_are_kept_per_version() {
    let tmp = TempDir::new("prefilter-cache");
    let dim = 4usize;
    let (schema, b) = crate::common::id_vec_batch(3_000, dim, |i| ((i * 37) % 101) as f32);
    let ds = Dataset::write(&tmp, schema, &[b], &Default::default()).unwrap();
    let mut opts = VectorIndexOptions::new(Quantizer::Flat, IndexMetric::L2);
    opts.num_partitions = Some(2);
    let ds = create_vector_index(&ds, "vec", &opts).unwrap();
    let all = AnnParams {
        nprobes: Some(2),
        ..Default::default()
    };
    let req = Nearest {
        column: "vec",
        query: vec![50.0; dim],
        k: 20,
        metric: Metric::L2,
    };
    let ids = |ds: &Dataset, sql: &str| -> Vec<i64> {
        let b = nearest(
            ds,
            &req,
            &SearchOptions {
                filtering: Filtering::Pre(sql),
                columns: Some(&["id"]),
                ann: all.clone(),
                ..Default::default()
            },
        )
        .unwrap();
        b.column(0).as_primitive::<Int64Type>().values().to_vec()
    };
    let session = lancer::Session::of(&ds);
    let before = session.metadata_cache_stats();
    let first = ids(&ds, "id % 3 = 0");
    let after_first = session.metadata_cache_stats();
    assert_eq!(
        after_first.entries,
        before.entries + 1,
        "the passing rows are kept"
    );
    let second = ids(&ds, "id % 3 = 0");
    let after_second = session.metadata_cache_stats();
    assert_eq!(second, first);
    assert_eq!(
        after_second.hits,
        after_first.hits + 1,
        "the kept rows are used"
    );
    assert_eq!(first.len(), 20);
    assert!(first.iter().all(|i| i % 3 == 0));

    // A later version: the rows it deleted are not answers, as a fresh evaluation says.
    let ds = lancer::DatasetExt::delete(&ds, "id % 2 = 0").unwrap();
    let later = ids(&ds, "id % 3 = 0");
    assert_eq!(later.len(), 20);
    assert!(later.iter().all(|i| i % 3 == 0 && i % 2 == 1), "{later:?}");
    assert_ne!(later, first);

    // random() passes each row anew: never kept.
    let entries = session.metadata_cache_stats().entries;
    let r = ids(&ds, "random() < 2.0 AND id % 5 = 0");
    assert!(r.iter().all(|i| i % 5 == 0 && i % 2 == 1));
    assert_eq!(session.metadata_cache_stats().entries, entries);
}
