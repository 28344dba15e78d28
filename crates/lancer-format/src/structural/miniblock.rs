//! Mini-block pages (spec: "Mini Block Page Layout").
//!
//! Buffers: 0 = chunk metadata, 1 = the chunks, then the dictionary (if dictionary
//! encoded) and the repetition index (if the column has lists).
//!
//! Chunk metadata, one entry per chunk (u16 in 2.1; u32 when `has_large_chunk`):
//!
//! | bits      | meaning                                         |
//! |-----------|-------------------------------------------------|
//! | low 4     | log2(values in chunk); 0 for the last chunk     |
//! | the rest  | chunk size in 8-byte words, minus one           |
//!
//! A chunk: `num_levels: u16`, then `rep_size: u16` and `def_size: u16` when those
//! levels exist, then one size per value buffer (u16; u32 with `has_large_chunk`),
//! padding to 8 bytes, then rep, def and value buffers, each padded to 8 bytes.
//!
//! Repetition index: per chunk `depth + 1` u64s: rows that end in the chunk and the
//! count of trailing items of a row that continues into the next chunk.

use std::ops::Range;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::{concat_runs, Layer, LeafRun, LevelInfo};
use crate::block::to_arrow;
use crate::compression::{self, compression_of};
use crate::container::PageInfo;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::MiniBlockLayout;
use crate::read::RangeRead;
use crate::{FormatError, Result};

mod chunk;
mod pick;

pub use chunk::{decode_levels, indices_array};
use chunk::{expand_dictionary, expand_fsst};
use pick::{pickable_bits, pickable_variable};

const ALIGN: usize = 8;

/// Where one chunk lies and what it holds.
#[derive(Debug, Clone, Copy)]
pub struct ChunkMeta {
    /// Offset within buffer 1.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
    /// Values (visible items) in the chunk.
    pub num_values: u64,
}

/// Row bookkeeping of one chunk (from the repetition index, or 1 row = 1 value).
#[derive(Debug, Clone, Copy)]
pub struct ChunkRows {
    /// First row that starts in this chunk (after any preamble).
    pub first_row: u64,
    /// Rows that start in this chunk.
    pub starts: u64,
    /// The chunk begins with the tail of a row started earlier.
    pub has_preamble: bool,
    /// The chunk's last row continues into the next chunk.
    pub has_trailer: bool,
}

/// Row ranges grouped by the contiguous chunk spans they are read from: each group is
/// a chunk span and the positions (in `ranges`) of its row ranges, so no group owns a
/// list of its own.
struct ChunkGroups<'a> {
    ranges: &'a [Range<u64>],
    list: Vec<(Range<usize>, Range<usize>)>,
}

impl<'a> ChunkGroups<'a> {
    /// Group `g`: its chunk span and its row ranges.
    fn get(&self, g: usize) -> Option<(&Range<usize>, &'a [Range<u64>])> {
        let ranges = self.ranges;
        self.list
            .get(g)
            .map(|(span, at)| (span, &ranges[at.clone()]))
    }

