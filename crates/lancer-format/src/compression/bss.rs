//! Byte stream split (spec: "Compression" → "Byte Stream Split"): byte `k` of every value
//! is stored in stream `k`; decoding interleaves the streams back.

use arrow_buffer::Buffer;

use crate::block::DataBlock;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::ByteStreamSplit;
use crate::{FormatError, Result};

/// Decodes `num_values` values from the split streams in `buf`.
pub fn decode(b: &ByteStreamSplit, buf: &Buffer, num_values: u64) -> Result<DataBlock> {
    let bits = match super::compression_of(b.values.as_deref(), "byte-stream-split values")? {
        Compression::Flat(f) => f.bits_per_value,
        other => {
            return Err(FormatError::unsupported(
                super::name(other),
                "byte-stream-split values must be flat",
            ))
        }
    };
    if bits % 8 != 0 || bits == 0 || bits > 512 {
        return Err(FormatError::corrupt(format!(
            "byte-stream-split of {bits}-bit values"
        )));
    }
    let w = (bits / 8) as usize;
    let n = num_values as usize;
    let total = n
        .checked_mul(w)
        .ok_or_else(|| FormatError::corrupt("byte-stream-split size overflows"))?;
    let src = buf.as_slice().get(..total).ok_or_else(|| {
        FormatError::corrupt(format!(
            "byte-stream-split buffer has {} bytes, {total} needed",
            buf.len()
        ))
    })?;
    let mut out = vec![0u8; total];
    for (k, stream) in src.chunks_exact(n.max(1)).enumerate().take(w) {
        for (i, &byte) in stream.iter().enumerate() {
            out[i * w + k] = byte;
        }
    }
    Ok(DataBlock::Fixed {
        bits_per_value: bits,
        data: Buffer::from_vec(out),
        num_values,
    })
}
