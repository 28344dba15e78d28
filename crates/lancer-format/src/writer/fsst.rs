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
    let mut out = Vec::with_capacity(data.len());
    let mut offs = Vec::with_capacity(n + 1);
    offs.push(0u64);
    for s in strings {
        out.extend_from_slice(&compressor.compress(s));
        offs.push(out.len() as u64);
    }
    Ok((table, offs, out))
}
