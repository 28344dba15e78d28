//! `lancer search`: the query row first, a pylance-built index used with pylance's
//! answers for each setting, hybrid (vector + full-text) rank fusion.

use lancer_testkit::{repo, TempDir};

use crate::common;
use crate::common::{lancer, ok};
use crate::{datasets, json_of};

#[test]
fn search_finds_the_query_row_first() {
    let root = datasets().join("pylance-14/history");
    let out = ok(lancer()
        .args([
            "search",
            "--column",
            "vec",
            "--query-row",
            "17",
            "-k",
            "3",
            "--format",
            "jsonl",
            "--columns",
            "id",
        ])
        .arg(&root));
    let text = String::from_utf8_lossy(&out.stdout);
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["_distance"], 0.0, "{text}");
    assert_eq!(text.lines().count(), 3);
    let bad = lancer()
        .args([
            "search",
            "--column",
            "vec",
            "--metric",
            "manhattan",
            "--query",
            "1,2",
        ])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("manhattan"));
}

/// `lancer search` uses a pylance-built index by default (its metric too), and
/// `--nprobes` / `--fast-search` / `--no-index` give pylance's answers for those
/// settings (tests/data/indexes: pylance 14's recorded answers).
#[test]
fn search_uses_a_pylance_built_index() {
    let (root, q, query) = golden_query("ivf_pq8_cosine_d16", 0);
    let q = &q;
    let ds = root.join("ivf_pq8_cosine_d16");
    for (label, extra) in [
        ("np8", vec!["--nprobes", "8"]),
        ("fast_np1", vec!["--nprobes", "1", "--fast-search"]),
        ("exact", vec!["--no-index", "--metric", "cosine"]),
    ] {
        let out = ok(lancer()
            .args([
                "search",
                "--column",
                "vec",
                "--query",
                &query,
                "--columns",
                "id",
                "--json",
            ])
            .args(&extra)
            .arg(&ds));
        let ids = common::json_ids(&out);
        let want: Vec<i64> = q["results"][label]["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        assert_eq!(ids, want, "{label}");
    }
    // The probe path's count of partitions is the search's: `--nprobes 3` searches
    // exactly the 3 nearest (as `search --nprobes 3`), whose rows are the candidates;
    // without it, the reference's early pruning decides (at least one).
    let path = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["inspect", "--json", "--index", "vec_idx", "--query", &query];
        args.extend_from_slice(extra);
        json_of(&args, &ds)["segments"][0]["probe"].clone()
    };
    let three = path(&["--nprobes", "3"]);
    assert_eq!(three["partitions_searched"], 3, "{three}");
    let order = three["order"].as_array().unwrap();
    let rows: u64 = order[..3].iter().map(|p| p["rows"].as_u64().unwrap()).sum();
    assert_eq!(three["candidates_scored"], rows);
    assert_eq!(order.iter().filter(|p| p["searched"] == true).count(), 3);
    let default = path(&[]);
    let searched = default["partitions_searched"].as_u64().unwrap();
    assert!(
        searched >= 1 && searched as usize <= order.len(),
        "{default}"
    );
}

#[test]
fn hybrid_search_fuses_vector_and_text_ranks() {
    use arrow_array::{FixedSizeListArray, Float32Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let dir = TempDir::new("cli-hybrid");
    let texts = [
        "red fox",
        "blue whale",
        "a fox and a fox",
        "green frog",
        "fox",
        "grey wolf",
        "the fox sleeps",
        "brown bear",
    ];
    let n = texts.len();
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let values = Float32Array::from_iter_values((0..n).flat_map(|i| [i as f32, 0.0, 1.0, 0.0]));
    let vec = FixedSizeListArray::new(item.clone(), 4, Arc::new(values), None);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("text", DataType::Utf8, true),
        Field::new("vec", DataType::FixedSizeList(item, 4), true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(StringArray::from_iter_values(texts)),
            Arc::new(vec),
        ],
    )
    .unwrap();
    let file = dir.join("rows.arrow");
    lancer_testkit::arrow::write_file(&file, &batch);
    let ds = dir.join("ds");
    ok(lancer().arg("import").arg(&file).arg(&ds));
    ok(lancer()
        .args(["index", "create"])
        .arg(&ds)
        .args(["--column", "text", "--type", "inverted"]));
    let rows = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = ok(lancer().args(args).arg(&ds));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let query = ["--column", "vec", "--query", "5,0,1,0", "-k", "4"];
    let common = ["--format", "jsonl", "--columns", "id"];
    let vector = rows(&[&["search"][..], &query, &common].concat());
    let out = ok(lancer()
        .args(["fts", "--limit", "4"])
        .args(common)
        .arg(&ds)
        .arg("fox"));
    let text: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let hybrid = rows(&[&["search"][..], &query, &["--text", "fox"], &common].concat());
    // the fusion by hand: 1 / (rank + 60) summed over both lists, rank from 1
    let mut want: Vec<(i64, f64, usize)> = Vec::new();
    for list in [&vector, &text] {
        for (r, row) in list.iter().enumerate() {
            let id = row["id"].as_i64().unwrap();
            let add = 1.0 / ((r + 1) as f64 + 60.0);
            match want.iter_mut().find(|w| w.0 == id) {
                Some(w) => w.1 += add,
                None => want.push((id, add, want.len())),
            }
        }
    }
    want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    want.truncate(4);
    let got: Vec<(i64, f64)> = hybrid
        .iter()
        .map(|r| {
            (
                r["id"].as_i64().unwrap(),
                r["_relevance_score"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got.len(), 4, "{hybrid:?}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.0, w.0, "{got:?} vs {want:?}");
        assert_eq!(g.1 as f32, w.1 as f32, "{got:?} vs {want:?}");
    }
    // row 4 ("fox", the nearest vector) is first in both lists
    assert_eq!(got[0].0, 4);
    assert!(hybrid[0]["_distance"].is_number() && hybrid[0]["_score"].is_number());
    // a row only one list found has a null for the other's score
    assert!(hybrid
        .iter()
        .any(|r| r["_score"].is_null() || r["_distance"].is_null()));
    let bad = lancer()
        .args([
            "search",
            "--column",
            "vec",
            "--query",
            "5,0,1,0",
            "--text",
            "fox",
            "--rrf-k=-1",
        ])
        .arg(&ds)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("rank constant"));
}

/// The checked-in golden index cases' directory, query `i` of `case` (with pylance's
/// recorded answers) and its vector as `--query` takes it.
fn golden_query(case: &str, i: usize) -> (std::path::PathBuf, serde_json::Value, String) {
    let root = repo().join("tests/data/indexes/pylance-14");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(format!("{case}.json"))).unwrap())
            .unwrap();
    let q = doc["queries"][i].clone();
    let query: Vec<String> = q["query"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap().to_string())
        .collect();
    (root, q, query.join(","))
}

