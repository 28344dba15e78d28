//! Version history: listing versions with their timestamps, and cleaning up old ones
//! (spec: "Table format" → cleanup). Cleanup never removes the latest version, a
//! tagged one or one a branch was created from (spec: branches; on a branch only files
//! under its own `tree/{name}/` are candidates, never the parent's), and only deletes
//! files older than the cutoff, so that a writer's files that are not committed yet are
//! left alone.

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lancer_io::Store;

use crate::commit::Manifest;
use crate::dataset::deletion_path;
use crate::versions::list_versions;
use crate::{Result, TableError};

/// A version and when it was committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionInfo {
    /// The version number.
    pub version: u64,
    /// Commit time (seconds, nanoseconds since the Unix epoch).
    pub timestamp: (i64, i32),
    /// Rows in the version.
    pub rows: u64,
    /// The operation that made it (its transaction's kind; empty when unrecorded).
    pub operation: String,
    /// Counts over its fragments, as pylance's `versions()` reports them.
    pub summary: Summary,
}

/// A version's fragments counted (pylance's manifest summary: the `metadata` of each
/// entry of `versions()`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Fragments.
    pub fragments: u64,
    /// Data files.
    pub data_files: u64,
    /// Rows in data files, deleted ones included.
    pub data_file_rows: u64,
    /// Fragments with a deletion file.
    pub deletion_files: u64,
    /// Rows the deletion files delete.
    pub deletion_file_rows: u64,
    /// Bytes of the data files whose size the manifest records.
    pub files_size: u64,
    /// Live rows.
    pub rows: u64,
}

impl Summary {
    /// The counts of `m`'s fragments.
    pub fn of(m: &crate::pb::Manifest) -> Summary {
        let mut s = Summary {
            fragments: m.fragments.len() as u64,
            ..Default::default()
        };
        for f in &m.fragments {
            s.data_files += f.files.len() as u64;
            s.files_size += f.files.iter().map(|d| d.file_size_bytes).sum::<u64>();
            let deleted = f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows);
            if f.deletion_file.is_some() {
                s.deletion_files += 1;
            }
            s.deletion_file_rows += deleted;
            s.rows += f.physical_rows.saturating_sub(deleted);
        }
        s.data_file_rows = s.rows + s.deletion_file_rows;
        s
    }

    /// pylance's names and values (all as text, as pylance gives them).
    pub fn entries(&self) -> Vec<(&'static str, String)> {
        vec![
            ("total_data_file_rows", self.data_file_rows.to_string()),
            ("total_data_files", self.data_files.to_string()),
            (
                "total_deletion_file_rows",
                self.deletion_file_rows.to_string(),
            ),
            ("total_deletion_files", self.deletion_files.to_string()),
            ("total_files_size", self.files_size.to_string()),
            ("total_fragments", self.fragments.to_string()),
            ("total_rows", self.rows.to_string()),
        ]
    }
}

/// Every version of the dataset in `store`, oldest first.
pub fn versions(store: &Store) -> Result<Vec<VersionInfo>> {
    versions_reading(store, true)
}

/// [`versions`] without reading each version's transaction file (`operation` left
/// empty): the manifests alone, one read per version.
pub fn version_summaries(store: &Store) -> Result<Vec<VersionInfo>> {
    versions_reading(store, false)
}

fn versions_reading(store: &Store, operations: bool) -> Result<Vec<VersionInfo>> {
    list_versions(store)?
        .into_iter()
        .map(|v| {
            let bytes = store.get(&v.path)?;
            let m = Manifest::parse(&bytes)?;
            let ts =
                m.pb.timestamp
                    .as_ref()
                    .map_or((0, 0), |t| (t.seconds, t.nanos));
            Ok(VersionInfo {
                version: v.version,
                timestamp: ts,
                rows: m.count_rows(),
                operation: operations
                    .then(|| crate::commit::read_transaction(store, &m.pb))
                    .flatten()
                    .and_then(|t| t.operation)
                    .map_or(String::new(), |op| {
                        crate::commit::operation_name(&op).to_string()
                    }),
                summary: Summary::of(&m.pb),
            })
        })
        .collect()
}

/// What a cleanup removed (pylance's counts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupStats {
    /// Manifests removed.
    pub versions_removed: usize,
    /// Data files removed.
    pub data_files_removed: usize,
    /// Deletion files removed.
    pub deletion_files_removed: usize,
    /// Transaction files removed.
    pub transaction_files_removed: usize,
    /// Index files removed (each file of a segment directory).
    pub index_files_removed: usize,
    /// Bytes freed.
    pub bytes_removed: u64,
}

