//! Full-zip pages (spec: "Full Zip Page Layout").
//!
//! Buffer 0 zips every entry's control word (repetition level in the high bits,
//! definition level in the low `bits_def` bits; 0, 1, 2 or 4 bytes) with its value:
//! fixed-width values always take their bytes when the entry has a value slot;
//! variable-width values take a length (`bits_per_offset` wide) and bytes, valid items
//! only. Buffer 1, when present, is the repetition index: `rows + 1` byte offsets of
//! row starts, 1/2/4/8 bytes each. Without it the rows have a fixed stride.

use std::ops::Range;

use arrow_buffer::{BooleanBufferBuilder, Buffer};
use arrow_schema::DataType;

use super::{Layer, LeafRun, LevelInfo, Stream};
use crate::block::{to_arrow, DataBlock, Offsets};
use crate::compression::{self, compression_of, general, packed};
use crate::container::PageInfo;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::full_zip_layout::Details;
use crate::pb::enc21::FullZipLayout;
use crate::read::RangeRead;
use crate::{FormatError, Result};

/// A full-zip page, ready to read.
#[derive(Debug)]
pub struct FullZipPage {
    layout: FullZipLayout,
    layers: Vec<Layer>,
    info: LevelInfo,
    data: Range<u64>,
    rep_index: Option<(Range<u64>, usize)>,
    cw_bytes: usize,
    num_rows: u64,
    /// Definition levels up to this value carry value bytes (writer's rule).
    zipped_visible_def: u16,
}

impl FullZipPage {
    /// Prepares `page`.
    pub fn new(page: &PageInfo, layout: &FullZipLayout) -> Result<Self> {
        let layers = Layer::list_from_pb(&layout.layers)?;
        let info = LevelInfo::new(&layers);
        let data = page
            .buffers
            .first()
            .cloned()
            .ok_or_else(|| FormatError::corrupt("full-zip page without data buffer"))?;
        let rep_index = match page.buffers.get(1) {
            Some(r) => {
                let len = r.end - r.start;
                let n = page.num_rows + 1;
                let w = len / n;
                if len % n != 0 || !matches!(w, 1 | 2 | 4 | 8) {
                    return Err(FormatError::corrupt(format!(
                        "full-zip repetition index of {len} bytes for {} rows",
                        page.num_rows
                    )));
                }
                Some((r.clone(), w as usize))
            }
            None => None,
        };
        let bits = layout.bits_rep + layout.bits_def;
        let cw_bytes = match bits {
            0 => 0,
            1..=8 => 1,
            9..=16 => 2,
            17..=32 => 4,
            _ => return Err(FormatError::corrupt("full-zip control word over 32 bits")),
        };
        let zipped_visible_def = layers
            .iter()
            .filter(|l| !l.is_list())
            .map(|l| l.def_levels())
            .sum();
        Ok(Self {
            layout: layout.clone(),
            layers,
            info,
            data,
            rep_index,
            cw_bytes,
            num_rows: page.num_rows,
            zipped_visible_def,
        })
    }

    /// Structural layers (inner-most first).
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Width of one value when the page is bare fixed-width values: no control words,
    /// no repetition index, no nulls. Such pages can be gathered, several at a time,
    /// straight into one buffer (see [`FullZipPage::decode_gathered`]).
    pub fn gatherable(&self) -> Option<usize> {
        let bare = self.cw_bytes == 0
            && self.rep_index.is_none()
            && self.layers.iter().all(|l| *l == Layer::AllValidItem);
        match self.value_bytes() {
            Ok(Some(vb)) if bare && vb > 0 => Some(vb),
            _ => None,
        }
    }

    /// Whether `other` stores values the same way (so one decode covers both).
    pub fn same_values_as(&self, other: &Self) -> bool {
        self.layout.value_compression == other.layout.value_compression
            && self.layout.details == other.layout.details
            && self.layers == other.layers
    }

