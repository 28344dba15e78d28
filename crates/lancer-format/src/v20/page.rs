//! Where the bytes of a 2.0 page are: `Buffer` references (page, column or file
//! buffers) resolved to file ranges, and reads of parts of one buffer — from the file,
//! or from a copy already decompressed in memory — plus helpers on row ranges.

use std::ops::Range;

use arrow_buffer::{Buffer, MutableBuffer};

use crate::pb::enc20::buffer::BufferType;
use crate::pb::enc20::Buffer as BufferRef;
use crate::read::RangeRead;
use crate::{FormatError, Result};

/// The buffers one page can refer to.
pub(crate) struct PageCtx<'a> {
    /// The byte source.
    pub io: &'a dyn RangeRead,
    /// The page's own buffers.
    pub page: &'a [Range<u64>],
    /// The column's buffers.
    pub column: &'a [Range<u64>],
    /// The file's global buffers.
    pub file: &'a [Range<u64>],
    /// Size of the file in bytes (bounds counts that no buffer backs).
    pub file_size: u64,
}

impl PageCtx<'_> {
    /// The file range of the buffer `b` refers to.
    pub fn buffer(&self, b: Option<&BufferRef>, what: &str) -> Result<Range<u64>> {
        let b =
            b.ok_or_else(|| FormatError::corrupt(format!("{what}: buffer reference missing")))?;
        let (list, kind) = match BufferType::try_from(b.buffer_type) {
            Ok(BufferType::Page) => (self.page, "page"),
            Ok(BufferType::Column) => (self.column, "column"),
            Ok(BufferType::File) => (self.file, "file"),
            Err(_) => {
                return Err(FormatError::corrupt(format!(
                    "{what}: unknown buffer type {}",
                    b.buffer_type
                )))
            }
        };
        list.get(b.buffer_index as usize).cloned().ok_or_else(|| {
            FormatError::corrupt(format!(
                "{what}: refers to {kind} buffer {} but there are {} {kind} buffers",
                b.buffer_index,
                list.len()
            ))
        })
    }

    /// The buffer `b` refers to, as a source still in the file.
    pub fn source(&self, b: Option<&BufferRef>, what: &str) -> Result<Source<'_>> {
        Ok(Source::File {
            io: self.io,
            range: self.buffer(b, what)?,
        })
    }
}

/// The bytes of one buffer.
pub(crate) enum Source<'a> {
    /// Still in the file, at `range`.
    File {
        /// The byte source.
        io: &'a dyn RangeRead,
        /// Where the buffer lies.
        range: Range<u64>,
    },
    /// In memory (e.g. after decompression).
    Memory(Buffer),
}

