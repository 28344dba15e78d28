//! Scratch space: temporary local files for work larger than memory (an index build
//! spilling its partitions), removed when dropped. They live under
//! `$LANCER_SCRATCH_DIR` when set, else the system's temporary directory; they are
//! never part of a dataset.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use lancer_format::{FormatError, Result};

fn io(what: &str, path: &Path, e: std::io::Error) -> FormatError {
    FormatError::Io(std::io::Error::new(
        e.kind(),
        format!("scratch {what} {}: {e}", path.display()),
    ))
}

/// A private temporary directory, removed with everything in it on drop.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// Creates a new directory named after `purpose` under the scratch location.
    pub fn new(purpose: &str) -> Result<Self> {
        let base = std::env::var_os("LANCER_SCRATCH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for attempt in 0..100u32 {
            let dir = base.join(format!(
                "lancer-{purpose}-{}-{nanos:x}-{attempt}",
                std::process::id()
            ));
            match std::fs::create_dir_all(&base).and_then(|()| std::fs::create_dir(&dir)) {
                Ok(()) => return Ok(Self { dir }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io("directory", &dir, e)),
            }
        }
        Err(FormatError::corrupt(format!(
            "no free scratch directory name under {}",
            base.display()
        )))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Creates (or truncates) the file `name` in the directory.
    pub fn file(&self, name: &str) -> Result<ScratchFile> {
        let path = self.dir.join(name);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| io("file", &path, e))?;
        Ok(ScratchFile { file, path, len: 0 })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A scratch file: appended to, read back by ranges.
#[derive(Debug)]
pub struct ScratchFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl ScratchFile {
    /// Appends `bytes`; returns the offset they start at.
    pub fn append(&mut self, bytes: &[u8]) -> Result<u64> {
        let at = self.len;
        self.file
            .write_all_at(bytes, at)
            .map_err(|e| io("write to", &self.path, e))?;
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// Reads `len` bytes at `offset` (which must lie in what was appended).
    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        if offset.checked_add(len as u64).is_none_or(|e| e > self.len) {
            return Err(FormatError::corrupt(format!(
                "scratch read of {len} bytes at {offset} past the {} written to {}",
                self.len,
                self.path.display()
            )));
        }
        let mut out = vec![0u8; len];
        self.file
            .read_exact_at(&mut out, offset)
            .map_err(|e| io("read of", &self.path, e))?;
        Ok(out)
    }

    /// Bytes appended.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Appends through `Write` (for writers that stream into a scratch file).
impl Write for ScratchFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write_all_at(buf, self.len)?;
        self.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_read_back_and_the_directory_goes_away() {
        let s = Scratch::new("test").unwrap();
        let dir = s.path().to_path_buf();
        let mut f = s.file("a").unwrap();
        assert_eq!(f.append(b"hello ").unwrap(), 0);
        assert_eq!(f.append(b"world").unwrap(), 6);
        assert_eq!(f.read_at(6, 5).unwrap(), b"world");
        assert!(f.read_at(8, 5).is_err());
        drop(f);
        drop(s);
        assert!(!dir.exists());
    }
}
