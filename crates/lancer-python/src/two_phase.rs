//! Two-phase (distributed) writes from Python (`lancer.fragment.write_fragments`,
//! `lancer.LanceDataset.commit`) over `lancer::write`. Fragment descriptions cross
//! as JSON text in pylance's `FragmentMetadata.to_json()` shape
//! (`lancer::write`); the Python side builds its dataclasses from it.

use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_array::RecordBatchReader;
use arrow_pyarrow::PyArrowType;
use arrow_schema::Schema;
use lancer::file::FileVersion;
use lancer::write::{self as two_phase, CommitParams, FragmentMode, Operation, RewriteGroup};
use lancer::write::{fragment_from_json, fragment_to_json, python_json_text};
use lancer::TableError;
use lancer::{Dataset as Ds, WriteParams};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::Value;

use crate::dataset::{store_in, Dataset};
use crate::errors;

type Options = Option<std::collections::BTreeMap<String, String>>;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(commit, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_delete, m)?)?;
    Ok(())
}

/// Deletes rows of fragment `id` without committing: by SQL `predicate`, or the
/// physical row `offsets`; the fragment's new description as JSON text, or None when
/// no row is left.
#[pyfunction]
#[pyo3(signature = (ds, id, predicate=None, offsets=None))]
pub fn fragment_delete(
    py: Python<'_>,
    ds: PyRef<'_, Dataset>,
    id: u64,
    predicate: Option<String>,
    offsets: Option<Vec<u64>>,
) -> PyResult<Option<String>> {
    let d = ds.ds.clone();
    py.detach(move || {
        let out = match (predicate, offsets) {
            (Some(p), None) => two_phase::delete_in_fragment(&d, id, &p).map_err(errors::lancer)?,
            (None, Some(o)) => d.delete_offsets_uncommitted(id, o).map_err(errors::table)?,
            _ => {
                return Err(PyValueError::new_err(
                    "give a predicate or row offsets, not both",
                ))
            }
        };
        Ok(out.map(|f| python_json_text(&fragment_to_json(&f))))
    })
}

/// Fragment `id` of this version as pylance's `FragmentMetadata` JSON text (None when
/// the version has no such fragment).
#[pyfunction]
pub fn fragment_metadata(ds: PyRef<'_, Dataset>, id: u64) -> Option<String> {
    ds.ds
        .fragments()
        .iter()
        .find(|f| f.id == id)
        .map(|f| python_json_text(&fragment_to_json(f)))
}

/// Writes the stream's rows as data files of the dataset at `uri` without committing;
/// returns each fragment's description as JSON text.
#[pyfunction]
#[pyo3(signature = (reader, uri, mode, max_rows_per_file, max_bytes_per_file,
                    data_storage_version=None, storage_options=None, target_bases=None,
                    target_all_bases=None))]
#[allow(clippy::too_many_arguments)]
pub fn write_fragments(
    py: Python<'_>,
    reader: PyArrowType<ArrowArrayStreamReader>,
    uri: String,
    mode: &str,
    max_rows_per_file: usize,
    max_bytes_per_file: u64,
    data_storage_version: Option<String>,
    storage_options: Options,
    target_bases: Option<Vec<String>>,
    target_all_bases: Option<bool>,
) -> PyResult<Vec<String>> {
    let mode = FragmentMode::parse(mode).map_err(errors::lancer)?;
    if max_rows_per_file == 0 {
        return Err(PyValueError::new_err(
            "max_rows_per_file must be at least 1",
        ));
    }
    let mut params = WriteParams {
        max_rows_per_file,
        max_bytes_per_file,
        target_bases: target_bases.unwrap_or_default(),
        target_all_bases,
        ..Default::default()
    };
    if let Some(v) = data_storage_version {
        let v = match v.to_ascii_lowercase().as_str() {
            "stable" => "2.2".to_string(),
            "next" => "2.2".to_string(),
            other => other.to_string(),
        };
        params.storage = FileVersion::parse(&v)
            .map_err(|e| PyValueError::new_err(format!("data_storage_version {v:?}: {e}")))?;
    } else {
        params.storage = FileVersion::V2_2;
    }
    let reader = reader.0;
    let schema = reader.schema();
    py.detach(move || {
        let (store, opts) = store_in(&uri, &storage_options, None)?;
        let mut params = params;
        params.storage_options = Some(opts);
        let batches = reader.map(|b| {
            b.map_err(|e| TableError::InvalidInput {
                what: e.to_string(),
            })
        });
        let frags = two_phase::write_fragments(&store, schema, batches, &params, mode)
            .map_err(errors::lancer)?;
        Ok(frags
            .iter()
            .map(|f| python_json_text(&fragment_to_json(f)))
            .collect())
    })
}

