//! Compaction: Lancer plans like pylance, and indexed filters stay right after it.

use std::process::Command;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer::{Dataset, DatasetExt, WriteParams};
use lancer_format::container::FileVersion;
use lancer_testkit::oracle::live_dir;
use serde_json::Value;

use crate::common::{pylance, TempDir};

use super::stable_dataset;

/// Lancer plans the compactions pylance made in the golden datasets (same groups of
/// fragments, from the version pylance planned on, with its options).
#[test]
fn compaction_plans_like_pylance() {
    let Some(live) = live_dir("LANCER_GOLDEN_EVOLUTION_LIVE") else {
        return;
    };
    let mut compared = 0;
    for entry in std::fs::read_dir(&live).unwrap() {
        let root = entry.unwrap().path();
        let Ok(bytes) = std::fs::read(root.join("expected.json")) else {
            continue;
        };
        let expected: Value = serde_json::from_slice(&bytes).unwrap();
        for (name, case) in expected["datasets"].as_object().unwrap() {
            if case["stable_row_ids"] == true {
                continue;
            }
            let path = root.join(case["path"].as_str().unwrap());
            let versions = case["versions"].as_array().unwrap();
            // the latest version before each step
            let mut latest = 0u64;
            for step in case["steps"].as_array().unwrap() {
                let label = step["step"].as_str().unwrap();
                let made: Vec<u64> = step["versions"]
                    .as_array()
                    .map(|v| v.iter().filter_map(Value::as_u64).collect())
                    .unwrap_or_default();
                let before = latest;
                latest = made.iter().copied().max().unwrap_or(latest).max(latest);
                if !label.starts_with("compact_files") {
                    continue;
                }
                // the options the generator passed (scripts/gen_golden_evolution.py)
                let mut opts = lancer_table::evolution::CompactionOptions::default();
                // "again (no-op)" repeats target 150
                if label.contains("target 150") || label.contains("again") {
                    opts.target_rows_per_fragment = 150;
                } else if label.contains("target 300") {
                    opts.target_rows_per_fragment = 300;
                }
                if label.contains("threshold 0.01") {
                    opts.materialize_deletions_threshold = 0.01;
                }
                // planned on the version before the step; none made: nothing to do
                let planned_on = before;
                let Ok(ds) = Dataset::open_version(&path, planned_on) else {
                    continue;
                };
                let plan = ds.plan_compaction(&opts).unwrap();
                let want: Vec<Vec<u64>> = match made.last() {
                    Some(&rw) => {
                        let v = versions.iter().find(|v| v["version"] == rw).unwrap();
                        v["manifest"]["transaction"]["op"]["groups"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|g| {
                                g["old_fragments"]
                                    .as_array()
                                    .unwrap()
                                    .iter()
                                    .map(|f| f["id"].as_u64().unwrap())
                                    .collect()
                            })
                            .collect()
                    }
                    None => Vec::new(),
                };
                assert_eq!(plan, want, "{}: {name} {label}", root.display());
                compared += 1;
            }
        }
    }
    assert!(compared >= 30, "{compared} compactions compared");
}

/// A BTREE index stays correct through a compaction (its bitmap keeps the old
/// fragments; the new ones are searched unindexed), in Lancer and in pylance.
#[test]
fn indexed_filters_stay_right_after_compaction() {
    indexed_compaction(false);
    // with stable row ids the index's ids stay valid: its bitmap moves to the new
    // fragment (no new segment)
    indexed_compaction(true);
}

fn indexed_compaction(stable: bool) {
    let scratch = TempDir::new(&format!("compact-idx-{stable}"));
    let tmp = scratch.join("ds");
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Int64, true),
    ]));
    let params = WriteParams {
        max_rows_per_file: 100,
        ..Default::default()
    };
    let batch = |from: i64, n: i64| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(from..from + n)),
                Arc::new(Int64Array::from_iter_values(
                    (from..from + n).map(|v| v % 7),
                )),
            ],
        )
        .unwrap()
    };
    let ds = if stable {
        match stable_dataset(&tmp, FileVersion::V2_1, &batch(0, 400), 100) {
            Some(d) => d,
            None => return,
        }
    } else {
        Dataset::write(&tmp, schema.clone(), &[batch(0, 400)], &params).unwrap()
    };
    assert_eq!(ds.uses_stable_row_ids(), stable);
    let opts = lancer::index::ScalarIndexOptions::new(lancer_index::scalar::ScalarKind::BTree);
    let ds = lancer::index::create_scalar_index(&ds, "id", &opts, None).unwrap();
    let ds = ds.append(&[batch(400, 50)], &params).unwrap();
    let ds = ds.delete("id % 10 = 3").unwrap();
    let copts = lancer_table::evolution::CompactionOptions {
        target_rows_per_fragment: 1000,
        ..Default::default()
    };
    let (after, stats) = lancer::write::compact_files(&ds, &copts, &|_, _| {}).unwrap();
    assert_eq!(
        stats.fragments_removed, 4,
        "{stats:?}: the indexed fragments, one task"
    );
    assert_eq!(
        after.fragments().len(),
        2,
        "the unindexed fragment alone is left"
    );
    for f in ["id < 120", "id >= 395 AND id < 410", "id = 13", "id = 14"] {
        let want = ds.scan().filter(f).to_batch().unwrap();
        let got = after.scan().filter(f).to_batch().unwrap();
        let ids = |b: &RecordBatch| {
            let mut v = b.column(0).as_primitive::<Int64Type>().values().to_vec();
            v.sort_unstable();
            v
        };
        assert_eq!(ids(&got), ids(&want), "{f}");
    }
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        let out = Command::new(&py)
            .arg("-c")
            .arg(
                "import lance, sys\n\
                 ds = lance.dataset(sys.argv[1])\n\
                 print(sorted(ds.to_table(filter='id < 120')['id'].to_pylist()) == [i for i in range(120) if i % 10 != 3], ds.count_rows(), len({i['name'] for i in ds.list_indices()}))",
            )
            .arg(&tmp)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.trim(),
            "True 405 1",
            "pylance {v}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
