//! Vector indexes (format guide, "Vector Indices", lines ~2424–2860; the byte-level
//! facts checked against pylance 11–14 in `docs/vector-index-format.md`), one folder per
//! part, each depending only on those listed before it:
//!
//! - [`kmeans`]: the k-means training every IVF model and PQ codebook comes from, and
//!   the seeded generator builds share;
//! - `pq`: scoring product-quantized codes against a query's lookup tables;
//! - [`rabitq`]: RabitQ (IVF_RQ) codes, their rotation, encoding and distance estimate;
//! - [`hnsw`]: HNSW graphs (IVF_HNSW_*), read, searched and built;
//! - [`ivf`]: IVF segments — the model, partitions and storage read and searched
//!   (single and batched queries, graph partitions), built (training, partition writing
//!   within a memory budget, merging segments) and described.
//!
//! Distances and kernels are [`crate::distance`]'s; segment headers [`crate::segment`]'s.

pub mod hnsw;
pub mod ivf;
pub mod kmeans;
mod pq;
pub mod rabitq;
