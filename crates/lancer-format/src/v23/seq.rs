//! Integer sequences of 2.3 pages: the `Range` and `Delta` compressions new in 2.3,
//! metadata-only `Constant`s, `Dictionary`s over them, and variable-width mini-block
//! values whose offsets use them (spec: "Sparse Page Layout" → position / count sets;
//! wire recovered from pylance 14.0.2, see `protos/encodings23.proto`).
//!
//! * `Range { start, step }`: value i = start + i * step; no buffer.
//! * `Delta { base, deltas }`: value 0 = base, value i = value i-1 + delta i-1; the
//!   `n - 1` deltas are decoded from the set's one buffer with `deltas`.
//! * `Constant { value }`: no value = an empty set; a value = every element is it.
//! * `Dictionary { indices, items }`: one buffer framed as `[indices length: u64]
//!   [items length: u64][indices][items]`; items may be metadata-only (no payload).
//! * Variable mini-block values with non-flat offsets: the offsets (`n + 1`, from 0)
//!   come from the offsets encoding — from the chunk's first buffer when it needs one —
//!   and the bytes are the chunk's next buffer.

use arrow_buffer::Buffer;

use crate::block::{DataBlock, Offsets};
use crate::compression::{self, compression_of, read_uints};
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::Variable;
use crate::{FormatError, Result};

/// Most elements one sequence may hold (bounds allocations from metadata-only sets).
pub const MAX_SEQ: u64 = 1 << 31;

/// True when `c` describes its values without any buffer.
pub fn metadata_only(c: &Compression) -> bool {
    match c {
        Compression::Range(_) | Compression::Constant(_) => true,
        Compression::Delta(d) => d
            .deltas
            .as_deref()
            .and_then(|e| e.compression.as_ref())
            .is_some_and(metadata_only),
        Compression::Dictionary(d) => [&d.indices, &d.items].iter().all(|e| {
            e.as_deref()
                .and_then(|e| e.compression.as_ref())
                .is_some_and(metadata_only)
        }),
        _ => false,
    }
}

fn check_n(n: u64, what: &str) -> Result<usize> {
    if n > MAX_SEQ {
        return Err(FormatError::corrupt(format!(
            "{what}: {n} elements exceed the {MAX_SEQ} bound"
        )));
    }
    usize::try_from(n).map_err(|_| FormatError::corrupt(format!("{what}: count overflows")))
}

/// Decodes `n` unsigned integers described by `c`; `buf` is the set's buffer (needed
/// unless [`metadata_only`]).
pub fn decode_u64s(c: &Compression, buf: Option<&Buffer>, n: u64) -> Result<Vec<u64>> {
    let len = check_n(n, "integer sequence")?;
    match c {
        Compression::Range(r) => {
            let mut out = Vec::with_capacity(len);
            let mut v = r.start;
            for _ in 0..len {
                out.push(v);
                v = v.wrapping_add(r.step);
            }
            Ok(out)
        }
        Compression::Constant(k) => match &k.value {
            None if n == 0 => Ok(Vec::new()),
            None => Err(FormatError::corrupt(format!(
                "an empty (value-less constant) sequence claims {n} elements"
            ))),
            Some(v) => {
                let x = le_uint(v)?;
                Ok(vec![x; len])
            }
        },
        Compression::Delta(d) => {
            if n == 0 {
                return Ok(Vec::new());
            }
            let dc = compression_of(d.deltas.as_deref(), "delta deltas")?;
            let deltas = decode_u64s(dc, buf, n - 1)?;
            let mut out = Vec::with_capacity(len);
            let mut v = d.base;
            out.push(v);
            for x in deltas {
                v = v.wrapping_add(x);
                out.push(v);
            }
            Ok(out)
        }
        Compression::Dictionary(dict) => {
            let ic = compression_of(dict.indices.as_deref(), "dictionary indices")?;
            let items_c = compression_of(dict.items.as_deref(), "dictionary items")?;
            let num_items = u64::from(dict.num_dictionary_items);
            // The payload: [indices length: u64][items length: u64][indices][items].
            let (ibuf, itbuf) = match buf {
                Some(b) if !metadata_only(c) => {
                    let (i, t) = dictionary_payloads(b)?;
                    (Some(i), Some(t))
                }
                _ => (None, None),
            };
            let items = if metadata_only(items_c) {
                None
            } else {
                let t = itbuf
                    .as_ref()
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| FormatError::corrupt("dictionary items need a payload"))?;
                if num_items > (t.len() as u64).saturating_mul(8).saturating_add(1024) {
                    return Err(FormatError::corrupt(format!(
                        "{num_items} dictionary items claimed from {} bytes",
                        t.len()
                    )));
                }
                Some(decode_u64s(items_c, Some(t), num_items)?)
            };
            let idx = decode_u64s(ic, ibuf.as_ref(), n)?;
            idx.into_iter()
                .map(|i| {
                    if i >= num_items {
                        return Err(FormatError::corrupt(format!(
                            "dictionary index {i} of {num_items} items"
                        )));
                    }
                    match &items {
                        Some(v) => v
                            .get(i as usize)
                            .copied()
                            .ok_or_else(|| FormatError::corrupt("dictionary index past its items")),
                        None => item_at(items_c, i),
                    }
                })
                .collect()
        }
        other => {
            let b = buf.ok_or_else(|| {
                FormatError::corrupt(format!(
                    "{} integer sequence without its buffer",
                    compression::name(other)
                ))
            })?;
            fixed_to_u64s(compression::block(other, b.clone(), n)?, len)
        }
    }
}

