//! Compressors of the writer: the inverse of `crate::compression`, plus the chunking
//! rules of mini-block pages (spec: "Mini Block Page Layout", "Compression").
//!
//! Each mini-block compressor turns a page's values into chunks of a power-of-two
//! number of values (the last chunk excepted), each a small set of buffers, and
//! returns the `CompressiveEncoding` that describes every chunk.

use fastlanes::BitPacking;

use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::{self, BufferCompression, CompressionScheme, CompressiveEncoding};
use crate::{FormatError, Result};

/// Largest value buffer of one chunk (2.1 readers address chunks in 8-byte words, 12 bits).
pub const MAX_CHUNK_BYTES: usize = 8 * 1024 - 6;
/// Most values in one chunk.
pub const MAX_CHUNK_VALUES: usize = 4096;
/// Target size of a chunk of variable-width values.
pub const VARIABLE_CHUNK_BYTES: usize = 4 * 1024;

/// One buffer of a chunk: `head` (owned bytes), then `body` (borrowed from the page's
/// values, not copied), then `pad` zero bytes. Serialising a page copies each byte
/// once, straight into the page body.
#[derive(Debug, Clone, Default)]
pub struct ChunkBuffer<'a> {
    /// Owned leading bytes (offsets, packed or compressed values).
    pub head: Vec<u8>,
    /// Borrowed value bytes.
    pub body: &'a [u8],
    /// Trailing zero bytes.
    pub pad: usize,
}

impl<'a> ChunkBuffer<'a> {
    /// An owned buffer.
    pub fn owned(head: Vec<u8>) -> Self {
        Self {
            head,
            body: &[],
            pad: 0,
        }
    }

    /// A borrowed buffer.
    pub fn borrowed(body: &'a [u8]) -> Self {
        Self {
            head: Vec::new(),
            body,
            pad: 0,
        }
    }

    /// Bytes in all.
    pub fn len(&self) -> usize {
        self.head.len() + self.body.len() + self.pad
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the bytes to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(self.body);
        out.resize(out.len() + self.pad, 0);
    }

    /// The bytes, contiguous (borrowed when there is no head and no padding).
    pub fn contiguous(&self) -> std::borrow::Cow<'_, [u8]> {
        if self.head.is_empty() && self.pad == 0 {
            std::borrow::Cow::Borrowed(self.body)
        } else if self.body.is_empty() && self.pad == 0 {
            std::borrow::Cow::Borrowed(&self.head)
        } else {
            let mut v = Vec::with_capacity(self.len());
            self.write_to(&mut v);
            std::borrow::Cow::Owned(v)
        }
    }
}

/// One chunk's value buffers.
#[derive(Debug, Clone)]
pub struct ValueChunk<'a> {
    /// Buffers (most encodings have one).
    pub buffers: Vec<ChunkBuffer<'a>>,
    /// Values in the chunk.
    pub num_values: usize,
}

/// Wraps a compression variant.
pub fn enc(c: Compression) -> CompressiveEncoding {
    CompressiveEncoding {
        compression: Some(c),
    }
}

/// `flat(bits)`.
pub fn flat(bits: u64) -> CompressiveEncoding {
    enc(Compression::Flat(enc21::Flat {
        bits_per_value: bits,
        data: None,
    }))
}

/// Splits `n` values into power-of-two chunks of at most `max_values`, where
/// `fits(start, count)` says whether a chunk fits its byte budget.
pub fn plan_chunks(
    n: usize,
    max_values: usize,
    fits: impl Fn(usize, usize) -> bool,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let top = if max_values.is_power_of_two() {
        max_values
    } else {
        max_values.next_power_of_two() / 2
    };
    while start < n {
        let remaining = n - start;
        let mut count = top.max(1);
        while count > 1 && !fits(start, count.min(remaining)) {
            count /= 2;
        }
        // Only the last chunk may hold a count that is not a power of two.
        let take = count.min(remaining);
        out.push((start, take));
        start += take;
    }
    out
}

