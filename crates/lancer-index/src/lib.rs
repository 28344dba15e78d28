//! `lancer-index`: the indexes of a Lance dataset (reference: "Indices", lines ~1300–3160
//! of the format guide) and the distance kernels they and exact search share.
//!
//! One module per kind: [`ivf`] (IVF with FLAT / PQ / SQ storage, read and searched as
//! pylance 11–14 write them); HNSW, scalar and inverted indexes grow beside it. The
//! layer sits between `lancer-table` (manifests, files) and `lancer` (the planner that
//! picks an index for a query).

pub mod error;
pub mod hnsw;
pub mod hnsw_build;
pub mod inverted;
pub mod ivf;
pub mod ivf_build;
mod ivf_graph;
mod ivf_info;
pub mod ivf_merge;
pub mod ivf_partition;
pub mod kernels;
pub mod kernels_free;
pub mod kmeans;
pub mod pb;
pub mod pq_scan;
pub mod progress;
pub mod rabitq;
pub mod rabitq_build;
pub mod scalar;

pub use error::{IndexError, Result};
