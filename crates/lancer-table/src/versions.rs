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
