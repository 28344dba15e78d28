//! Discovery: a dataset version pinned, its fragments as shards, from the manifest alone.
//!
//! One fragment is one shard (see `shared/reference/shard-reader-guide.md`): its
//! data files, physical rows and surviving rows (physical minus the deletion file's
//! count, which the manifest records), and its bytes. Discovery reads the version
//! listing or hint and the manifest — two requests on an object store; on a local disk
//! two reads (the hint, the manifest) and two size checks (the hinted version's
//! manifest, the next version's absence) — and opens no
//! data file or deletion file. The plan names the version, so every rank and worker
//! reads that one version however the dataset changes afterwards, and it serializes
//! (JSON) so a resumed job plans against the same shards.
//!
//! Lancer reads what the guide's reference loader refuses (fragments whose columns span
//! several files after `add_columns`, files keeping dropped columns, blob columns,
//! legacy files, files under other base paths): what remains refused — at discovery,
//! never mid-epoch — are reader feature flags this build does not know.

use std::path::Path;

use lancer::{Dataset, StorageOptions};
use lancer_table::TableError;
use serde::{Deserialize, Serialize};

use crate::{LoaderError, Result};

/// Which version discovery pins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    /// The newest version at discovery.
    Latest,
    /// A version number.
    Version(u64),
    /// The version a tag names.
    Tag(String),
}

/// One shard: a fragment of the pinned version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// The fragment's id.
    pub fragment_id: u64,
    /// Its data files (relative to the dataset's `data/`, or to their base path).
    pub files: Vec<String>,
    /// Rows written, deleted ones included.
    pub physical_rows: u64,
    /// Rows not deleted in the pinned version (what the loader delivers of it).
    pub rows: u64,
    /// Bytes of its data files (as the manifest records them; 0 when it does not).
    pub bytes: u64,
}

/// A pinned plan of shards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The dataset's location as given.
    pub uri: String,
    /// The pinned version.
    pub version: u64,
    /// Surviving rows over all shards.
    pub rows: u64,
    /// Data bytes over all shards.
    pub bytes: u64,
    /// The shards, in the manifest's fragment order.
    pub shards: Vec<Shard>,
}

/// A plan and what discovering it cost.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The plan.
    pub plan: Plan,
    /// Requests made to the store (listings, reads and size lookups).
    pub requests: u64,
    /// Of those, reads: 2 on a local disk with a version hint (the hint, the manifest),
    /// 1 on an object store (the manifest, after one listing).
    pub reads: u64,
    /// Data or deletion files opened (always 0: the counts come from the manifest).
    pub data_files_opened: u64,
}

/// Discovers the dataset at `uri` at `pin` with `options` (the object store's
/// settings; the environment's apply first), in a session of its own.
pub fn discover(uri: &str, pin: &Pin, options: &StorageOptions) -> Result<Discovery> {
    let session = lancer::Session::builder()
        .storage_options(options.clone())
        .build();
    discover_in(&session, uri, pin)
}

/// [`discover`] in `session` (its storage options, `memory://` stores and counters).
pub fn discover_in(session: &lancer::Session, uri: &str, pin: &Pin) -> Result<Discovery> {
    let options = session.storage_options();
    let store = lancer_table::dataset::open_store_in(Path::new(uri), options, session.context())?;
    let before = store.stats();
    let version = match pin {
        Pin::Latest => None,
        Pin::Version(v) => Some(*v),
        Pin::Tag(t) => Some(lancer_table::versions::tag_version(&store, t)?),
    };
    let ds = match Dataset::open_with(store.clone(), options.clone(), version) {
        Ok(ds) => ds,
        Err(TableError::UnknownFeatures { flags, known }) => {
            let [reason, remedy] = lancer_table::commit::unsupported_flags(flags, known);
            return Err(LoaderError::Refused { reason, remedy });
        }
        Err(e) => return Err(e.into()),
    };
    let cost = store.stats().since(&before);
    let (requests, reads) = (cost.requests(), cost.gets);
    let plan = plan_of(uri, &ds);
    Ok(Discovery {
        plan,
        requests,
        reads,
        data_files_opened: 0,
    })
}

/// The plan of an opened dataset version (nothing read).
pub fn plan_of(uri: &str, ds: &Dataset) -> Plan {
    let shards: Vec<Shard> = ds
        .fragments()
        .iter()
        .map(|f| {
            let deleted = f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows);
            Shard {
                fragment_id: f.id,
                files: f.files.iter().map(|d| d.path.clone()).collect(),
                physical_rows: f.physical_rows,
                rows: f.physical_rows.saturating_sub(deleted),
                bytes: f.files.iter().map(|d| d.file_size_bytes).sum(),
            }
        })
        .collect();
    Plan {
        uri: uri.to_string(),
        version: ds.version(),
        rows: shards.iter().map(|s| s.rows).sum(),
        bytes: shards.iter().map(|s| s.bytes).sum(),
        shards,
    }
}

impl Plan {
    /// The plan as JSON (to resume a job against the same shards).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// A plan saved by [`Plan::to_json`].
    pub fn from_json(text: &str) -> Result<Plan> {
        let plan: Plan = serde_json::from_str(text).map_err(|e| LoaderError::InvalidArgument {
            what: format!("not a loader plan: {e}"),
        })?;
        let rows = plan
            .shards
            .iter()
            .try_fold(0u64, |a, s| a.checked_add(s.rows));
        if rows != Some(plan.rows) || plan.shards.iter().any(|s| s.rows > s.physical_rows) {
            return Err(LoaderError::InvalidArgument {
                what: "the plan's row counts do not add up: it was edited or damaged".into(),
            });
        }
        Ok(plan)
    }
}
