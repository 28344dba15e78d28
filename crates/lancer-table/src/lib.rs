//! `lancer-table`: Lance tables — manifests, versions, fragments and deletion files
//! (spec: "Table format", "Transactions").
//!
//! A dataset is a directory: `_versions/` holds one immutable manifest per version
//! (named `N.manifest`, or `{u64::MAX - N:020}.manifest` in the V2 scheme), `data/` the
//! data files, `_deletions/` deletion files, `_transactions/` transaction files,
//! `_indices/` index files, `_refs/tags/` tags and `_refs/branches/` branches (each a
//! dataset of its own under `tree/{name}/`, see [`branch`]).

mod assemble;
pub mod bases;
mod blob;
pub mod blob_write;
pub mod branch;
pub mod cache;
pub mod cleanup;
pub mod commit;
pub mod compact;
pub mod concat;
pub mod config;
pub mod dataset;
pub mod deletion;
pub mod error;
pub mod evolve;
pub mod input;
pub mod manifest;
pub mod merge;
pub mod par;
pub mod pb;
pub mod rowids;
pub mod versions;
pub mod write;

pub use dataset::Dataset;
pub use error::{Result, TableError};
