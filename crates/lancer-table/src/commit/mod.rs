//! Committing a new version (spec: "Transactions", "Conflict resolution").
//!
//! A commit writes the transaction file, then the manifest of `latest + 1` with
//! put-if-absent through the dataset's store (locally a temporary file hard-linked to
//! its final name; on object stores a conditional put, `If-None-Match: *`), which
//! fails if another writer got there first — a version is either fully visible or
//! absent. On a lost race the commit re-reads what was committed
//! since it read, and rebases when the operations are compatible (appends with
//! anything that does not rewrite fragments; deletes touching different fragments),
//! otherwise it fails with a retryable conflict.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use lancer_io::Store;
use prost::Message;

use crate::pb;
use crate::pb::transaction::Operation;
use crate::versions::{list_versions, read_manifest_file};
use crate::{Result, TableError};

mod config;
mod manifest;
mod replace;
mod rowids;

pub(crate) use config::{apply_update, touches_schema, updates_compatible};
pub use config::{
    auto_cleanup, parse_duration, AutoCleanup, MapUpdate, MetadataUpdate, AUTO_CLEANUP_INTERVAL,
    AUTO_CLEANUP_OLDER_THAN, AUTO_CLEANUP_RETAIN_VERSIONS,
};
pub use manifest::{unsupported_flags, Manifest, FLAG_DATA_OVERLAYS, KNOWN_READER_FLAGS};
pub use rowids::{decode_sequence, decode_versions, encode_ids, encode_versions, fragment_row_ids};

/// Reader/writer feature flag: the dataset has deletion files.
pub const FLAG_DELETION_FILES: u64 = 1;
/// Reader/writer feature flag: rows carry stable row ids (kept when rows move).
pub const FLAG_STABLE_ROW_IDS: u64 = 2;
/// Reader/writer feature flag: data files of format versions other than the dataset's
/// (a 2.x dataset appended to at another 2.x version; pylance 12+ writes and honours
/// it). Each data file records its own version, which readers follow.
pub const FLAG_MIXED_FILE_VERSIONS: u64 = 256;
/// Attempts before a commit gives up racing other writers.
pub const MAX_COMMIT_ATTEMPTS: usize = 64;

/// Failure injection for crash tests: aborts the process when `LANCER_CRASH_AT`
/// names this point (`after-data`, `after-txn`, `before-manifest`, and in a compaction
/// `after-reserve`), as a writer
/// killed there would stop. Never set in normal use.
pub fn crash_point(point: &str) {
    if std::env::var("LANCER_CRASH_AT").is_ok_and(|p| p == point) {
        std::process::abort();
    }
}

/// How manifests are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// `{version}.manifest`.
    V1,
    /// `{u64::MAX - version:020}.manifest` (newest sorts first).
    V2,
}

impl Naming {
    /// The file name of `version`.
    pub fn file_name(self, version: u64) -> String {
        match self {
            Naming::V1 => format!("{version}.manifest"),
            Naming::V2 => format!("{:020}.manifest", u64::MAX - version),
        }
    }

    /// The scheme an existing dataset uses (V2 for new datasets).
    pub fn detect(store: &Store) -> Naming {
        let v1 = list_versions(store)
            .ok()
            .and_then(|v| v.first().cloned())
            .map(|v| {
                v.path
                    .rsplit('/')
                    .next()
                    .is_some_and(|n| n.len() != 20 + ".manifest".len())
            });
        if v1 == Some(true) {
            Naming::V1
        } else {
            Naming::V2
        }
    }
}

/// A random identifier (hex), from the clock, the process and a counter.
pub fn random_hex(len: usize) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut x = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    let mut out = String::with_capacity(len);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push_str(&format!("{:016x}", x.wrapping_mul(0x2545_F491_4F6C_DD1D)));
    }
    out.truncate(len);
    out
}

