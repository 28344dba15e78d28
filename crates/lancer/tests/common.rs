//! Helpers shared by this crate's integration tests (one test binary); temporary
//! directories, the pylance venvs and copying fixtures come from lancer-testkit.

use std::path::PathBuf;

pub use lancer_testkit::{copy_dir, pylance, repo, TempDir};

/// The checked-in golden directory `checked_in` (relative to the repository), then,
/// when the test script made them, the live `pylance-14/12/11` directories under the
/// path in `live_env` (with LANCER_REQUIRE_PYLANCE set, a missing one is a failure).
pub fn golden_roots(checked_in: &str, live_env: &str) -> Vec<PathBuf> {
    let mut out = vec![repo().join(checked_in)];
    if let Some(live) = lancer_testkit::oracle::live_dir(live_env) {
        for v in ["14", "12", "11"] {
            let d = live.join(format!("pylance-{v}"));
            assert!(d.exists(), "{} missing", d.display());
            out.push(d);
        }
    }
    out
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
