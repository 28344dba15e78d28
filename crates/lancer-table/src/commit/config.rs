//! Metadata-only commits and automatic cleanup.
//!
//! A dataset carries four string maps beside its data: the **config** (settings such as
//! automatic cleanup, manifest field 16), the **table metadata** (field 19), the
//! **schema metadata** and each field's **metadata**. An `UpdateConfig` transaction
//! (operation 110 of the table format's `Transaction`) changes any of them without
//! touching data: per map, keys set or removed, or the whole map replaced
//! (lance-reference "Transactions"; the wire shape is `UpdateMap` /
//! `UpdateMapEntry` in `protos/transaction.proto`).
//!
//! **Automatic cleanup** (pylance's `auto_cleanup_options`): when the config holds
//! `lance.auto_cleanup.interval` = N, every commit whose new version is a multiple of N
//! then removes versions older than `lance.auto_cleanup.older_than` (a duration such as
//! `14days` or `3600s`) and not among the newest `lance.auto_cleanup.retain_versions`
//! (when set); tagged versions stay. A failed cleanup never fails the commit: it is
//! reported as a warning on the store's session.

use std::collections::HashMap;
use std::time::Duration;

use lancer_io::Store;

use crate::dataset::Dataset;
use crate::pb;
use crate::pb::transaction::{Operation, UpdateConfig, UpdateMap, UpdateMapEntry};
use crate::versions::CleanupStats;
use crate::{Result, TableError};

/// Config key: commits between automatic cleanups.
pub const AUTO_CLEANUP_INTERVAL: &str = "lance.auto_cleanup.interval";
/// Config key: the age a version must reach before automatic cleanup removes it.
pub const AUTO_CLEANUP_OLDER_THAN: &str = "lance.auto_cleanup.older_than";
/// Config key: the newest versions automatic cleanup always keeps.
pub const AUTO_CLEANUP_RETAIN_VERSIONS: &str = "lance.auto_cleanup.retain_versions";

/// Changes to one string map: keys set (`Some`) or removed (`None`); with `replace`,
/// the map becomes exactly the keys given a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapUpdate {
    /// Keys and their new values (`None`: remove the key).
    pub entries: Vec<(String, Option<String>)>,
    /// Replace the whole map instead of changing single keys.
    pub replace: bool,
}

impl MapUpdate {
    /// Sets (or with `None` removes) the keys of `entries`.
    pub fn set(entries: impl IntoIterator<Item = (String, Option<String>)>) -> Self {
        Self {
            entries: entries.into_iter().collect(),
            replace: false,
        }
    }

    /// Makes the map exactly `entries`.
    pub fn replace(entries: impl IntoIterator<Item = (String, String)>) -> Self {
        Self {
            entries: entries.into_iter().map(|(k, v)| (k, Some(v))).collect(),
            replace: true,
        }
    }

