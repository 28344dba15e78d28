//! Sparse reads of mini-block pages: which value encodings single values can be picked
//! out of, and picking the asked rows' values (and definition levels) out of the chunks
//! of a take without decoding whole chunks ([`MiniBlockPage::read`] decides when).

use std::ops::Range;

use arrow_buffer::Buffer;
use arrow_schema::DataType;

use crate::block::{to_arrow, DataBlock, Offsets};
use crate::compression::{self, compression_of};
use crate::pb::enc21::compressive_encoding::Compression;
use crate::read::RangeRead;
use crate::structural::LeafRun;
use crate::{FormatError, Result};

use super::{ChunkGroups, MiniBlockPage};

/// The bits per value of a mini-block value encoding [`MiniBlockPage::read`] can pick
/// single values out of: plain values, inline-bitpacked primitives, and fixed-size
/// lists without item validity over plain items (one value = the list's items, laid
/// out one after another).
pub(super) fn pickable_bits(value_c: &Compression, value_type: &DataType) -> Option<u64> {
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
    /// The `asked` rows of `groups` (chunk spans and their page-relative row ranges,
    /// sorted; `byte_ranges` their bytes) of a flat column of `width`-byte values,
    /// plain or (primitives) inline-bitpacked, as one run: the source lends each span's
    /// bytes and only the asked rows' definition levels and values are taken out
    /// (bit-unpacked one by one), so neither the chunks nor per-span arrays are copied.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pick_fixed(
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
    pub(super) fn pick_variable(
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
pub(super) fn pickable_variable<'a>(
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
