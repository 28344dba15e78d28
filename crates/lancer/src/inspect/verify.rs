//! Checking a dataset's files against its manifests (`lancer verify`, Python's
//! `validate`), and listing the files a dataset has and the ones its versions reference
//! (Python's `all_files` / `tracked_files`).
//!
//! A check reports problems as sentences instead of stopping at the first: every
//! manifest parses, fragment ids are distinct and ascending, every data file is there
//! with the size and row count the manifest records, every deletion file reads, index
//! segment ids are distinct; with `data`, every column of every fragment decodes.

use std::collections::HashSet;

use lancer_format::reader::FileReader;
use lancer_table::pb;
use lancer_table::versions::list_versions;
use lancer_table::Dataset;

use crate::{Result, Store};

/// What a check has already looked at, so files shared by versions are checked once.
#[derive(Debug, Default)]
pub struct Checked {
    files: HashSet<String>,
    /// (schema, a fragment's files) already read whole.
    fragments: HashSet<(String, String)>,
}

/// Problems of one version (`ds`): see the module docs. `seen` carries what earlier
/// calls checked.
pub fn version_problems(ds: &Dataset, data: bool, seen: &mut Checked) -> Vec<String> {
    let v = ds.version();
    let mut problems = Vec::new();
    let mut ids = HashSet::new();
    let mut previous: Option<u64> = None;
    for frag in ds.fragments() {
        if !ids.insert(frag.id) {
            problems.push(format!(
                "version {v}: fragment id {} appears twice",
                frag.id
            ));
        }
        if previous.is_some_and(|p| frag.id < p) {
            problems.push(format!(
                "version {v}: fragment ids are not ascending ({} after {})",
                frag.id,
                previous.unwrap_or_default()
            ));
        }
        previous = Some(frag.id);
        for df in &frag.files {
            check_data_file(ds, frag, df, seen, &mut problems);
        }
        if let Err(e) = ds.deletions(frag) {
            problems.push(format!("version {v}: fragment {}: {e}", frag.id));
        }
        if data {
            let schema = ds.schema();
            let files: Vec<&str> = frag.files.iter().map(|f| f.path.as_str()).collect();
            if seen
                .fragments
                .insert((schema.to_string(), files.join("\n")))
            {
                if let Err(e) = read_whole_fragment(ds, frag) {
                    problems.push(format!(
                        "version {v}: fragment {}: reading its columns: {e}",
                        frag.id
                    ));
                }
            }
        }
    }
    match ds.indices() {
        Ok(indices) => {
            let mut uuids = HashSet::new();
            for m in indices.iter() {
                let uuid = m.uuid.as_ref().map(|u| u.uuid.clone()).unwrap_or_default();
                if !uuids.insert(uuid) {
                    problems.push(format!(
                        "version {v}: index {:?} lists a segment twice",
                        m.name
                    ));
                }
            }
        }
        Err(e) => problems.push(format!("version {v}: its index section: {e}")),
    }
    problems
}

/// The problems of fragment `fragment_id` of this version alone (its data files present
/// with their sizes and row counts, its deletion file readable), as pylance's
/// `LanceFragment.validate` checks one fragment; a fragment the version does not have
/// is an [`Error::InvalidArgument`](crate::Error::InvalidArgument).
pub fn fragment_problems(ds: &Dataset, fragment_id: u64) -> Result<Vec<String>> {
    let frag = ds
        .fragments()
        .iter()
        .find(|f| f.id == fragment_id)
        .ok_or_else(|| crate::Error::InvalidArgument {
            what: format!(
                "fragment {fragment_id} is not in version {} of the dataset",
                ds.version()
            ),
        })?;
    let mut problems = Vec::new();
    let mut seen = Checked::default();
    for df in &frag.files {
        check_data_file(ds, frag, df, &mut seen, &mut problems);
    }
    if let Err(e) = ds.deletions(frag) {
        problems.push(format!(
            "version {}: fragment {}: {e}",
            ds.version(),
            frag.id
        ));
    }
    Ok(problems)
}

