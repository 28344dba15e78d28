//! The `lancer` binary on golden files: the demo runs, `inspect --json` describes the
//! file, `cat --format arrow-ipc` streams exactly what pylance read, and errors are one
//! line with a non-zero exit code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{lancer, ok};

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/files/pylance-14")
        .join(name)
}

#[test]
fn demo_runs() {
    let out = ok(lancer().arg("demo"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("identical to what was written"), "{text}");
    assert!(text.contains("id   4242  distance 0.0000"), "{text}");
    // The index step reports a recall well above chance (the index is used).
    let recall: f64 = text
        .split("recall@10 ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|r| r.parse().ok())
        .unwrap_or(0.0);
    assert!(recall >= 0.5, "{text}");
    assert!(
        text.contains("time travel: version 1 still has 10000 rows"),
        "{text}"
    );
}

#[test]
fn inspect_json_describes_every_column() {
    let out = lancer()
        .args(["inspect", "--json", "--row", "7"])
        .arg(golden("structs.v2.2.lance"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], "2.2");
    assert_eq!(v["num_rows"], 2000);
    let cols = v["columns"].as_array().unwrap();
    assert_eq!(cols.len(), 10);
    assert_eq!(cols[0]["field"], "st.a");
    let walk = v["row"]["fields"].as_array().unwrap();
    assert_eq!(walk.len(), 5);
    assert!(!walk[0]["bytes_read"].as_array().unwrap().is_empty());
}

#[test]
fn cat_arrow_ipc_equals_pylance() {
    for f in ["lists.v2.1.lance", "strings.v2.2.lance", "ints.v2.0.lance"] {
        let out = lancer()
            .args(["cat", "--format", "arrow-ipc"])
            .arg(golden(f))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None)
            .unwrap();
        let got: Vec<_> = r.map(|b| b.unwrap()).collect();
        let want_file = std::fs::File::open(golden(f).with_extension("arrow")).unwrap();
        let want: Vec<_> = arrow_ipc::reader::FileReader::try_new(want_file, None)
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        let want = arrow_select::concat::concat_batches(&want[0].schema(), &want).unwrap();
        assert_eq!(got.columns(), want.columns(), "{f}");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_1() {
    let dir = std::env::temp_dir().join(format!("lancer-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.lance");
    std::fs::write(
        &bad,
        b"this is not a lance file at all, not even close......",
    )
    .unwrap();
    let out = lancer().arg("inspect").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("not a Lance file"), "{err}");
    let out = lancer()
        .args(["cat", "--columns", "nope"])
        .arg(golden("ints.v2.1.lance"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"nope\""));
    // a directory that is no dataset is named as such, not an OS error
    let out = lancer().arg("cat").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a Lance dataset") && !err.contains("os error"),
        "{err}"
    );
}

/// A URI with a scheme never becomes a local path: it reaches its store (here an S3
/// endpoint nothing listens on, a `memory://` store that is empty in a new process, a
/// scheme no store serves) or fails with an error naming it; `file://` is the local
/// path.
#[test]
fn uris_reach_their_store_or_fail_clearly() {
    let dir = std::env::temp_dir().join(format!("lancer-cli-uri-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("in.csv");
    std::fs::write(&csv, "id,x\n1,a\n2,b\n").unwrap();
    let unreachable = [
        "--storage-option",
        "endpoint=http://127.0.0.1:9",
        "--storage-option",
        "allow_http=true",
        "--storage-option",
        "client_max_retries=0",
        "--storage-option",
        "access_key_id=x",
        "--storage-option",
        "secret_access_key=y",
        "--storage-option",
        "region=us-east-1",
    ];
    for (cmd, uri, want) in [
        (vec!["import"], "s3://bucket/ds", "127.0.0.1:9"),
        (vec!["count"], "memory://nothing/ds", "not a Lance dataset"),
        (vec!["cat"], "ftp://host/ds", "no store for scheme"),
        (
            vec!["count", "--storage-option", "bogus=1"],
            "s3://bucket/ds",
            "bogus",
        ),
    ] {
        let mut c = lancer();
        c.current_dir(&dir).args(&cmd);
        if cmd[0] == "import" {
            c.args(unreachable).arg(&csv);
        }
        let out = c.arg(uri).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd:?} {uri}: {err}");
        assert!(err.contains(want), "{cmd:?} {uri}: {err}");
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("in.csv")],
        "nothing local written"
    );
    let uri = format!("file://{}", dir.join("ds").display());
    ok(lancer().arg("import").arg(&csv).arg(&uri));
    let out = ok(lancer().arg("count").arg(&uri));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    assert!(dir.join("ds/_versions").is_dir());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--max-bytes-per-file` on import and compact: files close at about the cap (so
/// one input makes several fragments, and compaction of them writes several again);
/// a size that is not a byte count is refused before anything is written.
#[test]
fn byte_caps_split_imports_and_compactions() {
    let dir = std::env::temp_dir().join(format!("lancer-cli-bytecap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("in.csv");
    let mut body = String::from("id,name\n");
    for i in 0..3_000 {
        body.push_str(&format!("{i},name-{i}-{}\n", "x".repeat(i % 40)));
    }
    std::fs::write(&csv, body).unwrap();
    let ds = dir.join("ds");
    let bad = lancer()
        .args(["import", "--max-bytes-per-file", "12XB"])
        .arg(&csv)
        .arg(&ds)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown unit"));
    assert!(!ds.exists(), "nothing written");
    ok(lancer()
        .args(["import", "--max-bytes-per-file", "20KiB"])
        .arg(&csv)
        .arg(&ds));
    let info = json_of(&["inspect", "--json"], &ds);
    let frags = info["fragments"].as_array().unwrap().len() as u64;
    assert!(frags >= 3, "{frags} fragments: {info}");
    let done = json_of(
        &[
            "compact",
            "--max-bytes-per-file",
            "40KiB",
            "--target-rows",
            "100000",
            "--json",
        ],
        &ds,
    );
    assert_eq!(done["fragments_removed"].as_u64(), Some(frags), "{done}");
    let added = done["fragments_added"].as_u64().unwrap();
    assert!(added >= 2 && added < frags, "{done}");
    let out = ok(lancer().arg("count").arg(&ds));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3000");
    let _ = std::fs::remove_dir_all(&dir);
}

fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/datasets")
}

fn arrow_file(p: &std::path::Path) -> arrow_array::RecordBatch {
    let r = arrow_ipc::reader::FileReader::try_new(std::fs::File::open(p).unwrap(), None).unwrap();
    let s = r.schema();
    let b: Vec<_> = r.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&s, &b).unwrap()
}

#[test]
fn cat_dataset_versions_equal_pylance() {
    for set in ["pylance-14", "pylance-11"] {
        let root = datasets().join(set).join("history");
        let exp = datasets().join(set).join("history.expected");
        for v in 1..=6 {
            let out = lancer()
                .args(["cat", "--format", "arrow-ipc", "--version", &v.to_string()])
                .arg(&root)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{set} v{v}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let r =
                arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None)
                    .unwrap();
            let got: Vec<_> = r.map(|b| b.unwrap()).collect();
            let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
            let want = arrow_file(&exp.join(format!("v{v}.arrow")));
            assert_eq!(got.columns(), want.columns(), "{set} v{v}");
        }
    }
}

#[test]
fn export_streams_every_version_as_pylance_read_it() {
    let dir = std::env::temp_dir().join(format!("lancer-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for set in ["pylance-14", "pylance-12"] {
        let root = datasets().join(set).join("history");
        let exp = datasets().join(set).join("history.expected");
        for v in 1..=6 {
            let out = dir.join(format!("{set}-v{v}.arrow"));
            let r = lancer()
                .args(["export", "--version", &v.to_string()])
                .arg(&root)
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                r.status.success(),
                "{set} v{v}: {}",
                String::from_utf8_lossy(&r.stderr)
            );
            let want = arrow_file(&exp.join(format!("v{v}.arrow")));
            let got = arrow_file(&out);
            assert_eq!(got.num_rows(), want.num_rows(), "{set} v{v}");
            assert_eq!(got.columns(), want.columns(), "{set} v{v}");
        }
    }
    // Parquet out and back in: the re-imported dataset holds what pylance read.
    for set in ["pylance-14", "pylance-12"] {
        let root = datasets().join(set).join("history");
        let want = arrow_file(&datasets().join(set).join("history.expected/v6.arrow"));
        let pq = dir.join(format!("{set}.parquet"));
        let ds2 = dir.join(format!("{set}-from-parquet"));
        for args in [
            vec![
                "export".into(),
                root.display().to_string(),
                pq.display().to_string(),
            ],
            vec![
                "import".into(),
                pq.display().to_string(),
                ds2.display().to_string(),
            ],
        ] {
            let r = lancer().args(&args).output().unwrap();
            assert!(
                r.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&r.stderr)
            );
        }
        let out = lancer()
            .args(["cat", "--format", "arrow-ipc"])
            .arg(&ds2)
            .output()
            .unwrap();
        let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None)
            .unwrap();
        let got: Vec<_> = r.map(|b| b.unwrap()).collect();
        let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(got.columns(), want.columns(), "{set} via parquet");
    }
    let bad = lancer()
        .arg("export")
        .arg(datasets().join("pylance-14/history"))
        .arg(dir.join("out.xlsx"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown output format"));
    assert!(
        !dir.join("out.xlsx").exists(),
        "no file left behind for a refused format"
    );
}

#[test]
fn json_flag_gives_json_from_every_command() {
    let dir = std::env::temp_dir().join(format!("lancer-json-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ds = dir.join("ds");
    copy_dir(&datasets().join("pylance-14/history"), &ds);
    let ds_s = ds.to_str().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = lancer().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    };
    let rows = json(&["count", ds_s, "--json"])["rows"].as_u64().unwrap();
    let versions = json(&["--json", "versions", ds_s]);
    let latest = versions.as_array().unwrap().last().unwrap();
    assert_eq!(latest["rows"].as_u64().unwrap(), rows);
    let schema = json(&["schema", ds_s, "--json"]);
    assert!(schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "id"));
    assert_eq!(
        json(&["tag", "create", ds_s, "t1", "2", "--json"])["version"],
        2
    );
    let tags = json(&["tag", "list", ds_s, "--json"]);
    assert!(tags
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "t1" && t["version"] == 2));
    assert_eq!(
        json(&["tag", "delete", ds_s, "t1", "--json"])["deleted"],
        "t1"
    );
    let r = json(&["restore", ds_s, "2", "--json"]);
    assert_eq!(r["restored"], 2);
    assert_eq!(
        r["version"].as_u64().unwrap(),
        versions.as_array().unwrap().len() as u64 + 1
    );
    let v = json(&["verify", ds_s, "--json"]);
    assert_eq!(v["ok"], true, "{v}");
    let out = dir.join("o.jsonl");
    let e = json(&["export", ds_s, out.to_str().unwrap(), "--json"]);
    assert_eq!(
        e["exported_rows"].as_u64().unwrap(),
        r["rows"].as_u64().unwrap()
    );
    let i = json(&[
        "import",
        out.to_str().unwrap(),
        dir.join("ds2").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(i["imported_rows"], e["exported_rows"]);
    let c = json(&["cleanup", ds_s, "--older-than", "0s", "--json"]);
    assert!(c["versions_removed"].as_u64().unwrap() > 0, "{c}");
    // Row commands switch to JSON lines.
    let out = lancer()
        .args(["cat", ds_s, "--limit", "2", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 2, "{text}");
    for l in text.lines() {
        let _: serde_json::Value = serde_json::from_str(l).unwrap();
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

#[test]
fn verify_finds_each_kind_of_damage() {
    let src = datasets().join("pylance-14/history");
    let ok = lancer().arg("verify").arg(&src).output().unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    let base = std::env::temp_dir().join(format!("lancer-verify-{}", std::process::id()));
    let data_file = |d: &std::path::Path| {
        std::fs::read_dir(d.join("data"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path()
    };
    type Damage<'a> = Box<dyn Fn(&std::path::Path) + 'a>;
    let damages: Vec<(&str, Damage<'_>, &str)> = vec![
        (
            "missing",
            Box::new(|d| std::fs::remove_file(data_file(d)).unwrap()),
            "not found",
        ),
        (
            "truncated",
            Box::new(|d| {
                let p = data_file(d);
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() / 2]).unwrap();
            }),
            "bytes, the manifest records",
        ),
        (
            "grown",
            Box::new(|d| {
                let p = data_file(d);
                let mut b = std::fs::read(&p).unwrap();
                b.extend_from_slice(&[0u8; 10]);
                std::fs::write(&p, &b).unwrap();
            }),
            "bytes, the manifest records",
        ),
        (
            "manifest",
            Box::new(|d| {
                let p = std::fs::read_dir(d.join("_versions"))
                    .unwrap()
                    .flatten()
                    .map(|e| e.path())
                    .find(|p| p.extension().is_some_and(|e| e == "manifest"))
                    .unwrap();
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() - 5]).unwrap();
            }),
            "version",
        ),
        (
            "deletion",
            Box::new(|d| {
                let p = std::fs::read_dir(d.join("_deletions"))
                    .unwrap()
                    .flatten()
                    .next()
                    .unwrap()
                    .path();
                std::fs::write(&p, b"garbage").unwrap();
            }),
            "fragment",
        ),
    ];
    for (name, damage, want) in damages {
        let d = base.join(name);
        copy_dir(&src, &d);
        damage(&d);
        let out = lancer().arg("verify").arg(&d).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}: verify should fail");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(want), "{name}: {text}");
    }
}

#[test]
fn import_export_and_history_commands() {
    let dir = std::env::temp_dir().join(format!("lancer-import-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("in.csv");
    std::fs::write(&csv, "id,name,score\n1,a,0.5\n2,b,1.5\n3,c,\n").unwrap();
    let ds = dir.join("ds");
    let run = |args: &[&str]| {
        let out = lancer().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let ds_s = ds.to_str().unwrap();
    run(&["import", csv.to_str().unwrap(), ds_s]);
    run(&["import", csv.to_str().unwrap(), ds_s, "--mode", "append"]);
    assert_eq!(run(&["count", ds_s]).trim(), "6");
    run(&["tag", "create", ds_s, "two", "2"]);
    assert!(run(&["tag", "list", ds_s]).contains("two\t2"));
    run(&["import", csv.to_str().unwrap(), ds_s, "--mode", "overwrite"]);
    assert_eq!(run(&["count", ds_s]).trim(), "3");
    assert_eq!(run(&["count", ds_s, "--tag", "two"]).trim(), "6");
    run(&["restore", ds_s, "2"]);
    assert_eq!(run(&["count", ds_s]).trim(), "6");
    let v: serde_json::Value = serde_json::from_str(&run(&["versions", ds_s, "--json"])).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 4);
    let out = dir.join("out.csv");
    run(&["export", ds_s, out.to_str().unwrap()]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 7, "{text}");
    assert!(run(&["verify", ds_s]).starts_with("ok"));
    run(&["tag", "delete", ds_s, "two"]);
    assert!(!run(&["tag", "list", ds_s]).contains("two"));
}

#[test]
fn search_finds_the_query_row_first() {
    let dir = std::env::temp_dir().join(format!("lancer-search-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
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

/// Runs `lancer ARGS PATH`, which must succeed, and parses its JSON output.
fn json_of(args: &[&str], path: &std::path::Path) -> serde_json::Value {
    let out = lancer().args(args).arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "lancer {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The filter suite's pylance answer for `filter` (ids in order).
fn suite_ids(filter: &str) -> Vec<i64> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/filter-suite/pylance-14");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let case = v["filters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["filter"] == filter)
        .unwrap_or_else(|| panic!("{filter} is not in the suite"));
    case["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

#[test]
fn filter_count_delete_and_filtered_search() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/filter-suite/pylance-14/filters");
    let tmp = std::env::temp_dir().join(format!("lancer-cli-filter-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    copy_dir(&src, &tmp);
    // cat --filter returns pylance's rows; --offset/--limit page after the filter.
    for f in [
        "s LIKE 'app%'",
        "meta.lang = 'en'",
        "array_has_any(tags, ['red', 'blue'])",
    ] {
        let out = ok(lancer()
            .args([
                "cat",
                "--columns",
                "id,meta.lang",
                "--format",
                "jsonl",
                "--filter",
                f,
            ])
            .arg(&tmp));
        assert_eq!(common::json_ids(&out), suite_ids(f), "{f}");
        let page = lancer()
            .args([
                "cat",
                "--columns",
                "id",
                "--json",
                "--offset",
                "3",
                "--limit",
                "4",
                "-w",
                f,
            ])
            .arg(&tmp)
            .output()
            .unwrap();
        assert_eq!(common::json_ids(&page), suite_ids(f)[3..7].to_vec(), "{f}");
        let v = json_of(&["count", "--json", "--filter", f], &tmp);
        assert_eq!(v["rows"].as_u64(), Some(suite_ids(f).len() as u64), "{f}");
    }
    // Computed columns after the plain ones.
    let out = ok(lancer()
        .args([
            "cat",
            "--json",
            "--columns",
            "id",
            "--expr",
            "id2=id * 2",
            "-w",
            "id < 20",
        ])
        .arg(&tmp));
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["id2"].as_i64(), v["id"].as_i64().map(|i| i * 2), "{line}");
    }
    let bad = lancer()
        .args(["cat", "--expr", "noequals"])
        .arg(&tmp)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    // A table without --limit shows the first 100 rows and says so.
    let t = ok(lancer().args(["cat", "--columns", "id"]).arg(&tmp));
    assert!(String::from_utf8_lossy(&t.stderr).contains("first 100 rows"));
    let body = String::from_utf8_lossy(&t.stdout);
    assert!(
        body.contains("│ 109 ") && !body.contains("│ 111 "),
        "{body}"
    );
    // A parquet page of a filtered scan.
    let pq = ok(lancer()
        .args([
            "cat",
            "--format",
            "parquet",
            "--with-row-address",
            "--filter",
            "id < 10",
        ])
        .arg(&tmp));
    assert_eq!(&pq.stdout[..4], b"PAR1");
    // A bad filter: one line naming the column, exit 2.
    let bad = lancer()
        .args(["cat", "--filter", "nosuch > 1"])
        .arg(&tmp)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("nosuch") && err.lines().count() == 1, "{err}");
    // Filtered search: every hit passes the filter.
    let hits = ok(lancer()
        .args([
            "search",
            "--column",
            "vec",
            "--query",
            "0.1,0.2,-0.3,0.4",
            "-k",
            "5",
        ])
        .args([
            "--columns",
            "id,meta.lang",
            "--filter",
            "meta.lang = 'fr'",
            "--json",
        ])
        .arg(&tmp));
    let fr = suite_ids("meta.lang IN ('fr', 'de')");
    let got = common::json_ids(&hits);
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|i| fr.contains(i)), "{got:?}");
    // delete --where, then the rows are gone and the old version still has them.
    let before = suite_ids("s LIKE 'app%'").len();
    let v = json_of(&["delete", "--json", "--where", "s LIKE 'app%'"], &tmp);
    assert_eq!(v["deleted_rows"].as_u64(), Some(before as u64));
    let version = v["version"].as_u64().unwrap();
    let v = json_of(&["count", "--json", "-w", "s LIKE 'app%'"], &tmp);
    assert_eq!(v["rows"].as_u64(), Some(0));
    let old = (version - 1).to_string();
    let v = json_of(
        &["count", "--json", "-w", "s LIKE 'app%'", "--version", &old],
        &tmp,
    );
    assert_eq!(v["rows"].as_u64(), Some(before as u64));
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn inspect_row_byte_ranges_lie_in_the_buffers_pylance_reports() {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/pylance-14/bin/python");
    if !py.exists() {
        assert!(
            std::env::var_os("LANCER_REQUIRE_PYLANCE").is_none(),
            "{} missing: run scripts/setup-python.sh",
            py.display()
        );
        eprintln!("SKIPPED: pylance 14 venv missing");
        return;
    }
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check_inspect_row.py");
    for v in ["14", "11"] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../tests/data/files/pylance-{v}"));
        let out = Command::new(&py)
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_lancer"))
            .arg(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert!(v["files"].as_u64().unwrap() >= 50, "{text}");
        assert!(v["ranges_checked"].as_u64().unwrap() >= 2000, "{text}");
    }
}

#[test]
fn import_streams_and_a_bad_row_commits_nothing() {
    let dir = std::env::temp_dir().join(format!("lancer-cli-import-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.csv");
    let mut text = String::from("id,name\n");
    for i in 0..20_000 {
        text.push_str(&format!("{i},n{i}\n"));
    }
    std::fs::write(&good, &text).unwrap();
    let ds = dir.join("ds");
    let good = good.to_string_lossy().to_string();
    let v = json_of(
        &["import", "--json", "--max-rows-per-file", "7000", &good],
        &ds,
    );
    assert_eq!(
        (v["imported_rows"].as_u64(), v["version"].as_u64()),
        (Some(20_000), Some(1))
    );
    // Past the 10,000 rows used to infer the schema, a row that is not an integer.
    let bad = dir.join("bad.csv");
    text.push_str("oops,late\n");
    std::fs::write(&bad, &text).unwrap();
    let out = lancer()
        .args(["import", "--mode", "append"])
        .arg(&bad)
        .arg(&ds)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("oops"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json_of(&["count", "--json"], &ds)["rows"].as_u64(),
        Some(20_000)
    );
    let v = json_of(&["versions", "--json"], &ds);
    assert_eq!(v.as_array().map(|a| a.len()), Some(1), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn inspect_dataset_row_follows_the_row_to_its_fragment_and_bytes() {
    for name in ["stable_row_ids", "history"] {
        let ds = datasets().join(format!("pylance-14/{name}"));
        let rows = json_of(&["count", "--json"], &ds)["rows"].as_u64().unwrap();
        for r in [0, rows / 2, rows - 1] {
            let v = json_of(&["inspect", "--json", "--row", &r.to_string()], &ds);
            let w = &v["row"];
            let cat = ok(lancer()
                .args([
                    "cat",
                    "--json",
                    "--columns",
                    "id",
                    "--with-row-id",
                    "--with-row-address",
                ])
                .args(["--offset", &r.to_string(), "--limit", "1"])
                .arg(&ds));
            let line: serde_json::Value =
                serde_json::from_str(String::from_utf8_lossy(&cat.stdout).trim()).unwrap();
            let addr = line["_rowaddr"].as_u64().unwrap();
            assert_eq!(w["address"].as_u64(), Some(addr), "{name} row {r}");
            assert_eq!(w["fragment"].as_u64(), Some(addr >> 32));
            assert_eq!(w["row_in_fragment"].as_u64(), Some(addr & 0xFFFF_FFFF));
            if name == "stable_row_ids" {
                assert_eq!(
                    w["row_id"].as_u64(),
                    line["_rowid"].as_u64(),
                    "{name} row {r}"
                );
            }
            let files = w["files"].as_array().unwrap();
            assert!(!files.is_empty());
            for f in files {
                let fields = f["fields"].as_array().unwrap();
                assert!(!fields.is_empty());
                assert!(fields
                    .iter()
                    .all(|x| !x["bytes_read"].as_array().unwrap().is_empty()));
            }
        }
    }
}

/// `lancer import` of every shape the outside check found unreadable when Lancer wrote
/// it — dictionary columns, large_utf8 / large_binary constant pages, Null-typed
/// columns, empty strings, one repeated value — at 2.1 and 2.2: pylance 14 and 12 read
/// the dataset with exactly the imported values (and go on writing to it).
#[test]
fn imported_shapes_are_read_by_pylance() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("target/lancer-import-shapes");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut checked = 0;
    for case in ["shapes", "null_type"] {
        let input = golden(&format!("{case}.v2.2.arrow"));
        for v in ["2.1", "2.2"] {
            let ds = dir.join(format!("{case}-{v}"));
            ok(lancer()
                .arg("import")
                .arg(&input)
                .arg(&ds)
                .args(["--data-storage-version", v]));
            let exp = dir.join(format!("{case}-{v}.expected"));
            std::fs::create_dir_all(&exp).unwrap();
            std::fs::copy(&input, exp.join("v1.arrow")).unwrap();
            std::fs::write(
                exp.join("index.json"),
                r#"{"versions": [{"version": 1}], "tags": {}}"#,
            )
            .unwrap();
            for py in ["14", "12"] {
                let python = root.join(format!(".venv/pylance-{py}/bin/python"));
                if !python.exists() {
                    assert!(
                        std::env::var_os("LANCER_REQUIRE_PYLANCE").is_none(),
                        "{} missing",
                        python.display()
                    );
                    eprintln!("SKIPPED: pylance {py} venv missing");
                    continue;
                }
                let out = Command::new(&python)
                    .arg(root.join("scripts/check_lancer_dataset.py"))
                    .arg(&ds)
                    .arg(&exp)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "pylance {py} on `lancer import` of {case} at {v}:\n{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                checked += 1;
            }
        }
    }
    eprintln!("{checked} imported datasets checked by pylance");
}

#[test]
fn legacy_dataset_cat_count_and_inspect() {
    for set in ["pylance-14", "pylance-11"] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/legacy")
            .join(set);
        let root = dir.join("history");
        let index: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("history.expected/index.json")).unwrap(),
        )
        .unwrap();
        for v in index["versions"].as_array().unwrap() {
            let n = v["version"].as_u64().unwrap().to_string();
            // The whole version as pylance read it.
            let out = ok(lancer()
                .args(["cat", "--format", "arrow-ipc", "--version", &n])
                .arg(&root));
            let r =
                arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None)
                    .unwrap();
            let got: Vec<_> = r.map(|b| b.unwrap()).collect();
            let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
            let want = arrow_file(&dir.join(format!("history.expected/v{n}.arrow")));
            assert_eq!(got.columns(), want.columns(), "{set} v{n}");
            // A filtered scan and count: pylance's rows.
            let filter = v["filter"].as_str().unwrap();
            let want_ids: Vec<i64> = v["filter_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            let out = ok(lancer()
                .args([
                    "--json",
                    "cat",
                    "--columns",
                    "id",
                    "--filter",
                    filter,
                    "--version",
                    &n,
                ])
                .arg(&root));
            assert_eq!(common::json_ids(&out), want_ids, "{set} v{n} {filter}");
            let c = json_of(
                &["--json", "count", "--filter", filter, "--version", &n],
                &root,
            );
            assert_eq!(
                c["rows"].as_u64(),
                Some(want_ids.len() as u64),
                "{set} v{n}: {c}"
            );
        }
        // take by offset, and inspect of one legacy data file.
        let out = ok(lancer().args(["--json", "take"]).arg(&root).arg("0,3"));
        assert_eq!(common::json_ids(&out).len(), 2);
        let file = std::fs::read_dir(root.join("data"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let out = ok(lancer().arg("inspect").arg(&file));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("legacy Lance file (format 0.2"), "{text}");
        let j = json_of(&["inspect", "--json"], &file);
        assert_eq!(j["legacy"]["format"], "0.2");
    }
}

/// `lancer search` uses a pylance-built index by default (its metric too), and
/// `--nprobes` / `--fast-search` / `--no-index` give pylance's answers for those
/// settings (tests/data/indexes: pylance 14's recorded answers).
#[test]
fn search_uses_a_pylance_built_index() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/indexes/pylance-14");
    let case: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("ivf_pq8_cosine_d16.json")).unwrap(),
    )
    .unwrap();
    let q = &case["queries"][0];
    let query: Vec<String> = q["query"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap().to_string())
        .collect();
    let query = query.join(",");
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

/// `lancer index describe / create / optimize` on pylance 14's IVF_FLAT golden dataset
/// (an appended fragment it does not cover): describe names the unindexed fragment and
/// its rows, optimize covers it with a second segment, a RabitQ index built with a zero
/// memory budget (every batch spilled) describes its quantizer, partitions and
/// coverage; an unknown name is a one-line error.
#[test]
fn index_describe_optimize_and_spilled_rq_build() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/indexes/pylance-14/ivf_flat_l2_d16");
    let ds = std::env::temp_dir().join(format!("lancer-cli-index-{}", std::process::id()));
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
    let _ = std::fs::remove_dir_all(&ds);
}

#[test]
fn scalar_index_create_explain_count_list_and_describe() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/filter-suite/pylance-14/filters");
    let ds = std::env::temp_dir().join(format!("lancer-cli-scalar-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&ds);
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
    assert!(plan.contains("(exact)"), "{plan}");
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
    let _ = std::fs::remove_dir_all(&ds);
}

/// `lancer index create --type inverted` on an imported table, then `lancer fts`:
/// OR / AND matches ranked by BM25, a phrase (positions), a fuzzy match, a prefilter,
/// and the index in `index list` / `describe`; a phrase on an index without positions
/// is refused with a message saying what to do.
#[test]
fn fts_index_create_search_list_and_describe() {
    let dir = std::env::temp_dir().join(format!("lancer-cli-fts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
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
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hybrid_search_fuses_vector_and_text_ranks() {
    use arrow_array::{FixedSizeListArray, Float32Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let dir = std::env::temp_dir().join(format!("lancer-cli-hybrid-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
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
    let mut w =
        arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&file).unwrap(), &schema)
            .unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
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

/// Runs `lancer ARGS` until it does not fail with a commit conflict (a concurrent
/// writer won); returns how many attempts it took.
fn until_committed(args: &[String]) -> usize {
    for attempt in 1..=300 {
        let out = lancer().args(args).output().unwrap();
        if out.status.success() {
            return attempt;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("conflict"), "lancer {args:?}: {err}");
    }
    panic!("lancer {args:?}: still conflicting after 300 attempts");
}

/// Real processes at once: four updaters (each `x = x + 1` five times on its own
/// quarter of the rows), two appenders and a compactor. Every commit lands exactly
/// once: each original row ends at x = 5, every appended row is there, every version
/// reads, and pylance reads the last one the same.
#[test]
fn concurrent_updates_appends_and_compactions_lose_nothing() {
    let dir = std::env::temp_dir().join(format!("lancer-cli-concurrent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ds = dir.join("ds");
    import_parts(&dir, &ds, 4, 100, |_| 0);
    let s = |x: &str| x.to_string();
    let d = ds.to_string_lossy().to_string();
    let mut jobs: Vec<Vec<Vec<String>>> = Vec::new();
    for k in 0..4 {
        let set = vec![
            s("update"),
            d.clone(),
            s("--set"),
            s("x=x + 1"),
            s("--where"),
            format!("id < 400 AND id % 4 = {k}"),
        ];
        jobs.push(vec![set; 5]);
    }
    for a in 0..2 {
        let mut runs = Vec::new();
        for b in 0..3 {
            let csv = dir.join(format!("a{a}-{b}.csv"));
            let from = 1000 + a * 100 + b * 10;
            let body: String = std::iter::once("id,x\n".to_string())
                .chain((from..from + 10).map(|i| format!("{i},0\n")))
                .collect();
            std::fs::write(&csv, body).unwrap();
            runs.push(vec![
                s("import"),
                csv.to_string_lossy().to_string(),
                d.clone(),
                s("--mode"),
                s("append"),
            ]);
        }
        jobs.push(runs);
    }
    jobs.push(vec![
        vec![
            s("compact"),
            d.clone(),
            s("--target-rows"),
            s("1000")
        ];
        3
    ]);
    let attempts: usize = std::thread::scope(|sc| {
        let hs: Vec<_> = jobs
            .iter()
            .map(|runs| sc.spawn(move || runs.iter().map(|r| until_committed(r)).sum::<usize>()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert!(attempts >= 29, "{attempts} attempts for 29 commits");
    eprintln!("{attempts} attempts for 29 commits");
    let rows: Vec<serde_json::Value> = {
        let out = ok(lancer().args(["cat", "--format", "jsonl"]).arg(&ds));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(rows.len(), 460, "400 rows + 60 appended");
    for r in &rows {
        let (id, x) = (r["id"].as_i64().unwrap(), r["x"].as_i64().unwrap());
        let want = if id < 400 { 5 } else { 0 };
        assert_eq!(x, want, "row {id}");
    }
    let v = json_of(&["versions", "--json"], &ds);
    for entry in v.as_array().unwrap() {
        let n = entry["version"].as_u64().unwrap().to_string();
        ok(lancer().args(["count", "--version", &n]).arg(&ds));
    }
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/pylance-14/bin/python");
    if py.exists() {
        let out = Command::new(&py)
            .arg("-c")
            .arg("import lance,sys; t=lance.dataset(sys.argv[1]).to_table(); print(t.num_rows, sum(t['x'].to_pylist()))")
            .arg(&ds)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "460 2000",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writers killed in the middle of an update, a column add or a compaction (after
/// writing data, after the transaction file, before the manifest, after reserving
/// fragment ids) leave the last version whole; the same command then succeeds.
#[test]
fn killed_evolution_writers_leave_the_last_version_intact() {
    let dir = std::env::temp_dir().join(format!("lancer-cli-killed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ds = dir.join("ds");
    import_parts(&dir, &ds, 3, 50, |i| i);
    let table = || ok(lancer().args(["cat", "--format", "jsonl"]).arg(&ds)).stdout;
    let mut added = 0;
    for point in [
        "after-data",
        "after-txn",
        "before-manifest",
        "after-reserve",
    ] {
        let commands: Vec<Vec<String>> = vec![
            vec![
                "update".into(),
                "--set".into(),
                "x=x * 2".into(),
                "--where".into(),
                "id % 3 = 0".into(),
            ],
            vec!["add-column".into(), format!("c{added}=x + 1")],
            vec!["compact".into(), "--target-rows".into(), "1000".into()],
        ];
        for cmd in commands {
            let before = table();
            let out = lancer()
                .arg(&cmd[0])
                .arg(&ds)
                .args(&cmd[1..])
                .env("LANCER_CRASH_AT", point)
                .output()
                .unwrap();
            if out.status.success() {
                // the command has no such point (only compaction reserves ids); it
                // committed normally
                assert!(
                    point == "after-reserve" && cmd[0] != "compact",
                    "{point} {cmd:?}"
                );
                if cmd[0] == "add-column" {
                    added += 1;
                }
                continue;
            }
            assert_eq!(table(), before, "{point} {cmd:?}: the table changed");
            ok(lancer().arg(&cmd[0]).arg(&ds).args(&cmd[1..]));
            if cmd[0] == "add-column" {
                added += 1;
            }
        }
    }
    let out = ok(lancer().args(["verify"]).arg(&ds));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ok"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three processes upserting overlapping key ranges at once, four times each: every
/// key stays unique, each row holds a value one of its writers wrote, every insert is
/// kept once.
#[test]
fn concurrent_merges_on_overlapping_keys_keep_keys_unique() {
    let dir = std::env::temp_dir().join(format!("lancer-cli-merges-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ds = dir.join("ds");
    import_parts(&dir, &ds, 3, 100, |_| 0);
    let d = ds.to_string_lossy().to_string();
    let mut jobs = Vec::new();
    for k in 0..3i64 {
        let mut runs = Vec::new();
        for round in 0..4i64 {
            let csv = dir.join(format!("m{k}-{round}.csv"));
            let body: String = std::iter::once("id,x\n".to_string())
                .chain((k * 75..k * 75 + 150).map(|i| format!("{i},{}\n", k + 1)))
                .chain(std::iter::once(format!(
                    "{},{}\n",
                    1000 + k * 10 + round,
                    k + 1
                )))
                .collect();
            std::fs::write(&csv, body).unwrap();
            runs.push(vec![
                "merge".to_string(),
                d.clone(),
                csv.to_string_lossy().to_string(),
                "--on".to_string(),
                "id".to_string(),
            ]);
        }
        jobs.push(runs);
    }
    let attempts: usize = std::thread::scope(|sc| {
        let hs: Vec<_> = jobs
            .iter()
            .map(|runs| sc.spawn(move || runs.iter().map(|r| until_committed(r)).sum::<usize>()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    eprintln!("{attempts} attempts for 12 merges");
    let out = ok(lancer().args(["cat", "--format", "jsonl"]).arg(&ds));
    let mut seen = std::collections::BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        let (id, x) = (r["id"].as_i64().unwrap(), r["x"].as_i64().unwrap());
        assert!(seen.insert(id, x).is_none(), "key {id} twice");
    }
    assert_eq!(seen.len(), 300 + 12, "300 rows + 12 inserted");
    for (id, x) in &seen {
        if *id >= 1000 {
            assert_eq!(*x, (id - 1000) / 10 + 1, "insert {id}");
            continue;
        }
        // the writers whose range holds the id
        let writers: Vec<i64> = (0..3)
            .filter(|k| (k * 75..k * 75 + 150).contains(id))
            .collect();
        let ok_values: Vec<i64> = writers.iter().map(|k| k + 1).collect();
        if writers.is_empty() {
            assert_eq!(*x, 0, "row {id}");
        } else {
            assert!(ok_values.contains(x), "row {id}: {x} not from {writers:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Imports `parts` CSV files of `per` rows (`id`, `x = x_of(id)`) into `ds`: a dataset
/// of `parts` fragments.
fn import_parts(
    dir: &std::path::Path,
    ds: &std::path::Path,
    parts: i64,
    per: i64,
    x_of: fn(i64) -> i64,
) {
    for part in 0..parts {
        let csv = dir.join(format!("p{part}.csv"));
        let body: String = std::iter::once("id,x\n".to_string())
            .chain((part * per..part * per + per).map(|i| format!("{i},{}\n", x_of(i))))
            .collect();
        std::fs::write(&csv, body).unwrap();
        let mode = if part == 0 { "create" } else { "append" };
        ok(lancer()
            .arg("import")
            .arg(&csv)
            .arg(ds)
            .args(["--mode", mode]));
    }
}
