//! `lancer-format`: the Lance 2.x data file, bytes in and Arrow arrays out.
//!
//! This crate does no I/O. It parses the container (spec: "Lance File Format",
//! footer / column metadata / global buffers), maps the stored schema to Arrow, and
//! decodes pages of every 2.0, 2.1, 2.2 and 2.3 encoding (spec: "Lance Encoding Strategy");
//! legacy 0.1/0.2 files are read too ([`legacy`]).
//! Bytes are obtained through the [`read::RangeRead`] trait, which asks for byte
//! ranges; storage crates implement it.

pub mod blob_read;
pub mod block;
pub mod compression;
pub mod concat;
pub mod container;
pub mod error;
pub mod inspect;
pub mod ipc;
pub mod json;
pub mod legacy;
pub mod pb;
pub mod read;
pub mod reader;
pub mod schema;
pub mod structural;
pub mod v20;
pub mod v23;
pub mod writer;

pub use error::{FormatError, Result};
