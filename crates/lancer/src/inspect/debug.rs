//! Debug text of a dataset's metadata, as pylance 14's `lance.debug` prints it: the
//! manifest, one fragment with the schema of each of its data files, the Lance schema
//! (field ids, parents, logical types) and the latest transactions. The information
//! is pylance's; the text is Rust's pretty `Debug` of Lancer's own structures (the
//! manifest's and transactions' protobuf messages, a schema tree of the fields' ids,
//! names, types, nullability and metadata), so field names and nesting differ from
//! pylance's in-memory structs.

use std::collections::BTreeMap;

use lancer_format::schema::{LanceField, LanceSchema};
use lancer_table::pb;

use crate::{Dataset, Error, Result};

/// One field of a Lance schema as printed.
#[derive(Debug)]
#[allow(dead_code)] // read through Debug only
struct Field {
    name: String,
    id: i32,
    parent_id: i32,
    logical_type: String,
    metadata: BTreeMap<String, String>,
    nullable: bool,
    children: Vec<Field>,
}

/// A Lance schema as printed.
#[derive(Debug)]
#[allow(dead_code)] // read through Debug only
struct Schema {
    fields: Vec<Field>,
    metadata: BTreeMap<String, String>,
}

fn field(f: &LanceField, keep: &dyn Fn(i32) -> bool) -> Option<Field> {
    let children: Vec<Field> = f.children.iter().filter_map(|c| field(c, keep)).collect();
    if !keep(f.id) && children.is_empty() {
        return None;
    }
    Some(Field {
        name: f.name.clone(),
        id: f.id,
        parent_id: f.parent_id,
        logical_type: f.logical_type.clone(),
        metadata: f.metadata.clone().into_iter().collect(),
        nullable: f.nullable,
        children,
    })
}

fn schema(s: &LanceSchema, keep: &dyn Fn(i32) -> bool) -> Schema {
    Schema {
        fields: s.fields.iter().filter_map(|f| field(f, keep)).collect(),
        metadata: s.metadata.clone().into_iter().collect(),
    }
}

/// The dataset's Lance schema: every field with its id, parent id, logical type,
/// metadata, nullability and children.
pub fn format_schema(ds: &Dataset) -> String {
    format!("{:#?}", schema(&ds.manifest().schema, &|_| true))
}

/// The manifest as printed: its schema tree, then the manifest's other contents.
#[derive(Debug)]
#[allow(dead_code)] // read through Debug only
struct Manifest {
    schema: Schema,
    manifest: pb::Manifest,
}

/// This version's manifest: the schema tree, then every other manifest field
/// (version, writer, fragments with their data and deletion files, index section,
/// timestamps, feature flags, transaction file, config, ...).
pub fn format_manifest(ds: &Dataset) -> String {
    let mut pb = ds.manifest().pb.clone();
    pb.fields.clear();
    format!(
        "{:#?}",
        Manifest {
            schema: schema(&ds.manifest().schema, &|_| true),
            manifest: pb,
        }
    )
}

/// One data file of a fragment as printed, with the part of the schema it holds.
#[derive(Debug)]
#[allow(dead_code)] // read through Debug only
struct DataFile {
    path: String,
    fields: Vec<i32>,
    column_indices: Vec<i32>,
    schema: Schema,
    major_version: u32,
    minor_version: u32,
}

/// A fragment as printed.
#[derive(Debug)]
#[allow(dead_code)] // read through Debug only
struct Fragment {
    id: u64,
    files: Vec<DataFile>,
    deletion_file: Option<pb::DeletionFile>,
    physical_rows: u64,
}

/// Fragment `fragment_id` of this version: its data files, each with the fields it
/// holds (the schema projected to them), its deletion file and its physical rows. A
/// fragment the version does not have is an [`Error::InvalidArgument`].
pub fn format_fragment(ds: &Dataset, fragment_id: u64) -> Result<String> {
    let frag = ds
        .fragments()
        .iter()
        .find(|f| f.id == fragment_id)
        .ok_or_else(|| Error::InvalidArgument {
            what: format!(
                "fragment {fragment_id} is not in version {} of the dataset",
                ds.version()
            ),
        })?;
    let files = frag
        .files
        .iter()
        .map(|df| DataFile {
            path: df.path.clone(),
            fields: df.fields.clone(),
            column_indices: df.column_indices.clone(),
            schema: schema(&ds.manifest().schema, &|id| df.fields.contains(&id)),
            major_version: df.file_major_version,
            minor_version: df.file_minor_version,
        })
        .collect();
    Ok(format!(
        "{:#?}",
        Fragment {
            id: frag.id,
            files,
            deletion_file: frag.deletion_file,
            physical_rows: frag.physical_rows,
        }
    ))
}

/// The transactions of this version and the ones before it, newest first, at most
/// `max_transactions` of them: each the transaction file's protobuf (read version,
/// uuid, operation with its fragments or schema, tag, properties). A version without
/// a readable transaction file is skipped.
pub fn list_transactions(ds: &Dataset, max_transactions: usize) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut v = ds.version();
    while v >= 1 && out.len() < max_transactions {
        match crate::inspect::transactions::read_transaction(ds, v) {
            Ok(Some(t)) => out.push(format!("{t:#?}")),
            Ok(None) => {}
            // versions cleaned up end the history
            Err(crate::Error::Table(lancer_table::TableError::NotFound { .. })) => break,
            Err(e) => return Err(e),
        }
        v -= 1;
    }
    Ok(out)
}
