//! `lancer-io`: the storage boundary ([`Store`], see [`storage`]) and byte-range readers.
//!
//! Implementations of [`lancer_format::read::RangeRead`]: [`MmapFile`] (a mapped data
//! file, the local default), [`LocalFile`] (positioned reads, no shared cursor, safe to
//! use from many threads) and [`Coalesce`], which
//! merges nearby ranges of one request into fewer, larger reads — the right trade on
//! object stores and spinning disks, where a request costs more than the bytes.

pub mod context;
mod mmap;
mod remote;
pub mod scratch;
pub mod storage;
mod upload;

pub use context::{Cache, CacheStats, Context, ContextOptions, StoreStats, WarningSink};
pub use mmap::{MmapFile, GATHER_BUDGET, GATHER_WINDOW, RELEASE_EVERY, SMALL_READ};
pub use storage::{DataWriter, Entry, StorageOptions, Store, StoreError};

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use lancer_format::read::{check_range, RangeRead};
use lancer_format::{FormatError, Result};

/// A local file read with positioned reads.
#[derive(Debug)]
pub struct LocalFile {
    file: File,
    size: u64,
    path: PathBuf,
}

impl LocalFile {
    /// Opens `path` for reading.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = open_file(&path)?;
        let size = file.metadata()?.len();
        Ok(Self { file, size, path })
    }

    /// The path this file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl RangeRead for LocalFile {
    fn size(&self) -> Result<u64> {
        Ok(self.size)
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        ranges
            .iter()
            .map(|r| {
                check_range(r, self.size)?;
                pread(&self.file, r, &self.path)
            })
            .collect()
    }
}

/// Opens `path` for reading; the error names it.
fn open_file(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| {
        FormatError::Io(std::io::Error::new(
            e.kind(),
            format!("cannot open {}: {e}", path.display()),
        ))
    })
}

/// Reads `r` (checked against the file's size) from `file` with one positioned read.
fn pread(file: &File, r: &Range<u64>, path: &Path) -> Result<Bytes> {
    let len = usize::try_from(r.end - r.start)
        .map_err(|_| FormatError::corrupt("read larger than memory"))?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, r.start).map_err(|e| {
        FormatError::Io(std::io::Error::new(
            e.kind(),
            format!("reading {}..{} of {}: {e}", r.start, r.end, path.display()),
        ))
    })?;
    Ok(Bytes::from(buf))
}

/// Merges ranges of one request that lie within `max_gap` bytes of each other.
#[derive(Debug)]
pub struct Coalesce<R> {
    inner: R,
    max_gap: u64,
}

impl<R: RangeRead> Coalesce<R> {
    /// Wraps `inner`; ranges closer than `max_gap` bytes are fetched together.
    pub fn new(inner: R, max_gap: u64) -> Self {
        Self { inner, max_gap }
    }

    /// The wrapped source.
    pub fn inner(&self) -> &R {
        &self.inner
    }
}

/// Plans the merged reads for `ranges`: returns the merged ranges and, for each input
/// range, the index of the merged range that holds it.
pub fn plan_coalesced(ranges: &[Range<u64>], max_gap: u64) -> (Vec<Range<u64>>, Vec<usize>) {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| (ranges[i].start, ranges[i].end));
    let mut merged: Vec<Range<u64>> = Vec::new();
    let mut owner = vec![0usize; ranges.len()];
    for i in order {
        let r = &ranges[i];
        match merged.last_mut() {
            Some(m) if r.start <= m.end.saturating_add(max_gap) => {
                m.end = m.end.max(r.end);
            }
            _ => merged.push(r.clone()),
        }
        owner[i] = merged.len() - 1;
    }
    (merged, owner)
}

impl<R: RangeRead> RangeRead for Coalesce<R> {
    fn size(&self) -> Result<u64> {
        self.inner.size()
    }

    fn prefetches(&self) -> bool {
        self.inner.prefetches()
    }

