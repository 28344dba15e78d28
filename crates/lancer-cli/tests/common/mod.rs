//! Helpers shared by the CLI's integration tests: the `lancer` binary of this build
//! (through lancer-testkit's runner: only this crate's tests can name the binary),
//! pylance 14 and the JSON the commands print. Temporary directories, venvs and
//! running commands come from lancer-testkit.
#![allow(dead_code, unused_imports)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use lancer_testkit::oracle::service;
pub use lancer_testkit::{pylance, run_ok as ok, stdout, Cli, TempDir};

/// The `lancer` binary of this build.
pub fn cli() -> Cli {
    Cli::new(env!("CARGO_BIN_EXE_lancer"))
}

/// A command running the `lancer` binary of this build.
pub fn lancer() -> Command {
    cli().command()
}

/// pylance 14's Python, when `scripts/setup-python.sh` installed it.
pub fn pylance14() -> Option<PathBuf> {
    pylance("14")
}

/// Runs Python `code` with `args` under pylance 14 (must succeed); its trimmed output,
/// or "" without pylance 14.
pub fn py(code: &str, args: &[&str]) -> String {
    let Some(py) = pylance14() else {
        return String::new();
    };
    lancer_testkit::oracle::run_python_code(&py, code, args)
        .trim()
        .to_string()
}

/// Runs `lancer ARGS PATH`, which must succeed, and parses its JSON output.
pub fn json_of(args: &[&str], path: &Path) -> serde_json::Value {
    let out = ok(lancer().args(args).arg(path));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The ids a JSON-lines output lists, in output order.
pub fn json_ids(out: &Output) -> Vec<i64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect()
}

/// Writes a CSV of `id,name` rows (`n{id}` names) for `ids` to `path`.
pub fn csv_of_ids(path: &Path, ids: std::ops::Range<i64>) {
    let mut s = String::from("id,name\n");
    for i in ids {
        s.push_str(&format!("{i},n{i}\n"));
    }
    std::fs::write(path, s).unwrap();
}
