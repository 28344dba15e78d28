//! A dataset as a table of DataFusion-Python (`datafusion` from PyPI, the DataFusion
//! major version this build pins): `FFILanceTableProvider(dataset)` — and the dataset
//! itself — answer `__datafusion_table_provider__(session)` with a
//! `datafusion_table_provider` capsule holding an `FFI_TableProvider` (the `datafusion-ffi`
//! crate's stable ABI) over `lancer-sql`'s `LanceTable`, so
//! `SessionContext.register_table("t", provider)` works as it does with pylance's
//! provider. The host's logical extension codec comes from `session` (an object with
//! `__datafusion_logical_extension_codec__`, or the codec capsule itself).

use std::ffi::CStr;
use std::sync::Arc;

use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use lancer_sql::datafusion::catalog::TableProvider;
use lancer_sql::LanceTable;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::dataset::Dataset;

const PROVIDER: &CStr = c"datafusion_table_provider";
const CODEC: &CStr = c"datafusion_logical_extension_codec";

/// Adds the class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FfiProvider>()?;
    Ok(())
}

/// A dataset version as a DataFusion-Python table provider, with `_rowid` / `_rowaddr`
/// columns when asked (pylance's `FFILanceTableProvider`).
#[pyclass(name = "FFILanceTableProvider", module = "lancer", frozen)]
pub struct FfiProvider {
    table: LanceTable,
}

/// The runtime the registered tables' async parts run in (DataFusion-Python's threads
/// poll them): the module's one, made when a table is first registered. It lives as long
/// as the module because a registered provider outlives the Python object that made it
/// (and a runtime may not be dropped inside the host's async code).
static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();

fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    if let Some(r) = RUNTIME.get() {
        return Ok(r);
    }
    let r = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("lancer-datafusion")
        .enable_all()
        .build()
        .map_err(|e| PyValueError::new_err(format!("cannot start a runtime: {e}")))?;
    Ok(RUNTIME.get_or_init(|| r))
}

#[pymethods]
impl FfiProvider {
    #[new]
    #[pyo3(signature = (dataset, *, with_row_id=false, with_row_addr=false))]
    fn new(dataset: PyRef<'_, Dataset>, with_row_id: bool, with_row_addr: bool) -> Self {
        FfiProvider {
            table: LanceTable::new(dataset.ds.clone()).with_row_meta(with_row_id, with_row_addr),
        }
    }

    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        capsule(py, Arc::new(self.table.clone()), &session, runtime()?)
    }

    fn __repr__(&self) -> String {
        let ds = self.table.dataset();
        format!(
            "FFILanceTableProvider({:?}, version={})",
            ds.root(),
            ds.version()
        )
    }
}

/// The `datafusion_table_provider` capsule of `table` for the host `session`.
pub fn capsule<'py>(
    py: Python<'py>,
    table: Arc<dyn TableProvider>,
    session: &Bound<'py, PyAny>,
    runtime: &tokio::runtime::Runtime,
) -> PyResult<Bound<'py, PyCapsule>> {
    let codec = host_codec(session)?;
    let provider =
        FFI_TableProvider::new_with_ffi_codec(table, true, Some(runtime.handle().clone()), codec);
    PyCapsule::new_with_value(py, provider, PROVIDER)
}

/// The host's logical extension codec: `session.__datafusion_logical_extension_codec__()`
/// or `session` itself when it is the codec's capsule.
fn host_codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let obj = if session.hasattr("__datafusion_logical_extension_codec__")? {
        session.call_method0("__datafusion_logical_extension_codec__")?
    } else {
        session.clone()
    };
    let capsule = obj.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(
            "__datafusion_table_provider__ takes the DataFusion session (a datafusion.SessionContext) \
             or its datafusion_logical_extension_codec capsule",
        )
    })?;
    let ptr = capsule.pointer_checked(Some(CODEC))?;
    // SAFETY: the capsule's name says it holds an FFI_LogicalExtensionCodec (the
    // datafusion-ffi ABI, whose version the host checks when the provider is used); it
    // is cloned (its own reference count) while the capsule is alive.
    let codec = unsafe { ptr.cast::<FFI_LogicalExtensionCodec>().as_ref() };
    Ok(codec.clone())
}
