//! Integration tests of lancer (one test binary).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod batch_search;
mod blobs;
mod common;
mod compaction;
mod differential;
mod distributed_index;
mod evolve;
mod filters;
mod fts;
mod fts_hostile;
mod fts_shapes;
mod index_build;
mod indexes;
mod introspect;
mod json;
mod nested_evolve;
mod order;
mod scalar_indexes;
mod scan_options;
mod search;
mod session;
mod two_phase;
mod vector_shapes;
