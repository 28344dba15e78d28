//! Branches: creating, listing and deleting them (spec: "Branch and Tag Specification",
//! and "Shallow Clone" under base paths in the table-format section).
//!
//! A branch is a dataset of its own under `tree/{name}/` of the main dataset's root,
//! described by `_refs/branches/{name}.json` (`/` in the name written `%2F`, other
//! characters outside ASCII percent-encoded, as object-store paths encode them). Its
//! first version is a shallow clone of the version it starts from: the same manifest at
//! the same version number, with every file the source holds itself (data, deletion and
//! index files without a base id) named through a new base path pointing at the
//! source's root, the `branch` field set, the base-paths feature flag, and a Clone
//! transaction. Writes to the branch then put their files under `tree/{name}/` as any
//! dataset's, so the parent's files are never written or removed from the branch.

use std::collections::BTreeMap;

use lancer_io::{StorageOptions, Store};

use crate::commit::Manifest;
use crate::commit::{manifest_bytes_with_index, random_hex, random_uuid, write_hint, Naming};
use crate::pb;
use crate::pb::transaction::Operation;
use crate::versions::{latest_version, read_manifest_file};
use crate::{Result, TableError};

/// Reader/writer feature flag: files are named through `base_paths` (shallow clones,
/// branches).
pub const FLAG_BASE_PATHS: u64 = 16;

/// The default branch's reserved name.
pub const MAIN: &str = "main";

/// What `_refs/branches/{name}.json` says about a branch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BranchInfo {
    /// The branch it was created from (None: the main branch).
    pub parent_branch: Option<String>,
    /// Its lineage: for each branch from the first below main down to this one, the
    /// version it started from and a random id (pylance 14's `version_mapping`; empty
    /// in files older writers made).
    pub identifier: Vec<(u64, String)>,
    /// The parent's version it was created from.
    pub parent_version: u64,
    /// Creation time, seconds since the Unix epoch.
    pub create_at: u64,
    /// Bytes of the manifest it was created from.
    pub manifest_size: u64,
    /// User metadata.
    pub metadata: BTreeMap<String, String>,
}

/// Where a new branch starts, or which version a checkout names: a version of a branch
/// (`branch` None or `"main"`: the main branch; `version` None: its latest), or a tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A version of a branch.
    Version {
        /// The branch (None or `main`: the main branch).
        branch: Option<String>,
        /// The version (None: the latest).
        version: Option<u64>,
    },
    /// The version a tag points at (on whichever branch the tag names).
    Tag(String),
}

fn bad_name(name: &str, rule: &str) -> TableError {
    TableError::invalid(format!(
        "invalid branch name {name:?}: {rule} (branch names are segments of letters, digits, \
         '.', '-' and '_' joined by single '/')"
    ))
}

/// Checks a branch name against the spec's rules; the error names the rule broken.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(bad_name(name, "it is empty"));
    }
    if name.starts_with('/') || name.ends_with('/') {
        return Err(bad_name(name, "it starts or ends with '/'"));
    }
    if name.contains("//") {
        return Err(bad_name(name, "it contains '//'"));
    }
    if name.contains("..") || name.contains('\\') {
        return Err(bad_name(name, "it contains '..' or '\\'"));
    }
    if let Some(seg) = name.split('/').find(|s| {
        !s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_'))
    }) {
        return Err(bad_name(
            name,
            &format!("segment {seg:?} has a character other than letters, digits, '.', '-', '_'"),
        ));
    }
    if name.ends_with(".lock") {
        return Err(bad_name(name, "it ends with '.lock'"));
    }
    if name == MAIN {
        return Err(bad_name(
            name,
            "\"main\" is reserved for the default branch; use another name",
        ));
    }
    Ok(())
}

/// The file name of branch `name` under `_refs/branches/`: `/`, `%` and bytes outside
/// printable ASCII percent-encoded (`bugfix/x` → `bugfix%2Fx.json`).
pub fn file_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 5);
    for &b in name.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push_str(".json");
    out
}

