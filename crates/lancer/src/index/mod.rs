//! A dataset's indexes through their life: described once ([`IndexSpec`]), built (vector,
//! scalar, full-text, JSON path), extended and optimized after appends, prewarmed into the
//! session's cache, read back partition by partition, built in segments on several
//! workers and merged, listed, described and dropped.
//!
//! Spec: "Indices" (format guide, lines ~1300–3160 of `lance-reference.txt`: the index
//! section of the manifest, vector, scalar and full-text index files) and "Distributed
//! indexing" (~7862–8438). The files each kind writes are in `docs/vector-index-format.md`,
//! `docs/scalar-index-format.md` and `docs/fts-index-format.md`.
//!
//! - `spec`: one request parsed for every front end, and [`create_index`];
//! - `vector`: IVF / HNSW builds, optimize, retrain, list, describe, drop;
//! - `scalar`, `json`, `fts`: the scalar kinds, JSON path targets and INVERTED builds;
//! - `distributed`: trained models, segments built on workers, merged and committed;
//! - `prewarm`, `reader`: segments loaded ahead of queries; one stored partition read.

pub(crate) mod distributed;
pub(crate) mod fts;
pub(crate) mod json;
pub(crate) mod prewarm;
pub(crate) mod reader;
pub(crate) mod scalar;
pub(crate) mod spec;
pub(crate) mod staged;
pub(crate) mod vector;

pub use distributed::{
    commit_index_segments, create_index_segment, merge_index_segments, parse_uuid,
    segment_from_json, segment_to_json, train_vector_model, RabitEncoder, VectorModel,
};
pub use fts::{create_fts_index, FtsIndexOptions};
pub use json::{check_target, TARGETS};
/// An index segment's uuid (16 bytes) as its directory name under `_indices/`.
pub use lancer_table::dataset::uuid_dir;
pub use prewarm::{ivf_model, prewarm_index, IvfModel};
pub use reader::read_index_partition;
pub use scalar::{create_scalar_index, ScalarIndexOptions};
pub use spec::{
    create_index, IndexParams, IndexSpec, DEFAULT_METRIC, DEFAULT_PQ_BITS, DEFAULT_RQ_BITS,
    INDEX_TYPES,
};
pub use staged::{merge_staged_fts, stage_fts_partition};
pub use vector::{
    create_vector_index, describe_index, drop_index, extend_index, list_indices, optimize_index,
    optimize_index_as_reference, optimize_index_merging, retrain_index, IndexInfo,
    VectorIndexOptions,
};
