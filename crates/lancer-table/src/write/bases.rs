//! Registered base paths (pylance 14's multi-base datasets; spec: manifest
//! `base_paths`, transaction `Overwrite.initial_bases` and `UpdateBases`): storage
//! locations besides the dataset's own, each with an id, an optional name, a path (a
//! URI or a local path, kept as given) and whether it is another dataset's root.
//!
//! Lancer registers them — at creation (`initial_bases`, ids from 1 as pylance gives
//! them) or later ([`Dataset::add_bases`], one `UpdateBases` commit) — lists them
//! ([`Dataset::base_paths`]), reads files named through them (shallow clones, external
//! blobs relative to a base), and stores an external blob URI that lies under a
//! registered base as that base's id and the relative path, as pylance 14 does.
//! Writing data files into another base (`target_bases`) is not done.

use crate::dataset::Dataset;
use crate::pb;
use crate::pb::transaction::{Operation, UpdateBases};
use crate::{Result, TableError};

/// A base path to register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseSpec {
    /// A name to refer to it by (unique in the dataset).
    pub name: Option<String>,
    /// Where it is: a URI (`s3://bucket/prefix`, `file:///dir`) or a local path.
    pub path: String,
    /// True if the location is another dataset's root.
    pub is_dataset_root: bool,
    /// The id asked for (0: the dataset picks the lowest free one from 1, as pylance).
    pub id: u32,
}

/// `specs` as base path entries after `existing`, as pylance 14 registers them
/// (`write_dataset(initial_bases=)`, `add_bases`): an id asked for is kept, id 0 takes
/// the lowest id from 1 no base has; ids, names and paths checked unique.
pub fn assign(existing: &[pb::BasePath], specs: &[BaseSpec]) -> Result<Vec<pb::BasePath>> {
    let asked: Vec<u32> = specs.iter().map(|s| s.id).filter(|&i| i != 0).collect();
    let taken = |id: u32, out: &[pb::BasePath]| {
        existing.iter().chain(out).any(|b| b.id == id) || asked.contains(&id)
    };
    let mut out: Vec<pb::BasePath> = Vec::with_capacity(specs.len());
    for s in specs {
        let next = if s.id != 0 {
            if existing.iter().chain(&out).any(|b| b.id == s.id) {
                return Err(TableError::invalid(format!(
                    "base path id {} is already registered",
                    s.id
                )));
            }
            s.id
        } else {
            (1..=u32::MAX)
                .find(|&i| !taken(i, &out))
                .ok_or_else(|| TableError::invalid("the base path ids are exhausted"))?
        };
        out.push(entry(existing.iter().chain(&out), s, next)?);
    }
    Ok(out)
}

/// `s` as the entry of id `id`, its path given and its name and path unregistered in
/// `registered`.
fn entry<'a>(
    mut registered: impl Iterator<Item = &'a pb::BasePath> + Clone,
    s: &BaseSpec,
    id: u32,
) -> Result<pb::BasePath> {
    if s.path.trim().is_empty() {
        return Err(TableError::invalid(
            "a base path needs a path (a URI or a directory)",
        ));
    }
    if let Some(n) = &s.name {
        if registered
            .clone()
            .any(|b| b.name.as_deref() == Some(n.as_str()))
        {
            return Err(TableError::invalid(format!(
                "a base path named {n:?} is already registered: give each base its own name"
            )));
        }
    }
    if registered.any(|b| same_path(&b.path, &s.path)) {
        return Err(TableError::invalid(format!(
            "the base path {:?} is already registered",
            s.path
        )));
    }
    Ok(pb::BasePath {
        id,
        name: s.name.clone(),
        is_dataset_root: s.is_dataset_root,
        path: s.path.clone(),
    })
}

/// `specs` as base path entries with the ids they carry, 0 included (what pylance 14's
/// `LanceOperation.Overwrite(initial_bases=)` commits); ids, names and paths checked
/// unique.
pub fn as_given(specs: &[BaseSpec]) -> Result<Vec<pb::BasePath>> {
    let mut out: Vec<pb::BasePath> = Vec::with_capacity(specs.len());
    for s in specs {
        if out.iter().any(|b| b.id == s.id) {
            return Err(TableError::invalid(format!(
                "base path id {} is given twice",
                s.id
            )));
        }
        out.push(entry(out.iter(), s, s.id)?);
    }
    Ok(out)
}

