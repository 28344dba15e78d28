//! Writing new objects: [`ObjectWrite`] (a local file, or an object-store upload sent
//! in 8 MiB multipart parts, four in flight) and [`DataWriter`], a Lance data file
//! written straight into a store (reference "File format": a data file is written once,
//! front to back, and never changed).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as OPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::context::{Context, Counters};
use crate::storage::{Result, Store, StoreError};

/// Bytes of an upload sent as one multipart part.
const PART: usize = 8 * 1024 * 1024;
/// Parts of one upload in flight at most.
const PARTS_IN_FLIGHT: usize = 4;

/// A new object being written (see [`Store::writer`]).
pub enum ObjectWrite {
    /// A local file, created on first write.
    Local {
        /// Its path.
        path: PathBuf,
        /// The file, once written to.
        file: Option<std::fs::File>,
    },
    /// An object-store upload.
    Remote(Upload),
}

impl ObjectWrite {
    /// The local path, when the object is a local file (written by the caller with
    /// positional writes).
    pub fn local_path(&self) -> Option<&Path> {
        match self {
            ObjectWrite::Local { path, .. } => Some(path),
            ObjectWrite::Remote(_) => None,
        }
    }

    /// Completes the object; returns its size.
    pub fn finish(self) -> Result<u64> {
        match self {
            ObjectWrite::Local { path, .. } => {
                std::fs::metadata(&path)
                    .map(|m| m.len())
                    .map_err(|e| StoreError::Io {
                        op: "writing",
                        path: path.display().to_string(),
                        source: e,
                    })
            }
            ObjectWrite::Remote(u) => u.finish(),
        }
    }
}

impl Write for ObjectWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            ObjectWrite::Local { path, file } => {
                if file.is_none() {
                    *file = Some(std::fs::File::create(&*path)?);
                }
                match file {
                    Some(f) => f.write_all(buf)?,
                    None => return Err(std::io::Error::other("file not open")),
                }
                Ok(buf.len())
            }
            ObjectWrite::Remote(u) => u.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A streaming upload: bytes gather into 8 MiB parts; the first full part starts a
/// multipart upload, later ones are sent while writing goes on (at most 4 in flight);
/// an object smaller than a part is one put.
pub struct Upload {
    store: Arc<dyn ObjectStore>,
    path: OPath,
    shown: String,
    buf: Vec<u8>,
    multipart: Option<Box<dyn object_store::MultipartUpload>>,
    inflight: Vec<tokio::task::JoinHandle<object_store::Result<()>>>,
    written: u64,
    ctx: Arc<Context>,
}

