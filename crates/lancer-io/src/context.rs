//! What the stores opened through one [`Context`] share: the runtime their object-store
//! requests run on, the request counters, the `memory://` stores by name, bounded caches
//! of decoded index segments and metadata, the folder of full-text language models
//! (`LANCE_LANGUAGE_MODEL_HOME`) with the models loaded from it, and the sink warnings
//! go to.
//!
//! A context is the lower half of a session (the public `lancer::Session` wraps one);
//! nothing here is process-global. A [`Store`](crate::Store) opened without a context
//! gets a fresh one, so two `memory://x` stores opened that way are two stores — as the
//! reference, where each open of a `memory://` URI starts empty. Index files never
//! change once written (reference "Indices": an index segment is named by its UUID), so
//! cached segments keyed by dataset root and UUID never go stale; the caches only bound
//! memory.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use object_store::ObjectStore;

use crate::storage::{Result, StoreError};

/// Entries the index-segment cache holds unless configured.
pub const DEFAULT_INDEX_CACHE_ENTRIES: usize = 128;
/// Entries the metadata cache (row-id maps and the like) holds unless configured.
pub const DEFAULT_METADATA_CACHE_ENTRIES: usize = 16;
/// Language models (tokenizer dictionaries) a context keeps loaded.
const KEPT_MODELS: usize = 8;
/// Distinct warnings a context keeps for [`Context::warnings`].
const KEPT_WARNINGS: usize = 1000;

/// Where warnings go: called once per distinct message.
pub type WarningSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How a context is set up.
#[derive(Clone, Default)]
pub struct ContextOptions {
    /// Entries of the index-segment cache (0: the default, [`DEFAULT_INDEX_CACHE_ENTRIES`]).
    pub index_cache_entries: usize,
    /// Entries of the metadata cache (0: the default, [`DEFAULT_METADATA_CACHE_ENTRIES`]).
    pub metadata_cache_entries: usize,
    /// A runtime object-store requests run on (from the caller's program); when `None`
    /// the context starts its own (two worker threads) at the first remote request.
    pub runtime: Option<tokio::runtime::Handle>,
    /// Called with each distinct warning (besides keeping it for [`Context::warnings`]).
    pub warnings: Option<WarningSink>,
    /// Rows per batch of a scan that names none (`None`: the scanner's own default).
    pub batch_size: Option<usize>,
    /// The folder the full-text tokenizers' language models are read from (pylance's
    /// `LANCE_LANGUAGE_MODEL_HOME`); `None`: no models (such tokenizers are refused).
    pub language_model_home: Option<PathBuf>,
}

impl fmt::Debug for ContextOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextOptions")
            .field("index_cache_entries", &self.index_cache_entries)
            .field("metadata_cache_entries", &self.metadata_cache_entries)
            .field("runtime", &self.runtime.is_some())
            .field("warnings", &self.warnings.is_some())
            .field("batch_size", &self.batch_size)
            .field("language_model_home", &self.language_model_home)
            .finish()
    }
}

/// The state stores opened through it share (see the module docs).
pub struct Context {
    given: Option<tokio::runtime::Handle>,
    own: OnceLock<std::result::Result<tokio::runtime::Runtime, String>>,
    pub(crate) counters: Arc<Counters>,
    /// The counters when [`Context::stats_incremental`] was last called.
    mark: Mutex<StoreStats>,
    memory: Mutex<BTreeMap<String, Arc<dyn ObjectStore>>>,
    indexes: Cache,
    metadata: Cache,
    sink: Option<WarningSink>,
    warned: Mutex<Vec<String>>,
    batch_size: Option<usize>,
    model_home: Option<PathBuf>,
    models: Arc<Cache>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("indexes", &self.indexes)
            .field("metadata", &self.metadata)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context set up by `options`.
    pub fn new(options: ContextOptions) -> Arc<Context> {
        let entries = |n: usize, default: usize| if n == 0 { default } else { n };
        Arc::new(Context {
            given: options.runtime,
            own: OnceLock::new(),
            counters: Arc::default(),
            mark: Mutex::default(),
            memory: Mutex::default(),
            indexes: Cache::new(entries(
                options.index_cache_entries,
                DEFAULT_INDEX_CACHE_ENTRIES,
            )),
            metadata: Cache::new(entries(
                options.metadata_cache_entries,
                DEFAULT_METADATA_CACHE_ENTRIES,
            )),
            sink: options.warnings,
            warned: Mutex::default(),
            batch_size: options.batch_size.filter(|&n| n > 0),
            model_home: options.language_model_home,
            models: Arc::new(Cache::new(KEPT_MODELS)),
        })
    }

    /// Rows per batch of a scan that names none, when the session sets it.
    pub fn batch_size(&self) -> Option<usize> {
        self.batch_size
    }

