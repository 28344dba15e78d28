//! What every command shares: the demo runs, bad input is a one-line error with exit
//! code 1, a URI reaches its store or fails naming it, `--json` gives JSON.

use lancer_testkit::TempDir;

use crate::common::{lancer, ok};
use crate::{copy_dir, datasets, golden};

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
fn bad_input_is_one_line_and_exit_1() {
    let dir = TempDir::new("cli-bad-input");
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
    let dir = TempDir::new("cli-uri");
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
}

#[test]
fn json_flag_gives_json_from_every_command() {
    let dir = TempDir::new("cli-json");
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
