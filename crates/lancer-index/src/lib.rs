//! `lancer-index`: the indexes of a Lance dataset (reference: "Indices", lines ~1300–3160
//! of the format guide) and the distance kernels they and exact search share.
//!
//! # Crate organization
//!
//! - [`distance`]: the one [`distance::Metric`] and the vectorized kernels (exact search
//!   in `lancer` uses them too);
//! - [`segment`]: what every index kind's segment shares (its manifest entry's header,
//!   bounded reads of an index file's global buffers, the corrupt-bytes error);
//! - [`vector`]: IVF (FLAT / PQ / SQ / RQ storage), HNSW graphs, RabitQ, k-means, PQ
//!   scoring — read, searched and built as pylance 11–14 write them;
//! - [`scalar`]: BTREE, BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER, NGRAM;
//! - [`inverted`]: full-text (INVERTED) indexes: tokenizers, postings, BM25 search,
//!   builds and merges;
//! - [`progress`]: the stages an index build reports; [`pb`]: the index protobufs.
//!
//! The layer sits between `lancer-table` (manifests, files) and `lancer` (the planner
//! that picks an index for a query); nothing here chooses between indexes.

pub mod distance;
pub mod error;
pub mod inverted;
pub mod pb;
pub mod progress;
pub mod scalar;
pub mod segment;
pub mod vector;

pub use error::{IndexError, Result};
