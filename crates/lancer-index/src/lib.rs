//! `lancer-index`: the indexes of a Lance dataset (reference: "Indices", lines ~1300–3160
//! of the format guide) and the distance kernels they and exact search share.
//!
//! One module per kind grows here (IVF with its quantizers, HNSW, scalar, inverted);
//! the layer sits between `lancer-table` (manifests, files) and `lancer` (the planner
//! that picks an index for a query).

pub mod error;
pub mod kernels;

pub use error::{IndexError, Result};
