//! Single Lance data files from Python, as pylance's `lance.file`: a reader of one file
//! (all rows, a range, or rows by index, in batches; its schema and version) and a
//! writer of one (batches in, the file out at 2.1 or 2.2). A path is a local path or an
//! object-store URI; the file's directory is opened as a store in a session of its own.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use arrow_schema::{Schema, SchemaRef};
use lancer::file::DataWriter;
use lancer::file::FileReader;
use lancer::file::FileVersion;
use lancer::file::WriteOptions;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::errors;
use crate::export::PyBatch;

type Options = Option<BTreeMap<String, String>>;

/// The store of `path`'s directory and the file's name in it.
fn locate(path: &str, options: &Options) -> PyResult<(lancer::Store, String)> {
    let (dir, name) = match path.rsplit_once('/') {
        Some((d, n)) if !n.is_empty() => (if d.is_empty() { "/" } else { d }, n),
        _ => (".", path),
    };
    let dir = if dir.ends_with(':') {
        format!("{dir}/")
    } else {
        dir.to_string()
    };
    let session = lancer::Session::builder()
        .storage_options(options.clone().unwrap_or_default())
        .build();
    let store = session.store(Path::new(&dir)).map_err(errors::lancer)?;
    Ok((store, name.to_string()))
}

fn format_err(e: lancer::file::FormatError) -> PyErr {
    errors::table(lancer::TableError::from(e))
}

/// `batch` cut into batches of at most `size` rows (one empty batch for none).
fn batches(batch: RecordBatch, size: usize) -> Vec<PyBatch> {
    let size = size.max(1);
    if batch.num_rows() == 0 {
        return vec![PyBatch(batch)];
    }
    (0..batch.num_rows())
        .step_by(size)
        .map(|s| PyBatch(batch.slice(s, size.min(batch.num_rows() - s))))
        .collect()
}

/// A reader of one Lance data file.
#[pyclass(name = "FileReader", module = "lancer._lancer")]
pub struct PyFileReader {
    reader: Arc<FileReader>,
    columns: Option<Vec<String>>,
}

#[pymethods]
impl PyFileReader {
    /// Opens the file at `path` (reading only its tail: footer, metadata, schema).
    #[new]
    #[pyo3(signature = (path, storage_options=None, columns=None))]
    fn new(
        py: Python<'_>,
        path: String,
        storage_options: Options,
        columns: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let reader = py.detach(|| {
            let (store, name) = locate(&path, &storage_options)?;
            let io = store
                .reader(&name, None)
                .map_err(|e| errors::table(e.into()))?;
            FileReader::open(io).map_err(format_err)
        })?;
        if let Some(c) = &columns {
            let schema = reader.schema();
            if let Some(bad) = c.iter().find(|c| schema.index_of(c).is_err()) {
                return Err(PyValueError::new_err(format!(
                    "the file has no column {bad:?}"
                )));
            }
        }
        Ok(Self {
            reader: Arc::new(reader),
            columns,
        })
    }

    fn projection(&self) -> Option<Vec<&str>> {
        self.columns
            .as_ref()
            .map(|c| c.iter().map(String::as_str).collect())
    }

    /// Every row, in batches of `batch_size`.
    fn read_all(&self, py: Python<'_>, batch_size: usize) -> PyResult<Vec<PyBatch>> {
        let p = self.projection();
        let b = py.detach(|| self.reader.read_all(p.as_deref()).map_err(format_err))?;
        Ok(batches(b, batch_size))
    }

    /// Rows `start..start + num_rows`, in batches of `batch_size`.
    fn read_range(
        &self,
        py: Python<'_>,
        start: u64,
        num_rows: u64,
        batch_size: usize,
    ) -> PyResult<Vec<PyBatch>> {
        let end = start
            .checked_add(num_rows)
            .filter(|&e| e <= self.reader.num_rows())
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "rows {start}..{start}+{num_rows} of a {}-row file",
                    self.reader.num_rows()
                ))
            })?;
        let p = self.projection();
        let b = py.detach(|| {
            self.reader
                .read_range(start..end, p.as_deref())
                .map_err(format_err)
        })?;
        Ok(batches(b, batch_size))
    }

    /// Rows at `indices` (ascending), in batches of `batch_size`.
    fn take_rows(
        &self,
        py: Python<'_>,
        indices: Vec<u64>,
        batch_size: usize,
    ) -> PyResult<Vec<PyBatch>> {
        if let Some(bad) = indices.iter().find(|&&i| i >= self.reader.num_rows()) {
            return Err(PyValueError::new_err(format!(
                "row {bad} of a {}-row file",
                self.reader.num_rows()
            )));
        }
        let p = self.projection();
        let b = py.detach(|| self.reader.take(&indices, p.as_deref()).map_err(format_err))?;
        Ok(batches(b, batch_size))
    }

    /// Rows in the file.
    fn num_rows(&self) -> u64 {
        self.reader.num_rows()
    }

    /// The file's schema (the columns asked, when given).
    fn schema(&self) -> PyResult<PyArrowType<Schema>> {
        let s = self.reader.schema();
        Ok(PyArrowType(match &self.columns {
            None => s.as_ref().clone(),
            Some(c) => {
                let idx: Vec<usize> = c.iter().filter_map(|c| s.index_of(c).ok()).collect();
                s.project(&idx)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?
            }
        }))
    }

    /// The format version as (major, minor), as pylance reports it (2.0 files carry
    /// 0.3 in their footer).
    fn version(&self) -> (u16, u16) {
        let v = self.reader.metadata().version;
        let (major, minor) = match v {
            FileVersion::Legacy => (0, 2),
            FileVersion::V2_0 => (0, 3),
            FileVersion::V2_1 => (2, 1),
            FileVersion::V2_2 => (2, 2),
            FileVersion::V2_3 => (2, 3),
        };
        (major, minor)
    }
}

