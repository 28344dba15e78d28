//! Distributed compaction from the shell (issue 43): `lancer compact DS --plan`, one
//! `lancer compact-task plan.json N` per task (each its own process), `lancer compact
//! DS --commit result*.json`: one Rewrite commit; pylance 14 reads the rows and
//! fragments; a task number the plan lacks is refused naming the range.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{cli, csv_of_ids as csv, py, pylance14, TempDir};

const READ: &str = r#"
import sys, lance
ds = lance.dataset(sys.argv[1])
print(ds.version, [f.to_table(columns=["id"])["id"].to_pylist() for f in ds.get_fragments()], [f.fragment_id for f in ds.get_fragments()])
"#;

#[test]
fn plan_tasks_commit() {
    let dir = TempDir::new("cli-dist-compact");
    let ds = dir.path().join("ds");
    let ds_s = ds.to_str().unwrap();
    // fragments of 10, 10, 30, 5, 10 rows: 0+1 and 3+4 are tasks, 2 is big enough
    for (i, r) in [0..10, 10..20, 20..50, 50..55, 55..65]
        .into_iter()
        .enumerate()
    {
        let input = dir.path().join(format!("{i}.csv"));
        csv(&input, r);
        let mode = if i == 0 { "create" } else { "append" };
        cli().stdout(["import", input.to_str().unwrap(), ds_s, "--mode", mode]);
    }
    let plan = cli().stdout(["compact", ds_s, "--plan", "--target-rows", "20"]);
    let v: serde_json::Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(v["read_version"], 5);
    assert_eq!(v["dataset"], ds_s);
    let groups: Vec<Vec<u64>> = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["fragments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["id"].as_u64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(groups, [vec![0, 1], vec![3, 4]]);
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, &plan).unwrap();
    let plan_s = plan_file.to_str().unwrap();

    let err = cli().fails(["compact-task", plan_s, "2"], 1);
    assert!(
        err.contains("the plan has 2 tasks (0 to 1), not task 2"),
        "{err}"
    );

    let mut results = Vec::new();
    for n in ["0", "1"] {
        let out = cli().stdout(["compact-task", plan_s, n]);
        let r: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(r["read_version"], 5);
        let f = dir.path().join(format!("result-{n}.json"));
        std::fs::write(&f, out).unwrap();
        results.push(f.to_str().unwrap().to_string());
    }
    // nothing committed by the tasks
    let again: serde_json::Value =
        serde_json::from_str(&cli().stdout(["compact", ds_s, "--plan", "--target-rows", "20"]))
            .unwrap();
    assert_eq!(again["read_version"], 5);

    let mut args = vec!["--json", "compact", ds_s, "--commit"];
    args.extend(results.iter().map(String::as_str));
    let out: serde_json::Value = serde_json::from_str(&cli().stdout(args)).unwrap();
    assert_eq!(out["fragments_removed"], 4);
    assert_eq!(out["fragments_added"], 2);
    assert_eq!(out["version"], 6);

    if pylance14().is_some() {
        let want = format!(
            "6 [{}, {}, {}] [2, 5, 6]",
            fmt(20..50),
            fmt(0..20),
            fmt(50..65)
        );
        assert_eq!(py(READ, &[ds_s]), want);
    }
}

fn fmt(r: std::ops::Range<i64>) -> String {
    format!(
        "[{}]",
        r.map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
    )
}