/// Flat chunks of fixed-width values (`bits` a multiple of 8, or 1 for booleans).
pub fn flat_chunks(data: &[u8], bits: u64, n: usize) -> Vec<ValueChunk<'_>> {
    let bytes = |count: usize| (count * bits as usize).div_ceil(8);
    let plan = plan_chunks(n, MAX_CHUNK_VALUES, |_, c| bytes(c) <= MAX_CHUNK_BYTES);
    plan.into_iter()
        .map(|(s, c)| {
            let buf = if bits == 1 {
                let mut out = vec![0u8; c.div_ceil(8)];
                for i in 0..c {
                    let bit = s + i;
                    if data.get(bit / 8).is_some_and(|b| b >> (bit % 8) & 1 == 1) {
                        out[i / 8] |= 1 << (i % 8);
                    }
                }
                ChunkBuffer::owned(out)
            } else {
                let w = (bits / 8) as usize;
                ChunkBuffer::borrowed(data.get(s * w..(s + c) * w).unwrap_or_default())
            };
            ValueChunk {
                buffers: vec![buf],
                num_values: c,
            }
        })
        .collect()
}

/// Calls `f` with each block of up to 1024 values of `data` (8/16/32/64-bit little
/// endian) widened to u64, in one reused buffer (the page's values are never widened
/// all at once).
fn widened_blocks(data: &[u8], bits: u64, mut f: impl FnMut(&[u64]) -> Result<()>) -> Result<()> {
    let w = (bits / 8) as usize;
    if !matches!(w, 1 | 2 | 4 | 8) {
        return Err(FormatError::corrupt(
            "bitpacking needs 8/16/32/64-bit values",
        ));
    }
    let mut buf = [0u64; 1024];
    for block in data.chunks(1024 * w) {
        let n = block.len() / w;
        let out = &mut buf[..n];
        match w {
            1 => out
                .iter_mut()
                .zip(block)
                .for_each(|(o, &b)| *o = u64::from(b)),
            2 => out
                .iter_mut()
                .zip(block.chunks_exact(2))
                .for_each(|(o, c)| *o = u64::from(u16::from_le_bytes([c[0], c[1]]))),
            4 => out
                .iter_mut()
                .zip(block.chunks_exact(4))
                .for_each(|(o, c)| *o = u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
            _ => out
                .iter_mut()
                .zip(block.chunks_exact(8))
                .for_each(|(o, c)| {
                    *o = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
                }),
        }
        f(out)?;
    }
    Ok(())
}

/// Packs one block of 1024 values (padded with zeros) at `width` bits.
#[allow(unsafe_code)]
fn pack_block<T: BitPacking + arrow_buffer::ArrowNativeType>(
    width: usize,
    input: &[T],
) -> Result<Vec<T>> {
    let t_bits = std::mem::size_of::<T>() * 8;
    if width > t_bits {
        return Err(FormatError::corrupt("bit width above the value width"));
    }
    let mut block = vec![T::usize_as(0); 1024];
    let n = input.len().min(1024);
    block[..n].copy_from_slice(&input[..n]);
    let words = 1024 * width / t_bits;
    let mut out = vec![T::usize_as(0); words];
    if width == 0 {
        return Ok(out);
    }
    // SAFETY: `unchecked_pack` requires `width <= T::BITS`, an input of exactly 1024
    // values and an output of exactly `1024 * width / T::BITS` words: all hold here.
    unsafe { T::unchecked_pack(width, &block, &mut out) };
    Ok(out)
}

fn le_bytes<T: arrow_buffer::ArrowNativeType>(v: &[T], out: &mut Vec<u8>) {
    for x in v {
        out.extend_from_slice(x.to_byte_slice());
    }
}

trait ByteSlice {
    fn to_byte_slice(&self) -> &[u8];
}

impl<T: arrow_buffer::ArrowNativeType> ByteSlice for T {
    fn to_byte_slice(&self) -> &[u8] {
        arrow_buffer::ToByteSlice::to_byte_slice(std::slice::from_ref(self))
    }
}

fn typed<T: arrow_buffer::ArrowNativeType>(vals: &[u64]) -> Vec<T> {
    vals.iter().map(|&v| T::usize_as(v as usize)).collect()
}

/// Bit width each 1024-value block of `data` (`bits`-wide values) needs (unsigned view
/// of the values).
pub fn block_widths(data: &[u8], bits: u64) -> Result<Vec<usize>> {
    let mut widths = Vec::new();
    widened_blocks(data, bits, |c| {
        widths.push(super::page::bits_for(c.iter().fold(0, |a, &b| a | b)) as usize);
        Ok(())
    })?;
    Ok(widths)
}

fn inline_chunk<T: BitPacking + arrow_buffer::ArrowNativeType>(
    vals: &[u64],
    width: usize,
) -> Result<Vec<u8>> {
    let t: Vec<T> = typed(vals);
    let packed = pack_block::<T>(width, &t)?;
    let mut out = Vec::with_capacity((packed.len() + 1) * std::mem::size_of::<T>());
    le_bytes(&[T::usize_as(width)], &mut out);
    le_bytes(&packed, &mut out);
    Ok(out)
}

/// Inline-bitpacked chunks of `data` (`bits`-wide values): 1024 values each, every
/// chunk with its own width.
pub fn inline_bitpack_chunks(data: &[u8], bits: u64) -> Result<Vec<ValueChunk<'static>>> {
    let mut chunks = Vec::with_capacity(data.len().div_ceil(1024 * (bits as usize / 8).max(1)));
    widened_blocks(data, bits, |c| {
        let width = super::page::bits_for(c.iter().fold(0, |a, &b| a | b)) as usize;
        let buf = match bits {
            8 => inline_chunk::<u8>(c, width)?,
            16 => inline_chunk::<u16>(c, width)?,
            32 => inline_chunk::<u32>(c, width)?,
            _ => inline_chunk::<u64>(c, width)?,
        };
        chunks.push(ValueChunk {
            buffers: vec![ChunkBuffer::owned(buf)],
            num_values: c.len(),
        });
        Ok(())
    })?;
    Ok(chunks)
}