impl Upload {
    /// An upload of `path` in `store` (`shown` in messages), counted in `ctx`.
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        path: OPath,
        shown: String,
        ctx: &Arc<Context>,
    ) -> Upload {
        Upload {
            store,
            path,
            shown,
            buf: Vec::new(),
            multipart: None,
            inflight: Vec::new(),
            written: 0,
            ctx: ctx.clone(),
        }
    }

    fn err(&self, e: impl std::fmt::Display) -> std::io::Error {
        std::io::Error::other(format!("uploading {}: {e}", self.shown))
    }

    fn send_part(&mut self) -> std::io::Result<()> {
        if self.multipart.is_none() {
            let mp = self
                .ctx
                .runtime()?
                .block_on(self.store.put_multipart(&self.path))
                .map_err(|e| self.err(e))?;
            self.multipart = Some(mp);
        }
        let part = std::mem::take(&mut self.buf);
        Counters::add(&self.ctx.counters.puts, 1);
        Counters::add(&self.ctx.counters.bytes_written, part.len() as u64);
        let Some(mp) = self.multipart.as_mut() else {
            return Err(std::io::Error::other("no multipart upload"));
        };
        let fut = mp.put_part(PutPayload::from(part));
        self.inflight.push(self.ctx.runtime()?.spawn(fut));
        while self.inflight.len() >= PARTS_IN_FLIGHT {
            let h = self.inflight.remove(0);
            self.ctx
                .runtime()?
                .block_on(h)
                .map_err(|e| self.err(e))?
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<u64> {
        let size = self.written;
        let shown = self.shown.clone();
        let fail = |e: Box<dyn std::error::Error + Send + Sync>| StoreError::Remote {
            op: "uploading",
            path: shown.clone(),
            source: e,
        };
        if self.multipart.is_none() {
            let data = Bytes::from(std::mem::take(&mut self.buf));
            Counters::add(&self.ctx.counters.puts, 1);
            Counters::add(&self.ctx.counters.bytes_written, data.len() as u64);
            self.ctx
                .runtime()?
                .block_on(put_again_on_transport_errors(
                    self.store.as_ref(),
                    &self.path,
                    data,
                ))
                .map_err(|e| fail(e.into()))?;
            return Ok(size);
        }
        if !self.buf.is_empty() {
            self.send_part().map_err(|e| fail(e.into()))?;
        }
        for h in std::mem::take(&mut self.inflight) {
            self.ctx
                .runtime()?
                .block_on(h)
                .map_err(|e| fail(e.into()))?
                .map_err(|e| fail(e.into()))?;
        }
        let Some(mut mp) = self.multipart.take() else {
            return Err(fail("no multipart upload".into()));
        };
        Counters::add(&self.ctx.counters.puts, 1);
        self.ctx
            .runtime()?
            .block_on(mp.complete())
            .map_err(|e| fail(e.into()))?;
        Ok(size)
    }
}

/// Puts sent again after a transport error, at most (object_store retries a put only
/// when the request never left; a connection dropped mid-answer ends its retries).
const PUT_ATTEMPTS: u32 = 5;

/// One put of a new object, sent again when the connection failed ("error sending
/// request", a dropped answer): the object's name is new and its bytes fixed, so a put
/// repeated after one that did land writes the same object. Other errors (denied, not
/// found, a bad path) are answered at once.
async fn put_again_on_transport_errors(
    store: &dyn ObjectStore,
    path: &OPath,
    data: Bytes,
) -> object_store::Result<()> {
    let mut attempt = 1;
    loop {
        match store.put(path, PutPayload::from_bytes(data.clone())).await {
            Ok(_) => return Ok(()),
            Err(object_store::Error::Generic { .. }) if attempt < PUT_ATTEMPTS => {
                tokio::time::sleep(std::time::Duration::from_millis(50 << attempt)).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

impl Write for Upload {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(buf);
        self.written += buf.len() as u64;
        if self.buf.len() >= PART {
            self.send_part()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        // an upload never completed leaves no object; its parts are dropped
        if let Some(mut mp) = self.multipart.take() {
            if let Ok(rt) = self.ctx.runtime() {
                let _ = rt.block_on(mp.abort());
            }
        }
    }
}

/// A Lance data file being written into a store: positional writes to a local file,
/// or a streaming upload.
pub enum DataWriter {
    /// Into a local file.
    Local(lancer_format::writer::FileWriter<std::fs::File>),
    /// Into an object store.
    Remote(lancer_format::writer::FileWriter<ObjectWrite>),
}

impl DataWriter {
    /// Starts data file `rel` of `store`.
    pub fn create(
        store: &Store,
        rel: &str,
        schema: arrow_schema::SchemaRef,
        options: lancer_format::writer::WriteOptions,
    ) -> lancer_format::Result<DataWriter> {
        let out = store.writer(rel)?;
        Ok(match out.local_path() {
            Some(p) => DataWriter::Local(lancer_format::writer::FileWriter::create(
                p, schema, options,
            )?),
            None => DataWriter::Remote(lancer_format::writer::FileWriter::try_new(
                out, schema, options,
            )?),
        })
    }

    /// Writes (buffers) a batch.
    pub fn write_batch(&mut self, b: &arrow_array::RecordBatch) -> lancer_format::Result<()> {
        match self {
            DataWriter::Local(w) => w.write_batch(b),
            DataWriter::Remote(w) => w.write_batch(b),
        }
    }

    /// See [`lancer_format::writer::FileWriter::reference_written_bytes`].
    pub fn reference_written_bytes(&self) -> u64 {
        match self {
            DataWriter::Local(w) => w.reference_written_bytes(),
            DataWriter::Remote(w) => w.reference_written_bytes(),
        }
    }

    /// See [`lancer_format::writer::FileWriter::bytes_estimate`].
    pub fn bytes_estimate(&self) -> u64 {
        match self {
            DataWriter::Local(w) => w.bytes_estimate(),
            DataWriter::Remote(w) => w.bytes_estimate(),
        }
    }

    /// Adds a global buffer (see [`lancer_format::writer::FileWriter::add_global_buffer`]).
    pub fn add_global_buffer(&mut self, bytes: Vec<u8>) -> u32 {
        match self {
            DataWriter::Local(w) => w.add_global_buffer(bytes),
            DataWriter::Remote(w) => w.add_global_buffer(bytes),
        }
    }

    /// Finishes the file; returns its size.
    pub fn finish(self) -> lancer_format::Result<u64> {
        match self {
            DataWriter::Local(w) => {
                let f = w.finish()?;
                Ok(f.metadata()?.len())
            }
            DataWriter::Remote(w) => Ok(w.finish()?.finish()?),
        }
    }
}