    fn iter(&self) -> impl Iterator<Item = (&Range<usize>, &'a [Range<u64>])> + '_ {
        let ranges = self.ranges;
        self.list
            .iter()
            .map(move |(span, at)| (span, &ranges[at.clone()]))
    }
}

/// A mini-block page with its metadata (the "search cache") loaded.
#[derive(Debug)]
pub struct MiniBlockPage {
    layout: MiniBlockLayout,
    layers: Vec<Layer>,
    info: LevelInfo,
    chunks_buffer: Range<u64>,
    chunks: Vec<ChunkMeta>,
    rows: Vec<ChunkRows>,
    dictionary: Option<ArrayRef>,
    num_rows: u64,
}

fn pad(x: usize) -> usize {
    x.div_ceil(ALIGN) * ALIGN
}

impl MiniBlockPage {
    /// Loads chunk metadata, dictionary and repetition index of `page`.
    pub fn load(
        page: &PageInfo,
        layout: &MiniBlockLayout,
        io: &dyn RangeRead,
        value_type: &DataType,
    ) -> Result<Self> {
        let layers = Layer::list_from_pb(&layout.layers)?;
        let info = LevelInfo::new(&layers);
        let meta_range = page
            .buffers
            .first()
            .cloned()
            .ok_or_else(|| FormatError::corrupt("mini-block page without a metadata buffer"))?;
        let chunks_buffer = page
            .buffers
            .get(1)
            .cloned()
            .ok_or_else(|| FormatError::corrupt("mini-block page without a chunk buffer"))?;
        let has_dict = layout.dictionary.is_some();
        let mut wanted = vec![meta_range];
        let dict_idx = has_dict.then_some(2usize);
        let rep_idx = (layout.repetition_index_depth > 0).then_some(if has_dict { 3 } else { 2 });
        for idx in [dict_idx, rep_idx].into_iter().flatten() {
            wanted.push(page.buffers.get(idx).cloned().ok_or_else(|| {
                FormatError::corrupt(format!("mini-block page lacks buffer {idx}"))
            })?);
        }
        let mut got = io.read_ranges(&wanted)?.into_iter();
        let meta = got.next().unwrap_or_default();
        let dict_bytes = if has_dict { got.next() } else { None };
        let rep_bytes = if rep_idx.is_some() { got.next() } else { None };

        // Chunk metadata.
        let word = if layout.has_large_chunk { 4 } else { 2 };
        let entries: Vec<u64> = compression::read_uints(&meta, word, meta.len() / word)?;
        let mut chunks = Vec::with_capacity(entries.len());
        let mut offset = 0u64;
        let mut values_seen = 0u64;
        let total_values = layout.num_items;
        let buf_len = chunks_buffer.end - chunks_buffer.start;
        for (i, e) in entries.iter().enumerate() {
            let log = e & 0xF;
            let size = ((e >> 4) + 1) * ALIGN as u64;
            let last = i + 1 == entries.len();
            let num_values = if last {
                total_values.checked_sub(values_seen).ok_or_else(|| {
                    FormatError::corrupt("mini-block chunks hold more values than the page")
                })?
            } else {
                if log == 0 {
                    return Err(FormatError::corrupt(format!(
                        "mini-block chunk {i} is not the last but has no value count"
                    )));
                }
                1u64 << log
            };
            if offset + size > buf_len {
                return Err(FormatError::corrupt(format!(
                    "mini-block chunk {i} ({size} bytes at {offset}) overruns its {buf_len}-byte buffer"
                )));
            }
            chunks.push(ChunkMeta {
                offset,
                size,
                num_values,
            });
            offset += size;
            values_seen += num_values;
        }

        // Rows per chunk.
        let rows = match rep_bytes {
            Some(b) => {
                let stride = layout.repetition_index_depth as usize + 1;
                let vals = compression::read_uints(&b, 8, b.len() / 8)?;
                if vals.len() < chunks.len() * stride {
                    return Err(FormatError::corrupt(format!(
                        "repetition index has {} entries for {} chunks",
                        vals.len(),
                        chunks.len()
                    )));
                }
                let mut rows = Vec::with_capacity(chunks.len());
                let mut first = 0u64;
                let mut preamble = false;
                for c in 0..chunks.len() {
                    let ends = vals[c * stride];
                    let partial = vals[c * stride + 1];
                    let trailer = partial > 0;
                    let starts = ends
                        .checked_add(u64::from(trailer))
                        .and_then(|x| x.checked_sub(u64::from(preamble)))
                        .ok_or_else(|| FormatError::corrupt("repetition index is inconsistent"))?;
                    rows.push(ChunkRows {
                        first_row: first,
                        starts,
                        has_preamble: preamble,
                        has_trailer: trailer,
                    });
                    first = first
                        .checked_add(starts)
                        .ok_or_else(|| FormatError::corrupt("repetition index is inconsistent"))?;
                    preamble = trailer;
                }
                rows
            }
            None => {
                let mut first = 0;
                chunks
                    .iter()
                    .map(|c| {
                        let r = ChunkRows {
                            first_row: first,
                            starts: c.num_values,
                            has_preamble: false,
                            has_trailer: false,
                        };
                        first += c.num_values;
                        r
                    })
                    .collect()
            }
        };
        let counted: u64 = rows.iter().map(|r| r.starts).sum();
        if counted != page.num_rows {
            return Err(FormatError::corrupt(format!(
                "mini-block chunks hold {counted} rows, page says {}",
                page.num_rows
            )));
        }

        let dictionary = match (&layout.dictionary, dict_bytes) {
            (Some(enc), Some(bytes)) => {
                let c = compression_of(Some(enc), "dictionary")?;
                let n = layout.num_dictionary_items;
                let block = compression::block(c, Buffer::from(bytes), n)?;
                Some(to_arrow(block, value_type, None)?)
            }
            _ => None,
        };
        Ok(Self {
            layout: layout.clone(),
            layers,
            info,
            chunks_buffer,
            chunks,
            rows,
            dictionary,
            num_rows: page.num_rows,
        })
    }

