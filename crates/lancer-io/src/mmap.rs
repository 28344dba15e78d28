//! A local data file mapped into memory ([`MmapFile`]): the fast local
//! [`RangeRead`], with the process-wide bookkeeping that keeps the pages it maps from
//! piling up in resident memory.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use bytes::Bytes;
use lancer_format::read::{check_range, RangeRead};
use lancer_format::{FormatError, Result};

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
/// other in the file as one) are copied out of the mapping instead, and so are the
/// ranges of [`RangeRead::read_ranges_into`] (a take gathering a vector per row): no
/// decoder holds their pages, so they are kept apart from the interval release — a
/// scattered take would otherwise map a fault-around window of pages per row and unmap
/// them all at the next release, kernel work many times the copy. Their pages are
/// counted instead by the fault-around window they map ([`GATHER_WINDOW`], each counted
/// once until released), and when the windows of all mappings pass [`GATHER_BUDGET`]
/// they are handed back. A query re-reading rows (a refine's vectors) then copies them
/// from resident pages without a system call, and the pages it keeps stay bounded.
///
/// Lance data files are immutable once written; mapping one that another process
/// truncates would fault, which is why [`crate::LocalFile`] remains available.
#[derive(Debug)]
pub struct MmapFile {
    map: Bytes,
    raw: Option<Arc<Mapping>>,
    path: PathBuf,
    /// The session's counters the reads are counted in (a store's data files).
    counters: Option<Arc<crate::context::Counters>>,
}

/// Ranges up to this long are copied out of the mapping, not handed out as slices of it.
pub const SMALL_READ: u64 = 16 << 10;

/// Bytes read through the process's mappings between two releases of their pages.
pub const RELEASE_EVERY: u64 = 8 << 20;

/// Resident pages of copied reads (see [`MmapFile`]) kept before they are handed back.
pub const GATHER_BUDGET: u64 = 1 << 30;

/// The pages a read fault maps around the faulting one (the kernel's default
/// `fault_around_bytes`), aligned to their size: the unit copied reads are counted in.
pub const GATHER_WINDOW: u64 = 64 << 10;

/// One mapping, the last interval (see [`MmapFile`]) in which it was read, and the
/// windows copied reads touched since its pages were last handed back.
#[derive(Debug)]
struct Mapping {
    map: memmap2::Mmap,
    read_in: AtomicU64,
    /// One bit per [`GATHER_WINDOW`] of the file (allocated on the first copied read).
    windows: OnceLock<Box<[AtomicU64]>>,
    /// Bytes of windows set in `windows`, also counted in [`GATHERED`].
    gathered: AtomicU64,
    /// Whether it is in [`GATHERED_IN`] (set when added, cleared when taken out, so a
    /// mapping released by a scan's interval is not listed twice).
    listed: AtomicBool,
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
        self.forget_windows();
        // SAFETY: the mapping is read-only, so no page holds data that is not in the
        // (immutable) file; a released page is re-read from the file on next access, so
        // slices handed out earlier keep their contents.
        let _ = unsafe {
            self.map
                .unchecked_advise(memmap2::UncheckedAdvice::DontNeed)
        };
    }

    /// Clears the windows copied reads touched and takes them off [`GATHERED`].
    fn forget_windows(&self) {
        if let Some(w) = self.windows.get() {
            for word in w.iter() {
                word.store(0, Ordering::Relaxed);
            }
        }
        let n = self.gathered.swap(0, Ordering::Relaxed);
        let _ = GATHERED.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |g| {
            Some(g.saturating_sub(n))
        });
    }

    /// Copies `r` (checked by the caller) to `out` and counts the windows it touched
    /// for the first time; returns the bytes of those windows.
    fn copy(&self, r: &Range<u64>, out: &mut Vec<u8>) -> u64 {
        // Both ends are within the mapping, whose length is a usize.
        out.extend_from_slice(&self.map[r.start as usize..r.end as usize]);
        self.touch(r)
    }

    /// Counts the windows `r` (checked by the caller) touches for the first time (a
    /// copied or lent read); returns the bytes of those windows.
    fn touch(&self, r: &Range<u64>) -> u64 {
        if r.start == r.end {
            return 0;
        }
        let words = self.windows.get_or_init(|| {
            let n = (self.map.len() as u64).div_ceil(GATHER_WINDOW).div_ceil(64);
            (0..n).map(|_| AtomicU64::new(0)).collect()
        });
        let mut new = 0;
        for w in r.start / GATHER_WINDOW..=(r.end - 1) / GATHER_WINDOW {
            let bit = 1u64 << (w % 64);
            let fresh = words
                .get((w / 64) as usize)
                .is_some_and(|word| word.fetch_or(bit, Ordering::Relaxed) & bit == 0);
            if fresh {
                new += GATHER_WINDOW;
            }
        }
        self.gathered.fetch_add(new, Ordering::Relaxed);
        new
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Its pages go with it.
        self.forget_windows();
    }
}

