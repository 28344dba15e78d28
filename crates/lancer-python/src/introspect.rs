//! Looking inside a dataset from Python, as pylance 14 lets its users (issue 41): a
//! vector index's partitions as stored (`VectorIndexReader`), the debug text of the
//! manifest, a fragment, the schema and the transactions (`lance.debug`), the Lance
//! schema with its field ids (`LanceSchema`), one fragment's validation, and tags with
//! their metadata and times. Each a thin call into the `lancer` crate, GIL released.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;

use crate::dataset::Dataset;
use crate::errors;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_index_partition, m)?)?;
    m.add_function(wrap_pyfunction!(debug_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(debug_fragment, m)?)?;
    m.add_function(wrap_pyfunction!(debug_schema, m)?)?;
    m.add_function(wrap_pyfunction!(debug_transactions, m)?)?;
    m.add_function(wrap_pyfunction!(lance_fields, m)?)?;
    m.add_function(wrap_pyfunction!(validate_fragment, m)?)?;
    m.add_function(wrap_pyfunction!(tag_records, m)?)?;
    m.add_function(wrap_pyfunction!(create_tag, m)?)?;
    m.add_function(wrap_pyfunction!(update_tag, m)?)?;
    m.add_function(wrap_pyfunction!(replace_tag_metadata, m)?)?;
    Ok(())
}

/// The rows of partition `partition` of the vector index `name` as its segments store
/// them (`_rowid`, with `with_vector` every stored column), the file's schema metadata
/// kept.
#[pyfunction]
fn read_index_partition(
    py: Python<'_>,
    ds: &Dataset,
    name: String,
    partition: usize,
    with_vector: bool,
) -> PyResult<PyArrowType<RecordBatch>> {
    py.detach(|| {
        lancer::index::read_index_partition(&ds.ds, &name, partition, with_vector)
            .map(PyArrowType)
            .map_err(errors::lancer)
    })
}

/// The manifest's debug text.
#[pyfunction]
fn debug_manifest(ds: &Dataset) -> String {
    lancer::inspect::format_manifest(&ds.ds)
}

/// Fragment `fragment_id`'s debug text.
#[pyfunction]
fn debug_fragment(ds: &Dataset, fragment_id: u64) -> PyResult<String> {
    lancer::inspect::format_fragment(&ds.ds, fragment_id).map_err(errors::lancer)
}

/// The Lance schema's debug text.
#[pyfunction]
fn debug_schema(ds: &Dataset) -> String {
    lancer::inspect::format_schema(&ds.ds)
}

/// The debug text of the latest `max_transactions` transactions, newest first.
#[pyfunction]
fn debug_transactions(
    py: Python<'_>,
    ds: &Dataset,
    max_transactions: usize,
) -> PyResult<Vec<String>> {
    py.detach(|| {
        lancer::inspect::list_transactions(&ds.ds, max_transactions).map_err(errors::lancer)
    })
}

/// One Lance field for Python: id, parent id, name, logical type, nullable, metadata,
/// whether it is part of the unenforced primary key, children.
pub(crate) type FieldRow = (
    i32,
    i32,
    String,
    String,
    bool,
    BTreeMap<String, String>,
    bool,
    Vec<i32>,
);

/// The dataset's Lance schema, depth first: one row per field (children as the ids of
/// their rows).
#[pyfunction]
fn lance_fields(ds: &Dataset) -> Vec<FieldRow> {
    let m = ds.ds.manifest();
    let pk =
        m.pb.fields
            .iter()
            .filter(|f| f.unenforced_primary_key)
            .map(|f| f.id)
            .collect();
    field_rows(&m.schema, &pk)
}

/// `schema`'s fields depth first as [`FieldRow`]s (`pk`: the ids of the unenforced
/// primary key's fields).
pub(crate) fn field_rows(
    schema: &lancer::file::LanceSchema,
    pk: &std::collections::HashSet<i32>,
) -> Vec<FieldRow> {
    let mut out = Vec::new();
    fn walk(
        f: &lancer::file::LanceField,
        pk: &std::collections::HashSet<i32>,
        out: &mut Vec<FieldRow>,
    ) {
        out.push((
            f.id,
            f.parent_id,
            f.name.clone(),
            f.logical_type.clone(),
            f.nullable,
            f.metadata.clone().into_iter().collect(),
            pk.contains(&f.id),
            f.children.iter().map(|c| c.id).collect(),
        ));
        for c in &f.children {
            walk(c, pk, out);
        }
    }
    for f in &schema.fields {
        walk(f, pk, &mut out);
    }
    out
}

/// The problems of fragment `fragment_id` (data files, deletion file); empty when it
/// checks out.
#[pyfunction]
fn validate_fragment(py: Python<'_>, ds: &Dataset, fragment_id: u64) -> PyResult<Vec<String>> {
    py.detach(|| lancer::inspect::fragment_problems(&ds.ds, fragment_id).map_err(errors::lancer))
}

/// One tag for Python: name, branch, version, created and updated (RFC 3339),
/// manifest size, metadata.
type TagRow = (
    String,
    Option<String>,
    u64,
    String,
    String,
    u64,
    BTreeMap<String, String>,
);

/// Every tag of the dataset's root with what its file records, by name.
#[pyfunction]
fn tag_records(py: Python<'_>, ds: &Dataset) -> PyResult<Vec<TagRow>> {
    py.detach(|| {
        let tags = lancer::versions::list_tag_records(ds.ds.store()).map_err(errors::table)?;
        Ok(tags
            .into_iter()
            .map(|(n, r)| {
                (
                    n,
                    r.branch,
                    r.version,
                    r.created_at,
                    r.updated_at,
                    r.manifest_size,
                    r.metadata,
                )
            })
            .collect())
    })
}

/// Bytes of `version`'s manifest (what a tag records).
fn manifest_size(ds: &lancer::Dataset, version: u64) -> Result<u64, lancer::TableError> {
    let store = ds.store();
    let path = lancer::versions::manifest_path(store, version)?;
    Ok(store.size(&path)?.unwrap_or(0))
}

/// Tags `version` as `name`, recording its manifest's size (an existing tag is a
/// conflict).
#[pyfunction]
fn create_tag(py: Python<'_>, ds: &Dataset, name: String, version: u64) -> PyResult<()> {
    py.detach(|| {
        let size = manifest_size(&ds.ds, version).map_err(errors::table)?;
        match lancer::versions::create_tag(ds.ds.store(), &name, version, size) {
            // an existing name is the caller's mistake (pylance: a ValueError)
            Err(e @ lancer::TableError::Conflict { .. }) => {
                Err(errors::invalid_input(e.to_string()))
            }
            r => r.map_err(errors::table),
        }
    })
}

/// Moves tag `name` to `version`, keeping its creation time and metadata.
#[pyfunction]
fn update_tag(py: Python<'_>, ds: &Dataset, name: String, version: u64) -> PyResult<()> {
    py.detach(|| {
        let size = manifest_size(&ds.ds, version).map_err(errors::table)?;
        lancer::versions::update_tag(ds.ds.store(), &name, version, size).map_err(errors::table)
    })
}

/// Replaces tag `name`'s metadata.
#[pyfunction]
fn replace_tag_metadata(
    py: Python<'_>,
    ds: &Dataset,
    name: String,
    metadata: BTreeMap<String, String>,
) -> PyResult<()> {
    py.detach(|| {
        lancer::versions::replace_tag_metadata(ds.ds.store(), &name, metadata)
            .map_err(errors::table)
    })
}
