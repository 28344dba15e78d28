//! [`Session`]: what a program using Lancer sets up once and every dataset it opens
//! through the session shares — storage options, the runtime object-store requests run
//! on, request counters, `memory://` stores, bounded caches of opened index segments
//! and of decoded metadata, and where warnings go. Nothing of it is process-global: two
//! sessions share nothing, and a dataset opened by location alone
//! ([`Dataset::open`]) gets a session of its own.
//!
//! The state lives in [`lancer_io::Context`] (the lower half, reachable from every
//! store); this type is its public face. Index segments are cached by dataset root and
//! segment UUID (reference "Indices": a segment's files never change once written), so
//! cache entries never go stale; the cache bounds memory only.
//!
//! Async programs call the `*_async` methods (or [`Session::spawn`] with any blocking
//! call): the work runs on the session runtime's blocking pool and the returned future
//! completes when it is done, so an async executor's threads are never blocked.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use lancer_io::{Cache, CacheStats, Context, ContextOptions, StorageOptions, Store, StoreStats};
use lancer_table::write::WriteParams;
use lancer_table::Dataset;

use crate::{Error, Result};

pub use lancer_io::context::{
    WarningSink, DEFAULT_INDEX_CACHE_ENTRIES, DEFAULT_METADATA_CACHE_ENTRIES,
};

/// Shared state of the datasets opened through it (see the module docs). Cloning is
/// cheap and the clone is the same session.
#[derive(Clone, Debug)]
pub struct Session {
    ctx: Arc<Context>,
    options: Arc<StorageOptions>,
}

/// How a [`Session`] is set up ([`Session::builder`]).
#[derive(Debug, Default, Clone)]
pub struct SessionBuilder {
    options: StorageOptions,
    context: ContextOptions,
    /// Warnings found while setting up, given to the session's sink once it exists.
    pending: Vec<String>,
}

impl SessionBuilder {
    /// Storage options every store of the session is opened with (the reference's names:
    /// `region`, `endpoint`, `access_key_id`, …; they override the environment's).
    pub fn storage_options(mut self, options: StorageOptions) -> Self {
        self.options = options;
        self
    }

