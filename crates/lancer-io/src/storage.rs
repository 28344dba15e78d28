//! The one storage boundary of a dataset: [`Store`], a dataset's root on the local file
//! system or in an object store (`s3://`, `gs://`, `az://` / `abfss://`, `memory://`),
//! with the few operations the table layer needs — whole-object get, put,
//! put-if-absent (the commit primitive, reference "Transactions": a manifest is written
//! only if its name is free), list, delete, ranged reads and streaming writes of data
//! files — and counters of the requests and bytes they cost.
//!
//! Local paths are one implementation (positional reads through memory maps, hard-link
//! put-if-absent, temporary file + rename puts), `object_store` the other; the table
//! layer sees neither. Object-store requests retry transient failures (5xx, timeouts,
//! throttling) with backoff (`object_store`'s retry policy); a conditional put whose
//! outcome is unknown is settled by reading the object back. Ranged reads of objects
//! are in `remote.rs`, writes of new objects in `upload.rs`; what stores share (runtime,
//! counters, caches) in `context.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use lancer_format::read::RangeRead;
use lancer_format::FormatError;

pub use crate::context::StoreStats;
use crate::context::{Context, Counters};
use crate::remote::{idempotent, RemoteFile};
use object_store::path::Path as OPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

/// Storage options by name (the reference's names: `region`, `endpoint`,
/// `access_key_id`, `secret_access_key`, `allow_http`, `virtual_hosted_style_request`,
/// `aws_*`, `azure_*`, `google_*`, …). Environment variables (`AWS_*`, `AZURE_*`,
/// `GOOGLE_*`) apply first; options override them.
pub type StorageOptions = BTreeMap<String, String>;

/// What a storage operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The object or directory is not there.
    #[error("{what} not found")]
    NotFound {
        /// What was looked for (its full location).
        what: String,
    },
    /// A local file system error.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An object store request failed (after its retries).
    #[error("{op} {path}: {source}")]
    Remote {
        /// The operation.
        op: &'static str,
        /// The object's full location.
        path: String,
        /// The store's error (`object_store`'s, or the upload task's).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The location or its options cannot be used.
    #[error("{0}")]
    Config(String),
}

/// Result of storage operations.
pub type Result<T> = std::result::Result<T, StoreError>;

impl From<StoreError> for std::io::Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Io { source, .. } => source,
            other => std::io::Error::other(other),
        }
    }
}

impl From<StoreError> for FormatError {
    fn from(e: StoreError) -> Self {
        FormatError::Io(std::io::Error::other(e))
    }
}

#[derive(Debug)]
enum Backend {
    Local(PathBuf),
    Object {
        store: Arc<dyn ObjectStore>,
        prefix: OPath,
    },
}

/// An object (or file) under a store's root, listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path under the listed directory (`/`-separated).
    pub name: String,
    /// Its size.
    pub size: u64,
    /// Last modified, milliseconds since the Unix epoch.
    pub modified_ms: i64,
}

/// A dataset's root: where its manifests, data, deletion and index files live.
#[derive(Debug, Clone)]
pub struct Store {
    backend: Arc<Backend>,
    uri: Arc<str>,
    ctx: Arc<Context>,
}