impl CleanupStats {
    /// Files of every kind removed (manifests aside).
    pub fn files_removed(&self) -> usize {
        self.data_files_removed
            + self.deletion_files_removed
            + self.transaction_files_removed
            + self.index_files_removed
    }
}

/// Removes versions committed more than `older_than` ago (except the latest and tagged
/// ones) and the files no remaining version references (only files older than the
/// cutoff: a writer's files not yet committed stay).
pub fn cleanup(store: &Store, older_than_age: Duration) -> Result<CleanupStats> {
    cleanup_retaining(store, Some(older_than_age), None, false, false)
}

/// Unreferenced files younger than this stay when versions are removed by count alone
/// (a writer may be about to commit them), unless the caller says they are
/// unverified garbage — pylance's `delete_unverified` rule.
pub const UNVERIFIED_GRACE: Duration = Duration::from_secs(7 * 24 * 3600);

/// [`cleanup`] with pylance's two limits: a version is removed when it is older than
/// `older_than` (if given) and not among the newest `retain_versions` (if given); the
/// latest and tagged versions (and those branches start from) always stay. A file no
/// kept version names, older than the oldest version kept, is removed when a removed
/// version named it; a file no version names (unverified) only when it is older than
/// [`UNVERIFIED_GRACE`] (a concurrent writer may be about to commit it) or with
/// `delete_unverified`, as pylance decides. With `error_if_tagged`, a tagged version the
/// limits would remove is an error naming its tags (nothing is removed), as pylance's
/// default; without, tagged versions stay.
pub fn cleanup_retaining(
    store: &Store,
    older_than: Option<Duration>,
    retain_versions: Option<usize>,
    delete_unverified: bool,
    error_if_tagged: bool,
) -> Result<CleanupStats> {
    cleanup_from(
        store,
        older_than,
        retain_versions,
        delete_unverified,
        error_if_tagged,
        None,
    )
}

/// [`cleanup_retaining`] as a writer that read version `keep_from` runs it: that
/// version and every newer one stay (the latest as the writer knew it, and whatever
/// was committed since), as pylance's automatic cleanup after a commit behaves.
pub(crate) fn cleanup_from(
    store: &Store,
    older_than: Option<Duration>,
    retain_versions: Option<usize>,
    delete_unverified: bool,
    error_if_tagged: bool,
    keep_from: Option<u64>,
) -> Result<CleanupStats> {
    let limits = Limits {
        older_than,
        retain_versions,
        delete_unverified,
        error_if_tagged,
        keep_from,
    };
    run(store, &limits, None)
}

/// A file a cleanup would remove (see [`explain_cleanup`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupCandidate {
    /// Its path under the dataset root.
    pub path: String,
    /// `manifest`, `data`, `deletion`, `transaction` or `index`.
    pub kind: &'static str,
    /// Its size in bytes.
    pub size: u64,
    /// No removed version names it (a file left by a writer that never committed).
    pub unverified: bool,
}

/// What [`cleanup_retaining`] with these limits would remove, without removing
/// anything: its statistics, the files, and the versions branches were created from
/// (`(branch, version, false)`: they stay).
pub fn explain_cleanup(
    store: &Store,
    older_than: Option<Duration>,
    retain_versions: Option<usize>,
    delete_unverified: bool,
    error_if_tagged: bool,
) -> Result<Explained> {
    let limits = Limits {
        older_than,
        retain_versions,
        delete_unverified,
        error_if_tagged,
        keep_from: None,
    };
    let mut plan = Plan::default();
    let stats = run(store, &limits, Some(&mut plan))?;
    // pylance's order of kinds (a truncated listing keeps the first ones)
    let rank = |k: &str| match k {
        "transaction" => 0,
        "data" => 1,
        "index" => 2,
        "deletion" => 3,
        _ => 4,
    };
    plan.files.sort_by_key(|f| rank(f.kind));
    Ok((stats, plan.files, plan.branches))
}

/// [`explain_cleanup`]'s answer: statistics, files, branches' starting versions.
pub type Explained = (
    CleanupStats,
    Vec<CleanupCandidate>,
    Vec<(String, u64, bool)>,
);

struct Limits {
    older_than: Option<Duration>,
    retain_versions: Option<usize>,
    delete_unverified: bool,
    error_if_tagged: bool,
    keep_from: Option<u64>,
}