/// The encoding of inline-bitpacked chunks.
pub fn inline_bitpacking(bits: u64) -> CompressiveEncoding {
    enc(Compression::InlineBitpacking(enc21::InlineBitpacking {
        uncompressed_bits_per_value: bits,
        values: None,
    }))
}

fn out_of_line<T: BitPacking + arrow_buffer::ArrowNativeType>(
    vals: &[u64],
    width: usize,
) -> Result<Vec<u8>> {
    let t_bits = std::mem::size_of::<T>() * 8;
    let per_block = 1024 * width / t_bits;
    let mut out = Vec::new();
    let whole = vals.len() / 1024;
    for b in 0..whole {
        let t: Vec<T> = typed(&vals[b * 1024..(b + 1) * 1024]);
        le_bytes(&pack_block::<T>(width, &t)?, &mut out);
    }
    let tail = &vals[whole * 1024..];
    if !tail.is_empty() {
        // Pack and pad the tail only when that is smaller than storing it raw; the
        // reader tells the two apart by the buffer length.
        if per_block < tail.len() {
            let t: Vec<T> = typed(tail);
            le_bytes(&pack_block::<T>(width, &t)?, &mut out);
        } else {
            le_bytes(&typed::<T>(tail), &mut out);
        }
    }
    Ok(out)
}

/// Out-of-line bitpacking of a whole buffer of `bits`-bit values at one width.
pub fn out_of_line_bitpack(
    vals: &[u64],
    bits: u64,
    width: usize,
) -> Result<(Vec<u8>, CompressiveEncoding)> {
    let buf = match bits {
        8 => out_of_line::<u8>(vals, width)?,
        16 => out_of_line::<u16>(vals, width)?,
        32 => out_of_line::<u32>(vals, width)?,
        64 => out_of_line::<u64>(vals, width)?,
        _ => {
            return Err(FormatError::corrupt(
                "bitpacking needs 8/16/32/64-bit values",
            ))
        }
    };
    let e = enc(Compression::OutOfLineBitpacking(Box::new(
        enc21::OutOfLineBitpacking {
            uncompressed_bits_per_value: bits,
            values: Some(Box::new(flat(width as u64))),
        },
    )));
    Ok((buf, e))
}