/// Bytes of windows copied reads touched in all mappings (see [`MmapFile`]).
static GATHERED: AtomicU64 = AtomicU64::new(0);
/// The mappings copied reads touched since the last time they were handed back.
static GATHERED_IN: Mutex<Vec<Weak<Mapping>>> = Mutex::new(Vec::new());

/// Counts `n` new bytes of windows touched in `m` by copied reads; past the budget,
/// hands back the pages of every mapping copied from.
fn account_copied(m: &Arc<Mapping>, n: u64) {
    if n == 0 {
        return;
    }
    if !m.listed.swap(true, Ordering::Relaxed) {
        GATHERED_IN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::downgrade(m));
    }
    if GATHERED.fetch_add(n, Ordering::Relaxed) + n >= GATHER_BUDGET {
        let all = std::mem::take(&mut *GATHERED_IN.lock().unwrap_or_else(|e| e.into_inner()));
        for m in all.iter().filter_map(Weak::upgrade) {
            m.listed.store(false, Ordering::Relaxed);
            m.release();
        }
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

/// Counts `n` bytes of pages read through `m` toward the next release (see
/// [`MmapFile`]).
fn account(m: &Arc<Mapping>, n: u64) {
    if n == 0 {
        return;
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
        let file = crate::open_file(&path)?;
        if file.metadata()?.len() == 0 {
            return Ok(Self {
                map: Bytes::new(),
                raw: None,
                path,
                counters: None,
            });
        }
        // SAFETY: the mapping is read-only and Lance files are never modified in place
        // after they are written (new versions write new files).
        let map = Arc::new(Mapping {
            map: unsafe { memmap2::Mmap::map(&file) }?,
            read_in: AtomicU64::new(0),
            windows: OnceLock::new(),
            gathered: AtomicU64::new(0),
            listed: AtomicBool::new(false),
        });
        Ok(Self {
            map: Bytes::from_owner(SharedMap(map.clone())),
            raw: Some(map),
            path,
            counters: None,
        })
    }

    /// Reads of this file counted in `counters` (a session's): one request per call
    /// and the bytes asked, as a read of the same ranges from an object store counts.
    pub(crate) fn counted(mut self, counters: Arc<crate::context::Counters>) -> Self {
        self.counters = Some(counters);
        self
    }

    fn count(&self, ranges: &[Range<u64>]) {
        if let Some(c) = &self.counters {
            let bytes: u64 = ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum();
            crate::context::Counters::add(&c.gets, 1);
            crate::context::Counters::add(&c.bytes_read, bytes);
        }
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
        self.count(ranges);
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
                let mut copy = Vec::with_capacity((run.end - run.start) as usize);
                account_copied(m, m.copy(&run, &mut copy));
                let bytes = Bytes::from(copy);
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
        account(m, n);
        Ok(out)
    }

    /// Reserves the whole read first (refused past memory), then copies what
    /// [`RangeRead::visit_ranges`] lends.
    fn read_ranges_into(&self, ranges: &[Range<u64>], out: &mut Vec<u8>) -> Result<()> {
        let size = self.map.len() as u64;
        let mut total = 0u64;
        for r in ranges {
            check_range(r, size)?;
            total = total.saturating_add(r.end - r.start);
        }
        // Bounded by the file's size times the number of ranges asked; a sum past
        // memory is refused before reserving.
        let total = usize::try_from(total)
            .map_err(|_| FormatError::corrupt("gathered read larger than memory"))?;
        out.try_reserve(total)
            .map_err(|_| FormatError::corrupt(format!("cannot hold a {total}-byte read")))?;
        self.visit_ranges(ranges, &mut |_, piece| {
            out.extend_from_slice(piece);
            Ok(())
        })
    }

    /// Lends the mapping's bytes, counted as copied reads are (no decoder keeps them).
    fn visit_ranges(
        &self,
        ranges: &[Range<u64>],
        f: &mut dyn FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        self.count(ranges);
        let Some(m) = &self.raw else {
            return self.map.visit_ranges(ranges, f);
        };
        let size = self.map.len() as u64;
        for r in ranges {
            check_range(r, size)?;
        }
        let mut new = 0;
        let mut out = Ok(());
        for (i, r) in ranges.iter().enumerate() {
            new += m.touch(r);
            // `check_range` bounds both ends by the mapping's length (a usize).
            out = f(i, &m.map[r.start as usize..r.end as usize]);
            if out.is_err() {
                break;
            }
        }
        account_copied(m, new);
        out
    }
}

#[cfg(test)]
mod tests {
    use lancer_testkit::TempDir;

    use super::*;

    /// A file of `len` bytes (`byte(i)` each) in a fresh directory for `tag`, mapped:
    /// the directory (removed when dropped), the bytes and the mapping.
    fn mapped(tag: &str, len: usize, byte: fn(usize) -> u8) -> (TempDir, Vec<u8>, MmapFile) {
        let dir = TempDir::new(&format!("io-{tag}"));
        let p = dir.join("f.bin");
        let data: Vec<u8> = (0..len).map(byte).collect();
        std::fs::write(&p, &data).unwrap_or(());
        let f = MmapFile::open(&p).unwrap_or_else(|e| panic!("cannot map {}: {e}", p.display()));
        (dir, data, f)
    }

    #[test]
    fn mapped_pages_released_keep_their_contents() {
        let len = (RELEASE_EVERY as usize) * 2 + 4097;
        let (_dir, data, f) = mapped("map", len, |i| (i * 31 % 251) as u8);
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
    }

    #[test]
    fn small_reads_are_copies_and_large_ones_slices() {
        let len = 4 * SMALL_READ as usize + 123;
        let (_dir, data, f) = mapped("small", len, |i| (i * 13 % 241) as u8);
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
        // Only the ranges over the threshold are slices of the mapping.
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
    }

    #[test]
    fn pages_are_handed_back_across_files() {
        let dir = TempDir::new("io-maps");
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
    }

    /// Bytes of windows counted for `f` by copied or lent reads.
    fn gathered(f: &MmapFile) -> u64 {
        f.raw
            .as_ref()
            .map_or(0, |m| m.gathered.load(Ordering::Relaxed))
    }

    #[test]
    fn gathered_reads_copy_and_count_each_window_once() {
        let len = 5 * GATHER_WINDOW as usize + 321;
        let (_dir, data, f) = mapped("gather", len, |i| (i * 17 % 239) as u8);
        let w = GATHER_WINDOW;
        // scattered rows, one across a window boundary, one empty, the file's tail
        let ranges = [
            10..3082,
            w - 5..w + 3067,
            3 * w..3 * w,
            4 * w + 7..4 * w + 100,
            len as u64 - 9..len as u64,
        ];
        let mut out = b"kept".to_vec();
        assert!(f.read_ranges_into(&ranges, &mut out).is_ok());
        let mut want = b"kept".to_vec();
        for r in &ranges {
            want.extend_from_slice(&data[r.start as usize..r.end as usize]);
        }
        assert_eq!(out, want);
        // windows 0, 1 (the boundary row), 4 and 5; the empty range touches none
        assert_eq!(gathered(&f), 4 * w);
        // the same rows again: nothing new counted
        let mut again = Vec::new();
        assert!(f.read_ranges_into(&ranges, &mut again).is_ok());
        assert_eq!(again, want[4..]);
        assert_eq!(gathered(&f), 4 * w);
        // a small read_ranges copies and counts too; a released mapping counts afresh
        let one = 2 * w + 1..2 * w + 9;
        let got = f
            .read_ranges(std::slice::from_ref(&one))
            .unwrap_or_default();
        assert_eq!(&got[0][..], &data[2 * w as usize + 1..2 * w as usize + 9]);
        assert_eq!(gathered(&f), 5 * w);
        f.release();
        assert_eq!(gathered(&f), 0);
        assert!(f.read_ranges_into(&ranges, &mut Vec::new()).is_ok());
        assert_eq!(gathered(&f), 4 * w);
        // out of bounds: refused, nothing appended
        let mut none = Vec::new();
        assert!(f
            .read_ranges_into(&[0..1, 0..len as u64 + 1], &mut none)
            .is_err());
        assert!(none.is_empty());
    }

    #[test]
    fn lent_reads_hand_out_the_file_bytes_and_count_their_windows() {
        let len = 3 * GATHER_WINDOW as usize + 77;
        let (_dir, data, f) = mapped("lend", len, |i| (i * 31 % 251) as u8);
        let w = GATHER_WINDOW;
        let ranges = [
            5..900,
            w - 3..w + 40,
            2 * w..2 * w,
            len as u64 - 7..len as u64,
        ];
        let mut seen = Vec::new();
        let r = f.visit_ranges(&ranges, &mut |i, b| {
            seen.push((i, b.to_vec()));
            Ok(())
        });
        assert!(r.is_ok());
        let want: Vec<(usize, Vec<u8>)> = ranges
            .iter()
            .enumerate()
            .map(|(i, r)| (i, data[r.start as usize..r.end as usize].to_vec()))
            .collect();
        assert_eq!(seen, want);
        // windows 0, 1 and 3 (the empty range touches none), as a copy counts them
        assert_eq!(gathered(&f), 3 * w);
        // the visitor's error stops the visit and is returned
        let mut calls = 0;
        let r = f.visit_ranges(&ranges, &mut |_, _| {
            calls += 1;
            Err(FormatError::corrupt("stop"))
        });
        assert!(r.is_err());
        assert_eq!(calls, 1);
        // out of bounds: refused before any range is handed out
        let mut called = false;
        let r = f.visit_ranges(&[0..1, 0..len as u64 + 1], &mut |_, _| {
            called = true;
            Ok(())
        });
        assert!(r.is_err());
        assert!(!called);
    }
}
