//! One record batch to `pyarrow.RecordBatch` in a single import: the batch as a struct
//! array plus its schema (metadata included) through the Arrow C Data interface,
//! `pyarrow.RecordBatch._import_from_c` — no copy, and no stream object per batch
//! (`arrow-pyarrow`'s conversion wraps each batch in a one-batch reader: about twice
//! the cost for small takes).

use arrow_array::{Array, RecordBatch, StructArray};
use arrow_data::ffi::FFI_ArrowArray;
use arrow_schema::ffi::FFI_ArrowSchema;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

fn record_batch_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    TYPE.import(py, "pyarrow", "RecordBatch")
}

/// `batch` as a `pyarrow.RecordBatch`.
pub fn batch<'py>(py: Python<'py>, batch: &RecordBatch) -> PyResult<Bound<'py, PyAny>> {
    let mut schema = FFI_ArrowSchema::try_from(batch.schema().as_ref())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let data = StructArray::from(batch.clone()).into_data();
    let mut array = FFI_ArrowArray::new(&data);
    // pyarrow moves both structures out through these (mutable) pointers, setting
    // their release callbacks to null, so dropping them here frees nothing twice.
    record_batch_class(py)?.call_method1(
        "_import_from_c",
        (
            std::ptr::addr_of_mut!(array) as usize,
            std::ptr::addr_of_mut!(schema) as usize,
        ),
    )
}

/// A `pyarrow.RecordBatch` as a Python value (for `#[pyfunction]` results).
pub struct PyBatch(pub RecordBatch);

impl<'py> IntoPyObject<'py> for PyBatch {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        batch(py, &self.0)
    }
}
