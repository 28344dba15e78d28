//! Bitpacking (spec: "Compression" → "Bitpacking"): values cut to the bits they need,
//! in the FastLanes 1024-value transposed layout (unpacked with the `fastlanes` crate).
//!
//! * Inline (mini-block): every 1024-value block starts with one word (of the
//!   uncompressed width) holding the block's bit width, then `1024 * width / T` packed
//!   words. A mini-block chunk is one such block.
//! * Out-of-line (block context): whole 1024-value blocks of one width; the final short
//!   block is either packed and padded or stored raw, told apart by the buffer length.

use arrow_buffer::{ArrowNativeType, Buffer, ToByteSlice};
use fastlanes::BitPacking;

use crate::block::{aligned, DataBlock};
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::OutOfLineBitpacking;
use crate::{FormatError, Result};

/// Values per FastLanes block.
pub const BLOCK: usize = 1024;

/// Unpacks one block of 1024 `width`-bit values from exactly `1024 * width / T` words.
#[allow(unsafe_code)]
fn unpack_block<T: BitPacking + ArrowNativeType>(
    width: usize,
    packed: &[T],
    out: &mut [T],
) -> Result<()> {
    let t_bits = std::mem::size_of::<T>() * 8;
    if width > t_bits {
        return Err(FormatError::corrupt(format!(
            "bitpacked block of width {width} for {t_bits}-bit values"
        )));
    }
    let words = BLOCK * width / t_bits;
    if packed.len() != words || out.len() != BLOCK {
        return Err(FormatError::corrupt(format!(
            "bitpacked block has {} words, width {width} needs {words}",
            packed.len()
        )));
    }
    if width == 0 {
        out.fill(T::usize_as(0));
        return Ok(());
    }
    // SAFETY: `unchecked_unpack` requires `width <= T::BITS`, an input of exactly
    // `1024 * width / T::BITS` words and an output of exactly 1024 values; all three
    // were checked above.
    unsafe { T::unchecked_unpack(width, packed, out) };
    Ok(())
}

fn typed<T: ArrowNativeType>(buf: &Buffer) -> Buffer {
    aligned(buf.clone(), std::mem::size_of::<T>())
}

/// The first inline block of `words`: its bit width (the leading word, checked against
/// the value width) and its `1024 * width / T` packed words.
fn inline_block<T: ArrowNativeType>(words: &[T]) -> Result<(usize, &[T])> {
    let t_bits = std::mem::size_of::<T>() * 8;
    let width = words
        .first()
        .ok_or_else(|| FormatError::corrupt("bitpacked chunk truncated (no width word)"))?
        .as_usize();
    if width > t_bits {
        return Err(FormatError::corrupt(format!(
            "bitpacked width {width} exceeds {t_bits}"
        )));
    }
    let n_words = BLOCK * width / t_bits;
    let packed = words
        .get(1..1 + n_words)
        .ok_or_else(|| FormatError::corrupt("bitpacked chunk truncated"))?;
    Ok((width, packed))
}

fn unpack_inline<T: BitPacking + ArrowNativeType>(
    buf: &Buffer,
    num_values: u64,
) -> Result<DataBlock> {
    let size = std::mem::size_of::<T>();
    let buf = typed::<T>(buf);
    let words: &[T] = buf.typed_data::<T>();
    let mut out: Vec<T> = Vec::with_capacity(num_values as usize);
    let mut pos = 0usize;
    let mut scratch = vec![T::usize_as(0); BLOCK];
    let mut remaining = num_values as usize;
    while remaining > 0 {
        let (width, packed) = inline_block(words.get(pos..).unwrap_or_default())?;
        unpack_block(width, packed, &mut scratch)?;
        pos += 1 + packed.len();
        let take = remaining.min(BLOCK);
        out.extend_from_slice(&scratch[..take]);
        remaining -= take;
    }
    Ok(DataBlock::Fixed {
        bits_per_value: (size * 8) as u64,
        data: Buffer::from_vec(out),
        num_values,
    })
}

/// Appends to `out` (little-endian bytes) the values at positions `idx` of an
/// inline-bitpacked mini-block chunk of `num_values` `bits`-bit values, each unpacked
/// alone from the FastLanes block (a take of a few rows per chunk no longer unpacks
/// all 1024).
pub fn pick_inline(
    bits: u64,
    buf: &[u8],
    num_values: u64,
    idx: &[usize],
    out: &mut Vec<u8>,
) -> Result<()> {
    match bits {
        8 => pick_typed::<u8>(buf, num_values, idx, out),
        16 => pick_typed::<u16>(buf, num_values, idx, out),
        32 => pick_typed::<u32>(buf, num_values, idx, out),
        64 => pick_typed::<u64>(buf, num_values, idx, out),
        _ => Err(FormatError::corrupt(format!(
            "bitpacking of {bits}-bit values (must be 8, 16, 32 or 64)"
        ))),
    }
}