    fn to_pb(&self) -> UpdateMap {
        UpdateMap {
            update_entries: self
                .entries
                .iter()
                .map(|(key, value)| UpdateMapEntry {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect(),
            replace: self.replace,
        }
    }
}

/// One metadata-only commit's changes.
#[derive(Debug, Clone, Default)]
pub struct MetadataUpdate {
    /// The dataset config.
    pub config: Option<MapUpdate>,
    /// The table metadata.
    pub table: Option<MapUpdate>,
    /// The schema's metadata.
    pub schema: Option<MapUpdate>,
    /// Fields' metadata, by field path (`a.b` for a struct's child).
    pub fields: Vec<(String, MapUpdate)>,
}

/// Automatic cleanup settings for a new dataset (pylance's `AutoCleanupConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoCleanup {
    /// Clean up at every version that is a multiple of this (at least 1).
    pub interval: u64,
    /// Versions younger than this stay.
    pub older_than: Duration,
}

impl AutoCleanup {
    /// The config entries that turn it on, as pylance writes them (`older_than` in
    /// whole seconds, e.g. `"3600s"`).
    pub fn config_entries(&self) -> Vec<(String, String)> {
        vec![
            (AUTO_CLEANUP_INTERVAL.into(), self.interval.to_string()),
            (
                AUTO_CLEANUP_OLDER_THAN.into(),
                format!("{}s", self.older_than.as_secs()),
            ),
        ]
    }
}

/// Applies `change` to the string map `map`.
fn apply_map(map: &mut HashMap<String, String>, change: &UpdateMap) {
    if change.replace {
        map.clear();
    }
    for e in &change.update_entries {
        match &e.value {
            Some(v) => {
                map.insert(e.key.clone(), v.clone());
            }
            None => {
                map.remove(&e.key);
            }
        }
    }
}

/// As [`apply_map`] for a map of byte values (schema and field metadata).
fn apply_bytes_map(map: &mut HashMap<String, Vec<u8>>, change: &UpdateMap) {
    if change.replace {
        map.clear();
    }
    for e in &change.update_entries {
        match &e.value {
            Some(v) => {
                map.insert(e.key.clone(), v.clone().into_bytes());
            }
            None => {
                map.remove(&e.key);
            }
        }
    }
}

/// Applies an `UpdateConfig` operation to the manifest `m` (the new version's). The
/// older form (fields 1-4, written by earlier Lance releases) is honoured too: upserts
/// and deletions of config keys, and replacements of the schema metadata and of
/// fields' metadata.
pub(crate) fn apply_update(m: &mut pb::Manifest, u: &UpdateConfig) -> Result<()> {
    for (k, v) in &u.upsert_values {
        m.config.insert(k.clone(), v.clone());
    }
    for k in &u.delete_keys {
        m.config.remove(k);
    }
    if !u.schema_metadata.is_empty() {
        m.schema_metadata = u
            .schema_metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect();
    }
    for (id, f) in &u.field_metadata {
        let field = field_by_id(m, i64::from(*id))?;
        field.metadata = f
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect();
    }
    if let Some(c) = &u.config_updates {
        apply_map(&mut m.config, c);
    }
    if let Some(t) = &u.table_metadata_updates {
        apply_map(&mut m.table_metadata, t);
    }
    if let Some(s) = &u.schema_metadata_updates {
        apply_bytes_map(&mut m.schema_metadata, s);
    }
    for (id, change) in &u.field_metadata_updates {
        let field = field_by_id(m, i64::from(*id))?;
        let mut map: HashMap<String, Vec<u8>> =
            std::mem::take(&mut field.metadata).into_iter().collect();
        apply_bytes_map(&mut map, change);
        field.metadata = map.into_iter().collect();
    }
    Ok(())
}

fn field_by_id(m: &mut pb::Manifest, id: i64) -> Result<&mut lancer_format::pb::file::Field> {
    m.fields
        .iter_mut()
        .find(|f| i64::from(f.id) == id)
        .ok_or_else(|| TableError::Conflict {
            what: format!(
                "field id {id} of a metadata update is not in the schema (a concurrent commit dropped it?)"
            ),
        })
}

/// Whether two concurrent changes of one map collide: a replacement collides with
/// any change, single keys when both change one.
fn maps_overlap(a: Option<&UpdateMap>, b: Option<&UpdateMap>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.replace
                || b.replace
                || a.update_entries
                    .iter()
                    .any(|x| b.update_entries.iter().any(|y| x.key == y.key))
        }
        _ => false,
    }
}

/// Whether two metadata updates committed concurrently can both stand: they must not
/// change the same config or table-metadata key, and not both the schema metadata or
/// the same field's metadata.
pub(crate) fn updates_compatible(a: &UpdateConfig, b: &UpdateConfig) -> bool {
    let legacy = |u: &UpdateConfig| {
        !u.upsert_values.is_empty()
            || !u.delete_keys.is_empty()
            || !u.schema_metadata.is_empty()
            || !u.field_metadata.is_empty()
    };
    if legacy(a) || legacy(b) {
        return false;
    }
    let schema_both = a.schema_metadata_updates.is_some() && b.schema_metadata_updates.is_some();
    let same_field = a
        .field_metadata_updates
        .keys()
        .any(|id| b.field_metadata_updates.contains_key(id));
    !maps_overlap(a.config_updates.as_ref(), b.config_updates.as_ref())
        && !maps_overlap(
            a.table_metadata_updates.as_ref(),
            b.table_metadata_updates.as_ref(),
        )
        && !schema_both
        && !same_field
}

