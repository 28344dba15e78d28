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
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, UInt64Array};
use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::{concat_runs, Layer, LeafRun, LevelInfo, Stream};
use crate::block::{to_arrow, DataBlock, Offsets};
use crate::compression::{self, compression_of};
use crate::container::PageInfo;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::MiniBlockLayout;
use crate::read::RangeRead;
use crate::{FormatError, Result};

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

/// The bits per value of a mini-block value encoding [`MiniBlockPage::read`] can pick
/// single values out of: plain values, inline-bitpacked primitives, and fixed-size
/// lists without item validity over plain items (one value = the list's items, laid
/// out one after another).
fn pickable_bits(value_c: &Compression, value_type: &DataType) -> Option<u64> {
    match value_c {
        Compression::Flat(f) => Some(f.bits_per_value),
        Compression::InlineBitpacking(b) if value_type.is_primitive() => {
            Some(b.uncompressed_bits_per_value)
        }
        Compression::FixedSizeList(l) if !l.has_validity => {
            match compression_of(l.values.as_deref(), "fixed-size list values").ok()? {
                Compression::Flat(f) => f.bits_per_value.checked_mul(l.items_per_value),
                _ => None,
            }
        }
        _ => None,
    }
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

    /// The `asked` rows of `groups` (chunk spans and their page-relative row ranges,
    /// sorted; `byte_ranges` their bytes) of a flat column of `width`-byte values,
    /// plain or (primitives) inline-bitpacked, as one run: the source lends each span's
    /// bytes and only the asked rows' definition levels and values are taken out
    /// (bit-unpacked one by one), so neither the chunks nor per-span arrays are copied.
    #[allow(clippy::too_many_arguments)]
    fn pick_fixed(
        &self,
        io: &dyn RangeRead,
        groups: &ChunkGroups<'_>,
        byte_ranges: &[Range<u64>],
        asked: u64,
        width: usize,
        value_c: &Compression,
        value_type: &DataType,
    ) -> Result<LeafRun> {
        // (each asked value is a distinct slice of the chunks read: never more bytes
        // than were read, unless bit-unpacked)
        let read: u64 = byte_ranges.iter().map(|r| r.end - r.start).sum();
        let mut out = self.picked(
            asked,
            (asked as usize)
                .saturating_mul(width)
                .min(usize::try_from(read).unwrap_or(usize::MAX)),
        );
        self.pick_spans(
            io,
            groups,
            byte_ranges,
            &mut out,
            &mut |buf, n, idx, values, _| pick_fixed_values(value_c, width, buf, n, idx, values),
        )?;
        let Picked { values, def, .. } = out;
        if values.len() as u64 != asked.saturating_mul(width as u64) {
            return Err(FormatError::corrupt(
                "byte source returned fewer ranges than asked",
            ));
        }
        let block = DataBlock::Fixed {
            bits_per_value: width as u64 * 8,
            data: Buffer::from_vec(values),
            num_values: asked,
        };
        Ok(LeafRun {
            rep: None,
            def,
            num_rows: asked,
            values: to_arrow(block, value_type, None)?,
        })
    }

    /// The `asked` rows of `groups` of a flat string or binary column whose chunks hold
    /// `width`-byte offsets then bytes (see [`Self::pick_fixed`] for the rest): each
    /// value is copied out by its offsets, and FSST codes (`table`) are expanded once,
    /// for the asked values only.
    #[allow(clippy::too_many_arguments)]
    fn pick_variable(
        &self,
        io: &dyn RangeRead,
        groups: &ChunkGroups<'_>,
        byte_ranges: &[Range<u64>],
        asked: u64,
        width: usize,
        table: Option<&[u8]>,
        value_type: &DataType,
    ) -> Result<LeafRun> {
        let read: u64 = byte_ranges.iter().map(|r| r.end - r.start).sum();
        let asked_n = usize::try_from(asked).map_err(|_| FormatError::corrupt("count"))?;
        // (each asked value is a distinct slice of the chunks read)
        let mut out = self.picked(
            asked,
            usize::try_from(read).unwrap_or(usize::MAX).min(1 << 20),
        );
        out.offsets.reserve(asked_n + 1);
        out.offsets.push(0);
        self.pick_spans(
            io,
            groups,
            byte_ranges,
            &mut out,
            &mut |buf, n, idx, values, offsets| {
                pick_variable_values(width, buf, n, idx, values, offsets)
            },
        )?;
        let Picked {
            values,
            def,
            offsets,
            ..
        } = out;
        if offsets.len() != asked_n + 1 {
            return Err(FormatError::corrupt(
                "byte source returned fewer ranges than asked",
            ));
        }
        let mut block = DataBlock::Variable {
            offsets: Offsets::U64(offsets),
            data: Buffer::from_vec(values),
        };
        if let Some(table) = table {
            block = compression::fsst::decode(table, block)?;
        }
        Ok(LeafRun {
            rep: None,
            def,
            num_rows: asked,
            values: to_arrow(block, value_type, None)?,
        })
    }

    /// An empty pick of `asked` rows, `bytes` reserved for their values.
    fn picked(&self, asked: u64, bytes: usize) -> Picked {
        Picked {
            values: Vec::with_capacity(bytes),
            def: self
                .layout
                .def_compression
                .is_some()
                .then(|| Vec::with_capacity(asked as usize)),
            idx: Vec::new(),
            offsets: Vec::new(),
        }
    }

    /// Picks the rows of every group into `out`, over the bytes the source lends for
    /// `byte_ranges` (one range per group).
    fn pick_spans(
        &self,
        io: &dyn RangeRead,
        groups: &ChunkGroups<'_>,
        byte_ranges: &[Range<u64>],
        out: &mut Picked,
        emit: &mut ValueEmitter<'_>,
    ) -> Result<()> {
        io.visit_ranges(byte_ranges, &mut |g, bytes| {
            let (span, rs) = groups.get(g).ok_or_else(|| {
                FormatError::corrupt("byte source returned more ranges than asked")
            })?;
            self.pick_span(span, bytes, rs, out, emit)
        })
    }

    /// Appends to `out` rows `rs` of the chunks of `span`, whose bytes are `bytes`
    /// (see [`Self::pick_fixed`]): their definition levels, and through `emit` the
    /// values at the asked positions of each chunk's value buffer.
    fn pick_span(
        &self,
        span: &Range<usize>,
        bytes: &[u8],
        rs: &[Range<u64>],
        out: &mut Picked,
        emit: &mut ValueEmitter<'_>,
    ) -> Result<()> {
        let Picked {
            values,
            def,
            idx,
            offsets,
        } = out;
        let base = self.chunks[span.start].offset;
        let mut first = self.rows[span.start].first_row;
        let mut want = rs.iter().flat_map(|r| r.clone()).peekable();
        for c in span.clone() {
            let meta = self.chunks[c];
            let end = first + meta.num_values;
            idx.clear();
            while let Some(&r) = want.peek() {
                if r >= end {
                    break;
                }
                let i = r.checked_sub(first).ok_or_else(|| {
                    FormatError::corrupt(format!("row {r} lies before mini-block chunk {c}"))
                })?;
                idx.push(i as usize);
                want.next();
            }
            first = end;
            if idx.is_empty() {
                continue;
            }
            let start = (meta.offset - base) as usize;
            let chunk = bytes
                .get(start..start + meta.size as usize)
                .ok_or_else(|| {
                    FormatError::corrupt(format!(
                        "mini-block chunk {c} overruns the {} bytes read for it",
                        bytes.len()
                    ))
                })?;
            let (num_levels, def_at, values_at) = self.chunk_first_values(chunk)?;
            if let Some(out) = def.as_mut() {
                let buf = def_at.map(|r| Buffer::from_slice_ref(&chunk[r]));
                if let Some(levels) = self.levels(&self.layout.def_compression, buf, num_levels)? {
                    for &i in idx.iter() {
                        out.push(*levels.get(i).ok_or_else(|| {
                            FormatError::corrupt(format!(
                                "row {i} of a chunk with {} definition levels",
                                levels.len()
                            ))
                        })?);
                    }
                }
            }
            emit(&chunk[values_at], meta.num_values, idx, values, offsets)?;
        }
        if want.next().is_some() {
            return Err(FormatError::corrupt(
                "asked rows lie past the mini-block chunks read for them",
            ));
        }
        Ok(())
    }

    /// Decodes the chunks of `span`, whose bytes are `bytes`, into one stream.
    fn decode_span(
        &self,
        span: &Range<usize>,
        bytes: Buffer,
        value_c: &Compression,
        value_type: &DataType,
    ) -> Result<Stream> {
        let base = self.chunks[span.start].offset;
        let has_rep = self.layout.rep_compression.is_some();
        let has_def = self.layout.def_compression.is_some();
        let mut rep: Option<Vec<u16>> = has_rep.then(Vec::new);
        let mut def: Option<Vec<u16>> = has_def.then(Vec::new);
        let mut values: Vec<ArrayRef> = Vec::with_capacity(span.len());
        let idx_type = self.dictionary.as_ref().map(|_| DataType::UInt64);
        for c in span.clone() {
            let meta = self.chunks[c];
            let start = (meta.offset - base) as usize;
            let chunk = bytes.slice_with_length(start, meta.size as usize);
            let (r, d, vals) = self.decode_chunk(&chunk, meta.num_values, value_c)?;
            if let (Some(out), Some(r)) = (rep.as_mut(), r) {
                out.extend_from_slice(&r);
            }
            if let (Some(out), Some(d)) = (def.as_mut(), d) {
                out.extend_from_slice(&d);
            }
            let arr = match &idx_type {
                Some(_) => indices_array(vals)?,
                None => to_arrow(vals, value_type, None)?,
            };
            values.push(arr);
        }
        let refs: Vec<&dyn Array> = values.iter().map(|a| a.as_ref()).collect();
        let values = if refs.len() == 1 {
            values.swap_remove(0)
        } else {
            arrow_select::concat::concat(&refs)?
        };
        Ok(Stream { rep, def, values })
    }

    #[allow(clippy::type_complexity)]
    fn decode_chunk(
        &self,
        chunk: &Buffer,
        num_values: u64,
        value_c: &Compression,
    ) -> Result<(Option<Vec<u16>>, Option<Vec<u16>>, DataBlock)> {
        let parts = self.chunk_parts(chunk)?;
        let n = parts.num_levels;
        let rep = self.levels(&self.layout.rep_compression, parts.rep, n)?;
        let def = self.levels(&self.layout.def_compression, parts.def, n)?;
        let values = compression::miniblock(value_c, parts.values, num_values)?;
        Ok((rep, def, values))
    }

    /// A chunk's `n` repetition or definition levels from their buffer, when the
    /// layout has that kind (`enc`).
    fn levels(
        &self,
        enc: &Option<crate::pb::enc21::CompressiveEncoding>,
        buf: Option<Buffer>,
        n: usize,
    ) -> Result<Option<Vec<u16>>> {
        match (enc, buf) {
            (Some(e), Some(buf)) => {
                let c = compression_of(Some(e), "levels")?;
                decode_levels(c, buf, n as u64).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A chunk's header read: its level count and its (still encoded) repetition,
    /// definition and value buffers.
    fn chunk_parts(&self, chunk: &Buffer) -> Result<ChunkParts> {
        let l = self.chunk_layout(chunk.as_slice())?;
        let cut = |r: Range<usize>| chunk.slice_with_length(r.start, r.end - r.start);
        Ok(ChunkParts {
            num_levels: l.num_levels,
            rep: l.rep.map(cut),
            def: l.def.map(cut),
            values: l.values.into_iter().map(cut).collect(),
        })
    }

    /// Where a chunk's buffers lie in its bytes `b`, as its header says (every range
    /// checked to lie within `b`).
    fn chunk_layout(&self, b: &[u8]) -> Result<ChunkLayout> {
        let mut values = Vec::new();
        let head = self.walk_chunk(b, &mut |r| {
            values.push(r);
            true
        })?;
        Ok(ChunkLayout {
            num_levels: head.num_levels,
            rep: head.rep,
            def: head.def,
            values,
        })
    }

    /// A chunk's level count, definition levels and first value buffer, without
    /// allocating (a sparse pick reads only these, from each of thousands of chunks).
    fn chunk_first_values(&self, b: &[u8]) -> Result<(usize, Option<Range<usize>>, Range<usize>)> {
        let mut first = None;
        let head = self.walk_chunk(b, &mut |r| {
            first = Some(r);
            false
        })?;
        let first =
            first.ok_or_else(|| FormatError::corrupt("mini-block chunk without a value buffer"))?;
        Ok((head.num_levels, head.def, first))
    }

    /// Reads the header of chunk bytes `b`: returns the level count and the ranges of
    /// its repetition and definition levels, and hands each value buffer's range to
    /// `value` in order until it returns false (every range handed out or returned lies
    /// within `b`).
    fn walk_chunk(
        &self,
        b: &[u8],
        value: &mut dyn FnMut(Range<usize>) -> bool,
    ) -> Result<ChunkHead> {
        let short = || FormatError::corrupt("mini-block chunk header truncated");
        let rd16 = |p: usize| -> Result<usize> {
            b.get(p..p + 2)
                .map(|x| u16::from_le_bytes([x[0], x[1]]) as usize)
                .ok_or_else(short)
        };
        let rd32 = |p: usize| -> Result<usize> {
            b.get(p..p + 4)
                .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as usize)
                .ok_or_else(short)
        };
        let mut p = 0usize;
        let num_levels = rd16(p)?;
        p += 2;
        let rep_size = if self.layout.rep_compression.is_some() {
            p += 2;
            Some(rd16(p - 2)?)
        } else {
            None
        };
        let def_size = if self.layout.def_compression.is_some() {
            p += 2;
            Some(rd16(p - 2)?)
        } else {
            None
        };
        let nbuf = usize::try_from(self.layout.num_buffers)
            .ok()
            .filter(|&n| n <= 64)
            .ok_or_else(|| FormatError::corrupt("mini-block chunk buffer count"))?;
        // the value buffers' sizes, read in place: `nbuf` of 2 (or 4) bytes each
        let (sizes_at, word) = (p, if self.layout.has_large_chunk { 4 } else { 2 });
        let size = |j: usize| -> Result<usize> {
            let at = sizes_at + j * word;
            if word == 4 {
                rd32(at)
            } else {
                rd16(at)
            }
        };
        if nbuf > 0 {
            size(nbuf - 1)?; // the header holds them all
        }
        p = pad(sizes_at + nbuf * word);
        let mut take = |size: usize| -> Result<Range<usize>> {
            if p + size > b.len() {
                return Err(FormatError::corrupt(format!(
                    "mini-block chunk buffer of {size} bytes at {p} overruns a {}-byte chunk",
                    b.len()
                )));
            }
            let out = p..p + size;
            p = pad(p + size);
            Ok(out)
        };
        let rep = rep_size.map(&mut take).transpose()?;
        let def = def_size.map(&mut take).transpose()?;
        for j in 0..nbuf {
            if !value(take(size(j)?)?) {
                break;
            }
        }
        Ok(ChunkHead {
            num_levels,
            rep,
            def,
        })
    }
}

/// What a sparse pick has taken out so far: the values, their definition levels (when
/// the column has them), scratch for one chunk's asked positions, and (variable-width
/// values) the end of each value in `values`, after a leading 0.
struct Picked {
    values: Vec<u8>,
    def: Option<Vec<u16>>,
    idx: Vec<usize>,
    offsets: Vec<u64>,
}

/// `ranges` without its empty ranges (borrowed when it has none).
fn non_empty(ranges: &[Range<u64>]) -> std::borrow::Cow<'_, [Range<u64>]> {
    if ranges.iter().all(|r| r.start < r.end) {
        std::borrow::Cow::Borrowed(ranges)
    } else {
        std::borrow::Cow::Owned(ranges.iter().filter(|r| r.start < r.end).cloned().collect())
    }
}

/// Appends the values at positions `idx` of one chunk's value buffer (`n` values) to
/// the picked bytes (and, for variable-width values, their offsets).
type ValueEmitter<'a> =
    dyn FnMut(&[u8], u64, &[usize], &mut Vec<u8>, &mut Vec<u64>) -> Result<()> + 'a;

/// Fixed-width values: plain (`width` bytes each) or inline-bitpacked primitives.
fn pick_fixed_values(
    value_c: &Compression,
    width: usize,
    buf: &[u8],
    n: u64,
    idx: &[usize],
    values: &mut Vec<u8>,
) -> Result<()> {
    match value_c {
        Compression::InlineBitpacking(b) => {
            compression::bitpacking::pick_inline(b.uncompressed_bits_per_value, buf, n, idx, values)
        }
        _ => {
            for &i in idx {
                let at = i * width;
                let v = buf.get(at..at + width).filter(|_| (i as u64) < n);
                values.extend_from_slice(v.ok_or_else(|| {
                    FormatError::corrupt(format!(
                        "value {i} of a {n}-value chunk of {} bytes",
                        buf.len()
                    ))
                })?);
            }
            Ok(())
        }
    }
}

/// Variable-width values of a chunk buffer that starts with `n + 1` offsets of `width`
/// bytes (positions in the buffer, after the offsets, not decreasing).
fn pick_variable_values(
    width: usize,
    buf: &[u8],
    n: u64,
    idx: &[usize],
    values: &mut Vec<u8>,
    offsets: &mut Vec<u64>,
) -> Result<()> {
    let bad = |what: String| FormatError::corrupt(format!("variable-width chunk: {what}"));
    let table_end = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_add(1)?.checked_mul(width))
        .filter(|&e| e <= buf.len())
        .ok_or_else(|| bad(format!("{n} offsets overrun its {} bytes", buf.len())))?;
    let offset = |j: usize| -> u64 {
        let at = j * width;
        if width == 4 {
            u64::from(u32::from_le_bytes([
                buf[at],
                buf[at + 1],
                buf[at + 2],
                buf[at + 3],
            ]))
        } else {
            let mut w = [0u8; 8];
            w.copy_from_slice(&buf[at..at + 8]);
            u64::from_le_bytes(w)
        }
    };
    for &i in idx {
        if i as u64 >= n {
            return Err(bad(format!("value {i} of {n}")));
        }
        let (a, b) = (offset(i), offset(i + 1));
        if a > b || a < table_end as u64 || b > buf.len() as u64 {
            return Err(bad(format!(
                "value {i} at bytes {a}..{b} outside {table_end}..{}",
                buf.len()
            )));
        }
        values.extend_from_slice(&buf[a as usize..b as usize]);
        offsets.push(values.len() as u64);
    }
    Ok(())
}

