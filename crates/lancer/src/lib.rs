//! `lancer`: the public API over Lance datasets — reading and writing (re-exported from
//! `lancer-table`), SQL filters ([`filter`]), scans ([`scan`]), nearest-neighbour
//! search ([`search`], [`ann`]), full-text search ([`fts`]) and both fused
//! ([`hybrid`]).

pub mod ann;
mod error;
pub mod evolve;
pub mod filter;
pub mod fts;
pub mod fts_index;
pub mod hybrid;
pub mod index;
pub mod index_spec;
pub mod scalar_index;
mod scalar_plan;
pub mod scan;
pub mod search;

pub use error::{Error, Result};
pub use filter::{Expression, Filter};
pub use lancer_io::{StorageOptions, Store, StoreStats};
pub use lancer_table::concat;

// Option types the front ends name, defined once below this crate and named here.
pub use index_spec::{create_index, IndexParams, IndexSpec};
pub use lancer_format::container::FileVersion;
pub use lancer_index::inverted::tokenizer::AnalyzerParams;
pub use lancer_index::ivf::Metric;
pub use lancer_index::ivf_build::Quantizer;
pub use lancer_index::scalar::ScalarKind;
pub use lancer_table::write::WriteParams;
pub use lancer_table::{Dataset, TableError};
pub use scan::{DatasetExt, ScanStream, Scanner};