/// The branch name a `_refs/branches/` file name encodes (None when it is not one).
fn decode_file_name(file: &str) -> Option<String> {
    let stem = file.strip_suffix(".json")?;
    let bytes = stem.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = stem.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn ref_path(name: &str) -> String {
    format!("_refs/branches/{}", file_name(name))
}

/// Parses a branch file; `shown` names it in errors.
pub fn parse_info(bytes: &[u8], shown: &str) -> Result<BranchInfo> {
    let bad = |what: &str| TableError::corrupt(format!("branch file {shown}: {what}"));
    let v: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| bad(&format!("not JSON ({e})")))?;
    let obj = v.as_object().ok_or_else(|| bad("not a JSON object"))?;
    let parent_branch = match obj.get("parentBranch") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("parentBranch is neither null nor a string")),
    };
    let number = |key: &str, required: bool| -> Result<u64> {
        match obj.get(key) {
            None if !required => Ok(0),
            None => Err(bad(&format!("no {key}"))),
            Some(x) => x
                .as_u64()
                .ok_or_else(|| bad(&format!("{key} is not a non-negative integer"))),
        }
    };
    let mut identifier = Vec::new();
    if let Some(id) = obj.get("identifier").filter(|x| !x.is_null()) {
        let mapping = id
            .get("version_mapping")
            .and_then(|m| m.as_array())
            .ok_or_else(|| bad("identifier has no version_mapping list"))?;
        for pair in mapping {
            match pair.as_array().map(|p| p.as_slice()) {
                Some([v, serde_json::Value::String(s)]) if v.as_u64().is_some() => {
                    identifier.push((v.as_u64().unwrap_or_default(), s.clone()));
                }
                _ => return Err(bad("a version_mapping entry is not [version, id]")),
            }
        }
    }
    let mut metadata = BTreeMap::new();
    match obj.get("metadata") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Object(m)) => {
            for (k, x) in m {
                let s = x
                    .as_str()
                    .ok_or_else(|| bad(&format!("metadata {k:?} is not a string")))?;
                metadata.insert(k.clone(), s.to_string());
            }
        }
        Some(_) => return Err(bad("metadata is not an object")),
    }
    Ok(BranchInfo {
        parent_branch,
        identifier,
        parent_version: number("parentVersion", true)?,
        create_at: number("createAt", false)?,
        manifest_size: number("manifestSize", false)?,
        metadata,
    })
}

/// A branch file's text as pylance 14 writes it (two-space indented JSON, its keys in
/// its order).
pub fn info_json(b: &BranchInfo) -> String {
    let s = |x: &str| serde_json::Value::String(x.to_string()).to_string();
    let parent = b.parent_branch.as_deref().map_or("null".to_string(), s);
    let mapping = if b.identifier.is_empty() {
        "[]".to_string()
    } else {
        let rows: Vec<String> = b
            .identifier
            .iter()
            .map(|(v, id)| format!("      [\n        {v},\n        {}\n      ]", s(id)))
            .collect();
        format!("[\n{}\n    ]", rows.join(",\n"))
    };
    let metadata = if b.metadata.is_empty() {
        "{}".to_string()
    } else {
        let rows: Vec<String> = b
            .metadata
            .iter()
            .map(|(k, v)| format!("    {}: {}", s(k), s(v)))
            .collect();
        format!("{{\n{}\n  }}", rows.join(",\n"))
    };
    format!(
        "{{\n  \"parentBranch\": {parent},\n  \"identifier\": {{\n    \"version_mapping\": {mapping}\n  }},\n  \"parentVersion\": {},\n  \"createAt\": {},\n  \"manifestSize\": {},\n  \"metadata\": {metadata}\n}}",
        b.parent_version, b.create_at, b.manifest_size
    )
}

/// What branch `name` of the dataset rooted at `root` says (NotFound when it has none).
pub fn read(root: &Store, name: &str) -> Result<BranchInfo> {
    check_name(name)?;
    let p = ref_path(name);
    let bytes = root.get_opt(&p)?.ok_or_else(|| TableError::NotFound {
        what: format!("branch {name:?} does not exist in {}", root.uri()),
    })?;
    parse_info(&bytes, &root.display(&p))
}