/// Whether an update changes the schema's or fields' metadata (an operation carrying
/// a whole schema, committed concurrently, would undo it).
pub(crate) fn touches_schema(u: &UpdateConfig) -> bool {
    u.schema_metadata_updates.is_some()
        || !u.field_metadata_updates.is_empty()
        || !u.schema_metadata.is_empty()
        || !u.field_metadata.is_empty()
}

/// Parses a duration as the config holds it: `"3600s"`, `"14days"`, `"1h 30m"`, ...
pub fn parse_duration(text: &str) -> Result<Duration> {
    humantime::parse_duration(text.trim()).map_err(|e| TableError::InvalidInput {
        what: format!(
            "'{text}' is not a duration ({e}): write it as a number and a unit, e.g. 3600s or 14days"
        ),
    })
}

/// Runs automatic cleanup after the commit of `m` when its config asks for it at
/// this version (see the module docs). `Ok(None)`: not due.
pub fn auto_cleanup(root: &Store, m: &pb::Manifest) -> Result<Option<CleanupStats>> {
    let Some(interval) = m.config.get(AUTO_CLEANUP_INTERVAL) else {
        return Ok(None);
    };
    let interval: u64 = interval.trim().parse().map_err(|_| TableError::InvalidInput {
        what: format!(
            "config {AUTO_CLEANUP_INTERVAL} is '{interval}', not a whole number of versions: set it with update_config"
        ),
    })?;
    if interval == 0 || !m.version.is_multiple_of(interval) {
        return Ok(None);
    }
    let older_than = m
        .config
        .get(AUTO_CLEANUP_OLDER_THAN)
        .map(|t| parse_duration(t))
        .transpose()?;
    let retain = m
        .config
        .get(AUTO_CLEANUP_RETAIN_VERSIONS)
        .map(|n| {
            n.trim()
                .parse::<usize>()
                .map_err(|_| TableError::InvalidInput {
                    what: format!(
                    "config {AUTO_CLEANUP_RETAIN_VERSIONS} is '{n}', not a whole number of versions"
                ),
                })
        })
        .transpose()?;
    if older_than.is_none() && retain.is_none() {
        return Ok(None);
    }
    // as a writer that read the version before this one (pylance runs it with the
    // dataset it committed on): that version and newer ones stay
    let keep_from = m.version.saturating_sub(1).max(1);
    crate::versions::cleanup_from(root, older_than, retain, false, false, Some(keep_from)).map(Some)
}

impl Dataset {
    /// Commits `update` (config, table, schema and field metadata) as one
    /// metadata-only version; returns it. Fields are named by path; a missing one is the
    /// caller's error and nothing is committed.
    pub fn update_metadata(&self, update: &MetadataUpdate) -> Result<Dataset> {
        let mut fields = HashMap::new();
        for (path, change) in &update.fields {
            let id = self.field_id(path)?;
            fields.insert(id, change.to_pb());
        }
        let op = Operation::UpdateConfig(UpdateConfig {
            config_updates: update.config.as_ref().map(MapUpdate::to_pb),
            table_metadata_updates: update.table.as_ref().map(MapUpdate::to_pb),
            schema_metadata_updates: update.schema.as_ref().map(MapUpdate::to_pb),
            field_metadata_updates: fields,
            ..Default::default()
        });
        self.commit_op(op)
    }

    /// The id of the field at `path` (`a.b`: child `b` of struct `a`).
    fn field_id(&self, path: &str) -> Result<i32> {
        let mut fields = &self.manifest().schema.fields;
        let mut found = None;
        for part in path.split('.') {
            let f = fields
                .iter()
                .find(|f| f.name == part)
                .ok_or_else(|| TableError::InvalidInput {
                    what: format!(
                        "no field '{path}' in the dataset's schema: name a field (a.b for a struct's child)"
                    ),
                })?;
            found = Some(f.id);
            fields = &f.children;
        }
        found.ok_or_else(|| TableError::InvalidInput {
            what: "an empty field path: name a field".into(),
        })
    }
}
