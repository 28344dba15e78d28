//! Full-text search: pylance's INVERTED index (docs/fts-index-format.md; reference
//! lines ~1606–1895): the analyzer (`tokenizer`), the files of a segment (token map,
//! documents, posting lists), BM25 scoring and queries.

pub mod build;
pub mod daat;
pub mod merge;
pub mod posting;
pub mod query_json;
pub mod search;
pub mod segment;
pub mod tokenizer;
