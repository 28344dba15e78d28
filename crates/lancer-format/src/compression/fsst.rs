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
            // Eight codes at a time while none is an escape and the output has room for
            // eight whole-word stores: one test for escapes, one for unknown codes, and
            // the symbol lengths loaded independently of the running end (one code at a
            // time, each store waits on the length before it).
            while let (Some(chunk), Some(window)) =
                (input.get(i..i + 8), out.get_mut(pos..pos + 64))
            {
                let mut c = [0u8; 8];
                c.copy_from_slice(chunk);
                let word = u64::from_le_bytes(c);
                const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
                const HIGH: u64 = 0x8080_8080_8080_8080;
                // A byte is 255 when its low seven bits and its high bit are all set.
                if ((word & LOW7) + 0x0101_0101_0101_0101) & word & HIGH != 0 {
                    break;
                }
                let l = c.map(|code| self.lens[code as usize] as usize);
                if l.contains(&0) {
                    break;
                }
                let mut o = 0usize;
                for (code, len) in c.iter().zip(l) {
                    window
                        .get_mut(o..o + 8)
                        .ok_or_else(overflow)?
                        .copy_from_slice(&self.symbols[*code as usize]);
                    o += len;
                }
                pos += o;
                i += 8;
            }
            // One code: an escape, an unknown code (an error), or the tail.
            let Some(&code) = input.get(i) else { break };
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
    // Size the output from above in one pass over the code bytes: each byte weighs its
    // symbol's length (at least 1), an escape 0 — its literal byte then weighs at least
    // the 1 byte it stands for. (Walking the codes exactly, escape by escape, is a
    // serial loop that cost a quarter of the decode.) Plus 8 bytes of slack for the
    // 8-byte symbol stores; the output is cut to its real end.
    let first = offsets.get(0).unwrap_or(0) as usize;
    let last = offsets.get(n).unwrap_or(0) as usize;
    let codes = src
        .get(first..last)
        .ok_or_else(|| FormatError::corrupt("FSST string offsets out of range"))?;
    let mut weight = [0u8; 256];
    for (w, l) in weight.iter_mut().zip(t.lens) {
        *w = l.max(1);
    }
    weight[ESCAPE as usize] = 0;
    let bound = codes
        .iter()
        .map(|&c| weight[c as usize] as usize)
        .sum::<usize>()
        + 8;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of `n` symbols: symbol `k` is `len(k)` bytes, each `b'a' + k % 26`.
    fn table(n: usize, len: impl Fn(usize) -> u8) -> Vec<u8> {
        let mut t = (MAGIC | (1 << 24) | n as u64).to_le_bytes().to_vec();
        for k in 0..n {
            let mut sym = [0u8; 8];
            sym[..len(k) as usize].fill(b'a' + (k % 26) as u8);
            t.extend_from_slice(&sym);
        }
        t.extend((0..n).map(len));
        t
    }

    /// The per-code reading of the format, as a reference.
    fn naive(t: &[u8], codes: &[u8]) -> std::result::Result<Vec<u8>, ()> {
        let n = (t[0]) as usize;
        let mut out = Vec::new();
        let mut i = 0;
        while i < codes.len() {
            if codes[i] == ESCAPE {
                out.push(*codes.get(i + 1).ok_or(())?);
                i += 2;
            } else {
                let c = codes[i] as usize;
                if c >= n {
                    return Err(());
                }
                let l = t[8 + 8 * n + c] as usize;
                out.extend_from_slice(&t[8 + 8 * c..8 + 8 * c + l]);
                i += 1;
            }
        }
        Ok(out)
    }

    fn decode_strings(t: &[u8], strings: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
        let mut offs = vec![0u64];
        let mut data = Vec::new();
        for s in strings {
            data.extend_from_slice(s);
            offs.push(data.len() as u64);
        }
        let DataBlock::Variable { offsets, data } = decode(
            t,
            DataBlock::Variable {
                offsets: Offsets::U64(offs),
                data: Buffer::from_vec(data),
            },
        )?
        else {
            panic!("variable block expected");
        };
        Ok((0..strings.len())
            .map(|i| {
                let (s, e) = (offsets.get(i).unwrap(), offsets.get(i + 1).unwrap());
                data.as_slice()[s as usize..e as usize].to_vec()
            })
            .collect())
    }

    /// The eight-codes-at-a-time path and the per-code path agree with the format's
    /// per-code reading on strings of every length, with escapes anywhere (the fast
    /// path's 255 test), with codes of no symbol (an error, not output) and with
    /// symbols of every length 1-8.
    #[test]
    fn decodes_as_the_per_code_reading() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in [1usize, 7, 200, 255] {
            let t = table(n, |k| (k % 8 + 1) as u8);
            for escapes in [0u64, 3, 50] {
                let strings: Vec<Vec<u8>> = (0..60)
                    .map(|i| {
                        let len = if i < 40 { i } else { (next() % 300) as usize };
                        let mut s = Vec::new();
                        while s.len() < len {
                            if next() % 100 < escapes {
                                s.push(ESCAPE);
                                s.push((next() % 256) as u8);
                            } else {
                                s.push((next() % n as u64) as u8);
                            }
                        }
                        s
                    })
                    .collect();
                let got = decode_strings(&t, &strings).unwrap();
                for (s, g) in strings.iter().zip(&got) {
                    assert_eq!(&naive(&t, s).unwrap(), g, "{n} symbols, {escapes}% escapes");
                }
            }
            if n < 255 {
                // A code past the table, at each position of a 20-code string.
                for at in 0..20 {
                    let mut s: Vec<u8> = (0..20).map(|k| (k % n) as u8).collect();
                    s[at] = n as u8;
                    assert!(naive(&t, &s).is_err());
                    let e = decode_strings(&t, &[vec![0; 30], s]).unwrap_err();
                    assert!(e.to_string().contains("has no symbol"), "{e}");
                }
            }
        }
        // An escape as a string's last byte.
        let t = table(3, |_| 2);
        let e = decode_strings(&t, &[vec![0, 1, 2, 0, 1, 2, 0, 1, 2, ESCAPE]]).unwrap_err();
        assert!(e.to_string().contains("escape at end"), "{e}");
    }
}