    /// A context with the defaults.
    pub fn fresh() -> Arc<Context> {
        Self::new(ContextOptions::default())
    }

    /// The runtime object-store requests run on: the caller's, or the context's own,
    /// started at the first call.
    pub fn runtime(&self) -> Result<tokio::runtime::Handle> {
        if let Some(h) = &self.given {
            return Ok(h.clone());
        }
        self.own
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("lancer-io")
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map(|rt| rt.handle().clone())
            .map_err(|e| StoreError::Config(format!("cannot start the I/O runtime: {e}")))
    }

    /// Requests and bytes the stores of this context have cost so far.
    pub fn stats(&self) -> StoreStats {
        self.counters.snapshot()
    }

    /// Requests and bytes since the previous call (since the context was made, at the
    /// first): each call starts the next interval, for every holder of the context.
    pub fn stats_incremental(&self) -> StoreStats {
        let mut mark = self.mark.lock().unwrap_or_else(|p| p.into_inner());
        let now = self.counters.snapshot();
        let out = now.since(&mark);
        *mark = now;
        out
    }

    /// Requests and bytes since the last [`Context::stats_incremental`] call (since the
    /// context was made, before any), without starting a new interval.
    pub fn stats_since_incremental(&self) -> StoreStats {
        let mark = self.mark.lock().unwrap_or_else(|p| p.into_inner());
        self.counters.snapshot().since(&mark)
    }

    /// The `memory://NAME` store of this context (created empty at the first use; it
    /// lives as long as the context or a store opened on it).
    pub(crate) fn memory_store(&self, name: &str) -> Arc<dyn ObjectStore> {
        self.memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(object_store::memory::InMemory::new()))
            .clone()
    }

    /// The cache of opened index segments.
    pub fn index_cache(&self) -> &Cache {
        &self.indexes
    }

    /// The cache of decoded metadata (row-id maps).
    pub fn metadata_cache(&self) -> &Cache {
        &self.metadata
    }

    /// The folder language models are read from, when the session names one.
    pub fn language_model_home(&self) -> Option<&Path> {
        self.model_home.as_deref()
    }

    /// The language models loaded so far (keyed by their folder), shared by every
    /// analyzer of this context.
    pub fn model_cache(&self) -> &Arc<Cache> {
        &self.models
    }

    /// Reports `message` once: to the sink, and kept for [`Context::warnings`].
    pub fn warn(&self, message: &str) {
        {
            let mut seen = self.warned.lock().unwrap_or_else(|e| e.into_inner());
            if seen.iter().any(|m| m == message) || seen.len() >= KEPT_WARNINGS {
                return;
            }
            seen.push(message.to_string());
        }
        if let Some(sink) = &self.sink {
            sink(message);
        }
    }

    /// The distinct warnings reported so far, oldest first.
    pub fn warnings(&self) -> Vec<String> {
        self.warned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // A runtime dropped inside another runtime's task would panic; its threads
        // are let go instead.
        if let Some(Ok(rt)) = self.own.take() {
            rt.shutdown_background();
        }
    }
}

/// A bounded cache of shared values by (dataset root, id); the least recently used
/// entry goes when it is full. Values of different types may share a cache: a lookup
/// names the type it wants and a value of another type is a miss.
pub struct Cache {
    capacity: usize,
    inner: Mutex<CacheInner>,
    hits: AtomicU64,
    misses: AtomicU64,
}

type CacheKey = (String, Vec<u8>);

#[derive(Default)]
struct CacheInner {
    map: HashMap<CacheKey, (Arc<dyn Any + Send + Sync>, u64)>,
    tick: u64,
}

/// Counts of a [`Cache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Entries held.
    pub entries: usize,
    /// Entries it holds at most.
    pub capacity: usize,
    /// Lookups answered from it.
    pub hits: u64,
    /// Lookups that were not.
    pub misses: u64,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.stats())
    }
}

