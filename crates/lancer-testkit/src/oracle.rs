//! What the tests compare Lancer with and where it lives: the repository's fixtures,
//! the pinned pylance venvs (`scripts/setup-python.sh`), the live fixture directories
//! and test services `scripts/test.sh` exports, and running Python in those venvs.
//!
//! A missing venv, live directory or service skips the test (said on stderr) unless
//! `LANCER_REQUIRE_PYLANCE` is set, as under `scripts/test.sh`: then it is a failure.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::process::run_ok;

/// Set by `scripts/test.sh`: a missing venv or live fixture directory is a failure.
pub const REQUIRE_VAR: &str = "LANCER_REQUIRE_PYLANCE";

/// The repository root (the workspace's directory).
pub fn repo() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Whether missing oracles are failures (`LANCER_REQUIRE_PYLANCE` is set).
pub fn required() -> bool {
    std::env::var_os(REQUIRE_VAR).is_some()
}

/// The Python of the venv `.venv/<venv>` of the repository; None (the test skips, said
/// on stderr) when it is missing — a failure with `LANCER_REQUIRE_PYLANCE` set.
pub fn venv_python(venv: &str) -> Option<PathBuf> {
    let py = repo().join(".venv").join(venv).join("bin/python");
    if py.exists() {
        return Some(py);
    }
    assert!(
        !required(),
        "{} missing: run scripts/setup-python.sh",
        py.display()
    );
    eprintln!("SKIPPED: the {venv} venv is missing ({})", py.display());
    None
}

/// The Python of the pinned pylance `v` venv (`.venv/pylance-<v>`: 14, 12 or 11); None
/// (the test skips) when it is missing, a failure with `LANCER_REQUIRE_PYLANCE` set.
pub fn pylance(v: &str) -> Option<PathBuf> {
    venv_python(&format!("pylance-{v}"))
}

/// The repository's `scripts/<name>`.
pub fn script(name: &str) -> PathBuf {
    repo().join("scripts").join(name)
}

/// The directory the environment variable `var` names (a live fixture set
/// `scripts/test.sh` wrote with each pylance); it must exist when set. None when unset
/// (the live part of the test skips, said on stderr) — a failure with
/// `LANCER_REQUIRE_PYLANCE` set.
pub fn live_dir(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            assert!(dir.is_dir(), "{var}: {} is not a directory", dir.display());
            Some(dir)
        }
        None => {
            assert!(
                !required(),
                "{REQUIRE_VAR} is set but {var} is not: run scripts/test.sh"
            );
            eprintln!("SKIPPED: {var} unset (scripts/test.sh makes it)");
            None
        }
    }
}

/// The value of `var`, naming a test service the test script started (an S3 bucket,
/// say); None (the test skips, said on stderr) when unset — a failure instead when
/// the variable `required_var` is set, as under the test script. `what` names the
/// service in messages.
pub fn service(var: &str, required_var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) => Some(v),
        Err(_) => {
            assert!(
                std::env::var_os(required_var).is_none(),
                "{var} unset: run scripts/test.sh (it starts {what})"
            );
            eprintln!("SKIPPED: no {what} ({var} unset)");
            None
        }
    }
}

/// Runs `py ARGS` (a script and its arguments), which must succeed; returns its
/// standard output. A failure shows the command, its exit status, stderr and stdout.
pub fn run_python<I, S>(py: &Path, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = run_ok(Command::new(py).args(args));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs the Python snippet `code` (`py -c CODE ARGS`), which must succeed; returns its
/// standard output.
pub fn run_python_code<I, S>(py: &Path, code: &str, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = run_ok(Command::new(py).arg("-c").arg(code).args(args));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_root_holds_the_workspace() {
        let root = repo();
        assert!(root.join("Cargo.toml").is_file(), "{}", root.display());
        assert!(script("test.sh").is_file());
    }

    #[test]
    fn a_missing_venv_skips() {
        if required() {
            return; // there it is a failure, by design
        }
        assert_eq!(venv_python("no-such-venv"), None);
    }

    #[test]
    fn python_output_comes_back_and_failures_say_why() {
        // Any interpreter will do; the kit does not need pylance for this.
        let Some(py) = ["python3", "python"].into_iter().find(|p| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        }) else {
            eprintln!("SKIPPED: no python on PATH");
            return;
        };
        let py = Path::new(py);
        let out = run_python_code(py, "import sys; print(sys.argv[1:])", ["a", "b"]);
        assert_eq!(out.trim(), "['a', 'b']");
        let err = std::panic::catch_unwind(|| {
            run_python_code(py, "import sys; sys.exit('no good')", [] as [&str; 0])
        })
        .unwrap_err();
        let msg = err.downcast_ref::<String>().unwrap();
        assert!(
            msg.contains("no good") && msg.contains("exit status"),
            "{msg}"
        );
    }
}
