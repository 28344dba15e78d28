//! The `lancer` binary, one module per command (one test binary): on golden files
//! and datasets pylance wrote and read, its output equals pylance's; errors are one
//! line with a non-zero exit code; concurrent and killed writers lose nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;

mod cat;
mod concurrency;
mod global;
mod import_export;
mod index;
mod inspect;
mod search;
mod verify;

use std::path::PathBuf;

use common::lancer;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/files/pylance-14")
        .join(name)
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