    /// Decodes `n` values gathered from [`FullZipPage::gatherable`] pages that are
    /// [`FullZipPage::same_values_as`] this one.
    pub fn decode_gathered(&self, buf: Buffer, n: u64, value_type: &DataType) -> Result<LeafRun> {
        let vb = self
            .gatherable()
            .ok_or_else(|| FormatError::corrupt("full-zip page is not bare fixed-width values"))?;
        let need = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(vb))
            .ok_or_else(|| FormatError::corrupt("full-zip size overflows"))?;
        if buf.len() != need {
            return Err(FormatError::corrupt(format!(
                "full-zip values: {} bytes gathered, {need} expected",
                buf.len()
            )));
        }
        let c = compression_of(self.layout.value_compression.as_ref(), "full-zip values")?;
        let block = decode_fixed(c, buf, vb, n)?;
        Ok(LeafRun {
            rep: None,
            def: None,
            num_rows: n,
            values: to_arrow(block, value_type, None)?,
        })
    }

    fn value_bytes(&self) -> Result<Option<usize>> {
        match self.layout.details {
            Some(Details::BitsPerValue(b)) => {
                if b % 8 != 0 {
                    return Err(FormatError::corrupt("full-zip values not byte aligned"));
                }
                Ok(Some((b / 8) as usize))
            }
            Some(Details::BitsPerOffset(_)) => Ok(None),
            None => Err(FormatError::corrupt(
                "full-zip layout without value details",
            )),
        }
    }

    /// Byte ranges of buffer 0 holding rows `ranges` when the row numbers alone give them
    /// (fixed-width rows, no repetition index) and they lie inside the buffer; `None`
    /// otherwise. No I/O: a reader fetching ahead uses it to fold these rows' reads into
    /// its first request.
    pub fn fixed_byte_ranges(&self, ranges: &[Range<u64>]) -> Option<Vec<Range<u64>>> {
        if self.rep_index.is_some() {
            return None;
        }
        let stride = (self.value_bytes().ok()?? + self.cw_bytes) as u64;
        ranges
            .iter()
            .map(|r| {
                let s = self.data.start.checked_add(r.start.checked_mul(stride)?)?;
                let e = self.data.start.checked_add(r.end.checked_mul(stride)?)?;
                (s <= e && e <= self.data.end).then_some(s..e)
            })
            .collect()
    }

    /// Byte ranges of buffer 0 holding rows `ranges` (reads the repetition index).
    pub fn byte_ranges(
        &self,
        io: &dyn RangeRead,
        ranges: &[Range<u64>],
    ) -> Result<Vec<Range<u64>>> {
        if let Some(r) = ranges.first() {
            if ranges.len() == 1 && r.start == 0 && r.end == self.num_rows {
                return Ok(vec![self.data.clone()]);
            }
        }
        match (&self.rep_index, self.value_bytes()?) {
            (None, Some(vb)) => {
                let stride = (vb + self.cw_bytes) as u64;
                Ok(ranges
                    .iter()
                    .map(|r| self.data.start + r.start * stride..self.data.start + r.end * stride)
                    .collect())
            }
            (Some((idx, w)), _) => {
                let w = *w as u64;
                let wanted: Vec<Range<u64>> = ranges
                    .iter()
                    .flat_map(|r| {
                        [
                            idx.start + r.start * w..idx.start + (r.start + 1) * w,
                            idx.start + r.end * w..idx.start + (r.end + 1) * w,
                        ]
                    })
                    .collect();
                let got = io.read_ranges(&wanted)?;
                let vals: Vec<u64> = got
                    .iter()
                    .map(|b| {
                        compression::read_uints(b, w as usize, 1)
                            .map(|v| v.first().copied().unwrap_or(0))
                    })
                    .collect::<Result<_>>()?;
                let size = self.data.end - self.data.start;
                // Rows ascend without overlap, so must their bytes: a repetition index
                // that points back could otherwise have a take read (and gather) the
                // same bytes once per row.
                let mut prev_end = 0u64;
                vals.chunks_exact(2)
                    .map(|p| {
                        if p[0] > p[1] || p[1] > size || p[0] < prev_end {
                            return Err(FormatError::corrupt(format!(
                                "full-zip repetition index points at {}..{} of a {size}-byte buffer (after {prev_end})",
                                p[0], p[1]
                            )));
                        }
                        prev_end = p[1];
                        Ok(self.data.start + p[0]..self.data.start + p[1])
                    })
                    .collect()
            }
            (None, None) => Err(FormatError::corrupt(
                "variable-width full-zip page without a repetition index",
            )),
        }
    }

    /// Reads rows `ranges` (page-relative, sorted, non-overlapping).
    pub fn read(
        &self,
        io: &dyn RangeRead,
        ranges: &[Range<u64>],
        value_type: &DataType,
    ) -> Result<LeafRun> {
        let ranges: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
        if let Some(r) = ranges.iter().find(|r| r.end > self.num_rows) {
            return Err(FormatError::OutOfRange {
                what: format!("rows {r:?} of a {}-row page", self.num_rows),
            });
        }
        let byte_ranges = self.byte_ranges(io, &ranges)?;
        let value_bytes = self.value_bytes()?;
        let (Some(vb), 0) = (value_bytes, self.cw_bytes) else {
            // Control words (or variable-width values): every range's entries unzip into
            // one stream, decoded once (one symbol table, one array) — per range, a take
            // of scattered strings paid a decode setup and a copy into the joined run
            // per row.
            let total = byte_ranges.iter().map(|r| r.end - r.start).sum();
            let mut unzip = Unzip::new(self, value_bytes, total)?;
            io.visit_ranges(&byte_ranges, &mut |i, bytes| {
                let want = ranges.get(i).map_or(0, |r| r.end - r.start);
                unzip.region(self, bytes, want)
            })?;
            let rows = unzip.rows;
            let stream = unzip.finish(self, value_type)?;
            return stream.slice_rows(self.info, false, 0..rows);
        };
        let data = io.read_ranges(&byte_ranges)?;
        // No control words: the buffers are the values. One range stays zero-copy;
        // several are gathered into one buffer and decoded once.
        let n: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let need = (n as usize)
            .checked_mul(vb)
            .ok_or_else(|| FormatError::corrupt("full-zip size overflows"))?;
        let buf = if data.len() == 1 {
            Buffer::from(data.into_iter().next().unwrap_or_default())
        } else {
            let mut v = Vec::with_capacity(need);
            for d in &data {
                v.extend_from_slice(d);
            }
            Buffer::from_vec(v)
        };
        if buf.len() < need {
            return Err(FormatError::corrupt("full-zip values truncated"));
        }
        let c = compression_of(self.layout.value_compression.as_ref(), "full-zip values")?;
        let block = decode_fixed(c, buf.slice_with_length(0, need), vb, n)?;
        Ok(LeafRun {
            rep: None,
            def: None,
            num_rows: n,
            values: to_arrow(block, value_type, None)?,
        })
    }
}