/// A UUID-shaped random string.
pub fn random_uuid() -> String {
    let h = random_hex(32);
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// Serialises a manifest file: `[u32 len][Manifest][i64 position][u16 0][u16 2]["LANC"]`.
pub fn manifest_bytes(m: &pb::Manifest) -> Vec<u8> {
    manifest_bytes_with_index(m, None)
}

/// Serialises a manifest file that carries an index section (a serialized
/// `IndexSection`) before the manifest: `[u32 len][IndexSection][u32 len][Manifest]
/// [trailer]`, with `index_section` pointing at position 0.
pub fn manifest_bytes_with_index(m: &pb::Manifest, index_section: Option<&[u8]>) -> Vec<u8> {
    let mut m = m.clone();
    let mut out = Vec::new();
    if let Some(sec) = index_section {
        out.extend_from_slice(&(sec.len() as u32).to_le_bytes());
        out.extend_from_slice(sec);
        m.index_section = Some(0);
    }
    let pos = out.len() as i64;
    let body = m.encode_to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&pos.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(b"LANC");
    out
}

fn now() -> prost_types::Timestamp {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    prost_types::Timestamp {
        seconds: d.as_secs() as i64,
        nanos: d.subsec_nanos() as i32,
    }
}

/// The transaction that produced `version`, if its file is there.
pub fn read_transaction(store: &Store, m: &pb::Manifest) -> Option<pb::Transaction> {
    if m.transaction_file.is_empty() || m.transaction_file.contains('/') {
        return None;
    }
    let bytes = store
        .get(&format!("_transactions/{}", m.transaction_file))
        .ok()?;
    decode_transaction(&bytes)
}

/// A transaction file's protobuf; None when damaged (it only informs conflict checks).
pub fn decode_transaction(bytes: &[u8]) -> Option<pb::Transaction> {
    pb::Transaction::decode(bytes).ok()
}

fn next_fragment_id(m: Option<&pb::Manifest>) -> u64 {
    m.map_or(0, |m| {
        let from_max = m.max_fragment_id.map_or(0, |x| u64::from(x) + 1);
        let from_frags = m.fragments.iter().map(|f| f.id + 1).max().unwrap_or(0);
        from_max.max(from_frags)
    })
}

/// `fragments` with `updated` in place of their namesakes (each must still be there)
/// and without `removed`.
fn replace_fragments(
    fragments: &mut Vec<pb::DataFragment>,
    updated: &[pb::DataFragment],
    removed: &[u64],
) -> Result<()> {
    for upd in updated {
        let slot = fragments
            .iter_mut()
            .find(|f| f.id == upd.id)
            .ok_or_else(|| TableError::Conflict {
                what: format!("fragment {} was removed by a concurrent commit", upd.id),
            })?;
        *slot = upd.clone();
    }
    fragments.retain(|f| !removed.contains(&f.id));
    Ok(())
}

/// Applies `op` on top of `base` (None: a new dataset, with the feature flags
/// `new_flags`, e.g. [`FLAG_STABLE_ROW_IDS`]).
fn apply(
    base: Option<&pb::Manifest>,
    op: &Operation,
    storage: &str,
    restored: Option<&pb::Manifest>,
    new_flags: u64,
) -> Result<pb::Manifest> {
    let mut m = base.cloned().unwrap_or_default();
    if base.is_none() {
        m.reader_feature_flags |= new_flags;
        m.writer_feature_flags |= new_flags;
    }
    let mut next_id = next_fragment_id(base);
    let mut renumber = |frags: &[pb::DataFragment]| -> Vec<pb::DataFragment> {
        frags
            .iter()
            .map(|f| {
                let mut f = f.clone();
                f.id = next_id;
                next_id += 1;
                f
            })
            .collect()
    };
    match op {
        Operation::Overwrite(o) => {
            if !o.initial_bases.is_empty() {
                if base.is_some() {
                    return Err(TableError::invalid(
                        "initial_bases registers the base paths of a new dataset; this one \
                         exists: register more with add_bases",
                    ));
                }
                m.base_paths = o.initial_bases.clone();
            }
            m.fields = o.schema.clone();
            m.schema_metadata = o.schema_metadata.clone();
            m.fragments = renumber(&o.fragments);
            m.config.extend(o.config_upsert_values.clone());
        }
        Operation::Append(a) => {
            let base = base.ok_or_else(|| TableError::NotFound {
                what: "a dataset to append to".into(),
            })?;
            let _ = base;
            let new = renumber(&a.fragments);
            m.fragments.extend(new);
        }
        Operation::Delete(d) => {
            replace_fragments(
                &mut m.fragments,
                &d.updated_fragments,
                &d.deleted_fragment_ids,
            )?;
        }
        Operation::CreateIndex(_) => {
            base.ok_or_else(|| TableError::NotFound {
                what: "a dataset to index".into(),
            })?;
        }
        Operation::Merge(mg) => {
            m.fields = mg.schema.clone();
            m.schema_metadata = mg.schema_metadata.clone();
            m.fragments = mg.fragments.clone();
            for f in &mut m.fragments {
                crate::evolution::prune_files(f, &m.fields);
            }
        }
        Operation::Project(p) => {
            m.fields = p.schema.clone();
            for f in &mut m.fragments {
                crate::evolution::prune_files(f, &m.fields);
            }
        }
        Operation::Update(u) => {
            replace_fragments(
                &mut m.fragments,
                &u.updated_fragments,
                &u.removed_fragment_ids,
            )?;
            let new = renumber(&u.new_fragments);
            m.fragments.extend(new);
        }
        Operation::Rewrite(r) => {
            // the old fragments leave; the new ones (ids reserved before) come last
            let mut new = Vec::new();
            for g in &r.groups {
                for old in &g.old_fragments {
                    if !m.fragments.iter().any(|f| f.id == old.id) {
                        return Err(TableError::Conflict {
                            what: format!("fragment {} was removed by a concurrent commit", old.id),
                        });
                    }
                }
                m.fragments
                    .retain(|f| !g.old_fragments.iter().any(|o| o.id == f.id));
                new.extend(g.new_fragments.iter().cloned());
            }
            if let Some(top) = new.iter().map(|f| f.id + 1).max() {
                next_id = next_id.max(top);
            }
            // fragments written by a two-phase rewrite carry id 0 (never a reserved
            // id: those follow the old fragments' ids) and get theirs here
            for f in &mut new {
                if f.id == 0 {
                    f.id = next_id;
                    next_id += 1;
                }
            }
            m.fragments.extend(new);
        }
        Operation::ReserveFragments(r) => {
            next_id += u64::from(r.num_fragments);
        }
        Operation::DataReplacement(r) => replace::replace_data_files(&mut m.fragments, r)?,
        Operation::UpdateBases(u) => {
            base.ok_or_else(|| TableError::NotFound {
                what: "a dataset to register base paths in".into(),
            })?;
            crate::write::apply_update(&mut m, u)?;
        }
        Operation::UpdateConfig(u) => {
            base.ok_or_else(|| TableError::NotFound {
                what: "a dataset to change the metadata of".into(),
            })?;
            crate::commit::apply_update(&mut m, u)?;
        }
        Operation::Clone(_) => {
            return Err(TableError::invalid(
                "a Clone starts a dataset (crate::versions::branch writes it); it is not committed on one",
            ));
        }
        Operation::Restore(r) => {
            // the old version's contents; fragment ids keep growing from the latest's
            let old = restored.ok_or_else(|| TableError::NotFound {
                what: format!("version {} to restore", r.version),
            })?;
            m.fields = old.fields.clone();
            m.schema_metadata = old.schema_metadata.clone();
            m.fragments = old.fragments.clone();
            m.config = old.config.clone();
            m.next_row_id = old.next_row_id.max(m.next_row_id);
            m.reader_feature_flags = old.reader_feature_flags;
            m.writer_feature_flags = old.writer_feature_flags;
        }
    }
    m.max_fragment_id =
        Some(u32::try_from(next_id.saturating_sub(1)).unwrap_or(u32::MAX)).filter(|_| next_id > 0);
    m.version = base.map_or(0, |b| b.version) + 1;
    // with stable row ids every new fragment's rows get ids (those it does not carry —
    // rows an update moved keep theirs — from `next_row_id`), a created-at version
    // (the moved rows' own, else this version) and this version as last updated
    // (docs/evolution-format.md §1, §3.5)
    if m.reader_feature_flags & FLAG_STABLE_ROW_IDS != 0 {
        let count = match op {
            Operation::Overwrite(_) => m.fragments.len(),
            Operation::Append(a) => a.fragments.len(),
            Operation::Update(u) => u.new_fragments.len(),
            _ => 0,
        }
        .min(m.fragments.len());
        let version = m.version;
        let at = m.fragments.len() - count;
        for f in &mut m.fragments[at..] {
            stamp_rows(f, &mut m.next_row_id, version)?;
        }
    }
    m.timestamp = Some(now());
    m.writer_version = Some(pb::manifest::WriterVersion {
        library: "lancer".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        prerelease: None,
        build_metadata: None,
    });
    m.data_format = Some(pb::manifest::DataStorageFormat {
        file_format: "lance".into(),
        version: storage.into(),
    });
    let has_deletions = m.fragments.iter().any(|f| f.deletion_file.is_some());
    // set while some fragment has a deletion file (pylance clears it after a
    // compaction materialized them all)
    for flags in [&mut m.reader_feature_flags, &mut m.writer_feature_flags] {
        if has_deletions {
            *flags |= FLAG_DELETION_FILES;
        } else {
            *flags &= !FLAG_DELETION_FILES;
        }
    }
    let mixed = mixed_file_versions(&m.fragments, storage);
    for flags in [&mut m.reader_feature_flags, &mut m.writer_feature_flags] {
        if mixed {
            *flags |= FLAG_MIXED_FILE_VERSIONS;
        } else {
            *flags &= !FLAG_MIXED_FILE_VERSIONS;
        }
    }
    m.index_section = None;
    m.transaction_section = None;
    m.tag.clear();
    Ok(m)
}

/// Completes a new fragment's row ids (from `next_row_id`), created-at versions (this
/// `version` for rows without one) and last-updated versions (all this `version`).
fn stamp_rows(f: &mut pb::DataFragment, next_row_id: &mut u64, version: u64) -> Result<()> {
    use pb::data_fragment::{
        CreatedAtVersionSequence as C, LastUpdatedAtVersionSequence as U, RowIdSequence as R,
    };
    let n = f.physical_rows;
    let mut ids = match &f.row_id_sequence {
        Some(R::InlineRowIds(b)) => crate::commit::decode_sequence(b, n)?,
        Some(R::ExternalRowIds(_)) => {
            return Err(TableError::corrupt(
                "a new fragment with an external row-id file",
            ))
        }
        None => Vec::new(),
    };
    let carried = ids.len() as u64;
    ids.extend(*next_row_id..*next_row_id + (n - carried));
    *next_row_id += n - carried;
    let mut created = match &f.created_at_version_sequence {
        Some(C::InlineCreatedAtVersions(b)) => crate::commit::decode_versions(b, n)?,
        _ => vec![0; n as usize],
    };
    for v in created.iter_mut().skip(carried as usize) {
        *v = version;
    }
    for v in created.iter_mut().filter(|v| **v == 0) {
        *v = version;
    }
    f.row_id_sequence = Some(R::InlineRowIds(crate::commit::encode_ids(&ids)));
    f.created_at_version_sequence = Some(C::InlineCreatedAtVersions(
        crate::commit::encode_versions(&created),
    ));
    f.last_updated_at_version_sequence = Some(U::InlineLastUpdatedAtVersions(
        crate::commit::encode_versions(&vec![version; n as usize]),
    ));
    Ok(())
}

/// Whether any 2.x data file of `fragments` has a version other than the dataset's
/// `storage` version ("2.1", ...).
pub fn mixed_file_versions(fragments: &[pb::DataFragment], storage: &str) -> bool {
    let Some((major, minor)) = storage
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .filter(|(a, _)| *a >= 2)
    else {
        return false;
    };
    fragments.iter().flat_map(|f| &f.files).any(|d| {
        d.file_major_version >= 2 && (d.file_major_version, d.file_minor_version) != (major, minor)
    })
}

/// The operation's name as pylance's transactions name it (`Append`, `Update`, ...).
pub fn operation_name(op: &Operation) -> &'static str {
    match op {
        Operation::Append(_) => "Append",
        Operation::Delete(_) => "Delete",
        Operation::Overwrite(_) => "Overwrite",
        Operation::CreateIndex(_) => "CreateIndex",
        Operation::Rewrite(_) => "Rewrite",
        Operation::Merge(_) => "Merge",
        Operation::Restore(_) => "Restore",
        Operation::ReserveFragments(_) => "ReserveFragments",
        Operation::Update(_) => "Update",
        Operation::Project(_) => "Project",
        Operation::UpdateConfig(_) => "UpdateConfig",
        Operation::DataReplacement(_) => "DataReplacement",
        Operation::Clone(_) => "Clone",
        Operation::UpdateBases(_) => "UpdateBases",
    }
}

