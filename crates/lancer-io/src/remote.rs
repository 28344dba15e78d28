//! Ranged reads of one object in an object store (`Store::reader` for `s3://`, `gs://`,
//! `az://`, `memory://`): ranges of a call fetched concurrently, nearby ones merged
//! (256 KiB), the footer's tail and prefetched spans held for the reads that follow
//! (reference "File format": a reader fetches the footer, then column metadata, then
//! pages), transport failures of idempotent requests retried.

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use bytes::Bytes;
use lancer_format::read::{check_range, Prefetched, RangeRead};
use lancer_format::FormatError;
use object_store::path::Path as OPath;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::context::{Context, Counters};
use crate::storage::REMOTE_GAP;

/// One object of an object store read by ranges: each range one request, the ranges of
/// a call fetched concurrently.
pub(crate) struct RemoteFile {
    store: Arc<dyn ObjectStore>,
    path: OPath,
    size: u64,
    ctx: Arc<Context>,
    shown: String,
    /// The file's last [`TAIL`] bytes, fetched with the first read that falls there:
    /// opening a file reads its footer, then its metadata and schema, which sit at
    /// the end — one request instead of several round trips.
    tail: OnceLock<Bytes>,
    /// Spans fetched ahead by [`RangeRead::prefetch`], alive while the caller's guard
    /// is: reads inside one are served from memory.
    held: Mutex<Vec<Weak<Held>>>,
}

/// One span of a remote file fetched ahead.
struct Held {
    start: u64,
    bytes: Bytes,
}

/// Bytes at the end of a remote file fetched in one request when any of them is read.
/// (256 KiB: the column metadata of a 12,500-row, five-column file with a 128-d vector
/// is ~140 KB; with 64 KiB it took two more round trips per file.)
const TAIL: u64 = 256 * 1024;
/// Prefetched ranges closer than this are fetched together (a scan's pages of several
/// columns: one request per span instead of one per column and page).
const PREFETCH_GAP: u64 = 1024 * 1024;
/// A prefetched span is fetched in parts of at most this many bytes, concurrently.
const PREFETCH_PART: u64 = 8 * 1024 * 1024;

/// `ranges` sorted and merged where the gap between neighbours is at most
/// [`REMOTE_GAP`] (as the decoders' own reads are), or up to `max_gap` when the bytes
/// wanted so far in the merged span are at least the gap: neighbouring pages of a scan's
/// columns become one request, while scattered small ranges (a sparse take's rows) are
/// not joined into a span mostly made of bytes nobody asked for.
fn merge_bounded(mut ranges: Vec<Range<u64>>, max_gap: u64) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<(Range<u64>, u64)> = Vec::new();
    for r in ranges {
        let len = r.end - r.start;
        match merged.last_mut() {
            Some((m, useful))
                if r.start <= m.end.saturating_add(max_gap.min((*useful).max(REMOTE_GAP))) =>
            {
                *useful = useful.saturating_add(r.end.saturating_sub(m.end.max(r.start)));
                m.end = m.end.max(r.end);
            }
            _ => merged.push((r, len)),
        }
    }
    merged.into_iter().map(|(m, _)| m).collect()
}

impl RemoteFile {
    /// The object `path` of `store`, `size` bytes (`shown` in messages), its requests
    /// counted in `ctx` and run on its runtime.
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        path: OPath,
        size: u64,
        ctx: &Arc<Context>,
        shown: String,
    ) -> RemoteFile {
        RemoteFile {
            store,
            path,
            size,
            ctx: ctx.clone(),
            shown,
            tail: OnceLock::new(),
            held: Mutex::new(Vec::new()),
        }
    }
}

impl RangeRead for RemoteFile {
    fn size(&self) -> lancer_format::Result<u64> {
        Ok(self.size)
    }

    fn prefetches(&self) -> bool {
        true
    }