impl Source<'_> {
    /// Length of the buffer in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Self::File { range, .. } => range.end - range.start,
            Self::Memory(b) => b.len() as u64,
        }
    }

    /// The whole buffer.
    pub fn all(&self) -> Result<Buffer> {
        match self {
            Self::File { io, range } => io.read_range(range.clone()).map(Buffer::from),
            Self::Memory(b) => Ok(b.clone()),
        }
    }

    /// Reads `parts` (byte ranges relative to the buffer start), one buffer per part.
    /// Parts that touch or overlap their predecessor are fetched in one request.
    pub fn read(&self, parts: &[Range<u64>], what: &str) -> Result<Vec<Buffer>> {
        let len = self.len();
        for p in parts {
            if p.start > p.end || p.end > len {
                return Err(FormatError::corrupt(format!(
                    "{what}: bytes {p:?} lie outside the {len}-byte buffer"
                )));
            }
        }
        match self {
            Self::Memory(b) => Ok(parts
                .iter()
                .map(|p| b.slice_with_length(p.start as usize, (p.end - p.start) as usize))
                .collect()),
            Self::File { io, range } => {
                // Merge parts into spans; remember which span each part falls in.
                let mut spans: Vec<Range<u64>> = Vec::new();
                let mut which = Vec::with_capacity(parts.len());
                for p in parts {
                    match spans.last_mut() {
                        Some(s) if p.start >= s.start && p.start <= s.end => {
                            s.end = s.end.max(p.end);
                        }
                        _ => spans.push(p.clone()),
                    }
                    which.push(spans.len() - 1);
                }
                let absolute: Vec<Range<u64>> = spans
                    .iter()
                    .map(|s| range.start + s.start..range.start + s.end)
                    .collect();
                let got = io.read_ranges(&absolute)?;
                if got.len() != spans.len() {
                    return Err(FormatError::corrupt(format!(
                        "{what}: byte source returned {} ranges for {} asked",
                        got.len(),
                        spans.len()
                    )));
                }
                let got: Vec<Buffer> = got.into_iter().map(Buffer::from).collect();
                parts
                    .iter()
                    .zip(which)
                    .map(|(p, w)| {
                        let (span, buf) = spans.get(w).zip(got.get(w)).ok_or_else(|| {
                            FormatError::corrupt(format!("{what}: lost track of a read"))
                        })?;
                        let off = (p.start - span.start) as usize;
                        let n = (p.end - p.start) as usize;
                        if off + n > buf.len() {
                            return Err(FormatError::corrupt(format!(
                                "{what}: byte source returned {} bytes for {span:?}",
                                buf.len()
                            )));
                        }
                        Ok(buf.slice_with_length(off, n))
                    })
                    .collect()
            }
        }
    }

    /// Reads `parts` and concatenates them into one buffer (no copy for a single part).
    pub fn read_concat(&self, parts: &[Range<u64>], what: &str) -> Result<Buffer> {
        let mut bufs = self.read(parts, what)?;
        if bufs.len() == 1 {
            if let Some(b) = bufs.pop() {
                return Ok(b);
            }
        }
        let total = bufs.iter().map(|b| b.len()).sum();
        let mut out = MutableBuffer::with_capacity(total);
        for b in &bufs {
            out.extend_from_slice(b.as_slice());
        }
        Ok(out.into())
    }
}

/// Number of rows in `ranges`.
pub(crate) fn total(ranges: &[Range<u64>]) -> u64 {
    ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum()
}

/// `ranges` with both ends multiplied by `k` (rows to items or bytes).
pub(crate) fn scale(ranges: &[Range<u64>], k: u64, what: &str) -> Result<Vec<Range<u64>>> {
    ranges
        .iter()
        .map(|r| match (r.start.checked_mul(k), r.end.checked_mul(k)) {
            (Some(s), Some(e)) => Ok(s..e),
            _ => Err(FormatError::corrupt(format!(
                "{what}: rows {r:?} times {k} overflow"
            ))),
        })
        .collect()
}

/// The parts of sorted `ranges` that fall in `start..end`, shifted to start at 0.
pub(crate) fn local_ranges(ranges: &[Range<u64>], start: u64, end: u64) -> Vec<Range<u64>> {
    let first = ranges.partition_point(|r| r.end <= start);
    ranges
        .get(first..)
        .unwrap_or_default()
        .iter()
        .take_while(|r| r.start < end)
        .filter(|r| r.end > start && r.start < r.end)
        .map(|r| r.start.max(start) - start..r.end.min(end) - start)
        .collect()
}

/// Appends `r` to `out`, merging it with the last range when they touch; empty
/// ranges are dropped.
pub(crate) fn push_merged(out: &mut Vec<Range<u64>>, r: Range<u64>) {
    if r.start >= r.end {
        return;
    }
    match out.last_mut() {
        Some(last) if last.end == r.start => last.end = r.end,
        _ => out.push(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_ranges_clip_and_shift() {
        let r = [0..5, 8..12, 20..30];
        assert_eq!(local_ranges(&r, 4, 10), vec![0..1, 4..6]);
        assert_eq!(local_ranges(&r, 12, 20), Vec::<Range<u64>>::new());
        assert_eq!(local_ranges(&r, 25, 40), vec![0..5]);
    }

    #[test]
    fn file_reads_merge_and_split() {
        let data = bytes::Bytes::from((0u8..100).collect::<Vec<_>>());
        let src = Source::File {
            io: &data,
            range: 10..60,
        };
        let got = src.read(&[0..2, 2..4, 10..11], "test");
        let got = got.unwrap_or_default();
        let got: Vec<Vec<u8>> = got.iter().map(|b| b.as_slice().to_vec()).collect();
        assert_eq!(got, vec![vec![10, 11], vec![12, 13], vec![20]]);
        let past_end = 49..51;
        assert!(src.read(std::slice::from_ref(&past_end), "test").is_err());
    }
}
