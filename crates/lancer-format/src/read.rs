//! The byte-range boundary between decoding and storage.
//!
//! Decoders never open files: they ask a [`RangeRead`] for the byte ranges they need
//! (several at once, so that a storage layer can coalesce and parallelise them).
//! [`TracingRead`] wraps any source and records which ranges a read touched, so that
//! tests, benchmarks and the CLI inspector can show and check the I/O a read caused.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::{FormatError, Result};

/// What [`RangeRead::prefetch`] returns: the fetched bytes stay available to reads
/// while it is alive, and are let go when it drops.
pub type Prefetched = Box<dyn std::any::Any + Send + Sync>;

/// A source of bytes addressed by absolute file offsets.
pub trait RangeRead: Send + Sync {
    /// Whether [`RangeRead::prefetch`] does anything here (sources where a request
    /// costs more than its bytes, such as object stores); callers skip working out
    /// what to prefetch otherwise.
    fn prefetches(&self) -> bool {
        false
    }

    /// Fetches `ranges` now, in as few requests as suit the source, and serves reads
    /// that fall inside them from memory while the returned guard lives. The default
    /// (local sources) fetches nothing.
    fn prefetch(&self, ranges: &[Range<u64>]) -> Result<Option<Prefetched>> {
        let _ = ranges;
        Ok(None)
    }

    /// Total size in bytes.
    fn size(&self) -> Result<u64>;

    /// Returns the bytes of each range, in the order asked. Every range must lie within
    /// `0..size()`; implementations return an error otherwise.
    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>>;

    /// Appends the bytes of each range, in the order asked, to `out`. For callers that
    /// gather many small ranges into one buffer (a take of fixed-width values): a source
    /// that lends its bytes is copied from straight into it. The default appends what
    /// [`RangeRead::visit_ranges`] hands over.
    fn read_ranges_into(&self, ranges: &[Range<u64>], out: &mut Vec<u8>) -> Result<()> {
        self.visit_ranges(ranges, &mut |_, piece| {
            out.extend_from_slice(piece);
            Ok(())
        })
    }

    /// Hands `f` the bytes of each range in turn (its index in `ranges`, its bytes),
    /// without keeping them: for callers that pick a few values out of each range (a
    /// sparse take). A source that can lend its bytes (a mapped file) lends them; the
    /// default reads them with [`RangeRead::read_ranges`]. Stops at `f`'s first error.
    fn visit_ranges(
        &self,
        ranges: &[Range<u64>],
        f: &mut dyn FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        for (i, piece) in self.read_ranges(ranges)?.iter().enumerate() {
            f(i, piece)?;
        }
        Ok(())
    }

    /// Reads one range.
    fn read_range(&self, range: Range<u64>) -> Result<Bytes> {
        let mut v = self.read_ranges(std::slice::from_ref(&range))?;
        v.pop()
            .ok_or_else(|| FormatError::corrupt("byte source returned no data for a range"))
    }
}

/// Checks that `range` is well-formed and inside a source of `size` bytes.
pub fn check_range(range: &Range<u64>, size: u64) -> Result<()> {
    if range.start > range.end || range.end > size {
        return Err(FormatError::OutOfRange {
            what: format!("byte range {range:?} of a {size}-byte file"),
        });
    }
    Ok(())
}

impl RangeRead for Bytes {
    fn size(&self) -> Result<u64> {
        Ok(self.len() as u64)
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let size = self.len() as u64;
        ranges
            .iter()
            .map(|r| {
                check_range(r, size)?;
                // Both ends are <= len, which fits in usize.
                Ok(self.slice(r.start as usize..r.end as usize))
            })
            .collect()
    }
}

impl<T: RangeRead + ?Sized> RangeRead for Arc<T> {
    fn size(&self) -> Result<u64> {
        (**self).size()
    }

    fn prefetches(&self) -> bool {
        (**self).prefetches()
    }

    fn prefetch(&self, ranges: &[Range<u64>]) -> Result<Option<Prefetched>> {
        (**self).prefetch(ranges)
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        (**self).read_ranges(ranges)
    }

    fn read_ranges_into(&self, ranges: &[Range<u64>], out: &mut Vec<u8>) -> Result<()> {
        (**self).read_ranges_into(ranges, out)
    }

    fn visit_ranges(
        &self,
        ranges: &[Range<u64>],
        f: &mut dyn FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        (**self).visit_ranges(ranges, f)
    }
}

/// Wraps a source and records every range read through it.
pub struct TracingRead<R> {
    inner: R,
    log: Mutex<Vec<Range<u64>>>,
}

impl<R: RangeRead> TracingRead<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            log: Mutex::new(Vec::new()),
        }
    }

    /// The ranges read so far, in request order.
    pub fn ranges(&self) -> Vec<Range<u64>> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Total bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.ranges().iter().map(|r| r.end - r.start).sum()
    }

    /// Forgets the ranges recorded so far.
    pub fn clear(&self) {
        if let Ok(mut l) = self.log.lock() {
            l.clear();
        }
    }
}

impl<R: RangeRead> RangeRead for TracingRead<R> {
    fn size(&self) -> Result<u64> {
        self.inner.size()
    }

    fn prefetches(&self) -> bool {
        self.inner.prefetches()
    }

    fn prefetch(&self, ranges: &[Range<u64>]) -> Result<Option<Prefetched>> {
        self.inner.prefetch(ranges)
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if let Ok(mut l) = self.log.lock() {
            l.extend(ranges.iter().cloned());
        }
        self.inner.read_ranges(ranges)
    }

    fn visit_ranges(
        &self,
        ranges: &[Range<u64>],
        f: &mut dyn FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        if let Ok(mut l) = self.log.lock() {
            l.extend(ranges.iter().cloned());
        }
        self.inner.visit_ranges(ranges, f)
    }
}
