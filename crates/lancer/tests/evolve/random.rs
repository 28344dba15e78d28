//! The random runs against the model (every version equals it, pylance reads each the
//! same), and bad evolution requests that must leave the dataset unchanged.

use std::process::Command;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use lancer::{Dataset, WriteParams};
use lancer_format::container::FileVersion;
use lancer_table::evolution::ColumnChange;
use serde_json::{json, Value};

use crate::common::{pylance, repo, TempDir};

use super::{read, run, INDEXED_MERGES, STREAMED_STABLE_MERGES};

#[test]
fn random_evolution_matches_the_model_and_pylance() {
    let tmp = TempDir::new("evolve");
    let mut cases = Vec::new();
    for (i, storage) in [FileVersion::V2_1, FileVersion::V2_2]
        .into_iter()
        .enumerate()
    {
        for seed in 1..=4u64 {
            // the fourth dataset of each storage version has stable row ids
            let stable = seed == 4;
            let root = tmp.join(format!("ds-{storage}-{seed}"));
            let versions = run(&root, storage, seed * 7919 + i as u64, 30, stable);
            if versions.is_empty() {
                continue;
            }
            cases.push(json!({
                "path": root,
                "versions": versions.iter().map(|(v, m, ids)| json!({"version": v, "table": m.json(), "rowids": ids})).collect::<Vec<_>>(),
            }));
        }
    }
    let list = tmp.join("cases.json");
    std::fs::write(&list, serde_json::to_string(&cases).unwrap()).unwrap();
    let checked: usize = cases
        .iter()
        .map(|c| c["versions"].as_array().unwrap().len())
        .sum();
    assert!(checked > 100, "{checked} versions");
    let indexed = INDEXED_MERGES.load(std::sync::atomic::Ordering::Relaxed);
    assert!(indexed > 0, "no merge went through the key's index");
    eprintln!("{indexed} merges located their rows through an index");
    let streamed = STREAMED_STABLE_MERGES.load(std::sync::atomic::Ordering::Relaxed);
    if pylance("14").is_some() {
        // the stable-row-id datasets come from pylance
        assert!(
            streamed > 0,
            "no streamed merge into a dataset with stable row ids"
        );
    }
    eprintln!("{streamed} streamed merges into datasets with stable row ids");
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        let out = Command::new(&py)
            .arg(repo().join("scripts/check_evolution.py"))
            .arg(&list)
            .arg(tmp.join(format!("pylance-{v}")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pylance {v}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // what pylance wrote on top of each Lancer dataset reads the same in Lancer
        let after: Value = serde_json::from_slice(&out.stdout).unwrap();
        for c in after.as_array().unwrap() {
            let ds = Dataset::open(c["path"].as_str().unwrap()).unwrap();
            let (names, rows) = read(&ds);
            let want = &c["table"];
            assert_eq!(
                json!(names),
                want["columns"],
                "pylance {v} then Lancer: {c}"
            );
            assert_eq!(
                json!(rows.values().cloned().collect::<Vec<_>>()),
                want["rows"],
                "pylance {v} then Lancer"
            );
        }
    }
}

#[test]
fn bad_evolution_requests_leave_the_dataset_unchanged() {
    let tmp = TempDir::new("evolve-bad");
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
            Arc::new(StringArray::from(vec!["a", "b", "c"])),
        ],
    )
    .unwrap();
    let ds = Dataset::write(&tmp, schema, &[b], &WriteParams::default()).unwrap();
    let v = ds.version();
    let err = |r: lancer::Result<Dataset>| r.unwrap_err().to_string();
    let e = err(lancer::write::update(&ds, None, &[("x", "'abc'")], None).map(|r| r.0));
    assert!(e.contains("'abc'") && e.contains("Int64"), "{e}");
    let e = err(lancer::write::update(&ds, None, &[("nope", "1")], None).map(|r| r.0));
    assert!(e.contains("nope"), "{e}");
    let e = err(lancer::write::update(&ds, Some("nope > 1"), &[("x", "1")], None).map(|r| r.0));
    assert!(e.contains("nope"), "{e}");
    let e = err(lancer::write::update(&ds, None, &[("id", "x")], None).map(|r| r.0));
    assert!(e.contains("not nullable"), "{e}");
    let e = err(lancer::write::add_columns(&ds, &[("x", "id + 1")], None));
    assert!(e.contains("exists"), "{e}");
    let e = err(lancer::write::add_columns(&ds, &[("y", "nope + 1")], None));
    assert!(e.contains("nope"), "{e}");
    let e = err(lancer::write::drop_columns(&ds, &["id", "x", "s"]));
    assert!(e.contains("every column"), "{e}");
    let e = err(lancer::write::drop_columns(&ds, &["zz"]));
    assert!(e.contains("zz"), "{e}");
    let rename = |from: &str, to: &str| ColumnChange {
        path: from.into(),
        rename: Some(to.into()),
        nullable: None,
    };
    let e = err(lancer::write::alter_columns(&ds, &[rename("x", "s")]));
    assert!(e.contains("exists"), "{e}");
    let not_null = ColumnChange {
        path: "x".into(),
        rename: None,
        nullable: Some(false),
    };
    let e = err(lancer::write::alter_columns(&ds, &[not_null]));
    assert!(e.contains("nulls"), "{e}");
    let again = Dataset::open(&tmp).unwrap();
    assert_eq!(again.version(), v, "no version was committed");
    assert_eq!(read(&again), read(&ds));
}
