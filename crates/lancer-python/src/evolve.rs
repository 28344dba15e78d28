//! Schema evolution and maintenance of a dataset from Python (pylance's `add_columns`,
//! `drop_columns`, `alter_columns`, `update`, `merge_insert`,
//! `optimize.compact_files`): each a thin call into `lancer::write`, GIL released,
//! returning the new version and pylance's statistics.

use std::collections::BTreeMap;

use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_array::RecordBatchReader;
use arrow_pyarrow::PyArrowType;
use arrow_schema::{DataType, Schema};
use pyo3::prelude::*;

use crate::dataset::Dataset;
use crate::errors;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(add_columns, m)?)?;
    m.add_function(wrap_pyfunction!(add_null_columns, m)?)?;
    m.add_function(wrap_pyfunction!(drop_columns, m)?)?;
    m.add_function(wrap_pyfunction!(alter_columns, m)?)?;
    m.add_function(wrap_pyfunction!(update, m)?)?;
    m.add_function(wrap_pyfunction!(merge_insert, m)?)?;
    m.add_function(wrap_pyfunction!(compact_files, m)?)?;
    m.add_function(wrap_pyfunction!(optimize_indices, m)?)?;
    m.add_function(wrap_pyfunction!(merge_columns, m)?)?;
    m.add_function(wrap_pyfunction!(add_columns_udf, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_add_columns_udf, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_update_columns_udf, m)?)?;
    m.add_function(wrap_pyfunction!(add_columns_stream, m)?)?;
    Ok(())
}

/// Columns computed by SQL expressions, `[(name, expression)]`, in order.
#[pyfunction]
fn add_columns(py: Python<'_>, ds: &Dataset, columns: Vec<(String, String)>) -> PyResult<Dataset> {
    let pairs: Vec<(&str, &str)> = columns
        .iter()
        .map(|(n, e)| (n.as_str(), e.as_str()))
        .collect();
    let after =
        py.detach(|| lancer::write::add_columns(&ds.ds, &pairs, None).map_err(errors::lancer))?;
    Ok(ds.wrap(after))
}

/// All-null columns: the fields of `schema` (no data is written).
#[pyfunction]
fn add_null_columns(
    py: Python<'_>,
    ds: &Dataset,
    schema: PyArrowType<Schema>,
) -> PyResult<Dataset> {
    let after =
        py.detach(|| lancer::write::add_null_columns(&ds.ds, &schema.0).map_err(errors::lancer))?;
    Ok(ds.wrap(after))
}

/// Drops columns (names or dotted struct paths).
#[pyfunction]
fn drop_columns(py: Python<'_>, ds: &Dataset, columns: Vec<String>) -> PyResult<Dataset> {
    let cols: Vec<&str> = columns.iter().map(String::as_str).collect();
    let after = py.detach(|| lancer::write::drop_columns(&ds.ds, &cols).map_err(errors::lancer))?;
    Ok(ds.wrap(after))
}

/// pylance's `alter_columns`: `[(path, new name, nullable, data type)]`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn alter_columns(
    py: Python<'_>,
    ds: &Dataset,
    alterations: Vec<(
        String,
        Option<String>,
        Option<bool>,
        Option<PyArrowType<DataType>>,
    )>,
) -> PyResult<Dataset> {
    let alts: Vec<lancer::write::Alteration> = alterations
        .into_iter()
        .map(|(path, rename, nullable, t)| lancer::write::Alteration {
            path,
            rename,
            nullable,
            data_type: t.map(|t| t.0),
        })
        .collect();
    let after = py.detach(|| lancer::write::alter(&ds.ds, &alts).map_err(errors::lancer))?;
    Ok(ds.wrap(after))
}

/// `UPDATE … SET col = expr … [WHERE filter]`: the dataset after and the rows updated.
#[pyfunction]
#[pyo3(signature = (ds, set, filter=None))]
fn update(
    py: Python<'_>,
    ds: &Dataset,
    set: Vec<(String, String)>,
    filter: Option<String>,
) -> PyResult<(Dataset, u64)> {
    let pairs: Vec<(&str, &str)> = set.iter().map(|(c, e)| (c.as_str(), e.as_str())).collect();
    let (after, stats) = py.detach(|| {
        lancer::write::update(&ds.ds, filter.as_deref(), &pairs, None).map_err(errors::lancer)
    })?;
    Ok((ds.wrap(after), stats.rows_updated))
}

