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
    let (addrs, payloads): (Vec<u64>, Vec<_>) = got.into_iter().unzip();
    Ok(addrs.into_iter().zip(copy_out(py, payloads)?).collect())
}

/// Below this many bytes in all, payloads are copied into Python on one thread.
const PARALLEL_COPY_MIN: usize = 8 << 20;

/// Pieces of one copy handed to a thread (fewer page faults per hand-over than smaller).
const COPY_PIECE: usize = 1 << 20;

/// `bytes` objects holding `payloads` (None stays None). Large reads are copied by
/// several threads with the GIL released: a copy out of the mapped file into fresh
/// memory is bound by page faults, which one core takes at ~1.8 GB/s.
fn copy_out<B: AsRef<[u8]> + Sync>(
    py: Python<'_>,
    payloads: Vec<Option<B>>,
) -> PyResult<Vec<Option<Bound<'_, PyBytes>>>> {
    let total: usize = payloads.iter().flatten().map(|b| b.as_ref().len()).sum();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if total < PARALLEL_COPY_MIN || threads < 2 {
        return Ok(payloads.into_iter().map(|b| bytes_or_none(py, b)).collect());
    }
    // Each object is created with its bytes unset (CPython's documented way to fill a
    // new `bytes` in place); nothing outside this function sees it until all are
    // filled.
    let mut objects = Vec::with_capacity(payloads.len());
    let mut pieces: Vec<(usize, &[u8])> = Vec::new();
    for b in &payloads {
        let Some(b) = b else {
            objects.push(None);
            continue;
        };
        let b = b.as_ref();
        let len = isize::try_from(b.len())
            .map_err(|_| PyValueError::new_err("a blob larger than Python's bytes can hold"))?;
        // SAFETY: a null source with a length asks CPython for an uninitialized bytes
        // object of that length; the returned reference is owned (or null with an
        // exception set, which `from_owned_ptr_or_err` raises).
        let obj = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len),
            )?
            .cast_into_unchecked::<PyBytes>()
        };
        // SAFETY: `obj` is a bytes object of `len` bytes; its buffer stays put while the
        // object lives (held in `objects` until this function returns it).
        let dst = unsafe { pyo3::ffi::PyBytes_AsString(obj.as_ptr()) } as usize;
        for (k, chunk) in b.chunks(COPY_PIECE).enumerate() {
            pieces.push((dst + k * COPY_PIECE, chunk));
        }
        objects.push(Some(obj));
    }
    py.detach(|| {
        std::thread::scope(|s| {
            for t in 0..threads {
                let pieces = &pieces;
                s.spawn(move || {
                    for (dst, src) in pieces.iter().skip(t).step_by(threads) {
                        // SAFETY: every piece is a disjoint range of one object's buffer
                        // (offsets k * COPY_PIECE, lengths up to COPY_PIECE within its
                        // length), written by one thread only, before any Python code
                        // can see the object.
                        unsafe {
                            std::ptr::copy_nonoverlapping(src.as_ptr(), *dst as *mut u8, src.len())
                        };
                    }
                });
            }
        })
    });
    Ok(objects)
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
