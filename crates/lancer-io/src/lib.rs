//! `lancer-io`: the storage boundary ([`Store`], see [`storage`]) and byte-range readers.
//!
//! Implementations of [`lancer_format::read::RangeRead`]: [`LocalFile`] (positioned
//! reads, no shared cursor, safe to use from many threads) and [`Coalesce`], which
//! merges nearby ranges of one request into fewer, larger reads — the right trade on
//! object stores and spinning disks, where a request costs more than the bytes.

pub mod scratch;
pub mod storage;

pub use storage::{DataWriter, Entry, StorageOptions, Store, StoreError, StoreStats};

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

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
        let file = File::open(&path).map_err(|e| {
            FormatError::Io(std::io::Error::new(
                e.kind(),
                format!("cannot open {}: {e}", path.display()),
            ))
        })?;
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

/// A local file mapped into memory: reads are zero-copy slices of the mapping, so a
/// decoder can hand file bytes straight to Arrow (e.g. a vector column's values).
///
/// Mapped pages a process has touched count toward its resident memory until they are
/// unmapped, so a scan would look like it holds every file it read (a dataset handle
/// keeps its files open). The process therefore counts the bytes read through all its
/// mappings, and at the end of every interval of [`RELEASE_EVERY`] bytes hands back to
/// the kernel (`MADV_DONTNEED`) the pages of every mapping read in the interval before:
/// by then decoders are done with the slices they took (releasing the current
/// interval's mappings would make them fault pages in again). The data
/// stay in the page cache, and a later access of a released page — including through
/// slices handed out earlier — maps it again from the file. Resident mapped memory thus
/// stays near two intervals plus what decoders hold, however many files a scan spans.
///
/// Ranges of at most [`SMALL_READ`] bytes (counting a run of ranges that follow each
/// other in the file as one) are copied with a positioned read instead: a scattered
/// take (a vector per row) would otherwise map a fault-around window of pages per row
/// and unmap them all at the next release — kernel work many times the copy.
///
/// Lance data files are immutable once written; mapping one that another process
/// truncates would fault, which is why [`LocalFile`] remains available.
#[derive(Debug)]
pub struct MmapFile {
    map: Bytes,
    raw: Option<Arc<Mapping>>,
    file: File,
    path: PathBuf,
}

/// Ranges up to this long are read with a positioned read, not through the mapping.
pub const SMALL_READ: u64 = 16 << 10;

/// Bytes read through the process's mappings between two releases of their pages.
pub const RELEASE_EVERY: u64 = 8 << 20;

/// One mapping and the last interval (see [`MmapFile`]) in which it was read.
#[derive(Debug)]
struct Mapping {
    map: memmap2::Mmap,
    read_in: AtomicU64,
}

/// The page size the release accounting assumes.
const PAGE: u64 = 4096;

/// Ranges at least this long are mapped in with one call ([`Mapping::populate`]).
const POPULATE_FROM: u64 = 256 << 10;

impl Mapping {
    /// Maps the pages of a long range in one call (`MADV_POPULATE_READ`), where the
    /// decoder would otherwise take one page fault per 4 KiB; a kernel without it
    /// leaves the pages to fault in on access as before.
    fn populate(&self, r: &Range<u64>) {
        let len = r.end.saturating_sub(r.start);
        if len < POPULATE_FROM {
            return;
        }
        let (Ok(start), Ok(len)) = (usize::try_from(r.start), usize::try_from(len)) else {
            return;
        };
        let _ = self
            .map
            .advise_range(memmap2::Advice::PopulateRead, start, len);
    }

    /// Hands the mapping's resident pages back (see [`MmapFile`]).
    #[allow(unsafe_code)]
    fn release(&self) {
        // SAFETY: the mapping is read-only, so no page holds data that is not in the
        // (immutable) file; a released page is re-read from the file on next access, so
        // slices handed out earlier keep their contents.
        let _ = unsafe {
            self.map
                .unchecked_advise(memmap2::UncheckedAdvice::DontNeed)
        };
    }
}

