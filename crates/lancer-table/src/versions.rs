//! Finding manifests: both naming schemes (`N.manifest` and the V2
//! `{u64::MAX - N:020}.manifest`, which sorts newest first), tags under `_refs/tags/`.

use std::path::{Path, PathBuf};

use crate::{Result, TableError};

/// A version and the file that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionFile {
    /// The version number.
    pub version: u64,
    /// The manifest file.
    pub path: PathBuf,
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

/// Every version of the dataset at `root`, oldest first.
pub fn list_versions(root: &Path) -> Result<Vec<VersionFile>> {
    let dir = root.join("_versions");
    let rd = std::fs::read_dir(&dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            TableError::NotFound {
                what: format!("{} is not a Lance dataset (no _versions/)", root.display()),
            }
        } else {
            TableError::io(&dir, e)
        }
    })?;
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| TableError::io(&dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(version) = parse_manifest_name(&name) {
            out.push(VersionFile {
                version,
                path: e.path(),
            });
        }
    }
    out.sort_by_key(|v| v.version);
    Ok(out)
}

/// The manifest file of `version`, whichever naming scheme holds it.
pub fn manifest_path(root: &Path, version: u64) -> Result<PathBuf> {
    let dir = root.join("_versions");
    for p in [
        dir.join(format!("{:020}.manifest", u64::MAX - version)),
        dir.join(format!("{version}.manifest")),
    ] {
        if p.exists() {
            return Ok(p);
        }
    }
    Err(TableError::NotFound {
        what: format!("version {version} of {}", root.display()),
    })
}

/// The version a tag points at.
pub fn tag_version(root: &Path, tag: &str) -> Result<u64> {
    if tag.is_empty() || tag.contains('/') || tag.contains("..") {
        return Err(TableError::NotFound {
            what: format!("tag {tag:?} (invalid name)"),
        });
    }
    let p = root.join("_refs/tags").join(format!("{tag}.json"));
    let text = std::fs::read_to_string(&p).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            TableError::NotFound {
                what: format!("tag {tag:?}"),
            }
        } else {
            TableError::io(&p, e)
        }
    })?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| TableError::corrupt(format!("tag file {}: {e}", p.display())))?;
    v.get("version")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| TableError::corrupt(format!("tag file {} has no version", p.display())))
}

/// Tags and the versions they point at, by name.
pub fn list_tags(root: &Path) -> Result<Vec<(String, u64)>> {
    let dir = root.join("_refs/tags");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(tag) = name.strip_suffix(".json") {
            out.push((tag.to_string(), tag_version(root, tag)?));
        }
    }
    out.sort();
    Ok(out)
}

/// Branches (`_refs/branches/{name}.json`); each branch is a dataset of its own under
/// `tree/{name}/` whose manifests name the parent's files through base paths.
pub fn list_branches(root: &Path) -> Result<Vec<String>> {
    let Ok(rd) = std::fs::read_dir(root.join("_refs/branches")) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<String> = rd
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .map(String::from)
        })
        .collect();
    out.sort();
    Ok(out)
}

/// The directory of branch `name`.
pub fn branch_root(root: &Path, name: &str) -> Result<std::path::PathBuf> {
    if name.is_empty() || name.contains("..") || name.starts_with('/') {
        return Err(TableError::NotFound {
            what: format!("branch {name:?} (invalid name)"),
        });
    }
    if !root
        .join("_refs/branches")
        .join(format!("{name}.json"))
        .exists()
    {
        return Err(TableError::NotFound {
            what: format!("branch {name:?} of {}", root.display()),
        });
    }
    Ok(root.join("tree").join(name))
}

/// Creates tag `name` pointing at `version` (refuses to replace an existing tag).
pub fn create_tag(root: &Path, name: &str, version: u64, manifest_size: u64) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.contains("..") || name.starts_with('.') {
        return Err(TableError::NotFound {
            what: format!("tag name {name:?} (use letters, digits, '-', '_' and '.')"),
        });
    }
    manifest_path(root, version)?;
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let now = rfc3339(d.as_secs(), d.subsec_nanos());
    let body = serde_json::json!({
        "branch": null,
        "version": version,
        "createdAt": now,
        "updatedAt": now,
        "manifestSize": manifest_size,
        "metadata": {},
    })
    .to_string();
    let p = root.join("_refs/tags").join(format!("{name}.json"));
    if !crate::commit::put_if_absent(&p, body.as_bytes())? {
        return Err(TableError::Conflict {
            what: format!("tag {name:?} already exists"),
        });
    }
    Ok(())
}

/// Deletes tag `name`.
pub fn delete_tag(root: &Path, name: &str) -> Result<()> {
    tag_version(root, name)?;
    let p = root.join("_refs/tags").join(format!("{name}.json"));
    std::fs::remove_file(&p).map_err(|e| TableError::io(&p, e))
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

/// The latest version: from `_versions/latest_version_hint.json` when the hinted
/// version exists and no newer one does (a few file checks instead of a listing);
/// otherwise from a listing.
pub fn latest_version(root: &Path) -> Result<VersionFile> {
    let hint = std::fs::read(root.join("_versions/latest_version_hint.json"))
        .ok()
        .and_then(|t| parse_version_hint(&t));
    if let Some(mut v) = hint {
        if let Ok(mut path) = manifest_path(root, v) {
            // The hint is best-effort: walk forward past versions committed after it.
            while let Ok(next) = manifest_path(root, v + 1) {
                v += 1;
                path = next;
            }
            return Ok(VersionFile { version: v, path });
        }
    }
    list_versions(root)?
        .pop()
        .ok_or_else(|| TableError::NotFound {
            what: format!("{} has no versions", root.display()),
        })
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