/// Every branch of the dataset rooted at `root`, by name.
pub fn list(root: &Store) -> Result<Vec<(String, BranchInfo)>> {
    let mut out = Vec::new();
    for e in root.list("_refs/branches")? {
        if e.name.contains('/') {
            continue;
        }
        let Some(name) = decode_file_name(&e.name) else {
            continue;
        };
        let p = format!("_refs/branches/{}", e.name);
        // a branch deleted between the listing and the read is skipped
        if let Some(bytes) = root.get_opt(&p)? {
            out.push((name, parse_info(&bytes, &root.display(&p))?));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// [`list`] by the parent version they start from (descending unless `ascending`),
/// then by name — pylance's `list_ordered`.
pub fn list_ordered(root: &Store, ascending: bool) -> Result<Vec<(String, BranchInfo)>> {
    let mut all = list(root)?;
    all.sort_by(|a, b| {
        let by_version = a.1.parent_version.cmp(&b.1.parent_version);
        let by_version = if ascending {
            by_version
        } else {
            by_version.reverse()
        };
        by_version.then_with(|| a.0.cmp(&b.0))
    });
    Ok(all)
}

/// The store of `branch` (None or `main`: `root` itself); a branch without its file
/// is NotFound.
pub fn store_of(root: &Store, branch: Option<&str>) -> Result<Store> {
    match branch {
        None | Some(MAIN) => Ok(root.clone()),
        Some(name) => {
            read(root, name)?;
            Ok(root.child(&format!("tree/{name}")))
        }
    }
}

/// The branch and version a tag points at.
pub fn tag_target(root: &Store, tag: &str) -> Result<(Option<String>, u64)> {
    let version = crate::versions::tag_version(root, tag)?;
    let p = format!("_refs/tags/{tag}.json");
    let branch = root
        .get_opt(&p)?
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("branch").and_then(|b| b.as_str()).map(String::from))
        .filter(|b| b != MAIN);
    Ok((branch, version))
}

/// The branch and version `reference` names (a latest version looked up).
pub fn resolve(root: &Store, reference: &Reference) -> Result<(Option<String>, u64)> {
    let (branch, version) = match reference {
        Reference::Tag(t) => {
            let (b, v) = tag_target(root, t)?;
            (b, Some(v))
        }
        Reference::Version { branch, version } => (branch.clone().filter(|b| b != MAIN), *version),
    };
    let version = match version {
        Some(v) => v,
        None => latest_version(&store_of(root, branch.as_deref())?)?.version,
    };
    Ok((branch, version))
}

/// A location for a base path: a local store's absolute directory (the dataset may
/// later be opened from another working directory), else the store's URI.
fn absolute_location(store: &Store) -> String {
    match store.local_root() {
        Some(p) => std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .to_string_lossy()
            .into_owned(),
        None => store.uri().to_string(),
    }
}

/// Creates branch `name` of the dataset rooted at `root` from `version` of branch
/// `from` (None: main), and returns the branch's store. Refuses an invalid name, an
/// existing branch, and a `tree/{name}` that still holds versions.
pub fn create(root: &Store, name: &str, from: Option<&str>, version: u64) -> Result<Store> {
    check_name(name)?;
    let refp = ref_path(name);
    if root.size(&refp)?.is_some() {
        return Err(TableError::invalid(format!(
            "branch {name:?} already exists; delete it first or choose another name"
        )));
    }
    let from = from.filter(|b| *b != MAIN);
    let parent = from.map(|b| read(root, b)).transpose()?;
    let target = root.child(&format!("tree/{name}"));
    if !target.list("_versions")?.is_empty() {
        return Err(TableError::Refused {
            what: format!(
                "{} already holds files (left by an earlier branch of that name); remove that directory, then create the branch",
                target.uri()
            ),
        });
    }
    let cloned = clone_version(root, from, version, &target, Some(name))?;
    let mut identifier = parent.map(|p| p.identifier).unwrap_or_default();
    identifier.push((version, random_hex(32)));
    let info = BranchInfo {
        parent_branch: from.map(String::from),
        identifier,
        parent_version: version,
        create_at: cloned.created_at,
        manifest_size: cloned.source_manifest_size,
        metadata: BTreeMap::new(),
    };
    if !root.put_if_absent(&refp, info_json(&info).into())? {
        return Err(TableError::Conflict {
            what: format!("branch {name:?} was created concurrently"),
        });
    }
    Ok(target)
}

/// Makes `target` a new dataset whose first version is `reference`'s version of the
/// dataset rooted at `root` without copying data (pylance's `shallow_clone`): the
/// manifest with the source's root registered as a base path and every data file,
/// deletion file and index segment naming it, a `Clone` transaction; the version number
/// is the source's. A `target` that holds a dataset is refused. Returns the version.
pub fn shallow_clone(root: &Store, reference: &Reference, target: &Store) -> Result<u64> {
    let (branch, version) = resolve(root, reference)?;
    if !target.list("_versions")?.is_empty() {
        return Err(TableError::Refused {
            what: format!(
                "Dataset already exists: {} (clone into a new location)",
                target.uri()
            ),
        });
    }
    clone_version(root, branch.as_deref(), version, target, None)?;
    Ok(version)
}

/// What [`clone_version`] reports.
struct Cloned {
    /// Seconds since the epoch at the clone.
    created_at: u64,
    /// The source manifest's size in bytes.
    source_manifest_size: u64,
}

/// Writes `version` of branch `from` of the dataset at `root` into `target` as a
/// shallow clone's first version (branch `branch` of the same dataset, or None for a
/// dataset of its own).
fn clone_version(
    root: &Store,
    from: Option<&str>,
    version: u64,
    target: &Store,
    branch: Option<&str>,
) -> Result<Cloned> {
    let source = store_of(root, from)?;
    let (src_path, bytes) = read_manifest_file(&source, version)?;
    let src = Manifest::parse(&bytes)?;
    let naming = if src_path.rsplit('/').next().map(str::len) == Some(20 + ".manifest".len()) {
        Naming::V2
    } else {
        Naming::V1
    };
    let ref_path_abs = absolute_location(&source);
    let mut m = src.pb.clone();
    let base_id = m.base_paths.iter().map(|b| b.id + 1).max().unwrap_or(0);
    m.base_paths.push(pb::BasePath {
        id: base_id,
        name: from.map(String::from),
        is_dataset_root: true,
        path: ref_path_abs.clone(),
    });
    for f in &mut m.fragments {
        for d in &mut f.files {
            d.base_id.get_or_insert(base_id);
        }
        if let Some(d) = &mut f.deletion_file {
            d.base_id.get_or_insert(base_id);
        }
    }
    let mut indices = crate::commit::manifest_indices(&bytes, &src)?;
    for i in &mut indices {
        i.base_id.get_or_insert(base_id);
    }
    let section =
        (!indices.is_empty()).then(|| prost::Message::encode_to_vec(&pb::IndexSection { indices }));
    let uuid = random_uuid();
    let txn_file = format!("{version}-{uuid}.txn");
    let txn = pb::Transaction {
        read_version: version,
        uuid,
        operation: Some(Operation::Clone(pb::transaction::Clone {
            is_shallow: true,
            ref_name: from.map(String::from),
            ref_version: version,
            ref_path: ref_path_abs,
            branch_name: branch.map(String::from),
        })),
        ..Default::default()
    };
    m.branch = branch.map(String::from);
    m.reader_feature_flags |= FLAG_BASE_PATHS;
    m.writer_feature_flags |= FLAG_BASE_PATHS;
    m.transaction_file = txn_file.clone();
    m.transaction_section = None;
    m.index_section = None;
    m.tag.clear();
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    m.timestamp = Some(prost_types::Timestamp {
        seconds: d.as_secs() as i64,
        nanos: d.subsec_nanos() as i32,
    });
    m.writer_version = Some(pb::manifest::WriterVersion {
        library: "lancer".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        prerelease: None,
        build_metadata: None,
    });
    target.put(
        &format!("_transactions/{txn_file}"),
        prost::Message::encode_to_vec(&txn).into(),
    )?;
    let manifest = manifest_bytes_with_index(&m, section.as_deref());
    let mpath = format!("_versions/{}", naming.file_name(version));
    if !target.put_if_absent(&mpath, manifest.into())? {
        return Err(TableError::Conflict {
            what: match branch {
                Some(name) => format!("branch {name:?} was created concurrently"),
                None => format!("{} was created concurrently", target.uri()),
            },
        });
    }
    write_hint(target, version);
    Ok(Cloned {
        created_at: d.as_secs(),
        source_manifest_size: bytes.len() as u64,
    })
}

/// Replaces branch `name`'s metadata map with `metadata`.
pub fn replace_metadata(
    root: &Store,
    name: &str,
    metadata: BTreeMap<String, String>,
) -> Result<()> {
    let mut info = read(root, name)?;
    info.metadata = metadata;
    Ok(root.put(&ref_path(name), info_json(&info).into())?)
}

/// Deletes branch `name`: its file, then its directory under `tree/` — unless another
/// branch lives below it (then the directory stays, as pylance leaves it), and with the
/// emptied directories above it that no remaining branch uses. A branch other branches
/// were created from is refused (delete those first).
pub fn delete(root: &Store, name: &str) -> Result<()> {
    read(root, name)?;
    let all = list(root)?;
    let children: Vec<String> = all
        .iter()
        .filter(|(n, b)| n != name && b.parent_branch.as_deref() == Some(name))
        .map(|(n, b)| format!("{n} (from version {})", b.parent_version))
        .collect();
    if !children.is_empty() {
        return Err(TableError::Refused {
            what: format!(
                "branch {name:?} cannot be deleted: branches {} were created from it; delete them first",
                children.join(", ")
            ),
        });
    }
    root.delete(&ref_path(name))?;
    let remaining: Vec<&str> = all
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| *n != name)
        .collect();
    let segments: Vec<&str> = name.split('/').collect();
    for k in 1..=segments.len() {
        let prefix = segments[..k].join("/");
        let below = format!("{prefix}/");
        if !remaining
            .iter()
            .any(|r| *r == prefix || r.starts_with(&below))
        {
            return remove_tree(root, &format!("tree/{prefix}"));
        }
    }
    Ok(())
}

/// Deletes every file under `dir`, then its emptied directories (local stores).
fn remove_tree(root: &Store, dir: &str) -> Result<()> {
    let mut dirs = std::collections::BTreeSet::new();
    for e in root.list(dir)? {
        root.delete(&format!("{dir}/{}", e.name))?;
        let mut p = e.name.as_str();
        while let Some((parent, _)) = p.rsplit_once('/') {
            dirs.insert(format!("{dir}/{parent}"));
            p = parent;
        }
    }
    // deepest first
    let mut dirs: Vec<String> = dirs.into_iter().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    for d in dirs {
        root.remove_empty_dir(&d);
    }
    root.remove_empty_dir(dir);
    if let Some((parent, _)) = dir.rsplit_once('/') {
        root.remove_empty_dir(parent);
    }
    Ok(())
}

/// The main dataset's root, given the store of a version whose manifest names
/// `branch` (the store itself when it names none): the store `tree/{branch}` is below.
pub fn main_root(store: &Store, branch: Option<&str>) -> Result<Store> {
    let Some(name) = branch else {
        return Ok(store.clone());
    };
    store.parent_of(&format!("tree/{name}")).ok_or_else(|| {
        TableError::corrupt(format!(
            "{} holds a version of branch {name:?} but is not <root>/tree/{name}",
            store.uri()
        ))
    })
}

/// Tags of `root` pointing at versions of `branch` (None: main), with those versions.
pub fn tags_of(root: &Store, branch: Option<&str>) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for (tag, _) in crate::versions::list_tags(root)? {
        let (b, v) = tag_target(root, &tag)?;
        if b.as_deref() == branch {
            out.push((tag, v));
        }
    }
    Ok(out)
}

