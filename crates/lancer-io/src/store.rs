//! Object stores behind the byte-range boundary: any `object_store::ObjectStore`
//! (local filesystem, memory; S3 / GCS / Azure when their features are enabled) as a
//! [`RangeRead`]. Each request of several ranges is one `get_ranges` call, which the
//! store coalesces and fetches concurrently.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use lancer_format::read::{check_range, RangeRead};
use lancer_format::{FormatError, Result};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

/// One object of an object store, read by byte ranges.
pub struct ObjectRead {
    store: Arc<dyn ObjectStore>,
    path: Path,
    size: u64,
    rt: Arc<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for ObjectRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectRead")
            .field("path", &self.path)
            .field("size", &self.size)
            .finish()
    }
}

fn store_error(what: &str, path: &Path, e: object_store::Error) -> FormatError {
    FormatError::Io(std::io::Error::other(format!("{what} {path}: {e}")))
}

/// A small runtime for blocking on store requests from synchronous decoders.
pub fn runtime() -> Result<Arc<tokio::runtime::Runtime>> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .map(Arc::new)
        .map_err(FormatError::Io)
}

impl ObjectRead {
    /// Opens `path` in `store` (one HEAD request for the size).
    pub fn open(
        store: Arc<dyn ObjectStore>,
        path: Path,
        rt: Arc<tokio::runtime::Runtime>,
    ) -> Result<Self> {
        let meta = rt
            .block_on(store.head(&path))
            .map_err(|e| store_error("cannot open", &path, e))?;
        Ok(Self {
            size: meta.size,
            store,
            path,
            rt,
        })
    }
}

impl RangeRead for ObjectRead {
    fn size(&self) -> Result<u64> {
        Ok(self.size)
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        for r in ranges {
            check_range(r, self.size)?;
        }
        let got = self
            .rt
            .block_on(self.store.get_ranges(&self.path, ranges))
            .map_err(|e| store_error("reading", &self.path, e))?;
        if got.len() != ranges.len() {
            return Err(FormatError::corrupt(
                "object store returned the wrong number of ranges",
            ));
        }
        Ok(got)
    }
}