/// The existing fragments an operation changes or removes.
fn touched(op: &Operation) -> Vec<u64> {
    match op {
        Operation::Delete(d) => d
            .updated_fragments
            .iter()
            .map(|f| f.id)
            .chain(d.deleted_fragment_ids.iter().copied())
            .collect(),
        Operation::Update(u) => u
            .updated_fragments
            .iter()
            .map(|f| f.id)
            .chain(u.removed_fragment_ids.iter().copied())
            .collect(),
        _ => Vec::new(),
    }
}

/// The fragments a Rewrite replaces.
fn rewritten(r: &pb::transaction::Rewrite) -> Vec<u64> {
    r.groups
        .iter()
        .flat_map(|g| g.old_fragments.iter().map(|f| f.id))
        .chain(r.old_fragments.iter().map(|f| f.id))
        .collect()
}

/// Whether any of `indices` covers any of the fragments `ids`.
fn covers_any(indices: &[pb::IndexMetadata], ids: &[u64]) -> bool {
    indices.iter().any(|i| {
        roaring::RoaringBitmap::deserialize_from(i.fragment_bitmap.as_slice()).is_ok_and(|b| {
            ids.iter()
                .any(|&id| u32::try_from(id).is_ok_and(|id| b.contains(id)))
        })
    })
}

