//! Lancer's errors as Python exceptions, with Lancer's message: a missing dataset is
//! `FileNotFoundError`, a filter / argument error `ValueError`, a lost commit race
//! `lancer.CommitConflictError` (an `OSError`, as pylance raises conflicts), unknown reader features `NotImplementedError`, storage
//! failures `OSError`, damaged data `lancer.CorruptDataError` (an `OSError`), and a
//! scan stopped by Ctrl-C `KeyboardInterrupt`.

use lancer::table::TableError;
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

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
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
        TableError::NotFound { .. } => PyValueError::new_err(msg),
        TableError::InvalidInput { .. } => PyValueError::new_err(msg),
        TableError::Conflict { .. } => CommitConflictError::new_err(msg),
        TableError::UnknownFeatures { .. } => PyNotImplementedError::new_err(msg),
        // a type the file format cannot hold is the caller's data, not damage
        TableError::Format(lancer::file::FormatError::UnsupportedType { .. }) => {
            PyValueError::new_err(msg)
        }
        TableError::Corrupt { .. } | TableError::Format(_) => CorruptDataError::new_err(msg),
        TableError::Io { .. } | TableError::Storage { .. } | TableError::Refused { .. } => {
            PyOSError::new_err(msg)
        }
    }
}

/// A `lancer` error as a Python exception.
pub fn lancer(e: lancer::Error) -> PyErr {
    match e {
        lancer::Error::Table(t) => table(t),
        lancer::Error::Arrow(a) => arrow(a),
        lancer::Error::Index(i) => index(i),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// An index-layer error as a Python exception: a damaged index file is
/// `CorruptDataError`, an index kind this build cannot search `NotImplementedError`.
fn index(e: lancer::indexes::IndexError) -> PyErr {
    use lancer::indexes::IndexError as E;
    let msg = e.to_string();
    match e {
        E::Table(t) => table(t),
        E::Corrupt { .. } | E::Format(_) | E::Json(_) => CorruptDataError::new_err(msg),
        E::Unsupported { .. } => PyNotImplementedError::new_err(msg),
        E::Arrow(a) => arrow(a),
        E::InvalidArgument { .. } => PyValueError::new_err(msg),
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
        _ => PyValueError::new_err(msg),
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
