//! Posting lists of an INVERTED index partition (`part_<p>_invert.lance`,
//! docs/fts-index-format.md §6): blocks of 128 (BitPacker4x) or 256 (BitPacker8x,
//! patched frequencies) documents, a varint or fixed-width tail, and positions (one
//! shared stream per token in formats 2 / 3, per document in format 1). Every length
//! and count read from the bytes is checked before it is used.

use bitpacking::{BitPacker, BitPacker4x, BitPacker8x};

/// How a partition's posting lists are laid out (from the file's metadata).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Documents per full block: 128 or 256.
    pub block: usize,
    /// The tail block's codec: varints (formats 2, 3) or fixed u32 (format 1).
    pub varint_tail: bool,
}

/// One token's posting list, decoded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Postings {
    /// Document ids (indexes into the partition's documents), ascending.
    pub docs: Vec<u32>,
    /// Term frequency per document.
    pub freqs: Vec<u32>,
}

/// A decoding failure: what is wrong (the caller names the file and token).
pub type DecodeError = String;

fn take<'a>(b: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
    if b.len() < n {
        return Err(format!("{what}: {n} bytes wanted, {} left", b.len()));
    }
    let (head, rest) = b.split_at(n);
    *b = rest;
    Ok(head)
}

fn u8_of(b: &mut &[u8], what: &str) -> Result<u8, DecodeError> {
    Ok(take(b, 1, what)?[0])
}

fn u32_of(b: &mut &[u8], what: &str) -> Result<u32, DecodeError> {
    let s = take(b, 4, what)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// A LEB128 varint of at most 32 bits.
pub(crate) fn varint(b: &mut &[u8], what: &str) -> Result<u32, DecodeError> {
    let mut v: u64 = 0;
    for i in 0..5 {
        let byte = u8_of(b, what)?;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return u32::try_from(v).map_err(|_| format!("{what}: varint over 32 bits"));
        }
    }
    Err(format!("{what}: varint longer than 5 bytes"))
}

/// `lanes × 32` values packed at `nb` bits (the bitpacking crate's layout); `sorted`
/// values are deltas from `initial` (the previous value).
fn unpack(
    b: &mut &[u8],
    lanes: usize,
    nb: u8,
    sorted: Option<u32>,
    out: &mut Vec<u32>,
    what: &str,
) -> Result<(), DecodeError> {
    if nb > 32 {
        return Err(format!("{what}: {nb} bits per value"));
    }
    let len = lanes * 32;
    let bytes = take(b, len * nb as usize / 8, what)?;
    let mut vals = vec![0u32; len];
    match (lanes, sorted) {
        (4, Some(first)) => {
            BitPacker4x::new().decompress_sorted(first, bytes, &mut vals, nb);
        }
        (4, None) => {
            BitPacker4x::new().decompress(bytes, &mut vals, nb);
        }
        (_, Some(first)) => {
            BitPacker8x::new().decompress_sorted(first, bytes, &mut vals, nb);
        }
        (_, None) => {
            BitPacker8x::new().decompress(bytes, &mut vals, nb);
        }
    }
    out.extend_from_slice(&vals);
    Ok(())
}

