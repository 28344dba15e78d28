//! `lancer index` (create, describe, optimize, list) for vector, scalar and full-text
//! indexes, and `lancer fts` on a full-text index.

use lancer_testkit::{repo, TempDir};

use crate::common;
use crate::common::{lancer, ok};
use crate::{copy_dir, json_of};

/// `lancer index describe / create / optimize` on pylance 14's IVF_FLAT golden dataset
/// (an appended fragment it does not cover): describe names the unindexed fragment and
/// its rows, optimize covers it with a second segment, a RabitQ index built with a zero
/// memory budget (every batch spilled) describes its quantizer, partitions and
/// coverage; an unknown name is a one-line error.
#[test]
fn index_describe_optimize_and_spilled_rq_build() {
    let src = repo().join("tests/data/indexes/pylance-14/ivf_flat_l2_d16");
    let ds = TempDir::new("cli-index");
    copy_dir(&src, &ds);
    let describe = |name: &str| -> serde_json::Value {
        let out = ok(lancer()
            .args(["index", "describe", "--json"])
            .arg(&ds)
            .arg(name));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let d = describe("vec_idx");
    assert_eq!(d["type"], "IVF_FLAT");
    assert_eq!(d["metric"], "l2");
    assert_eq!(d["segments"].as_array().unwrap().len(), 1);
    let unindexed = d["unindexed_fragments"].as_array().unwrap().clone();
    assert_eq!(unindexed.len(), 1, "{d}");
    assert!(d["unindexed_rows"].as_u64().unwrap() > 0, "{d}");
    let indexed = d["rows_indexed"].as_u64().unwrap();
    assert!(d["segments"][0]["partitions"].as_u64().unwrap() > 0);
    let text =
        String::from_utf8(ok(lancer().args(["index", "describe"]).arg(&ds).arg("vec_idx")).stdout)
            .unwrap();
    assert!(text.contains("not indexed"), "{text}");

    ok(lancer().args(["index", "optimize"]).arg(&ds).arg("vec_idx"));
    let d = describe("vec_idx");
    assert_eq!(d["segments"].as_array().unwrap().len(), 2, "{d}");
    assert_eq!(d["unindexed_fragments"].as_array().unwrap().len(), 0, "{d}");
    assert_eq!(d["unindexed_rows"], 0);
    assert!(d["rows_indexed"].as_u64().unwrap() > indexed);

    ok(lancer()
        .args(["index", "create"])
        .arg(&ds)
        .args([
            "--column",
            "vec",
            "--type",
            "ivf_rq",
            "--bits",
            "3",
            "--partitions",
            "4",
        ])
        .args(["--name", "rq", "--memory-mb", "0"]));
    let d = describe("rq");
    assert_eq!(d["type"], "IVF_RQ");
    assert_eq!(d["segments"][0]["quantizer"]["kind"], "rabitq");
    assert_eq!(d["segments"][0]["quantizer"]["bits"], 3);
    assert_eq!(d["segments"][0]["partitions"], 4);
    assert_eq!(d["unindexed_rows"], 0);
    let err = lancer()
        .args(["index", "describe"])
        .arg(&ds)
        .arg("nope")
        .output()
        .unwrap();
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("no index named"));
}

