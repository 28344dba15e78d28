//! Stable row ids (spec: "Row ids"): with the stable-row-ids feature every fragment
//! carries a `RowIdSequence` — the id of each of its physical rows, in row order, as
//! segments (ranges, ranges with holes or a bitmap, explicit arrays).

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
    if !bytes.len().is_multiple_of(N) {
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
    for s in seq.segments {
        expand_segment(s.segment, limit, &mut out)?;
    }
    Ok(out)
}

/// Appends the values of one segment to `out`, refusing more than `limit` in all.
fn expand_segment(segment: Option<Segment>, limit: u64, out: &mut Vec<u64>) -> Result<()> {
    let room = |out: &Vec<u64>, n: u64| -> Result<()> {
        if out.len() as u64 + n > limit {
            return Err(TableError::corrupt(format!(
                "row id sequence longer than the {limit} rows of its fragment"
            )));
        }
        Ok(())
    };
    match segment {
        Some(Segment::Range(r)) => {
            room(out, r.end.saturating_sub(r.start))?;
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
                out,
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
                    room(out, 1)?;
                    out.push(r.start + i);
                }
            }
        }
        Some(Segment::SortedArray(a)) | Some(Segment::Array(a)) => {
            let v = decode_array(&a, limit)?;
            room(out, v.len() as u64)?;
            out.extend(v);
        }
        None => return Err(TableError::corrupt("row id segment of an unknown kind")),
    }
    Ok(())
}

/// The row ids of a fragment's physical rows, or None without stable row ids.
pub fn fragment_row_ids(
    store: &lancer_io::Store,
    frag: &pb::DataFragment,
) -> Result<Option<Vec<u64>>> {
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
            let all = store.get(&f.path)?;
            let end = f
                .offset
                .checked_add(f.size)
                .filter(|&e| e <= all.len() as u64)
                .ok_or_else(|| {
                    TableError::corrupt(format!(
                        "row id range {}+{} outside {}",
                        f.offset,
                        f.size,
                        store.display(&f.path)
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

/// The inline row-id sequence of `ids` (a range when consecutive, else an explicit
/// array — sorted or not).
pub fn encode_ids(ids: &[u64]) -> Vec<u8> {
    use prost::Message;
    let consecutive = ids.windows(2).all(|w| w[1] == w[0] + 1);
    let segment = match ids.first() {
        Some(&first) if consecutive => Segment::Range(pb::u64_segment::Range {
            start: first,
            end: first + ids.len() as u64,
        }),
        _ => {
            let values = ids.iter().flat_map(|v| v.to_le_bytes()).collect();
            let a = pb::EncodedU64Array {
                array: Some(Array::U64Array(pb::encoded_u64_array::U64Array { values })),
            };
            if ids.windows(2).all(|w| w[0] < w[1]) {
                Segment::SortedArray(a)
            } else {
                Segment::Array(a)
            }
        }
    };
    pb::RowIdSequence {
        segments: vec![pb::U64Segment {
            segment: Some(segment),
        }],
    }
    .encode_to_vec()
}

/// Per row of a fragment of `n` rows, the versions of a serialized version sequence
/// (runs of row positions sharing a version); rows no run covers are 0.
pub fn decode_versions(bytes: &[u8], n: u64) -> Result<Vec<u64>> {
    let seq = pb::RowDatasetVersionSequence::decode(bytes)
        .map_err(|e| TableError::corrupt(format!("version sequence protobuf: {e}")))?;
    let len = usize::try_from(n).map_err(|_| TableError::corrupt("fragment too large"))?;
    let mut out = vec![0u64; len];
    for run in seq.runs {
        let mut positions = Vec::new();
        expand_segment(run.span.and_then(|s| s.segment), n, &mut positions)?;
        for p in positions {
            let slot = out.get_mut(p as usize).ok_or_else(|| {
                TableError::corrupt(format!("version run past the {n} rows of its fragment"))
            })?;
            *slot = run.version;
        }
    }
    Ok(out)
}

/// A version sequence of `versions` (one per row, in row order) as runs.
pub fn encode_versions(versions: &[u64]) -> Vec<u8> {
    use prost::Message;
    let mut runs: Vec<pb::RowDatasetVersionRun> = Vec::new();
    let mut start = 0usize;
    for i in 1..=versions.len() {
        if i == versions.len() || versions[i] != versions[start] {
            runs.push(pb::RowDatasetVersionRun {
                span: Some(pb::U64Segment {
                    segment: Some(Segment::Range(pb::u64_segment::Range {
                        start: start as u64,
                        end: i as u64,
                    })),
                }),
                version: versions[start],
            });
            start = i;
        }
    }
    pb::RowDatasetVersionSequence { runs }.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_versions_round_trip() {
        for ids in [vec![], vec![7], vec![3, 4, 5], vec![1, 5, 9], vec![9, 2, 4]] {
            assert_eq!(decode_sequence(&encode_ids(&ids), 10).unwrap(), ids);
        }
        for v in [vec![], vec![1, 1, 1], vec![1, 2, 2, 3, 1]] {
            let n = v.len() as u64;
            assert_eq!(decode_versions(&encode_versions(&v), n).unwrap(), v);
        }
        assert!(decode_versions(&encode_versions(&[1, 2, 3]), 2).is_err());
    }
}