/// Bytes read through all mappings since the last release.
static READ_SINCE_RELEASE: AtomicU64 = AtomicU64::new(0);
/// The current interval between releases (starts at 1; 0 = never read).
static INTERVAL: AtomicU64 = AtomicU64::new(1);
/// The mappings read in the current and in the previous interval (dropped ones are
/// skipped when released).
static READ_IN: Mutex<[Vec<Weak<Mapping>>; 2]> = Mutex::new([Vec::new(), Vec::new()]);

/// Ends the current interval: releases the pages of every mapping read in the previous
/// one.
fn release_read_mappings() {
    let before = {
        let mut lists = READ_IN.lock().unwrap_or_else(|e| e.into_inner());
        INTERVAL.fetch_add(1, Ordering::Relaxed);
        let now = std::mem::take(&mut lists[0]);
        std::mem::replace(&mut lists[1], now)
    };
    for m in before.iter().filter_map(Weak::upgrade) {
        m.release();
    }
}

/// Lets `Bytes` own a shared mapping.
struct SharedMap(Arc<Mapping>);

impl AsRef<[u8]> for SharedMap {
    fn as_ref(&self) -> &[u8] {
        &self.0.map
    }
}

impl MmapFile {
    /// Maps `path`.
    #[allow(unsafe_code)]
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| {
            FormatError::Io(std::io::Error::new(
                e.kind(),
                format!("cannot open {}: {e}", path.display()),
            ))
        })?;
        if file.metadata()?.len() == 0 {
            return Ok(Self {
                map: Bytes::new(),
                raw: None,
                file,
                path,
            });
        }
        // SAFETY: the mapping is read-only and Lance files are never modified in place
        // after they are written (new versions write new files).
        let map = Arc::new(Mapping {
            map: unsafe { memmap2::Mmap::map(&file) }?,
            read_in: AtomicU64::new(0),
        });
        Ok(Self {
            map: Bytes::from_owner(SharedMap(map.clone())),
            raw: Some(map),
            file,
            path,
        })
    }

    /// The path this file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hands this mapping's resident pages back to the kernel now (see the type's docs).
    pub fn release(&self) {
        if let Some(m) = &self.raw {
            m.release();
        }
    }
}