/// Entries of one or more full-zip byte regions unzipped into levels and value bytes,
/// decoded together by [`Unzip::finish`].
struct Unzip {
    rep: Option<Vec<u16>>,
    def: Option<Vec<u16>>,
    fixed: Option<usize>,
    len_bytes: usize,
    def_mask: u32,
    fixed_vals: Vec<u8>,
    var_offs: Vec<u64>,
    var_data: Vec<u8>,
    keep: Vec<bool>,
    any_drop: bool,
    /// Rows unzipped so far.
    rows: u64,
}

impl Unzip {
    /// Ready for regions of `bytes` bytes in all (the value bytes are part of them: the
    /// reservation is bounded by bytes already in hand) of values `fixed` bytes wide, or
    /// of variable width (`None`: each value's length before it).
    fn new(page: &FullZipPage, fixed: Option<usize>, bytes: u64) -> Result<Self> {
        let bits_def = page.layout.bits_def;
        let len_bytes = match page.layout.details {
            Some(Details::BitsPerOffset(b)) if matches!(b, 8 | 16 | 32 | 64) => (b / 8) as usize,
            Some(Details::BitsPerOffset(b)) => {
                return Err(FormatError::corrupt(format!("full-zip {b}-bit lengths")))
            }
            _ => 0,
        };
        let bytes = usize::try_from(bytes).unwrap_or(0);
        Ok(Unzip {
            rep: (page.layout.bits_rep > 0).then(Vec::new),
            def: (bits_def > 0).then(Vec::new),
            fixed,
            len_bytes,
            def_mask: if bits_def >= 32 {
                u32::MAX
            } else {
                (1u32 << bits_def) - 1
            },
            fixed_vals: Vec::with_capacity(if fixed.is_some() { bytes } else { 0 }),
            var_offs: vec![0],
            var_data: Vec::with_capacity(if fixed.is_none() { bytes } else { 0 }),
            keep: Vec::new(),
            any_drop: false,
            rows: 0,
        })
    }