/// `merge_insert` keyed on `on`: the dataset after, pylance's statistics
/// (`num_inserted_rows`, `num_updated_rows`, `num_deleted_rows`) and, with
/// `uncommitted`, the transaction (JSON text, as `read_transaction` gives them) that
/// commits what was written instead of a new version (the dataset is then `ds`). Matched
/// rows are updated (`update_all`), deleted (`delete_matched`) or stop the merge
/// (`fail_on_match`: an `OSError` naming the key, nothing committed).
#[pyfunction]
#[pyo3(signature = (ds, on, source, update_all=false, update_condition=None, insert_all=false,
                    delete_by_source=false, delete_filter=None, use_index=true,
                    delete_matched=false, fail_on_match=false, target_bases=None,
                    target_all_bases=None, uncommitted=false))]
#[allow(clippy::too_many_arguments)]
fn merge_insert(
    py: Python<'_>,
    ds: &Dataset,
    on: Vec<String>,
    source: PyArrowType<ArrowArrayStreamReader>,
    update_all: bool,
    update_condition: Option<String>,
    insert_all: bool,
    delete_by_source: bool,
    delete_filter: Option<String>,
    use_index: bool,
    delete_matched: bool,
    fail_on_match: bool,
    target_bases: Option<Vec<String>>,
    target_all_bases: Option<bool>,
    uncommitted: bool,
) -> PyResult<(Dataset, BTreeMap<String, u64>, Option<String>)> {
    let reader = source.0;
    let schema = reader.schema();
    let opts = lancer::write::MergeOptions {
        on,
        update_matched: update_all,
        delete_matched,
        fail_on_match,
        insert_unmatched: insert_all,
        delete_unmatched_by_source: delete_by_source,
        delete_filter,
        update_condition,
        no_index: !use_index,
        target_bases: target_bases.unwrap_or_default(),
        target_all_bases,
        ..Default::default()
    };
    let (after, stats, transaction) = py.detach(|| {
        let batches = reader.map(|b| b.map_err(lancer::Error::from));
        if uncommitted {
            let (op, stats) =
                lancer::write::merge_insert_uncommitted(&ds.ds, &opts, schema, batches)
                    .map_err(errors::lancer)?;
            let text = update_transaction_json(&op, ds.ds.version());
            Ok::<_, PyErr>((ds.ds.clone(), stats, Some(text)))
        } else {
            let (after, stats) = lancer::write::merge_insert(&ds.ds, &opts, schema, batches)
                .map_err(errors::lancer)?;
            Ok((after, stats, None))
        }
    })?;
    // pylance's three, then what analyze_plan reports of the join
    let out = BTreeMap::from([
        ("num_inserted_rows".to_string(), stats.inserted),
        ("num_updated_rows".to_string(), stats.updated),
        ("num_deleted_rows".to_string(), stats.deleted),
        ("fragments_scanned".to_string(), stats.fragments_scanned),
        ("indexes_used".to_string(), stats.indexes.len() as u64),
    ]);
    Ok((ds.wrap(after), out, transaction))
}

/// An uncommitted `Update` as a transaction's JSON text (the shape `read_transaction`
/// gives), read at `read_version` (the caller gives it a uuid).
fn update_transaction_json(op: &lancer::write::Operation, read_version: u64) -> String {
    let frags = |list: &[lancer::write::Fragment]| -> Vec<serde_json::Value> {
        list.iter().map(lancer::write::fragment_to_json).collect()
    };
    let operation = match op {
        lancer::write::Operation::Update {
            removed_fragment_ids,
            updated_fragments,
            new_fragments,
            fields_modified,
            fields_for_preserving_frag_bitmap,
            rewrite_columns,
        } => serde_json::json!({
            "kind": "Update",
            "removed_fragment_ids": removed_fragment_ids,
            "updated_fragments": frags(updated_fragments),
            "new_fragments": frags(new_fragments),
            "fields_modified": fields_modified,
            "fields_for_preserving_frag_bitmap": fields_for_preserving_frag_bitmap,
            "update_mode": if *rewrite_columns { "rewrite_columns" } else { "rewrite_rows" },
        }),
        other => serde_json::json!({"kind": other.name()}),
    };
    serde_json::json!({
        "read_version": read_version,
        "operation": operation,
        "transaction_properties": {},
    })
    .to_string()
}

/// What a Python function computing new columns can fail with: the table layer's
/// error, or the function's own exception (raised again unchanged).
enum UdfError {
    Table(lancer::TableError),
    Py(PyErr),
}

impl From<lancer::TableError> for UdfError {
    fn from(e: lancer::TableError) -> Self {
        UdfError::Table(e)
    }
}