/// Run-length chunks: values and u8 run lengths, power-of-two values per chunk.
pub fn rle_chunks(data: &[u8], bits: u64, n: usize) -> Vec<ValueChunk<'static>> {
    let w = (bits / 8) as usize;
    let runs_in = |s: usize, c: usize| -> (Vec<u8>, Vec<u8>) {
        let mut values = Vec::new();
        let mut lens = Vec::new();
        let mut i = s;
        while i < s + c {
            let v = &data[i * w..(i + 1) * w];
            let mut j = i + 1;
            while j < s + c && j - i < 255 && &data[j * w..(j + 1) * w] == v {
                j += 1;
            }
            values.extend_from_slice(v);
            lens.push((j - i) as u8);
            i = j;
        }
        (values, lens)
    };
    let plan = plan_chunks(n, MAX_CHUNK_VALUES, |s, c| {
        let (v, l) = runs_in(s, c);
        v.len() + l.len() + 16 <= MAX_CHUNK_BYTES
    });
    plan.into_iter()
        .map(|(s, c)| {
            let (v, l) = runs_in(s, c);
            ValueChunk {
                buffers: vec![ChunkBuffer::owned(v), ChunkBuffer::owned(l)],
                num_values: c,
            }
        })
        .collect()
}

/// The encoding of RLE chunks of `bits`-bit values.
pub fn rle(bits: u64) -> CompressiveEncoding {
    enc(Compression::Rle(Box::new(enc21::Rle {
        values: Some(Box::new(flat(bits))),
        run_lengths: Some(Box::new(flat(8))),
    })))
}

/// Number of runs of equal values.
pub fn run_count(data: &[u8], bits: u64, n: usize) -> usize {
    let w = (bits / 8).max(1) as usize;
    if n == 0 {
        return 0;
    }
    let data = data.get(..n * w).unwrap_or(data);
    // Fixed widths compare as integers (a slice comparison per value is a memcmp call).
    fn changes<const W: usize>(data: &[u8]) -> usize {
        let mut it = data.chunks_exact(W).map(|c| {
            let mut a = [0u8; W];
            a.copy_from_slice(c);
            a
        });
        let Some(mut prev) = it.next() else {
            return 0;
        };
        let mut runs = 1;
        for v in it {
            runs += usize::from(v != prev);
            prev = v;
        }
        runs
    }
    match w {
        1 => changes::<1>(data),
        2 => changes::<2>(data),
        4 => changes::<4>(data),
        8 => changes::<8>(data),
        16 => changes::<16>(data),
        _ => {
            1 + (1..n)
                .filter(|&i| data[i * w..(i + 1) * w] != data[(i - 1) * w..i * w])
                .count()
        }
    }
}

/// Variable-width chunks: `[offsets x (n+1)][bytes]` with 32- or 64-bit offsets
/// (`wide`) relative to the chunk buffer, padded to a whole offset word. Chunks stop at
/// the last power of two that keeps them near 4 KiB.
pub fn variable_chunks<'a>(offsets: &[u64], data: &'a [u8], wide: bool) -> Vec<ValueChunk<'a>> {
    let ow = if wide { 8 } else { 4 };
    let n = offsets.len().saturating_sub(1);
    let size = |s: usize, c: usize| (offsets[s + c] - offsets[s]) as usize + ow * (c + 1);
    let plan = plan_chunks(n, MAX_CHUNK_VALUES, |s, c| {
        size(s, c) <= VARIABLE_CHUNK_BYTES
    });
    plan.into_iter()
        .map(|(s, c)| {
            let head = (ow * (c + 1)) as u64;
            let base = offsets[s];
            let mut buf = Vec::with_capacity(ow * (c + 1));
            for i in 0..=c {
                let o = offsets[s + i] - base + head;
                if wide {
                    buf.extend_from_slice(&o.to_le_bytes());
                } else {
                    buf.extend_from_slice(&(o as u32).to_le_bytes());
                }
            }
            // The bytes stay in `data` until the page body is assembled.
            let body = &data[base as usize..offsets[s + c] as usize];
            // Readers expect the chunk buffer to be a whole number of offset words.
            let pad = (ow - (buf.len() + body.len()) % ow) % ow;
            ValueChunk {
                buffers: vec![ChunkBuffer {
                    head: buf,
                    body,
                    pad,
                }],
                num_values: c,
            }
        })
        .collect()
}