/// A pylance-built HNSW index: `search --ef` gives pylance's recorded answer, an `ef`
/// below k is refused, and `inspect --index --query` walks each searched partition's
/// graph (greedy hops above level 0, then the beam) ending at the rows the search
/// returns from it.
#[test]
fn search_and_inspect_walk_a_pylance_built_hnsw_index() {
    let (root, q, query) = golden_query("ivf_hnsw_sq_l2_d16", 4);
    let q = &q;
    let ds = root.join("ivf_hnsw_sq_l2_d16");
    let out = ok(lancer()
        .args([
            "search",
            "--column",
            "vec",
            "--query",
            &query,
            "--columns",
            "id",
            "--json",
        ])
        .args(["--nprobes", "8", "--ef", "40", "--fast-search"])
        .arg(&ds));
    let want: Vec<i64> = q["results"]["fast_np8_ef40"]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(common::json_ids(&out), want);
    let refused = lancer()
        .args(["search", "--column", "vec", "--query", &query, "--ef", "4"])
        .arg(&ds)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("ef must be"));
    let args = [
        "inspect",
        "--json",
        "--index",
        "vec_idx",
        "--query",
        &query,
        "--nprobes",
        "2",
    ];
    let probe = json_of(&args, &ds)["segments"][0]["probe"].clone();
    let walks = probe["graph_walks"].as_array().unwrap();
    assert_eq!(walks.len(), 2, "{probe}");
    for w in walks {
        let hops = w["descent"].as_array().unwrap();
        assert!(!hops.is_empty(), "{w}");
        // each level's hops only get nearer, and the beam starts where they end
        for level in hops {
            let d: Vec<f64> = level["hops"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h[1].as_f64().unwrap())
                .collect();
            assert!(d.windows(2).all(|p| p[1] < p[0]), "{level}");
        }
        let last = hops.last().unwrap()["hops"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()[0]
            .clone();
        assert_eq!(w["beam"]["start"], last, "{w}");
        assert!(w["beam"]["best"].as_array().unwrap().len() <= 10);
    }
    let text = ok(lancer()
        .args([
            "inspect",
            "--index",
            "vec_idx",
            "--query",
            &query,
            "--nprobes",
            "1",
        ])
        .arg(&ds));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("graph walk") && text.contains("level 0 beam"),
        "{text}"
    );
}

/// `lancer search --queries-file`: a .json list and a .npy array of the same queries
/// print the same rows, each query's (its `query_index`) those of its own `--query`
/// search; a 3-D .npy is refused naming the shape.
#[test]
fn search_queries_file_answers_each_query() {
    let root = repo().join("tests/data/indexes/pylance-14");
    let case: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("ivf_pq8_cosine_d16.json")).unwrap(),
    )
    .unwrap();
    let queries: Vec<Vec<f32>> = case["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            q["query"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect()
        })
        .collect();
    assert!(queries.len() > 1);
    let dim = queries[0].len();
    let tmp = TempDir::new("cli-queries-file");
    let json = tmp.join("q.json");
    std::fs::write(&json, serde_json::to_string(&queries).unwrap()).unwrap();
    let npy = |shape: &str, name: &str| {
        let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        for v in queries.iter().flatten() {
            bytes.extend(v.to_le_bytes());
        }
        let path = tmp.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let flat = npy(&format!("({}, {dim})", queries.len()), "q.npy");
    let cube = npy(&format!("({}, 1, {dim})", queries.len()), "q3.npy");
    let ds = root.join("ivf_pq8_cosine_d16");
    let run = |extra: &[&str]| {
        let out = ok(lancer()
            .args(["search", "--column", "vec", "--nprobes", "4", "-k", "5"])
            .args(["--columns", "id", "--format", "jsonl"])
            .args(extra)
            .arg(&ds));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    let from_json = run(&["--queries-file", json.to_str().unwrap()]);
    let from_npy = run(&["--queries-file", flat.to_str().unwrap()]);
    assert_eq!(from_json, from_npy);
    assert_eq!(from_json.len(), 5 * queries.len());
    for (i, q) in queries.iter().enumerate() {
        let text: Vec<String> = q.iter().map(|v| v.to_string()).collect();
        let one = run(&["--query", &text.join(",")]);
        let mine: Vec<serde_json::Value> = from_json
            .iter()
            .filter(|r| r["query_index"] == i as i64)
            .map(|r| serde_json::json!({"id": r["id"], "_distance": r["_distance"]}))
            .collect();
        assert_eq!(mine, one, "query {i}");
    }
    let bad = lancer()
        .args(["search", "--column", "vec", "--queries-file"])
        .arg(&cube)
        .arg(&ds)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("give a 2-D array"));
}