/// What a dry run records instead of deleting.
#[derive(Default)]
struct Plan {
    files: Vec<CleanupCandidate>,
    /// Branches' starting versions: `(branch, version, whether cleanup removes it —
    /// never: a version a branch starts from stays)`.
    branches: Vec<(String, u64, bool)>,
}

/// The files `m` (whose bytes are `bytes`) names under the dataset root.
fn referenced(bytes: &[u8], m: &Manifest) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for f in &m.pb.fragments {
        for d in &f.files {
            if d.base_id.is_none() {
                out.push(format!("data/{}", d.path));
            }
        }
        if let Some(d) = f.deletion_file.as_ref().filter(|d| d.base_id.is_none()) {
            out.push(deletion_path(f.id, d));
        }
    }
    if !m.pb.transaction_file.is_empty() {
        out.push(format!("_transactions/{}", m.pb.transaction_file));
    }
    for idx in crate::commit::manifest_indices(bytes, m)? {
        if idx.base_id.is_none() {
            if let Some(u) = idx.uuid.as_ref() {
                out.push(format!("_indices/{}", crate::dataset::uuid_dir(&u.uuid)?));
            }
        }
    }
    Ok(out)
}

/// The data file stem a blob v2 sidecar (`<stem>/<32 bits>.blob` under `data/`)
/// belongs to; `None` for any other path.
fn blob_sidecar_owner(name: &str) -> Option<&str> {
    let (stem, file) = name.split_once('/')?;
    let bits = file.strip_suffix(".blob")?;
    (!stem.is_empty() && bits.len() == 32 && bits.bytes().all(|b| b == b'0' || b == b'1'))
        .then_some(stem)
}

