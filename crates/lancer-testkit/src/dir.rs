//! Temporary directories removed on drop, and copying a directory tree into one.

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::Path;

/// Set (to anything) to keep every [`TempDir`] after its test, for a look at what the
/// test wrote; each kept directory is named on stderr.
pub const KEEP_VAR: &str = "LANCER_KEEP_TEMP";

/// A new, empty directory under the system's temporary directory, named
/// `lancer-<label>-<random>`, removed with its contents when dropped — when the test
/// passes and when it panics. Dereferences to its [`Path`], so `dir.join("ds")` works.
#[derive(Debug)]
pub struct TempDir {
    dir: Option<tempfile::TempDir>,
}

impl TempDir {
    /// A new directory; `label` (a test's name, say) appears in its name.
    pub fn new(label: &str) -> TempDir {
        let prefix = format!("lancer-{label}-");
        let dir = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot create a temporary directory {prefix}* under {}: {e}",
                    std::env::temp_dir().display()
                )
            });
        TempDir { dir: Some(dir) }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        match &self.dir {
            Some(d) => d.path(),
            None => unreachable!("the directory is only taken on drop"),
        }
    }
}

impl Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        self.path()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        self.path()
    }
}

impl AsRef<OsStr> for TempDir {
    fn as_ref(&self) -> &OsStr {
        self.path().as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else { return };
        if std::env::var_os(KEEP_VAR).is_some() {
            eprintln!("{KEEP_VAR}: kept {}", dir.keep().display());
            return;
        }
        let path = dir.path().to_path_buf();
        if let Err(e) = dir.close() {
            // Not a failure of the test (it may be unwinding already): said and left.
            eprintln!("could not remove {}: {e}", path.display());
        }
    }
}

/// Copies the directory tree `from` into `to` (created, with its parents, if missing;
/// files already there are overwritten).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("cannot create {}: {e}", to.display()));
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("cannot list {}: {e}", from.display()));
    for e in entries {
        let e = e.unwrap_or_else(|e| panic!("cannot list {}: {e}", from.display()));
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| {
                panic!("cannot copy {} to {}: {e}", src.display(), dst.display())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn removed_on_drop_even_when_the_test_panics() {
        let kept = std::env::var_os(KEEP_VAR).is_some();
        let d = TempDir::new("kit");
        let p = d.to_path_buf();
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::write(d.join("a/b/f"), b"x").unwrap();
        assert!(p
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("lancer-kit-"));
        drop(d);
        assert_eq!(p.exists(), kept);

        let p = std::panic::catch_unwind(|| {
            let d = TempDir::new("kit-panic");
            std::fs::write(d.join("f"), b"x").unwrap();
            std::panic::panic_any(d.to_path_buf());
        })
        .unwrap_err()
        .downcast::<PathBuf>()
        .unwrap();
        assert_eq!(p.exists(), kept);
    }

    #[test]
    fn copy_dir_copies_the_tree() {
        let from = TempDir::new("kit-from");
        std::fs::create_dir_all(from.join("x/y")).unwrap();
        std::fs::write(from.join("x/y/f"), b"deep").unwrap();
        std::fs::write(from.join("g"), b"top").unwrap();
        let to = TempDir::new("kit-to");
        copy_dir(&from, &to.join("copy"));
        assert_eq!(std::fs::read(to.join("copy/x/y/f")).unwrap(), b"deep");
        assert_eq!(std::fs::read(to.join("copy/g")).unwrap(), b"top");
    }
}