    /// Structural layers (inner-most first).
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Chunk descriptions (for the inspector).
    pub fn chunks(&self) -> &[ChunkMeta] {
        &self.chunks
    }

    /// The chunk holding row `row`, searching from chunk `from` on (rows asked in
    /// ascending order walk the chunks once: a step or two forward, then, for chunks of
    /// one size (a flat column's, but the last), a division checked against the chunk it
    /// names, else a binary search over what is left).
    fn chunk_of(&self, row: u64, from: usize) -> Result<usize> {
        let ends_before = |r: &ChunkRows| r.first_row + r.starts <= row;
        let from = from.min(self.rows.len());
        let mut i = from;
        while i < self.rows.len() && i < from + 2 && ends_before(&self.rows[i]) {
            i += 1;
        }
        if i == from + 2 {
            let holds = |g: usize| {
                let r = &self.rows[g];
                r.first_row <= row && !ends_before(r)
            };
            let guess = self
                .rows
                .first()
                .filter(|r| r.starts > 0)
                .map(|r| usize::try_from(row / r.starts).unwrap_or(usize::MAX))
                .map(|g| g.min(self.rows.len() - 1))
                .filter(|&g| g >= i && holds(g));
            match guess {
                Some(g) => return Ok(g),
                None => i += self.rows[i..].partition_point(ends_before),
            }
        }
        if i >= self.rows.len() {
            return Err(FormatError::OutOfRange {
                what: format!("row {row} of a {}-row page", self.num_rows),
            });
        }
        Ok(i)
    }

    /// Chunks covering rows `range`: from the chunk where the first row starts to the
    /// chunk where the last row ends; no chunk before `from` holds them.
    fn chunk_span(&self, range: &Range<u64>, from: usize) -> Result<Range<usize>> {
        let first = self.chunk_of(range.start, from)?;
        // (a one-row range ends in the chunk it starts in: an index's scattered rows)
        let mut last = if range.end - 1 == range.start {
            first
        } else {
            self.chunk_of(range.end - 1, first)?
        };
        while self.rows[last].has_trailer && last + 1 < self.rows.len() {
            last += 1;
            if self.rows[last].starts > 0 {
                break;
            }
        }
        Ok(first..last + 1)
    }

    /// Byte ranges (absolute) of the chunks needed for `ranges` of rows.
    pub fn byte_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Range<u64>>> {
        let ranges = non_empty(ranges);
        Ok(self
            .groups(&ranges)?
            .iter()
            .map(|(span, _)| self.span_bytes(span))
            .collect())
    }

    fn span_bytes(&self, span: &Range<usize>) -> Range<u64> {
        let a = &self.chunks[span.start];
        let b = &self.chunks[span.end - 1];
        self.chunks_buffer.start + a.offset..self.chunks_buffer.start + b.offset + b.size
    }

