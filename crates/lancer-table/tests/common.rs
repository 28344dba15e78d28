//! Helpers the table tests share: the repository root and the pylance oracles.

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python of the pylance `v` venv; None (test skipped, said on stderr) when it is
/// missing, unless LANCER_REQUIRE_PYLANCE is set, which makes that a failure.
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

/// Runs one `scripts/pylance_step.py` step on `root` with the pylance at `py`; it must
/// succeed. Returns its stdout.
pub fn pylance_step<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    py: &Path,
    root: &Path,
    args: &[S],
) -> Vec<u8> {
    let out = std::process::Command::new(py)
        .arg(repo().join("scripts/pylance_step.py"))
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        py.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
