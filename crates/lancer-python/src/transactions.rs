//! Committed transactions for Python (`LanceDataset.read_transaction` /
//! `get_transactions`) over `lancer::inspect`: each transaction crosses as JSON
//! text (read version, uuid, properties, the operation's name and fields under
//! pylance's `LanceOperation` field names, fragments in pylance's `FragmentMetadata`
//! JSON, index segments as `lancer.Index` JSON) plus the schemas it records (a pyarrow
//! schema and the Lance field rows, keyed by the field name that holds them);
//! `python/lancer/_transactions.py` builds pylance's `Transaction` objects from them.

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow_pyarrow::PyArrowType;
use arrow_schema::Schema;
use lancer::pb;
use lancer::pb::transaction::Operation as Op;
use lancer::write::fragment_to_json;
use pyo3::prelude::*;
use serde_json::{json, Value};

use crate::dataset::Dataset;
use crate::errors;
use crate::introspect::{field_rows, FieldRow};

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_transactions, m)?)?;
    Ok(())
}

/// A recorded schema: the field holding it, the Arrow schema, its Lance field rows.
type SchemaOut = (String, PyArrowType<Schema>, Vec<FieldRow>);

/// One transaction for Python.
type TransactionOut = (String, Vec<SchemaOut>);

/// `version`'s transaction (a list of one), or with `recent` the transactions of the
/// dataset's version and those before it as pylance's `get_transactions` lists them;
/// None where a version has none.
#[pyfunction]
#[pyo3(signature = (ds, version=None, recent=None))]
fn read_transactions(
    py: Python<'_>,
    ds: &Dataset,
    version: Option<u64>,
    recent: Option<usize>,
) -> PyResult<Vec<Option<TransactionOut>>> {
    let got = py.detach(|| match (version, recent) {
        (Some(v), _) => lancer::inspect::read_transaction(&ds.ds, v).map(|t| vec![t]),
        (None, n) => lancer::inspect::recent_transactions(&ds.ds, n.unwrap_or(10)),
    });
    got.map_err(errors::lancer)?
        .iter()
        .map(|t| t.as_ref().map(to_python).transpose())
        .collect::<lancer::Result<_>>()
        .map_err(errors::lancer)
}

fn frags(list: &[pb::DataFragment]) -> Value {
    Value::Array(list.iter().map(fragment_to_json).collect())
}

fn segments(list: &[pb::IndexMetadata]) -> lancer::Result<Value> {
    Ok(Value::Array(
        list.iter()
            .map(lancer::index::segment_to_json)
            .collect::<lancer::Result<_>>()?,
    ))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn uuid_text(u: Option<&pb::Uuid>) -> lancer::Result<Value> {
    Ok(match u {
        Some(u) => Value::String(lancer::index::uuid_dir(&u.uuid).map_err(lancer::Error::from)?),
        None => Value::Null,
    })
}

fn bases(list: &[pb::BasePath]) -> Value {
    Value::Array(
        list.iter()
            .map(|b| {
                json!({"id": b.id, "name": b.name, "path": b.path,
                            "is_dataset_root": b.is_dataset_root})
            })
            .collect(),
    )
}

/// An `UpdateMap` as `{"updates": {key: value | null}, "replace": bool}`.
fn update_map(m: Option<&pb::transaction::UpdateMap>) -> Value {
    m.map_or(Value::Null, |m| {
        let updates: serde_json::Map<String, Value> = m
            .update_entries
            .iter()
            .map(|e| {
                (
                    e.key.clone(),
                    e.value.clone().map_or(Value::Null, Value::String),
                )
            })
            .collect();
        json!({"updates": updates, "replace": m.replace})
    })
}

/// A map of upserts (and removed keys) as an `UpdateMap` (older transaction files
/// record config and metadata changes so).
fn legacy_map<'a>(
    upserts: impl IntoIterator<Item = (&'a String, &'a String)>,
    removed: &[String],
) -> Value {
    let mut updates = serde_json::Map::new();
    for (k, v) in upserts {
        updates.insert(k.clone(), Value::String(v.clone()));
    }
    for k in removed {
        updates.insert(k.clone(), Value::Null);
    }
    if updates.is_empty() {
        return Value::Null;
    }
    json!({"updates": updates, "replace": false})
}

/// A schema recorded as protobuf fields and metadata, for Python.
fn schema_out(
    key: &str,
    fields: &[lancer::pb::file::Field],
    metadata: &HashMap<String, Vec<u8>>,
) -> lancer::Result<SchemaOut> {
    let metadata = metadata
        .iter()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect();
    let schema = lancer::file::LanceSchema::from_pb_fields(fields, metadata)
        .map_err(|e| lancer::Error::from(lancer::TableError::from(e)))?;
    let pk: HashSet<i32> = fields
        .iter()
        .filter(|f| f.unenforced_primary_key)
        .map(|f| f.id)
        .collect();
    Ok((
        key.to_string(),
        PyArrowType(schema.to_arrow()),
        field_rows(&schema, &pk),
    ))
}

