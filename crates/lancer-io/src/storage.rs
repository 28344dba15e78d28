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
//! outcome is unknown is settled by reading the object back.

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use bytes::Bytes;
use futures::StreamExt;
use lancer_format::read::{check_range, Prefetched, RangeRead};
use lancer_format::FormatError;

pub use crate::context::StoreStats;
use crate::context::{Context, Counters};
use object_store::path::Path as OPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

/// Storage options by name (the reference's names: `region`, `endpoint`,
/// `access_key_id`, `secret_access_key`, `allow_http`, `virtual_hosted_style_request`,
/// `aws_*`, `azure_*`, `google_*`, …). Environment variables (`AWS_*`, `AZURE_*`,
/// `GOOGLE_*`) apply first; options override them.
pub type StorageOptions = BTreeMap<String, String>;

/// What a storage operation can fail with.
#[derive(Debug, thiserror::Error)]
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
    counters: Arc<Counters>,
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
            counters: ctx.counters.clone(),
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
            counters: ctx.counters.clone(),
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
            counters: self.counters.clone(),
            ctx: self.ctx.clone(),
        }
    }

    /// Requests and bytes so far (of every store of its context).
    pub fn stats(&self) -> StoreStats {
        self.counters.snapshot()
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
        Counters::add(&self.counters.gets, 1);
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
        Counters::add(&self.counters.bytes_read, b.len() as u64);
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
        Counters::add(&self.counters.heads, 1);
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
        Counters::add(&self.counters.puts, 1);
        Counters::add(&self.counters.bytes_written, data.len() as u64);
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
                self.ctx
                    .runtime()?
                    .block_on(store.put(&path, PutPayload::from_bytes(data)))
                    .map(|_| ())
                    .map_err(|e| self.remote("writing", rel, e))
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
        Counters::add(&self.counters.puts, 1);
        Counters::add(&self.counters.bytes_written, data.len() as u64);
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
        Counters::add(&self.counters.lists, 1);
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

    /// Deletes `rel`; an absent object is not an error.
    pub fn delete(&self, rel: &str) -> Result<()> {
        Counters::add(&self.counters.deletes, 1);
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
                Ok(Arc::new(m))
            }
            Backend::Object { store, prefix } => {
                let size = match size {
                    Some(s) if s > 0 => s,
                    _ => self.size(rel)?.ok_or_else(|| StoreError::NotFound {
                        what: self.display(rel),
                    })?,
                };
                let r = RemoteFile {
                    store: store.clone(),
                    path: join(prefix, rel),
                    size,
                    counters: self.counters.clone(),
                    ctx: self.ctx.clone(),
                    shown: self.display(rel),
                    tail: OnceLock::new(),
                    held: Mutex::new(Vec::new()),
                };
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
            Backend::Object { store, prefix } => Ok(ObjectWrite::Remote(Upload {
                store: store.clone(),
                path: join(prefix, rel),
                shown: self.display(rel),
                buf: Vec::new(),
                multipart: None,
                inflight: Vec::new(),
                written: 0,
                counters: self.counters.clone(),
                ctx: self.ctx.clone(),
            })),
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
                Counters::add(&self.counters.puts, 1);
                let n = std::fs::copy(from, &p).map_err(|e| self.local_err("copying to", &p, e))?;
                Counters::add(&self.counters.bytes_written, n);
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
const REMOTE_GAP: u64 = 256 * 1024;

fn join(prefix: &OPath, rel: &str) -> OPath {
    let mut p = prefix.clone();
    for part in rel.split('/').filter(|s| !s.is_empty()) {
        p = p.join(part);
    }
    p
}

/// One object of an object store read by ranges: each range one request, the ranges of
/// a call fetched concurrently.
struct RemoteFile {
    store: Arc<dyn ObjectStore>,
    path: OPath,
    size: u64,
    counters: Arc<Counters>,
    ctx: Arc<Context>,
    shown: String,
    /// The file's last [`TAIL`] bytes, fetched with the first read that falls there:
    /// opening a file reads its footer, then its metadata and schema, which sit at
    /// the end — one request instead of several round trips.
    tail: OnceLock<Bytes>,
    /// Spans fetched ahead by [`RangeRead::prefetch`], alive while the caller's guard
    /// is: reads inside one are served from memory.
    held: Mutex<Vec<Weak<Held>>>,
}

/// One span of a remote file fetched ahead.
struct Held {
    start: u64,
    bytes: Bytes,
}

/// Bytes at the end of a remote file fetched in one request when any of them is read.
/// (256 KiB: the column metadata of a 12,500-row, five-column file with a 128-d vector
/// is ~140 KB; with 64 KiB it took two more round trips per file.)
const TAIL: u64 = 256 * 1024;
/// Prefetched ranges closer than this are fetched together (a scan's pages of several
/// columns: one request per span instead of one per column and page).
const PREFETCH_GAP: u64 = 1024 * 1024;
/// A prefetched span is fetched in parts of at most this many bytes, concurrently.
const PREFETCH_PART: u64 = 8 * 1024 * 1024;

/// `ranges` sorted and merged where the gap between neighbours is at most
/// [`REMOTE_GAP`] (as the decoders' own reads are), or up to `max_gap` when the bytes
/// wanted so far in the merged span are at least the gap: neighbouring pages of a scan's
/// columns become one request, while scattered small ranges (a sparse take's rows) are
/// not joined into a span mostly made of bytes nobody asked for.
fn merge_bounded(mut ranges: Vec<Range<u64>>, max_gap: u64) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<(Range<u64>, u64)> = Vec::new();
    for r in ranges {
        let len = r.end - r.start;
        match merged.last_mut() {
            Some((m, useful))
                if r.start <= m.end.saturating_add(max_gap.min((*useful).max(REMOTE_GAP))) =>
            {
                *useful = useful.saturating_add(r.end.saturating_sub(m.end.max(r.start)));
                m.end = m.end.max(r.end);
            }
            _ => merged.push((r, len)),
        }
    }
    merged.into_iter().map(|(m, _)| m).collect()
}

impl RangeRead for RemoteFile {
    fn size(&self) -> lancer_format::Result<u64> {
        Ok(self.size)
    }

    fn prefetches(&self) -> bool {
        true
    }

    fn prefetch(&self, ranges: &[Range<u64>]) -> lancer_format::Result<Option<Prefetched>> {
        for r in ranges {
            check_range(r, self.size)?;
        }
        // the tail is fetched whole on its own; spans already held are not fetched again
        let start = self.size.saturating_sub(TAIL);
        let mut live = self.live_held();
        live.sort_by_key(|h| h.start);
        let wanted: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| r.start < r.end && r.start < start)
            .filter(|r| cover(&live, r).is_none())
            .cloned()
            .collect();
        if wanted.is_empty() {
            return Ok(None);
        }
        let merged = merge_bounded(wanted, PREFETCH_GAP);
        let mut parts = Vec::new();
        for m in merged {
            let mut at = m.start;
            while at < m.end {
                let end = m.end.min(at + PREFETCH_PART);
                parts.push(at..end);
                at = end;
            }
        }
        let got = self.fetch(&parts)?;
        let spans: Vec<Arc<Held>> = parts
            .iter()
            .zip(got)
            .map(|(r, bytes)| {
                Arc::new(Held {
                    start: r.start,
                    bytes,
                })
            })
            .collect();
        if let Ok(mut h) = self.held.lock() {
            h.retain(|w| w.strong_count() > 0);
            h.extend(spans.iter().map(Arc::downgrade));
        }
        Ok(Some(Box::new(spans)))
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> lancer_format::Result<Vec<Bytes>> {
        for r in ranges {
            check_range(r, self.size)?;
        }
        let start = self.size.saturating_sub(TAIL);
        if self.tail.get().is_none() && ranges.iter().any(|r| r.start >= start) {
            let whole = start..self.size;
            let t = self.fetch(std::slice::from_ref(&whole))?;
            let _ = self.tail.set(t.into_iter().next().unwrap_or_default());
        }
        // what is in memory: the tail, and the spans prefetched for callers still
        // holding them; the other ranges are fetched
        let mut spans = self.live_held();
        if let Some(t) = self.tail.get() {
            spans.push(Arc::new(Held {
                start,
                bytes: t.clone(),
            }));
        }
        spans.sort_by_key(|h| h.start);
        let from_memory: Vec<Option<Bytes>> = ranges.iter().map(|r| in_memory(&spans, r)).collect();
        let far: Vec<Range<u64>> = ranges
            .iter()
            .zip(&from_memory)
            .filter(|(_, m)| m.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        let mut fetched = self.fetch(&far)?.into_iter();
        from_memory
            .into_iter()
            .map(|m| match m {
                Some(b) => Ok(b),
                None => fetched.next().ok_or_else(|| {
                    FormatError::corrupt(format!("{}: a range went missing", self.shown))
                }),
            })
            .collect()
    }
}

/// The spans (positions in `spans`, sorted by start) that together hold all of `r`:
/// one, or adjacent ones (a range the coalescing above merged across two prefetched
/// parts); None if some byte of `r` is not in memory.
fn cover(spans: &[Arc<Held>], r: &Range<u64>) -> Option<Range<usize>> {
    let end_of = |h: &Held| h.start + h.bytes.len() as u64;
    let first = spans
        .iter()
        .position(|h| h.start <= r.start && r.start < end_of(h))?;
    let mut at = end_of(&spans[first]);
    let mut last = first;
    while at < r.end {
        let next = spans.get(last + 1)?;
        if next.start > at {
            return None;
        }
        at = at.max(end_of(next));
        last += 1;
    }
    Some(first..last + 1)
}

/// The bytes of `r` if `spans` (sorted by start) hold all of them: a slice of one
/// span, or copied from adjacent ones.
fn in_memory(spans: &[Arc<Held>], r: &Range<u64>) -> Option<Bytes> {
    if r.start == r.end {
        return Some(Bytes::new());
    }
    let c = cover(spans, r)?;
    let h = &spans[c.start];
    if c.len() == 1 {
        return Some(
            h.bytes
                .slice((r.start - h.start) as usize..(r.end - h.start) as usize),
        );
    }
    let mut out = Vec::with_capacity((r.end - r.start) as usize);
    let mut at = r.start;
    for h in &spans[c] {
        let end = r.end.min(h.start + h.bytes.len() as u64);
        if end > at {
            out.extend_from_slice(&h.bytes[(at - h.start) as usize..(end - h.start) as usize]);
            at = end;
        }
    }
    Some(Bytes::from(out))
}

impl RemoteFile {
    /// The prefetched spans still held by some caller.
    fn live_held(&self) -> Vec<Arc<Held>> {
        match self.held.lock() {
            Ok(h) => h.iter().filter_map(Weak::upgrade).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// Attempts of an idempotent request (read, size, listing) whose connection failed
/// before a response: object_store retries errors it classifies as transient, but a
/// connection reset while sending (a dropping proxy, a restarting server) ends the
/// request at once.
const TRANSPORT_ATTEMPTS: u32 = 4;

/// Whether `e` is a transport failure (no response from the server at all).
fn is_transport(e: &object_store::Error) -> bool {
    let text = match e {
        object_store::Error::Generic { source, .. } => {
            let mut t = source.to_string();
            let mut s = source.source();
            while let Some(inner) = s {
                t.push_str(": ");
                t.push_str(&inner.to_string());
                s = inner.source();
            }
            t
        }
        _ => return false,
    };
    [
        "error sending request",
        "connection closed",
        "connection reset",
        "broken pipe",
        "incomplete message",
        "error decoding response body",
    ]
    .iter()
    .any(|m| text.to_ascii_lowercase().contains(m))
}

/// Runs an idempotent request, again after a transport failure (50, 100, 200 ms apart).
fn idempotent<T, E: Into<object_store::Error>>(
    mut op: impl FnMut() -> std::result::Result<T, E>,
) -> std::result::Result<T, object_store::Error> {
    let mut attempt = 0;
    loop {
        match op().map_err(Into::into) {
            Err(e) if attempt + 1 < TRANSPORT_ATTEMPTS && is_transport(&e) => {
                std::thread::sleep(std::time::Duration::from_millis(50 << attempt));
                attempt += 1;
            }
            other => return other,
        }
    }
}

impl RemoteFile {
    /// Each range one request, all at once.
    fn fetch(&self, ranges: &[Range<u64>]) -> lancer_format::Result<Vec<Bytes>> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        Counters::add(&self.counters.gets, ranges.len() as u64);
        let rt = self.ctx.runtime()?;
        let mut got = rt.block_on(async {
            let reads = ranges
                .iter()
                .map(|r| self.store.get_range(&self.path, r.clone()));
            futures::future::join_all(reads).await
        });
        // ranges lost to a dropped connection are asked again, one at a time
        for (g, r) in got.iter_mut().zip(ranges) {
            if matches!(g, Err(e) if is_transport(e)) {
                *g = idempotent(|| rt.block_on(self.store.get_range(&self.path, r.clone())));
            }
        }
        let mut out = Vec::with_capacity(got.len());
        for (g, r) in got.into_iter().zip(ranges) {
            let b = g.map_err(|e| {
                FormatError::Io(std::io::Error::other(format!(
                    "reading {}: {e}",
                    self.shown
                )))
            })?;
            if b.len() as u64 != r.end - r.start {
                return Err(FormatError::corrupt(format!(
                    "{}: asked for {} bytes at {}, the store sent {}",
                    self.shown,
                    r.end - r.start,
                    r.start,
                    b.len()
                )));
            }
            Counters::add(&self.counters.bytes_read, b.len() as u64);
            out.push(b);
        }
        Ok(out)
    }
}

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
    counters: Arc<Counters>,
    ctx: Arc<Context>,
}

impl Upload {
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
        Counters::add(&self.counters.puts, 1);
        Counters::add(&self.counters.bytes_written, part.len() as u64);
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
            Counters::add(&self.counters.puts, 1);
            Counters::add(&self.counters.bytes_written, data.len() as u64);
            self.ctx
                .runtime()?
                .block_on(self.store.put(&self.path, PutPayload::from_bytes(data)))
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
        Counters::add(&self.counters.puts, 1);
        self.ctx
            .runtime()?
            .block_on(mp.complete())
            .map_err(|e| fail(e.into()))?;
        Ok(size)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_spans_join_pages_but_not_scattered_rows() {
        const MIB: u64 = 1024 * 1024;
        // a scan's pages of two columns, 100 KiB apart: one span
        let pages = vec![5 * MIB..6 * MIB, 0..2 * MIB, 2 * MIB + 100_000..3 * MIB];
        assert_eq!(
            merge_bounded(pages, MIB),
            vec![0..3 * MIB, 5 * MIB..6 * MIB]
        );
        // 3 KiB rows 600 KiB apart (a sparse take of a wide vector column): each alone,
        // though the gap is under the limit
        let rows: Vec<Range<u64>> = (0..5u64).map(|i| i * 600_000..i * 600_000 + 3072).collect();
        assert_eq!(merge_bounded(rows.clone(), MIB), rows);
        // rows up to REMOTE_GAP apart are joined, as the decoders' reads join them
        let close: Vec<Range<u64>> = (0..5u64).map(|i| i * 200_000..i * 200_000 + 3072).collect();
        assert_eq!(merge_bounded(close, MIB), vec![0..800_000 + 3072]);
        // past REMOTE_GAP, a gap no larger than what was wanted so far
        let big = vec![0..400_000, 800_000..900_000, 2_000_000..2_100_000];
        assert_eq!(
            merge_bounded(big, MIB),
            vec![0..900_000, 2_000_000..2_100_000]
        );
        // overlapping and nested ranges count their bytes once
        let nested = vec![0..100, 10..50, 90..300];
        assert_eq!(merge_bounded(nested, MIB), vec![0..300]);
        assert!(merge_bounded(Vec::new(), MIB).is_empty());
    }

    #[test]
    fn ranges_are_served_from_one_span_or_adjacent_ones() {
        let data: Vec<u8> = (0..40u8).collect();
        let span = |r: Range<usize>| {
            Arc::new(Held {
                start: r.start as u64,
                bytes: Bytes::copy_from_slice(&data[r]),
            })
        };
        let spans = vec![span(0..10), span(10..20), span(25..30)];
        let got = |r: Range<u64>| in_memory(&spans, &r).map(|b| b.to_vec());
        assert_eq!(got(2..8), Some(data[2..8].to_vec()));
        assert_eq!(got(5..15), Some(data[5..15].to_vec()), "across two parts");
        assert_eq!(got(0..20), Some(data[0..20].to_vec()));
        assert_eq!(got(26..30), Some(data[26..30].to_vec()));
        assert_eq!(got(15..27), None, "a gap");
        assert_eq!(got(28..31), None, "past the last span");
        assert_eq!(got(35..35), Some(Vec::new()));
        assert_eq!(cover(&spans, &(5..15)), Some(0..2));
    }
}