/// Whether `ours` (read at an older version) can be rebased over `theirs`.
fn compatible(ours: &Operation, theirs: Option<&Operation>) -> bool {
    use crate::commit::{touches_schema, updates_compatible};
    match (ours, theirs) {
        (_, None) => false,
        // metadata updates commute with data changes; with each other when they change
        // different keys; an operation carrying a whole schema (merge, project) would
        // undo a concurrent change of schema or field metadata
        (Operation::UpdateConfig(a), Some(Operation::UpdateConfig(b))) => updates_compatible(a, b),
        (Operation::UpdateConfig(u), Some(t)) => {
            let replaced = matches!(t, Operation::Overwrite(_) | Operation::Restore(_));
            let undone =
                touches_schema(u) && matches!(t, Operation::Merge(_) | Operation::Project(_));
            !replaced && !undone
        }
        (Operation::Merge(_) | Operation::Project(_), Some(Operation::UpdateConfig(u))) => {
            !touches_schema(u)
        }
        (_, Some(Operation::UpdateConfig(_))) => true,
        // registered bases: two registrations may give the same ids (retried); data
        // changes and registrations commute, a replaced dataset does not keep them
        (Operation::UpdateBases(_), Some(Operation::UpdateBases(_))) => false,
        (Operation::UpdateBases(_), Some(t)) => {
            !matches!(t, Operation::Overwrite(_) | Operation::Restore(_))
        }
        (_, Some(Operation::UpdateBases(_))) => true,
        (Operation::DataReplacement(r), Some(t)) => replace::compatible(r, t, true),
        (o, Some(Operation::DataReplacement(r))) => replace::compatible(r, o, false),
        (Operation::Append(_), Some(Operation::Append(_) | Operation::Delete(_))) => true,
        // An index build and data changes commute: the index's fragment bitmap says
        // what it covers, deleted rows are filtered when it is searched.
        (Operation::Append(_) | Operation::Delete(_), Some(Operation::CreateIndex(_))) => true,
        (Operation::CreateIndex(_), Some(Operation::Append(_) | Operation::Delete(_))) => true,
        (Operation::CreateIndex(mine), Some(Operation::CreateIndex(theirs))) => {
            let names = |c: &pb::transaction::CreateIndex| -> Vec<String> {
                c.new_indices
                    .iter()
                    .chain(&c.removed_indices)
                    .map(|i| i.name.clone())
                    .collect()
            };
            let theirs = names(theirs);
            !names(mine).iter().any(|n| theirs.contains(n))
        }
        (Operation::Delete(mine), Some(Operation::Append(_))) => {
            let _ = mine;
            true
        }
        // docs/evolution-format.md §4: a schema change without data (Project) commutes
        // with data changes; data changes commute with it.
        (
            Operation::Project(p),
            Some(
                Operation::Append(_)
                | Operation::Delete(_)
                | Operation::Update(_)
                | Operation::CreateIndex(_)
                | Operation::ReserveFragments(_)
                | Operation::Rewrite(_),
            ),
        ) => {
            p.preserves_nullability
                || !matches!(theirs, Some(Operation::Append(_) | Operation::Update(_)))
        }
        (
            Operation::Append(_) | Operation::Delete(_) | Operation::Update(_),
            Some(Operation::Project(p)),
        ) => p.preserves_nullability || matches!(ours, Operation::Delete(_)),
        (Operation::CreateIndex(_), Some(Operation::Project(_) | Operation::Merge(_))) => true,
        (Operation::CreateIndex(_), Some(Operation::Update(_))) => true,
        (Operation::Merge(_), Some(Operation::CreateIndex(_) | Operation::ReserveFragments(_))) => {
            true
        }
        (Operation::Append(_), Some(Operation::Merge(_) | Operation::Update(_))) => true,
        (
            Operation::Append(_) | Operation::Delete(_) | Operation::Update(_),
            Some(Operation::Rewrite(r)),
        ) => {
            // an append never touches the rewritten fragments; a delete or update only
            // if its fragments were not rewritten
            let rewritten = rewritten(r);
            touched(ours).iter().all(|id| !rewritten.contains(id))
        }
        (
            Operation::Update(_) | Operation::Delete(_),
            Some(Operation::Update(_) | Operation::Delete(_)),
        ) => {
            let theirs = theirs.map(touched).unwrap_or_default();
            !touched(ours).iter().any(|id| theirs.contains(id))
        }
        (
            Operation::Update(_),
            Some(Operation::Append(_) | Operation::CreateIndex(_) | Operation::ReserveFragments(_)),
        ) => true,
        // a restore replaces the contents whatever was committed meanwhile
        (Operation::Restore(_), Some(_)) => true,
        (Operation::ReserveFragments(_), Some(t)) => {
            !matches!(t, Operation::Overwrite(_) | Operation::Restore(_))
        }
        (
            Operation::Rewrite(_),
            Some(Operation::Append(_) | Operation::ReserveFragments(_) | Operation::Project(_)),
        ) => true,
        (Operation::Rewrite(mine), Some(t @ (Operation::Delete(_) | Operation::Update(_)))) => {
            let theirs = touched(t);
            !rewritten(mine).iter().any(|id| theirs.contains(id))
        }
        (Operation::Rewrite(mine), Some(Operation::Rewrite(theirs))) => {
            let theirs = rewritten(theirs);
            !rewritten(mine).iter().any(|id| theirs.contains(id))
        }
        (Operation::Rewrite(mine), Some(Operation::CreateIndex(c))) => {
            !covers_any(&c.new_indices, &rewritten(mine))
        }
        (Operation::CreateIndex(mine), Some(Operation::Rewrite(theirs))) => {
            !covers_any(&mine.new_indices, &rewritten(theirs))
        }
        (Operation::CreateIndex(_), Some(Operation::ReserveFragments(_))) => true,
        _ => false,
    }
}

