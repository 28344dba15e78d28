//! Looking at a dataset without changing it: statistics of its data and indexes in
//! pylance's shapes, its committed transactions read back, debug text of its manifests
//! and fragments (`lance.debug`), and checks of its files against its manifests
//! (`lancer verify`, Python's `validate`).
//!
//! Spec: "Table format" (manifests, fragments, deletion files) and "Transactions"
//! (lines ~3686–6486 of `lance-reference.txt`).

pub(crate) mod debug;
mod migration;
mod segments;
pub(crate) mod stats;
pub(crate) mod transactions;
pub(crate) mod verify;

pub use debug::{format_fragment, format_manifest, format_schema, list_transactions};
/// Where a fragment's deletion file lives, relative to the dataset root.
pub use lancer_table::dataset::deletion_path;
/// The highest field id a manifest has ever used (a dropped column's id still counts).
pub use lancer_table::evolution::max_field_id;
pub use migration::manifest_needs_migration;
pub use segments::{inverted_index_segments, is_inverted_index, vector_index_segments};
pub use stats::{
    data_stats, dataset_stats, describe_indices, index_statistics, list_segments, DatasetStats,
    FieldStatistics, IndexDescription, SegmentDescription, SegmentInfo,
};
pub use transactions::{read_transaction, recent_transactions};
pub use verify::{
    all_files, dataset_problems, drop_dataset, fragment_problems, tracked_files, version_problems,
    Checked, FileKind, StoredFile, TrackedFile,
};
