//! FSST compression for the writer: the symbol table is trained with the `fsst-rs`
//! crate and serialised in Lance's layout (see `crate::compression::fsst`): a u64
//! header, 255 symbol slots and 256 length slots, 2,312 bytes in all.

use crate::{FormatError, Result};

/// Size of a serialised symbol table.
pub const TABLE_SIZE: usize = 8 + 256 * 8 + 256;
const MAGIC: u64 = 0x4653_5354 << 32;

/// Compresses strings given by `offsets` into `data`. Returns the serialised table and
/// the compressed strings (offsets from 0, and bytes).
pub fn compress(offsets: &[u64], data: &[u8]) -> Result<(Vec<u8>, Vec<u64>, Vec<u8>)> {
    let n = offsets.len().saturating_sub(1);
    let strings: Vec<&[u8]> = (0..n)
        .map(|i| {
            data.get(offsets[i] as usize..offsets[i + 1] as usize)
                .ok_or_else(|| FormatError::corrupt("string offsets out of range"))
        })
        .collect::<Result<_>>()?;
    let compressor = fsst::Compressor::train(&strings);
    let symbols = compressor.symbol_table();
    let lens = compressor.symbol_lengths();
    let count = symbols.len().min(255);
    let mut table = vec![0u8; TABLE_SIZE];
    let header = MAGIC | (1 << 24) | count as u64;
    table[..8].copy_from_slice(&header.to_le_bytes());
    for (i, s) in symbols.iter().take(count).enumerate() {
        table[8 + i * 8..16 + i * 8].copy_from_slice(&s.to_u64().to_le_bytes());
    }
    for (i, l) in lens.iter().take(count).enumerate() {
        table[8 + count * 8 + i] = *l;
    }
    // Large inputs are compressed in parts on scoped threads (the table is shared and
    // each string is compressed alone, so the bytes are the same as in one pass).
    let parts = if data.len() >= PARALLEL_BYTES {
        lancer_util::cores().min(4)
    } else {
        1
    };
    let per = strings.len().div_ceil(parts.max(1)).max(1);
    let pieces: Vec<(Vec<u64>, Vec<u8>)> = if parts > 1 {
        std::thread::scope(|scope| {
            let handles: Vec<_> = strings
                .chunks(per)
                .map(|part| scope.spawn(|| compress_part(&compressor, part)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().map_err(|_| {
                        FormatError::Io(std::io::Error::other("an FSST thread panicked"))
                    })
                })
                .collect::<Result<Vec<_>>>()
        })?
    } else {
        vec![compress_part(&compressor, &strings)]
    };
    let mut out = Vec::with_capacity(pieces.iter().map(|p| p.1.len()).sum());
    let mut offs = Vec::with_capacity(n + 1);
    offs.push(0u64);
    for (lens, bytes) in pieces {
        let base = out.len() as u64;
        offs.extend(lens.iter().map(|&end| base + end));
        out.extend_from_slice(&bytes);
    }
    Ok((table, offs, out))
}

/// Inputs of at least this many bytes are compressed on several threads.
const PARALLEL_BYTES: usize = 4 << 20;

/// Compresses `strings`: the end offset of each (from 0) and the bytes.
fn compress_part(compressor: &fsst::Compressor, strings: &[&[u8]]) -> (Vec<u64>, Vec<u8>) {
    let mut out = Vec::with_capacity(strings.iter().map(|s| s.len()).sum::<usize>() / 2 + 16);
    let mut ends = Vec::with_capacity(strings.len());
    for s in strings {
        out.extend_from_slice(&compressor.compress(s));
        ends.push(out.len() as u64);
    }
    (ends, out)
}
