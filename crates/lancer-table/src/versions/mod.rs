//! Finding manifests: both naming schemes (`N.manifest` and the V2
//! `{u64::MAX - N:020}.manifest`, which sorts newest first), tags under `_refs/tags/`,
//! branches under `_refs/branches/`; all through the dataset's [`Store`].

use std::collections::BTreeMap;

use lancer_io::Store;

use crate::{Result, TableError};

pub mod branch;
mod cleanup;

pub(crate) use cleanup::cleanup_from;
pub use cleanup::{
    cleanup, cleanup_retaining, explain_cleanup, version_summaries, versions, CleanupCandidate,
    CleanupStats, Explained, Summary, VersionInfo, UNVERIFIED_GRACE,
};

/// A version and the file that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionFile {
    /// The version number.
    pub version: u64,
    /// The manifest file, relative to the dataset root (`_versions/…`).
    pub path: String,
}

/// Parses a manifest file name into its version.
pub fn parse_manifest_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".manifest")?;
    let n: u64 = stem.parse().ok()?;
    if stem.len() == 20 {
        Some(u64::MAX - n)
    } else {
        Some(n)
    }
}

/// Every version of the dataset in `store`, oldest first (one listing).
pub fn list_versions(store: &Store) -> Result<Vec<VersionFile>> {
    let entries = store.list("_versions")?;
    let mut out: Vec<VersionFile> = entries
        .iter()
        .filter(|e| !e.name.contains('/'))
        .filter_map(|e| {
            parse_manifest_name(&e.name).map(|version| VersionFile {
                version,
                path: format!("_versions/{}", e.name),
            })
        })
        .collect();
    if out.is_empty() && entries.is_empty() {
        return Err(TableError::NotFound {
            what: format!("{} is not a Lance dataset (no _versions/)", store.uri()),
        });
    }
    out.sort_by_key(|v| v.version);
    Ok(out)
}

/// The two names a version's manifest can have: V2 naming first, then V1.
fn manifest_names(version: u64) -> [String; 2] {
    [
        format!("_versions/{:020}.manifest", u64::MAX - version),
        format!("_versions/{version}.manifest"),
    ]
}

/// The manifest of `version` (its path and bytes), whichever naming scheme holds it.
pub fn read_manifest_file(store: &Store, version: u64) -> Result<(String, bytes::Bytes)> {
    for p in manifest_names(version) {
        if let Some(b) = store.get_opt(&p)? {
            return Ok((p, b));
        }
    }
    Err(TableError::NotFound {
        what: format!("version {version} of {}", store.uri()),
    })
}

/// The manifest file of `version`, whichever naming scheme holds it.
pub fn manifest_path(store: &Store, version: u64) -> Result<String> {
    for p in manifest_names(version) {
        if store.size(&p)?.is_some() {
            return Ok(p);
        }
    }
    Err(TableError::NotFound {
        what: format!("version {version} of {}", store.uri()),
    })
}

fn check_ref_name(kind: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.contains("..") || name.starts_with('.') {
        return Err(TableError::NotFound {
            what: format!("{kind} {name:?} (invalid name: use letters, digits, '-', '_' and '.')"),
        });
    }
    Ok(())
}

/// The version a tag points at.
pub fn tag_version(store: &Store, tag: &str) -> Result<u64> {
    check_ref_name("tag", tag)?;
    let p = format!("_refs/tags/{tag}.json");
    let text = store.get_opt(&p)?.ok_or_else(|| TableError::NotFound {
        what: format!("tag {tag:?}"),
    })?;
    tag_file_version(&text, &store.display(&p))
}

fn tag_file_version(text: &[u8], shown: &str) -> Result<u64> {
    let v: serde_json::Value = serde_json::from_slice(text)
        .map_err(|e| TableError::corrupt(format!("tag file {shown}: {e}")))?;
    v.get("version")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| TableError::corrupt(format!("tag file {shown} has no version")))
}

/// Tags and the versions they point at, by name.
pub fn list_tags(store: &Store) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for e in store.list("_refs/tags")? {
        if let Some(tag) = e.name.strip_suffix(".json").filter(|t| !t.contains('/')) {
            out.push((tag.to_string(), tag_version(store, tag)?));
        }
    }
    out.sort();
    Ok(out)
}

/// Branch names (`_refs/branches/{name}.json`, see [`crate::versions::branch`]); each branch is a
/// dataset of its own under `tree/{name}/` whose manifests name the parent's files
/// through base paths.
pub fn list_branches(store: &Store) -> Result<Vec<String>> {
    Ok(crate::versions::branch::list(store)?
        .into_iter()
        .map(|(n, _)| n)
        .collect())
}