#[test]
fn scalar_index_create_explain_count_list_and_describe() {
    let src = repo().join("tests/data/filter-suite/pylance-14/filters");
    let ds = TempDir::new("cli-scalar");
    copy_dir(&src, &ds);
    ok(lancer().args(["index", "create"]).arg(&ds).args([
        "--column",
        "id",
        "--type",
        "btree",
        "--zone-size",
        "64",
    ]));
    ok(lancer()
        .args(["index", "create"])
        .arg(&ds)
        .args(["--column", "s", "--type", "BITMAP", "--name", "s_bitmap"]));
    let filter = "id < 100 AND s = 'kiwi'";
    let plan = String::from_utf8(
        ok(lancer()
            .args(["cat", "--explain", "--filter", filter])
            .arg(&ds))
        .stdout,
    )
    .unwrap();
    assert!(
        plan.contains("@id_idx(BTree)") && plan.contains("@s_bitmap(Bitmap)"),
        "{plan}"
    );
    assert!(plan.contains("exact=true"), "{plan}");
    let rows = |extra: &[&str]| {
        let out = ok(lancer()
            .args([
                "cat",
                "--format",
                "jsonl",
                "--columns",
                "id",
                "--filter",
                filter,
            ])
            .args(extra)
            .arg(&ds));
        common::json_ids(&out)
    };
    let want = rows(&["--no-index"]);
    assert!(!want.is_empty());
    assert_eq!(rows(&[]), want);
    let n = ok(lancer().args(["count", "--filter", filter]).arg(&ds)).stdout;
    assert_eq!(String::from_utf8(n).unwrap().trim(), want.len().to_string());
    let list = json_of(&["index", "list", "--json"], &ds);
    let types: Vec<&str> = list
        .as_array()
        .map(|a| a.iter().filter_map(|i| i["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(types, ["BTREE", "BITMAP"], "{list}");
    let out = ok(lancer()
        .args(["index", "describe", "--json"])
        .arg(&ds)
        .arg("id_idx"));
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["type"], "BTREE");
    assert_eq!(d["rows_indexed"], 1665, "{d}");
    // A kind that cannot index the column says so.
    let err = lancer()
        .args(["index", "create"])
        .arg(&ds)
        .args(["--column", "vec", "--type", "btree"])
        .output()
        .unwrap();
    assert!(!err.status.success());
    assert!(
        String::from_utf8_lossy(&err.stderr).contains("cannot be built on column"),
        "{}",
        String::from_utf8_lossy(&err.stderr)
    );
}

/// `lancer index create --type inverted` on an imported table, then `lancer fts`:
/// OR / AND matches ranked by BM25, a phrase (positions), a fuzzy match, a prefilter,
/// and the index in `index list` / `describe`; a phrase on an index without positions
/// is refused with a message saying what to do.
#[test]
fn fts_index_create_search_list_and_describe() {
    let dir = TempDir::new("cli-fts");
    let jsonl = dir.join("docs.jsonl");
    let texts = [
        "The quick brown fox jumps over the lazy dog",
        "A fox in the snow",
        "Dogs and foxes are not friends",
        "Lazy afternoons with a quick nap",
        "brown bread and butter",
        "The brown fox, the quick fox, the only fox",
    ];
    let body: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{{\"id\": {i}, \"text\": \"{t}\"}}\n"))
        .collect();
    std::fs::write(&jsonl, body).unwrap();
    let ds = dir.join("ds");
    ok(lancer().arg("import").arg(&jsonl).arg(&ds));
    ok(lancer().args(["index", "create"]).arg(&ds).args([
        "--column",
        "text",
        "--type",
        "inverted",
        "--with-position",
    ]));
    let ids = |args: &[&str]| {
        let out = ok(lancer()
            .args(["fts", "--format", "jsonl", "--columns", "id"])
            .arg(&ds)
            .args(args));
        common::json_ids(&out)
    };
    // "fox" stems to fox; "foxes" too: rows 0, 1, 2, 5, the thrice-fox row first
    let any = ids(&["fox"]);
    assert_eq!(any[0], 5, "{any:?}");
    let mut sorted = any.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [0, 1, 2, 5]);
    let mut both = ids(&["quick fox", "--all"]);
    both.sort_unstable();
    assert_eq!(both, [0, 5]);
    assert_eq!(ids(&["quick brown", "--phrase"]), [0]);
    let mut slop = ids(&["brown fox", "--phrase", "--slop", "1"]);
    slop.sort_unstable();
    assert_eq!(slop, [0, 5]);
    assert_eq!(
        ids(&["fxo", "--fuzzy", "1"]),
        Vec::<i64>::new(),
        "a swap is two edits"
    );
    let mut fuzzy = ids(&["foz", "--fuzzy", "1"]);
    fuzzy.sort_unstable();
    assert_eq!(fuzzy, [0, 1, 2, 5]);
    assert_eq!(ids(&["fox", "--filter", "id > 2"]), [5]);
    // Lance's JSON query form: fox but not snow
    let mut json_q = ids(&[
        r#"{"boolean": {"must": [{"match": {"terms": "fox"}}], "must_not": [{"match": {"terms": "snow"}}]}}"#,
        "--query-json",
    ]);
    json_q.sort_unstable();
    assert_eq!(json_q, [0, 2, 5]);
    let bad = lancer()
        .args(["fts", "--query-json"])
        .arg(&ds)
        .arg(r#"{"match": {"terms": "fox",}}"#)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("column"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let list = json_of(&["index", "list", "--json"], &ds);
    assert_eq!(list[0]["type"], "INVERTED", "{list}");
    let out = ok(lancer()
        .args(["index", "describe", "--json"])
        .arg(&ds)
        .arg("text_idx"));
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["rows_indexed"], 6, "{d}");
    assert_eq!(d["segments"][0]["positions"], "Shared", "{d}");
    // the postings of one word, as the index's analyzer tokenizes it
    let out = ok(lancer()
        .args(["inspect", "--json"])
        .arg(&ds)
        .args(["--index", "text_idx", "--token", "Foxes"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &v["segments"][0]["partitions"][0];
    assert_eq!(p["token"], "fox", "{v}");
    assert_eq!(p["documents_with_token"], 4, "{v}");
    let last = &p["postings"][3];
    assert_eq!(
        (last["offset"].as_u64(), last["frequency"].as_u64()),
        (Some(5), Some(3)),
        "{v}"
    );
    assert_eq!(last["positions"].as_array().map(Vec::len), Some(3), "{v}");
    // without positions a phrase is refused, naming the fix
    ok(lancer().args(["index", "create"]).arg(&ds).args([
        "--column",
        "text",
        "--type",
        "inverted",
        "--replace",
    ]));
    let out = lancer()
        .arg("fts")
        .arg(&ds)
        .args(["quick brown", "--phrase"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("positions"), "{err}");
}

const JSON_WRITE: &str = r#"
import json, sys, lance, pyarrow as pa
docs = [None if i % 13 == 5 else json.dumps({"x": i % 40 - 10, "s": f"v{i % 7}"}) for i in range(3000)]
t = pa.table({"id": pa.array(range(3000), pa.int64()), "j": pa.array(docs, type=pa.json_())})
lance.write_dataset(t, sys.argv[1], max_rows_per_file=1000, data_storage_version="2.1")
print(json.dumps("ok"))
"#;

const JSON_ASK: &str = r#"
import json, sys, lance
ds = lance.dataset(sys.argv[1])
f = sys.argv[2]
print(json.dumps([[i["type"] for i in ds.list_indices()], ds.count_rows(filter=f),
                  "ScalarIndexQuery" in ds.scanner(filter=f).explain_plan()]))
"#;

/// `lancer index create --type json --json-path P --target T` on pylance 14's JSON
/// column: listed as pylance lists it, used by `lancer count` with pylance's count, and
/// pylance 14 uses Lancer's index with the same count; a JSON index without a path, or
/// on a plain column, is a one-line error.
#[test]
fn json_path_index_from_the_cli_is_pylances() {
    let tmp = TempDir::new("cli-json-index");
    let ds = tmp.join("j.lance");
    let ds_s = ds.to_str().unwrap();
    common::py(JSON_WRITE, &[ds_s]);
    for (path, target) in [("x", "btree"), ("s", "bitmap")] {
        ok(lancer().args(["index", "create"]).arg(&ds).args([
            "--column",
            "j",
            "--type",
            "json",
            "--json-path",
            path,
            "--target",
            target,
            "--name",
            &format!("{path}_idx"),
        ]));
    }
    let list = json_of(&["--json", "index", "list"], &ds);
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list}");
    for f in [
        "json_get_int(j, 'x') = 10",
        "json_get_string(j, 's') IN ('v1', 'v6')",
    ] {
        let mine = json_of(&["count", "--json", "--filter", f], &ds);
        let theirs: serde_json::Value =
            serde_json::from_str(&common::py(JSON_ASK, &[ds_s, f])).unwrap();
        assert_eq!(theirs[0], serde_json::json!(["Json", "Json"]));
        assert_eq!(mine["rows"], theirs[1], "{f}");
        assert_eq!(theirs[2], true, "{f}: pylance uses Lancer's index");
        assert!(mine["rows"].as_u64().unwrap() > 0, "{f}");
    }
    for args in [
        vec!["--column", "j", "--type", "json"],
        vec!["--column", "id", "--type", "json", "--json-path", "x"],
    ] {
        let out = lancer()
            .args(["index", "create"])
            .arg(&ds)
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("path") || err.contains("JSON"), "{err}");
    }
}
