//! One record batch to `pyarrow.RecordBatch` in a single import: the batch as a struct
//! array through the Arrow C Data interface, `pyarrow.RecordBatch._import_from_c` — no
//! copy, and no stream object per batch (`arrow-pyarrow`'s conversion wraps each batch
//! in a one-batch reader: about twice the cost for small takes).
//!
//! The schema crosses once: the `pyarrow.Schema` made for a schema is kept (the last
//! [`SCHEMAS`] distinct ones, most recent first) and handed to the import as an object,
//! so a take or a loader batch with a schema seen before imports only its arrays.
//! Importing a five-column schema costs pyarrow ~3.5 µs, a fifth of a one-row take.

use std::sync::{Arc, Mutex};

use arrow_array::{Array, RecordBatch, StructArray};
use arrow_data::ffi::FFI_ArrowArray;
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::Schema;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// How many distinct schemas keep their `pyarrow.Schema`.
const SCHEMAS: usize = 16;

/// `pyarrow.<class>.<method>`, looked up once into `cell`.
fn pyarrow_method<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    class: &str,
    method: &str,
) -> PyResult<&'py Bound<'py, PyAny>> {
    cell.get_or_try_init(py, || {
        Ok::<_, PyErr>(
            py.import("pyarrow")?
                .getattr(class)?
                .getattr(method)?
                .unbind(),
        )
    })
    .map(|f| f.bind(py))
}

/// `pyarrow.RecordBatch._import_from_c`.
fn import_batch(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static F: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    pyarrow_method(py, &F, "RecordBatch", "_import_from_c")
}

/// `pyarrow.Table.from_batches`.
fn table_from_batches(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static F: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    pyarrow_method(py, &F, "Table", "from_batches")
}

fn schema_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    TYPE.import(py, "pyarrow", "Schema")
}

type SchemaCache = Mutex<Vec<(Arc<Schema>, Py<PyAny>)>>;

/// The `pyarrow.Schema` for `schema`: a kept one when an equal schema was imported
/// before (compared by value: fields, types, nullability and metadata), else imported
/// now and kept.
fn py_schema<'py>(py: Python<'py>, schema: &Arc<Schema>) -> PyResult<Bound<'py, PyAny>> {
    static CACHE: PyOnceLock<SchemaCache> = PyOnceLock::new();
    let cache = CACHE.get_or_init(py, || Mutex::new(Vec::new()));
    {
        let mut kept = cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = kept
            .iter()
            .position(|(s, _)| Arc::ptr_eq(s, schema) || s.as_ref() == schema.as_ref())
        {
            let entry = kept.remove(i);
            let obj = entry.1.clone_ref(py);
            kept.insert(0, entry);
            return Ok(obj.into_bound(py));
        }
    }
    let mut ffi = FFI_ArrowSchema::try_from(schema.as_ref())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    // pyarrow moves the structure out through this (mutable) pointer and nulls its
    // release callback, so dropping it here frees nothing twice.
    let obj = schema_class(py)?
        .call_method1("_import_from_c", (std::ptr::addr_of_mut!(ffi) as usize,))?;
    let mut kept = cache.lock().unwrap_or_else(|e| e.into_inner());
    kept.insert(0, (schema.clone(), obj.clone().unbind()));
    kept.truncate(SCHEMAS);
    Ok(obj)
}

/// `batch` as a `pyarrow.RecordBatch`.
pub fn batch<'py>(py: Python<'py>, batch: &RecordBatch) -> PyResult<Bound<'py, PyAny>> {
    let schema = py_schema(py, &batch.schema())?;
    let data = StructArray::from(batch.clone()).into_data();
    let mut array = FFI_ArrowArray::new(&data);
    // As for the schema: pyarrow takes ownership through the pointer.
    import_batch(py)?.call1((std::ptr::addr_of_mut!(array) as usize, schema))
}

/// `batch` as a one-batch `pyarrow.Table` (what pylance's `take` returns), made here
/// rather than by a Python wrapper: the call path of a one-row take is mostly such
/// fixed costs.
pub fn table<'py>(py: Python<'py>, batch: &RecordBatch) -> PyResult<Bound<'py, PyAny>> {
    let b = self::batch(py, batch)?;
    table_from_batches(py)?.call1(((b,),))
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

/// A one-batch `pyarrow.Table` as a Python value.
pub struct PyTable(pub RecordBatch);

impl<'py> IntoPyObject<'py> for PyTable {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        table(py, &self.0)
    }
}
