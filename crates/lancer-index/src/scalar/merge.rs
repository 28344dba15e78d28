//! Merging scalar segments built apart (a distributed build's per-worker segments,
//! reference "Distributed indexing" and pylance 14's `merge_existing_index_segments`):
//! every entry of each segment — a BTREE page's (value, id) pairs, a BITMAP key's ids —
//! is read back and fed to one [`ScalarBuilder`], whose output depends only on the set
//! of entries (BTREE ties ordered by id, bitmap ids sorted), so the merged segment's
//! files are byte for byte those of one build over the same fragments.

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::UInt32Array;
use arrow_schema::Field;
use lancer_table::{pb, Dataset};

use super::build::{BuiltScalar, ScalarBuilder, ScalarParams};
use super::{bitmap, rowmap, ScalarKind};
use crate::segment::{corrupt, SegmentHeader};
use crate::{IndexError, Result};

/// Whether segments of `kind` can be merged into one (the others are committed side by
/// side, each searched on its own, as the reference keeps them).
pub fn mergeable(kind: ScalarKind) -> bool {
    matches!(
        kind,
        ScalarKind::BTree | ScalarKind::Bitmap | ScalarKind::ZoneMap | ScalarKind::BloomFilter
    )
}

/// Rows a bitmap key's ids are expanded into per push.
const CHUNK: usize = 1 << 16;

/// Builds one segment of `params` over `field` from every entry of `segments` (all of
/// kind `params.kind`, of this dataset).
pub fn merge(
    ds: &Dataset,
    segments: &[pb::IndexMetadata],
    params: ScalarParams,
    field: &Field,
) -> Result<BuiltScalar> {
    if !mergeable(params.kind) {
        return Err(IndexError::InvalidArgument {
            what: format!(
                "{} segments are not merged: commit them side by side",
                params.kind.type_name()
            ),
        });
    }
    let kind = params.kind;
    let mut builder = ScalarBuilder::new(params, field)?;
    if matches!(kind, ScalarKind::ZoneMap | ScalarKind::BloomFilter) {
        // zones never cross a fragment: one build's zones are the segments' zones
        // taken in dataset order
        let name = if kind == ScalarKind::ZoneMap {
            "zonemap.lance"
        } else {
            "bloomfilter.lance"
        };
        let position: std::collections::HashMap<u64, usize> = ds
            .fragments()
            .iter()
            .enumerate()
            .map(|(i, f)| (f.id, i))
            .collect();
        let mut heads = Vec::with_capacity(segments.len());
        for meta in segments {
            let head = SegmentHeader::of(meta, "a scalar index")?;
            let first = head
                .fragments
                .iter()
                .filter_map(|f| position.get(&u64::from(f)).copied())
                .min()
                .unwrap_or(usize::MAX);
            heads.push((first, head));
        }
        heads.sort_by_key(|h| h.0);
        for (_, head) in heads {
            let rows: u64 = ds
                .fragments()
                .iter()
                .filter(|f| u32::try_from(f.id).is_ok_and(|id| head.fragments.contains(id)))
                .map(|f| f.physical_rows)
                .sum();
            let file = ds.open_index_file(&head.uuid, name)?;
            builder.absorb_zones(&head.label, &file, rows)?;
        }
        return builder.finish();
    }
    for meta in segments {
        let head = SegmentHeader::of(meta, "a scalar index")?;
        // a segment holds one entry per row of its fragments at most (bytes claiming
        // more are damaged; reading them would only grow memory)
        let limit: u64 = ds
            .fragments()
            .iter()
            .filter(|f| u32::try_from(f.id).is_ok_and(|id| head.fragments.contains(id)))
            .map(|f| f.physical_rows)
            .sum();
        let too_many = |n: u64| {
            corrupt(
                &head.label,
                format!("{n} or more entries for the {limit} rows of its fragments"),
            )
        };
        match kind {
            ScalarKind::BTree => {
                let data = ds.open_index_file(&head.uuid, "page_data.lance")?;
                if data.num_rows() > limit {
                    return Err(too_many(data.num_rows()));
                }
                let b = data.read_all(Some(&["values", "ids"]))?;
                let ids = b
                    .column(1)
                    .as_primitive_opt::<UInt64Type>()
                    .ok_or_else(|| corrupt(&head.label, "page_data ids are not uint64"))?;
                builder.push(b.column(0).clone(), ids.values(), ids.values())?;
            }
            _ => {
                let file = ds.open_index_file(&head.uuid, "bitmap_page_lookup.lance")?;
                let b = file.read_all(Some(&["keys", "bitmaps"]))?;
                let keys = b.column(0);
                let maps = bitmap::binary_values(&head.label, b.column(1))?;
                let (mut rows, mut ids) = (Vec::<u32>::new(), Vec::<u64>::new());
                let mut flush = |rows: &mut Vec<u32>, ids: &mut Vec<u64>| -> Result<()> {
                    if rows.is_empty() {
                        return Ok(());
                    }
                    let values = arrow_select::take::take(
                        keys.as_ref(),
                        &UInt32Array::from(std::mem::take(rows)),
                        None,
                    )?;
                    builder.push(values, ids, ids)?;
                    ids.clear();
                    Ok(())
                };
                let mut entries = 0u64;
                for (k, bytes) in maps.iter().enumerate() {
                    let one =
                        rowmap::decode_addr_map(bytes).map_err(|e| corrupt(&head.label, e))?;
                    entries += one.len();
                    if entries > limit {
                        return Err(too_many(entries));
                    }
                    for id in one.iter() {
                        rows.push(k as u32);
                        ids.push(id);
                        if ids.len() == CHUNK {
                            flush(&mut rows, &mut ids)?;
                        }
                    }
                }
                flush(&mut rows, &mut ids)?;
            }
        }
    }
    builder.finish()
}
