//! Merging IVF segments built with one model (a distributed build's per-worker
//! segments; reference "Distributed indexing", lines ~7862–8438:
//! `merge_existing_index_segments` supports vector segments whose workers shared the
//! IVF centroids and quantizer). Each segment's stored rows are taken back as the
//! encoded records the build wrote — FLAT vectors, SQ codes, PQ codes (stored
//! column-major per partition, turned back row by row) — and handed to one
//! [`PartitionWriter`] of the shared model, which sorts each partition by row address
//! and writes it as one build over the same rows does (HNSW graphs built at its finish,
//! as in a build). Nothing is assigned or encoded again. RabitQ segments are not taken
//! apart here (their reader keeps ex codes in another layout): the caller encodes their
//! rows again.

use crate::ivf::{IvfSegment, Storage};
use crate::ivf_build::{invalid, BuiltIndex};
use crate::ivf_partition::PartitionWriter;
use crate::Result;

/// Whether [`merge`] takes `segment`'s rows as stored (FLAT, SQ, PQ storage).
pub fn mergeable(segment: &IvfSegment) -> bool {
    !matches!(segment.storage, Storage::Rq(_))
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
                Storage::Rq(_) => {
                    return Err(invalid(
                        "RabitQ segments are merged by encoding their rows again",
                    ))
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