/// Decodes the blocks of a posting list of `length` documents. `num_docs` bounds the
/// document ids (the partition's document count).
pub fn decode(
    blocks: &[&[u8]],
    length: usize,
    layout: Layout,
    num_docs: usize,
) -> Result<Postings, DecodeError> {
    let bsz = layout.block;
    let want_blocks = length.div_ceil(bsz);
    if blocks.len() != want_blocks {
        return Err(format!(
            "{} blocks for {length} documents (blocks of {bsz})",
            blocks.len()
        ));
    }
    let mut p = Postings {
        docs: Vec::with_capacity(length),
        freqs: Vec::with_capacity(length),
    };
    for (i, block) in blocks.iter().enumerate() {
        let mut b: &[u8] = block;
        let full = (i + 1) * bsz <= length;
        if bsz == 128 {
            take(&mut b, 4, "block max score")?;
        }
        if full {
            let first = u32_of(&mut b, "first document")?;
            let nb = u8_of(&mut b, "document bits")?;
            unpack(
                &mut b,
                bsz / 32,
                nb,
                Some(first),
                &mut p.docs,
                "document ids",
            )?;
            if bsz == 128 {
                let nf = u8_of(&mut b, "frequency bits")?;
                unpack(&mut b, 4, nf, None, &mut p.freqs, "frequencies")?;
            } else {
                // patched: low `width` bits packed, then (index, high bits) exceptions
                let width = u8_of(&mut b, "frequency bits")?;
                let n_exc = u8_of(&mut b, "frequency exceptions")? as usize;
                let start = p.freqs.len();
                unpack(&mut b, 8, width, None, &mut p.freqs, "frequencies")?;
                for _ in 0..n_exc {
                    let at = u8_of(&mut b, "exception index")? as usize;
                    let high = varint(&mut b, "exception value")?;
                    let shifted = u64::from(high) << width;
                    let f = &mut p.freqs[start + at];
                    *f = u32::try_from(u64::from(*f) | shifted)
                        .map_err(|_| "frequency over 32 bits".to_string())?;
                }
            }
        } else {
            let n = length - i * bsz;
            if layout.varint_tail {
                let mut prev = 0u32;
                for k in 0..n {
                    let d = varint(&mut b, "tail document")?;
                    prev = if k == 0 {
                        d
                    } else {
                        prev.checked_add(d)
                            .ok_or_else(|| "tail document id overflows".to_string())?
                    };
                    p.docs.push(prev);
                }
                for _ in 0..n {
                    p.freqs.push(varint(&mut b, "tail frequency")?);
                }
            } else {
                for _ in 0..n {
                    p.docs.push(u32_of(&mut b, "tail document")?);
                }
                for _ in 0..n {
                    p.freqs.push(u32_of(&mut b, "tail frequency")?);
                }
            }
        }
        if !b.is_empty() {
            return Err(format!("block {i}: {} bytes after its values", b.len()));
        }
    }
    if p.docs.windows(2).any(|w| w[0] >= w[1]) {
        return Err("document ids not ascending".into());
    }
    if p.docs.last().is_some_and(|&d| d as usize >= num_docs) {
        return Err(format!("document id beyond the partition's {num_docs}"));
    }
    if p.freqs.contains(&0) {
        return Err("a zero term frequency".into());
    }
    Ok(p)
}

/// Positions of formats 2 / 3 (`shared_stream_v2` / `packed_delta_v1`): the stream of
/// a posting list and where each block's part starts; `freqs` of the list. Returns
/// each document's positions, ascending.
pub fn decode_positions_shared(
    stream: &[u8],
    block_offsets: &[u32],
    freqs: &[u32],
    block: usize,
) -> Result<Vec<Vec<u32>>, DecodeError> {
    check_position_blocks(block_offsets, freqs, block)?;
    let mut out = Vec::with_capacity(freqs.len());
    for i in 0..block_offsets.len() {
        out.extend(decode_position_block(stream, block_offsets, freqs, block, i)?.to_lists());
    }
    Ok(out)
}

/// Whether a posting list of `freqs` has one position block per `block` documents.
pub fn check_position_blocks(
    block_offsets: &[u32],
    freqs: &[u32],
    block: usize,
) -> Result<(), DecodeError> {
    if block == 0 || block_offsets.len() != freqs.len().div_ceil(block) {
        return Err(format!(
            "{} position blocks for {} documents",
            block_offsets.len(),
            freqs.len()
        ));
    }
    Ok(())
}

/// The positions of one block's documents, flat: document `d`'s are
/// `positions[starts[d]..starts[d + 1]]`, ascending.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PositionBlock {
    /// Every document's positions, one after the other.
    pub positions: Vec<u32>,
    /// Where each document's positions start (one more entry than documents).
    pub starts: Vec<u32>,
}

