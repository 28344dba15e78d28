//! `lancer blob get | ls` and `lancer import-files`: blob columns from the shell
//! (reference "Blob Columns", lines ~6700–7160). `get` fetches one row's payload, or a
//! byte range of it, reading only those bytes; `ls` lists each row's blob (kind, size,
//! where it lives) from the descriptors alone; `import-files` writes a folder of files
//! into a blob column with their path, size and MIME type.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{LargeBinaryBuilder, StringBuilder, UInt64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer::blobs::{self, Selection, Selector};
use lancer::{Dataset, DatasetExt, FileVersion, Session, WriteParams};

use super::source::open_dataset;
use super::{report, CmdResult};
use crate::args::{Mode, VersionArgs};

/// Parses `A..B` (either end may be left out: `..B`, `A..`).
fn parse_range(s: &str, size: u64) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("--range {s:?}: write START..END (bytes, END exclusive)"))?;
    let num = |t: &str, d: u64| -> Result<u64, String> {
        if t.is_empty() {
            Ok(d)
        } else {
            t.parse::<u64>()
                .map_err(|_| format!("--range {s:?}: {t:?} is not a byte offset"))
        }
    };
    let (a, b) = (num(a, 0)?, num(b, size)?);
    if a > b || b > size {
        return Err(format!(
            "--range {s:?} does not fit the blob's {size} bytes"
        ));
    }
    Ok(a..b)
}

fn selector(by: &str) -> Result<Selector, Box<dyn std::error::Error>> {
    Ok(Selector::parse(by)?)
}

/// `lancer blob get DATASET --column C --row N [--range A..B] [--by indices|ids|addresses]`.
#[allow(clippy::too_many_arguments)]
pub fn get(
    s: &Session,
    path: &Path,
    column: &str,
    row: u64,
    range: Option<&str>,
    by: &str,
    output: Option<&Path>,
    at: &VersionArgs,
) -> CmdResult {
    let ds = open_dataset(s, path, at)?;
    let sel = Selection {
        selector: selector(by)?,
        rows: &[row],
    };
    let file = blobs::take_blobs(&ds, column, sel)?
        .pop()
        .flatten()
        .ok_or_else(|| format!("row {row}: the blob of {column:?} is null"))?;
    let r = match range {
        Some(t) => parse_range(t, file.size())?,
        None => 0..file.size(),
    };
    // whole payloads stream out in 8 MiB pieces (bounded memory for any size)
    const PIECE: u64 = 8 << 20;
    let mut out: Box<dyn Write> = match output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut at = r.start;
    while at < r.end {
        let end = (at + PIECE).min(r.end);
        out.write_all(&file.read_range(at..end)?)?;
        at = end;
    }
    out.flush()?;
    Ok(())
}

/// `lancer blob ls DATASET --column C [--limit N]`.
pub fn ls(
    s: &Session,
    path: &Path,
    column: &str,
    limit: Option<usize>,
    json: bool,
    at: &VersionArgs,
) -> CmdResult {
    let ds = open_dataset(s, path, at)?;
    // a top-level column, or a blob inside structs by its path (`s.b`)
    let lf = ds
        .field_at_path(column)
        .ok_or_else(|| format!("no column {column:?} in {}", path.display()))?;
    if !lf.is_blob() && !lf.is_blob_v2() {
        return Err(format!("column {column:?} is not a blob column").into());
    }
    // legacy blob columns (files 2.0 / 2.1) describe each payload as (position, size)
    // in the data file; 2.0 describes a null as (1, 0)
    let legacy = !lf.is_blob_v2();
    let described: Dataset = ds.with_blob_descriptions();
    let mut rows = Vec::new();
    let mut scan = described.scan().columns(&[column]).with_row_address(true);
    if let Some(n) = limit {
        scan = scan.limit(Some(n as u64));
    }
    let mut index = 0u64;
    for b in scan.stream()? {
        let b: RecordBatch = b?;
        let d = b.column(0).as_struct();
        let addr = b
            .column_by_name("_rowaddr")
            .ok_or("the scan returned no row addresses")?
            .as_primitive::<UInt64Type>();
        for i in 0..b.num_rows() {
            let legacy_null = legacy && {
                let (p, n) = (
                    d.column(0).as_primitive::<UInt64Type>().value(i),
                    d.column(1).as_primitive::<UInt64Type>().value(i),
                );
                p == 1 && n == 0
            };
            let row = if d.is_null(i) || legacy_null {
                serde_json::json!({"index": index, "address": addr.value(i), "kind": "null"})
            } else if legacy {
                let pos = d.column(0).as_primitive::<UInt64Type>().value(i);
                let size = d.column(1).as_primitive::<UInt64Type>().value(i);
                serde_json::json!({"index": index, "address": addr.value(i), "kind": "legacy",
                                   "size": size,
                                   "location": format!("data file bytes {pos}..{}", pos.saturating_add(size))})
            } else {
                let kind = d.column(0).as_primitive::<UInt8Type>().value(i);
                let pos = d.column(1).as_primitive::<UInt64Type>().value(i);
                let size = d.column(2).as_primitive::<UInt64Type>().value(i);
                let id = d.column(3).as_primitive::<UInt32Type>().value(i);
                let uri = d.column(4).as_string::<i32>().value(i);
                let (name, location) = match kind {
                    0 => ("inline", format!("data file bytes {pos}..{}", pos + size)),
                    1 => (
                        "packed",
                        format!("sidecar {id} bytes {pos}..{}", pos + size),
                    ),
                    2 => ("dedicated", format!("sidecar {id}")),
                    3 if size > 0 => ("external", format!("{uri} bytes {pos}..{}", pos + size)),
                    3 => ("external", uri.to_string()),
                    _ => ("unknown", format!("kind {kind}")),
                };
                serde_json::json!({"index": index, "address": addr.value(i), "kind": name,
                                   "size": if kind == 3 && size == 0 { None } else { Some(size) },
                                   "location": location})
            };
            rows.push(row);
            index += 1;
        }
    }
    let listing = rows.clone();
    report(json, serde_json::Value::Array(rows), || {
        let mut out = format!(
            "{:>8}  {:>20}  {:<9}  {:>12}  location",
            "row", "address", "kind", "size"
        );
        for r in &listing {
            out.push_str(&format!(
                "\n{:>8}  {:>20}  {:<9}  {:>12}  {}",
                r["index"].to_string(),
                r["address"].to_string(),
                r["kind"].as_str().unwrap_or(""),
                r.get("size")
                    .filter(|v| !v.is_null())
                    .map_or("-".to_string(), |v| v.to_string()),
                r.get("location").and_then(|v| v.as_str()).unwrap_or("")
            ));
        }
        out
    })
}