fn run(store: &Store, limits: &Limits, mut plan: Option<&mut Plan>) -> Result<CleanupStats> {
    let Limits {
        older_than,
        retain_versions,
        delete_unverified,
        error_if_tagged,
        keep_from,
    } = *limits;
    let all = list_versions(store)?;
    let latest = all.last().map(|v| v.version);
    let keep_from = keep_from.or(latest).unwrap_or(0);
    // a branch's store: its tags and branches are the main root's (spec: branches)
    let branch = match all.last() {
        Some(v) => Manifest::parse(&store.get(&v.path)?)?.pb.branch,
        None => None,
    };
    let root = crate::versions::branch::main_root(store, branch.as_deref())?;
    // (only this branch's tags: a branch's version numbers repeat main's)
    let tags = crate::versions::branch::tags_of(&root, branch.as_deref())?;
    let tagged: HashSet<u64> = tags.iter().map(|(_, v)| *v).collect();
    // versions other branches start from stay: their manifests name this one's files
    let branch_list = crate::versions::branch::list(&root)?;
    let branched: HashSet<u64> =
        crate::versions::branch::versions_branched_from(&branch_list, branch.as_deref())
            .into_iter()
            .collect();
    let mut doomed_refs: HashSet<String> = HashSet::new();
    let mut tagged_old: Vec<&str> = Vec::new();
    // versions kept for their rank (newest first)
    let ranked: HashSet<u64> = match retain_versions {
        Some(n) => all.iter().rev().take(n).map(|v| v.version).collect(),
        None => HashSet::new(),
    };
    // (an age beyond the clock's range: every version is young enough to go)
    let age_cutoff = older_than.map(|age| {
        SystemTime::now()
            .checked_sub(age)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .unwrap_or_default()
    });
    let mut keep_refs: HashSet<String> = HashSet::new();
    let mut stats = CleanupStats::default();
    let mut doomed = Vec::new();
    let mut oldest_kept: Option<Duration> = None;
    for v in &all {
        let bytes = store.get(&v.path)?;
        let m = Manifest::parse(&bytes)?;
        let ts = m.pb.timestamp.as_ref().map_or(Duration::ZERO, |t| {
            Duration::new(
                u64::try_from(t.seconds).unwrap_or(0),
                u32::try_from(t.nanos).unwrap_or(0),
            )
        });
        let young = match age_cutoff {
            Some(c) => ts >= c,
            None => retain_versions.is_none(),
        };
        let wanted = v.version >= keep_from || ranked.contains(&v.version) || young;
        if !wanted && tagged.contains(&v.version) {
            tagged_old.extend(
                tags.iter()
                    .filter(|(_, t)| *t == v.version)
                    .map(|(n, _)| n.as_str()),
            );
        }
        let keep = wanted || tagged.contains(&v.version) || branched.contains(&v.version);
        // (the oldest version the limits keep bounds the files looked at; versions kept
        // only for a tag or a branch do not, as pylance 14 decides)
        if wanted {
            oldest_kept = Some(oldest_kept.map_or(ts, |o| o.min(ts)));
        }
        if !keep {
            doomed.push((v.path.clone(), bytes.len() as u64));
            doomed_refs.extend(referenced(&bytes, &m)?);
            continue;
        }
        keep_refs.extend(referenced(&bytes, &m)?);
    }
    if error_if_tagged && !tagged_old.is_empty() {
        return Err(TableError::Refused {
            what: format!(
                "cleanup would remove {} tagged version(s) (tags {}): delete those tags, or clean up without the tagged-version check (error_if_tagged_old_versions=False keeps tagged versions)",
                tagged_old.len(),
                tagged_old.join(", ")
            ),
        });
    }
    // pylance's rule for files: only those older than the oldest version kept are
    // looked at; one no kept version names goes when a removed version named it
    // (verified), else only when `delete_unverified` or older than
    // UNVERIFIED_GRACE (a writer may be about to commit it)
    let oldest_kept_ms = oldest_kept.map_or(i64::MAX, |t| t.as_millis() as i64);
    let grace_ms = (SystemTime::now() - UNVERIFIED_GRACE)
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    if let Some(plan) = plan.as_deref_mut() {
        for (name, b) in &branch_list {
            let from_here = b
                .parent_branch
                .as_deref()
                .filter(|p| *p != crate::versions::branch::MAIN)
                == branch.as_deref();
            if from_here {
                plan.branches.push((name.clone(), b.parent_version, false));
            }
        }
    }
    for (p, size) in doomed {
        match plan.as_deref_mut() {
            Some(plan) => plan.files.push(CleanupCandidate {
                path: p,
                kind: "manifest",
                size,
                unverified: false,
            }),
            None => store.delete(&p)?,
        }
        stats.bytes_removed += size;
        stats.versions_removed += 1;
    }
    for dir in ["data", "_deletions", "_transactions", "_indices"] {
        for e in store.list(dir)? {
            // data, deletion and transaction files sit directly in their directory, an
            // index's files one level down: anything deeper belongs to something else
            // (a branch named `<this branch>/data`, say) and is never this cleanup's
            let depth = e.name.matches('/').count();
            // a blob v2 sidecar (`data/<stem>/<id>.blob`) belongs to `data/<stem>.lance`
            let sidecar_of = (dir == "data")
                .then(|| blob_sidecar_owner(&e.name))
                .flatten();
            if depth != usize::from(dir == "_indices") && sidecar_of.is_none() {
                continue;
            }
            let p = format!("{dir}/{}", e.name);
            // an index segment's files are kept or removed with their directory
            let owner = match (dir, &sidecar_of) {
                (_, Some(stem)) => format!("data/{stem}.lance"),
                ("_indices", _) => match e.name.split_once('/') {
                    Some((uuid, _)) => format!("{dir}/{uuid}"),
                    None => p.clone(),
                },
                _ => p.clone(),
            };
            let verified = doomed_refs.contains(&owner);
            let maybe_in_progress = !delete_unverified && e.modified_ms >= grace_ms;
            if keep_refs.contains(&owner)
                || e.modified_ms >= oldest_kept_ms
                || (maybe_in_progress && !verified)
            {
                continue;
            }
            match plan.as_deref_mut() {
                Some(plan) => plan.files.push(CleanupCandidate {
                    kind: match dir {
                        "data" => "data",
                        "_deletions" => "deletion",
                        "_transactions" => "transaction",
                        _ => "index",
                    },
                    size: e.size,
                    unverified: !verified,
                    path: p.clone(),
                }),
                None => {
                    store.delete(&p)?;
                    if dir == "_indices" && owner != p {
                        store.remove_empty_dir(&owner);
                    }
                    if let Some(stem) = &sidecar_of {
                        store.remove_empty_dir(&format!("data/{stem}"));
                    }
                }
            }
            stats.bytes_removed += e.size;
            match dir {
                "data" => stats.data_files_removed += 1,
                "_deletions" => stats.deletion_files_removed += 1,
                "_transactions" => stats.transaction_files_removed += 1,
                _ => stats.index_files_removed += 1,
            }
        }
    }
    Ok(stats)
}