    fn prefetch(&self, ranges: &[Range<u64>]) -> Result<Option<lancer_format::read::Prefetched>> {
        self.inner.prefetch(ranges)
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let (merged, owner) = plan_coalesced(ranges, self.max_gap);
        let got = self.inner.read_ranges(&merged)?;
        ranges
            .iter()
            .zip(owner)
            .map(|(r, o)| {
                let (m, b) = (&merged[o], &got[o]);
                let s = usize::try_from(r.start - m.start)
                    .map_err(|_| FormatError::corrupt("offset overflow"))?;
                let e = usize::try_from(r.end - m.start)
                    .map_err(|_| FormatError::corrupt("offset overflow"))?;
                if e > b.len() {
                    return Err(FormatError::corrupt("storage returned a short read"));
                }
                Ok(b.slice(s..e))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_golden_file_decodes_the_same_through_a_local_object_store() {
        use lancer_format::reader::FileReader;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/files/pylance-14");
        let store = Store::open("memory://golden-decode/files", &StorageOptions::new());
        assert!(store.is_ok());
        let Ok(store) = store else { return };
        for name in [
            "structs.v2.2.lance",
            "strings.v2.1.lance",
            "vectors.v2.0.lance",
        ] {
            let bytes = std::fs::read(dir.join(name)).unwrap_or_default();
            assert!(store.put(name, Bytes::from(bytes)).is_ok());
            let obj = store.reader(name, None);
            let local = LocalFile::open(dir.join(name));
            let (Ok(obj), Ok(local)) = (obj, local) else {
                panic!("{name}: cannot open")
            };
            let a = FileReader::open(obj).and_then(|r| r.read_all(None));
            let b = FileReader::open(std::sync::Arc::new(local)).and_then(|r| r.read_all(None));
            assert!(a.is_ok() && b.is_ok());
            if let (Ok(a), Ok(b)) = (a, b) {
                assert_eq!(a, b, "{name}");
            }
        }
    }

    /// A scan-sized read of a remote file, prefetched, reads the same rows in far fewer
    /// requests; the held bytes go when the guard drops; sparse reads prefetch little.
    #[test]
    fn prefetched_reads_need_fewer_requests_and_read_the_same() {
        use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
        use lancer_format::reader::FileReader;
        use lancer_format::writer::WriteOptions;
        let Ok(store) = Store::open("memory://prefetch", &StorageOptions::new()) else {
            panic!("memory store")
        };
        let n = 300_000i64;
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..n).map(|i| i * 7919 % 1_000_003),
        ));
        let text: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("row {i} {}", "x".repeat((i % 13) as usize))),
        ));
        let batch = RecordBatch::try_from_iter([("id", ids), ("text", text)]);
        let Ok(batch) = batch else { panic!("batch") };
        let opts = WriteOptions {
            max_page_bytes: 256 * 1024,
            ..Default::default()
        };
        let w = DataWriter::create(&store, "f.lance", batch.schema(), opts);
        let Ok(mut w) = w else { panic!("writer") };
        assert!(w.write_batch(&batch).is_ok());
        assert!(w.finish().is_ok());
        let open = || {
            store
                .reader("f.lance", None)
                .map_err(FormatError::from)
                .and_then(FileReader::open)
        };
        let (Ok(plain), Ok(ahead)) = (open(), open()) else {
            panic!("open")
        };
        let whole = 0..n as u64;
        let all = std::slice::from_ref(&whole);
        let before = store.stats();
        let a = plain.read_ranges(all, None);
        let plain_requests = store.stats().since(&before).requests();
        let before = store.stats();
        let held = ahead.prefetch(all, None, u64::MAX);
        assert!(matches!(held, Ok(Some(_))), "a remote file prefetches");
        let b = ahead.read_ranges(all, None);
        let ahead_requests = store.stats().since(&before).requests();
        let (Ok(a), Ok(b)) = (a, b) else {
            panic!("read")
        };
        assert_eq!(a, b);
        eprintln!("whole-file read: {plain_requests} requests, prefetched {ahead_requests}");
        assert!(
            ahead_requests * 4 <= plain_requests,
            "prefetched {ahead_requests} requests, plain {plain_requests}"
        );
        // once the guard drops, reads go to the store again
        drop(held);
        let before = store.stats();
        let again = ahead.read_ranges(std::slice::from_ref(&(10..20)), Some(&["id"]));
        assert!(again.is_ok());
        assert!(store.stats().since(&before).requests() > 0);
        // a sparse take: rows in a few pages, which are not fetched whole
        let before = store.stats();
        let sparse = ahead.prefetch(&[5..6, 150_000..150_001], Some(&["text"]), u64::MAX);
        assert!(sparse.is_ok());
        assert!(store.stats().since(&before).bytes_read < 64 * 1024 * 4);
        // nor past the byte budget: nothing fetched
        let before = store.stats();
        assert!(matches!(ahead.prefetch(all, None, 1024 * 1024), Ok(None)));
        assert_eq!(store.stats().since(&before).requests(), 0);
    }

    #[test]
    fn object_store_reads_the_same_bytes() {
        let data = Bytes::from((0..=255u8).cycle().take(100_000).collect::<Vec<_>>());
        let store = Store::open("memory://read-ranges", &StorageOptions::new());
        assert!(store.is_ok());
        let Ok(store) = store else { return };
        assert!(store.put("a/b.lance", data.clone()).is_ok());
        let r = store.reader("a/b.lance", None);
        assert!(r.is_ok());
        if let Ok(r) = r {
            assert_eq!(r.size().ok(), Some(100_000));
            let got = r
                .read_ranges(&[10..20, 99_990..100_000, 500..700])
                .unwrap_or_default();
            assert_eq!(got[0], data.slice(10..20));
            assert_eq!(got[1], data.slice(99_990..100_000));
            assert_eq!(got[2], data.slice(500..700));
            assert!(r.read_range(99_999..100_001).is_err());
        }
    }

    #[test]
    fn coalesce_merges_close_ranges_and_returns_each() {
        let data = Bytes::from((0..=255u8).cycle().take(10_000).collect::<Vec<_>>());
        let c = Coalesce::new(lancer_format::read::TracingRead::new(data.clone()), 100);
        let ranges = vec![500..510, 0..10, 50..60, 5000..5001, 520..600];
        let got = c.read_ranges(&ranges).unwrap_or_default();
        for (r, b) in ranges.iter().zip(&got) {
            assert_eq!(&b[..], &data[r.start as usize..r.end as usize]);
        }
        // 0..10 and 50..60 merge; 500..600 merge; 5000 alone.
        assert_eq!(c.inner().ranges(), vec![0..60, 500..600, 5000..5001]);
    }

    #[test]
    fn local_file_reads_ranges_and_refuses_out_of_bounds() {
        let dir = lancer_testkit::TempDir::new("io-local");
        let p = dir.join("f.bin");
        std::fs::write(&p, b"hello lance world").unwrap_or(());
        let f = LocalFile::open(&p);
        assert!(f.is_ok());
        if let Ok(f) = f {
            let got = f.read_ranges(&[6..11, 0..5]).unwrap_or_default();
            assert_eq!(
                got,
                vec![Bytes::from_static(b"lance"), Bytes::from_static(b"hello")]
            );
            assert!(f.read_range(10..100).is_err());
        }
        assert!(LocalFile::open(dir.join("missing")).is_err());
    }
}
