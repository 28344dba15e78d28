//! What a dataset's manifest says about its columns, fragments and rows, and checks of
//! the index files it names (spec: "Table format" → fragments, deletion files; "Row ID
//! and Row Address"; "Indices" → index metadata): the small facts the scan, search,
//! index and write modules all ask, kept here, below them, so none of those modules
//! reaches into another for them.

use std::collections::HashMap;
use std::sync::Arc;

use lancer_table::{pb, TableError};

use crate::{Dataset, Error, Result, Store};

/// The field id of the top-level column `column` (indexes are on top-level columns);
/// `what` says what the column was wanted for, in the error.
pub(crate) fn top_level_field(ds: &Dataset, column: &str, what: &str) -> Result<i32> {
    ds.manifest()
        .schema
        .fields
        .iter()
        .find(|f| f.name == column && f.parent_id == -1)
        .map(|f| f.id)
        .ok_or_else(|| Error::InvalidArgument {
            what: format!("no column {column:?} {what}"),
        })
}

/// The field id and Arrow type of the field at `path` (a top-level column, then struct
/// fields by name), or None.
pub(crate) fn field_at_path<S: AsRef<str>>(
    ds: &Dataset,
    path: &[S],
) -> Option<(i32, arrow_schema::DataType)> {
    let (first, rest) = path.split_first()?;
    let fields = &ds.manifest().schema.fields;
    let mut f = fields
        .iter()
        .find(|f| f.parent_id == -1 && f.name == first.as_ref())?;
    let schema = ds.schema();
    let mut t = schema
        .field_with_name(first.as_ref())
        .ok()?
        .data_type()
        .clone();
    for name in rest {
        let arrow_schema::DataType::Struct(children) = &t else {
            return None;
        };
        let child = children.iter().find(|c| c.name() == name.as_ref())?;
        t = child.data_type().clone();
        f = f.children.iter().find(|c| c.name == name.as_ref())?;
    }
    Some((f.id, t))
}

/// The field id of `column`: a top-level column, or a struct field by its path
/// (`meta.lang`; a top-level name holding a dot is taken whole first). `what` says what
/// the column was wanted for, in the error.
pub(crate) fn indexable_field(ds: &Dataset, column: &str, what: &str) -> Result<i32> {
    if let Ok(id) = top_level_field(ds, column, what) {
        return Ok(id);
    }
    let path: Vec<&str> = column.split('.').collect();
    field_at_path(ds, &path)
        .map(|(id, _)| id)
        .ok_or_else(|| Error::InvalidArgument {
            what: format!("no column {column:?} {what}"),
        })
}

/// The dotted path of field `id` (`meta.lang` for a struct's child), or None when the
/// schema has no such field.
pub(crate) fn field_path(schema: &lancer_format::schema::LanceSchema, id: i32) -> Option<String> {
    fn walk(fields: &[lancer_format::schema::LanceField], id: i32, at: &mut Vec<String>) -> bool {
        for f in fields {
            at.push(f.name.clone());
            if f.id == id || walk(&f.children, id, at) {
                return true;
            }
            at.pop();
        }
        false
    }
    let mut at = Vec::new();
    walk(&schema.fields, id, &mut at).then(|| at.join("."))
}

/// The Arrow field at `column` (top-level, or a struct field by path), or None.
pub(crate) fn arrow_field_at(ds: &Dataset, column: &str) -> Option<arrow_schema::Field> {
    let schema = ds.schema();
    if let Ok(f) = schema.field_with_name(column) {
        return Some(f.clone());
    }
    let mut parts = column.split('.');
    let mut f = schema.field_with_name(parts.next()?).ok()?.clone();
    for name in parts {
        let arrow_schema::DataType::Struct(children) = f.data_type() else {
            return None;
        };
        f = children.iter().find(|c| c.name() == name)?.as_ref().clone();
    }
    Some(f)
}

/// The fragments of `ds` whose ids are not in `covered` (what an index leaves to scan).
pub(crate) fn uncovered_fragments(ds: &Dataset, covered: &roaring::RoaringBitmap) -> Vec<u64> {
    ds.fragments()
        .iter()
        .map(|f| f.id)
        .filter(|&id| u32::try_from(id).map_or(true, |i| !covered.contains(i)))
        .collect()
}

/// The rows of fragment `f` its deletion file leaves.
pub(crate) fn live_rows(f: &pb::DataFragment) -> u64 {
    let deleted = f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows);
    f.physical_rows.saturating_sub(deleted)
}

/// For a dataset with stable row ids, each live fragment row's id mapped to its
/// address (`None` without stable row ids: ids are addresses).
pub(crate) fn stable_id_addresses(ds: &Dataset) -> Result<Option<Arc<HashMap<u64, u64>>>> {
    if !ds.uses_stable_row_ids() {
        return Ok(None);
    }
    // A version's rows never move, so the map is kept in the session's metadata cache
    // by dataset root and version.
    let cache = ds.store().context().metadata_cache();
    let (root, id) = (
        crate::session::root_key(ds),
        [
            b"stable-row-addresses:".as_slice(),
            &ds.version().to_le_bytes(),
        ]
        .concat(),
    );
    if let Some(m) = cache.get::<HashMap<u64, u64>>(&root, &id) {
        return Ok(Some(m));
    }
    let mut map = HashMap::new();
    for f in ds.fragments() {
        let Some(ids) = ds.fragment_row_ids(f)? else {
            return Ok(None);
        };
        map.reserve(ids.len());
        for (offset, &id) in ids.iter().enumerate() {
            map.insert(id, (f.id << 32) | offset as u64);
        }
    }
    let map = Arc::new(map);
    cache.insert(&root, &id, map.clone());
    Ok(Some(map))
}

/// A new index segment's files must be under `_indices/<uuid>/` (each file it lists,
/// of its recorded size; at least one when it lists none).
pub(crate) fn check_index_files(store: &Store, idx: &pb::IndexMetadata) -> Result<()> {
    if idx.base_id.is_some() {
        // a segment in another base path (a shallow clone's) is the clone's to check
        return Ok(());
    }
    let uuid = idx.uuid.as_ref().map(|u| u.uuid.as_slice()).unwrap_or(&[]);
    let dir = format!("_indices/{}", lancer_table::dataset::uuid_dir(uuid)?);
    if idx.files.is_empty() {
        if store.list(&dir).map_err(TableError::from)?.is_empty() {
            return Err(tampered(format!(
                "index segment {:?}: {} holds no files",
                idx.name,
                store.display(&dir)
            )));
        }
        return Ok(());
    }
    for f in &idx.files {
        let rel = format!("{dir}/{}", f.path);
        match store.size(&rel).map_err(TableError::from)? {
            None => {
                return Err(tampered(format!(
                    "index file {} does not exist",
                    store.display(&rel)
                )))
            }
            Some(n) if f.size_bytes != 0 && n != f.size_bytes => {
                return Err(tampered(format!(
                    "index file {} has {n} bytes, the segment records {}",
                    store.display(&rel),
                    f.size_bytes
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

pub(crate) fn tampered(what: String) -> Error {
    Error::InvalidArgument {
        what: format!(
            "{what}; the fragment description does not match the files written (edited, or \
             its files removed): write the fragments again"
        ),
    }
}