/// Applies an `UpdateBases` operation to the new version's manifest.
pub(crate) fn apply_update(m: &mut pb::Manifest, u: &UpdateBases) -> Result<()> {
    for b in &u.new_bases {
        if m.base_paths.iter().any(|o| o.id == b.id) {
            return Err(TableError::invalid(format!(
                "base path id {} is already registered (a concurrent add_bases?): retry",
                b.id
            )));
        }
        m.base_paths.push(b.clone());
    }
    Ok(())
}

/// Where one of a write's new data files goes: a registered base, or the dataset's
/// own location (`base_id` None).
pub(crate) struct Target {
    /// The base's id in the manifest (None: the dataset's location).
    pub base_id: Option<u32>,
    /// The store at the base's path.
    pub store: lancer_io::Store,
    /// Whether the base is a dataset root (files under `data/`) or a plain directory
    /// (files directly in it), as the spec lays base paths out.
    pub dataset_root: bool,
}

impl Target {
    /// The path of data file `name` in this target's store.
    pub fn file_path(&self, name: &str) -> String {
        data_file_path(self.dataset_root, name)
    }
}

/// Where data file `name` lies in a base's store: under `data/` in a base that is a
/// dataset's root, directly in a plain base (the spec's base path layout).
pub(crate) fn data_file_path(dataset_root: bool, name: &str) -> String {
    if dataset_root {
        format!("data/{name}")
    } else {
        name.to_string()
    }
}

/// The targets of a write's new data files, in turn (pylance 14's `target_bases` /
/// `target_all_bases`; see [`crate::write::WriteParams::target_bases`]): each
/// reference matched to a registered base of `bases` by name, then by path, or to
/// `primary` (the dataset's own location) by its path. Empty when neither is asked
/// (all files in `primary`). An unknown reference, or both asked, is refused as
/// pylance refuses them.
pub(crate) fn targets(
    primary: &lancer_io::Store,
    bases: &[pb::BasePath],
    params: &crate::write::WriteParams,
    options: &lancer_io::StorageOptions,
) -> Result<Vec<Target>> {
    let own = || Target {
        base_id: None,
        store: primary.clone(),
        dataset_root: true,
    };
    let of = |b: &pb::BasePath| -> Result<Target> {
        Ok(Target {
            base_id: Some(b.id),
            store: lancer_io::Store::open_in(&b.path, options, primary.context())?,
            dataset_root: b.is_dataset_root,
        })
    };
    let primary_paths: Vec<String> = std::iter::once(primary.uri().to_string())
        .chain(
            primary
                .local_root()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
                .map(|p| p.to_string_lossy().into_owned()),
        )
        .collect();
    match (params.target_all_bases, params.target_bases.is_empty()) {
        (Some(_), false) => Err(TableError::invalid(
            "Cannot specify target_all_bases together with target_bases: pass one of them",
        )),
        (Some(with_primary), true) => {
            let mut sorted: Vec<&pb::BasePath> = bases.iter().collect();
            sorted.sort_by_key(|b| b.id);
            let mut out = Vec::new();
            if with_primary {
                out.push(own());
            }
            for b in sorted {
                out.push(of(b)?);
            }
            Ok(out)
        }
        (None, _) => params
            .target_bases
            .iter()
            .map(|r| {
                if let Some(b) = bases.iter().find(|b| b.name.as_deref() == Some(r.as_str())) {
                    return of(b);
                }
                if let Some(b) = bases.iter().find(|b| same_path(&b.path, r)) {
                    return of(b);
                }
                let local = std::path::absolute(normalized(r))
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if primary_paths
                    .iter()
                    .any(|p| same_path(p, r) || same_path(p, &local))
                {
                    return Ok(own());
                }
                Err(TableError::invalid(format!(
                    "Base reference {r:?} not found in available bases: name a registered base \
                     (by name or path; a new dataset's initial_bases) or the dataset's own location"
                )))
            })
            .collect(),
    }
}

impl Dataset {
    /// Where a write to this dataset puts its new data files ([`targets`] over its
    /// registered bases).
    pub(crate) fn write_targets(&self, params: &crate::write::WriteParams) -> Result<Vec<Target>> {
        let options = params
            .storage_options
            .as_ref()
            .unwrap_or(self.storage_options());
        targets(self.store(), self.base_paths(), params, options)
    }
}

/// `p` as a comparable location: `file://` URIs and local paths alike, without a
/// trailing slash.
fn normalized(p: &str) -> String {
    let p = p.strip_prefix("file://").unwrap_or(p);
    p.trim_end_matches('/').to_string()
}

fn same_path(a: &str, b: &str) -> bool {
    normalized(a) == normalized(b)
}

