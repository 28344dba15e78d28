//! Lancer's errors as Python exceptions, with Lancer's message: a missing dataset is
//! `FileNotFoundError`, a mistake in the request (a filter, an argument, data that does
//! not fit the schema) `lancer.InvalidInputError` — a `ValueError` and an `OSError` at
//! once, since pylance raises either for the same kind of mistake depending on the call,
//! and code written for it catches one or the other — a lost commit race
//! `lancer.CommitConflictError` (an `OSError`, as pylance raises conflicts), unknown reader features `NotImplementedError`, storage
//! failures `OSError`, damaged data `lancer.CorruptDataError` (an `OSError`), and a
//! scan stopped by Ctrl-C `KeyboardInterrupt`.

use lancer::TableError;
use pyo3::exceptions::{
    PyFileNotFoundError, PyKeyboardInterrupt, PyNotImplementedError, PyOSError, PyValueError,
};
use pyo3::prelude::*;

pyo3::create_exception!(
    _lancer,
    CommitConflictError,
    PyOSError,
    "Another writer committed first and the change cannot be rebased on it; retry."
);
pyo3::create_exception!(
    _lancer,
    CorruptDataError,
    PyOSError,
    "A file of the dataset is damaged or not what its manifest says."
);

/// `lancer.InvalidInputError`, made once per interpreter (two built-in bases, which
/// `create_exception!` cannot give).
static INVALID_INPUT: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> =
    pyo3::sync::PyOnceLock::new();

fn invalid_input_type(py: Python<'_>) -> PyResult<&Bound<'_, pyo3::types::PyType>> {
    INVALID_INPUT
        .get_or_try_init(py, || {
            let bases = (py.get_type::<PyValueError>(), py.get_type::<PyOSError>());
            let ns = pyo3::types::PyDict::new(py);
            ns.set_item("__module__", "lancer")?;
            ns.set_item(
                "__doc__",
                "A mistake in the request: a filter, an argument, data that does not fit the \
                 dataset's schema, something that does not exist. Both a ValueError and an \
                 OSError, as pylance raises either for such mistakes.",
            )?;
            let ty =
                py.import("builtins")?
                    .getattr("type")?
                    .call1(("InvalidInputError", bases, ns))?;
            Ok(ty.cast_into::<pyo3::types::PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

/// A mistake in the request as `lancer.InvalidInputError` (see the module docs).
pub fn invalid_input(msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::attach(|py| match invalid_input_type(py) {
        Ok(ty) => PyErr::from_type(ty.clone(), msg),
        Err(e) => e,
    })
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("InvalidInputError", invalid_input_type(py)?)?;
    m.add("CommitConflictError", py.get_type::<CommitConflictError>())?;
    m.add("CorruptDataError", py.get_type::<CorruptDataError>())?;
    Ok(())
}

/// The message a scan stopped by a pending signal ends with (the Python side turns it
/// back into `KeyboardInterrupt` when pyarrow reports it).
pub const INTERRUPTED: &str = "lancer: interrupted (KeyboardInterrupt)";

/// A table-layer error as a Python exception.
pub fn table(e: TableError) -> PyErr {
    let msg = e.to_string();
    match e {
        TableError::NotFound { .. } => invalid_input(msg),
        TableError::InvalidInput { .. } => invalid_input(msg),
        TableError::Conflict { .. } => CommitConflictError::new_err(msg),
        TableError::UnknownFeatures { .. } => PyNotImplementedError::new_err(msg),
        // a type the file format cannot hold is the caller's data, not damage
        TableError::Format(lancer::file::FormatError::UnsupportedType { .. }) => invalid_input(msg),
        TableError::Corrupt { .. } | TableError::Format(_) => CorruptDataError::new_err(msg),
        // storage, and any kind a later layer adds
        _ => PyOSError::new_err(msg),
    }
}

/// A `lancer` error as a Python exception.
pub fn lancer(e: lancer::Error) -> PyErr {
    match e {
        lancer::Error::Table(t) => table(t),
        lancer::Error::Arrow(a) => arrow(a),
        lancer::Error::Index(i) => index(i),
        other => invalid_input(other.to_string()),
    }
}

/// An index-layer error as a Python exception: a damaged index file is
/// `CorruptDataError`, an index kind this build cannot search `NotImplementedError`.
fn index(e: lancer::IndexError) -> PyErr {
    use lancer::IndexError as E;
    let msg = e.to_string();
    match e {
        E::Table(t) => table(t),
        E::Corrupt { .. } | E::Format(_) | E::Json(_) => CorruptDataError::new_err(msg),
        E::Arrow(a) => arrow(a),
        E::Unsupported { .. } => PyNotImplementedError::new_err(msg),
        _ => invalid_input(msg),
    }
}

/// An Arrow error (from a scan or an input stream) as a Python exception.
pub fn arrow(e: arrow_schema::ArrowError) -> PyErr {
    let msg = e.to_string();
    if msg.contains(INTERRUPTED) {
        return PyKeyboardInterrupt::new_err(msg);
    }
    match e {
        arrow_schema::ArrowError::ExternalError(inner) => match inner.downcast::<lancer::Error>() {
            Ok(l) => lancer(*l),
            Err(inner) => match inner.downcast::<TableError>() {
                Ok(t) => table(*t),
                Err(_) => PyOSError::new_err(msg),
            },
        },
        arrow_schema::ArrowError::IoError(..) => PyOSError::new_err(msg),
        _ => invalid_input(msg),
    }
}

/// An error opening a dataset: a missing one is `FileNotFoundError`.
pub fn open(uri: &str, e: TableError) -> PyErr {
    match e {
        TableError::NotFound { .. } => {
            PyFileNotFoundError::new_err(format!("no Lance dataset at {uri}: {e}"))
        }
        other => table(other),
    }
}