/// Commits an operation: `kind` names it, `body` (JSON) holds its fragments as
/// pylance's members name them (`fragments`, `updated_fragments`,
/// `deleted_fragment_ids`, `predicate`, `groups` of `old_fragments` / `new_fragments`),
/// `schema` the schema of an Overwrite or Merge. Returns the new version.
#[pyfunction]
#[pyo3(signature = (uri, kind, body, schema=None, read_version=None, storage_options=None,
                    transaction_properties=None, v2_manifest_paths=true,
                    enable_stable_row_ids=false, uuid=None))]
#[allow(clippy::too_many_arguments)]
pub fn commit(
    py: Python<'_>,
    uri: String,
    kind: &str,
    body: &str,
    schema: Option<PyArrowType<Schema>>,
    read_version: Option<u64>,
    storage_options: Options,
    transaction_properties: Option<std::collections::HashMap<String, String>>,
    v2_manifest_paths: bool,
    enable_stable_row_ids: bool,
    uuid: Option<String>,
) -> PyResult<Dataset> {
    let body: Value = serde_json::from_str(body)
        .map_err(|e| PyValueError::new_err(format!("operation body is not JSON: {e}")))?;
    let schema = schema.map(|s| std::sync::Arc::new(s.0));
    let op = operation(kind, &body, schema).map_err(errors::lancer)?;
    let params = CommitParams {
        naming: if v2_manifest_paths {
            lancer::versions::Naming::V2
        } else {
            lancer::versions::Naming::V1
        },
        enable_stable_row_ids,
        transaction_properties: transaction_properties.unwrap_or_default(),
        skip_auto_cleanup: false,
        uuid,
    };
    py.detach(move || {
        let (store, opts) = store_in(&uri, &storage_options, None)?;
        let ds = two_phase::commit(&store, op, read_version, &params).map_err(errors::lancer)?;
        let ds = Ds::open_with(store, opts, Some(ds.version())).map_err(errors::table)?;
        Ok(Dataset { ds, uri })
    })
}

