//! Protobuf types of `protos/index.proto` (`lance.index`).
#![allow(clippy::all, missing_docs)]
include!(concat!(env!("OUT_DIR"), "/lance.index.rs"));