/// A writer of one Lance data file.
#[pyclass(name = "FileWriter", module = "lancer._lancer")]
pub struct PyFileWriter {
    store: lancer::Store,
    name: String,
    schema: Option<SchemaRef>,
    version: FileVersion,
    metadata: Vec<(String, String)>,
    /// (a mutex: the class is shared with Python threads; calls take turns)
    writer: std::sync::Mutex<Option<DataWriter>>,
    rows: u64,
    closed: bool,
}

impl PyFileWriter {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<DataWriter>> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn started(&self) -> bool {
        self.lock().is_some()
    }
}

#[pymethods]
impl PyFileWriter {
    /// A writer of `path` at `version` (`2.0`, `2.1`, `2.2` / `stable`, the default as
    /// pylance 14); `schema` or the first batch's.
    #[new]
    #[pyo3(signature = (path, schema=None, version=None, storage_options=None))]
    fn new(
        path: String,
        schema: Option<PyArrowType<Schema>>,
        version: Option<String>,
        storage_options: Options,
    ) -> PyResult<Self> {
        let version = match version.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("stable") | Some("2.2") => FileVersion::V2_2,
            Some("2.1") => FileVersion::V2_1,
            Some("2.0") => FileVersion::V2_0,
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "lancer writes data files at 2.0, 2.1 and 2.2 (stable), not {other:?}"
                )))
            }
        };
        let (store, name) = locate(&path, &storage_options)?;
        Ok(Self {
            store,
            name,
            schema: schema.map(|s| Arc::new(s.0)),
            version,
            metadata: Vec::new(),
            writer: std::sync::Mutex::new(None),
            rows: 0,
            closed: false,
        })
    }

    /// Adds `key: value` to the file's schema metadata (before the first batch).
    fn add_schema_metadata(&mut self, key: String, value: String) -> PyResult<()> {
        if self.started() || self.closed {
            return Err(PyValueError::new_err(
                "add_schema_metadata must come before the first batch is written",
            ));
        }
        self.metadata.push((key, value));
        Ok(())
    }

    /// Writes `batch` (of the writer's schema).
    fn write_batch(&mut self, py: Python<'_>, batch: PyArrowType<RecordBatch>) -> PyResult<()> {
        if self.closed {
            return Err(PyValueError::new_err("the writer is closed"));
        }
        let batch = batch.0;
        if !self.started() {
            let base = self.schema.clone().unwrap_or_else(|| batch.schema());
            let mut md = base.metadata().clone();
            md.extend(self.metadata.iter().cloned());
            let schema = Arc::new(base.as_ref().clone().with_metadata(md));
            let options = WriteOptions {
                version: self.version,
                ..Default::default()
            };
            let w = py
                .detach(|| DataWriter::create(&self.store, &self.name, schema.clone(), options))
                .map_err(format_err)?;
            self.schema = Some(schema);
            *self.lock() = Some(w);
        }
        let schema = self.schema.clone().unwrap_or_else(|| batch.schema());
        if batch.schema().fields() != schema.fields() {
            return Err(PyTypeError::new_err(format!(
                "the batch's schema {:?} is not the file's {:?}",
                batch.schema().fields(),
                schema.fields()
            )));
        }
        let batch = RecordBatch::try_new(schema, batch.columns().to_vec())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let rows = batch.num_rows() as u64;
        let mut guard = self.lock();
        if let Some(w) = guard.as_mut() {
            py.detach(|| w.write_batch(&batch)).map_err(format_err)?;
        }
        drop(guard);
        self.rows += rows;
        Ok(())
    }

    /// Finishes the file; the rows written (None when nothing was written and the
    /// schema is unknown, as pylance refuses).
    fn close(&mut self, py: Python<'_>) -> PyResult<u64> {
        if self.closed {
            return Ok(self.rows);
        }
        if !self.started() {
            let Some(schema) = self.schema.clone() else {
                return Err(PyValueError::new_err(
                    "no batch was written and no schema given: the file's schema is unknown",
                ));
            };
            let empty = RecordBatch::new_empty(schema);
            self.write_batch(py, PyArrowType(empty))?;
        }
        self.closed = true;
        let taken = self.lock().take();
        if let Some(w) = taken {
            py.detach(|| w.finish()).map_err(format_err)?;
        }
        Ok(self.rows)
    }
}
