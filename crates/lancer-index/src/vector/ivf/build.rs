//! Building IVF indexes in the reference's format from vectors in memory (the writing
//! side of [`crate::vector::ivf`]; byte layout in `docs/vector-index-format.md` §3–§5,
//! checked there against what pylance 11–14 open): k-means centroids over a training
//! sample, partition assignment, the quantizer (FLAT vectors, PQ codebook + column-major
//! codes per partition, SQ bounds + codes), and the two Lance files `index.idx` and
//! `auxiliary.idx` with their metadata keys and global buffers.
//!
//! A caller streaming a dataset uses the two passes of [`super::partition`] directly
//! (sample and train, then assign, encode and spill within
//! [`super::BuildParams::memory_budget`]).

use super::params::{invalid, BuildParams, BuiltIndex, Quantizer};
use super::partition::{train, PartitionWriter, Sampler};
use crate::Result;

/// Builds an IVF index over `vectors` (`rows × dim`, row-major, finite) whose rows have
/// the row addresses `row_ids`.
pub fn build(
    vectors: &[f32],
    row_ids: &[u64],
    dim: usize,
    params: &BuildParams,
) -> Result<BuiltIndex> {
    let rows = row_ids.len();
    if dim == 0 || vectors.len() != rows * dim {
        return Err(invalid(format!(
            "{} values for {rows} vectors of {dim} dims",
            vectors.len()
        )));
    }
    if rows == 0 {
        return Err(invalid(
            "no vectors to index (every row is null, deleted or non-finite)",
        ));
    }
    if let Quantizer::Pq { sub_vectors, bits } = params.quantizer {
        if sub_vectors == 0 || !dim.is_multiple_of(sub_vectors) {
            return Err(invalid(format!(
                "{sub_vectors} sub-vectors do not divide {dim} dimensions"
            )));
        }
        if !(bits == 8 || bits == 4) || (bits == 4 && sub_vectors % 2 != 0) {
            return Err(invalid(format!("PQ codes of {bits} bits over {sub_vectors} sub-vectors (8 bits, or 4 with an even count)")));
        }
    }
    if let Some(h) = &params.hnsw {
        h.validate()?;
        if matches!(params.quantizer, Quantizer::Rq { .. }) {
            return Err(invalid(
                "HNSW graphs over RabitQ codes (IVF_HNSW_RQ) are not an index kind the reference builds: use IVF_HNSW_FLAT, IVF_HNSW_SQ or IVF_HNSW_PQ",
            ));
        }
    }
    if let Quantizer::Rq { bits } = params.quantizer {
        if !dim.is_multiple_of(8) || !(1..=9).contains(&bits) {
            return Err(invalid(format!(
                "IVF_RQ of {bits} bits over {dim} dimensions (1 to 9 bits; dimensions a multiple of 8)"
            )));
        }
    }
    let mut sampler = Sampler::new(dim, rows, params);
    sampler.push(vectors);
    let model = train(sampler, params)?;
    let mut w = PartitionWriter::new(model, params)?;
    w.expect_rows(rows as u64);
    // In batches, as a streaming caller would push them (spilling between them).
    let step = 65_536;
    for (v, ids) in vectors.chunks(step * dim).zip(row_ids.chunks(step)) {
        w.push(v, ids)?;
    }
    w.finish()
}
