//! Computed columns (pylance's `columns={name: SQL}`) outside scans: takes, samples and
//! searches read the columns the expressions need, then evaluate them here with the
//! scan's own compiler ([`lancer::Expression`], the dataset's dialect and types).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use arrow_schema::{Field, Schema};
use pyo3::prelude::*;

use crate::dataset::Dataset;
use crate::errors;

/// The dataset columns `exprs` read, each once, in the order first read.
#[pyfunction]
fn computed_reads(ds: &Dataset, exprs: Vec<(String, String)>) -> PyResult<Vec<String>> {
    let schema = ds.ds.schema();
    let mut out: Vec<String> = Vec::new();
    for (_, sql) in &exprs {
        let e = lancer::Expression::new(sql, &schema).map_err(errors::lancer)?;
        for c in e.columns() {
            if !out.contains(c) {
                out.push(c.clone());
            }
        }
    }
    Ok(out)
}

/// `exprs` evaluated over `batch` (rows holding the columns they read): a batch of one
/// column per expression, named as given.
#[pyfunction]
fn evaluate_computed(
    py: Python<'_>,
    ds: &Dataset,
    batch: PyArrowType<RecordBatch>,
    exprs: Vec<(String, String)>,
) -> PyResult<PyArrowType<RecordBatch>> {
    let batch = batch.0;
    let schema = ds.ds.schema();
    let out = py.detach(|| -> lancer::Result<RecordBatch> {
        let mut fields = Vec::with_capacity(exprs.len());
        let mut columns = Vec::with_capacity(exprs.len());
        for (name, sql) in &exprs {
            let e = lancer::Expression::new(sql, &schema)?;
            let values = e.evaluate(&batch)?;
            fields.push(Field::new(name, values.data_type().clone(), e.nullable()));
            columns.push(values);
        }
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            columns,
            &options,
        )?)
    });
    Ok(PyArrowType(out.map_err(errors::lancer)?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(computed_reads, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate_computed, m)?)?;
    Ok(())
}