    fn prefetch(&self, ranges: &[Range<u64>]) -> lancer_format::Result<Option<Prefetched>> {
        for r in ranges {
            check_range(r, self.size)?;
        }
        // the tail is fetched whole on its own; spans already held are not fetched again
        let start = self.size.saturating_sub(TAIL);
        let mut live = self.live_held();
        live.sort_by_key(|h| h.start);
        let wanted: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| r.start < r.end && r.start < start)
            .filter(|r| cover(&live, r).is_none())
            .cloned()
            .collect();
        if wanted.is_empty() {
            return Ok(None);
        }
        let merged = merge_bounded(wanted, PREFETCH_GAP);
        let mut parts = Vec::new();
        for m in merged {
            let mut at = m.start;
            while at < m.end {
                let end = m.end.min(at + PREFETCH_PART);
                parts.push(at..end);
                at = end;
            }
        }
        let got = self.fetch(&parts)?;
        let spans: Vec<Arc<Held>> = parts
            .iter()
            .zip(got)
            .map(|(r, bytes)| {
                Arc::new(Held {
                    start: r.start,
                    bytes,
                })
            })
            .collect();
        if let Ok(mut h) = self.held.lock() {
            h.retain(|w| w.strong_count() > 0);
            h.extend(spans.iter().map(Arc::downgrade));
        }
        Ok(Some(Box::new(spans)))
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> lancer_format::Result<Vec<Bytes>> {
        for r in ranges {
            check_range(r, self.size)?;
        }
        let start = self.size.saturating_sub(TAIL);
        if self.tail.get().is_none() && ranges.iter().any(|r| r.start >= start) {
            let whole = start..self.size;
            let t = self.fetch(std::slice::from_ref(&whole))?;
            let _ = self.tail.set(t.into_iter().next().unwrap_or_default());
        }
        // what is in memory: the tail, and the spans prefetched for callers still
        // holding them; the other ranges are fetched
        let mut spans = self.live_held();
        if let Some(t) = self.tail.get() {
            spans.push(Arc::new(Held {
                start,
                bytes: t.clone(),
            }));
        }
        spans.sort_by_key(|h| h.start);
        let from_memory: Vec<Option<Bytes>> = ranges.iter().map(|r| in_memory(&spans, r)).collect();
        let far: Vec<Range<u64>> = ranges
            .iter()
            .zip(&from_memory)
            .filter(|(_, m)| m.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        let mut fetched = self.fetch(&far)?.into_iter();
        from_memory
            .into_iter()
            .map(|m| match m {
                Some(b) => Ok(b),
                None => fetched.next().ok_or_else(|| {
                    FormatError::corrupt(format!("{}: a range went missing", self.shown))
                }),
            })
            .collect()
    }
}

/// The spans (positions in `spans`, sorted by start) that together hold all of `r`:
/// one, or adjacent ones (a range the coalescing above merged across two prefetched
/// parts); None if some byte of `r` is not in memory.
fn cover(spans: &[Arc<Held>], r: &Range<u64>) -> Option<Range<usize>> {
    let end_of = |h: &Held| h.start + h.bytes.len() as u64;
    let first = spans
        .iter()
        .position(|h| h.start <= r.start && r.start < end_of(h))?;
    let mut at = end_of(&spans[first]);
    let mut last = first;
    while at < r.end {
        let next = spans.get(last + 1)?;
        if next.start > at {
            return None;
        }
        at = at.max(end_of(next));
        last += 1;
    }
    Some(first..last + 1)
}

/// The bytes of `r` if `spans` (sorted by start) hold all of them: a slice of one
/// span, or copied from adjacent ones.
fn in_memory(spans: &[Arc<Held>], r: &Range<u64>) -> Option<Bytes> {
    if r.start == r.end {
        return Some(Bytes::new());
    }
    let c = cover(spans, r)?;
    let h = &spans[c.start];
    if c.len() == 1 {
        return Some(
            h.bytes
                .slice((r.start - h.start) as usize..(r.end - h.start) as usize),
        );
    }
    let mut out = Vec::with_capacity((r.end - r.start) as usize);
    let mut at = r.start;
    for h in &spans[c] {
        let end = r.end.min(h.start + h.bytes.len() as u64);
        if end > at {
            out.extend_from_slice(&h.bytes[(at - h.start) as usize..(end - h.start) as usize]);
            at = end;
        }
    }
    Some(Bytes::from(out))
}

impl RemoteFile {
    /// The prefetched spans still held by some caller.
    fn live_held(&self) -> Vec<Arc<Held>> {
        match self.held.lock() {
            Ok(h) => h.iter().filter_map(Weak::upgrade).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// Attempts of an idempotent request (read, size, listing) whose connection failed
/// before a response: object_store retries errors it classifies as transient, but a
/// connection reset while sending (a dropping proxy, a restarting server) ends the
/// request at once.
const TRANSPORT_ATTEMPTS: u32 = 4;

/// Whether `e` is a transport failure (no response from the server at all).
fn is_transport(e: &object_store::Error) -> bool {
    let text = match e {
        object_store::Error::Generic { source, .. } => {
            let mut t = source.to_string();
            let mut s = source.source();
            while let Some(inner) = s {
                t.push_str(": ");
                t.push_str(&inner.to_string());
                s = inner.source();
            }
            t
        }
        _ => return false,
    };
    [
        "error sending request",
        "connection closed",
        "connection reset",
        "broken pipe",
        "incomplete message",
        "error decoding response body",
    ]
    .iter()
    .any(|m| text.to_ascii_lowercase().contains(m))
}

/// Runs an idempotent request, again after a transport failure (50, 100, 200 ms apart).
pub(crate) fn idempotent<T, E: Into<object_store::Error>>(
    mut op: impl FnMut() -> std::result::Result<T, E>,
) -> std::result::Result<T, object_store::Error> {
    let mut attempt = 0;
    loop {
        match op().map_err(Into::into) {
            Err(e) if attempt + 1 < TRANSPORT_ATTEMPTS && is_transport(&e) => {
                std::thread::sleep(std::time::Duration::from_millis(50 << attempt));
                attempt += 1;
            }
            other => return other,
        }
    }
}

impl RemoteFile {
    /// Each range one request, all at once.
    fn fetch(&self, ranges: &[Range<u64>]) -> lancer_format::Result<Vec<Bytes>> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        Counters::add(&self.ctx.counters.gets, ranges.len() as u64);
        let rt = self.ctx.runtime()?;
        let mut got = rt.block_on(async {
            let reads = ranges
                .iter()
                .map(|r| self.store.get_range(&self.path, r.clone()));
            futures::future::join_all(reads).await
        });
        // ranges lost to a dropped connection are asked again, one at a time
        for (g, r) in got.iter_mut().zip(ranges) {
            if matches!(g, Err(e) if is_transport(e)) {
                *g = idempotent(|| rt.block_on(self.store.get_range(&self.path, r.clone())));
            }
        }
        let mut out = Vec::with_capacity(got.len());
        for (g, r) in got.into_iter().zip(ranges) {
            let b = g.map_err(|e| {
                FormatError::Io(std::io::Error::other(format!(
                    "reading {}: {e}",
                    self.shown
                )))
            })?;
            if b.len() as u64 != r.end - r.start {
                return Err(FormatError::corrupt(format!(
                    "{}: asked for {} bytes at {}, the store sent {}",
                    self.shown,
                    r.end - r.start,
                    r.start,
                    b.len()
                )));
            }
            Counters::add(&self.ctx.counters.bytes_read, b.len() as u64);
            out.push(b);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_spans_join_pages_but_not_scattered_rows() {
        const MIB: u64 = 1024 * 1024;
        // a scan's pages of two columns, 100 KiB apart: one span
        let pages = vec![5 * MIB..6 * MIB, 0..2 * MIB, 2 * MIB + 100_000..3 * MIB];
        assert_eq!(
            merge_bounded(pages, MIB),
            vec![0..3 * MIB, 5 * MIB..6 * MIB]
        );
        // 3 KiB rows 600 KiB apart (a sparse take of a wide vector column): each alone,
        // though the gap is under the limit
        let rows: Vec<Range<u64>> = (0..5u64).map(|i| i * 600_000..i * 600_000 + 3072).collect();
        assert_eq!(merge_bounded(rows.clone(), MIB), rows);
        // rows up to REMOTE_GAP apart are joined, as the decoders' reads join them
        let close: Vec<Range<u64>> = (0..5u64).map(|i| i * 200_000..i * 200_000 + 3072).collect();
        assert_eq!(merge_bounded(close, MIB), vec![0..800_000 + 3072]);
        // past REMOTE_GAP, a gap no larger than what was wanted so far
        let big = vec![0..400_000, 800_000..900_000, 2_000_000..2_100_000];
        assert_eq!(
            merge_bounded(big, MIB),
            vec![0..900_000, 2_000_000..2_100_000]
        );
        // overlapping and nested ranges count their bytes once
        let nested = vec![0..100, 10..50, 90..300];
        assert_eq!(merge_bounded(nested, MIB), vec![0..300]);
        assert!(merge_bounded(Vec::new(), MIB).is_empty());
    }

    #[test]
    fn ranges_are_served_from_one_span_or_adjacent_ones() {
        let data: Vec<u8> = (0..40u8).collect();
        let span = |r: Range<usize>| {
            Arc::new(Held {
                start: r.start as u64,
                bytes: Bytes::copy_from_slice(&data[r]),
            })
        };
        let spans = vec![span(0..10), span(10..20), span(25..30)];
        let got = |r: Range<u64>| in_memory(&spans, &r).map(|b| b.to_vec());
        assert_eq!(got(2..8), Some(data[2..8].to_vec()));
        assert_eq!(got(5..15), Some(data[5..15].to_vec()), "across two parts");
        assert_eq!(got(0..20), Some(data[0..20].to_vec()));
        assert_eq!(got(26..30), Some(data[26..30].to_vec()));
        assert_eq!(got(15..27), None, "a gap");
        assert_eq!(got(28..31), None, "past the last span");
        assert_eq!(got(35..35), Some(Vec::new()));
        assert_eq!(cover(&spans, &(5..15)), Some(0..2));
    }
}