fn check_data_file(
    ds: &Dataset,
    frag: &pb::DataFragment,
    df: &pb::DataFile,
    seen: &mut Checked,
    problems: &mut Vec<String>,
) {
    let v = ds.version();
    let (fstore, rel) = match ds.data_file_location(df) {
        Ok(p) => p,
        Err(e) => {
            problems.push(format!("version {v}: fragment {}: {e}", frag.id));
            return;
        }
    };
    let shown = fstore.display(&rel);
    if !seen.files.insert(shown.clone()) {
        return;
    }
    let size = match fstore.size(&rel) {
        Ok(Some(n)) => n,
        Ok(None) => {
            problems.push(format!(
                "version {v}: fragment {}: data file {shown}: not found",
                frag.id
            ));
            return;
        }
        Err(e) => {
            problems.push(format!(
                "version {v}: fragment {}: data file {shown}: {e}",
                frag.id
            ));
            return;
        }
    };
    if df.file_size_bytes != 0 && size != df.file_size_bytes {
        problems.push(format!(
            "data file {shown}: {size} bytes, the manifest records {}",
            df.file_size_bytes
        ));
    }
    match fstore
        .reader(&rel, Some(size))
        .map_err(lancer_format::FormatError::from)
        .and_then(FileReader::open)
    {
        Ok(r) if r.num_rows() != frag.physical_rows => problems.push(format!(
            "data file {shown}: {} rows, fragment {} records {}",
            r.num_rows(),
            frag.id,
            frag.physical_rows
        )),
        Ok(_) => {}
        Err(e) => problems.push(format!("data file {shown}: {e}")),
    }
}

/// Reads every column of every row of `frag` as `ds`'s schema describes them, a
/// bounded number of rows at a time.
fn read_whole_fragment(ds: &Dataset, frag: &pb::DataFragment) -> lancer_table::Result<()> {
    const ROWS: u64 = 16 * 1024;
    let mut start = 0;
    while start < frag.physical_rows {
        let end = (start + ROWS).min(frag.physical_rows);
        ds.read_runs(frag, None, std::slice::from_ref(&(start..end)))?;
        start = end;
    }
    Ok(())
}

/// Problems of every version of the dataset in `store`, and how many versions there
/// are. A version whose manifest cannot be opened is a problem, not an error.
pub fn dataset_problems(store: &Store, data: bool) -> Result<(Vec<String>, usize)> {
    let versions = list_versions(store)?;
    let mut problems = Vec::new();
    let mut seen = Checked::default();
    for v in &versions {
        match Dataset::open_in(store.clone(), Some(v.version)) {
            Ok(ds) => problems.extend(version_problems(&ds, data, &mut seen)),
            Err(e) => problems.push(format!("version {}: {e}", v.version)),
        }
    }
    Ok((problems, versions.len()))
}

/// A file of the dataset's root (`all_files`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredFile {
    /// Its path below the root (`/`-separated).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Last modified, milliseconds since the Unix epoch.
    pub modified_ms: i64,
}

/// Every file below the dataset's root (branches' trees and other bases are not
/// visited separately: a branch lives under the root and is listed with it).
pub fn all_files(store: &Store) -> Result<Vec<StoredFile>> {
    Ok(store
        .list("")
        .map_err(lancer_table::TableError::from)?
        .into_iter()
        .map(|e| StoredFile {
            path: e.name,
            size: e.size,
            modified_ms: e.modified_ms,
        })
        .collect())
}

/// What a file referenced by a manifest is (pylance's `tracked_files` types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// The version's manifest.
    Manifest,
    /// A data file of a fragment.
    Data,
    /// A fragment's deletion file.
    Deletion,
    /// The version's transaction file.
    Transaction,
    /// A file of an index segment.
    Index,
}

impl FileKind {
    /// pylance's name of the kind.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Manifest => "manifest",
            FileKind::Data => "data file",
            FileKind::Deletion => "deletion file",
            FileKind::Transaction => "transaction file",
            FileKind::Index => "index file",
        }
    }
}