fn unique_suffix() -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{t:x}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// `options` as the configuration keys of one store kind (`scheme` names it in the
/// error for a key it does not know).
fn config_keys<'a, K: std::str::FromStr>(
    options: &'a StorageOptions,
    scheme: &str,
) -> Result<Vec<(K, &'a String)>>
where
    K::Err: std::fmt::Display,
{
    options
        .iter()
        .map(|(k, v)| {
            k.to_ascii_lowercase().parse::<K>().map(|key| (key, v)).map_err(|e| {
                StoreError::Config(format!(
                    "storage option {k:?} is not one {scheme} understands ({e}); use the reference's names, e.g. region, endpoint, access_key_id, secret_access_key, allow_http"
                ))
            })
        })
        .collect()
}

impl Store {
    /// The store at `location`: a local path, a `file://` URI, or an object-store URI
    /// (`s3://bucket/path`, `gs://bucket/path`, `az://container/path`,
    /// `abfss://container@account.dfs.core.windows.net/path`, `memory://name/path`),
    /// with `options` over the environment's settings.
    /// Opened in a context of its own (see [`Store::open_in`]).
    pub fn open(location: &str, options: &StorageOptions) -> Result<Store> {
        Self::open_in(location, options, &Context::fresh())
    }

    /// The store at `location` (as [`Store::open`]) in `ctx`: its requests run on the
    /// context's runtime and count in its counters, and `memory://NAME` is the
    /// context's store of that name.
    pub fn open_in(location: &str, options: &StorageOptions, ctx: &Arc<Context>) -> Result<Store> {
        let Some((scheme, _)) = location.split_once("://") else {
            return Ok(Self::local_in(location, ctx));
        };
        let url = url::Url::parse(location)
            .map_err(|e| StoreError::Config(format!("{location:?} is not a URI: {e}")))?;
        let host = url.host_str().unwrap_or_default().to_string();
        let prefix = OPath::from_url_path(url.path())
            .map_err(|e| StoreError::Config(format!("{location:?}: {e}")))?;
        // the reference's retry options (pylance: client_max_retries, default 10, and
        // client_retry_timeout in seconds, default 180); the rest go to the store
        let mut retry = object_store::RetryConfig::default();
        let mut options = options.clone();
        if let Some(v) = options.remove("client_max_retries") {
            retry.max_retries = v.trim().parse().map_err(|_| {
                StoreError::Config(format!("client_max_retries={v:?}: expected a count"))
            })?;
        }
        if let Some(v) = options.remove("client_retry_timeout") {
            let secs: u64 = v.trim().parse().map_err(|_| {
                StoreError::Config(format!("client_retry_timeout={v:?}: expected seconds"))
            })?;
            retry.retry_timeout = std::time::Duration::from_secs(secs);
        }
        let options = &options;
        let store: Arc<dyn ObjectStore> = match scheme {
            "file" => {
                let p = url.to_file_path().map_err(|_| {
                    StoreError::Config(format!("{location:?} is not a local file URI"))
                })?;
                return Ok(Self::local_in(p, ctx));
            }
            "memory" => ctx.memory_store(&host),
            "s3" | "s3a" => {
                use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
                let mut b = AmazonS3Builder::from_env()
                    .with_bucket_name(&host)
                    .with_retry(retry.clone());
                for (key, v) in config_keys::<AmazonS3ConfigKey>(options, "S3")? {
                    b = b.with_config(key, v);
                }
                Arc::new(b.build().map_err(|e| StoreError::Config(format!("{location}: {e}")))?)
            }
            "gs" => {
                use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
                let mut b = GoogleCloudStorageBuilder::from_env()
                    .with_bucket_name(&host)
                    .with_retry(retry.clone());
                for (key, v) in config_keys::<GoogleConfigKey>(options, "GCS")? {
                    b = b.with_config(key, v);
                }
                Arc::new(b.build().map_err(|e| StoreError::Config(format!("{location}: {e}")))?)
            }
            "az" | "azure" | "abfs" | "abfss" | "adl" => {
                use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
                let mut b = MicrosoftAzureBuilder::from_env()
                    .with_url(location)
                    .with_retry(retry.clone());
                for (key, v) in config_keys::<AzureConfigKey>(options, "Azure")? {
                    b = b.with_config(key, v);
                }
                Arc::new(b.build().map_err(|e| StoreError::Config(format!("{location}: {e}")))?)
            }
            other => {
                return Err(StoreError::Config(format!(
                    "{location:?}: no store for scheme {other:?} (use a path, file://, s3://, gs://, az://, abfss:// or memory://)"
                )))
            }
        };
        Ok(Store {
            backend: Arc::new(Backend::Object { store, prefix }),
            uri: location.trim_end_matches('/').into(),
            ctx: ctx.clone(),
        })
    }

    /// The local directory `root`, in a context of its own.
    pub fn local(root: impl AsRef<Path>) -> Store {
        Self::local_in(root, &Context::fresh())
    }

    /// The local directory `root` in `ctx`.
    pub fn local_in(root: impl AsRef<Path>, ctx: &Arc<Context>) -> Store {
        let root = root.as_ref().to_path_buf();
        Store {
            uri: root.to_string_lossy().into(),
            backend: Arc::new(Backend::Local(root)),
            ctx: ctx.clone(),
        }
    }

    /// The context the store was opened in.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The location as given (a path or a URI).
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The local directory, when the store is one.
    pub fn local_root(&self) -> Option<&Path> {
        match &*self.backend {
            Backend::Local(p) => Some(p),
            Backend::Object { .. } => None,
        }
    }

    /// The store rooted at `rel` below this one (a branch's tree), sharing the
    /// counters.
    pub fn child(&self, rel: &str) -> Store {
        let rel = rel.trim_matches('/');
        let backend = match &*self.backend {
            Backend::Local(p) => Backend::Local(p.join(rel)),
            Backend::Object { store, prefix } => Backend::Object {
                store: store.clone(),
                prefix: join(prefix, rel),
            },
        };
        Store {
            backend: Arc::new(backend),
            uri: format!("{}/{rel}", self.uri).into(),
            ctx: self.ctx.clone(),
        }
    }

    /// The store `rel` is below: the inverse of [`Store::child`] (a branch's dataset
    /// root from its tree), with the same settings and counters; None when this store's
    /// location does not end with `rel`.
    pub fn parent_of(&self, rel: &str) -> Option<Store> {
        let rel = rel.trim_matches('/');
        let uri = self.uri.trim_end_matches('/').strip_suffix(rel)?;
        let uri = uri.strip_suffix('/')?;
        let backend = match &*self.backend {
            Backend::Local(p) => {
                let mut up = p.clone();
                for part in rel.split('/').rev() {
                    if up.file_name()? != std::ffi::OsStr::new(part) {
                        return None;
                    }
                    up.pop();
                }
                Backend::Local(up)
            }
            Backend::Object { store, prefix } => {
                let parts: Vec<_> = prefix.parts().collect();
                let rel_path = join(&OPath::default(), rel);
                let tail: Vec<_> = rel_path.parts().collect();
                let keep = parts.len().checked_sub(tail.len())?;
                if parts[keep..] != tail[..] {
                    return None;
                }
                Backend::Object {
                    store: store.clone(),
                    prefix: OPath::from_iter(parts[..keep].iter().cloned()),
                }
            }
        };
        Some(Store {
            backend: Arc::new(backend),
            uri: uri.into(),
            ctx: self.ctx.clone(),
        })
    }

    /// Requests and bytes so far (of every store of its context).
    pub fn stats(&self) -> StoreStats {
        self.ctx.counters.snapshot()
    }

    /// `rel`'s full location, for messages.
    pub fn display(&self, rel: &str) -> String {
        format!("{}/{}", self.uri, rel.trim_start_matches('/'))
    }

    fn local_path(root: &Path, rel: &str) -> PathBuf {
        root.join(rel.trim_start_matches('/'))
    }

    fn remote(&self, op: &'static str, rel: &str, e: object_store::Error) -> StoreError {
        match e {
            object_store::Error::NotFound { .. } => StoreError::NotFound {
                what: self.display(rel),
            },
            e => StoreError::Remote {
                op,
                path: self.display(rel),
                source: Box::new(e),
            },
        }
    }

    fn local_err(&self, op: &'static str, p: &Path, e: std::io::Error) -> StoreError {
        if e.kind() == std::io::ErrorKind::NotFound {
            StoreError::NotFound {
                what: p.display().to_string(),
            }
        } else {
            StoreError::Io {
                op,
                path: p.display().to_string(),
                source: e,
            }
        }
    }

    /// The whole object `rel`.
    pub fn get(&self, rel: &str) -> Result<Bytes> {
        Counters::add(&self.ctx.counters.gets, 1);
        let b = match &*self.backend {
            Backend::Local(root) => {
                let p = Self::local_path(root, rel);
                Bytes::from(std::fs::read(&p).map_err(|e| self.local_err("reading", &p, e))?)
            }
            Backend::Object { store, prefix } => {
                let path = join(prefix, rel);
                let rt = self.ctx.runtime()?;
                idempotent(|| rt.block_on(async { store.get(&path).await?.bytes().await }))
                    .map_err(|e| self.remote("reading", rel, e))?
            }
        };
        Counters::add(&self.ctx.counters.bytes_read, b.len() as u64);
        Ok(b)
    }

    /// The object `rel`, or `None` when it is not there.
    pub fn get_opt(&self, rel: &str) -> Result<Option<Bytes>> {
        match self.get(rel) {
            Ok(b) => Ok(Some(b)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The size of `rel`, or `None` when it is not there.
    pub fn size(&self, rel: &str) -> Result<Option<u64>> {
        Counters::add(&self.ctx.counters.heads, 1);
        match &*self.backend {
            Backend::Local(root) => {
                let p = Self::local_path(root, rel);
                match std::fs::metadata(&p) {
                    Ok(m) => Ok(Some(m.len())),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(self.local_err("reading the size of", &p, e)),
                }
            }
            Backend::Object { store, prefix } => {
                let path = join(prefix, rel);
                let rt = self.ctx.runtime()?;
                match idempotent(|| rt.block_on(store.head(&path))) {
                    Ok(m) => Ok(Some(m.size)),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(self.remote("reading the size of", rel, e)),
                }
            }
        }
    }

    /// Writes `data` to `rel` (replacing what is there); readers see all of it or the
    /// old object, never a part.
    pub fn put(&self, rel: &str, data: Bytes) -> Result<()> {
        Counters::add(&self.ctx.counters.puts, 1);
        Counters::add(&self.ctx.counters.bytes_written, data.len() as u64);
        match &*self.backend {
            Backend::Local(root) => {
                let p = Self::local_path(root, rel);
                let tmp = self.local_tmp(&p)?;
                std::fs::write(&tmp, &data).map_err(|e| self.local_err("writing", &tmp, e))?;
                std::fs::rename(&tmp, &p).map_err(|e| {
                    let _ = std::fs::remove_file(&tmp);
                    self.local_err("writing", &p, e)
                })
            }
            Backend::Object { store, prefix } => {
                let path = join(prefix, rel);
                // A whole-object put is idempotent: one the store's own retries gave up
                // on (a dropped connection mid-request) is sent again, a few times.
                let mut attempt = 0u32;
                loop {
                    let put = self
                        .ctx
                        .runtime()?
                        .block_on(store.put(&path, PutPayload::from_bytes(data.clone())));
                    match put {
                        Ok(_) => return Ok(()),
                        Err(object_store::Error::Generic { .. })
                            if attempt < CONDITIONAL_RETRIES =>
                        {
                            attempt += 1;
                            std::thread::sleep(std::time::Duration::from_millis(
                                50 << attempt.min(6),
                            ));
                        }
                        Err(e) => return Err(self.remote("writing", rel, e)),
                    }
                }
            }
        }
    }

    /// A temporary file beside `p` (its directory created).
    fn local_tmp(&self, p: &Path) -> Result<PathBuf> {
        let dir = p.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| self.local_err("creating", dir, e))?;
        Ok(dir.join(format!(".tmp-{}", unique_suffix())))
    }

    /// Writes `data` to `rel` only if nothing is there: `true` when written, `false`
    /// when another writer's object holds the name. On stores without conditional
    /// writes this is an error (never a silent overwrite). A request whose outcome is
    /// unknown (the store said the name is taken after a retry, or the request failed)
    /// is settled by reading the object back: our bytes there mean it was written.
    pub fn put_if_absent(&self, rel: &str, data: Bytes) -> Result<bool> {
        Counters::add(&self.ctx.counters.puts, 1);
        Counters::add(&self.ctx.counters.bytes_written, data.len() as u64);
        match &*self.backend {
            Backend::Local(root) => {
                let p = Self::local_path(root, rel);
                let tmp = self.local_tmp(&p)?;
                std::fs::write(&tmp, &data).map_err(|e| self.local_err("writing", &tmp, e))?;
                let linked = std::fs::hard_link(&tmp, &p);
                let _ = std::fs::remove_file(&tmp);
                match linked {
                    Ok(()) => Ok(true),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                    Err(e) => Err(self.local_err("writing", &p, e)),
                }
            }
            Backend::Object { store, prefix } => {
                let path = join(prefix, rel);
                let mut attempt = 0u32;
                loop {
                    let opts = PutOptions {
                        mode: PutMode::Create,
                        ..Default::default()
                    };
                    let put = self.ctx.runtime()?.block_on(store.put_opts(
                        &path,
                        PutPayload::from_bytes(data.clone()),
                        opts,
                    ));
                    match put {
                        Ok(_) => return Ok(true),
                        Err(object_store::Error::NotImplemented { .. }) => return Err(StoreError::Config(format!(
                            "{}: this store does not offer conditional writes (put-if-absent), so concurrent commits could overwrite each other; Lancer refuses to commit there. For S3-compatible stores that support If-None-Match, drop the option conditional_put=disabled",
                            self.display(rel)
                        ))),
                        Err(object_store::Error::AlreadyExists { .. }) => {
                            // taken: by another writer, or by our own earlier attempt
                            return Ok(self.get_opt(rel)?.is_some_and(|b| b == data));
                        }
                        Err(e) => {
                            // the outcome is unknown: our bytes there mean it landed;
                            // nothing there means it did not (yet): put again (a
                            // late arrival of the first then makes this one fail
                            // with AlreadyExists, and the read-back says ours)
                            match self.get_opt(rel) {
                                Ok(Some(b)) => return Ok(b == data),
                                Ok(None) if attempt < CONDITIONAL_RETRIES => {}
                                _ => return Err(self.remote("writing", rel, e)),
                            }
                            attempt += 1;
                            std::thread::sleep(std::time::Duration::from_millis(50 << attempt.min(6)));
                        }
                    }
                }
            }
        }
    }

    /// Every object under directory `dir` (recursively), names relative to it; an
    /// absent directory lists as empty. Temporary files of local writes are skipped.
    pub fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        Counters::add(&self.ctx.counters.lists, 1);
        let dir = dir.trim_matches('/');
        match &*self.backend {
            Backend::Local(root) => {
                let base = Self::local_path(root, dir);
                let mut out = Vec::new();
                let mut stack = vec![(base.clone(), String::new())];
                while let Some((p, rel)) = stack.pop() {
                    let rd = match std::fs::read_dir(&p) {
                        Ok(rd) => rd,
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(self.local_err("listing", &p, e)),
                    };
                    for e in rd {
                        let e = e.map_err(|e| self.local_err("listing", &p, e))?;
                        let name = e.file_name().to_string_lossy().into_owned();
                        let full = if rel.is_empty() {
                            name.clone()
                        } else {
                            format!("{rel}/{name}")
                        };
                        let Ok(meta) = e.metadata() else { continue };
                        if meta.is_dir() {
                            stack.push((e.path(), full));
                        } else if !name.starts_with(".tmp-") {
                            let modified_ms = meta
                                .modified()
                                .ok()
                                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                                .map_or(0, |d| d.as_millis() as i64);
                            out.push(Entry {
                                name: full,
                                size: meta.len(),
                                modified_ms,
                            });
                        }
                    }
                }
                out.sort_by(|a, b| a.name.cmp(&b.name));
                Ok(out)
            }
            Backend::Object { store, prefix } => {
                let base = join(prefix, dir);
                let skip = base.as_ref().len() + usize::from(!base.as_ref().is_empty());
                let rt = self.ctx.runtime()?;
                let metas: Vec<_> = idempotent(|| {
                    rt.block_on(async {
                        store
                            .list(Some(&base))
                            .collect::<Vec<_>>()
                            .await
                            .into_iter()
                            .collect::<std::result::Result<Vec<_>, _>>()
                    })
                })
                .map_err(|e| self.remote("listing", dir, e))?;
                let mut out: Vec<Entry> = metas
                    .into_iter()
                    .map(|m| Entry {
                        name: m
                            .location
                            .as_ref()
                            .get(skip..)
                            .unwrap_or_default()
                            .to_string(),
                        size: m.size,
                        modified_ms: m.last_modified.timestamp_millis(),
                    })
                    .collect();
                out.sort_by(|a, b| a.name.cmp(&b.name));
                Ok(out)
            }
        }
    }

    /// Removes the directory `rel` when it is empty (local stores; object stores have no
    /// directories). A missing or non-empty directory is left as it is.
    pub fn remove_empty_dir(&self, rel: &str) {
        if let Backend::Local(root) = &*self.backend {
            let _ = std::fs::remove_dir(Self::local_path(root, rel));
        }
    }

    /// Deletes `rel`; an absent object is not an error.
    pub fn delete(&self, rel: &str) -> Result<()> {
        Counters::add(&self.ctx.counters.deletes, 1);
        match &*self.backend {
            Backend::Local(root) => {
                let p = Self::local_path(root, rel);
                match std::fs::remove_file(&p) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(self.local_err("deleting", &p, e)),
                }
            }
            Backend::Object { store, prefix } => {
                let path = join(prefix, rel);
                match self.ctx.runtime()?.block_on(store.delete(&path)) {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(e) => Err(self.remote("deleting", rel, e)),
                }
            }
        }
    }

    /// Ranged reads of `rel` (known to be `size` bytes when given, saving a request):
    /// local files are mapped; object-store reads merge ranges less than 256 KiB apart
    /// and fetch the merged ones concurrently.
    pub fn reader(&self, rel: &str, size: Option<u64>) -> Result<Arc<dyn RangeRead>> {
        match &*self.backend {
            Backend::Local(root) => {
                let p = Self::local_path(root, rel);
                let m = crate::MmapFile::open(&p).map_err(|e| match e {
                    FormatError::Io(io) => self.local_err("opening", &p, io),
                    other => StoreError::Io {
                        op: "opening",
                        path: p.display().to_string(),
                        source: std::io::Error::other(other.to_string()),
                    },
                })?;
                Ok(Arc::new(m.counted(self.ctx.counters.clone())))
            }
            Backend::Object { store, prefix } => {
                let size = match size {
                    Some(s) if s > 0 => s,
                    _ => self.size(rel)?.ok_or_else(|| StoreError::NotFound {
                        what: self.display(rel),
                    })?,
                };
                let r = RemoteFile::new(
                    store.clone(),
                    join(prefix, rel),
                    size,
                    &self.ctx,
                    self.display(rel),
                );
                Ok(Arc::new(crate::Coalesce::new(r, REMOTE_GAP)))
            }
        }
    }

    /// A writer of a new object `rel`: a local file, or a multipart upload sent in
    /// parts as it fills. Nothing is visible at `rel` before [`ObjectWrite::finish`].
    pub fn writer(&self, rel: &str) -> Result<ObjectWrite> {
        match &*self.backend {
            Backend::Local(root) => {
                let p = Self::local_path(root, rel);
                if let Some(dir) = p.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| self.local_err("creating", dir, e))?;
                }
                Ok(ObjectWrite::Local {
                    path: p,
                    file: None,
                })
            }
            Backend::Object { store, prefix } => Ok(ObjectWrite::Remote(Upload::new(
                store.clone(),
                join(prefix, rel),
                self.display(rel),
                &self.ctx,
            ))),
        }
    }

    /// Copies the local file `from` to `rel`; returns its size.
    pub fn copy_from_local(&self, from: &Path, rel: &str) -> Result<u64> {
        match &*self.backend {
            Backend::Local(root) => {
                let p = Self::local_path(root, rel);
                if let Some(dir) = p.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| self.local_err("creating", dir, e))?;
                }
                Counters::add(&self.ctx.counters.puts, 1);
                let n = std::fs::copy(from, &p).map_err(|e| self.local_err("copying to", &p, e))?;
                Counters::add(&self.ctx.counters.bytes_written, n);
                Ok(n)
            }
            Backend::Object { .. } => {
                let mut w = self.writer(rel)?;
                let mut f =
                    std::fs::File::open(from).map_err(|e| self.local_err("reading", from, e))?;
                std::io::copy(&mut f, &mut w).map_err(|e| StoreError::Io {
                    op: "uploading",
                    path: self.display(rel),
                    source: e,
                })?;
                w.finish()
            }
        }
    }
}

/// Conditional puts of unknown outcome tried again (after reading back) at most.
const CONDITIONAL_RETRIES: u32 = 8;

/// Object-store ranges closer than this are fetched as one request.
pub(crate) const REMOTE_GAP: u64 = 256 * 1024;

/// `rel` below `prefix`. A part holding `%` is taken as already percent-encoded (the
/// form listings return, and the reference's names of branch files:
/// `_refs/branches/a%2Fb.json`), so what a listing names reads back as that object.
fn join(prefix: &OPath, rel: &str) -> OPath {
    let mut p = prefix.clone();
    for part in rel.split('/').filter(|s| !s.is_empty()) {
        p = match object_store::path::PathPart::parse(part) {
            Ok(raw) if part.contains('%') => p.join(raw),
            _ => p.join(part),
        };
    }
    p
}

pub use crate::upload::{DataWriter, ObjectWrite, Upload};
