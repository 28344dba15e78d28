//! `lancer write-fragments` and `lancer commit` (issue 43): two workers write fragments
//! of a new dataset from CSV, a driver commits their concatenated JSON as an overwrite,
//! then an append; pylance 14 reads the result and reads each printed description back
//! to the very text (`json.dumps(FragmentMetadata.from_json(..).to_json())`); a
//! description naming a removed file is refused naming it, a repeated one as a
//! duplicate, and nothing is committed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{cli, csv_of_ids as csv, py, pylance14, TempDir};

const ECHO: &str = r#"
import json, sys
from lance.fragment import FragmentMetadata
print(json.dumps([FragmentMetadata.from_json(json.dumps(f)).to_json() for f in json.loads(sys.argv[1])]))
"#;

const READ: &str = r#"
import sys, lance
ds = lance.dataset(sys.argv[1])
print(ds.version, sorted(ds.to_table()["id"].to_pylist()), [f.fragment_id for f in ds.get_fragments()])
"#;

#[test]
fn workers_write_a_driver_commits() {
    let dir = TempDir::new("cli-two-phase");
    let ds = dir.path().join("ds");
    let ds_s = ds.to_str().unwrap();
    let (a, b, c) = (
        dir.path().join("a.csv"),
        dir.path().join("b.csv"),
        dir.path().join("c.csv"),
    );
    csv(&a, 0..5);
    csv(&b, 5..8);
    csv(&c, 100..102);
    let worker = |input: &Path, mode: &str| {
        cli().stdout([
            "write-fragments",
            input.to_str().unwrap(),
            ds_s,
            "--mode",
            mode,
            "--max-rows-per-file",
            "2",
        ])
    };
    let (wa, wb) = (worker(&a, "create"), worker(&b, "create"));
    let items: Vec<serde_json::Value> = serde_json::from_str(&wa).unwrap();
    assert_eq!(
        items
            .iter()
            .map(|f| f["physical_rows"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [2, 2, 1]
    );
    assert!(items.iter().all(|f| f["id"] == 0));
    // nothing is visible before the commit
    assert!(!ds.join("_versions").exists());
    if pylance14().is_some() {
        assert_eq!(
            py(ECHO, &[&wa]),
            wa,
            "pylance 14 reads the JSON back to the same text"
        );
    }
    let frags = dir.path().join("frags.json");
    std::fs::write(&frags, format!("{wa}\n{wb}\n")).unwrap();
    let out: serde_json::Value = serde_json::from_str(&cli().stdout([
        "--json",
        "commit",
        ds_s,
        "--overwrite",
        frags.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(
        out,
        serde_json::json!({"committed_fragments": 5, "version": 1, "rows": 8})
    );
    // a worker appends, fitted to the dataset's schema; the driver commits at version 1
    let wc = worker(&c, "append");
    let more = dir.path().join("more.json");
    std::fs::write(&more, &wc).unwrap();
    let text = cli().stdout([
        "commit",
        ds_s,
        "--append",
        more.to_str().unwrap(),
        "--read-version",
        "1",
    ]);
    assert!(text.contains("version 2, 10 rows"), "{text}");
    if pylance14().is_some() {
        assert_eq!(
            py(READ, &[ds_s]),
            "2 [0, 1, 2, 3, 4, 5, 6, 7, 100, 101] [0, 1, 2, 3, 4, 5]"
        );
    }
    // the same fragments again: refused as a duplicate, naming the file
    let first = serde_json::from_str::<serde_json::Value>(&wc).unwrap()[0]["files"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let err = cli().fails(["commit", ds_s, "--append", more.to_str().unwrap()], 2);
    assert!(
        err.contains(&first) && err.contains("already part"),
        "{err}"
    );
    // a removed file: refused naming it
    let wd = worker(&c, "append");
    let gone = serde_json::from_str::<serde_json::Value>(&wd).unwrap()[0]["files"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::remove_file(ds.join("data").join(&gone)).unwrap();
    std::fs::write(&more, &wd).unwrap();
    let err = cli().fails(["commit", ds_s, "--append", more.to_str().unwrap()], 2);
    assert!(
        err.contains(&gone) && err.contains("does not exist"),
        "{err}"
    );
    // neither committed anything
    assert_eq!(
        std::fs::read_dir(ds.join("_versions"))
            .unwrap()
            .filter(|e| e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".manifest"))
            .count(),
        2
    );
}