/// The encoding of variable-width values with `bits`-bit offsets.
pub fn variable(bits: u64) -> CompressiveEncoding {
    enc(Compression::Variable(Box::new(enc21::Variable {
        offsets: Some(Box::new(flat(bits))),
        values: None,
    })))
}

/// Variable-width values as one block. 32-bit: `[32: u32][data start: u32][offsets]
/// [bytes]`; 64-bit: `[64: u32][0: u32][data start: u64][offsets][bytes]`.
pub fn variable_block(offsets: &[u64], data: &[u8], wide: bool) -> Vec<u8> {
    let n = offsets.len();
    let (head, ow) = if wide { (16, 8) } else { (8, 4) };
    let start = head + ow * n;
    let mut buf = Vec::with_capacity(start + data.len());
    if wide {
        buf.extend_from_slice(&64u32.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        buf.extend_from_slice(&(start as u64).to_le_bytes());
    } else {
        buf.extend_from_slice(&32u32.to_le_bytes());
        buf.extend_from_slice(&(start as u32).to_le_bytes());
    }
    let base = offsets.first().copied().unwrap_or(0);
    for &o in offsets {
        if wide {
            buf.extend_from_slice(&(o - base).to_le_bytes());
        } else {
            buf.extend_from_slice(&((o - base) as u32).to_le_bytes());
        }
    }
    buf.extend_from_slice(&data[base as usize..offsets.last().copied().unwrap_or(0) as usize]);
    buf
}

/// General compression of a whole buffer.
pub fn general(scheme: CompressionScheme, level: Option<i32>, plain: &[u8]) -> Result<Vec<u8>> {
    match scheme {
        CompressionScheme::CompressionAlgorithmLz4 => {
            Ok(lz4_flex::block::compress_prepend_size(plain))
        }
        CompressionScheme::CompressionAlgorithmZstd => {
            let mut out = (plain.len() as u64).to_le_bytes().to_vec();
            let z = zstd::bulk::compress(plain, level.unwrap_or(3))
                .map_err(|e| FormatError::corrupt(format!("zstd: {e}")))?;
            out.extend_from_slice(&z);
            Ok(out)
        }
        CompressionScheme::CompressionAlgorithmUnspecified => Ok(plain.to_vec()),
    }
}

/// `general(scheme, inner)`.
pub fn general_encoding(
    scheme: CompressionScheme,
    level: Option<i32>,
    inner: CompressiveEncoding,
) -> CompressiveEncoding {
    enc(Compression::General(Box::new(enc21::General {
        compression: Some(BufferCompression {
            scheme: scheme as i32,
            level,
        }),
        values: Some(Box::new(inner)),
    })))
}

/// Parses a `lance-encoding:compression` value.
pub fn parse_scheme(s: &str) -> Result<Option<CompressionScheme>> {
    match s.to_ascii_lowercase().as_str() {
        "none" | "" | "fsst" => Ok(None),
        "lz4" => Ok(Some(CompressionScheme::CompressionAlgorithmLz4)),
        "zstd" => Ok(Some(CompressionScheme::CompressionAlgorithmZstd)),
        other => Err(FormatError::unsupported(
            format!("compression {other:?}"),
            "lance-encoding:compression must be none, lz4, zstd or fsst",
        )),
    }
}

/// Byte-stream-split of `n` values of `w` bytes: byte k of every value in stream k.
pub fn bss(data: &[u8], w: usize, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; w * n];
    for i in 0..n {
        for k in 0..w {
            out[k * n + i] = data[i * w + k];
        }
    }
    out
}
