//! Stable row ids (spec: "Row ids"): with the stable-row-ids feature every fragment
//! carries a `RowIdSequence` — the id of each of its physical rows, in row order, as
//! segments (ranges, ranges with holes or a bitmap, explicit arrays).

use std::path::Path;

use prost::Message;

use crate::pb;
use crate::pb::data_fragment::RowIdSequence as Seq;
use crate::pb::encoded_u64_array::Array;
use crate::pb::u64_segment::Segment;
use crate::{Result, TableError};

/// Little-endian `N`-byte values of `bytes`, each widened and added to `base`.
fn widen<const N: usize>(
    bytes: &[u8],
    base: u64,
    what: &str,
    value: impl Fn([u8; N]) -> u64,
) -> Result<Vec<u64>> {
    if bytes.len() % N != 0 {
        return Err(TableError::corrupt(format!(
            "row id array of {what} values has a ragged length"
        )));
    }
    Ok(bytes
        .chunks_exact(N)
        .map(|c| {
            let mut le = [0u8; N];
            le.copy_from_slice(c);
            base.wrapping_add(value(le))
        })
        .collect())
}

fn decode_array(a: &pb::EncodedU64Array, limit: u64) -> Result<Vec<u64>> {
    let out: Vec<u64> = match &a.array {
        Some(Array::U16Array(x)) => widen(&x.offsets, x.base, "u16", |b| {
            u64::from(u16::from_le_bytes(b))
        })?,
        Some(Array::U32Array(x)) => widen(&x.offsets, x.base, "u32", |b| {
            u64::from(u32::from_le_bytes(b))
        })?,
        Some(Array::U64Array(x)) => widen(&x.values, 0, "u64", u64::from_le_bytes)?,
        None => Vec::new(),
    };
    if out.len() as u64 > limit {
        return Err(TableError::corrupt("row id array longer than its fragment"));
    }
    Ok(out)
}

/// Expands a serialized sequence; refuses sequences longer than `limit` ids.
pub fn decode_sequence(bytes: &[u8], limit: u64) -> Result<Vec<u64>> {
    let seq = pb::RowIdSequence::decode(bytes)
        .map_err(|e| TableError::corrupt(format!("row id sequence protobuf: {e}")))?;
    let mut out: Vec<u64> = Vec::new();
    let room = |out: &Vec<u64>, n: u64| -> Result<()> {
        if out.len() as u64 + n > limit {
            return Err(TableError::corrupt(format!(
                "row id sequence longer than the {limit} rows of its fragment"
            )));
        }
        Ok(())
    };
    for s in seq.segments {
        match s.segment {
            Some(Segment::Range(r)) => {
                room(&out, r.end.saturating_sub(r.start))?;
                out.extend(r.start..r.end);
            }
            Some(Segment::RangeWithHoles(r)) => {
                let holes = r
                    .holes
                    .as_ref()
                    .map(|h| decode_array(h, limit))
                    .transpose()?
                    .unwrap_or_default();
                room(
                    &out,
                    r.end
                        .saturating_sub(r.start)
                        .saturating_sub(holes.len() as u64),
                )?;
                let mut hi = holes.iter().peekable();
                for v in r.start..r.end {
                    if hi.peek() == Some(&&v) {
                        hi.next();
                        continue;
                    }
                    out.push(v);
                }
            }
            Some(Segment::RangeWithBitmap(r)) => {
                let span = r.end.saturating_sub(r.start);
                if span > limit.saturating_mul(64) {
                    return Err(TableError::corrupt("row id bitmap range absurdly large"));
                }
                // Bits past the bitmap's bytes are unset: the loop is bounded by the input.
                for i in 0..span.min(r.bitmap.len() as u64 * 8) {
                    let set = r
                        .bitmap
                        .get((i / 8) as usize)
                        .is_some_and(|b| b >> (i % 8) & 1 == 1);
                    if set {
                        room(&out, 1)?;
                        out.push(r.start + i);
                    }
                }
            }
            Some(Segment::SortedArray(a)) | Some(Segment::Array(a)) => {
                let v = decode_array(&a, limit)?;
                room(&out, v.len() as u64)?;
                out.extend(v);
            }
            None => return Err(TableError::corrupt("row id segment of an unknown kind")),
        }
    }
    Ok(out)
}

/// The row ids of a fragment's physical rows, or None without stable row ids.
pub fn fragment_row_ids(root: &Path, frag: &pb::DataFragment) -> Result<Option<Vec<u64>>> {
    let bytes = match &frag.row_id_sequence {
        None => return Ok(None),
        Some(Seq::InlineRowIds(b)) => b.clone(),
        Some(Seq::ExternalRowIds(f)) => {
            let rel = std::path::Path::new(&f.path);
            if rel.is_absolute()
                || rel
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                return Err(TableError::corrupt(format!(
                    "row id file {:?} escapes the dataset",
                    f.path
                )));
            }
            let p = root.join(rel);
            let all = std::fs::read(&p).map_err(|e| TableError::io(&p, e))?;
            let end = f
                .offset
                .checked_add(f.size)
                .filter(|&e| e <= all.len() as u64)
                .ok_or_else(|| {
                    TableError::corrupt(format!(
                        "row id range {}+{} outside {}",
                        f.offset,
                        f.size,
                        p.display()
                    ))
                })?;
            all[f.offset as usize..end as usize].to_vec()
        }
    };
    // Row offsets in a fragment are u32 (row address = fragment id << 32 | offset): a
    // larger count is damage, and would be trusted as the bound of the expansion below.
    if frag.physical_rows > 1 << 32 {
        return Err(TableError::corrupt(format!(
            "fragment {} claims {} rows, more than a fragment can hold (2^32)",
            frag.id, frag.physical_rows
        )));
    }
    let ids = decode_sequence(&bytes, frag.physical_rows)?;
    if ids.len() as u64 != frag.physical_rows {
        return Err(TableError::corrupt(format!(
            "fragment {} has {} row ids for {} rows",
            frag.id,
            ids.len(),
            frag.physical_rows
        )));
    }
    Ok(Some(ids))
}

/// The inline row-id sequence of `n` new rows with ids `start..start + n` (one range
/// segment, as pylance writes it).
pub fn range_sequence(start: u64, n: u64) -> Vec<u8> {
    use prost::Message;
    pb::RowIdSequence {
        segments: vec![pb::U64Segment {
            segment: Some(Segment::Range(pb::u64_segment::Range {
                start,
                end: start + n,
            })),
        }],
    }
    .encode_to_vec()
}

/// The inline version sequence of `n` rows all of `version` (one run over positions
/// `0..n`, as pylance writes a new fragment's created-at and last-updated versions).
pub fn version_sequence(n: u64, version: u64) -> Vec<u8> {
    use prost::Message;
    pb::RowDatasetVersionSequence {
        runs: vec![pb::RowDatasetVersionRun {
            span: Some(pb::U64Segment {
                segment: Some(Segment::Range(pb::u64_segment::Range { start: 0, end: n })),
            }),
            version,
        }],
    }
    .encode_to_vec()
}
