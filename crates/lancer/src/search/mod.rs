//! Searches over a dataset: exact and indexed nearest neighbours, batched and multivector
//! queries, full-text (BM25) queries, hybrid fusion of both, and their plans as text.
//!
//! Spec: "Vector Indices" and "Full Text Search" in the format guide (indexes, lines
//! ~1300–3160 of `lance-reference.txt`); query semantics as pylance 14 answers them are in
//! `docs/vector-index-format.md` and `docs/fts-index-format.md`.
//!
//! - `exact`: every kept row scored ([`nearest`], [`Nearest`], [`Filtering`], [`Metric`]);
//! - `ann`: the same request answered through a vector index ([`AnnParams`]), with the
//!   reference's prefilter / postfilter and refine rules;
//! - `batch`: several queries in one call ([`nearest_batch`]);
//! - `multivector`: late-interaction columns (`list<fixed_size_list>`);
//! - `fts`: full-text queries over INVERTED indexes ([`full_text_search`]);
//! - `hybrid`: both fused by reciprocal rank ([`hybrid_search`]);
//! - `explain`: the plans (`explain_plan`) of nearest and full-text queries;
//! - `address_set`: the row-address bitmaps prefilters are answered with.

pub(crate) mod address_set;
pub(crate) mod ann;
pub(crate) mod batch;
pub(crate) mod exact;
pub(crate) mod explain;
pub(crate) mod fts;
pub(crate) mod hybrid;
pub(crate) mod multivector;

pub use address_set::AddressSet;
pub use ann::{column_index_metric, nearest_addresses, AnnParams, ApproxMode, DEFAULT_MIN_NPROBES};
pub use batch::{
    nearest_batch, nearest_batch_addresses, query_index_field, BatchNearest, QUERY_INDEX,
};
pub use exact::{
    dot, exact_nearest, hamming, l2, nearest, FilterResult, Filtering, Metric, Nearest, RowMeta,
    SearchOptions,
};
pub use explain::{explain_full_text, explain_nearest};
pub use fts::{full_text_addresses, full_text_search, inverted_indexes, FtsOptions};
pub use hybrid::{fuse, hybrid_addresses, hybrid_search, Fused, HybridOptions, RRF_K};
/// A full-text query in pylance's query JSON (`MatchQuery`, `PhraseQuery`, `BooleanQuery`, ...).
pub use lancer_index::inverted::query_json::parse as fts_query_from_json;
pub use multivector::{column_dim, dimension, is_multivector, OVERFETCH};