    /// Unzips one region, which must hold exactly `want` whole rows.
    fn region(&mut self, page: &FullZipPage, bytes: &[u8], want: u64) -> Result<()> {
        let bits_def = page.layout.bits_def;
        let has_rep = page.layout.bits_rep > 0;
        let has_def = bits_def > 0;
        let mut rows = 0u64;
        let mut p = 0usize;
        while p < bytes.len() {
            let (r, d) = if page.cw_bytes == 0 {
                (0u32, 0u32)
            } else {
                let w = bytes
                    .get(p..p + page.cw_bytes)
                    .ok_or_else(|| FormatError::corrupt("full-zip control word truncated"))?;
                let mut word = [0u8; 4];
                word[..page.cw_bytes].copy_from_slice(w);
                p += page.cw_bytes;
                let word = u32::from_le_bytes(word);
                match (has_rep, has_def) {
                    (true, true) => (word >> bits_def, word & self.def_mask),
                    (true, false) => (word, 0),
                    (false, true) => (0, word),
                    (false, false) => (0, 0),
                }
            };
            let d16 = u16::try_from(d).map_err(|_| FormatError::corrupt("definition level"))?;
            if let Some(v) = self.rep.as_mut() {
                let r16 = u16::try_from(r).map_err(|_| FormatError::corrupt("repetition level"))?;
                if r16 == page.info.max_rep {
                    rows += 1;
                } else if rows == 0 {
                    return Err(FormatError::corrupt(
                        "full-zip rows read do not start at a row boundary",
                    ));
                }
                v.push(r16);
            } else {
                rows += 1;
            }
            if let Some(v) = self.def.as_mut() {
                v.push(d16);
            }
            if d16 > page.zipped_visible_def {
                continue;
            }
            let leaf_visible = d16 <= page.info.max_visible_def;
            self.any_drop |= !leaf_visible;
            self.keep.push(leaf_visible);
            match self.fixed {
                Some(vb) => {
                    let v = bytes
                        .get(p..p + vb)
                        .ok_or_else(|| FormatError::corrupt("full-zip value truncated"))?;
                    self.fixed_vals.extend_from_slice(v);
                    p += vb;
                }
                None => {
                    if d16 == 0 {
                        let l = compression::read_uints(
                            bytes.get(p..).unwrap_or(&[]),
                            self.len_bytes,
                            1,
                        )?
                        .first()
                        .copied()
                        .unwrap_or(0) as usize;
                        p += self.len_bytes;
                        let v = bytes
                            .get(p..p.saturating_add(l))
                            .ok_or_else(|| FormatError::corrupt("full-zip value truncated"))?;
                        self.var_data.extend_from_slice(v);
                        p += l;
                    }
                    self.var_offs.push(self.var_data.len() as u64);
                }
            }
        }
        if rows != want {
            return Err(FormatError::corrupt(format!(
                "full-zip bytes of {want} rows hold {rows}"
            )));
        }
        self.rows += rows;
        Ok(())
    }

