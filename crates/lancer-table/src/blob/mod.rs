//! Blob columns (spec: "Blob columns", lines ~6700–7160): where a blob's payload lives
//! (inline in the data file, in a packed or dedicated sidecar file, or outside the
//! dataset) and how a read finds it (`read`), and how a write lays payloads out by size
//! and writes the sidecars (`write`).

mod read;
mod write;

pub(crate) use read::{
    described_nested, external, has_nested_blob_v2, locate, locate_legacy, map_nested_blobs, open,
    resolve_v2, sidecar_name, BlobSources, Source,
};
pub(crate) use write::{is_logical_blob_type, BlobPlan, Sidecars};
pub use write::{
    manifest_schema, BlobWriteOptions, DEDICATED_THRESHOLD_KEY, DEFAULT_DEDICATED_THRESHOLD,
    DEFAULT_INLINE_THRESHOLD, DEFAULT_PACK_FILE_THRESHOLD, INLINE_THRESHOLD_KEY,
    PACK_THRESHOLD_KEY,
};
