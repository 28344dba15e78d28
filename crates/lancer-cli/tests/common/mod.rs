//! Helpers shared by the CLI's integration tests: running the `lancer` binary and
//! pylance 14 (from the project's venv).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The `lancer` binary of this build.
pub fn lancer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lancer"))
}

/// Runs a command that must succeed (its stderr shown if not) and returns its output.
pub fn ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Standard output, trimmed.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// pylance 14's Python, when `scripts/setup-python.sh` installed it.
pub fn pylance14() -> Option<PathBuf> {
    pylance("14")
}

/// The Python of the pinned pylance `v` venv, when `scripts/setup-python.sh` installed
/// it (with LANCER_REQUIRE_PYLANCE set, a missing one is a failure).
pub fn pylance(v: &str) -> Option<PathBuf> {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../.venv/pylance-{v}/bin/python"));
    assert!(
        py.exists() || std::env::var_os("LANCER_REQUIRE_PYLANCE").is_none(),
        "{} missing: run scripts/setup-python.sh",
        py.display()
    );
    py.exists().then_some(py)
}

/// Runs Python `code` with `args` under pylance 14 (must succeed); its trimmed output,
/// or "" without pylance 14.
pub fn py(code: &str, args: &[&str]) -> String {
    let Some(py) = pylance14() else {
        return String::new();
    };
    let out = Command::new(py)
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pylance: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
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

/// The value of `var`, naming a test service the test script started; None (the
/// tests skip) when unset — a failure instead when `required` is set, as under the
/// test script. `what` names the service in messages.
pub fn service(var: &str, required: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) => Some(v),
        Err(_) => {
            assert!(
                std::env::var_os(required).is_none(),
                "{var} unset: run scripts/test.sh (it starts {what})"
            );
            eprintln!("SKIPPED: no {what} ({var} unset)");
            None
        }
    }
}