/// A file a version references (`tracked_files`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackedFile {
    /// The version whose manifest references it.
    pub version: u64,
    /// Its path below the dataset's root.
    pub path: String,
    /// What it is.
    pub kind: FileKind,
}

/// The files each version from `min_version` on references (its manifest, data,
/// deletion, transaction and index files; files of other bases left out), version by
/// version, oldest first. `progress` is called after each manifest with the manifests
/// done and their total. An index segment's files are those its manifest entry lists,
/// or (written before entries listed them) those in its directory.
pub fn tracked_files(
    store: &Store,
    min_version: Option<u64>,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<TrackedFile>> {
    let versions: Vec<_> = list_versions(store)?
        .into_iter()
        .filter(|v| min_version.is_none_or(|m| v.version >= m))
        .collect();
    let mut out = Vec::new();
    let mut listed: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (i, v) in versions.iter().enumerate() {
        let ds = Dataset::open_in(store.clone(), Some(v.version))?;
        let mut add = |path: String, kind: FileKind| {
            out.push(TrackedFile {
                version: v.version,
                path,
                kind,
            })
        };
        add(v.path.clone(), FileKind::Manifest);
        let m = &ds.manifest().pb;
        for f in &m.fragments {
            for d in &f.files {
                if d.base_id.is_none() {
                    add(format!("data/{}", d.path), FileKind::Data);
                }
            }
            if let Some(d) = &f.deletion_file {
                if d.base_id.is_none() {
                    add(
                        lancer_table::dataset::deletion_path(f.id, d),
                        FileKind::Deletion,
                    );
                }
            }
        }
        if !m.transaction_file.is_empty() {
            add(
                format!("_transactions/{}", m.transaction_file),
                FileKind::Transaction,
            );
        }
        for idx in ds.indices()?.iter() {
            if idx.base_id.is_some() {
                continue;
            }
            let Some(u) = idx.uuid.as_ref() else { continue };
            let dir = format!("_indices/{}", lancer_table::dataset::uuid_dir(&u.uuid)?);
            if !idx.files.is_empty() {
                for f in &idx.files {
                    add(format!("{dir}/{}", f.path), FileKind::Index);
                }
                continue;
            }
            if !listed.contains_key(&dir) {
                let names = store
                    .list(&dir)
                    .map_err(lancer_table::TableError::from)?
                    .into_iter()
                    .map(|e| e.name)
                    .collect();
                listed.insert(dir.clone(), names);
            }
            for name in &listed[&dir] {
                add(format!("{dir}/{name}"), FileKind::Index);
            }
        }
        progress(i + 1, versions.len());
    }
    Ok(out)
}

/// Deletes the dataset in `store` and everything under its root (pylance's
/// `LanceDataset.drop`). To keep a mistyped path from costing data, the root must hold
/// a manifest that reads; anything else is refused, naming the remedy. A root that
/// does not exist is [`lancer_table::TableError::NotFound`].
pub fn drop_dataset(store: &Store) -> Result<()> {
    let shown = store.uri().to_string();
    let files = store.list("").map_err(lancer_table::TableError::from)?;
    if files.is_empty() && store.local_root().is_none_or(|p| !p.exists()) {
        return Err(lancer_table::TableError::NotFound {
            what: format!("no dataset at {shown} to drop"),
        }
        .into());
    }
    let readable = list_versions(store)
        .ok()
        .and_then(|v| v.last().cloned())
        .is_some_and(|v| Dataset::open_in(store.clone(), Some(v.version)).is_ok());
    if !readable {
        return Err(crate::Error::InvalidArgument {
            what: format!(
                "refusing to drop {shown}: no readable Lance manifest under _versions, so it is \
                 not a dataset root; check that the path names a dataset and not a parent \
                 directory (files that are not a dataset need a storage-level delete)"
            ),
        });
    }
    if let Some(root) = store.local_root() {
        return std::fs::remove_dir_all(root)
            .map_err(|e| lancer_table::TableError::io(root, e).into());
    }
    for f in files {
        store
            .delete(&f.name)
            .map_err(lancer_table::TableError::from)?;
    }
    Ok(())
}
