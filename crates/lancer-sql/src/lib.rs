//! `lancer-sql`: SQL over Lance datasets, on DataFusion.
//!
//! A dataset version is a DataFusion table ([`LanceTable`]): projections, filters Lancer
//! evaluates (pushed into its scanner, where scalar indexes answer them), limits and the
//! manifest's row count go down to the scan, which runs as one partition per group of
//! fragments. Beside them, table functions search inside SQL ([`functions`]):
//!
//! ```sql
//! SELECT id, _distance FROM vector_search('items.lance', 'embedding', [0.1, 0.2], k => 5);
//! SELECT t.id, v._distance, f._score
//!   FROM 'items.lance' t
//!   JOIN vector_search('items.lance', 'embedding', [0.1, 0.2], k => 50) v ON t.id = v.id
//!   JOIN fts('items.lance', 'text', 'apple pie', limit => 50) f ON t.id = f.id;
//! ```
//!
//! [`SqlContext`] is the entry point: a DataFusion session whose table names may be
//! dataset paths or URIs (`FROM 'data/items.lance'`) and Parquet / CSV / JSON files,
//! with named datasets registered at a version or tag, and data-changing statements
//! (`CREATE TABLE 'uri' AS SELECT`, `INSERT INTO`, `DELETE`, `UPDATE`) mapped to dataset
//! operations, each one commit.
//!
//! # Crate organization
//!
//! - `table`: the [`LanceTable`] provider and its scan operator (`LanceScanExec`);
//! - `pushdown`: DataFusion filter expressions as Lancer's SQL filters;
//! - [`functions`]: `lance(...)`, `vector_search(...)`, `fts(...)`;
//! - `hidden`: `_rowid` / `_rowaddr` as hidden columns (named: there; `*`: not);
//! - `merge`: `MERGE INTO` read as a merge_insert;
//! - `context`: [`SqlContext`]: name resolution, statements, DML;
//! - `error`: [`Error`].
//!
//! This crate uses `lancer`'s API only (the front door), never the layers below it.

mod context;
mod error;
pub mod functions;
mod hidden;
mod merge;
mod pushdown;
mod table;

pub use context::{SqlContext, TableSpec};
pub use error::{Error, Result};
pub use table::LanceTable;

/// DataFusion as this crate uses it (its version is the workspace's).
pub use datafusion;
