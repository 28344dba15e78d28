//! FSST (spec: "Compression" → "Fsst"): strings rewritten as one-byte codes into a
//! table of up to 255 symbols of 1–8 bytes; code 255 escapes one literal byte.
//!
//! Symbol table bytes: a little-endian u64 header (`"FSST"` magic in the high 32 bits,
//! bit 24 = compression enabled, low 8 bits = symbol count), then one u64 per symbol
//! (its bytes, little-endian), then one length byte per symbol. When compression is
//! disabled the inner strings are stored as they are.

use arrow_buffer::Buffer;

use crate::block::{DataBlock, Offsets};
use crate::{FormatError, Result};

const MAGIC: u64 = 0x4653_5354 << 32;
const ESCAPE: u8 = 255;

/// A parsed symbol table.
pub struct SymbolTable {
    symbols: [[u8; 8]; 256],
    lens: [u8; 256],
    enabled: bool,
}

impl SymbolTable {
    /// Parses the serialized table.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let head = bytes
            .get(..8)
            .ok_or_else(|| FormatError::corrupt("FSST symbol table shorter than its header"))?;
        let info = u64::from_le_bytes([
            head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7],
        ]);
        if info & MAGIC != MAGIC {
            return Err(FormatError::corrupt("FSST symbol table has a bad magic"));
        }
        let n = (info & 255) as usize;
        let mut t = SymbolTable {
            symbols: [[0; 8]; 256],
            lens: [0; 256],
            enabled: info & (1 << 24) != 0,
        };
        let syms = bytes
            .get(8..8 + 8 * n)
            .ok_or_else(|| FormatError::corrupt("FSST symbol table truncated"))?;
        let lens = bytes
            .get(8 + 8 * n..8 + 9 * n)
            .ok_or_else(|| FormatError::corrupt("FSST symbol lengths truncated"))?;
        for i in 0..n {
            t.symbols[i].copy_from_slice(&syms[i * 8..i * 8 + 8]);
            let l = lens[i];
            if !(1..=8).contains(&l) {
                return Err(FormatError::corrupt(format!(
                    "FSST symbol {i} has length {l}"
                )));
            }
            t.lens[i] = l;
        }
        Ok(t)
    }

    /// Decodes one compressed string into `out` starting at `pos`; `out` must have at
    /// least `8 * input.len() + 8` bytes available after `pos`. Returns the new end.
    /// Symbols are copied as whole 8-byte words and the end advanced by their length
    /// (the classic FSST decoding trick: one store per code, no per-symbol memcpy).
    fn decode_into(&self, input: &[u8], out: &mut [u8], mut pos: usize) -> Result<usize> {
        let overflow = || FormatError::corrupt("FSST strings decode past their computed size");
        let mut i = 0;
        while i < input.len() {
            let code = input[i];
            if code == ESCAPE {
                let b = *input
                    .get(i + 1)
                    .ok_or_else(|| FormatError::corrupt("FSST escape at end of string"))?;
                *out.get_mut(pos).ok_or_else(overflow)? = b;
                pos += 1;
                i += 2;
            } else {
                let l = self.lens[code as usize] as usize;
                if l == 0 {
                    return Err(FormatError::corrupt(format!(
                        "FSST code {code} has no symbol"
                    )));
                }
                out.get_mut(pos..pos + 8)
                    .ok_or_else(overflow)?
                    .copy_from_slice(&self.symbols[code as usize]);
                pos += l;
                i += 1;
            }
        }
        Ok(pos)
    }
}

/// Decompresses every string of a variable-width block.
pub fn decode(table: &[u8], block: DataBlock) -> Result<DataBlock> {
    let DataBlock::Variable { offsets, data } = block else {
        return Err(FormatError::corrupt("FSST over a non-variable-width block"));
    };
    let t = SymbolTable::parse(table)?;
    if !t.enabled {
        return Ok(DataBlock::Variable { offsets, data });
    }
    let n = offsets.len().saturating_sub(1);
    let src = data.as_slice();
    // Size the output exactly (one cheap pass over the codes), plus 8 bytes of slack for
    // the 8-byte symbol stores.
    let first = offsets.get(0).unwrap_or(0) as usize;
    let last = offsets.get(n).unwrap_or(0) as usize;
    let codes = src
        .get(first..last)
        .ok_or_else(|| FormatError::corrupt("FSST string offsets out of range"))?;
    let mut exact = 0usize;
    let mut k = 0usize;
    while k < codes.len() {
        if codes[k] == ESCAPE {
            exact += 1;
            k += 2;
        } else {
            exact += t.lens[codes[k] as usize] as usize;
            k += 1;
        }
    }
    let bound = exact + 8;
    let mut out = vec![0u8; bound];
    let mut pos = 0usize;
    let mut prev_end = first as u64;
    let mut new_offs: Vec<u64> = Vec::with_capacity(n + 1);
    new_offs.push(0);
    for i in 0..n {
        let (s, e) = (offsets.get(i).unwrap_or(0), offsets.get(i + 1).unwrap_or(0));
        let piece = src
            .get(s as usize..e as usize)
            .ok_or_else(|| FormatError::corrupt("FSST string offsets out of range"))?;
        if s < first as u64 || e > last as u64 || s < prev_end {
            return Err(FormatError::corrupt(
                "FSST string offsets overlap or decrease",
            ));
        }
        prev_end = e;
        pos = t.decode_into(piece, &mut out, pos)?;
        new_offs.push(pos as u64);
    }
    out.truncate(pos);
    let offsets = match offsets {
        Offsets::U32(_) if out.len() <= u32::MAX as usize => {
            Offsets::U32(new_offs.into_iter().map(|o| o as u32).collect())
        }
        _ => Offsets::U64(new_offs),
    };
    Ok(DataBlock::Variable {
        offsets,
        data: Buffer::from_vec(out),
    })
}
