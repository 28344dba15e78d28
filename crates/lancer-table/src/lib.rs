//! `lancer-table`: Lance tables — manifests, versions, fragments and deletion files
//! (spec: "Table format", "Transactions").
//!
//! A dataset is a directory: `_versions/` holds one immutable manifest per version
//! (named `N.manifest`, or `{u64::MAX - N:020}.manifest` in the V2 scheme), `data/` the
//! data files, `_deletions/` deletion files, `_transactions/` transaction files,
//! `_indices/` index files, `_refs/tags/` tags and `_refs/branches/` branches (each a
//! dataset of its own under `tree/{name}/`, see [`versions::branch`]).
//!
//! # Crate organization
//!
//! - [`dataset`]: opening a version and reading it — fragments, data files, deletion
//!   files, takes, blob reads, the file-metadata cache;
//! - [`versions`]: finding manifests in both naming schemes, tags, [`versions::branch`]es,
//!   cleanup of old versions;
//! - [`commit`]: writing a version atomically with optimistic concurrency (transaction
//!   files, conflict checks and rebases), the manifest model and its feature flags, row-id
//!   sequences, table config and metadata-only commits;
//! - [`write`]: create / overwrite / append / delete / restore, with the input's schema
//!   normalized and files placed over the dataset's base paths;
//! - [`evolution`]: schema evolution and updates, merge_insert, compaction;
//! - [`blob`]: blob columns' payload layout, read and written;
//! - [`par`]: the bounded parallel map every layer above uses; [`pb`]: the table protobufs.

pub mod blob;
pub mod commit;
pub mod dataset;
pub mod error;
pub mod evolution;
pub mod par;
pub mod pb;
pub mod versions;
pub mod write;

pub use dataset::Dataset;
pub use error::{Result, TableError};
