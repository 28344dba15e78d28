//! General (opaque) compression: zstd and lz4 wrappers (spec: "Compression" → "General").
//!
//! Byte formats: lz4 is a block prefixed with its uncompressed size as a little-endian
//! u32; zstd is a frame prefixed with its uncompressed size as a little-endian u64 (a
//! raw zstd frame without the prefix is accepted too, as older writers produced it).

use arrow_buffer::Buffer;

use crate::pb::enc21::{BufferCompression, CompressionScheme};
use crate::{FormatError, Result};

/// Largest buffer a general-compressed buffer may expand to.
pub const MAX_DECOMPRESSED: u64 = 1 << 34;

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Decompresses `buf` according to `c` (no compression when `c` is absent).
pub fn decompress(c: Option<&BufferCompression>, buf: &Buffer) -> Result<Buffer> {
    let Some(c) = c else {
        return Ok(buf.clone());
    };
    let scheme = CompressionScheme::try_from(c.scheme).map_err(|_| {
        FormatError::unsupported(
            format!("compression scheme {}", c.scheme),
            "unknown general compression scheme",
        )
    })?;
    match scheme {
        CompressionScheme::CompressionAlgorithmUnspecified => Ok(buf.clone()),
        CompressionScheme::CompressionAlgorithmLz4 => lz4(buf.as_slice()).map(Buffer::from_vec),
        CompressionScheme::CompressionAlgorithmZstd => zstd(buf.as_slice()).map(Buffer::from_vec),
    }
}

/// lz4 block with a u32 size prefix.
pub fn lz4(input: &[u8]) -> Result<Vec<u8>> {
    let size = input
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| FormatError::corrupt("lz4 buffer shorter than its size prefix"))?;
    // An lz4 block expands at most ~255x (one extra length byte per 255 bytes).
    let bound = (input.len() as u64).saturating_mul(255).saturating_add(64);
    if u64::from(size) > MAX_DECOMPRESSED || u64::from(size) > bound {
        return Err(FormatError::corrupt(format!(
            "lz4 buffer claims {size} bytes from {} compressed",
            input.len()
        )));
    }
    lz4_flex::block::decompress_size_prepended(input)
        .map_err(|e| FormatError::corrupt(format!("lz4: {e}")))
}

/// zstd frame with (or without) a u64 size prefix.
pub fn zstd(input: &[u8]) -> Result<Vec<u8>> {
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let raw = input.len() < 8 || input.get(..4) == Some(&ZSTD_MAGIC[..]);
    if raw {
        let mut out = Vec::new();
        zstd::stream::copy_decode(input, &mut out)
            .map_err(|e| FormatError::corrupt(format!("zstd: {e}")))?;
        return Ok(out);
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&input[..8]);
    let size = u64::from_le_bytes(len);
    let body = &input[8..];
    // A frame cannot expand beyond what its compressed size allows; bound the claim.
    let bound = (body.len() as u64).saturating_mul(1 << 12).max(1 << 20);
    if size > MAX_DECOMPRESSED || size > bound {
        return Err(FormatError::corrupt(format!(
            "zstd buffer claims {size} bytes from {} compressed",
            body.len()
        )));
    }
    // Stream the frame so memory follows the bytes it really holds, not the claim.
    use std::io::Read;
    let mut out = Vec::with_capacity(size.min((body.len() as u64).saturating_mul(64)) as usize);
    zstd::stream::read::Decoder::new(body)
        .map_err(|e| FormatError::corrupt(format!("zstd: {e}")))?
        .take(size)
        .read_to_end(&mut out)
        .map_err(|e| FormatError::corrupt(format!("zstd: {e}")))?;
    Ok(out)
}
