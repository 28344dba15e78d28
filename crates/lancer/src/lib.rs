//! `lancer`: a Rust engine for the Lance lakehouse format — the front door.
//!
//! Lancer reads and writes the same bytes as the reference implementation (pylance
//! 11–14): Lance data files, the versioned table format (manifests, fragments, deletion
//! files, transactions) and the vector, scalar and full-text indexes. This crate is the
//! API the command line, the Python package and any Rust program use; the layers below it
//! are implementation.
//!
//! ```no_run
//! use lancer::prelude::*;
//! # fn demo(batch: arrow_array::RecordBatch, query: Vec<f32>) -> lancer::Result<()> {
//! let params = WriteParams::default();
//! let ds = Dataset::write("items.lance", batch.schema(), &[batch], &params)?;
//! let page = ds.scan().columns(&["id"]).filter("id > 10").limit(Some(5)).to_batch()?;
//! let req = Nearest { column: "embedding", query, k: 10, metric: Metric::L2 };
//! let opts = SearchOptions {
//!     filtering: Filtering::Pre("id % 2 = 0"),
//!     columns: Some(&["id"]),
//!     ..Default::default()
//! };
//! let hits = nearest(&ds, &req, &opts)?;
//! let spec = IndexSpec::parse("IVF_PQ", IndexParams { num_sub_vectors: Some(16), ..Default::default() })?;
//! let ds = lancer::create_index(&ds, "embedding", &spec, None)?;
//! # Ok(()) }
//! ```
//!
//! # Crate organization
//!
//! Everything a user needs is named at the crate root (and the most used in
//! [`prelude`]); the modules group the same items by subsystem, each behind a facade:
//!
//! | module | what it holds |
//! |---|---|
//! | [`Dataset`], [`Session`] | open, write, append, overwrite, delete, versions, tags, branches (the table layer's `Dataset`); what datasets opened together share |
//! | [`filter`] | SQL filters and computed columns in pylance's dialect (DataFusion expressions) |
//! | [`scan`] | the [`Scanner`]: projection, filter, limit, order, row ids, streamed batches |
//! | [`search`] | exact and indexed nearest neighbours, batched and multivector queries, full-text and hybrid search, their plans |
//! | [`index`] | building, optimizing, prewarming, reading, listing and dropping indexes; distributed index builds |
//! | [`write`] | schema evolution, update, merge_insert, compaction (local and distributed), two-phase writes |
//! | [`inspect`] | statistics, transactions, debug text, file checks |
//! | [`kmeans`] | stand-alone k-means over float32 vectors (pylance's `lance.util.KMeans`) |
//! | [`blobs`] | blob columns: descriptions, whole and ranged reads |
//! | [`file`] | single Lance data files: read, write, inspect their layout |
//! | [`versions`] | version listing, tags, branches, cleanup, manifest naming |
//!
//! The query planner for filters (which scalar indexes answer which conjuncts) is private.
//! The layers below (`lancer-format` → `lancer-io` → `lancer-table` → `lancer-index`,
//! see `docs/architecture.md`) are not part of this API; what the front ends of this
//! workspace still need from them sits in the gated [`internal`] module, whose uses
//! `scripts/test.sh` counts.

mod catalog;
mod error;
mod plan;
mod session;

pub mod blobs;
pub mod filter;
pub mod index;
pub mod inspect;
pub mod kmeans;
pub mod scan;
pub mod search;
pub mod write;

pub use error::{Error, Result};
pub use lancer_io::CacheStats;
pub use session::{
    Session, SessionBuilder, WarningSink, DEFAULT_INDEX_CACHE_ENTRIES,
    DEFAULT_METADATA_CACHE_ENTRIES,
};

// Datasets and writing them (the table layer's types, part of this API).
pub use lancer_io::{StorageOptions, Store, StoreStats};
pub use lancer_table::blob::BlobWriteOptions;
pub use lancer_table::commit::{AutoCleanup, MapUpdate, MetadataUpdate};
pub use lancer_table::dataset::concat_batches;
pub use lancer_table::evolution::ColumnChange;
pub use lancer_table::evolution::CompactionOptions;
pub use lancer_table::write::BaseSpec;
pub use lancer_table::write::{
    FragmentEvent, FragmentObserver, WriteParams, DEFAULT_MAX_BYTES_PER_FILE,
};
pub use lancer_table::{Dataset, TableError};

// Filters and scans.
pub use filter::{Expression, Filter};
pub use scan::{DatasetExt, ScanStream, Scanner, SortKey, DEFAULT_BATCH_SIZE, ROW_ADDRESS, ROW_ID};

