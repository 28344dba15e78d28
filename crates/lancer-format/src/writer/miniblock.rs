//! Writing mini-block pages (spec: "Mini Block Page Layout"); the byte layout is
//! described in `crate::structural::miniblock`.

use std::collections::HashMap;

use super::compress::{self as c, ChunkBuffer, ValueChunk};
use super::page::{bits_for, EncodedPage, Knobs, ValueParts};
use super::shred::Shredded;
use crate::container::FileVersion;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::{
    self, page_layout::Layout, CompressionScheme, CompressiveEncoding, PageLayout,
};
use crate::structural::LevelInfo;
use crate::{FormatError, Result};

/// A fast, fixed (unseeded) hash for the dictionary's value lookup: the values are
/// short byte strings; the dictionary's order is the values' first appearance, so the
/// hash never shows in the output.
#[derive(Default, Clone, Copy)]
struct ValueHasher(u64);

impl std::hash::Hasher for ValueHasher {
    fn finish(&self) -> u64 {
        // Final avalanche (from splitmix64) so the table's low bits are well mixed.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

fn pad8(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(8) {
        v.push(0);
    }
}

/// The largest dictionary cardinality `try_dictionary` could accept for these values
/// (`usize::MAX` when forced by `dict_key_bits`).
fn max_useful_cardinality(values: &ValueParts, n: usize, knobs: &Knobs) -> usize {
    if knobs.dict_key_bits.is_some() {
        return usize::MAX;
    }
    let n64 = n as u64;
    // encoded = card * per_entry + 4n must stay below dict_ratio * raw.
    let (raw, per_entry) = match values {
        ValueParts::Fixed { bits, .. } => (n64 * bits / 8, 16u64),
        ValueParts::Variable { data, .. } => {
            let avg = data.len() as u64 / n64.max(1);
            (data.len() as u64 + 4 * n64, avg + 4)
        }
        _ => return usize::MAX,
    };
    let budget = knobs.dict_ratio * raw as f64 - 4.0 * n64 as f64;
    if budget <= 0.0 {
        return 0;
    }
    let mut cap = (budget / per_entry.max(1) as f64).ceil() as u64 + 1;
    if let Some(d) = knobs.dict_divisor {
        cap = cap.min(n64 / d.max(1) + 1);
    }
    usize::try_from(cap).unwrap_or(usize::MAX)
}

/// Dictionary-encodes when it is estimated to pay: returns (indices, dictionary).
fn try_dictionary(values: &ValueParts, knobs: &Knobs) -> Option<(Vec<u64>, ValueParts)> {
    type Getter<'a> = Box<dyn Fn(usize) -> &'a [u8] + 'a>;
    let (n, get): (usize, Getter<'_>) = match values {
        ValueParts::Fixed { bits, data, n } if *bits >= 8 && bits % 8 == 0 => {
            let w = (*bits / 8) as usize;
            (*n, Box::new(move |i| &data[i * w..(i + 1) * w]))
        }
        ValueParts::Variable { offsets, data, .. } => (
            offsets.len() - 1,
            Box::new(move |i| &data[offsets[i] as usize..offsets[i + 1] as usize]),
        ),
        _ => return None,
    };
    if n < 100 && knobs.dict_key_bits.is_none() {
        return None;
    }
    // Give up early once the dictionary cannot pay.
    let mut ids: HashMap<&[u8], u64, std::hash::BuildHasherDefault<ValueHasher>> =
        HashMap::with_capacity_and_hasher((n / 10).clamp(1024, 1 << 16), Default::default());
    let mut order: Vec<usize> = Vec::new();
    let mut indices = Vec::with_capacity(n);
    // Both refusals below (`too_many`, `no_gain`) only grow with the number of distinct
    // values, so counting can stop as soon as the count passes the largest one that could
    // still be accepted (e.g. 32-bit values can never pay: 4-byte indices alone match
    // the plain size).
    let limit = (n / 2 + 1).min(max_useful_cardinality(values, n, knobs));
    // Sample first: when the first tenth is mostly distinct a dictionary cannot pay.
    let probe = (n / 10).max(1000).min(n);
    for i in 0..n {
        if i == probe && ids.len() * 2 > probe && knobs.dict_key_bits.is_none() {
            return None;
        }
        // Nearly every one of the first 1,024 values distinct: the page is all but
        // unique, no dictionary can pay (saves hashing a tenth of a unique page).
        if i == 1024 && probe > 1024 && ids.len() > 1000 && knobs.dict_key_bits.is_none() {
            return None;
        }
        let v = get(i);
        let next = ids.len() as u64;
        let id = *ids.entry(v).or_insert_with(|| {
            order.push(i);
            next
        });
        indices.push(id);
        if ids.len() > limit && knobs.dict_key_bits.is_none() {
            return None;
        }
    }
    let card = ids.len() as u64;
    let (raw, encoded) = match values {
        ValueParts::Fixed { bits, .. } => {
            let raw = n as u64 * bits / 8;
            (raw, card * 16 + n as u64 * 4)
        }
        ValueParts::Variable { data, .. } => {
            let raw = data.len() as u64 + 4 * n as u64;
            let avg = data.len() as u64 / (n as u64).max(1);
            (raw, card * avg + card * 4 + n as u64 * 4)
        }
        ValueParts::Fsl { .. } | ValueParts::Packed { .. } | ValueParts::VarPacked { .. } => {
            return None
        }
    };
    let too_many = knobs
        .dict_divisor
        .is_some_and(|d| card > (n as u64 / d.max(1)));
    let no_gain = raw == 0 || (encoded as f64 / raw as f64) >= knobs.dict_ratio;
    if knobs.dict_key_bits.is_none() && (too_many || no_gain) {
        return None;
    }
    let dict = match values {
        ValueParts::Fixed { bits, .. } => {
            let mut data = Vec::new();
            for &i in &order {
                data.extend_from_slice(get(i));
            }
            ValueParts::Fixed {
                bits: *bits,
                data: arrow_buffer::Buffer::from_vec(data),
                n: order.len(),
            }
        }
        ValueParts::Variable { wide, .. } => {
            let mut data = Vec::new();
            let mut offsets = vec![0u64];
            for &i in &order {
                data.extend_from_slice(get(i));
                offsets.push(data.len() as u64);
            }
            ValueParts::Variable {
                offsets,
                data: arrow_buffer::Buffer::from_vec(data),
                wide: *wide,
            }
        }
        ValueParts::Fsl { .. } | ValueParts::Packed { .. } | ValueParts::VarPacked { .. } => {
            return None
        }
    };
    Some((indices, dict))
}

/// Compressed chunks of the values, and their description.
fn chunk_values<'a>(
    values: &'a ValueParts,
    knobs: &Knobs,
    fsst_table: Option<Vec<u8>>,
) -> Result<(Vec<ValueChunk<'a>>, CompressiveEncoding)> {
    let (chunks, e) = match values {
        ValueParts::VarPacked { .. } => {
            return Err(FormatError::unsupported(
                "mini-block",
                "packed structs with variable-width children are written as full-zip pages",
            ))
        }
        ValueParts::Fixed { bits, data, n } => {
            let bits = *bits;
            let byte_sized = matches!(bits, 8 | 16 | 32 | 64);
            if knobs.no_compression || !byte_sized {
                (c::flat_chunks(data, bits, *n), c::flat(bits))
            } else if knobs.compression.is_some()
                && knobs.bss != Some(false)
                && (bits == 32 || bits == 64)
                && knobs.bss == Some(true)
            {
                let w = (bits / 8) as usize;
                let plan =
                    c::plan_chunks(*n, c::MAX_CHUNK_VALUES, |_, k| k * w <= c::MAX_CHUNK_BYTES);
                let chunks = plan
                    .into_iter()
                    .map(|(s, k)| ValueChunk {
                        buffers: vec![ChunkBuffer::owned(c::bss(&data[s * w..(s + k) * w], w, k))],
                        num_values: k,
                    })
                    .collect();
                let e = c::enc(Compression::ByteStreamSplit(Box::new(
                    enc21::ByteStreamSplit {
                        values: Some(Box::new(c::flat(bits))),
                    },
                )));
                (chunks, e)
            } else if (c::run_count(data, bits, *n) as f64) < (*n as f64) * knobs.rle_threshold {
                (c::rle_chunks(data, bits, *n), c::rle(bits))
            } else {
                let widths = c::block_widths(data, bits)?;
                let saves = widths.iter().any(|&w| (w as u64) < bits);
                let too_small = widths.len() == 1 && (1024 * widths[0]).div_ceil(8) >= data.len();
                if saves && !too_small {
                    (
                        c::inline_bitpack_chunks(data, bits)?,
                        c::inline_bitpacking(bits),
                    )
                } else {
                    (c::flat_chunks(data, bits, *n), c::flat(bits))
                }
            }
        }
        ValueParts::Variable {
            offsets,
            data,
            wide,
        } => {
            let bits = if *wide { 64 } else { 32 };
            if let Some(table) = fsst_table {
                // `values` are the FSST-compressed strings already (see `fsst_values`).
                let chunks = c::variable_chunks(offsets, data, *wide);
                let e = c::enc(Compression::Fsst(Box::new(enc21::Fsst {
                    symbol_table: table,
                    values: Some(Box::new(c::variable(bits))),
                })));
                (chunks, e)
            } else {
                (c::variable_chunks(offsets, data, *wide), c::variable(bits))
            }
        }
        ValueParts::Packed { bits, data, n } => {
            let total: u64 = bits.iter().sum();
            let e = c::enc(Compression::PackedStruct(Box::new(enc21::PackedStruct {
                bits_per_value: bits.clone(),
                values: Some(Box::new(c::flat(total))),
            })));
            (c::flat_chunks(data, total, *n), e)
        }
        ValueParts::Fsl {
            dim,
            item_bits,
            data,
            validity,
            n,
        } => {
            let row_bytes = (*dim * *item_bits / 8) as usize;
            let vbits = *dim as usize;
            let plan = c::plan_chunks(*n, c::MAX_CHUNK_VALUES, |_, k| {
                k * row_bytes
                    + if validity.is_some() {
                        (k * vbits).div_ceil(8)
                    } else {
                        0
                    }
                    <= c::MAX_CHUNK_BYTES
            });
            let chunks = plan
                .into_iter()
                .map(|(s, k)| {
                    let mut buffers = Vec::new();
                    if let Some(v) = validity {
                        let mut out = vec![0u8; (k * vbits).div_ceil(8)];
                        for i in 0..k * vbits {
                            let bit = s * vbits + i;
                            if v.get(bit / 8).is_some_and(|b| b >> (bit % 8) & 1 == 1) {
                                out[i / 8] |= 1 << (i % 8);
                            }
                        }
                        buffers.push(ChunkBuffer::owned(out));
                    }
                    buffers.push(ChunkBuffer::borrowed(
                        &data[s * row_bytes..(s + k) * row_bytes],
                    ));
                    ValueChunk {
                        buffers,
                        num_values: k,
                    }
                })
                .collect();
            let e = c::enc(Compression::FixedSizeList(Box::new(enc21::FixedSizeList {
                items_per_value: *dim,
                values: Some(Box::new(c::flat(*item_bits))),
                has_validity: validity.is_some(),
            })));
            (chunks, e)
        }
    };
    // General compression of each chunk's first buffer, when asked for.
    let (chunks, e) = (chunks, e);
    match knobs.compression {
        Some(scheme) if !knobs.fsst_forced => {
            let chunks = chunks
                .into_iter()
                .map(|mut ch| {
                    if let Some(b0) = ch.buffers.first_mut() {
                        *b0 =
                            ChunkBuffer::owned(c::general(scheme, knobs.level, &b0.contiguous())?);
                    }
                    Ok(ch)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((chunks, c::general_encoding(scheme, knobs.level, e)))
        }
        _ => Ok((chunks, e)),
    }
}

/// FSST-compresses variable-width values when that is the rule (text of 5+ byte values,
/// 32 KiB or more, or when the field asks for FSST): the compressed values and the
/// serialised symbol table.
fn fsst_values(values: ValueParts, knobs: &Knobs) -> Result<(ValueParts, Option<Vec<u8>>)> {
    if let ValueParts::Variable {
        offsets,
        data,
        wide,
    } = &values
    {
        let max_len = offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let use_fsst = !knobs.no_compression
            && (knobs.fsst_forced || (max_len >= 5 && data.len() >= 32 * 1024));
        if use_fsst {
            let (table, coffs, cdata) = super::fsst::compress(offsets, data)?;
            return Ok((
                ValueParts::Variable {
                    offsets: coffs,
                    data: arrow_buffer::Buffer::from_vec(cdata),
                    wide: *wide,
                },
                Some(table),
            ));
        }
    }
    Ok((values, None))
}

/// Encodes the dictionary items as one block.
fn dictionary_block(
    dict: &ValueParts,
    version: FileVersion,
) -> Result<(Vec<u8>, CompressiveEncoding)> {
    let (plain, e) = match dict {
        ValueParts::Fixed { bits, data, .. } => (data.to_vec(), c::flat(*bits)),
        ValueParts::Variable {
            offsets,
            data,
            wide,
        } => (
            c::variable_block(offsets, data, *wide),
            c::variable(if *wide { 64 } else { 32 }),
        ),
        ValueParts::Fsl { .. } | ValueParts::Packed { .. } | ValueParts::VarPacked { .. } => {
            return Err(FormatError::corrupt(
                "no dictionaries of lists or packed structs",
            ))
        }
    };
    if version >= FileVersion::V2_2 {
        let s = CompressionScheme::CompressionAlgorithmLz4;
        Ok((
            c::general(s, None, &plain)?,
            c::general_encoding(s, None, e),
        ))
    } else {
        Ok((plain, e))
    }
}

/// Levels of each chunk, out-of-line bitpacked at the page's width.
fn level_buffers(
    levels: &[u16],
    bounds: &[(usize, usize)],
) -> Result<(Vec<Vec<u8>>, CompressiveEncoding)> {
    let max = levels.iter().copied().max().unwrap_or(0);
    let width = (bits_for(u64::from(max)) as usize).max(1);
    let mut e = c::flat(16);
    let mut out = Vec::with_capacity(bounds.len());
    for &(a, b) in bounds {
        let vals: Vec<u64> = levels[a..b].iter().map(|&x| u64::from(x)).collect();
        let (buf, enc) = c::out_of_line_bitpack(&vals, 16, width)?;
        e = enc;
        out.push(buf);
    }
    Ok((out, e))
}

/// Encodes a mini-block page.
pub fn encode(
    s: &Shredded,
    values: ValueParts,
    knobs: &Knobs,
    version: FileVersion,
    layers: Vec<i32>,
    info: LevelInfo,
    num_rows: u64,
) -> Result<EncodedPage> {
    let large = version >= FileVersion::V2_2;
    let (dict, vals) = match try_dictionary(&values, knobs) {
        Some((indices, dict)) => {
            let bits = knobs.dict_key_bits.unwrap_or(32);
            let width = (bits / 8) as usize;
            let mut data = Vec::with_capacity(indices.len() * width);
            for i in &indices {
                data.extend_from_slice(&i.to_le_bytes()[..width]);
            }
            (
                Some(dict),
                ValueParts::Fixed {
                    bits,
                    data: arrow_buffer::Buffer::from_vec(data),
                    n: indices.len(),
                },
            )
        }
        None => (None, values),
    };
    let n_items = match &vals {
        ValueParts::VarPacked { offsets, .. } => offsets.len() - 1,
        ValueParts::Fixed { n, .. } | ValueParts::Fsl { n, .. } | ValueParts::Packed { n, .. } => {
            *n
        }
        ValueParts::Variable { offsets, .. } => offsets.len() - 1,
    };
    let (vals, fsst_table) = fsst_values(vals, knobs)?;
    let (chunks, value_enc) = chunk_values(&vals, knobs, fsst_table)?;

    // Level ranges of each chunk: cut the level stream at the entry of each chunk's
    // first value; entries without values stay with the chunk before.
    let n_entries = crate::structural::num_entries(s.rep.as_ref(), s.def.as_ref(), n_items);
    let mut value_entry: Vec<usize> = Vec::with_capacity(n_items);
    match &s.def {
        Some(d) if s.rep.is_some() => {
            for (i, &x) in d.iter().enumerate() {
                if x <= info.max_visible_def {
                    value_entry.push(i);
                }
            }
        }
        _ => value_entry.extend(0..n_items),
    }
    let mut bounds = Vec::with_capacity(chunks.len());
    let mut v = 0usize;
    for (k, ch) in chunks.iter().enumerate() {
        let a = if k == 0 {
            0
        } else {
            value_entry.get(v).copied().unwrap_or(n_entries)
        };
        v += ch.num_values;
        let b = if k + 1 == chunks.len() {
            n_entries
        } else {
            value_entry.get(v).copied().unwrap_or(n_entries)
        };
        bounds.push((a, b));
    }
    let (rep_bufs, rep_enc) = match &s.rep {
        Some(r) => {
            let (b, e) = level_buffers(r, &bounds)?;
            (Some(b), Some(e))
        }
        None => (None, None),
    };
    let (def_bufs, def_enc) = match &s.def {
        Some(d) => {
            let (b, e) = level_buffers(d, &bounds)?;
            (Some(b), Some(e))
        }
        None => (None, None),
    };

    // Serialise chunks.
    let num_buffers = chunks.first().map_or(1, |c| c.buffers.len());
    let level_bytes = |b: &Option<Vec<Vec<u8>>>| {
        b.as_ref()
            .map_or(0, |v| v.iter().map(|x| x.len() + 8).sum::<usize>())
    };
    let mut body = Vec::with_capacity(
        chunks
            .iter()
            .map(|ch| ch.buffers.iter().map(|b| b.len() + 8).sum::<usize>() + 32)
            .sum::<usize>()
            + level_bytes(&rep_bufs)
            + level_bytes(&def_bufs),
    );
    let mut meta = Vec::new();
    for (k, ch) in chunks.iter().enumerate() {
        let start = body.len();
        let (a, b) = bounds[k];
        let num_levels = u16::try_from(b - a).map_err(|_| {
            FormatError::unsupported("mini-block chunk", "more than 65535 levels in one chunk")
        })?;
        let mut head = Vec::new();
        head.extend_from_slice(&num_levels.to_le_bytes());
        let small = |len: usize| -> Result<[u8; 2]> {
            u16::try_from(len).map(|x| x.to_le_bytes()).map_err(|_| {
                FormatError::unsupported("mini-block chunk", "a level buffer over 64 KiB")
            })
        };
        if let Some(r) = &rep_bufs {
            head.extend_from_slice(&small(r[k].len())?);
        }
        if let Some(d) = &def_bufs {
            head.extend_from_slice(&small(d[k].len())?);
        }
        for b in &ch.buffers {
            if large {
                let l = u32::try_from(b.len()).map_err(|_| {
                    FormatError::unsupported("mini-block chunk", "a buffer over 4 GiB")
                })?;
                head.extend_from_slice(&l.to_le_bytes());
            } else {
                head.extend_from_slice(&small(b.len())?);
            }
        }
        body.extend_from_slice(&head);
        pad8(&mut body);
        for buf in rep_bufs.iter().chain(def_bufs.iter()).map(|v| &v[k]) {
            body.extend_from_slice(buf);
            pad8(&mut body);
        }
        for buf in &ch.buffers {
            buf.write_to(&mut body);
            pad8(&mut body);
        }
        let words = (body.len() - start) / 8;
        let last = k + 1 == chunks.len();
        let log = if last {
            0
        } else {
            ch.num_values.trailing_zeros() as u64
        };
        let word = (((words - 1) as u64) << 4) | log;
        if large {
            let w = u32::try_from(word)
                .map_err(|_| FormatError::unsupported("mini-block chunk", "chunk too large"))?;
            meta.extend_from_slice(&w.to_le_bytes());
        } else {
            if words > 4096 {
                return Err(FormatError::unsupported(
                    "mini-block chunk",
                    "chunk over 32 KiB in a 2.1 file",
                ));
            }
            meta.extend_from_slice(&(word as u16).to_le_bytes());
        }
    }
    let mut buffers = vec![
        arrow_buffer::Buffer::from_vec(meta),
        arrow_buffer::Buffer::from_vec(body),
    ];
    let mut dictionary = None;
    let mut num_dictionary_items = 0;
    if let Some(d) = &dict {
        let (b, e) = dictionary_block(d, version)?;
        num_dictionary_items = match d {
            ValueParts::Fixed { n, .. } => *n as u64,
            ValueParts::Variable { offsets, .. } => offsets.len() as u64 - 1,
            ValueParts::Fsl { n, .. } | ValueParts::Packed { n, .. } => *n as u64,
            ValueParts::VarPacked { offsets, .. } => offsets.len() as u64 - 1,
        };
        buffers.push(arrow_buffer::Buffer::from_vec(b));
        dictionary = Some(e);
    }
    if let Some(r) = &s.rep {
        buffers.push(arrow_buffer::Buffer::from_vec(repetition_index(
            r,
            &bounds,
            info.max_rep,
        )));
    }
    Ok(EncodedPage {
        buffers,
        layout: PageLayout {
            layout: Some(Layout::MiniBlockLayout(enc21::MiniBlockLayout {
                rep_compression: rep_enc,
                def_compression: def_enc,
                value_compression: Some(value_enc),
                dictionary,
                num_dictionary_items,
                layers,
                num_buffers: num_buffers as u64,
                repetition_index_depth: u32::from(s.rep.is_some()),
                num_items: n_items as u64,
                has_large_chunk: large,
            })),
        },
        num_rows,
    })
}

/// Per chunk: rows that end in it, and the entries of a row that continues past it.
fn repetition_index(rep: &[u16], bounds: &[(usize, usize)], max_rep: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(bounds.len() * 16);
    for &(a, b) in bounds {
        let starts = rep[a..b].iter().filter(|&&r| r == max_rep).count() as u64;
        let preamble = a < b && rep[a] != max_rep;
        let trailer = b < rep.len() && rep[b] != max_rep;
        let ends = starts + u64::from(preamble) - u64::from(trailer);
        let partial = if trailer {
            let last_start = rep[a..b]
                .iter()
                .rposition(|&r| r == max_rep)
                .map_or(a, |p| a + p);
            (b - last_start) as u64
        } else {
            0
        };
        out.extend_from_slice(&ends.to_le_bytes());
        out.extend_from_slice(&partial.to_le_bytes());
    }
    out
}
