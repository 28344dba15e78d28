//! Protobuf types of `protos/table.proto` (`lance.table`).
#![allow(clippy::all, missing_docs)]
include!(concat!(env!("OUT_DIR"), "/lance.table.rs"));