    /// The unzipped entries as one stream: values decoded once.
    fn finish(self, page: &FullZipPage, value_type: &DataType) -> Result<Stream> {
        let n = self.keep.len() as u64;
        let c = compression_of(page.layout.value_compression.as_ref(), "full-zip values")?;
        let block = match self.fixed {
            Some(vb) => decode_fixed(c, Buffer::from_vec(self.fixed_vals), vb, n)?,
            None => decode_variable(
                c,
                DataBlock::Variable {
                    offsets: Offsets::U64(self.var_offs),
                    data: Buffer::from_vec(self.var_data),
                },
            )?,
        };
        let mut values = to_arrow(block, value_type, None)?;
        if self.any_drop {
            let mask = arrow_array::BooleanArray::from(self.keep);
            values = arrow_select::filter::filter(values.as_ref(), &mask)?;
        }
        Ok(Stream {
            rep: self.rep,
            def: self.def,
            values,
        })
    }
}

/// Per-value decoding of fixed-width full-zip values.
fn decode_fixed(c: &Compression, buf: Buffer, value_bytes: usize, n: u64) -> Result<DataBlock> {
    match c {
        Compression::Flat(f) => {
            if f.bits_per_value != (value_bytes * 8) as u64 {
                return Err(FormatError::corrupt("full-zip flat width mismatch"));
            }
            Ok(DataBlock::Fixed {
                bits_per_value: f.bits_per_value,
                data: buf,
                num_values: n,
            })
        }
        Compression::Constant(k) => Ok(match &k.value {
            Some(v) => DataBlock::Constant {
                value: Buffer::from_slice_ref(v),
                num_values: n,
            },
            None => DataBlock::AllNull { num_values: n },
        }),
        Compression::FixedSizeList(fsl) => unzip_fsl(fsl, buf, value_bytes, n),
        other => Err(FormatError::unsupported(
            compression::name(other),
            "not valid as full-zip fixed-width compression",
        )),
    }
}

