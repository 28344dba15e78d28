//! Mixed writers: 20 alternating commits by pylance (14, then 11) and Lancer on one
//! dataset; after all of them every version reads identically in both.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{BooleanArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::write::WriteParams;
use lancer_table::Dataset;

use crate::common::{pylance, pylance_step, repo, TempDir};

fn batch(start: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(start..start + n))],
    )
    .unwrap()
}

#[test]
fn twenty_alternating_commits_by_pylance_and_lancer() {
    for v in ["14", "11"] {
        let Some(py) = pylance(v) else { continue };
        let root = TempDir::new(&format!("table-mixed-{v}"));
        let b = batch(0, 10);
        Dataset::write(&root, b.schema(), &[b], &WriteParams::default()).unwrap();
        let step = |args: &[String]| pylance_step(&py, &root, args);
        let mut next = 10i64;
        for i in 0..20 {
            let lancer_turn = i % 2 == 0;
            let delete = i % 5 == 3;
            if lancer_turn {
                let ds = Dataset::open(&root).unwrap();
                if delete {
                    let target = next - 3;
                    ds.delete_where("id = target", move |b| {
                        let ids = b.column(0).as_primitive::<Int64Type>();
                        Ok(BooleanArray::from_iter(
                            ids.values().iter().map(|&x| Some(x == target)),
                        ))
                    })
                    .unwrap();
                } else {
                    ds.append(&[batch(next, 7)], &WriteParams::default())
                        .unwrap();
                    next += 7;
                }
            } else if delete {
                step(&["delete".into(), (next - 2).to_string()]);
            } else {
                step(&["append".into(), next.to_string(), "5".into()]);
                next += 5;
            }
        }
        // Every version, in both.
        let py_view: BTreeMap<String, (u64, i64)> =
            serde_json::from_slice(&step(&["verify".into()])).unwrap();
        assert_eq!(py_view.len(), 21, "pylance sees {} versions", py_view.len());
        for (ver, (rows, sum)) in &py_view {
            let ds = Dataset::open_version(&root, ver.parse().unwrap()).unwrap();
            let b = ds.to_batch(None).unwrap();
            let ids = b.column(0).as_primitive::<Int64Type>();
            assert_eq!(
                (b.num_rows() as u64, ids.values().iter().sum::<i64>()),
                (*rows, *sum),
                "pylance {v}, version {ver}"
            );
            assert_eq!(ds.count_rows(), *rows);
        }
    }
}

#[test]
fn indices_survive_lancer_commits() {
    let Some(py) = pylance("14") else { return };
    let root = TempDir::new("table-indexed");
    let b = batch(0, 100);
    Dataset::write(&root, b.schema(), &[b], &WriteParams::default()).unwrap();
    let step = |args: &[&str]| pylance_step(&py, &root, args);
    step(&["index"]);
    let ds = Dataset::open(&root).unwrap();
    assert!(ds.manifest().pb.index_section.is_some());
    let ds = ds
        .append(&[batch(100, 50)], &WriteParams::default())
        .unwrap();
    let ds = ds
        .delete_where("id = 7", |b| {
            let ids = b.column(0).as_primitive::<Int64Type>();
            Ok(BooleanArray::from_iter(
                ids.values().iter().map(|&x| Some(x == 7)),
            ))
        })
        .unwrap();
    let ds = ds.restore(ds.version() - 1).unwrap();
    assert!(ds.manifest().pb.index_section.is_some());
    for (id, hits) in [(5, 1), (7, 1), (120, 1)] {
        let v: serde_json::Value =
            serde_json::from_slice(&step(&["check-index", &id.to_string()])).unwrap();
        assert_eq!(v["indices"].as_array().map(|a| a.len()), Some(1), "{v}");
        assert_eq!(v["hits"], hits, "id {id}: {v}");
        assert_eq!(v["rows"], 150);
    }
}

