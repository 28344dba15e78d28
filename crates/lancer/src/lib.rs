//! `lancer`: the public API over Lance datasets — reading and writing (re-exported from
//! `lancer-table`), SQL filters ([`filter`]), scans ([`scan`]), nearest-neighbour
//! search ([`search`], [`ann`]), full-text search ([`fts`]) and both fused
//! ([`hybrid`]); two-phase (distributed) writes ([`two_phase`]) and compaction ([`compaction`]). A [`Session`] holds what the datasets opened through it share
//! (storage options, runtime, caches, warnings), with async forms of its calls.

pub mod address_set;
pub mod ann;
pub mod batch_search;
pub mod blobs;
pub mod compaction;
pub mod debug;
pub mod distributed_index;
mod error;
pub mod evolve;
pub mod explain;
pub mod filter;
pub mod fragment_json;
pub mod fts;
pub mod fts_index;
pub mod hybrid;
pub mod index;
pub mod index_reader;
pub mod index_spec;
pub mod json_index;
pub mod multivector;
pub mod prewarm;
pub mod scalar_index;
mod scalar_plan;
pub mod scan;
pub mod search;
pub mod session;
pub mod stats;
pub mod transactions;
pub mod two_phase;
pub mod verify;

pub use error::{Error, Result};
pub use filter::{Expression, Filter};
pub use lancer_io::{CacheStats, StorageOptions, Store, StoreStats};
pub use lancer_table::concat;
pub use session::{Session, SessionBuilder};

// Option types the front ends name, defined once below this crate and named here.
pub use index_spec::{create_index, create_index_observed, IndexParams, IndexSpec};

/// The table layer (`lancer-table`) as front ends reach it: dataset locations, write
/// parameters, versions and tags, cleanup, compaction options. Front ends (the CLI,
/// Python) name only `lancer`; the layers below are reached through these modules.
pub mod table {
    /// Manifest file naming (older `{version}.manifest` or newer, latest-first names).
    pub use lancer_table::commit::Naming;
    pub use lancer_table::{
        bases, branch, cleanup, compact, config, dataset, deletion, evolve, pb, versions, write,
        Result, TableError,
    };
}

/// Single Lance data files (`lancer-format`): readers and writers, inspection, the
/// guarded Arrow IPC reader.
pub mod file {
    pub use lancer_format::{
        container, inspect, ipc, json, pb, read, reader, schema, writer, FormatError,
    };
}

/// Process utilities (`lancer-util`): cached worker threads, panic containment at
/// library boundaries, core counts.
pub mod util {
    pub use lancer_util::{contain, cores, threads};
}

/// The storage boundary (`lancer-io`): stores, local and mapped files, request counts,
/// the shared state of a session's stores.
pub mod storage {
    pub use lancer_io::{context, storage, Context, LocalFile, MmapFile, Store};
}

/// Index formats (`lancer-index`): IVF segments, full-text segments and queries, scalar
/// kinds.
pub mod indexes {
    pub use lancer_index::{
        hnsw, hnsw_build, inverted, ivf, ivf_build, progress, scalar, IndexError,
    };
}
pub use lancer_format::container::FileVersion;
pub use lancer_index::inverted::tokenizer::AnalyzerParams;
/// The distance an index is built with (`l2`, `cosine`, `dot`): the subset of [`Metric`]
/// the IVF / HNSW kinds take ([`Metric::index_metric`]).
pub use lancer_index::ivf::Metric as IndexMetric;
pub use lancer_index::ivf_build::Quantizer;
pub use lancer_index::scalar::ScalarKind;
pub use lancer_table::blob_write::BlobWriteOptions;
pub use lancer_table::write::WriteParams;
pub use lancer_table::{Dataset, TableError};
pub use scan::{DatasetExt, ScanStream, Scanner, SortKey};
pub use search::Metric;
