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

/// Golden roots: the checked-in directory, plus the live one named by `live_var`
/// (written by scripts/test.sh). With LANCER_REQUIRE_PYLANCE set the live one must exist.
pub fn golden_roots(checked_in: PathBuf, live_var: &str) -> Vec<PathBuf> {
    let mut out = vec![checked_in];
    match std::env::var_os(live_var) {
        Some(live) => {
            let live = PathBuf::from(live);
            assert!(
                live.is_dir(),
                "{live_var} {} is not a directory",
                live.display()
            );
            out.push(live);
        }
        None => assert!(
            std::env::var_os("LANCER_REQUIRE_PYLANCE").is_none(),
            "LANCER_REQUIRE_PYLANCE is set but {live_var} is not: run scripts/test.sh"
        ),
    }
    out
}

/// An Arrow IPC file as one batch.
pub fn read_arrow(p: &Path) -> arrow_array::RecordBatch {
    let r = arrow_ipc::reader::FileReader::try_new(std::fs::File::open(p).unwrap(), None).unwrap();
    let schema = r.schema();
    let b: Vec<_> = r.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&schema, &b).unwrap()
}

/// One golden dataset: `<root>/<set>/<name>/` beside `<name>.expected/index.json`.
pub struct GoldenCase {
    /// `<set>/<name>`.
    pub label: String,
    /// The dataset directory.
    pub dataset: PathBuf,
    /// The directory of pylance's answers.
    pub expected: PathBuf,
    /// Its index.json.
    pub index: serde_json::Value,
}

impl GoldenCase {
    /// Versions the index lists.
    pub fn versions(&self) -> Vec<u64> {
        self.index["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_u64().unwrap())
            .collect()
    }

    /// A failure line when the dataset's versions differ from the index's.
    pub fn version_mismatch(&self) -> Option<String> {
        let got: Vec<u64> =
            lancer_table::versions::list_versions(&lancer_io::Store::local(&self.dataset))
                .unwrap()
                .iter()
                .map(|v| v.version)
                .collect();
        let want = self.versions();
        (got != want).then(|| format!("{}: versions {got:?}, expected {want:?}", self.label))
    }
}

/// Every golden dataset under `roots`, and how many set directories held them.
pub fn golden_cases(roots: &[PathBuf]) -> (Vec<GoldenCase>, usize) {
    let mut out = Vec::new();
    let mut sets = 0;
    for root in roots {
        let Ok(dirs) = std::fs::read_dir(root) else {
            continue;
        };
        for set in dirs.flatten() {
            let Ok(cases) = std::fs::read_dir(set.path()) else {
                continue;
            };
            sets += 1;
            for case in cases.flatten() {
                let exp = case.path();
                let Some(name) = exp
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".expected"))
                    .map(str::to_string)
                else {
                    continue;
                };
                let index =
                    serde_json::from_str(&std::fs::read_to_string(exp.join("index.json")).unwrap())
                        .unwrap();
                out.push(GoldenCase {
                    label: format!("{}/{name}", set.file_name().to_string_lossy()),
                    dataset: set.path().join(&name),
                    expected: exp,
                    index,
                });
            }
        }
    }
    (out, sets)
}

/// Copies the directory tree `from` into `to` (created if missing).
pub fn copy_dir(from: &Path, to: &Path) {
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
