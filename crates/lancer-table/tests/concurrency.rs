//! Nothing lost: 8 writer processes x 50 commits (appends and deletes) on one dataset,
//! and writers killed at each point of a commit.
//!
//! The writer processes are this test binary run again (see [`commit_worker`]): no
//! test-only executable ships with the crate.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{BooleanArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::versions::list_versions;
use lancer_table::write::WriteParams;
use lancer_table::{Dataset, TableError};

use crate::common::TempDir;

/// Set in a writer process: `ROOT WORKER N`, tab-separated (see [`commit_worker`]).
const WORKER_VAR: &str = "LANCER_COMMIT_WORKER";

/// A writer process making `n` commits to the dataset at `root` as worker `worker`:
/// this test binary, running only [`commit_worker`]. Its libtest report on stdout is
/// dropped; stderr (the worker's errors) is the test's.
fn worker(root: &Path, worker: i64, n: i64) -> Command {
    let exe = std::env::current_exe().unwrap();
    assert!(exe.exists(), "{} not found", exe.display());
    let mut c = Command::new(exe);
    c.args([
        "--exact",
        "concurrency::commit_worker",
        "--include-ignored",
        "--test-threads=1",
        "--nocapture",
    ])
    .env(
        WORKER_VAR,
        format!("{}\t{worker}\t{n}", root.to_str().unwrap()),
    )
    .stdout(Stdio::null());
    c
}

fn batch(ids: Vec<i64>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(ids))]).unwrap()
}

/// One writer process of the tests below (not a test itself: it does nothing unless
/// [`worker`] started this binary for it). With `LANCER_COMMIT_WORKER=ROOT\tWORKER\tN` it
/// makes N commits to the dataset at ROOT: appends of 10 rows (ids
/// `WORKER * 1_000_000 + i * 10 + k`) and, every fifth commit, a delete of the first
/// row of its previous append. Conflicts are retried from the latest version. With
/// `LANCER_CRASH_AT=<point>` it aborts at that point of its first commit (`after-data`,
/// `after-txn`, `before-manifest`), as a killed writer would; any other error exits 1.
#[test]
#[ignore = "a writer process the concurrency tests start; does nothing on its own"]
fn commit_worker() {
    let Ok(spec) = std::env::var(WORKER_VAR) else {
        return;
    };
    let args: Vec<&str> = spec.split('\t').collect();
    let root = args[0];
    let worker: i64 = args[1].parse().unwrap();
    let n: i64 = args[2].parse().unwrap();
    let params = WriteParams::default();
    let mut done = 0;
    let mut i = 0;
    while done < n {
        let result = (|| -> lancer_table::Result<()> {
            let ds = Dataset::open(root)?;
            if i % 5 == 4 {
                let target = worker * 1_000_000 + (i - 1) * 10;
                ds.delete_where(&format!("id = {target}"), |b: &RecordBatch| {
                    let ids = b.column(0).as_primitive::<Int64Type>();
                    Ok(BooleanArray::from_iter(
                        ids.values().iter().map(|&x| Some(x == target)),
                    ))
                })?;
            } else {
                let ids: Vec<i64> = (0..10).map(|k| worker * 1_000_000 + i * 10 + k).collect();
                ds.append(&[batch(ids)], &params)?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                done += 1;
                i += 1;
            }
            Err(TableError::Conflict { .. }) => continue,
            Err(e) => {
                eprintln!("worker {worker}: {e}");
                std::process::exit(1);
            }
        }
    }
}

fn new_dataset(root: &Path) -> Dataset {
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
    let dir = TempDir::new("table-concurrent");
    let root: PathBuf = dir.join("ds");
    new_dataset(&root);
    let (workers, commits) = (8, 50);
    let children: Vec<_> = (0..workers)
        .map(|w| worker(&root, w, commits).spawn().unwrap())
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
    let dir = TempDir::new("table-crash");
    let root: PathBuf = dir.join("ds");
    new_dataset(&root);
    let mut committed = Dataset::open(&root).unwrap().count_rows();
    for point in ["after-data", "after-txn", "before-manifest"] {
        let before = Dataset::open(&root).unwrap().version();
        let st = worker(&root, 1, 1)
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
        let st = worker(&root, 2, 1).status().unwrap();
        assert!(st.success(), "{point}: the next writer failed");
        committed += 10;
        assert_eq!(Dataset::open(&root).unwrap().count_rows(), committed);
    }
    every_version_readable(&root);
}
