//! Merging IVF segments built with one model (a distributed build's per-worker
//! segments; reference "Distributed indexing", lines ~7862–8438:
//! `merge_existing_index_segments` supports vector segments whose workers shared the
//! IVF centroids and quantizer). Each segment's stored rows are taken back as the
//! encoded records the build wrote — FLAT vectors, SQ codes, PQ codes (stored
//! column-major per partition, turned back row by row), RabitQ codes and factors — and handed to one
//! [`PartitionWriter`] of the shared model, which sorts each partition by row address
//! and writes it as one build over the same rows does (HNSW graphs built at its finish,
//! as in a build). Nothing is assigned or encoded again. RabitQ rows are rebuilt from
//! the reader's sign codes, factors and ex codes (blocked again where the reader
//! unpacked them); a RabitQ file without error factors is encoded again by the caller.

use super::params::{invalid, BuiltIndex};
use super::partition::PartitionWriter;
use super::{IvfSegment, Storage};
use crate::Result;

/// Whether [`merge`] takes `segment`'s rows as stored (FLAT, SQ, PQ storage; RabitQ
/// storage with its error factors, which the build writes).
pub fn mergeable(segment: &IvfSegment) -> bool {
    match &segment.storage {
        Storage::Rq(r) => r.has_error_factors(),
        _ => true,
    }
}

/// Every row of `segments` (built with the model `writer` encodes with) into `writer`,
/// then its finished segment.
pub fn merge(segments: &[IvfSegment], mut writer: PartitionWriter) -> Result<BuiltIndex> {
    let rec = writer.record_bytes();
    for seg in segments {
        let dim = seg.dim;
        let mut recs = Vec::new();
        for (p, &(start, len)) in seg.partitions.iter().enumerate() {
            if len == 0 {
                continue;
            }
            let bad = |what: &str| {
                invalid(format!(
                    "index segment {} partition {p}: {what}; build the segments again",
                    seg.name
                ))
            };
            let ids = seg
                .row_ids
                .get(start..start + len)
                .ok_or_else(|| bad("rows past the stored row ids"))?;
            recs.clear();
            match &seg.storage {
                Storage::Flat { vectors } => {
                    let v = vectors
                        .get(start * dim..(start + len) * dim)
                        .ok_or_else(|| bad("rows past the stored vectors"))?;
                    recs.extend(v.iter().flat_map(|x| x.to_le_bytes()));
                }
                Storage::Sq { codes, .. } => {
                    recs.extend_from_slice(
                        codes
                            .get(start * dim..(start + len) * dim)
                            .ok_or_else(|| bad("rows past the stored codes"))?,
                    );
                }
                Storage::Pq { codes, .. } => {
                    // byte b of the partition's row i at b·len + i
                    let block = codes
                        .get(start * rec..(start + len) * rec)
                        .ok_or_else(|| bad("rows past the stored codes"))?;
                    recs.resize(len * rec, 0);
                    for b in 0..rec {
                        for i in 0..len {
                            recs[i * rec + b] = block[b * len + i];
                        }
                    }
                }
                Storage::Rq(rabit) => {
                    for r in start..start + len {
                        rabit.record(r, &mut recs).ok_or_else(|| {
                            bad("RabitQ rows without the error factors a build writes")
                        })?;
                    }
                }
            }
            if recs.len() != len * rec {
                return Err(bad(&format!(
                    "{} bytes per row stored, the model's records have {rec}",
                    recs.len() / len
                )));
            }
            writer.push_encoded(p, ids, &recs)?;
        }
    }
    writer.finish()
}
