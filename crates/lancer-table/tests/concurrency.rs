//! Nothing lost: 8 writer processes x 50 commits (appends and deletes) on one dataset,
//! and writers killed at each point of a commit.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::versions::list_versions;
use lancer_table::write::WriteParams;
use lancer_table::Dataset;

fn worker_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lancer-commit-worker"))
}

fn new_dataset(root: &Path) -> Dataset {
    let _ = std::fs::remove_dir_all(root);
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    let b =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![-1]))]).unwrap();
    Dataset::write(root, schema, &[b], &WriteParams::default()).unwrap()
}

fn every_version_readable(root: &Path) {
    for v in list_versions(&lancer_io::Store::local(root)).unwrap() {
        let ds = Dataset::open_version(root, v.version).unwrap();
        let b = ds.to_batch(None).unwrap();
        assert_eq!(
            b.num_rows() as u64,
            ds.count_rows(),
            "version {}",
            v.version
        );
    }
}

#[test]
fn eight_processes_fifty_commits_each_lose_nothing() {
    let exe = worker_exe();
    assert!(exe.exists(), "{} not built", exe.display());
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/lancer-datasets/concurrent");
    new_dataset(&root);
    let (workers, commits) = (8, 50);
    let children: Vec<_> = (0..workers)
        .map(|w| {
            Command::new(&exe)
                .arg(&root)
                .arg(w.to_string())
                .arg(commits.to_string())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let ds = Dataset::open(&root).unwrap();
    let deletes_per_worker = commits / 5;
    let appends_per_worker = commits - deletes_per_worker;
    let want = 1 + workers * (appends_per_worker * 10 - deletes_per_worker);
    assert_eq!(
        ds.version(),
        1 + (workers * commits) as u64,
        "every commit is a version"
    );
    assert_eq!(ds.count_rows(), want as u64);
    assert_eq!(ds.to_batch(None).unwrap().num_rows(), want as usize);
    every_version_readable(&root);
}

#[test]
fn killed_writers_leave_a_readable_committed_version() {
    let exe = worker_exe();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/lancer-datasets/crash");
    new_dataset(&root);
    let mut committed = Dataset::open(&root).unwrap().count_rows();
    for point in ["after-data", "after-txn", "before-manifest"] {
        let before = Dataset::open(&root).unwrap().version();
        let st = Command::new(&exe)
            .arg(&root)
            .arg("1")
            .arg("1")
            .env("LANCER_CRASH_AT", point)
            .status()
            .unwrap();
        assert!(!st.success(), "{point}: the writer should have been killed");
        let ds = Dataset::open(&root).unwrap();
        assert_eq!(
            ds.version(),
            before,
            "{point}: no half-written version is visible"
        );
        assert_eq!(ds.count_rows(), committed);
        assert_eq!(ds.to_batch(None).unwrap().num_rows() as u64, committed);
        // The next writer succeeds.
        let st = Command::new(&exe)
            .arg(&root)
            .arg("2")
            .arg("1")
            .status()
            .unwrap();
        assert!(st.success(), "{point}: the next writer failed");
        committed += 10;
        assert_eq!(Dataset::open(&root).unwrap().count_rows(), committed);
    }
    every_version_readable(&root);
}