/// The store of branch `name` (its `tree/{name}` directory).
pub fn branch_root(store: &Store, name: &str) -> Result<Store> {
    crate::versions::branch::store_of(store, Some(name))
}

/// A tag file's text in pylance 14's layout (two-space indented JSON, keys in its
/// order: `branch`, `version`, `createdAt`, `updatedAt`, `manifestSize`, `metadata`;
/// metadata keys sorted).
fn tag_text(
    branch: Option<&str>,
    version: u64,
    created: &str,
    updated: &str,
    manifest_size: u64,
    metadata: &BTreeMap<String, String>,
) -> String {
    let q = |s: &str| serde_json::Value::from(s).to_string();
    let md = if metadata.is_empty() {
        "{}".to_string()
    } else {
        let entries: Vec<String> = metadata
            .iter()
            .map(|(k, v)| format!("    {}: {}", q(k), q(v)))
            .collect();
        format!("{{\n{}\n  }}", entries.join(",\n"))
    };
    format!(
        "{{\n  \"branch\": {},\n  \"version\": {version},\n  \"createdAt\": {},\n  \"updatedAt\": {},\n  \"manifestSize\": {manifest_size},\n  \"metadata\": {md}\n}}",
        branch.map_or("null".to_string(), q),
        q(created),
        q(updated),
    )
}

fn now_rfc3339() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(d.as_secs(), d.subsec_nanos())
}

/// Creates tag `name` pointing at `version` (refuses to replace an existing tag).
pub fn create_tag(store: &Store, name: &str, version: u64, manifest_size: u64) -> Result<()> {
    check_ref_name("tag name", name)?;
    manifest_path(store, version)?;
    let now = now_rfc3339();
    let body = tag_text(None, version, &now, &now, manifest_size, &BTreeMap::new());
    let p = format!("_refs/tags/{name}.json");
    if !store.put_if_absent(&p, body.into())? {
        return Err(TableError::Conflict {
            what: format!("tag {name:?} already exists"),
        });
    }
    Ok(())
}

/// A tag as its file records it (pylance 14's fields; absent ones defaulted): the
/// branch (None: main), version, creation and update times (RFC 3339 text, empty
/// when the file has none), the size of the tagged manifest, and metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct TagRecord {
    /// The branch the version belongs to (None: main).
    pub branch: Option<String>,
    /// The tagged version.
    pub version: u64,
    /// When the tag was created.
    pub created_at: String,
    /// When the tag last moved to another version.
    pub updated_at: String,
    /// Bytes of the tagged version's manifest.
    pub manifest_size: u64,
    /// The tag's metadata.
    pub metadata: BTreeMap<String, String>,
}

/// The record of tag `name`; a missing tag is NotFound, a file that does not parse
/// is corrupt.
pub fn tag_record(store: &Store, name: &str) -> Result<TagRecord> {
    check_ref_name("tag", name)?;
    let p = format!("_refs/tags/{name}.json");
    let text = store.get_opt(&p)?.ok_or_else(|| TableError::NotFound {
        what: format!("tag {name:?}"),
    })?;
    let shown = store.display(&p);
    let version = tag_file_version(&text, &shown)?;
    let v: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| TableError::corrupt(format!("tag file {shown}: {e}")))?;
    let text_of = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
    let mut metadata = BTreeMap::new();
    if let Some(m) = v.get("metadata").and_then(|m| m.as_object()) {
        for (k, x) in m {
            let x = x.as_str().ok_or_else(|| {
                TableError::corrupt(format!("tag file {shown}: metadata {k:?} is not a string"))
            })?;
            metadata.insert(k.clone(), x.to_string());
        }
    }
    Ok(TagRecord {
        branch: v.get("branch").and_then(|b| b.as_str()).map(String::from),
        version,
        created_at: text_of("createdAt"),
        updated_at: text_of("updatedAt"),
        manifest_size: v.get("manifestSize").and_then(|x| x.as_u64()).unwrap_or(0),
        metadata,
    })
}

/// Every tag's record, by name.
pub fn list_tag_records(store: &Store) -> Result<Vec<(String, TagRecord)>> {
    list_tags(store)?
        .into_iter()
        .map(|(n, _)| tag_record(store, &n).map(|r| (n, r)))
        .collect()
}