/// Whether a sparse read can pick variable-width values of `value_type` stored under
/// `c`: plain (`Variable` with flat offsets inline in each chunk) or FSST over such; the
/// offset width and the FSST symbol table.
fn pickable_variable<'a>(
    c: &'a Compression,
    value_type: &DataType,
) -> Option<(usize, Option<&'a [u8]>)> {
    if !matches!(
        value_type,
        DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary
    ) {
        return None;
    }
    let (inner, table) = match c {
        Compression::Fsst(f) => (
            compression_of(f.values.as_deref(), "fsst values").ok()?,
            Some(f.symbol_table.as_slice()),
        ),
        other => (other, None),
    };
    match inner {
        Compression::Variable(v) if crate::v23::seq::inline_offsets(v) => {
            Some((compression::variable::offsets_width(v).ok()?, table))
        }
        _ => None,
    }
}

/// Where one mini-block chunk's buffers lie in its bytes.
struct ChunkLayout {
    num_levels: usize,
    rep: Option<Range<usize>>,
    def: Option<Range<usize>>,
    values: Vec<Range<usize>>,
}

/// A mini-block chunk's level count and where its levels lie.
struct ChunkHead {
    num_levels: usize,
    rep: Option<Range<usize>>,
    def: Option<Range<usize>>,
}