/// Commits `op`, read at `read_version` (None: creating a dataset), and returns the
/// new version's manifest.
pub fn commit(
    root: &Store,
    read_version: Option<u64>,
    op: Operation,
    storage: &str,
    naming: Naming,
) -> Result<Manifest> {
    commit_file(root, read_version, op, storage, naming).map(|c| c.manifest)
}

/// A version just committed: its manifest, and the file's name and bytes.
pub struct Committed {
    /// The manifest.
    pub manifest: Manifest,
    /// The manifest file's path under the dataset root.
    pub path: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The version a writer read, with its manifest file as read.
pub struct Base {
    /// The version.
    pub version: u64,
    /// Its manifest file's bytes.
    pub manifest_file: bytes::Bytes,
}

/// [`commit`], returning the manifest file too.
pub fn commit_file(
    root: &Store,
    read_version: Option<u64>,
    op: Operation,
    storage: &str,
    naming: Naming,
) -> Result<Committed> {
    commit_on(
        root,
        read_version,
        None,
        op,
        storage,
        naming,
        &CommitExtras::default(),
    )
}

/// What a commit records beside its operation.
#[derive(Debug, Clone, Default)]
pub struct CommitExtras {
    /// Feature flags of the manifest when the commit creates the dataset (e.g.
    /// [`FLAG_STABLE_ROW_IDS`]: every row gets an id that survives updates and
    /// compaction); a dataset another writer created first keeps its own.
    pub new_flags: u64,
    /// Properties of the transaction (pylance's `transaction_properties`; its commit
    /// message under `__lance_commit_message`).
    pub properties: std::collections::HashMap<String, String>,
    /// Skip the automatic cleanup the dataset's config may ask for after this commit
    /// (pylance's `skip_auto_cleanup`; see [`crate::commit`]).
    pub skip_auto_cleanup: bool,
    /// The transaction's uuid (pylance's `Transaction.uuid` when a transaction object is
    /// committed; it names the transaction file); None draws a random one. Checked to be
    /// letters, digits and dashes.
    pub uuid: Option<String>,
}

/// Refuses a transaction uuid a caller gave (it names the transaction file) unless it
/// is letters, digits and dashes, at most 64 of them.
pub fn check_uuid(u: &str) -> Result<()> {
    if u.is_empty() || u.len() > 64 || !u.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(TableError::invalid(format!(
            "transaction uuid {u:?}: use letters, digits and dashes only (a uuid such as \
             str(uuid.uuid4()) gives), at most 64 characters"
        )));
    }
    Ok(())
}

