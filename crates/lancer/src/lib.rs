//! `lancer`: the public API over Lance datasets — reading and writing (re-exported from
//! `lancer-table`) and exact nearest-neighbour search ([`search`]).

pub mod search;

pub use lancer_table::write::WriteParams;
pub use lancer_table::{Dataset, TableError};