impl RangeRead for MmapFile {
    fn size(&self) -> Result<u64> {
        Ok(self.map.len() as u64)
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let Some(m) = &self.raw else {
            return self.map.read_ranges(ranges);
        };
        let size = self.map.len() as u64;
        let mut out = Vec::with_capacity(ranges.len());
        // Count the pages touched, not the bytes asked: scattered mapped reads map a
        // whole page each.
        let mut n = 0u64;
        // Runs of ranges that follow each other in the file (a page's chunks) are
        // read as one: through the mapping when the run is long, else one copy.
        let mut i = 0;
        while i < ranges.len() {
            let mut j = i + 1;
            while j < ranges.len() && ranges[j].start == ranges[j - 1].end {
                j += 1;
            }
            let run = ranges[i].start..ranges[j - 1].end;
            for r in &ranges[i..j] {
                check_range(r, size)?;
            }
            if run.end - run.start <= SMALL_READ {
                let bytes = pread(&self.file, &run, &self.path)?;
                for r in &ranges[i..j] {
                    let at = (r.start - run.start) as usize;
                    out.push(bytes.slice(at..at + (r.end - r.start) as usize));
                }
            } else {
                for r in &ranges[i..j] {
                    // `check_range` bounds both ends by the mapping's length (a usize).
                    out.push(self.map.slice(r.start as usize..r.end as usize));
                }
                m.populate(&run);
                n += (run.end.div_ceil(PAGE) - run.start / PAGE) * PAGE;
            }
            i = j;
        }
        if n == 0 {
            return Ok(out);
        }
        let interval = INTERVAL.load(Ordering::Relaxed);
        if m.read_in.swap(interval, Ordering::Relaxed) != interval {
            READ_IN.lock().unwrap_or_else(|e| e.into_inner())[0].push(Arc::downgrade(m));
        }
        let before = READ_SINCE_RELEASE.fetch_add(n, Ordering::Relaxed);
        if before + n >= RELEASE_EVERY
            && READ_SINCE_RELEASE
                .compare_exchange(before + n, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            release_read_mappings();
        }
        Ok(out)
    }
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
        let dir = std::env::temp_dir().join(format!("lancer-io-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
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

    #[test]
    fn mapped_pages_released_keep_their_contents() {
        let dir = std::env::temp_dir().join(format!("lancer-io-map-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("big.bin");
        let len = (RELEASE_EVERY as usize) * 2 + 4097;
        let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap_or(());
        let f = MmapFile::open(&p);
        assert!(f.is_ok(), "cannot map {}", p.display());
        let Ok(f) = f else { return };
        // Hold slices across several releases; they read back the file's bytes.
        let chunk = 1 << 20;
        let mut held = Vec::new();
        for start in (0..len).step_by(chunk) {
            let end = (start + chunk).min(len) as u64;
            held.push((start, f.read_range(start as u64..end).unwrap_or_default()));
        }
        f.release();
        for (start, b) in &held {
            assert_eq!(&b[..], &data[*start..*start + b.len()]);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn small_reads_are_copied_and_large_ones_mapped() {
        let dir = std::env::temp_dir().join(format!("lancer-io-small-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("f.bin");
        let len = 4 * SMALL_READ as usize + 123;
        let data: Vec<u8> = (0..len).map(|i| (i * 13 % 241) as u8).collect();
        std::fs::write(&p, &data).unwrap_or(());
        let f = MmapFile::open(&p);
        assert!(f.is_ok(), "cannot map {}", p.display());
        let Ok(f) = f else { return };
        let s = SMALL_READ;
        let ranges = [
            7..7 + s,
            3..3,
            100..101,
            9..10 + s,
            0..len as u64,
            s..2 * s + 1,
            // a run of small ranges following each other: long, so mapped
            5..6,
            6..6 + s / 2,
            6 + s / 2..6 + s + 1,
            // a short run: one copy
            40..50,
            50..60,
        ];
        let got = f.read_ranges(&ranges).unwrap_or_default();
        assert_eq!(got.len(), ranges.len());
        for (r, b) in ranges.iter().zip(&got) {
            assert_eq!(&b[..], &data[r.start as usize..r.end as usize], "{r:?}");
        }
        // Only the ranges over the threshold went through the mapping.
        let mapped = |b: &Bytes| {
            let base = f.map.as_ptr() as usize;
            (base..base + len).contains(&(b.as_ptr() as usize))
        };
        let through: Vec<bool> = got.iter().map(mapped).collect();
        assert_eq!(
            through,
            [false, false, false, true, true, true, true, true, true, false, false]
        );
        assert!(f.read_ranges(&[0..1, len as u64..len as u64 + 1]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn pages_are_handed_back_across_files() {
        let dir = std::env::temp_dir().join(format!("lancer-io-maps-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let len = (RELEASE_EVERY as usize) / 2 + 4097;
        let files: Vec<MmapFile> = (0..3)
            .filter_map(|k| {
                let p = dir.join(format!("f{k}.bin"));
                let data: Vec<u8> = (0..len).map(|i| ((i + k) * 7 % 253) as u8).collect();
                std::fs::write(&p, &data).ok()?;
                MmapFile::open(&p).ok()
            })
            .collect();
        assert_eq!(
            files.len(),
            3,
            "cannot map the test files in {}",
            dir.display()
        );
        let early = files[0].read_range(0..len as u64).unwrap_or_default();
        let _ = files[1].read_range(0..len as u64);
        // Listed until released at the end of the interval after the one it was last
        // read in.
        let listed = |f: &MmapFile| {
            f.raw.as_ref().is_some_and(|m| {
                m.read_in.load(Ordering::Relaxed) + 2 > INTERVAL.load(Ordering::Relaxed)
            })
        };
        // Reading on through another file hands the first file's pages back within a
        // bounded number of bytes (other tests of this binary may share the counter).
        let mut read = 0u64;
        while listed(&files[0]) && read < 4 * RELEASE_EVERY {
            let _ = files[2].read_range(0..len as u64);
            read += len as u64;
        }
        assert!(
            !listed(&files[0]),
            "the first mapping was never handed back"
        );
        let want: Vec<u8> = (0..len).map(|i| (i * 7 % 253) as u8).collect();
        assert_eq!(
            &early[..],
            &want[..],
            "a slice read before the hand-back changed"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