/// The JSON text and schemas of one transaction.
fn to_python(t: &pb::Transaction) -> lancer::Result<TransactionOut> {
    let mut schemas = Vec::new();
    let op = match &t.operation {
        None => json!({"kind": null}),
        Some(Op::Append(a)) => json!({"kind": "Append", "fragments": frags(&a.fragments)}),
        Some(Op::Delete(d)) => json!({
            "kind": "Delete",
            "updated_fragments": frags(&d.updated_fragments),
            "deleted_fragment_ids": d.deleted_fragment_ids,
            "predicate": d.predicate,
        }),
        Some(Op::Overwrite(o)) => {
            schemas.push(schema_out("new_schema", &o.schema, &o.schema_metadata)?);
            json!({"kind": "Overwrite", "fragments": frags(&o.fragments),
                   "initial_bases": bases(&o.initial_bases)})
        }
        Some(Op::CreateIndex(c)) => json!({
            "kind": "CreateIndex",
            "new_indices": segments(&c.new_indices)?,
            "removed_indices": segments(&c.removed_indices)?,
        }),
        Some(Op::Rewrite(r)) => {
            // older files list one group's fragments at the top level
            let mut groups: Vec<Value> = r
                .groups
                .iter()
                .map(|g| {
                    json!({"old_fragments": frags(&g.old_fragments),
                                "new_fragments": frags(&g.new_fragments)})
                })
                .collect();
            if groups.is_empty() && !(r.old_fragments.is_empty() && r.new_fragments.is_empty()) {
                groups.push(json!({"old_fragments": frags(&r.old_fragments),
                                   "new_fragments": frags(&r.new_fragments)}));
            }
            let rewritten = r
                .rewritten_indices
                .iter()
                .map(|x| {
                    Ok(json!({
                        "old_id": uuid_text(x.old_id.as_ref())?,
                        "new_id": uuid_text(x.new_id.as_ref())?,
                        "new_details_type_url": x.new_index_details.as_ref().map(|d| d.type_url.clone()),
                        "new_details_value": x.new_index_details.as_ref().map(|d| hex(&d.value)),
                        "new_index_version": x.new_index_version,
                    }))
                })
                .collect::<lancer::Result<Vec<_>>>()?;
            json!({"kind": "Rewrite", "groups": groups, "rewritten_indices": rewritten})
        }
        Some(Op::Merge(m)) => {
            schemas.push(schema_out("schema", &m.schema, &m.schema_metadata)?);
            json!({"kind": "Merge", "fragments": frags(&m.fragments),
                   "preserves_nullability": m.preserves_nullability})
        }
        Some(Op::Restore(r)) => json!({"kind": "Restore", "version": r.version}),
        Some(Op::ReserveFragments(r)) => {
            json!({"kind": "ReserveFragments", "num_fragments": r.num_fragments})
        }
        Some(Op::Update(u)) => json!({
            "kind": "Update",
            "removed_fragment_ids": u.removed_fragment_ids,
            "updated_fragments": frags(&u.updated_fragments),
            "new_fragments": frags(&u.new_fragments),
            "fields_modified": u.fields_modified,
            "fields_for_preserving_frag_bitmap": u.fields_for_preserving_frag_bitmap,
            "update_mode": if u.update_mode == 1 { "rewrite_columns" } else { "rewrite_rows" },
        }),
        Some(Op::DataReplacement(r)) => {
            let groups: Vec<Value> = r
                .replacements
                .iter()
                .map(|g| {
                    // the new file as a fragment's files list describes it
                    let holder = pb::DataFragment {
                        id: g.fragment_id,
                        files: g.new_file.iter().cloned().collect(),
                        ..Default::default()
                    };
                    let file = fragment_to_json(&holder)
                        .get("files")
                        .and_then(|f| f.get(0))
                        .cloned()
                        .unwrap_or(Value::Null);
                    json!({"fragment_id": g.fragment_id, "new_file": file})
                })
                .collect();
            json!({"kind": "DataReplacement", "replacements": groups})
        }
        Some(Op::Project(p)) => {
            schemas.push(schema_out("schema", &p.schema, &HashMap::new())?);
            json!({"kind": "Project", "preserves_nullability": p.preserves_nullability})
        }
        Some(Op::UpdateConfig(c)) => {
            let config = match &c.config_updates {
                Some(m) => update_map(Some(m)),
                None => legacy_map(&c.upsert_values, &c.delete_keys),
            };
            let schema_md = match &c.schema_metadata_updates {
                Some(m) => update_map(Some(m)),
                None => legacy_map(&c.schema_metadata, &[]),
            };
            let mut fields: BTreeMap<String, Value> = c
                .field_metadata_updates
                .iter()
                .map(|(id, m)| (id.to_string(), update_map(Some(m))))
                .collect();
            if fields.is_empty() {
                for (id, m) in &c.field_metadata {
                    fields.insert(id.to_string(), legacy_map(&m.metadata, &[]));
                }
            }
            json!({
                "kind": "UpdateConfig",
                "config_updates": config,
                "table_metadata_updates": update_map(c.table_metadata_updates.as_ref()),
                "schema_metadata_updates": schema_md,
                "field_metadata_updates": if fields.is_empty() { Value::Null } else { json!(fields) },
            })
        }
        Some(Op::Clone(c)) => json!({
            "kind": "Clone", "is_shallow": c.is_shallow, "ref_name": c.ref_name,
            "ref_version": c.ref_version, "ref_path": c.ref_path, "branch_name": c.branch_name,
        }),
        Some(Op::UpdateBases(b)) => {
            json!({"kind": "UpdateBases", "new_bases": bases(&b.new_bases)})
        }
    };
    let doc = json!({
        "read_version": t.read_version,
        "uuid": t.uuid,
        "transaction_properties": t.transaction_properties,
        "operation": op,
    });
    Ok((doc.to_string(), schemas))
}
