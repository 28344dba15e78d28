//! SQL over datasets from Python (`lancer.sql`, `LanceDataset.sql`), through
//! `lancer-sql`: the statement's rows as pyarrow record batches.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use lancer_sql::{SqlContext, TableSpec};
use pyo3::prelude::*;

use crate::dataset::Dataset;
use crate::errors;

/// Adds the function to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sql, m)?)?;
    Ok(())
}

fn error(e: lancer_sql::Error) -> PyErr {
    match e {
        lancer_sql::Error::Lancer(l) => errors::lancer(l),
        other => errors::invalid_input(other.to_string()),
    }
}

/// Runs `query` (statements separated by `;`); the last one's rows. `tables` names
/// datasets (`name -> uri`, `uri@version`, `uri#tag`); `dataset` is registered as
/// `table_name`, with `_rowid` / `_rowaddr` when asked.
#[pyfunction]
#[pyo3(signature = (query, tables=None, dataset=None, table_name="dataset".to_string(),
                    with_row_id=false, with_row_addr=false, batch_size=None, batch_size_bytes=None))]
#[allow(clippy::too_many_arguments)] // pylance's builder settings, each a keyword
fn sql(
    py: Python<'_>,
    query: String,
    tables: Option<HashMap<String, String>>,
    dataset: Option<PyRef<'_, Dataset>>,
    table_name: String,
    with_row_id: bool,
    with_row_addr: bool,
    batch_size: Option<usize>,
    batch_size_bytes: Option<usize>,
) -> PyResult<Vec<PyArrowType<RecordBatch>>> {
    let ds = dataset.map(|d| d.ds.clone());
    let session = match &ds {
        Some(d) => lancer::Session::of(d),
        None => crate::session::python_session(lancer::Session::builder()),
    };
    let batches = py.detach(move || -> lancer_sql::Result<Vec<RecordBatch>> {
        let mut ctx = SqlContext::new(session);
        if let Some(rows) = batch_size {
            ctx.set_batch_size(rows)?;
        }
        if let Some(bytes) = batch_size_bytes {
            ctx.set_batch_bytes(bytes);
        }
        for (name, uri) in tables.unwrap_or_default() {
            ctx.register(&name, TableSpec::parse(&uri))?;
        }
        if let Some(d) = ds {
            ctx.register_dataset(&table_name, d, with_row_id, with_row_addr)?;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| lancer_sql::Error::User(format!("cannot start the SQL runtime: {e}")))?;
        runtime.block_on(ctx.sql(&query))
    });
    Ok(batches
        .map_err(error)?
        .into_iter()
        .map(PyArrowType)
        .collect())
}