    /// Groups row ranges (none empty: see [`non_empty`]) by contiguous chunk spans.
    fn groups<'a>(&self, ranges: &'a [Range<u64>]) -> Result<ChunkGroups<'a>> {
        if let Some(one) = self.dense_group(ranges)? {
            return Ok(one);
        }
        let mut list: Vec<(Range<usize>, Range<usize>)> =
            Vec::with_capacity(ranges.len().min(self.chunks.len()));
        // Ranges come sorted: each one's chunks lie at or after the previous one's
        // first chunk (a range may end inside the chunk the next begins in).
        let (mut from, mut prev) = (0, 0);
        for (i, r) in ranges.iter().enumerate() {
            if r.start >= r.end {
                return Err(FormatError::corrupt(
                    "an empty row range reached the chunk grouping",
                ));
            }
            if r.end > self.num_rows {
                return Err(FormatError::OutOfRange {
                    what: format!("rows {r:?} of a {}-row page", self.num_rows),
                });
            }
            if r.start < prev {
                from = 0; // out of order: search from the first chunk
            }
            prev = r.start;
            let span = self.chunk_span(r, from)?;
            from = span.start;
            // (a span that starts where the group ends joins it: one byte range for
            // a run of neighbouring chunks, as an index's scattered rows touch)
            match list.last_mut() {
                Some((g, at)) if (g.start..=g.end).contains(&span.start) => {
                    g.end = g.end.max(span.end);
                    at.end = i + 1;
                }
                _ => list.push((span, i..i + 1)),
            }
        }
        Ok(ChunkGroups { ranges, list })
    }

    /// Many sorted ranges over few chunks of a page without lists (at least four per
    /// chunk spanned on average, no gap of more than eight chunks' rows: an index's
    /// scattered rows, ~10 per chunk for a 1% selection) as one group of all the chunks
    /// from the first range's to the last's, without looking up each range's chunk
    /// (flat reads walk the chunks and the rows together; list pages slice each range
    /// from its group's start, so they keep groups of neighbouring chunks). None when
    /// the ranges are fewer, unsorted, overlapping or out of the page (the general
    /// grouping then decides, and reports what is wrong).
    fn dense_group<'a>(&self, ranges: &'a [Range<u64>]) -> Result<Option<ChunkGroups<'a>>> {
        const MIN_RANGES: usize = 64;
        const PER_CHUNK: usize = 4;
        const MAX_GAP_CHUNKS: u64 = 8;
        let (Some(a), Some(b)) = (ranges.first(), ranges.last()) else {
            return Ok(None);
        };
        if ranges.len() < MIN_RANGES
            || self.layout.rep_compression.is_some()
            || self.chunks.is_empty()
        {
            return Ok(None);
        }
        let max_gap = (self.num_rows / self.chunks.len() as u64).saturating_mul(MAX_GAP_CHUNKS);
        let mut end = a.start;
        for r in ranges {
            if r.start < end || r.start >= r.end || r.start - end > max_gap {
                return Ok(None);
            }
            end = r.end;
        }
        if end > self.num_rows {
            return Ok(None);
        }
        let first = self.chunk_of(a.start, 0)?;
        let span = first..self.chunk_span(b, first)?.end;
        if ranges.len() < PER_CHUNK.saturating_mul(span.len()) {
            return Ok(None);
        }
        Ok(Some(ChunkGroups {
            ranges,
            list: vec![(span, 0..ranges.len())],
        }))
    }

    /// Reads rows `ranges` (page-relative, sorted, non-overlapping).
    ///
    /// A sparse read (a take: under 1 in 8 of the spanned values for fixed-width, 1 in 4
    /// for strings) of a column without lists or a dictionary picks the asked values out
    /// of the chunks (`pick_fixed`, `pick_variable`); FSST-compressed
    /// strings are expanded for the asked rows only. Other reads decode the spanned
    /// chunks and cut the rows out.
    pub fn read(
        &self,
        io: &dyn RangeRead,
        ranges: &[Range<u64>],
        value_type: &DataType,
    ) -> Result<LeafRun> {
        let ranges = non_empty(ranges);
        let groups = self.groups(&ranges)?;
        let page_c = compression_of(self.layout.value_compression.as_ref(), "mini-block values")?;
        let asked: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let spanned: u64 = groups
            .iter()
            .map(|(span, _)| span.clone().map(|c| self.chunks[c].num_values).sum::<u64>())
            .sum();
        let byte_ranges: Vec<Range<u64>> = groups
            .iter()
            .map(|(span, _)| self.span_bytes(span))
            .collect();
        // A sparse read of a flat column (an index's scattered rows) picks its values out
        // of each chunk instead of decoding the chunks whole: fixed-width values (under
        // one in eight of the values spanned) stored plain or, for primitives,
        // inline-bitpacked (fixed-size lists of primitives without item validity, such
        // as vectors; fixed-size binary), and strings or binaries (under one in four)
        // stored plain or FSST-compressed, found by their two offsets.
        let flat = self.layout.rep_compression.is_none() && self.dictionary.is_none();
        let value_bits =
            crate::block::fixed_width_bits(value_type).filter(|b| *b > 0 && b % 8 == 0);
        if let Some(bits) = value_bits.filter(|_| flat && asked.saturating_mul(8) < spanned) {
            if pickable_bits(page_c, value_type) == Some(bits) {
                let width = (bits / 8) as usize;
                return self.pick_fixed(
                    io,
                    &groups,
                    &byte_ranges,
                    asked,
                    width,
                    page_c,
                    value_type,
                );
            }
        }
        // A sparse read of a dictionary column without lists picks the asked rows'
        // indices the same way, then looks them up.
        if let Some(dict) = &self.dictionary {
            let sparse = self.layout.rep_compression.is_none() && asked.saturating_mul(8) < spanned;
            let idx_type = match pickable_bits(page_c, &DataType::UInt64).filter(|_| sparse) {
                Some(8) => Some(DataType::UInt8),
                Some(16) => Some(DataType::UInt16),
                Some(32) => Some(DataType::UInt32),
                Some(64) => Some(DataType::UInt64),
                _ => None,
            };
            if let Some(t) = idx_type {
                let width = t.primitive_width().unwrap_or(8);
                let mut run =
                    self.pick_fixed(io, &groups, &byte_ranges, asked, width, page_c, &t)?;
                run.values =
                    expand_dictionary(dict, &arrow_cast::cast(&run.values, &DataType::UInt64)?)?;
                return Ok(run);
            }
        }
        let sparse_strings = flat && asked.saturating_mul(4) < spanned;
        if let Some((width, table)) =
            pickable_variable(page_c, value_type).filter(|_| sparse_strings)
        {
            return self.pick_variable(io, &groups, &byte_ranges, asked, width, table, value_type);
        }
        // Other sparse FSST strings (offsets not inline in the chunk) keep each chunk's
        // strings compressed, cut out the asked rows, and expand only those.
        let deferred = match page_c {
            Compression::Fsst(f) if sparse_strings => {
                let codes_type = match value_type {
                    DataType::Utf8 | DataType::Binary => Some(DataType::Binary),
                    DataType::LargeUtf8 | DataType::LargeBinary => Some(DataType::LargeBinary),
                    _ => None,
                };
                codes_type.map(|t| (f, t))
            }
            _ => None,
        };
        let (value_c, stream_type) = match &deferred {
            Some((f, t)) => (compression_of(f.values.as_deref(), "fsst values")?, t),
            // Dictionary pages decode to indices; the asked rows' indices become values
            // after the cut (a take of 100 rows expanded 100 whole chunks: ~7 µs a row).
            None if self.dictionary.is_some() => (page_c, &DataType::UInt64),
            None => (page_c, value_type),
        };
        let data = io.read_ranges(&byte_ranges)?;
        let mut runs = Vec::new();
        for ((span, rs), bytes) in groups.iter().zip(data) {
            let stream = self.decode_span(span, Buffer::from(bytes), value_c, stream_type)?;
            let first_row = self.rows[span.start].first_row;
            let skip = self.rows[span.start].has_preamble;
            if stream.rep.is_none() && rs.len() > 2 {
                // Many short runs of a flat column (an index's scattered rows): one take
                // instead of a slice per run.
                let n = stream.num_entries().min(stream.values.len());
                let mut idx: Vec<u32> =
                    Vec::with_capacity(rs.iter().map(|r| (r.end - r.start) as usize).sum());
                for r in rs {
                    let (a, b) = (r.start - first_row, r.end - first_row);
                    if b as usize > n || b > u64::from(u32::MAX) {
                        return Err(FormatError::corrupt(format!(
                            "asked for rows {a}..{b} of a stream of {n} entries"
                        )));
                    }
                    idx.extend(a as u32..b as u32);
                }
                let take = arrow_array::UInt32Array::from(idx);
                let values = arrow_select::take::take(stream.values.as_ref(), &take, None)?;
                let def = stream
                    .def
                    .as_ref()
                    .map(|d| take.values().iter().map(|&i| d[i as usize]).collect());
                runs.push(LeafRun {
                    rep: None,
                    def,
                    num_rows: take.len() as u64,
                    values,
                });
                continue;
            }
            for r in rs {
                runs.push(stream.slice_rows(
                    self.info,
                    skip,
                    r.start - first_row..r.end - first_row,
                )?);
            }
        }
        let mut run = concat_runs(runs, self.info, stream_type)?;
        if let Some((f, _)) = deferred {
            run.values = expand_fsst(&f.symbol_table, &run.values, value_type)?;
        }
        if let Some(dict) = &self.dictionary {
            run.values = expand_dictionary(dict, &run.values)?;
        }
        Ok(run)
    }
}

/// `ranges` without its empty ranges (borrowed when it has none).
fn non_empty(ranges: &[Range<u64>]) -> std::borrow::Cow<'_, [Range<u64>]> {
    if ranges.iter().all(|r| r.start < r.end) {
        std::borrow::Cow::Borrowed(ranges)
    } else {
        std::borrow::Cow::Owned(ranges.iter().filter(|r| r.start < r.end).cloned().collect())
    }
}