#[allow(unsafe_code)]
fn pick_typed<T: BitPacking + ArrowNativeType>(
    buf: &[u8],
    num_values: u64,
    idx: &[usize],
    out: &mut Vec<u8>,
) -> Result<()> {
    if num_values > BLOCK as u64 {
        return Err(FormatError::corrupt(format!(
            "inline-bitpacked chunk claims {num_values} values (at most 1024)"
        )));
    }
    // The whole words of `buf`, read in place when aligned (a mapped file's chunk
    // usually is), else from an aligned copy.
    let size = std::mem::size_of::<T>();
    let whole = &buf[..buf.len() / size * size];
    // SAFETY: `T` is a primitive integer (every bit pattern is a value); `align_to`
    // only reinterprets the aligned middle of `whole`, used when nothing precedes it.
    let (pre, middle, _) = unsafe { whole.align_to::<T>() };
    let copy;
    let words: &[T] = if pre.is_empty() {
        middle
    } else {
        copy = Buffer::from_slice_ref(whole);
        copy.typed_data::<T>()
    };
    let (width, packed) = inline_block(words)?;
    if let Some(&i) = idx.iter().find(|&&i| i as u64 >= num_values) {
        return Err(FormatError::corrupt(format!(
            "value {i} of a {num_values}-value bitpacked chunk"
        )));
    }
    out.reserve(idx.len() * std::mem::size_of::<T>());
    // (the width dispatched once per chunk, not once per value)
    let mut unpacked = [std::mem::MaybeUninit::<T>::uninit(); BLOCK];
    for part in idx.chunks(BLOCK) {
        let dst = &mut unpacked[..part.len()];
        // SAFETY: `unchecked_unpack_indices` requires `width <= T::BITS` and an input of
        // exactly `1024 * width / T::BITS` words (both checked by `inline_block`) and as
        // many outputs as indices (`dst` is cut to `part`); it panics only on an index of
        // 1024 or more, and every index is below `num_values <= 1024` (checked above).
        unsafe { T::unchecked_unpack_indices(width, packed, part, dst) };
        // SAFETY: the call above wrote every element of `dst`; `MaybeUninit<T>` has
        // `T`'s layout.
        let values: &[T] =
            unsafe { std::slice::from_raw_parts(dst.as_ptr().cast::<T>(), dst.len()) };
        out.extend_from_slice(values.to_byte_slice());
    }
    Ok(())
}

/// Inline bitpacking of a mini-block chunk (at most 1024 values).
pub fn decode_inline(bits: u64, buf: &Buffer, num_values: u64) -> Result<DataBlock> {
    if num_values > BLOCK as u64 {
        return Err(FormatError::corrupt(format!(
            "inline-bitpacked chunk claims {num_values} values (at most 1024)"
        )));
    }
    decode_inline_block(bits, buf, num_values)
}

/// Inline bitpacking over a whole buffer (consecutive 1024-value blocks).
pub fn decode_inline_block(bits: u64, buf: &Buffer, num_values: u64) -> Result<DataBlock> {
    // Each block needs at least one width word: bound the claimed count by the bytes.
    let max_blocks = (buf.len() as u64 / (bits / 8).max(1)).max(1);
    if num_values.div_ceil(BLOCK as u64) > max_blocks {
        return Err(FormatError::corrupt(format!(
            "bitpacked buffer of {} bytes cannot hold {num_values} values",
            buf.len()
        )));
    }
    match bits {
        8 => unpack_inline::<u8>(buf, num_values),
        16 => unpack_inline::<u16>(buf, num_values),
        32 => unpack_inline::<u32>(buf, num_values),
        64 => unpack_inline::<u64>(buf, num_values),
        _ => Err(FormatError::corrupt(format!(
            "bitpacking of {bits}-bit values (must be 8, 16, 32 or 64)"
        ))),
    }
}

fn unpack_out_of_line<T: BitPacking + ArrowNativeType>(
    buf: &Buffer,
    width: usize,
    num_values: u64,
) -> Result<DataBlock> {
    let size = std::mem::size_of::<T>();
    let t_bits = size * 8;
    let buf = typed::<T>(buf);
    let words: &[T] = buf.typed_data::<T>();
    let n = num_values as usize;
    let per_block = BLOCK * width / t_bits;
    let whole = n / BLOCK;
    let tail = n % BLOCK;
    let full_words = whole * per_block;
    let tail_raw = tail > 0 && words.len() == full_words + tail;
    let needed = full_words
        + if tail == 0 {
            0
        } else if tail_raw {
            tail
        } else {
            per_block
        };
    if words.len() < needed {
        return Err(FormatError::corrupt(format!(
            "out-of-line bitpacked buffer has {} words, {num_values} values of width {width} need {needed}",
            words.len()
        )));
    }
    let mut out = vec![T::usize_as(0); whole * BLOCK];
    for b in 0..whole {
        unpack_block(
            width,
            &words[b * per_block..(b + 1) * per_block],
            &mut out[b * BLOCK..(b + 1) * BLOCK],
        )?;
    }
    if tail > 0 {
        if tail_raw {
            out.extend_from_slice(&words[full_words..full_words + tail]);
        } else {
            let mut scratch = vec![T::usize_as(0); BLOCK];
            unpack_block(
                width,
                &words[full_words..full_words + per_block],
                &mut scratch,
            )?;
            out.extend_from_slice(&scratch[..tail]);
        }
    }
    Ok(DataBlock::Fixed {
        bits_per_value: t_bits as u64,
        data: Buffer::from_vec(out),
        num_values,
    })
}