/// One mini-block chunk's buffers, as its header lays them out.
struct ChunkParts {
    num_levels: usize,
    rep: Option<Buffer>,
    def: Option<Buffer>,
    values: Vec<Buffer>,
}

/// Decompresses FSST codes (a binary array of still-compressed strings) into `value_type`.
fn expand_fsst(table: &[u8], codes: &ArrayRef, value_type: &DataType) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    let (offsets, data) = match codes.data_type() {
        DataType::Binary => {
            let b = codes.as_binary::<i32>();
            let offs = b.value_offsets().iter().map(|&o| o as u32).collect();
            (Offsets::U32(offs), b.values().clone())
        }
        DataType::LargeBinary => {
            let b = codes.as_binary::<i64>();
            let offs = b.value_offsets().iter().map(|&o| o as u64).collect();
            (Offsets::U64(offs), b.values().clone())
        }
        other => {
            return Err(FormatError::corrupt(format!(
                "FSST codes decoded as {other}, not binary"
            )))
        }
    };
    let plain = compression::fsst::decode(table, DataBlock::Variable { offsets, data })?;
    to_arrow(plain, value_type, None)
}

/// Decodes a buffer of levels (16-bit values) with its block compression.
pub fn decode_levels(c: &Compression, buf: Buffer, n: u64) -> Result<Vec<u16>> {
    match compression::block(c, buf, n)? {
        DataBlock::Fixed {
            bits_per_value: 16,
            data,
            ..
        } => Ok(data
            .as_slice()
            .chunks_exact(2)
            .take(n as usize)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect()),
        DataBlock::Constant { value, .. } if value.len() == 2 => {
            let v = u16::from_le_bytes([value.as_slice()[0], value.as_slice()[1]]);
            Ok(vec![v; n as usize])
        }
        _ => Err(FormatError::corrupt("levels are not 16-bit values")),
    }
}

