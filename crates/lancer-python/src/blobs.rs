//! The blob API from Python (`LanceDataset.read_blobs`, `read_blob_ranges`,
//! `take_blobs` → `lancer.BlobFile`) over `lancer::blobs`: payload bytes cross as
//! Python `bytes`, a lazy handle as [`BlobHandle`] (size, ranged reads).

use lancer::blobs::{self, Selection, Selector};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::dataset::Dataset;
use crate::errors;

/// Adds the functions and classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BlobHandle>()?;
    m.add_function(wrap_pyfunction!(read_blobs, m)?)?;
    m.add_function(wrap_pyfunction!(read_blob_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(take_blobs, m)?)?;
    Ok(())
}

fn selector(name: &str) -> PyResult<Selector> {
    Selector::parse(name).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn bytes_or_none<'py>(py: Python<'py>, b: Option<impl AsRef<[u8]>>) -> Option<Bound<'py, PyBytes>> {
    b.map(|b| PyBytes::new(py, b.as_ref()))
}

/// `(row address, bytes | None)` per selected row.
#[pyfunction]
#[pyo3(signature = (ds, column, selector_name, rows, preserve_order=true))]
fn read_blobs<'py>(
    py: Python<'py>,
    ds: &Dataset,
    column: &str,
    selector_name: &str,
    rows: Vec<u64>,
    preserve_order: bool,
) -> PyResult<Vec<(u64, Option<Bound<'py, PyBytes>>)>> {
    let sel = selector(selector_name)?;
    let got = py
        .detach(|| {
            blobs::read_blobs(
                &ds.ds,
                column,
                Selection {
                    selector: sel,
                    rows: &rows,
                },
                preserve_order,
            )
        })
        .map_err(errors::lancer)?;
    Ok(got
        .into_iter()
        .map(|(a, b)| (a, bytes_or_none(py, b)))
        .collect())
}

/// A range request's answer: request index, row address, bytes (None: a null blob).
type RangeResult<'py> = (usize, u64, Option<Bound<'py, PyBytes>>);

/// `(request index, row address, bytes | None)` per `(row, offset, length)` request.
#[pyfunction]
#[pyo3(signature = (ds, column, requests, selector_name, preserve_order=true))]
fn read_blob_ranges<'py>(
    py: Python<'py>,
    ds: &Dataset,
    column: &str,
    requests: Vec<(u64, u64, u64)>,
    selector_name: &str,
    preserve_order: bool,
) -> PyResult<Vec<RangeResult<'py>>> {
    let sel = selector(selector_name)?;
    let got = py
        .detach(|| blobs::read_blob_ranges(&ds.ds, column, &requests, sel, preserve_order))
        .map_err(errors::lancer)?;
    Ok(got
        .into_iter()
        .map(|(k, a, b)| (k, a, bytes_or_none(py, b)))
        .collect())
}

/// A lazily read blob: its size and ranged reads (wrapped by `lancer.BlobFile`).
#[pyclass(module = "lancer._lancer", frozen)]
pub struct BlobHandle {
    file: blobs::BlobFile,
}

#[pymethods]
impl BlobHandle {
    /// The payload's size in bytes.
    fn size(&self) -> u64 {
        self.file.size()
    }

    /// The row's address.
    fn address(&self) -> u64 {
        self.file.address()
    }

    /// `length` bytes from `offset` (past the end: an error).
    fn read_range<'py>(
        &self,
        py: Python<'py>,
        offset: u64,
        length: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let end = offset
            .checked_add(length)
            .ok_or_else(|| PyValueError::new_err("offset + length overflows 64 bits"))?;
        let b = py
            .detach(|| self.file.read_range(offset..end))
            .map_err(errors::lancer)?;
        Ok(PyBytes::new(py, &b))
    }

    /// Several `(offset, length)` ranges in one request.
    fn read_ranges<'py>(
        &self,
        py: Python<'py>,
        ranges: Vec<(u64, u64)>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let mut rs = Vec::with_capacity(ranges.len());
        for (o, l) in ranges {
            let end = o
                .checked_add(l)
                .ok_or_else(|| PyValueError::new_err("offset + length overflows 64 bits"))?;
            rs.push(o..end);
        }
        let got = py
            .detach(|| self.file.read_ranges(&rs))
            .map_err(errors::lancer)?;
        Ok(got.iter().map(|b| PyBytes::new(py, b)).collect())
    }
}

/// A handle (or None for a null blob) per selected row.
#[pyfunction]
fn take_blobs(
    ds: &Dataset,
    column: &str,
    selector_name: &str,
    rows: Vec<u64>,
    py: Python<'_>,
) -> PyResult<Vec<Option<BlobHandle>>> {
    let sel = selector(selector_name)?;
    let got = py
        .detach(|| {
            blobs::take_blobs(
                &ds.ds,
                column,
                Selection {
                    selector: sel,
                    rows: &rows,
                },
            )
        })
        .map_err(errors::lancer)?;
    Ok(got
        .into_iter()
        .map(|f| f.map(|file| BlobHandle { file }))
        .collect())
}