/// The versions of `parent` (None: main) that branches among `all` start from (a
/// cleanup of `parent` keeps them, as it keeps tagged versions).
pub fn versions_branched_from(all: &[(String, BranchInfo)], parent: Option<&str>) -> Vec<u64> {
    all.iter()
        .filter(|(_, b)| b.parent_branch.as_deref().filter(|p| *p != MAIN) == parent)
        .map(|(_, b)| b.parent_version)
        .collect()
}

impl crate::Dataset {
    /// The branch this version belongs to (None: the main branch).
    pub fn branch(&self) -> Option<&str> {
        self.manifest().pb.branch.as_deref()
    }

    /// The main dataset's root (this dataset's own store on the main branch).
    pub fn main_root(&self) -> Result<Store> {
        main_root(self.store(), self.branch())
    }

    /// Creates branch `name` from `reference` (None: this version of this branch) and
    /// opens it.
    pub fn create_branch(&self, name: &str, reference: Option<&Reference>) -> Result<Self> {
        let root = self.main_root()?;
        let (from, version) = match reference {
            None => (self.branch().map(String::from), self.version()),
            Some(r) => resolve(&root, r)?,
        };
        let store = create(&root, name, from.as_deref(), version)?;
        Self::open_with(store, self.storage_options().clone(), None)
    }

    /// `reference`'s version (None: this one) as a new dataset at `target` that shares
    /// this dataset's files (pylance's `shallow_clone`; see [`shallow_clone`]), opened
    /// with `options`.
    pub fn shallow_clone(
        &self,
        reference: Option<&Reference>,
        target: Store,
        options: StorageOptions,
    ) -> Result<Self> {
        let root = self.main_root()?;
        let here = Reference::Version {
            branch: self.branch().map(String::from),
            version: Some(self.version()),
        };
        let version = shallow_clone(&root, reference.unwrap_or(&here), &target)?;
        Self::open_with(target, options, Some(version))
    }

    /// The version `reference` names, on whichever branch it names, opened with this
    /// dataset's storage options.
    pub fn checkout_ref(&self, reference: &Reference) -> Result<Self> {
        let root = self.main_root()?;
        let (branch, version) = resolve(&root, reference)?;
        Self::open_with(
            store_of(&root, branch.as_deref())?,
            self.storage_options().clone(),
            Some(version),
        )
    }
}