impl Cache {
    /// An empty cache of `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Cache {
        Cache {
            capacity: capacity.max(1),
            inner: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value under (`root`, `id`) when it is there and a `T`.
    pub fn get<T: Any + Send + Sync>(&self, root: &str, id: &[u8]) -> Option<Arc<T>> {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let found = inner
            .map
            .get_mut(&(root.to_string(), id.to_vec()))
            .and_then(|(v, used)| {
                *used = tick;
                v.clone().downcast::<T>().ok()
            });
        drop(inner);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `value` under (`root`, `id`), letting the least recently used entry go
    /// when the cache is full.
    pub fn insert<T: Any + Send + Sync>(&self, root: &str, id: &[u8], value: Arc<T>) {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let key = (root.to_string(), id.to_vec());
        if !inner.map.contains_key(&key) && inner.map.len() >= self.capacity {
            if let Some(oldest) = inner
                .map
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            {
                inner.map.remove(&oldest);
            }
        }
        inner.map.insert(key, (value, tick));
    }

    /// The value under (`root`, `id`), made by `make` (outside the lock) and kept
    /// when it is not there.
    pub fn get_or_try_insert<T: Any + Send + Sync, E>(
        &self,
        root: &str,
        id: &[u8],
        make: impl FnOnce() -> std::result::Result<Arc<T>, E>,
    ) -> std::result::Result<Arc<T>, E> {
        if let Some(v) = self.get::<T>(root, id) {
            return Ok(v);
        }
        let v = make()?;
        self.insert(root, id, v.clone());
        Ok(v)
    }

    /// Entries, capacity, hits and misses.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            entries: self.lock().map.len(),
            capacity: self.capacity,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// Drops every entry.
    pub fn clear(&self) {
        self.lock().map.clear();
    }
}

/// Requests and bytes the stores of one context have cost; an operation's cost is the
/// difference of two snapshots ([`StoreStats::since`]).
#[derive(Debug, Default)]
pub struct Counters {
    pub(crate) gets: AtomicU64,
    pub(crate) bytes_read: AtomicU64,
    pub(crate) puts: AtomicU64,
    pub(crate) bytes_written: AtomicU64,
    pub(crate) lists: AtomicU64,
    pub(crate) heads: AtomicU64,
    pub(crate) deletes: AtomicU64,
}

/// A snapshot of [`Counters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Read requests (whole objects and ranges: a coalesced range is one).
    pub gets: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Write requests (puts, conditional puts, multipart parts).
    pub puts: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// List requests.
    pub lists: u64,
    /// Size lookups (HEAD).
    pub heads: u64,
    /// Deletes.
    pub deletes: u64,
}

impl StoreStats {
    /// Every request.
    pub fn requests(&self) -> u64 {
        self.gets + self.puts + self.lists + self.heads + self.deletes
    }

    /// What happened between `before` and this snapshot.
    pub fn since(&self, before: &StoreStats) -> StoreStats {
        StoreStats {
            gets: self.gets - before.gets,
            bytes_read: self.bytes_read - before.bytes_read,
            puts: self.puts - before.puts,
            bytes_written: self.bytes_written - before.bytes_written,
            lists: self.lists - before.lists,
            heads: self.heads - before.heads,
            deletes: self.deletes - before.deletes,
        }
    }
}

impl fmt::Display for StoreStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests: {} reads ({} bytes), {} writes ({} bytes), {} lists, {} heads, {} deletes",
            self.requests(),
            self.gets,
            self.bytes_read,
            self.puts,
            self.bytes_written,
            self.lists,
            self.heads,
            self.deletes
        )
    }
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> StoreStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StoreStats {
            gets: g(&self.gets),
            bytes_read: g(&self.bytes_read),
            puts: g(&self.puts),
            bytes_written: g(&self.bytes_written),
            lists: g(&self.lists),
            heads: g(&self.heads),
            deletes: g(&self.deletes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let c = Cache::new(2);
        c.insert("r", b"a", Arc::new(1u32));
        c.insert("r", b"b", Arc::new(2u32));
        assert_eq!(c.get::<u32>("r", b"a").as_deref(), Some(&1));
        c.insert("r", b"c", Arc::new(3u32));
        assert!(
            c.get::<u32>("r", b"b").is_none(),
            "b was used least recently"
        );
        assert_eq!(c.get::<u32>("r", b"a").as_deref(), Some(&1));
        assert_eq!(c.get::<u32>("r", b"c").as_deref(), Some(&3));
        assert!(
            c.get::<String>("r", b"c").is_none(),
            "another type is a miss"
        );
        let s = c.stats();
        assert_eq!((s.entries, s.capacity, s.hits, s.misses), (2, 2, 3, 2));
    }

    #[test]
    fn a_warning_is_reported_once() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = seen.clone();
        let ctx = Context::new(ContextOptions {
            warnings: Some(Arc::new(move |m: &str| {
                sink.lock().unwrap().push(m.to_string())
            })),
            ..Default::default()
        });
        ctx.warn("x");
        ctx.warn("x");
        ctx.warn("y");
        assert_eq!(*seen.lock().unwrap(), ["x", "y"]);
        assert_eq!(ctx.warnings(), ["x", "y"]);
    }

    #[test]
    fn memory_stores_belong_to_their_context() {
        let a = Context::fresh();
        let b = Context::fresh();
        assert!(Arc::ptr_eq(&a.memory_store("x"), &a.memory_store("x")));
        assert!(!Arc::ptr_eq(&a.memory_store("x"), &b.memory_store("x")));
    }
}