/// The registered base (id) holding `uri` and the path relative to it, if any (the
/// longest matching base wins). Id 0 means "no base" in a blob descriptor (a branch's
/// base 0, the main dataset's root, is never used), and a remainder a reader would
/// refuse (an empty or `..` segment) is not relative to anything: such URIs stay
/// absolute.
pub(crate) fn relative_to(bases: &[(u32, String)], uri: &str) -> Option<(u32, String)> {
    let u = normalized(uri);
    bases
        .iter()
        .filter(|(id, _)| *id != 0)
        .filter_map(|(id, base)| {
            let b = normalized(base);
            let rest = u.strip_prefix(&b)?.strip_prefix('/')?;
            let clean = !rest.is_empty()
                && rest
                    .split('/')
                    .all(|s| !s.is_empty() && s != ".." && s != ".");
            clean.then(|| (b.len(), *id, rest.to_string()))
        })
        .max_by_key(|(len, _, _)| *len)
        .map(|(_, id, rest)| (id, rest))
}

impl Dataset {
    /// The dataset's registered base paths.
    pub fn base_paths(&self) -> &[pb::BasePath] {
        &self.manifest().pb.base_paths
    }

    /// The registered bases as (id, path) pairs, for placing external blob URIs.
    pub(crate) fn blob_bases(&self) -> Vec<(u32, String)> {
        self.base_paths()
            .iter()
            .map(|b| (b.id, b.path.clone()))
            .collect()
    }

    /// Registers `specs` as base paths (pylance's `add_bases`) in one commit; returns
    /// the new version.
    pub fn add_bases(
        &self,
        specs: &[BaseSpec],
        properties: &std::collections::HashMap<String, String>,
    ) -> Result<Dataset> {
        if specs.is_empty() {
            return Err(TableError::invalid(
                "add_bases needs at least one base path",
            ));
        }
        let new_bases = assign(self.base_paths(), specs)?;
        let extras = crate::commit::CommitExtras {
            properties: properties.clone(),
            ..Default::default()
        };
        let c = crate::commit::commit_on_base_with(
            self.store(),
            self.commit_base(),
            Operation::UpdateBases(UpdateBases { new_bases }),
            &self.storage_label(),
            self.naming(),
            &extras,
        )?;
        self.committed(&c.path, &c.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_under_a_base_are_relative_to_the_longest() {
        let bases = vec![
            (1, "file:///data".to_string()),
            (2, "/data/images/".to_string()),
        ];
        assert_eq!(
            relative_to(&bases, "file:///data/images/a.png"),
            Some((2, "a.png".to_string()))
        );
        assert_eq!(
            relative_to(&bases, "file:///data/x/b.bin"),
            Some((1, "x/b.bin".to_string()))
        );
        assert_eq!(relative_to(&bases, "file:///database/c"), None);
        // remainders a reader refuses, and base 0 (no base), are not relative
        assert_eq!(relative_to(&bases, "file:///data//x.png"), None);
        assert_eq!(relative_to(&bases, "file:///data/a/../b"), None);
        assert_eq!(relative_to(&[(0, "/data".into())], "/data/x"), None);
        assert_eq!(relative_to(&bases, "s3://b/k"), None);
    }

    #[test]
    fn ids_follow_the_registered_ones_and_names_stay_unique() {
        let spec = |n: &str, p: &str| BaseSpec {
            name: Some(n.into()),
            path: p.into(),
            is_dataset_root: false,
            id: 0,
        };
        let first = assign(&[], &[spec("a", "s3://x/a"), spec("b", "s3://x/b")]).unwrap();
        assert_eq!(first.iter().map(|b| b.id).collect::<Vec<_>>(), [1, 2]);
        let more = assign(&first, &[spec("c", "s3://x/c")]).unwrap();
        assert_eq!(more[0].id, 3);
        // an id asked for is kept; the others take the lowest free (pylance's rule)
        let asked = BaseSpec {
            id: 5,
            ..spec("d", "s3://x/d")
        };
        let mixed = assign(&[], &[asked.clone(), spec("e", "s3://x/e")]).unwrap();
        assert_eq!(mixed.iter().map(|b| b.id).collect::<Vec<_>>(), [5, 1]);
        assert!(assign(
            &mixed,
            &[BaseSpec {
                id: 5,
                ..spec("f", "s3://x/f")
            }]
        )
        .is_err());
        assert_eq!(as_given(&[spec("g", "s3://x/g")]).unwrap()[0].id, 0);
        assert!(assign(&first, &[spec("a", "s3://x/z")]).is_err());
        assert!(assign(&first, &[spec("z", "s3://x/a/")]).is_err());
    }
}
