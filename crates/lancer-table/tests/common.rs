//! Helpers the table tests share: pylance steps and the golden datasets (the repository
//! root, the pylance venvs, temporary directories and Arrow files come from
//! lancer-testkit).

use std::path::{Path, PathBuf};

pub use lancer_testkit::arrow::read_file as read_arrow;
pub use lancer_testkit::{copy_dir, pylance, repo, TempDir};

/// Runs one `scripts/pylance_step.py` step on `root` with the pylance at `py`; it must
/// succeed. Returns its stdout.
pub fn pylance_step<S: AsRef<std::ffi::OsStr>>(py: &Path, root: &Path, args: &[S]) -> Vec<u8> {
    let script = lancer_testkit::oracle::script("pylance_step.py");
    lancer_testkit::run_ok(
        std::process::Command::new(py)
            .arg(script)
            .arg(root)
            .args(args),
    )
    .stdout
}

/// Golden roots: the checked-in directory, plus the live one named by `live_var`
/// (written by scripts/test.sh). With LANCER_REQUIRE_PYLANCE set the live one must exist.
pub fn golden_roots(checked_in: PathBuf, live_var: &str) -> Vec<PathBuf> {
    let mut out = vec![checked_in];
    out.extend(lancer_testkit::oracle::live_dir(live_var));
    out
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