fn operation(
    kind: &str,
    body: &Value,
    schema: Option<arrow_schema::SchemaRef>,
) -> lancer::Result<Operation> {
    let bad = |what: String| lancer::Error::InvalidArgument { what };
    let frags = |key: &str| -> lancer::Result<Vec<two_phase::Fragment>> {
        match body.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a.iter().map(fragment_from_json).collect(),
            Some(other) => Err(bad(format!(
                "{kind}: {key} must be a list of fragments, not {other}"
            ))),
        }
    };
    let schema = |what: &str| {
        schema
            .clone()
            .ok_or_else(|| bad(format!("{kind} needs {what}")))
    };
    Ok(match kind {
        "Append" => Operation::Append {
            fragments: frags("fragments")?,
        },
        "Overwrite" => Operation::Overwrite {
            schema: schema("new_schema")?,
            fragments: frags("fragments")?,
            initial_bases: match body.get("initial_bases") {
                None | Some(Value::Null) => Vec::new(),
                Some(b) => crate::dataset::base_specs(
                    serde_json::from_value::<Vec<crate::dataset::BaseTuple>>(b.clone())
                        .map_err(|e| bad(format!("Overwrite: initial_bases: {e}")))?,
                ),
            },
        },
        "Merge" => Operation::Merge {
            fragments: frags("fragments")?,
            schema: schema("a schema")?,
        },
        "Delete" => Operation::Delete {
            updated_fragments: frags("updated_fragments")?,
            deleted_fragment_ids: body
                .get("deleted_fragment_ids")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|v| {
                            v.as_u64().ok_or_else(|| {
                                bad(format!("Delete: deleted fragment id {v} is not an id"))
                            })
                        })
                        .collect::<lancer::Result<Vec<u64>>>()
                })
                .transpose()?
                .unwrap_or_default(),
            predicate: body
                .get("predicate")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        },
        "Rewrite" => {
            let groups = body
                .get("groups")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("Rewrite: groups must be a list".into()))?;
            Operation::Rewrite {
                groups: groups
                    .iter()
                    .map(|g| {
                        let list = |key: &str| -> lancer::Result<Vec<two_phase::Fragment>> {
                            g.get(key)
                                .and_then(Value::as_array)
                                .ok_or_else(|| bad(format!("Rewrite: a group's {key} is missing")))?
                                .iter()
                                .map(fragment_from_json)
                                .collect()
                        };
                        Ok(RewriteGroup {
                            old_fragments: list("old_fragments")?,
                            new_fragments: list("new_fragments")?,
                        })
                    })
                    .collect::<lancer::Result<Vec<_>>>()?,
            }
        }
        "CreateIndex" => Operation::CreateIndex {
            new_indices: crate::distributed::segments_json(body, "new_indices")?,
            removed_indices: crate::distributed::segments_json(body, "removed_indices")?,
        },
        "DataReplacement" => {
            let groups = body
                .get("replacements")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("DataReplacement: replacements must be a list".into()))?;
            let replacements = groups
                .iter()
                .map(|g| {
                    let id = g
                        .get("fragment_id")
                        .and_then(Value::as_u64)
                        .ok_or_else(|| {
                            bad("DataReplacement: a replacement's fragment_id is not an id".into())
                        })?;
                    let file = g.get("new_file").ok_or_else(|| {
                        bad(format!(
                            "DataReplacement: the replacement of fragment {id} has no new_file"
                        ))
                    })?;
                    // a data file as a fragment's files list holds it
                    let frag = fragment_from_json(&serde_json::json!({
                        "id": id, "files": [file], "physical_rows": 0,
                    }))?;
                    let df = frag.files.into_iter().next().ok_or_else(|| {
                        bad(format!(
                            "DataReplacement: fragment {id}'s new_file does not read"
                        ))
                    })?;
                    Ok((id, df))
                })
                .collect::<lancer::Result<Vec<_>>>()?;
            Operation::DataReplacement { replacements }
        }
        "Project" => Operation::Project {
            schema: schema("a schema")?,
            field_ids: body
                .get("field_ids")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("Project: field_ids must be a list".into()))?
                .iter()
                .map(|v| {
                    v.as_i64()
                        .and_then(|i| i32::try_from(i).ok())
                        .ok_or_else(|| bad(format!("Project: field id {v} is not an id")))
                })
                .collect::<lancer::Result<Vec<i32>>>()?,
        },
        "Update" => {
            let ids = |key: &str| -> lancer::Result<Vec<u64>> {
                match body.get(key) {
                    None | Some(Value::Null) => Ok(Vec::new()),
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|v| {
                            v.as_u64()
                                .ok_or_else(|| bad(format!("Update: {key}: {v} is not an id")))
                        })
                        .collect(),
                    Some(other) => Err(bad(format!(
                        "Update: {key} must be a list of ids, not {other}"
                    ))),
                }
            };
            let field_ids = |key: &str| -> lancer::Result<Vec<u32>> {
                ids(key)?
                    .into_iter()
                    .map(|v| {
                        u32::try_from(v)
                            .map_err(|_| bad(format!("Update: {key}: {v} is not a field id")))
                    })
                    .collect()
            };
            let rewrite_columns = match body.get("update_mode").and_then(Value::as_str) {
                None | Some("") | Some("rewrite_rows") => false,
                Some("rewrite_columns") => true,
                Some(other) => {
                    return Err(bad(format!(
                        "Update: update_mode {other:?}: \"rewrite_rows\" or \"rewrite_columns\""
                    )))
                }
            };
            Operation::Update {
                removed_fragment_ids: ids("removed_fragment_ids")?,
                updated_fragments: frags("updated_fragments")?,
                new_fragments: frags("new_fragments")?,
                fields_modified: field_ids("fields_modified")?,
                fields_for_preserving_frag_bitmap: field_ids("fields_for_preserving_frag_bitmap")?,
                rewrite_columns,
            }
        }
        other => {
            return Err(bad(format!(
                "operation {other} is not committed by lancer.LanceDataset.commit: Append, \
                 Overwrite, Delete, Rewrite, Merge, Update, Project, DataReplacement or CreateIndex"
            )))
        }
    })
}