/// A fixed-size list value zipped with its item validity: per row, the validity bits
/// (bytes rounded up) of each nullable layer, then the item bytes.
fn unzip_fsl(
    fsl: &crate::pb::enc21::FixedSizeList,
    buf: Buffer,
    value_bytes: usize,
    n: u64,
) -> Result<DataBlock> {
    // Collect the nested FSL layers.
    let mut dims = vec![(fsl.items_per_value, fsl.has_validity)];
    let mut inner = compression_of(fsl.values.as_deref(), "fixed-size list values")?;
    while let Compression::FixedSizeList(f) = inner {
        dims.push((f.items_per_value, f.has_validity));
        inner = compression_of(f.values.as_deref(), "fixed-size list values")?;
    }
    let item_bits = match inner {
        Compression::Flat(f) => f.bits_per_value,
        Compression::Constant(_) => 0,
        other => {
            return Err(FormatError::unsupported(
                compression::name(other),
                "fixed-size list items in full-zip must be flat",
            ))
        }
    };
    if item_bits % 8 != 0 {
        return Err(FormatError::corrupt(
            "fixed-size list items not byte aligned",
        ));
    }
    let rows = n as usize;
    let mut cum = 1usize;
    let mut validity_layout = Vec::new(); // (bits per row, bytes per row) for layers with validity
    for (d, v) in &dims {
        cum = cum
            .checked_mul(*d as usize)
            .ok_or_else(|| FormatError::corrupt("fixed-size list too large"))?;
        if *v {
            validity_layout.push((cum, cum.div_ceil(8)));
        }
    }
    let item_bytes = (item_bits / 8) as usize;
    let data_per_row = cum * item_bytes;
    let per_row: usize = validity_layout.iter().map(|(_, b)| b).sum::<usize>() + data_per_row;
    if per_row != value_bytes && !(item_bits == 0 && validity_layout.is_empty()) {
        return Err(FormatError::corrupt(format!(
            "full-zip fixed-size list rows of {value_bytes} bytes, layout needs {per_row}"
        )));
    }
    let src = buf.as_slice();
    if src.len() < per_row * rows {
        return Err(FormatError::corrupt(
            "full-zip fixed-size list values truncated",
        ));
    }
    if validity_layout.is_empty() && item_bits > 0 {
        // Nothing zipped in: the rows are the items, zero-copy.
        let mut block = DataBlock::Fixed {
            bits_per_value: item_bits,
            data: buf.slice_with_length(0, per_row * rows),
            num_values: (cum * rows) as u64,
        };
        for (d, _) in dims.iter().rev() {
            block = DataBlock::FixedSizeList {
                dim: *d,
                child: Box::new(block),
                validity: None,
            };
        }
        return Ok(block);
    }
    let mut builders: Vec<BooleanBufferBuilder> = validity_layout
        .iter()
        .map(|(bits, _)| BooleanBufferBuilder::new(bits * rows))
        .collect();
    let mut data = Vec::with_capacity(data_per_row * rows);
    let mut p = 0usize;
    for _ in 0..rows {
        for (b, (bits, bytes)) in builders.iter_mut().zip(&validity_layout) {
            b.append_packed_range(p * 8..p * 8 + bits, src);
            p += bytes;
        }
        data.extend_from_slice(&src[p..p + data_per_row]);
        p += data_per_row;
    }
    let mut block = if item_bits == 0 {
        DataBlock::AllNull {
            num_values: (cum * rows) as u64,
        }
    } else {
        DataBlock::Fixed {
            bits_per_value: item_bits,
            data: Buffer::from_vec(data),
            num_values: (cum * rows) as u64,
        }
    };
    let mut validity = builders.into_iter().map(|mut b| b.finish()).rev();
    for (d, v) in dims.iter().rev() {
        block = DataBlock::FixedSizeList {
            dim: *d,
            child: Box::new(block),
            validity: if *v { validity.next() } else { None },
        };
    }
    Ok(block)
}

/// Per-value decoding of variable-width full-zip values.
fn decode_variable(c: &Compression, block: DataBlock) -> Result<DataBlock> {
    match c {
        Compression::Variable(_) => Ok(block),
        Compression::Fsst(f) => compression::fsst::decode(&f.symbol_table, block),
        Compression::General(g) => {
            let DataBlock::Variable { offsets, data } = block else {
                return Err(FormatError::corrupt("general per-value over fixed data"));
            };
            let n = offsets.len().saturating_sub(1);
            let mut out = Vec::new();
            let mut offs = Vec::with_capacity(n + 1);
            offs.push(0u64);
            for i in 0..n {
                let (s, e) = (offsets.get(i).unwrap_or(0), offsets.get(i + 1).unwrap_or(0));
                if s > e || e as usize > data.len() {
                    return Err(FormatError::corrupt("per-value offsets out of range"));
                }
                let piece = data.slice_with_length(s as usize, (e - s) as usize);
                let plain = general::decompress(g.compression.as_ref(), &piece)?;
                out.extend_from_slice(plain.as_slice());
                offs.push(out.len() as u64);
            }
            let inner = DataBlock::Variable {
                offsets: Offsets::U64(offs),
                data: Buffer::from_vec(out),
            };
            match g.values.as_deref().and_then(|v| v.compression.as_ref()) {
                Some(inner_c) => decode_variable(inner_c, inner),
                None => Ok(inner),
            }
        }
        Compression::VariablePackedStruct(v) => packed::decode_variable(v, &block),
        other => Err(FormatError::unsupported(
            compression::name(other),
            "not valid as full-zip variable-width compression",
        )),
    }
}