/// The key pylance keeps a commit message under in the transaction's properties.
pub const COMMIT_MESSAGE_KEY: &str = "__lance_commit_message";

/// [`commit`] recording `extras` (see [`CommitExtras`]).
pub fn commit_with(
    root: &Store,
    read_version: Option<u64>,
    op: Operation,
    storage: &str,
    naming: Naming,
    extras: &CommitExtras,
) -> Result<Committed> {
    commit_on(root, read_version, None, op, storage, naming, extras)
}

/// [`commit_on_base`] recording `extras`.
pub fn commit_on_base_with(
    root: &Store,
    base: Base,
    op: Operation,
    storage: &str,
    naming: Naming,
    extras: &CommitExtras,
) -> Result<Committed> {
    commit_on(
        root,
        Some(base.version),
        Some(base),
        op,
        storage,
        naming,
        extras,
    )
}

/// [`commit_file`] on top of a version whose manifest the writer holds: unless other
/// writers committed since, the manifest is not read again.
pub fn commit_on_base(
    root: &Store,
    base: Base,
    op: Operation,
    storage: &str,
    naming: Naming,
) -> Result<Committed> {
    commit_on_base_with(root, base, op, storage, naming, &CommitExtras::default())
}

fn commit_on(
    root: &Store,
    read_version: Option<u64>,
    known: Option<Base>,
    op: Operation,
    storage: &str,
    naming: Naming,
    extras: &CommitExtras,
) -> Result<Committed> {
    if let Some(u) = &extras.uuid {
        check_uuid(u)?;
    }
    let mut base_version = read_version;
    for _attempt in 0..MAX_COMMIT_ATTEMPTS {
        // Listed every time, even when the version read is likely the latest, and a
        // failed listing fails the commit: putting `read + 1` unseen would save a
        // request but could land a version below the latest when `read + 1` was
        // committed and cleaned up meanwhile (a cleanup with no age limit), and the
        // commit would be lost.
        let latest = match crate::versions::latest_version(root) {
            Ok(v) => Some(v.version),
            Err(TableError::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        // Check what was committed since we read.
        if let (Some(l), r) = (latest, base_version) {
            let from = r.unwrap_or(0);
            if l > from {
                if r.is_none() && !matches!(op, Operation::Overwrite(_)) {
                    return Err(TableError::Conflict {
                        what: format!("the dataset was created concurrently (now at version {l})"),
                    });
                }
                for v in from + 1..=l {
                    if matches!(op, Operation::Overwrite(_)) {
                        break;
                    }
                    // a version cleaned up since (automatic cleanup keeps only the
                    // last two): this writer read too old a version to rebase
                    let m = match read_manifest(root, v) {
                        Ok(m) => m,
                        // a metadata update is applied to the latest manifest's maps,
                        // whatever the cleaned-up versions did (pylance commits it too; a
                        // concurrent change of the same keys: the last writer's value)
                        Err(TableError::NotFound { .. })
                            if matches!(op, Operation::UpdateConfig(_)) =>
                        {
                            continue
                        }
                        Err(TableError::NotFound { .. }) => {
                            return Err(TableError::Conflict {
                                what: format!(
                                    "version {v}, committed after this writer read version {from}, was cleaned up; re-read and retry"
                                ),
                            })
                        }
                        Err(e) => return Err(e),
                    };
                    let theirs = read_transaction(root, &m.pb).and_then(|t| t.operation);
                    if !compatible(&op, theirs.as_ref()) {
                        return Err(TableError::Conflict {
                            what: format!(
                                "version {v} was committed after this writer read version {from} and its operation is incompatible; re-read and retry"
                            ),
                        });
                    }
                }
                base_version = Some(l);
            }
        }
        let (base, base_file) = match (base_version, &known) {
            (Some(v), Some(k)) if k.version == v => (
                Some(Manifest::parse(&k.manifest_file)?.pb),
                k.manifest_file.clone(),
            ),
            (Some(v), _) => {
                let (_, bytes) = read_manifest_file(root, v)?;
                (Some(Manifest::parse(&bytes)?.pb), bytes)
            }
            (None, _) => (None, bytes::Bytes::new()),
        };
        // Indices stay valid through appends and deletes (their fragment bitmaps say
        // what they cover); an overwrite drops them.
        // a restore takes the old version's contents and index section
        let restored = match &op {
            Operation::Restore(r) => {
                let (_, bytes) = read_manifest_file(root, r.version)?;
                Some((Manifest::parse(&bytes)?.pb, bytes))
            }
            _ => None,
        };
        let index_section = match (&base, &op) {
            (_, Operation::Restore(_)) => match &restored {
                Some((old, bytes)) => match old.index_section {
                    Some(pos) => Some(read_section(bytes, pos)?.to_vec()),
                    None => None,
                },
                None => None,
            },
            (Some(b), op) if !matches!(op, Operation::Overwrite(_)) => match b.index_section {
                Some(pos) => Some(read_section(&base_file, pos)?.to_vec()),
                None => None,
            },
            _ => None,
        };
        let index_section = match &op {
            Operation::CreateIndex(c) => Some(updated_index_section(index_section.as_deref(), c)?),
            _ => index_section,
        };
        let mut m = apply(
            base.as_ref(),
            &op,
            storage,
            restored.as_ref().map(|r| &r.0),
            extras.new_flags,
        )?;
        // a schema change drops the segments of the fields it removes; an update of
        // some columns takes its fragments out of those columns' segments
        let index_section = match (&op, index_section) {
            (Operation::Merge(_) | Operation::Project(_), Some(sec)) => {
                Some(retain_relevant_indices(sec, &m)?)
            }
            (Operation::Update(u), Some(sec)) if !u.fields_modified.is_empty() => {
                Some(uncover_modified(sec, u)?)
            }
            (_, sec) => sec,
        };
        let uuid = extras.uuid.clone().unwrap_or_else(random_uuid);
        let txn_name = format!("{}-{uuid}.txn", base_version.unwrap_or(0));
        let txn = pb::Transaction {
            read_version: base_version.unwrap_or(0),
            uuid,
            tag: String::new(),
            transaction_properties: extras.properties.clone(),
            operation: Some(op.clone()),
        };
        let txn_path = format!("_transactions/{txn_name}");
        if extras.uuid.is_some() {
            // a uuid the caller gave may be another commit's too: never replace (or,
            // losing a race below, remove) a transaction file this commit did not write
            if !root.put_if_absent(&txn_path, txn.encode_to_vec().into())? {
                return Err(TableError::Conflict {
                    what: format!(
                        "a transaction with uuid {:?} read at version {} was committed \
                         already: give each commit a uuid of its own",
                        txn.uuid,
                        base_version.unwrap_or(0)
                    ),
                });
            }
        } else {
            root.put(&txn_path, txn.encode_to_vec().into())?;
        }
        crash_point("after-txn");
        m.transaction_file = txn_name;
        let path = format!("_versions/{}", naming.file_name(m.version));
        crash_point("before-manifest");
        let bytes = manifest_bytes_with_index(&m, index_section.as_deref());
        if root.put_if_absent(&path, bytes.clone().into())? {
            write_hint(root, m.version);
            if !extras.skip_auto_cleanup {
                if let Err(e) = crate::commit::auto_cleanup(root, &m) {
                    root.context().warn(&format!(
                        "automatic cleanup after committing version {} failed (the commit stands): {e}",
                        m.version
                    ));
                }
            }
            return Ok(Committed {
                manifest: Manifest::parse(&bytes)?,
                path,
                bytes,
            });
        }
        // Lost the race: our transaction file goes; try again.
        let _ = root.delete(&txn_path);
    }
    Err(TableError::Conflict {
        what: format!("gave up after {MAX_COMMIT_ATTEMPTS} attempts racing other writers"),
    })
}

/// Index names the reference treats as the system's own, never dropped with a schema
/// change: the fragment reuse index and the MemWAL index.
const FRAG_REUSE_INDEX_NAME: &str = "__lance_frag_reuse";
const MEM_WAL_INDEX_NAME: &str = "__lance_mem_wal";

/// The index section `sec` as pylance 14 keeps it after a schema change resulting in
/// `m` (spec: "Transactions" → Project, Merge): a segment of a field the schema no
/// longer has goes; system indexes stay. (pylance 14 keeps segments that cover no live
/// fragment after deletes, so emptiness drops nothing here.) The bytes come back
/// unchanged when nothing goes.
fn retain_relevant_indices(sec: Vec<u8>, m: &pb::Manifest) -> Result<Vec<u8>> {
    use std::collections::HashSet;
    let mut section = pb::IndexSection::decode(sec.as_slice())
        .map_err(|e| TableError::corrupt(format!("index section does not decode: {e}")))?;
    let before = section.indices.len();
    let fields: HashSet<i32> = m.fields.iter().map(|f| f.id).collect();
    section.indices.retain(|i| {
        i.name == FRAG_REUSE_INDEX_NAME
            || i.name == MEM_WAL_INDEX_NAME
            || i.fields.iter().all(|f| fields.contains(f))
    });
    if section.indices.len() == before {
        return Ok(sec);
    }
    Ok(section.encode_to_vec())
}

/// The index section after the update `u` (spec: "Transactions" → Update): a segment
/// on a field `u` modified no longer covers the fragments `u` updated (their values
/// there are new), as pylance 14 commits it. The bytes come back unchanged when
/// nothing changes.
fn uncover_modified(sec: Vec<u8>, u: &pb::transaction::Update) -> Result<Vec<u8>> {
    let mut section = pb::IndexSection::decode(sec.as_slice())
        .map_err(|e| TableError::corrupt(format!("index section does not decode: {e}")))?;
    let mut changed = false;
    for i in &mut section.indices {
        if !i
            .fields
            .iter()
            .any(|f| u.fields_modified.contains(&(*f as u32)))
        {
            continue;
        }
        let mut covered = roaring::RoaringBitmap::deserialize_from(i.fragment_bitmap.as_slice())
            .map_err(|e| TableError::corrupt(format!("index {} fragment bitmap: {e}", i.name)))?;
        for f in &u.updated_fragments {
            if let Ok(id) = u32::try_from(f.id) {
                changed |= covered.remove(id);
            }
        }
        let mut bytes = Vec::new();
        covered
            .serialize_into(&mut bytes)
            .map_err(|e| TableError::invalid(format!("fragment bitmap: {e}")))?;
        i.fragment_bitmap = bytes;
    }
    if !changed {
        return Ok(sec);
    }
    Ok(section.encode_to_vec())
}

/// The index section after `change`: the old segments minus those it removes (by
/// uuid), plus its new ones.
fn updated_index_section(
    old: Option<&[u8]>,
    change: &pb::transaction::CreateIndex,
) -> Result<Vec<u8>> {
    let mut sec = match old {
        Some(b) => pb::IndexSection::decode(b)
            .map_err(|e| TableError::corrupt(format!("index section does not decode: {e}")))?,
        None => pb::IndexSection::default(),
    };
    let gone: Vec<_> = change
        .removed_indices
        .iter()
        .map(|i| i.uuid.clone())
        .collect();
    sec.indices.retain(|i| !gone.contains(&i.uuid));
    sec.indices.extend(change.new_indices.iter().cloned());
    Ok(sec.encode_to_vec())
}

/// Writes the files of a new index segment under `_indices/<uuid>/` (before the commit
/// that references them); returns their manifest entries.
pub fn write_index_files(
    root: &Store,
    uuid: &[u8],
    files: &[(&str, IndexSource<'_>)],
) -> Result<Vec<pb::IndexFile>> {
    let dir = format!("_indices/{}", crate::dataset::uuid_dir(uuid)?);
    let mut out = Vec::with_capacity(files.len());
    for (name, source) in files {
        let p = format!("{dir}/{name}");
        let size = match source {
            IndexSource::Bytes(bytes) => {
                root.put(&p, bytes::Bytes::copy_from_slice(bytes))?;
                bytes.len() as u64
            }
            IndexSource::File(from) => root.copy_from_local(from, &p)?,
        };
        out.push(pb::IndexFile {
            path: (*name).to_string(),
            size_bytes: size,
        });
    }
    Ok(out)
}

/// Where an index file's bytes come from.
pub enum IndexSource<'a> {
    /// In memory.
    Bytes(&'a [u8]),
    /// A local (scratch) file, copied in.
    File(&'a Path),
}

/// 16 random bytes for an index segment's uuid (version-4 layout).
pub fn random_uuid_bytes() -> Vec<u8> {
    let h = random_hex(32);
    let mut b: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    b
}

/// The index segments a manifest file lists (its index section; none without one).
pub fn manifest_indices(
    file: &[u8],
    m: &crate::commit::Manifest,
) -> Result<Vec<pb::IndexMetadata>> {
    match m.pb.index_section {
        None => Ok(Vec::new()),
        Some(pos) => pb::IndexSection::decode(read_section(file, pos)?)
            .map(|s| s.indices)
            .map_err(|e| TableError::corrupt(format!("index section does not decode: {e}"))),
    }
}

/// The bytes of the length-prefixed message at `pos` of a manifest file.
pub fn read_section(file: &[u8], pos: u64) -> Result<&[u8]> {
    let pos = usize::try_from(pos).map_err(|_| TableError::corrupt("section position"))?;
    let len = file
        .get(pos..pos + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(|| {
            TableError::corrupt(format!("section at {pos} outside the manifest file"))
        })?;
    file.get(pos + 4..pos + 4 + len).ok_or_else(|| {
        TableError::corrupt(format!(
            "section at {pos} of {len} bytes overruns the manifest file"
        ))
    })
}

fn read_manifest(root: &Store, version: u64) -> Result<Manifest> {
    let (_, bytes) = read_manifest_file(root, version)?;
    Manifest::parse(&bytes)
}

/// Best-effort `_versions/latest_version_hint.json` on local disk, as pylance writes
/// it there (readers never trust it blindly). Not on object stores: pylance writes none
/// there, and Lancer finds the latest version by one listing.
pub fn write_hint(root: &Store, version: u64) {
    if root.local_root().is_none() {
        return;
    }
    let _ = root.put(
        "_versions/latest_version_hint.json",
        format!("{{\"version\":{version}}}").into(),
    );
}