/// Element `i` of a metadata-only sequence (no materialisation).
fn item_at(c: &Compression, i: u64) -> Result<u64> {
    match c {
        Compression::Range(r) => Ok(r.start.wrapping_add(r.step.wrapping_mul(i))),
        Compression::Constant(k) => match &k.value {
            Some(v) => le_uint(v),
            None => Err(FormatError::corrupt("an index into an empty sequence")),
        },
        other => Err(FormatError::unsupported(
            compression::name(other),
            "dictionary items of 2.3 sets must be a range or a constant",
        )),
    }
}

/// Most values one mini-block chunk may hold (the spec allows 32,768).
const MAX_CHUNK_VALUES: u64 = 1 << 20;

fn check_chunk(n: u64) -> Result<()> {
    if n > MAX_CHUNK_VALUES {
        return Err(FormatError::corrupt(format!(
            "a mini-block chunk claims {n} values"
        )));
    }
    Ok(())
}

/// A `Range` / `Delta` mini-block chunk (at most one buffer).
pub fn miniblock(c: &Compression, buf: Option<&Buffer>, n: u64) -> Result<DataBlock> {
    check_chunk(n)?;
    block(c, buf, n)
}

/// The indices and items payloads of a framed dictionary buffer:
/// `[indices length: u64][items length: u64][indices][items]` (recovered from pylance
/// 14's output: 16 + 256 bytes for 1,750 one-bit indices over range items).
fn dictionary_payloads(b: &Buffer) -> Result<(Buffer, Buffer)> {
    let h = read_uints(b.as_slice(), 8, 2)
        .map_err(|_| FormatError::corrupt("dictionary payload shorter than its 16-byte frame"))?;
    let (ilen, itlen) = (h[0], h[1]);
    let end = ilen
        .checked_add(itlen)
        .and_then(|x| x.checked_add(16))
        .filter(|&e| e <= b.len() as u64)
        .ok_or_else(|| FormatError::corrupt("dictionary payloads overrun their buffer"))?;
    let _ = end;
    Ok((
        b.slice_with_length(16, ilen as usize),
        b.slice_with_length(16 + ilen as usize, itlen as usize),
    ))
}

fn le_uint(v: &[u8]) -> Result<u64> {
    if v.is_empty() || v.len() > 8 {
        return Err(FormatError::corrupt(format!(
            "constant integer of {} bytes",
            v.len()
        )));
    }
    let mut b = [0u8; 8];
    b[..v.len()].copy_from_slice(v);
    Ok(u64::from_le_bytes(b))
}

fn fixed_to_u64s(block: DataBlock, n: usize) -> Result<Vec<u64>> {
    match block {
        DataBlock::Fixed {
            bits_per_value,
            data,
            ..
        } if matches!(bits_per_value, 8 | 16 | 32 | 64) => {
            read_uints(data.as_slice(), (bits_per_value / 8) as usize, n)
        }
        DataBlock::Constant { value, .. } => Ok(vec![le_uint(value.as_slice())?; n]),
        _ => Err(FormatError::corrupt(
            "integer sequence did not decode to 8/16/32/64-bit values",
        )),
    }
}

/// Packs integers into a fixed-width block of `bits` (8, 16, 32 or 64).
pub fn to_fixed(vals: &[u64], bits: u64) -> Result<DataBlock> {
    let w = match bits {
        8 | 16 | 32 | 64 => (bits / 8) as usize,
        _ => {
            return Err(FormatError::corrupt(format!(
                "range / delta of {bits}-bit values (must be 8, 16, 32 or 64)"
            )))
        }
    };
    let mut out = Vec::with_capacity(vals.len() * w);
    for v in vals {
        out.extend_from_slice(&v.to_le_bytes()[..w]);
    }
    Ok(DataBlock::Fixed {
        bits_per_value: bits,
        data: Buffer::from_vec(out),
        num_values: vals.len() as u64,
    })
}