/// Out-of-line bitpacking over a whole buffer.
pub fn decode_out_of_line(
    b: &OutOfLineBitpacking,
    buf: &Buffer,
    num_values: u64,
) -> Result<DataBlock> {
    let width = match super::compression_of(b.values.as_deref(), "out-of-line bitpacking")? {
        Compression::Flat(f) => f.bits_per_value as usize,
        other => {
            return Err(FormatError::unsupported(
                super::name(other),
                "out-of-line bitpacking values must be flat",
            ))
        }
    };
    // Every value takes at least `width` bits (or a raw word in the tail).
    if width > 0 && (num_values.saturating_mul(width as u64) / 8) > buf.len() as u64 + 8192 {
        return Err(FormatError::corrupt(
            "out-of-line bitpacked buffer too short",
        ));
    }
    match b.uncompressed_bits_per_value {
        8 => unpack_out_of_line::<u8>(buf, width, num_values),
        16 => unpack_out_of_line::<u16>(buf, width, num_values),
        32 => unpack_out_of_line::<u32>(buf, width, num_values),
        64 => unpack_out_of_line::<u64>(buf, width, num_values),
        bits => Err(FormatError::corrupt(format!(
            "bitpacking of {bits}-bit values (must be 8, 16, 32 or 64)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of `n` values packed at `width` bits: the width word, then the block.
    #[allow(unsafe_code)]
    fn chunk_u32(values: &[u32], width: usize) -> Buffer {
        let mut block = [0u32; BLOCK];
        block[..values.len()].copy_from_slice(values);
        let mut packed = vec![0u32; BLOCK * width / 32];
        // SAFETY: width <= 32, input of 1024 values, output of 1024 * width / 32 words.
        unsafe { u32::unchecked_pack(width, &block, &mut packed) };
        let mut words = vec![width as u32];
        words.extend(packed);
        Buffer::from_vec(words)
    }

    #[test]
    fn picked_values_are_the_decoded_ones() {
        let mut x = 0x9e37_79b9u64;
        for width in [0usize, 1, 3, 7, 8, 13, 17, 31, 32] {
            for n in [1usize, 5, 1000, 1024] {
                let mask = if width == 32 {
                    u32::MAX
                } else {
                    (1u32 << width) - 1
                };
                let values: Vec<u32> = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u32 & mask
                    })
                    .collect();
                let buf = chunk_u32(&values, width);
                let all = match decode_inline(32, &buf, n as u64).unwrap() {
                    DataBlock::Fixed { data, .. } => data.typed_data::<u32>().to_vec(),
                    _ => unreachable!(),
                };
                assert_eq!(all, values);
                let idx: Vec<usize> = (0..n).filter(|i| i % 7 == 0 || *i == n - 1).collect();
                let mut out = Vec::new();
                pick_inline(32, buf.as_slice(), n as u64, &idx, &mut out).unwrap();
                let got: Vec<u32> = out
                    .chunks_exact(4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                let want: Vec<u32> = idx.iter().map(|&i| values[i]).collect();
                assert_eq!(got, want, "width {width}, {n} values");
                // the same bytes at an odd address (read from an aligned copy)
                let mut shifted = vec![0u8];
                shifted.extend_from_slice(buf.as_slice());
                let mut again = Vec::new();
                pick_inline(32, &shifted[1..], n as u64, &idx, &mut again).unwrap();
                assert_eq!(again, out, "width {width}, {n} values, misaligned");
            }
        }
    }

    #[test]
    fn picking_checks_the_chunk() {
        let buf = chunk_u32(&[1, 2, 3], 2);
        let mut out = Vec::new();
        // a row past the chunk's values, a claimed count over a block, a short buffer
        assert!(pick_inline(32, buf.as_slice(), 3, &[3], &mut out).is_err());
        assert!(pick_inline(32, buf.as_slice(), 1025, &[0], &mut out).is_err());
        assert!(pick_inline(32, &buf.as_slice()[..8], 3, &[0], &mut out).is_err());
        assert!(pick_inline(
            32,
            Buffer::from_vec(vec![33u32]).as_slice(),
            3,
            &[0],
            &mut out
        )
        .is_err());
        assert!(pick_inline(32, &[], 3, &[0], &mut out).is_err());
        assert!(pick_inline(12, buf.as_slice(), 3, &[0], &mut out).is_err());
        assert!(out.is_empty());
    }
}