#[test]
fn branches_written_by_pylance_read_in_lancer() {
    let Some(py) = pylance("14") else { return };
    let root = TempDir::new("table-branched");
    let b = batch(0, 20);
    Dataset::write(&root, b.schema(), &[b], &WriteParams::default()).unwrap();
    let out = pylance_step(&py, &root, &["branch", "dev", "500", "5"]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let want: Vec<i64> = v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    assert_eq!(
        lancer_table::versions::list_branches(&lancer_io::Store::local(&root)).unwrap(),
        vec!["dev".to_string()]
    );
    let ds = Dataset::open_branch(&root, "dev").unwrap();
    let got = ds.to_batch(None).unwrap();
    let ids: Vec<i64> = got.column(0).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(ids, want);
    // The main branch is unchanged.
    assert_eq!(Dataset::open(&root).unwrap().count_rows(), 20);
}

/// Datasets pylance evolved — fields without data files (add_columns of a schema),
/// dropped / renamed / cast columns, merged columns, constant list pages, data files of
/// several versions (reader flag 256) — go on being written by Lancer (append, in the
/// dataset's own storage version, 2.0 included; delete), and pylance 14
/// and 12 read every new version exactly as Lancer does; the mixed-versions flag stays
/// set while the versions differ.
#[test]
fn lancer_extends_datasets_pylance_evolved() {
    let src = match std::env::var_os("LANCER_GOLDEN_DATASETS_LIVE") {
        Some(live) => std::path::PathBuf::from(live).join("pylance-14"),
        None => repo().join("tests/data/datasets/pylance-14"),
    };
    let cases = [
        "evolve_2_1",
        "evolve_2_2",
        "list_repeat_2_1",
        "list_repeat_2_2",
        "evolve_2_0",
        "mixed_versions",
    ];
    for case in cases {
        // check_lancer_dataset.py writes pylance's copies beside `root`: in `scratch`
        let scratch = TempDir::new(&format!("table-extended-{case}"));
        let root = scratch.join(case);
        crate::common::copy_dir(&src.join(case), &root);
        let ds = Dataset::open(&root).unwrap();
        let first = ds.version();
        // (evolve_2_0 is appended to with 2.0 files, as its manifest says)
        let head = ds.to_batch(None).unwrap().slice(0, 50);
        let ds = ds.append(&[head], &WriteParams::default()).unwrap();
        let ds = ds
            .delete_where("id % 13 = 0", |b| {
                let ids = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                Ok(BooleanArray::from_iter(
                    ids.values().iter().map(|&x| Some(x % 13 == 0)),
                ))
            })
            .unwrap();
        let mixed = lancer_table::commit::mixed_file_versions(
            &ds.manifest().pb.fragments,
            &ds.storage_version().to_string(),
        );
        assert_eq!(
            ds.manifest().pb.reader_feature_flags & lancer_table::commit::FLAG_MIXED_FILE_VERSIONS
                != 0,
            mixed,
            "{case}: flag 256 must say whether file versions differ"
        );
        if case == "mixed_versions" {
            assert!(mixed, "{case}: the pylance-made mix is still there");
        }
        // What Lancer reads at each new version, for pylance to match.
        let exp = scratch.join(format!("{case}.expected"));
        std::fs::create_dir_all(&exp).unwrap();
        let mut versions = Vec::new();
        for v in first + 1..=ds.version() {
            let b = Dataset::open_version(&root, v)
                .unwrap()
                .to_batch(None)
                .unwrap();
            let f = std::fs::File::create(exp.join(format!("v{v}.arrow"))).unwrap();
            let mut w = arrow_ipc::writer::FileWriter::try_new(f, &b.schema()).unwrap();
            w.write(&b).unwrap();
            w.finish().unwrap();
            versions.push(serde_json::json!({"version": v, "rows": b.num_rows()}));
        }
        std::fs::write(
            exp.join("index.json"),
            serde_json::json!({"versions": versions, "tags": {}}).to_string(),
        )
        .unwrap();
        for v in ["14", "12"] {
            let Some(py) = pylance(v) else { continue };
            let out = std::process::Command::new(&py)
                .arg(repo().join("scripts/check_lancer_dataset.py"))
                .arg(&root)
                .arg(&exp)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "pylance {v} on Lancer's commits to {case}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