fn write_tag(store: &Store, name: &str, r: &TagRecord) -> Result<()> {
    let body = tag_text(
        r.branch.as_deref(),
        r.version,
        &r.created_at,
        &r.updated_at,
        r.manifest_size,
        &r.metadata,
    );
    Ok(store.put(&format!("_refs/tags/{name}.json"), body.into())?)
}

/// Moves tag `name` to `version` (of main) as pylance 14's `update`: its creation time
/// and metadata stay, its update time becomes now. A missing tag is NotFound.
pub fn update_tag(store: &Store, name: &str, version: u64, manifest_size: u64) -> Result<()> {
    let mut r = tag_record(store, name)?;
    manifest_path(store, version)?;
    r.branch = None;
    r.version = version;
    r.manifest_size = manifest_size;
    r.updated_at = now_rfc3339();
    write_tag(store, name, &r)
}

/// Replaces the whole metadata of tag `name`, nothing else (its update time stays,
/// as in pylance 14). A missing tag is NotFound.
pub fn replace_tag_metadata(
    store: &Store,
    name: &str,
    metadata: BTreeMap<String, String>,
) -> Result<()> {
    let mut r = tag_record(store, name)?;
    r.metadata = metadata;
    write_tag(store, name, &r)
}

/// Deletes tag `name`.
pub fn delete_tag(store: &Store, name: &str) -> Result<()> {
    tag_version(store, name)?;
    Ok(store.delete(&format!("_refs/tags/{name}.json"))?)
}

/// Formats a UTC instant as RFC 3339 (`2026-11-29T16:29:20.040362032Z`).
pub fn rfc3339(secs: u64, nanos: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{nanos:09}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The version a `latest_version_hint.json` names; None when the hint is damaged (it
/// is best-effort: callers fall back to a listing).
pub fn parse_version_hint(bytes: &[u8]) -> Option<u64> {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v.get("version").and_then(|x| x.as_u64()))
}

/// The latest version. On object stores: one listing of `_versions/` (one request
/// below 1,000 versions; a hint would cost a read plus two probes of the next
/// version's names). On local disk: `_versions/latest_version_hint.json` when the
/// hinted version exists and no newer one does (a few file checks instead of reading
/// a large directory), else the listing.
pub fn latest_version(store: &Store) -> Result<VersionFile> {
    let hint = match store.local_root() {
        Some(_) => store
            .get_opt("_versions/latest_version_hint.json")
            .ok()
            .flatten()
            .and_then(|t| parse_version_hint(&t)),
        None => None,
    };
    if let Some(mut v) = hint {
        if let Ok(mut path) = manifest_path(store, v) {
            // The hint is best-effort: walk forward past versions committed after it.
            // A dataset on the v2 naming scheme never goes back to the v1 names, so
            // only the v2 name of the next version is probed there.
            while let Some(next_v) = v.checked_add(1) {
                let names = manifest_names(next_v);
                let candidates = if path == manifest_names(v)[0] {
                    &names[..1]
                } else {
                    &names[..]
                };
                let mut found = None;
                for p in candidates {
                    // a failed probe ends the walk (the hint is best-effort)
                    if store.size(p).ok().flatten().is_some() {
                        found = Some(p.clone());
                        break;
                    }
                }
                match found {
                    Some(next) => {
                        v = next_v;
                        path = next;
                    }
                    None => break,
                }
            }
            return Ok(VersionFile { version: v, path });
        }
    }
    list_versions(store)?
        .pop()
        .ok_or_else(|| TableError::NotFound {
            what: format!("{} has no versions", store.uri()),
        })
}

/// Renames every manifest named by the older scheme (`{version}.manifest`) to the newer
/// one (`{u64::MAX - version:020}.manifest`, which lists the latest version first), as
/// pylance's `migrate_manifest_paths_v2`: afterwards new versions are written with the
/// newer names. Idempotent; a reader during the migration finds each version under one
/// name or the other. Returns how many manifests were renamed.
pub fn migrate_manifest_paths_v2(store: &Store) -> Result<usize> {
    let mut moved = 0;
    for v in list_versions(store)? {
        let [newer, older] = manifest_names(v.version);
        if v.path != older {
            continue;
        }
        let bytes = store.get(&older)?;
        // (a newer-named copy already there: an earlier migration stopped half way)
        store.put_if_absent(&newer, bytes)?;
        store.delete(&older)?;
        moved += 1;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(super::rfc3339(0, 0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            super::rfc3339(1_795_970_078, 5),
            "2026-11-29T16:34:38.000000005Z"
        );
        assert_eq!(
            super::rfc3339(951_782_400, 0),
            "2000-02-29T00:00:00.000000000Z"
        );
    }
}
