//! What a PATH argument names: a Lance dataset directory (at a version) or one data
//! file; commands read rows and schemas through this one type.

use lancer::Session;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use lancer::file::FileReader;
use lancer::Dataset;

use super::{open_traced, report, CmdResult};
use crate::args::VersionArgs;

/// A dataset at a version, or a data file.
pub enum Source {
    /// A dataset.
    Dataset(Box<Dataset>),
    /// A data file.
    File(Box<FileReader>),
}

/// True if `path` is a dataset: a directory with `_versions/`, or any URI (opening it
/// then reaches its store, instead of it being taken for a data file's path).
pub fn is_dataset(path: &Path) -> bool {
    let text = path.to_string_lossy();
    text.contains("://") || path.join("_versions").is_dir()
}

/// Opens a dataset (at `at`) at a dataset directory.
pub fn open_dataset(
    s: &Session,
    path: &Path,
    at: &VersionArgs,
) -> Result<Dataset, Box<dyn std::error::Error>> {
    let ds = match (&at.version, &at.tag) {
        (Some(v), _) => s.open_version(path, *v)?,
        (None, Some(t)) => s.open_tag(path, t)?,
        (None, None) => s.open(path)?,
    };
    Ok(ds)
}

impl Source {
    /// Opens `path`.
    pub fn open(
        s: &Session,
        path: &Path,
        at: &VersionArgs,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        if is_dataset(path) {
            return Ok(Source::Dataset(Box::new(open_dataset(s, path, at)?)));
        }
        if at.version.is_some() || at.tag.is_some() {
            return Err(format!(
                "{} is a data file; --version and --tag apply to datasets",
                path.display()
            )
            .into());
        }
        if path.is_dir() {
            return Err(format!(
                "{} is a directory but not a Lance dataset (it has no _versions/ directory): \
                 name a dataset directory or a .lance data file",
                path.display()
            )
            .into());
        }
        let (r, _) = open_traced(path)?;
        Ok(Source::File(Box::new(r)))
    }

    /// Rows (for datasets from the manifest).
    pub fn num_rows(&self) -> u64 {
        match self {
            Source::Dataset(d) => d.count_rows(),
            Source::File(r) => r.num_rows(),
        }
    }

    /// The Arrow schema.
    pub fn schema(&self) -> SchemaRef {
        match self {
            // a dataset's JSON columns as its readers give them (Arrow's JSON text)
            Source::Dataset(d) => lancer::json_text_schema(&d.schema()),
            Source::File(r) => r.schema(),
        }
    }

    /// Rows `start..end`.
    pub fn range(
        &self,
        start: u64,
        end: u64,
        cols: Option<&[&str]>,
    ) -> Result<RecordBatch, Box<dyn std::error::Error>> {
        Ok(match self {
            Source::Dataset(d) if start == 0 && end >= d.count_rows() => d.to_batch(cols)?,
            Source::Dataset(d) => d.take(&(start..end).collect::<Vec<_>>(), cols)?,
            Source::File(r) => r.read_range(start..end, cols)?,
        })
    }

    /// Rows at `offsets`.
    pub fn take(
        &self,
        offsets: &[u64],
        cols: Option<&[&str]>,
    ) -> Result<RecordBatch, Box<dyn std::error::Error>> {
        Ok(match self {
            Source::Dataset(d) => {
                use lancer::DatasetExt;
                d.take_paths(offsets, cols)?
            }
            Source::File(r) => r.take(offsets, cols)?,
        })
    }
}

/// Prints the schema.
pub fn schema(s: &Session, path: &Path, at: &VersionArgs, json: bool) -> CmdResult {
    let s = Source::open(s, path, at)?.schema();
    let fields: Vec<serde_json::Value> = s
        .fields()
        .iter()
        .map(|f| {
            serde_json::json!({
                "name": f.name(),
                "type": f.data_type().to_string(),
                "nullable": f.is_nullable(),
                "metadata": f.metadata(),
            })
        })
        .collect();
    report(
        json,
        serde_json::json!({ "fields": fields, "metadata": s.metadata() }),
        || {
            s.fields()
                .iter()
                .map(|f| {
                    format!(
                        "{}: {}{}",
                        f.name(),
                        f.data_type(),
                        if f.is_nullable() { "" } else { " not null" }
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        },
    )
}

/// Prints the row count (of rows passing `filter`, if given).
pub fn count(
    s: &Session,
    path: &Path,
    filter: Option<&str>,
    at: &VersionArgs,
    json: bool,
) -> CmdResult {
    let src = Source::open(s, path, at)?;
    let n = match (filter, &src) {
        (None, _) => src.num_rows(),
        (Some(f), Source::Dataset(d)) => {
            use lancer::DatasetExt;
            d.count_where(f)?
        }
        (Some(f), Source::File(_)) => {
            let all = src.range(0, src.num_rows(), None)?;
            lancer::Filter::new(f, &all.schema())?
                .evaluate(&all)?
                .true_count() as u64
        }
    };
    report(json, serde_json::json!({ "rows": n }), || n.to_string())
}