// Searches.
/// A parsed full-text query (match, phrase, boolean, boost, multi-match) as pylance's
/// `full_text_query` takes it, as text or as pylance's query JSON.
pub use lancer_index::inverted::search::FtsQuery;
pub use search::{
    exact_nearest, full_text_search, hybrid_search, nearest, nearest_batch, AnnParams, ApproxMode,
    BatchNearest, Filtering, FtsOptions, HybridOptions, Metric, Nearest, RowMeta, SearchOptions,
};

// Indexes.
pub use index::{
    create_index, drop_index, list_indices, optimize_index, IndexInfo, IndexParams, IndexSpec,
};
pub use lancer_index::inverted::tokenizer::{AnalyzerParams, LanguageModels};
pub use lancer_index::scalar::ScalarKind;
pub use lancer_index::vector::ivf::Quantizer;
pub use lancer_index::IndexError;
pub use progress::{Progress, ProgressEvent};

// Writes beyond append.
pub use write::{Alteration, CommitParams, MergeOptions};

/// Progress of long operations (index builds, column evolution) as events a front end
/// shows: a stage starts, advances, ends.
pub mod progress {
    pub use lancer_index::progress::{Event, Progress, ProgressEvent, Stage};
}

/// Single Lance data files, outside any dataset: a reader, a writer and a report of a
/// file's layout (pages, encodings, byte ranges).
pub mod file {
    pub use lancer_format::container::FileVersion;
    pub use lancer_format::inspect;
    /// Arrow IPC files and streams from untrusted input, every length checked before use
    /// and decompression bounded ([`ipc::MAX_EXPANSION`]).
    pub use lancer_format::ipc;
    pub use lancer_format::read::{RangeRead, TracingRead};
    pub use lancer_format::reader::FileReader;
    pub use lancer_format::schema::{LanceField, LanceSchema};
    pub use lancer_format::writer::{FileWriter, WriteOptions};
    pub use lancer_format::FormatError;
    pub use lancer_io::storage::DataWriter;
    pub use lancer_io::{LocalFile, MmapFile};
}
pub use file::FileVersion;

/// A dataset's history: versions and their manifests' naming, tags, branches, cleanup
/// of old versions (spec: "Table format", versions and tags; "Branches").
pub mod versions {
    /// Manifest file naming (older `{version}.manifest` or newer, latest-first names).
    pub use lancer_table::commit::Naming;
    pub use lancer_table::versions::branch::{self, list_ordered, BranchInfo, Reference};
    pub use lancer_table::versions::{
        cleanup, cleanup_retaining, explain_cleanup, version_summaries, versions as version_infos,
        CleanupStats, Summary, VersionInfo,
    };
    pub use lancer_table::versions::{
        create_tag, delete_tag, latest_version, list_tag_records, list_tags, list_versions,
        manifest_path, migrate_manifest_paths_v2, replace_tag_metadata, rfc3339, tag_version,
        update_tag, TagRecord,
    };
}

/// The schema as reads return it: JSON columns (stored as JSONB) as text.
pub use lancer_format::json::text_schema as json_text_schema;
/// A batch as reads return it: JSON columns (stored as JSONB) as text.
pub use lancer_format::json::to_text as json_to_text;

/// The Lance protobuf messages as the format spec defines them (`protos/` of the
/// reference): `lance.table` — manifest, fragments, data and deletion files, index
/// metadata, transactions — and `lance.file` (`pb::file`: schema fields). They are the
/// on-disk format itself, so they are part of the API: a manifest's records, an index
/// segment's metadata and a transaction read back are these types.
pub mod pb {
    pub use lancer_format::pb::file;
    pub use lancer_table::pb::*;
}

/// The names most programs use, to glob-import: `use lancer::prelude::*;`.
pub mod prelude {
    pub use crate::{
        nearest, Dataset, DatasetExt, Error, Filtering, IndexParams, IndexSpec, Metric, Nearest,
        Result, Scanner, SearchOptions, Session, WriteParams,
    };
}

/// What this workspace's own front ends (the CLI, the Python module, the benchmarks)
/// still need from the layers below the API: protobuf records, guarded decoders, raw
/// file access. Not part of the API: no stability promise, hidden from the docs, and
/// behind the `internal` cargo feature. `scripts/test.sh` counts the front ends' uses
/// and fails when the count rises; each use is listed in `docs/architecture.md`.
#[cfg(feature = "internal")]
#[doc(hidden)]
pub mod internal {
    pub use lancer_util::{contain, cores};
}