/// A file's MIME type by its extension (the common media and document kinds;
/// `application/octet-stream` otherwise).
fn mime_type(p: &Path) -> &'static str {
    let ext = p
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "tif" | "tiff" => "image/tiff",
        "svg" => "image/svg+xml",
        "mp4" => "video/mp4",
        "mov" => "video/quicktime",
        "webm" => "video/webm",
        "mkv" => "video/x-matroska",
        "avi" => "video/x-msvideo",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "flac" => "audio/flac",
        "ogg" => "audio/ogg",
        "pdf" => "application/pdf",
        "json" => "application/json",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "tar" => "application/x-tar",
        "txt" | "md" => "text/plain",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        _ => "application/octet-stream",
    }
}

/// Every regular file under `dir`, sorted by path.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| format!("cannot list {}: {e}", d.display()))?;
        for e in rd {
            let e = e?;
            let t = e.file_type()?;
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Payload bytes gathered into one batch before it is written.
const BATCH_BYTES: u64 = 64 << 20;

/// `lancer import-files DIR DATASET --column C`: one row per file under DIR (path
/// relative to DIR, size, MIME type, and the bytes in blob column C).
#[allow(clippy::too_many_arguments)]
pub fn import_files(
    s: &Session,
    dir: &Path,
    dataset: &Path,
    column: &str,
    mode: Mode,
    storage: &str,
    max_rows_per_file: usize,
    json: bool,
) -> CmdResult {
    let storage = FileVersion::parse(storage)?;
    let files = files_under(dir)?;
    let blob_md = [("lance-encoding:blob".to_string(), "true".to_string())]
        .into_iter()
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("size", DataType::UInt64, false),
        Field::new("mime_type", DataType::Utf8, false),
        Field::new(column, DataType::LargeBinary, true).with_metadata(blob_md),
    ]));
    let params = WriteParams {
        storage,
        max_rows_per_file,
        ..Default::default()
    };
    let (store, existing) = super::dataset::write_target(s, dataset, mode)?;
    let total_bytes = std::cell::Cell::new(0u64);
    let schema2 = schema.clone();
    let mut it = files.iter().peekable();
    let batches = std::iter::from_fn(|| {
        it.peek()?;
        let mut paths = StringBuilder::new();
        let mut sizes = UInt64Builder::new();
        let mut mimes = StringBuilder::new();
        let mut data = LargeBinaryBuilder::new();
        let mut bytes = 0u64;
        while it.peek().is_some() {
            if bytes >= BATCH_BYTES {
                break;
            }
            let p = it.next()?;
            let content = match std::fs::read(p) {
                Ok(c) => c,
                Err(e) => {
                    return Some(Err(lancer::TableError::InvalidInput {
                        what: format!("cannot read {}: {e}", p.display()),
                    }))
                }
            };
            let rel = p.strip_prefix(dir).unwrap_or(p);
            paths.append_value(rel.to_string_lossy());
            sizes.append_value(content.len() as u64);
            mimes.append_value(mime_type(p));
            bytes += content.len() as u64;
            data.append_value(&content);
        }
        total_bytes.set(total_bytes.get() + bytes);
        Some(
            RecordBatch::try_new(
                schema2.clone(),
                vec![
                    Arc::new(paths.finish()),
                    Arc::new(sizes.finish()),
                    Arc::new(mimes.finish()),
                    Arc::new(data.finish()),
                ],
            )
            .map_err(lancer::TableError::from),
        )
    });
    let ds = super::dataset::write_into(s, store, existing, mode, schema, batches, &params)?;
    let (n, bytes) = (files.len(), total_bytes.get());
    report(
        json,
        serde_json::json!({"imported_files": n, "bytes": bytes, "version": ds.version(),
                           "rows": ds.count_rows()}),
        || {
            format!(
                "imported {n} files ({bytes} bytes) into {} column {column:?} (version {})",
                dataset.display(),
                ds.version()
            )
        },
    )
}