    /// One storage option.
    pub fn storage_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.insert(key.into(), value.into());
        self
    }

    /// Opened index segments kept (default [`DEFAULT_INDEX_CACHE_ENTRIES`]); the least
    /// recently used goes first.
    pub fn index_cache_entries(mut self, entries: usize) -> Self {
        self.context.index_cache_entries = entries;
        self
    }

    /// Decoded metadata entries kept (row-id maps; default
    /// [`DEFAULT_METADATA_CACHE_ENTRIES`]).
    pub fn metadata_cache_entries(mut self, entries: usize) -> Self {
        self.context.metadata_cache_entries = entries;
        self
    }

    /// Object-store requests run on this runtime (the program's own) instead of one the
    /// session starts at its first remote request.
    pub fn runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.context.runtime = Some(handle);
        self
    }

    /// Each distinct warning (an index skipped because it is damaged, …) is passed to
    /// `sink` besides being kept for [`Session::warnings`].
    pub fn warnings(mut self, sink: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.context.warnings = Some(Arc::new(sink));
        self
    }

    /// Rows per batch of a scan that names no batch size (default
    /// [`crate::DEFAULT_BATCH_SIZE`]); 0 keeps the default.
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.context.batch_size = (rows > 0).then_some(rows);
        self
    }

    /// The folder the dictionary tokenizers (`jieba/<model>`) read their models from:
    /// model `jieba/default` is the folder `<home>/jieba/default`. Default: pylance's,
    /// `lance/language_models` in the user's local data folder (`$XDG_DATA_HOME` or
    /// `~/.local/share` on Linux, `~/Library/Application Support` on macOS,
    /// `%LOCALAPPDATA%` on Windows).
    pub fn language_model_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.context.language_model_home = Some(home.into());
        self
    }

    /// The settings pylance reads from the environment, read here as it reads them:
    /// `LANCE_DEFAULT_BATCH_SIZE` (rows per batch of a scan that names none; a value
    /// that is not a positive number of rows keeps the default, with a warning naming
    /// the variable, the session's first) and `LANCE_LANGUAGE_MODEL_HOME` (the
    /// [`SessionBuilder::language_model_home`]). Settings made on the builder
    /// afterwards win.
    pub fn environment(mut self) -> Self {
        if let Some(home) =
            std::env::var_os(lancer_index::inverted::tokenizer::LANGUAGE_MODEL_HOME_ENV)
        {
            self.context.language_model_home = Some(PathBuf::from(home));
        }
        const BATCH: &str = "LANCE_DEFAULT_BATCH_SIZE";
        if let Ok(v) = std::env::var(BATCH) {
            match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => self.context.batch_size = Some(n),
                _ => self.pending.push(format!(
                    "{BATCH}={v:?} is not a positive number of rows: scans keep the default batch size of {}",
                    crate::DEFAULT_BATCH_SIZE
                )),
            }
        }
        self
    }

    /// The session.
    pub fn build(mut self) -> Session {
        if self.context.language_model_home.is_none() {
            self.context.language_model_home = default_language_model_home();
        }
        let ctx = Context::new(self.context);
        for w in &self.pending {
            ctx.warn(w);
        }
        Session {
            ctx,
            options: Arc::new(self.options),
        }
    }
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    /// A session with the defaults: no storage options (the environment's settings
    /// apply), default cache sizes, warnings kept but not printed.
    pub fn new() -> Session {
        SessionBuilder::default().build()
    }

    /// A session set up step by step.
    pub fn builder() -> SessionBuilder {
        SessionBuilder::default()
    }

    /// The session `ds` was opened in (its storage options and shared state).
    pub fn of(ds: &Dataset) -> Session {
        Session {
            ctx: ds.store().context().clone(),
            options: Arc::new(ds.storage_options().clone()),
        }
    }

    /// This session's state (caches, counters, `memory://` stores, warnings) with other
    /// storage options: datasets opened through it share the state.
    pub fn with_storage_options(&self, options: StorageOptions) -> Session {
        Session {
            ctx: self.ctx.clone(),
            options: Arc::new(options),
        }
    }

    /// Whether `other` shares this session's state.
    pub fn is_same_as(&self, other: &Session) -> bool {
        Arc::ptr_eq(&self.ctx, &other.ctx)
    }

    /// The storage options stores are opened with.
    pub fn storage_options(&self) -> &StorageOptions {
        &self.options
    }

    /// The shared state below (for the layers that take it).
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The session's language models ([`SessionBuilder::language_model_home`] and the
    /// dictionaries loaded from it), for [`crate::AnalyzerParams::models`].
    pub fn language_models(&self) -> crate::LanguageModels {
        crate::LanguageModels::of(&self.ctx)
    }

    /// The store at `location` (a path, or `file://`, `s3://`, `gs://`, `az://`,
    /// `abfss://`, `memory://` URI) in this session.
    pub fn store(&self, location: impl AsRef<Path>) -> Result<Store> {
        Ok(lancer_table::dataset::open_store_in(
            location.as_ref(),
            &self.options,
            &self.ctx,
        )?)
    }

    /// The latest version of the dataset at `location`.
    pub fn open(&self, location: impl AsRef<Path>) -> Result<Dataset> {
        Ok(Dataset::open_with(
            self.store(location)?,
            (*self.options).clone(),
            None,
        )?)
    }

    /// `version` of the dataset at `location`.
    pub fn open_version(&self, location: impl AsRef<Path>, version: u64) -> Result<Dataset> {
        Ok(Dataset::open_with(
            self.store(location)?,
            (*self.options).clone(),
            Some(version),
        )?)
    }

    /// The version tag `tag` of the dataset at `location` points at.
    pub fn open_tag(&self, location: impl AsRef<Path>, tag: &str) -> Result<Dataset> {
        let store = self.store(location)?;
        let v = lancer_table::versions::tag_version(&store, tag)?;
        Ok(Dataset::open_with(store, (*self.options).clone(), Some(v))?)
    }

    /// The latest version of branch `name` of the dataset at `location`.
    pub fn open_branch(&self, location: impl AsRef<Path>, name: &str) -> Result<Dataset> {
        let store = self.store(location)?;
        let root = lancer_table::versions::branch_root(&store, name)?;
        Ok(Dataset::open_with(root, (*self.options).clone(), None)?)
    }

    /// Creates (or, by `params.mode`, appends to or overwrites) the dataset at
    /// `location` from `batches`.
    pub fn write(
        &self,
        location: impl AsRef<Path>,
        batches: &[RecordBatch],
        params: &WriteParams,
    ) -> Result<Dataset> {
        let schema = match batches.first() {
            Some(b) => b.schema(),
            None => {
                return Err(Error::InvalidArgument {
                    what: "no batches to write: pass at least one (it may be empty) so the \
                           dataset has a schema"
                        .into(),
                })
            }
        };
        self.write_stream(location, schema, batches.iter().cloned().map(Ok), params)
    }

    /// [`Session::write`] with batches as they come (memory holds one batch and the
    /// open file's pages).
    pub fn write_stream(
        &self,
        location: impl AsRef<Path>,
        schema: SchemaRef,
        batches: impl IntoIterator<Item = lancer_table::Result<RecordBatch>>,
        params: &WriteParams,
    ) -> Result<Dataset> {
        let mut params = params.clone();
        params
            .storage_options
            .get_or_insert_with(|| (*self.options).clone());
        Ok(Dataset::write_stream_in(
            self.store(location)?,
            schema,
            batches,
            &params,
        )?)
    }

    /// Requests and bytes the session's stores have cost so far.
    pub fn stats(&self) -> StoreStats {
        self.ctx.stats()
    }

    /// Requests and bytes since the previous call of this method (since the session
    /// began, at the first); [`Session::stats`] is not affected.
    pub fn stats_incremental(&self) -> StoreStats {
        self.ctx.stats_incremental()
    }

    /// Requests and bytes since the last [`Session::stats_incremental`] call (since the
    /// session began, before any), without starting a new interval.
    pub fn stats_since_incremental(&self) -> StoreStats {
        self.ctx.stats_since_incremental()
    }

    /// The index-segment cache's entries, capacity, hits and misses.
    pub fn index_cache_stats(&self) -> CacheStats {
        self.ctx.index_cache().stats()
    }

    /// The metadata cache's entries, capacity, hits and misses.
    pub fn metadata_cache_stats(&self) -> CacheStats {
        self.ctx.metadata_cache().stats()
    }

    /// The distinct warnings reported so far, oldest first.
    pub fn warnings(&self) -> Vec<String> {
        self.ctx.warnings()
    }

    /// Runs `work` (any blocking call of this API) on the session runtime's blocking
    /// pool; the future completes with its result. The future needs no particular
    /// executor.
    pub fn spawn<T, F>(&self, work: F) -> impl Future<Output = Result<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(Session) -> Result<T> + Send + 'static,
    {
        let session = self.clone();
        let started = self
            .ctx
            .runtime()
            .map(|rt| rt.spawn_blocking(move || work(session)));
        async move {
            match started {
                Err(e) => Err(Error::Table(e.into())),
                Ok(task) => match task.await {
                    Ok(result) => result,
                    // a panic in the call is the caller's panic, not an error to report
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(e) => Err(Error::InvalidArgument {
                        what: format!("the runtime stopped the call before it finished: {e}"),
                    }),
                },
            }
        }
    }

    /// [`Session::open`] as a future.
    pub fn open_async(
        &self,
        location: impl Into<PathBuf>,
    ) -> impl Future<Output = Result<Dataset>> + Send + 'static {
        let location = location.into();
        self.spawn(move |s| s.open(&location))
    }

    /// [`Session::open_version`] as a future.
    pub fn open_version_async(
        &self,
        location: impl Into<PathBuf>,
        version: u64,
    ) -> impl Future<Output = Result<Dataset>> + Send + 'static {
        let location = location.into();
        self.spawn(move |s| s.open_version(&location, version))
    }

    /// [`Session::write`] as a future.
    pub fn write_async(
        &self,
        location: impl Into<PathBuf>,
        batches: Vec<RecordBatch>,
        params: WriteParams,
    ) -> impl Future<Output = Result<Dataset>> + Send + 'static {
        let location = location.into();
        self.spawn(move |s| s.write(&location, &batches, &params))
    }
}

/// The index-segment cache of the session `ds` was opened in.
/// pylance's default language model home: `lance/language_models` in the user's local
/// data folder (what the `dirs` crate calls `data_local_dir`).
fn default_language_model_home() -> Option<PathBuf> {
    let non_empty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let data = if cfg!(windows) {
        non_empty("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        non_empty("HOME").map(|h| h.join("Library/Application Support"))
    } else {
        non_empty("XDG_DATA_HOME")
            .filter(|p| p.is_absolute())
            .or_else(|| non_empty("HOME").map(|h| h.join(".local/share")))
    }?;
    Some(data.join("lance/language_models"))
}

pub(crate) fn index_cache(ds: &Dataset) -> &Cache {
    ds.store().context().index_cache()
}

/// `ds`'s root as a cache key.
pub(crate) fn root_key(ds: &Dataset) -> String {
    ds.root().to_string_lossy().into_owned()
}
