//! The two 64-bit row-set serializations scalar indexes store (layouts in
//! `docs/scalar-index-format.md` §3.3–§3.5; reference "Bitmap Index", RowAddrTreeMap):
//!
//! * **RowAddrTreeMap** (BITMAP / LABEL_LIST bitmaps, ZONEMAP / BLOOMFILTER null rows):
//!   `u32` entry count, then per fragment `u32` id, `u32` byte length and a portable
//!   32-bit roaring bitmap of row offsets (length 0 = the whole fragment, never written
//!   by pylance and refused here: the reader cannot know the fragment's size).
//! * **RoaringTreemap** (NGRAM postings): roaring-rs's own 64-bit format, `u64` count and
//!   per high word a `u32` and a 32-bit bitmap without length prefix.
//!
//! Both decode into a [`RoaringTreemap`] of row addresses (or stable row ids); every
//! length is checked against the bytes before it is used.

use roaring::{RoaringBitmap, RoaringTreemap};

/// Why a row set did not decode.
pub type Bad = String;

fn u32_at(b: &[u8], at: usize) -> Result<u32, Bad> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| format!("row map truncated at byte {at} of {}", b.len()))
}

/// Decodes a RowAddrTreeMap.
pub fn decode_addr_map(bytes: &[u8]) -> Result<RoaringTreemap, Bad> {
    let n = u32_at(bytes, 0)? as usize;
    // Each entry takes at least 8 bytes (id and length).
    if n > bytes.len() / 8 {
        return Err(format!(
            "row map claims {n} fragments in {} bytes",
            bytes.len()
        ));
    }
    let mut at = 4usize;
    let mut parts: Vec<(u32, RoaringBitmap)> = Vec::with_capacity(n);
    let mut last: Option<u32> = None;
    for _ in 0..n {
        let frag = u32_at(bytes, at)?;
        let len = u32_at(bytes, at + 4)? as usize;
        at += 8;
        if last.is_some_and(|l| l >= frag) {
            return Err(format!("row map fragments out of order at fragment {frag}"));
        }
        last = Some(frag);
        if len == 0 {
            return Err(format!(
                "row map entry for fragment {frag} means 'every row', which Lancer cannot size"
            ));
        }
        let end = at
            .checked_add(len)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| {
                format!(
                    "row map entry of {len} bytes past the end ({} bytes)",
                    bytes.len()
                )
            })?;
        let rows = RoaringBitmap::deserialize_from(&bytes[at..end])
            .map_err(|e| format!("row map bitmap of fragment {frag}: {e}"))?;
        at = end;
        parts.push((frag, rows));
    }
    Ok(RoaringTreemap::from_bitmaps(parts))
}

/// Encodes a RowAddrTreeMap (fragments ascending, no run containers).
pub fn encode_addr_map(rows: &RoaringTreemap) -> Vec<u8> {
    let parts: Vec<(u32, &RoaringBitmap)> = rows.bitmaps().filter(|(_, b)| !b.is_empty()).collect();
    let mut out = Vec::with_capacity(4 + parts.len() * 24);
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for (frag, bm) in parts {
        let mut b = Vec::with_capacity(bm.serialized_size());
        // Writing into a Vec cannot fail.
        let _ = bm.serialize_into(&mut b);
        out.extend_from_slice(&frag.to_le_bytes());
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(&b);
    }
    out
}

/// Decodes a RoaringTreemap (roaring-rs 64-bit format).
pub fn decode_treemap(bytes: &[u8]) -> Result<RoaringTreemap, Bad> {
    let n = bytes
        .get(..8)
        .map(|s| u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
        .ok_or("posting list shorter than its 8-byte count")?;
    // Each bitmap takes at least 12 bytes (high word and an empty roaring header).
    if n > (bytes.len() / 12) as u64 {
        return Err(format!(
            "posting list claims {n} bitmaps in {} bytes",
            bytes.len()
        ));
    }
    let mut rest = &bytes[8..];
    let mut parts: Vec<(u32, RoaringBitmap)> = Vec::new();
    let mut last: Option<u32> = None;
    for _ in 0..n {
        let high = u32_at(rest, 0)?;
        if last.is_some_and(|l| l >= high) {
            return Err(format!("posting list high words out of order at {high}"));
        }
        last = Some(high);
        rest = &rest[4..];
        // The reader advances `rest` past the bitmap it reads.
        let bm = RoaringBitmap::deserialize_from(&mut rest)
            .map_err(|e| format!("posting list bitmap {high}: {e}"))?;
        parts.push((high, bm));
    }
    if !rest.is_empty() {
        return Err(format!("{} bytes after the posting list", rest.len()));
    }
    Ok(RoaringTreemap::from_bitmaps(parts))
}

/// Encodes a RoaringTreemap (roaring-rs 64-bit format).
pub fn encode_treemap(rows: &RoaringTreemap) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.serialized_size());
    // Writing into a Vec cannot fail.
    let _ = rows.serialize_into(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or(0))
            .collect()
    }

    #[test]
    fn addr_map_matches_the_documented_bytes() {
        // docs/scalar-index-format.md §3.4 example, as pylance wrote it.
        let bytes = hex(
            "02000000 00000000 1c000000 3a300000 01000000 0000 0500 10000000 0000 0b00 1600 2100 2c00 3700
             01000000 18000000 3a300000 01000000 0000 0300 10000000 0600 1100 1c00 2700",
        );
        let rows = decode_addr_map(&bytes).unwrap_or_default();
        let want: Vec<u64> = [0, 11, 22, 33, 44, 55]
            .into_iter()
            .chain([6, 17, 28, 39].into_iter().map(|r| (1 << 32) | r))
            .collect();
        assert_eq!(rows.iter().collect::<Vec<_>>(), want);
        assert_eq!(encode_addr_map(&rows), bytes);
        assert_eq!(encode_addr_map(&RoaringTreemap::new()), hex("00000000"));
    }

    #[test]
    fn treemap_matches_the_documented_bytes() {
        let bytes = hex(
            "02000000 00000000 00000000 3a300000 01000000 0000 0600 10000000 0000 0900 1200 1b00 2400 2d00 3600
             01000000 3a300000 01000000 0000 0400 10000000 0300 0c00 1500 1e00 2700",
        );
        let rows = decode_treemap(&bytes).unwrap_or_default();
        assert_eq!(rows.len(), 12);
        assert!(rows.contains((1 << 32) | 39));
        assert_eq!(encode_treemap(&rows), bytes);
    }

    #[test]
    fn every_truncation_and_flip_is_an_error_or_a_value_never_a_panic() {
        let bytes = hex(
            "02000000 00000000 1c000000 3a300000 01000000 0000 0500 10000000 0000 0b00 1600 2100 2c00 3700
             01000000 18000000 3a300000 01000000 0000 0300 10000000 0600 1100 1c00 2700",
        );
        for cut in 0..bytes.len() {
            assert!(decode_addr_map(&bytes[..cut]).is_err(), "cut {cut}");
            let _ = decode_treemap(&bytes[..cut]);
        }
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                let _ = decode_addr_map(&b);
                let _ = decode_treemap(&b);
            }
        }
        // A huge count is refused before anything is allocated.
        assert!(decode_addr_map(&hex("ffffffff")).is_err());
        assert!(decode_treemap(&hex("ffffffffffffffff")).is_err());
    }
}
