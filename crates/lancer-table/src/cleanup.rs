//! Version history: listing versions with their timestamps, and cleaning up old ones
//! (spec: "Table format" → cleanup). Cleanup never removes the latest version or a
//! tagged one, and only deletes files older than the cutoff, so that a writer's files
//! that are not committed yet are left alone.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::deletion::deletion_path;
use crate::manifest::Manifest;
use crate::versions::{list_tags, list_versions};
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
}

/// Every version of the dataset at `root`, oldest first.
pub fn versions(root: &Path) -> Result<Vec<VersionInfo>> {
    list_versions(root)?
        .into_iter()
        .map(|v| {
            let bytes = std::fs::read(&v.path).map_err(|e| TableError::io(&v.path, e))?;
            let m = Manifest::parse(&bytes)?;
            let ts =
                m.pb.timestamp
                    .as_ref()
                    .map_or((0, 0), |t| (t.seconds, t.nanos));
            Ok(VersionInfo {
                version: v.version,
                timestamp: ts,
                rows: m.count_rows(),
                operation: crate::commit::read_transaction(root, &m.pb)
                    .and_then(|t| t.operation)
                    .map_or(String::new(), |op| {
                        crate::commit::operation_name(&op).to_string()
                    }),
            })
        })
        .collect()
}

/// What a cleanup removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupStats {
    /// Manifests removed.
    pub versions_removed: usize,
    /// Data, deletion and transaction files removed.
    pub files_removed: usize,
    /// Bytes freed.
    pub bytes_removed: u64,
}

fn older_than(p: &Path, cutoff: SystemTime) -> bool {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .map(|t| t < cutoff)
        .unwrap_or(false)
}

/// Removes versions committed more than `older_than` ago (except the latest and tagged
/// ones) and the files no remaining version references.
pub fn cleanup(root: &Path, older_than_age: Duration) -> Result<CleanupStats> {
    let cutoff = SystemTime::now() - older_than_age;
    let cutoff_since_epoch = cutoff.duration_since(UNIX_EPOCH).unwrap_or_default();
    let all = list_versions(root)?;
    let latest = all.last().map(|v| v.version);
    let tagged: HashSet<u64> = list_tags(root)?.into_iter().map(|(_, v)| v).collect();
    let mut keep_refs: HashSet<std::path::PathBuf> = HashSet::new();
    let mut stats = CleanupStats::default();
    let mut doomed = Vec::new();
    for v in &all {
        let bytes = std::fs::read(&v.path).map_err(|e| TableError::io(&v.path, e))?;
        let m = Manifest::parse(&bytes)?;
        let ts = m.pb.timestamp.as_ref().map_or(Duration::ZERO, |t| {
            Duration::new(
                u64::try_from(t.seconds).unwrap_or(0),
                u32::try_from(t.nanos).unwrap_or(0),
            )
        });
        let keep =
            Some(v.version) == latest || tagged.contains(&v.version) || ts >= cutoff_since_epoch;
        if !keep {
            doomed.push(v.path.clone());
            continue;
        }
        for f in &m.pb.fragments {
            for d in &f.files {
                if d.base_id.is_none() {
                    keep_refs.insert(root.join("data").join(&d.path));
                }
            }
            if let Some(d) = &f.deletion_file {
                keep_refs.insert(deletion_path(root, f.id, d));
            }
        }
        if !m.pb.transaction_file.is_empty() {
            keep_refs.insert(root.join("_transactions").join(&m.pb.transaction_file));
        }
    }
    for p in doomed {
        stats.bytes_removed += std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        std::fs::remove_file(&p).map_err(|e| TableError::io(&p, e))?;
        stats.versions_removed += 1;
    }
    for dir in ["data", "_deletions", "_transactions"] {
        let Ok(rd) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if keep_refs.contains(&p) || !older_than(&p, cutoff) {
                continue;
            }
            stats.bytes_removed += e.metadata().map(|m| m.len()).unwrap_or(0);
            std::fs::remove_file(&p).map_err(|e| TableError::io(&p, e))?;
            stats.files_removed += 1;
        }
    }
    Ok(stats)
}