impl PositionBlock {
    /// The positions of the block's `d`-th document (empty past the end).
    pub fn of(&self, d: usize) -> &[u32] {
        match (self.starts.get(d), self.starts.get(d + 1)) {
            (Some(&a), Some(&b)) => self.positions.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Whether it has no document.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each document's positions as its own vector.
    pub fn to_lists(&self) -> Vec<Vec<u32>> {
        (0..self.len()).map(|d| self.of(d).to_vec()).collect()
    }

    /// A block of `lists`.
    pub fn from_lists(lists: &[Vec<u32>]) -> Self {
        let mut b = PositionBlock {
            positions: Vec::new(),
            starts: vec![0],
        };
        for l in lists {
            b.positions.extend_from_slice(l);
            b.starts.push(b.positions.len() as u32);
        }
        b
    }
}

/// Block `i`'s bytes of the stream, its documents' frequencies and their total
/// positions — each bound checked (every position takes at least a bit).
fn position_block_bounds<'a>(
    stream: &'a [u8],
    block_offsets: &[u32],
    freqs: &'a [u32],
    block: usize,
    i: usize,
) -> Result<(&'a [u8], &'a [u32], usize), DecodeError> {
    let Some(&off) = block_offsets.get(i) else {
        return Err(format!("position block {i} of {}", block_offsets.len()));
    };
    let end = block_offsets
        .get(i + 1)
        .map_or(stream.len(), |&e| e as usize);
    let off = off as usize;
    if off > end || end > stream.len() {
        return Err(format!(
            "position block {i} at {off}..{end} of {}",
            stream.len()
        ));
    }
    let docs = freqs
        .get(i * block..((i + 1) * block).min(freqs.len()))
        .unwrap_or_default();
    let total: u64 = docs.iter().map(|&f| u64::from(f)).sum();
    if total > 8 * (end - off) as u64 + 128 {
        return Err(format!(
            "position block {i}: {total} positions in {} bytes",
            end - off
        ));
    }
    Ok((&stream[off..end], docs, total as usize))
}

/// The positions of the documents of block `i` alone (see
/// [`decode_positions_shared`]; the caller has run [`check_position_blocks`]).
pub fn decode_position_block(
    stream: &[u8],
    block_offsets: &[u32],
    freqs: &[u32],
    block: usize,
    i: usize,
) -> Result<PositionBlock, DecodeError> {
    let (mut b, docs, total) = position_block_bounds(stream, block_offsets, freqs, block, i)?;
    let mut deltas = Vec::with_capacity(total);
    while total - deltas.len() >= 128 {
        let nb = u8_of(&mut b, "position bits")?;
        unpack(&mut b, 4, nb, None, &mut deltas, "positions")?;
    }
    while deltas.len() < total {
        deltas.push(varint(&mut b, "position")?);
    }
    if !b.is_empty() {
        return Err(format!("position block {i}: {} bytes left", b.len()));
    }
    // deltas → positions, in place: each document's first value is absolute
    let mut starts = Vec::with_capacity(docs.len() + 1);
    starts.push(0u32);
    let mut at = 0usize;
    for &f in docs {
        let f = f as usize;
        for k in 1..f {
            deltas[at + k] = deltas[at + k - 1]
                .checked_add(deltas[at + k])
                .ok_or_else(|| "position overflows".to_string())?;
        }
        at += f;
        starts.push(at as u32);
    }
    Ok(PositionBlock {
        positions: deltas,
        starts,
    })
}

/// The positions of one document alone — the `d`-th of block `i` — into `out`
/// (cleared): only the 128-value chunks (or the varint tail) holding them are decoded;
/// the chunks before are skipped by their bit widths. The caller has run
/// [`check_position_blocks`].
pub fn decode_doc_positions(
    stream: &[u8],
    block_offsets: &[u32],
    freqs: &[u32],
    block: usize,
    i: usize,
    d: usize,
    out: &mut Vec<u32>,
) -> Result<(), DecodeError> {
    out.clear();
    let (mut b, docs, total) = position_block_bounds(stream, block_offsets, freqs, block, i)?;
    if d >= docs.len() {
        return Err(format!("document {d} of a {}-document block", docs.len()));
    }
    let from: usize = docs[..d].iter().map(|&f| f as usize).sum();
    let to = from + docs[d] as usize;
    let packed = total / 128 * 128;
    let mut vals: Vec<u32> = Vec::with_capacity(to - from);
    let mut at = 0usize; // index of the next value in the block
    while at < packed && at < to {
        let nb = u8_of(&mut b, "position bits")?;
        if nb > 32 {
            return Err(format!("positions: {nb} bits per value"));
        }
        let len = 128 * nb as usize / 8;
        if at + 128 <= from {
            take(&mut b, len, "positions")?;
        } else {
            let mut chunk = Vec::with_capacity(128);
            unpack(&mut b, 4, nb, None, &mut chunk, "positions")?;
            let lo = from.saturating_sub(at);
            let hi = (to - at).min(128);
            vals.extend_from_slice(&chunk[lo..hi]);
        }
        at += 128;
    }
    while at < to {
        let v = varint(&mut b, "position")?;
        if at >= from {
            vals.push(v);
        }
        at += 1;
    }
    let mut prev = 0u32;
    for (k, v) in vals.into_iter().enumerate() {
        prev = if k == 0 {
            v
        } else {
            prev.checked_add(v)
                .ok_or_else(|| "position overflows".to_string())?
        };
        out.push(prev);
    }
    Ok(())
}

/// Positions of format 1: per document a list of binaries — the count (u32), one
/// binary per full 128 positions (first u32, bits u8, BitPacker4x deltas), then the
/// rest as u32s.
pub fn decode_positions_v1(doc: &[&[u8]], freq: u32) -> Result<Vec<u32>, DecodeError> {
    let Some((count, rest)) = doc.split_first() else {
        return Err("no position count".into());
    };
    let mut c: &[u8] = count;
    let n = u32_of(&mut c, "position count")?;
    if n != freq {
        return Err(format!("{n} positions for frequency {freq}"));
    }
    let n = n as usize;
    let mut out = Vec::with_capacity(n.min(1 << 20));
    for (i, part) in rest.iter().enumerate() {
        let mut b: &[u8] = part;
        if out.len() + 128 <= n {
            let first = u32_of(&mut b, "first position")?;
            let nb = u8_of(&mut b, "position bits")?;
            unpack(&mut b, 4, nb, Some(first), &mut out, "positions")?;
        } else {
            while !b.is_empty() {
                out.push(u32_of(&mut b, "position")?);
            }
        }
        if !b.is_empty() {
            return Err(format!("position part {i}: {} bytes left", b.len()));
        }
    }
    if out.len() != n {
        return Err(format!("{} positions decoded, {n} counted", out.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_document_decodes_like_its_block() {
        // a block of 5 documents whose positions span two packed chunks and a tail
        let freqs = [100u32, 60, 1, 90, 30];
        let lists: Vec<Vec<u32>> = freqs
            .iter()
            .enumerate()
            .map(|(d, &f)| (0..f).map(|k| k * 3 + d as u32).collect())
            .collect();
        let mut deltas = Vec::new();
        for l in &lists {
            for (k, &p) in l.iter().enumerate() {
                deltas.push(if k == 0 { p } else { p - l[k - 1] });
            }
        }
        let mut stream = Vec::new();
        let mut rest = &deltas[..];
        while rest.len() >= 128 {
            let nb = BitPacker4x::new().num_bits(&rest[..128]);
            stream.push(nb);
            let mut buf = vec![0u8; 16 * nb as usize];
            BitPacker4x::new().compress(&rest[..128], &mut buf, nb);
            stream.extend(buf);
            rest = &rest[128..];
        }
        for &v in rest {
            let mut v = v;
            loop {
                let byte = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    stream.push(byte);
                    break;
                }
                stream.push(byte | 0x80);
            }
        }
        let whole = decode_position_block(&stream, &[0], &freqs, 128, 0).unwrap();
        assert_eq!(whole.to_lists(), lists);
        let mut out = Vec::new();
        for (d, want) in lists.iter().enumerate() {
            decode_doc_positions(&stream, &[0], &freqs, 128, 0, d, &mut out).unwrap();
            assert_eq!(&out, want, "document {d}");
        }
        assert!(decode_doc_positions(&stream, &[0], &freqs, 128, 0, 5, &mut out).is_err());
        assert!(decode_doc_positions(&stream[..20], &[0], &freqs, 128, 0, 4, &mut out).is_err());
    }

    #[test]
    fn varints_and_tails() {
        // two documents 237, 238 with frequencies 1, 2 (varint tail, 128-blocks)
        let tail = [0u8, 0, 0x80, 0x3f, 0xed, 0x01, 0x01, 0x01, 0x02];
        let p = decode(
            &[&tail],
            2,
            Layout {
                block: 128,
                varint_tail: true,
            },
            300,
        )
        .unwrap();
        assert_eq!(p.docs, vec![237, 238]);
        assert_eq!(p.freqs, vec![1, 2]);
        // a document id beyond the partition
        assert!(decode(
            &[&tail],
            2,
            Layout {
                block: 128,
                varint_tail: true
            },
            238
        )
        .is_err());
        // truncated
        assert!(decode(
            &[&tail[..6]],
            2,
            Layout {
                block: 128,
                varint_tail: true
            },
            300
        )
        .is_err());
        // wrong block count
        assert!(decode(
            &[&tail, &tail],
            2,
            Layout {
                block: 128,
                varint_tail: true
            },
            300
        )
        .is_err());
    }

    #[test]
    fn full_blocks_round_trip_through_the_packer() {
        let docs: Vec<u32> = (0..128).map(|i| 3 + i * 2).collect();
        let freqs: Vec<u32> = (0..128).map(|i| 1 + i % 5).collect();
        let bp = BitPacker4x::new();
        let nb = bp.num_bits_sorted(docs[0], &docs);
        let mut packed = vec![0u8; 16 * nb as usize];
        bp.compress_sorted(docs[0], &docs, &mut packed, nb);
        let nf = bp.num_bits(&freqs);
        let mut pf = vec![0u8; 16 * nf as usize];
        bp.compress(&freqs, &mut pf, nf);
        let mut block = vec![0u8; 4];
        block.extend_from_slice(&docs[0].to_le_bytes());
        block.push(nb);
        block.extend_from_slice(&packed);
        block.push(nf);
        block.extend_from_slice(&pf);
        let p = decode(
            &[&block],
            128,
            Layout {
                block: 128,
                varint_tail: true,
            },
            1000,
        )
        .unwrap();
        assert_eq!(p.docs, docs);
        assert_eq!(p.freqs, freqs);
        // a bit count over 32 is refused, not handed to the packer
        let mut bad = block.clone();
        bad[8] = 40;
        assert!(decode(
            &[&bad],
            128,
            Layout {
                block: 128,
                varint_tail: true
            },
            1000
        )
        .is_err());
    }

    #[test]
    fn shared_positions() {
        // docs with frequencies 1, 1, 3: [4], [1], [0, 1, 2] as deltas 4 | 1 | 0 1 1
        let stream = [4u8, 1, 0, 1, 1];
        let p = decode_positions_shared(&stream, &[0], &[1, 1, 3], 128).unwrap();
        assert_eq!(p, vec![vec![4], vec![1], vec![0, 1, 2]]);
        assert!(decode_positions_shared(&stream[..4], &[0], &[1, 1, 3], 128).is_err());
        assert!(decode_positions_shared(&stream, &[9], &[1, 1, 3], 128).is_err());
    }
}