fn bits_of(c: &Compression) -> u64 {
    match c {
        Compression::Range(r) => r.uncompressed_bits_per_value,
        Compression::Delta(d) => d.uncompressed_bits_per_value,
        _ => 64,
    }
}

/// A `Range` / `Delta` block (one optional buffer) as fixed-width values.
pub fn block(c: &Compression, buf: Option<&Buffer>, n: u64) -> Result<DataBlock> {
    let vals = decode_u64s(c, buf, n)?;
    to_fixed(&vals, bits_of(c))
}

/// A whole-buffer fixed-size list with item validity (e.g. 2.3 dictionary items):
/// value by value, the validity bits of its `dim` items (`ceil(dim / 8)` bytes), then
/// its `dim` flat items (recovered from pylance 14: 87 items of 8 x f32 = 87 x 33 bytes).
pub fn fsl_with_validity_block(
    f: &crate::pb::enc21::FixedSizeList,
    buf: &Buffer,
    n: u64,
) -> Result<DataBlock> {
    let dim = f.items_per_value;
    let bits = match compression_of(f.values.as_deref(), "fixed-size list items")? {
        Compression::Flat(fl) if fl.bits_per_value % 8 == 0 && fl.bits_per_value > 0 => {
            fl.bits_per_value
        }
        other => {
            return Err(FormatError::unsupported(
                compression::name(other),
                "nullable fixed-size list blocks of non-byte-aligned items",
            ))
        }
    };
    let vbytes = dim.div_ceil(8);
    let ibytes = dim
        .checked_mul(bits / 8)
        .ok_or_else(|| FormatError::corrupt("fixed-size list width overflows"))?;
    let stride = vbytes + ibytes;
    if dim == 0 || n.checked_mul(stride).is_none_or(|t| t > buf.len() as u64) {
        return Err(FormatError::corrupt(format!(
            "{n} nullable fixed-size lists of {dim} do not fit {} bytes",
            buf.len()
        )));
    }
    let (stride, vbytes, ibytes) = (stride as usize, vbytes as usize, ibytes as usize);
    let b = buf.as_slice();
    let mut validity = arrow_buffer::BooleanBufferBuilder::new((n * dim) as usize);
    let mut data = Vec::with_capacity(n as usize * ibytes);
    for i in 0..n as usize {
        let row = &b[i * stride..(i + 1) * stride];
        for k in 0..dim as usize {
            validity.append(row[k / 8] & (1 << (k % 8)) != 0);
        }
        data.extend_from_slice(&row[vbytes..]);
    }
    Ok(DataBlock::FixedSizeList {
        dim,
        child: Box::new(DataBlock::Fixed {
            bits_per_value: bits,
            data: Buffer::from_vec(data),
            num_values: n * dim,
        }),
        validity: Some(validity.finish()),
    })
}

/// True when variable-width offsets are stored inline with the bytes (2.1 / 2.2 form).
pub fn inline_offsets(v: &Variable) -> bool {
    matches!(
        v.offsets.as_deref().and_then(|e| e.compression.as_ref()),
        Some(Compression::Flat(_))
    )
}

/// One mini-block chunk of variable-width values whose offsets are a 2.3 sequence.
pub fn variable_miniblock(v: &Variable, buffers: Vec<Buffer>, n: u64) -> Result<DataBlock> {
    check_chunk(n)?;
    let oc = compression_of(v.offsets.as_deref(), "variable offsets")?;
    let mut it = buffers.into_iter();
    let obuf = if metadata_only(oc) { None } else { it.next() };
    let data = it
        .next()
        .ok_or_else(|| FormatError::corrupt("variable chunk without its data buffer"))?;
    let offs = decode_u64s(oc, obuf.as_ref(), n + 1)?;
    let mut prev = 0u64;
    for &o in &offs {
        if o < prev || o > data.len() as u64 {
            return Err(FormatError::corrupt(format!(
                "variable offsets not increasing within a {}-byte chunk buffer",
                data.len()
            )));
        }
        prev = o;
    }
    let first = offs.first().copied().unwrap_or(0);
    let offsets = if data.len() < u32::MAX as usize {
        Offsets::U32(offs.iter().map(|&o| (o - first) as u32).collect())
    } else {
        Offsets::U64(offs.iter().map(|&o| o - first).collect())
    };
    let data = data.slice_with_length(first as usize, (prev - first) as usize);
    Ok(DataBlock::Variable { offsets, data })
}