/// The function computing `schema`'s columns from a batch of rows: `func` called on
/// slices of `step` rows (once for an empty batch), its batches joined.
fn udf_compute(
    schema: std::sync::Arc<Schema>,
    func: Py<PyAny>,
    step: usize,
) -> impl Fn(&arrow_array::RecordBatch) -> Result<arrow_array::RecordBatch, UdfError> + Sync {
    move |input: &arrow_array::RecordBatch| {
        // one call per `step` rows (one call for an empty fragment)
        let starts: Vec<usize> = if input.num_rows() == 0 {
            vec![0]
        } else {
            (0..input.num_rows()).step_by(step).collect()
        };
        let mut parts = Vec::with_capacity(starts.len());
        for start in starts {
            let chunk = input.slice(start, step.min(input.num_rows() - start));
            let out = Python::attach(|py| -> PyResult<arrow_array::RecordBatch> {
                let arg = crate::export::PyBatch(chunk).into_pyobject(py)?;
                let got = func.call1(py, (arg,))?;
                Ok(got.extract::<PyArrowType<arrow_array::RecordBatch>>(py)?.0)
            })
            .map_err(UdfError::Py)?;
            parts.push(out);
        }
        arrow_select::concat::concat_batches(&schema, &parts).map_err(|e| {
            UdfError::Table(lancer::TableError::invalid(format!(
                "the function's batches do not match the new columns' schema: {e}"
            )))
        })
    }
}

fn udf_error(e: UdfError) -> PyErr {
    match e {
        UdfError::Py(e) => e,
        UdfError::Table(t) => errors::table(t),
    }
}

/// pylance's `add_columns(function)`: the columns `schema` computed by `func` (a
/// Python callable taking a `pyarrow.RecordBatch` of the columns `read_columns` and
/// returning a `pyarrow.RecordBatch` of `schema`'s columns, as many rows) over every
/// fragment, `batch_size` rows per call. The dataset after.
#[pyfunction]
#[pyo3(signature = (ds, schema, func, read_columns=None, batch_size=1024))]
fn add_columns_udf(
    py: Python<'_>,
    ds: &Dataset,
    schema: PyArrowType<Schema>,
    func: Py<PyAny>,
    read_columns: Option<Vec<String>>,
    batch_size: usize,
) -> PyResult<Dataset> {
    let schema = std::sync::Arc::new(schema.0);
    let compute = udf_compute(schema.clone(), func, batch_size.max(1));
    let read: Option<Vec<&str>> = read_columns
        .as_ref()
        .map(|c| c.iter().map(String::as_str).collect());
    let after = py
        .detach(|| {
            ds.ds
                .add_columns_with(schema.clone(), read.as_deref(), compute)
        })
        .map_err(udf_error)?;
    Ok(ds.wrap(after))
}

/// pylance's `LanceFragment.merge_columns(function)`: fragment `id` with a new data
/// file of the columns `schema` computed by `func` (as [`add_columns_udf`]), nothing
/// committed; pylance's `FragmentMetadata` JSON text of it.
#[pyfunction]
#[pyo3(signature = (ds, id, schema, func, read_columns=None, batch_size=1024))]
fn fragment_add_columns_udf(
    py: Python<'_>,
    ds: &Dataset,
    id: u64,
    schema: PyArrowType<Schema>,
    func: Py<PyAny>,
    read_columns: Option<Vec<String>>,
    batch_size: usize,
) -> PyResult<String> {
    let schema = std::sync::Arc::new(schema.0);
    let compute = udf_compute(schema.clone(), func, batch_size.max(1));
    let read: Option<Vec<&str>> = read_columns
        .as_ref()
        .map(|c| c.iter().map(String::as_str).collect());
    let frag = py
        .detach(|| {
            ds.ds
                .add_columns_to_fragment(id, schema.clone(), read.as_deref(), compute)
        })
        .map_err(udf_error)?;
    Ok(lancer::write::python_json_text(
        &lancer::write::fragment_to_json(&frag),
    ))
}

/// pylance's `LanceFragment.update_columns`: fragment `id` with a new data file of
/// new values for the existing columns of `schema` computed by `func` (as
/// [`add_columns_udf`]), their old fields tombstoned, nothing committed; pylance's
/// `FragmentMetadata` JSON text of it and the modified field ids.
#[pyfunction]
#[pyo3(signature = (ds, id, schema, func, read_columns=None, batch_size=1024))]
fn fragment_update_columns_udf(
    py: Python<'_>,
    ds: &Dataset,
    id: u64,
    schema: PyArrowType<Schema>,
    func: Py<PyAny>,
    read_columns: Option<Vec<String>>,
    batch_size: usize,
) -> PyResult<(String, Vec<i32>)> {
    let schema = std::sync::Arc::new(schema.0);
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let compute = udf_compute(schema.clone(), func, batch_size.max(1));
    let read: Option<Vec<&str>> = read_columns
        .as_ref()
        .map(|c| c.iter().map(String::as_str).collect());
    let columns: Vec<&str> = names.iter().map(String::as_str).collect();
    let (frag, modified) = py
        .detach(|| {
            ds.ds
                .rewrite_fragment_columns(id, &columns, read.as_deref(), compute)
        })
        .map_err(udf_error)?;
    Ok((
        lancer::write::python_json_text(&lancer::write::fragment_to_json(&frag)),
        modified,
    ))
}