/// The values of dictionary `indices` (as decoded: u64), each checked against the
/// dictionary's length.
fn expand_dictionary(dict: &ArrayRef, indices: &ArrayRef) -> Result<ArrayRef> {
    let idx = indices
        .as_any()
        .downcast_ref::<UInt64Array>()
        .ok_or_else(|| FormatError::corrupt("dictionary indices are not integers"))?;
    if let Some(bad) = idx.values().iter().find(|&&i| i >= dict.len() as u64) {
        return Err(FormatError::corrupt(format!(
            "dictionary index {bad} out of range for {} items",
            dict.len()
        )));
    }
    Ok(arrow_select::take::take(dict.as_ref(), idx, None)?)
}

/// Widens a block of unsigned dictionary indices to u64.
pub fn indices_array(block: DataBlock) -> Result<ArrayRef> {
    let DataBlock::Fixed {
        bits_per_value,
        data,
        num_values,
    } = block
    else {
        return Err(FormatError::corrupt(
            "dictionary indices are not fixed width",
        ));
    };
    let w = match bits_per_value {
        8 | 16 | 32 | 64 => (bits_per_value / 8) as usize,
        _ => {
            return Err(FormatError::corrupt(format!(
                "dictionary indices of {bits_per_value} bits"
            )))
        }
    };
    let v = compression::read_uints(data.as_slice(), w, num_values as usize)?;
    Ok(Arc::new(UInt64Array::from(v)))
}
