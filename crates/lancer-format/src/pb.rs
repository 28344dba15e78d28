//! Protobuf types generated from `protos/` (Lancer's own `.proto` files, wire
//! compatible with Lance).
#![allow(clippy::all, missing_docs)]

/// `lance.file`: schema and file descriptor.
pub mod file {
    include!(concat!(env!("OUT_DIR"), "/lance.file.rs"));
    /// `lance.file.v2`: column metadata of the 2.x container.
    pub mod v2 {
        include!(concat!(env!("OUT_DIR"), "/lance.file.v2.rs"));
    }
}

/// `lance.encodings`: the 2.0 encoding tree.
pub mod enc20 {
    include!(concat!(env!("OUT_DIR"), "/lance.encodings.rs"));
}

/// `lance.encodings21`: 2.1+ structural layouts and compression.
pub mod enc21 {
    include!(concat!(env!("OUT_DIR"), "/lance.encodings21.rs"));
}

/// `lance.encodings23`: the 2.3 planar page grammar (recovered; see the .proto).
pub mod enc23 {
    include!(concat!(env!("OUT_DIR"), "/lance.encodings23.rs"));
}

/// Path alias so generated 2.3 code finds its shared 2.1 messages.
#[doc(hidden)]
pub mod encodings21 {
    pub use super::enc21::*;
}
