//! Helpers shared by this crate's integration tests (one test binary).

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The checked-in golden directory `checked_in` (relative to the repository), then,
/// when the test script made them, the live `pylance-14/12/11` directories under the
/// path in `live_env` (with LANCER_REQUIRE_PYLANCE set, a missing one is a failure).
pub fn golden_roots(checked_in: &str, live_env: &str) -> Vec<PathBuf> {
    let mut out = vec![repo().join(checked_in)];
    if let Some(live) = std::env::var_os(live_env) {
        for v in ["14", "12", "11"] {
            let d = Path::new(&live).join(format!("pylance-{v}"));
            assert!(d.exists(), "{} missing", d.display());
            out.push(d);
        }
    } else {
        assert!(
            std::env::var_os("LANCER_REQUIRE_PYLANCE").is_none(),
            "{live_env} unset: run scripts/test.sh"
        );
    }
    out
}

/// The python of the pinned pylance `v` venv, or None (a failure with
/// LANCER_REQUIRE_PYLANCE) when it is missing.
pub fn pylance(v: &str) -> Option<PathBuf> {
    let py = repo().join(format!(".venv/pylance-{v}/bin/python"));
    if py.exists() {
        return Some(py);
    }
    assert!(
        std::env::var_os("LANCER_REQUIRE_PYLANCE").is_none(),
        "{} missing: run scripts/setup-python.sh",
        py.display()
    );
    eprintln!("SKIPPED: pylance {v} venv missing");
    None
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// The query vectors of a golden vector-index case (`queries[].query`).
pub fn case_queries(case: &serde_json::Value) -> Vec<Vec<f32>> {
    case["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            q["query"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}