/// pylance's `merge(data, left_on)`: the source's columns other than the key `on`
/// joined onto the rows with the same key (null without one). The dataset after.
#[pyfunction]
fn merge_columns(
    py: Python<'_>,
    ds: &Dataset,
    on: String,
    source: PyArrowType<ArrowArrayStreamReader>,
) -> PyResult<Dataset> {
    let reader = source.0;
    let schema = reader.schema();
    let after = py.detach(|| {
        let batches = reader.map(|b| b.map_err(lancer::Error::from));
        lancer::write::merge_columns(&ds.ds, &on, schema, batches).map_err(errors::lancer)
    })?;
    Ok(ds.wrap(after))
}

/// Compaction options from pylance's keyword arguments (`None`: the default), for
/// `compact_files` and the distributed plan alike.
pub(crate) fn compaction_options(
    target_rows_per_fragment: Option<u64>,
    materialize_deletions: bool,
    materialize_deletions_threshold: Option<f64>,
    max_bytes_per_file: Option<u64>,
) -> lancer::CompactionOptions {
    let mut opts = lancer::CompactionOptions {
        materialize_deletions,
        max_bytes_per_file,
        ..Default::default()
    };
    if let Some(t) = target_rows_per_fragment {
        opts.target_rows_per_fragment = t;
    }
    if let Some(t) = materialize_deletions_threshold {
        opts.materialize_deletions_threshold = t;
    }
    opts
}

/// pylance's `optimize.compact_files`: the dataset after and
/// `(fragments_removed, fragments_added, files_removed, files_added)`.
#[pyfunction]
#[pyo3(signature = (ds, target_rows_per_fragment=None, materialize_deletions=true,
                    materialize_deletions_threshold=None, max_bytes_per_file=None))]
fn compact_files(
    py: Python<'_>,
    ds: &Dataset,
    target_rows_per_fragment: Option<u64>,
    materialize_deletions: bool,
    materialize_deletions_threshold: Option<f64>,
    max_bytes_per_file: Option<u64>,
) -> PyResult<(Dataset, (usize, usize, usize, usize))> {
    let opts = compaction_options(
        target_rows_per_fragment,
        materialize_deletions,
        materialize_deletions_threshold,
        max_bytes_per_file,
    );
    let (after, s) = py.detach(|| {
        lancer::write::compact_files(&ds.ds, &opts, &|_, _| {}).map_err(errors::lancer)
    })?;
    Ok((
        ds.wrap(after),
        (
            s.fragments_removed,
            s.fragments_added,
            s.files_removed,
            s.files_added,
        ),
    ))
}

/// pylance's `optimize.optimize_indices`: each index of `names` (all when None) as
/// `lancer::index::optimize_index_as_reference` optimizes it. The dataset after.
#[pyfunction]
#[pyo3(signature = (ds, names=None, merge=None, retrain=false))]
fn optimize_indices(
    py: Python<'_>,
    ds: &Dataset,
    names: Option<Vec<String>>,
    merge: Option<usize>,
    retrain: bool,
) -> PyResult<Dataset> {
    let after = py
        .detach(|| {
            let mut cur = ds.ds.clone();
            let names = match names {
                Some(n) => n,
                None => {
                    let mut all: Vec<String> =
                        cur.indices()?.iter().map(|m| m.name.clone()).collect();
                    all.sort();
                    all.dedup();
                    all
                }
            };
            for name in names {
                cur = lancer::index::optimize_index_as_reference(&cur, &name, merge, retrain)?;
            }
            Ok::<_, lancer::Error>(cur)
        })
        .map_err(errors::lancer)?;
    Ok(ds.wrap(after))
}

/// pylance's `add_columns(reader)`: the reader's columns, one row per live row of the
/// dataset in its order. The dataset after.
#[pyfunction]
fn add_columns_stream(
    py: Python<'_>,
    ds: &Dataset,
    source: PyArrowType<ArrowArrayStreamReader>,
) -> PyResult<Dataset> {
    let reader = source.0;
    let schema = reader.schema();
    let after = py.detach(|| {
        let batches = reader.map(|b| {
            b.map_err(|e| lancer::TableError::InvalidInput {
                what: e.to_string(),
            })
        });
        ds.ds
            .add_columns_from_stream(schema, batches)
            .map_err(errors::table)
    })?;
    Ok(ds.wrap(after))
}
