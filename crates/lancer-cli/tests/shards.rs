//! `lancer shards`: the loader's plan of a dataset (ranks' rows add up to the dataset's,
//! balanced within one row), saved as JSON, and refusals with their remedy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{lancer, ok, stdout, TempDir};

#[test]
fn shards_plan_every_rank_and_save_the_plan() {
    let dir = TempDir::new("shards");
    let csv = dir.join("in.csv");
    let mut text = String::from("id,name\n");
    for i in 0..1000 {
        text.push_str(&format!("{i},n{}\n", i % 7));
    }
    std::fs::write(&csv, text).unwrap();
    let ds = dir.join("ds");
    ok(lancer()
        .arg("import")
        .arg(&csv)
        .arg(&ds)
        .args(["--max-rows-per-file", "300"]));
    ok(lancer()
        .arg("delete")
        .arg(&ds)
        .args(["--where", "id % 10 = 0"]));
    let plan_file = dir.join("plan.json");
    let out = ok(lancer()
        .args(["--json", "shards"])
        .arg(&ds)
        .args([
            "--world-size",
            "3",
            "--workers",
            "2",
            "--seed",
            "4",
            "--save",
        ])
        .arg(&plan_file));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["plan"]["rows"], 900);
    assert_eq!(v["plan"]["version"], 2);
    assert_eq!(v["plan"]["shards"].as_array().unwrap().len(), 4);
    assert_eq!(v["data_files_opened"], 0);
    let ranks = v["ranks"].as_array().unwrap();
    let rows: Vec<u64> = ranks.iter().map(|r| r["rows"].as_u64().unwrap()).collect();
    assert_eq!(rows, vec![300, 300, 300]);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    assert_eq!(saved, v["plan"]);
    // the table form names each rank's share
    let text = stdout(&ok(lancer().arg("shards").arg(&ds).args([
        "--world-size",
        "4",
        "--tail",
        "drop-last",
    ])));
    assert!(
        text.contains("version 2 pinned, 4 shards, 900 rows"),
        "{text}"
    );
    // pinned older version by number
    let v1: serde_json::Value = serde_json::from_str(&stdout(&ok(lancer()
        .args(["--json", "shards"])
        .arg(&ds)
        .args(["--version", "1"]))))
    .unwrap();
    assert_eq!(v1["plan"]["rows"], 1000);
    // bad arguments and missing datasets are errors
    let bad = lancer()
        .arg("shards")
        .arg(&ds)
        .args(["--tail", "sideways"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("keep, drop-last or pad"));
    let missing = lancer()
        .arg("shards")
        .arg(dir.join("nope"))
        .output()
        .unwrap();
    assert!(!missing.status.success());
}
