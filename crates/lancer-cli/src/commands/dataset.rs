//! Dataset commands: versions, tags, restore, cleanup, import, export, verify.

use lancer::Session;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use lancer::file::FileVersion;
use lancer::versions::{cleanup as do_cleanup, version_infos as list};
use lancer::versions::{create_tag, delete_tag, list_tags, list_versions, rfc3339};
use lancer::Dataset;
use lancer::WriteParams;

use super::source::Source;
use super::{report, CmdResult};
use crate::args::{Mode, TagAction, VersionArgs};

/// `lancer versions`.
pub fn versions(s: &Session, path: &Path, json: bool) -> CmdResult {
    let store = s.store(path)?;
    let vs = list(&store)?;
    let tags = list_tags(&store)?;
    if json {
        let v: Vec<serde_json::Value> = vs
            .iter()
            .map(|v| {
                serde_json::json!({
                    "version": v.version,
                    "timestamp": rfc3339(v.timestamp.0.max(0) as u64, v.timestamp.1.max(0) as u32),
                    "rows": v.rows,
                    "operation": v.operation,
                    "tags": tags.iter().filter(|t| t.1 == v.version).map(|t| t.0.clone()).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["version", "committed (UTC)", "operation", "rows", "tags"]);
    for v in &vs {
        let names: Vec<&str> = tags
            .iter()
            .filter(|t| t.1 == v.version)
            .map(|t| t.0.as_str())
            .collect();
        t.add_row([
            v.version.to_string(),
            rfc3339(v.timestamp.0.max(0) as u64, v.timestamp.1.max(0) as u32),
            v.operation.clone(),
            v.rows.to_string(),
            names.join(", "),
        ]);
    }
    println!("{t}");
    Ok(())
}

/// `lancer tag ...`.
pub fn tag(s: &Session, action: TagAction, json: bool) -> CmdResult {
    match action {
        TagAction::Create {
            path,
            name,
            version,
        } => {
            let v = match version {
                Some(v) => v,
                None => s.open(&path)?.version(),
            };
            create_tag(&s.store(&path)?, &name, v, 0)?;
            report(
                json,
                serde_json::json!({ "created": name, "version": v }),
                || format!("tag {name} -> version {v}"),
            )
        }
        TagAction::List { path } => {
            let tags = list_tags(&s.store(&path)?)?;
            let v: Vec<serde_json::Value> = tags
                .iter()
                .map(|(n, v)| serde_json::json!({ "name": n, "version": v }))
                .collect();
            report(json, serde_json::Value::Array(v), || {
                tags.iter()
                    .map(|(n, v)| format!("{n}\t{v}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        TagAction::Delete { path, name } => {
            delete_tag(&s.store(&path)?, &name)?;
            report(json, serde_json::json!({ "deleted": name }), || {
                format!("deleted tag {name}")
            })
        }
    }
}

/// `lancer restore`.
pub fn restore(s: &Session, path: &Path, version: u64, json: bool) -> CmdResult {
    let ds = s.open(path)?.restore(version)?;
    let (new, rows) = (ds.version(), ds.count_rows());
    report(
        json,
        serde_json::json!({ "restored": version, "version": new, "rows": rows }),
        || format!("restored version {version} as version {new} ({rows} rows)"),
    )
}

/// Parses `30s`, `15m`, `12h`, `7d`.
pub fn parse_age(s: &str) -> Result<Duration, Box<dyn std::error::Error>> {
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("bad age {s:?}: expected a number and s/m/h/d, e.g. 7d"))?;
    let secs = match unit {
        "s" | "" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return Err(format!("bad age unit in {s:?}: use s, m, h or d").into()),
    };
    Ok(Duration::from_secs(secs))
}

/// `lancer cleanup`.
pub fn cleanup(s: &Session, path: &Path, older_than: &str, json: bool) -> CmdResult {
    let age = parse_age(older_than)?;
    let st = do_cleanup(&s.store(path)?, age)?;
    report(
        json,
        serde_json::json!({
            "versions_removed": st.versions_removed,
            "files_removed": st.files_removed(),
            "data_files_removed": st.data_files_removed,
            "deletion_files_removed": st.deletion_files_removed,
            "transaction_files_removed": st.transaction_files_removed,
            "index_files_removed": st.index_files_removed,
            "bytes_removed": st.bytes_removed,
        }),
        || {
            format!(
                "removed {} versions and {} files ({} bytes)",
                st.versions_removed,
                st.files_removed(),
                st.bytes_removed
            )
        },
    )
}

/// Batches read lazily from an input file.
pub(crate) type Batches = Box<dyn Iterator<Item = Result<RecordBatch, arrow_schema::ArrowError>>>;

/// A reader that advances a progress bar by the bytes it reads.
struct Counting<R> {
    inner: R,
    bar: indicatif::ProgressBar,
}

impl<R: std::io::Read> std::io::Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

impl<R: std::io::Seek> std::io::Seek for Counting<R> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        let at = self.inner.seek(pos)?;
        self.bar.set_position(at);
        Ok(at)
    }
}

/// Opens `input` for streaming: its schema, its batches (read as they are consumed) and
/// whether `bar` counts rows (Parquet, whose row count is known) rather than bytes —
/// the bar's length is set accordingly. The readers are the hardened ones of
/// [`lancer_cli::input`]: a damaged input ends in an error naming it.
pub(crate) fn read_input(
    input: &Path,
    bar: &indicatif::ProgressBar,
    like: Option<&arrow_schema::Schema>,
) -> Result<(SchemaRef, Batches, bool), Box<dyn std::error::Error>> {
    use lancer_cli::input::{open_like, open_parquet, Format};
    let format = Format::of(input)?;
    let f =
        std::fs::File::open(input).map_err(|e| format!("cannot open {}: {e}", input.display()))?;
    let name = input.display().to_string();
    let opened = if format == Format::Parquet {
        drop(f);
        let f = lancer_cli::input::MappedFile::open(input)
            .map_err(|e| format!("cannot open {}: {e}", input.display()))?;
        let opened = open_parquet(&name, f)?;
        bar.set_length(opened.rows.unwrap_or(0));
        opened
    } else {
        let len = f.metadata()?.len();
        bar.set_length(len);
        bar.set_position(0);
        let counted = Counting {
            inner: f,
            bar: bar.clone(),
        };
        open_like(&name, format, counted, len, like)?
    };
    let batches: Batches = Box::new(
        opened
            .batches
            .map(|b| b.map_err(|e| arrow_schema::ArrowError::ExternalError(Box::new(e)))),
    );
    Ok((opened.schema, batches, format == Format::Parquet))
}

/// `lancer import`.
pub fn import(
    s: &Session,
    input: &Path,
    dataset: &Path,
    mode: Mode,
    storage: &str,
    (max_rows_per_file, max_bytes): (usize, Option<u64>),
    json: bool,
) -> CmdResult {
    let storage = FileVersion::parse(storage)?;
    let params = WriteParams {
        storage,
        max_rows_per_file,
        max_bytes_per_file: max_bytes.unwrap_or(lancer::DEFAULT_MAX_BYTES_PER_FILE),
        ..Default::default()
    };
    // a location Lancer cannot write to is an error before anything is read
    let (store, existing) = write_target(s, dataset, mode)?;
    // Read and write in one stream: a progress bar (on a terminal) follows the input.
    let bar = indicatif::ProgressBar::new(0);
    // an append parses text inputs with the dataset's column types (typed inputs need
    // no open: the dataset is read once, by the append)
    let text = matches!(
        lancer_cli::input::Format::of(input),
        Ok(lancer_cli::input::Format::Csv | lancer_cli::input::Format::Jsonl)
    );
    let like = match (mode, existing) {
        (Mode::Append, Some(v)) if text => Some(s.open_version(dataset, v)?.schema()),
        _ => None,
    };
    let (schema, batches, by_rows) = read_input(input, &bar, like.as_deref())?;
    let style = if by_rows {
        "{spinner} importing {pos}/{len} rows [{bar:30}] {elapsed} (eta {eta})"
    } else {
        "{spinner} importing {bytes}/{total_bytes} [{bar:30}] {elapsed} (eta {eta})"
    };
    if let Ok(st) = indicatif::ProgressStyle::with_template(style) {
        bar.set_style(st.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    let rows = std::cell::Cell::new(0usize);
    let stream = batches.map(|b| {
        let b = b?;
        rows.set(rows.get() + b.num_rows());
        if by_rows {
            bar.inc(b.num_rows() as u64);
        }
        Ok(b)
    });
    let ds = write_into(s, store, existing, mode, schema, stream, &params)?;
    bar.finish_and_clear();
    let rows = rows.get();
    let (version, total) = (ds.version(), ds.count_rows());
    report(
        json,
        serde_json::json!({ "imported_rows": rows, "version": version, "rows": total }),
        || {
            format!(
                "imported {rows} rows into {} (version {version}, {total} rows in all)",
                dataset.display()
            )
        },
    )
}

/// The store of `dataset` and its latest version (None: no dataset yet); `--mode
/// create` over an existing dataset is refused before anything is read.
pub(super) fn write_target(
    s: &Session,
    dataset: &Path,
    mode: Mode,
) -> Result<(lancer::Store, Option<u64>), Box<dyn std::error::Error>> {
    let store = s.store(dataset)?;
    let existing = match lancer::versions::latest_version(&store) {
        Ok(v) => Some(v.version),
        Err(lancer::TableError::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    // (an append to nothing creates the dataset, as the reference does)
    if mode == Mode::Create && existing.is_some() {
        return Err(format!(
            "{} already exists: use --mode append or --mode overwrite",
            dataset.display()
        )
        .into());
    }
    Ok((store, existing))
}

/// Appends `stream` to version `existing` of `store` (`--mode append`), or creates /
/// overwrites the dataset there with it.
pub(super) fn write_into(
    s: &Session,
    store: lancer::Store,
    existing: Option<u64>,
    mode: Mode,
    schema: arrow_schema::SchemaRef,
    stream: impl IntoIterator<Item = Result<arrow_array::RecordBatch, lancer::TableError>>,
    params: &WriteParams,
) -> Result<Dataset, Box<dyn std::error::Error>> {
    let options = s.storage_options().clone();
    Ok(match (mode, existing) {
        (Mode::Append, Some(v)) => {
            Dataset::open_with(store, options, Some(v))?.append_stream(stream, params)?
        }
        _ => Dataset::write_stream_in(store, schema, stream, params)?,
    })
}

/// `lancer merge DATASET INPUT --on KEYS [--update --insert --delete-unmatched]`.
pub fn merge(
    s: &Session,
    dataset: &Path,
    input: &Path,
    opts: &lancer::write::MergeOptions,
    json: bool,
) -> CmdResult {
    let ds = s.open(dataset)?;
    let t = std::time::Instant::now();
    let bar = indicatif::ProgressBar::new(0);
    // text inputs parsed with the dataset's column types
    let (schema, batches, by_rows) = read_input(input, &bar, Some(&ds.schema()))?;
    let style = if by_rows {
        "{spinner} merging {pos}/{len} rows [{bar:30}] {elapsed} (eta {eta})"
    } else {
        "{spinner} merging {bytes}/{total_bytes} [{bar:30}] {elapsed} (eta {eta})"
    };
    if let Ok(st) = indicatif::ProgressStyle::with_template(style) {
        bar.set_style(st.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    let stream = batches.map(|b| {
        let b = b?;
        if by_rows {
            bar.inc(b.num_rows() as u64);
        }
        Ok(b)
    });
    let (after, stats) = lancer::write::merge_insert(&ds, opts, schema, stream)?;
    bar.finish_and_clear();
    report(
        json,
        serde_json::json!({
            "num_inserted_rows": stats.inserted,
            "num_updated_rows": stats.updated,
            "num_deleted_rows": stats.deleted,
            "indexes_used": stats.indexes,
            "fragments_scanned": stats.fragments_scanned,
            "version": after.version(),
            "rows": after.count_rows(),
            "seconds": t.elapsed().as_secs_f64(),
        }),
        || {
            format!(
                "inserted {}, updated {}, deleted {} rows: version {} ({} rows)",
                stats.inserted,
                stats.updated,
                stats.deleted,
                after.version(),
                after.count_rows()
            )
        },
    )
}

/// Output writers of `lancer export`, one batch at a time.
enum ExportWriter {
    Csv(arrow_csv::Writer<std::fs::File>),
    Json(arrow_json::LineDelimitedWriter<std::fs::File>),
    Ipc(arrow_ipc::writer::FileWriter<std::fs::File>),
    Parquet(Box<parquet::arrow::ArrowWriter<std::fs::File>>),
}

impl ExportWriter {
    fn create(
        output: &Path,
        schema: &arrow_schema::Schema,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let ext = output
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        if !matches!(
            ext.as_str(),
            "csv" | "jsonl" | "ndjson" | "json" | "arrow" | "ipc" | "feather" | "parquet" | "pq"
        ) {
            return Err(format!(
                "unknown output format {ext:?}: use .csv, .jsonl, .arrow or .parquet"
            )
            .into());
        }
        let f = std::fs::File::create(output)
            .map_err(|e| format!("cannot create {}: {e}", output.display()))?;
        Ok(match ext.as_str() {
            "csv" => Self::Csv(arrow_csv::WriterBuilder::new().with_header(true).build(f)),
            "arrow" | "ipc" | "feather" => {
                Self::Ipc(arrow_ipc::writer::FileWriter::try_new(f, schema)?)
            }
            "parquet" | "pq" => {
                let props = parquet::file::properties::WriterProperties::builder()
                    .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
                    .build();
                Self::Parquet(Box::new(parquet::arrow::ArrowWriter::try_new(
                    f,
                    Arc::new(schema.clone()),
                    Some(props),
                )?))
            }
            _ => Self::Json(arrow_json::LineDelimitedWriter::new(f)),
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> CmdResult {
        match self {
            Self::Csv(w) => w.write(batch)?,
            Self::Json(w) => w.write(batch)?,
            Self::Ipc(w) => w.write(batch)?,
            Self::Parquet(w) => w.write(batch)?,
        }
        Ok(())
    }

    fn finish(self) -> CmdResult {
        match self {
            Self::Csv(_) => {}
            Self::Json(mut w) => w.finish()?,
            Self::Ipc(mut w) => w.finish()?,
            Self::Parquet(w) => {
                w.close()?;
            }
        }
        Ok(())
    }
}

/// Rows per batch when exporting a data file.
const EXPORT_FILE_CHUNK: u64 = 64 * 1024;

/// `lancer export`: streams a dataset fragment by fragment (or a file in chunks), so
/// memory holds one piece at a time; a progress bar shows rows written on a terminal.
pub fn export(s: &Session, path: &Path, output: &Path, at: &VersionArgs, json: bool) -> CmdResult {
    let src = Source::open(s, path, at)?;
    let mut w = ExportWriter::create(output, &src.schema())?;
    let bar = indicatif::ProgressBar::new(src.num_rows());
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} rows {per_sec} {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut rows = 0u64;
    match &src {
        Source::Dataset(d) => {
            for frag in d.fragments() {
                let b = d.scan_fragment_batch(frag, None)?;
                w.write(&b)?;
                rows += b.num_rows() as u64;
                bar.set_position(rows);
            }
        }
        Source::File(r) => {
            let n = r.num_rows();
            let mut start = 0;
            while start < n {
                let end = (start + EXPORT_FILE_CHUNK).min(n);
                let b = r.read_range(start..end, None)?;
                w.write(&b)?;
                rows = end;
                bar.set_position(rows);
                start = end;
            }
        }
    }
    w.finish()?;
    bar.finish_and_clear();
    report(
        json,
        serde_json::json!({ "exported_rows": rows, "output": output.display().to_string() }),
        || format!("exported {rows} rows to {}", output.display()),
    )
}

/// `lancer verify`.
pub fn verify(s: &Session, path: &Path, data: bool, json: bool) -> CmdResult {
    let (problems, n) = lancer::inspect::dataset_problems(&s.store(path)?, data)?;
    report(
        json,
        serde_json::json!({ "ok": problems.is_empty(), "versions": n, "problems": problems }),
        || {
            if problems.is_empty() {
                let what = if data {
                    "every manifest, data file and deletion file checks out and every column reads"
                } else {
                    "every manifest, data file and deletion file checks out"
                };
                format!("ok: {n} versions, {what}")
            } else {
                problems.join("\n")
            }
        },
    )?;
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!("{} problem(s) found in {}", problems.len(), path.display()).into())
}

/// `lancer inspect DATASET`: the manifest as JSON or text.
pub fn inspect(
    s: &Session,
    path: &Path,
    row: Option<u64>,
    json: bool,
    at: &VersionArgs,
) -> CmdResult {
    let ds = super::source::open_dataset(s, path, at)?;
    let m = &ds.manifest().pb;
    let walk = row.map(|r| dataset_row_walk(&ds, r)).transpose()?;
    let frags: Vec<serde_json::Value> = m
        .fragments
        .iter()
        .map(|f| {
            serde_json::json!({
                "id": f.id,
                "physical_rows": f.physical_rows,
                "files": f.files.iter().map(|d| serde_json::json!({
                    "path": d.path, "fields": d.fields, "column_indices": d.column_indices,
                    "file_version": format!("{}.{}", d.file_major_version, d.file_minor_version),
                    "size": d.file_size_bytes,
                })).collect::<Vec<_>>(),
                "deletion_file": f.deletion_file.as_ref().map(|d| serde_json::json!({
                    "type": if d.file_type == 1 { "bitmap" } else { "arrow" },
                    "read_version": d.read_version, "id": d.id, "deleted_rows": d.num_deleted_rows,
                })),
            })
        })
        .collect();
    // registered bases by id (pylance keeps them in no particular order)
    let mut bases: Vec<_> = m.base_paths.iter().collect();
    bases.sort_by_key(|b| b.id);
    let v = serde_json::json!({
        "path": path.display().to_string(),
        "version": m.version,
        "rows": ds.count_rows(),
        "timestamp": m.timestamp.as_ref().map(|t| rfc3339(t.seconds.max(0) as u64, t.nanos.max(0) as u32)),
        "writer": m.writer_version.as_ref().map(|w| format!("{} {}", w.library, w.version)),
        "data_storage_version": m.data_format.as_ref().map(|f| f.version.clone()),
        "reader_feature_flags": m.reader_feature_flags,
        "writer_feature_flags": m.writer_feature_flags,
        "max_fragment_id": m.max_fragment_id,
        "transaction_file": m.transaction_file,
        "has_index_section": m.index_section.is_some(),
        "config": m.config,
        "schema": ds.schema().fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect::<Vec<_>>(),
        "fragments": frags,
        "base_paths": bases.iter().map(|b| serde_json::json!({
            "id": b.id, "name": b.name, "path": b.path, "is_dataset_root": b.is_dataset_root,
        })).collect::<Vec<_>>(),
        "row": walk,
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{}: Lance dataset, version {} of {}, {} rows, {} fragments, written by {}, data storage {}",
        path.display(),
        m.version,
        list_versions(ds.store())?.len(),
        ds.count_rows(),
        m.fragments.len(),
        v["writer"].as_str().unwrap_or("?"),
        v["data_storage_version"].as_str().unwrap_or("?")
    );
    println!("schema:");
    for f in ds.schema().fields() {
        println!("  {}: {}", f.name(), f.data_type());
    }
    if !bases.is_empty() {
        println!("base paths:");
        for b in &bases {
            println!(
                "  [{}] {}{}{}",
                b.id,
                b.path,
                b.name
                    .as_ref()
                    .map_or(String::new(), |n| format!(" (name {n:?})")),
                if b.is_dataset_root {
                    ", a dataset root"
                } else {
                    ""
                }
            );
        }
    }
    println!("fragments:");
    for f in &m.fragments {
        let del = f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows);
        println!("  [{}] {} rows ({} deleted)", f.id, f.physical_rows, del);
        for d in &f.files {
            println!(
                "      data/{} ({} bytes, fields {:?})",
                d.path, d.file_size_bytes, d.fields
            );
        }
    }
    if let (Some(r), Some(w)) = (row, &walk) {
        let id = w["row_id"]
            .as_u64()
            .map_or(String::new(), |i| format!(", stable row id {i}"));
        println!(
            "row {r}: fragment {}, row {} of the fragment (address {}{id}; deleted rows are skipped when counting)",
            w["fragment"], w["row_in_fragment"], w["address"]
        );
        for f in w["files"].as_array().map(|a| a.as_slice()).unwrap_or(&[]) {
            println!("  file {}:", f["path"].as_str().unwrap_or("?"));
            let fields = f["fields"].as_array().cloned().unwrap_or_default();
            print!("{}", super::inspect::walk_text(&fields, 4));
        }
    }
    Ok(())
}

/// Follows version offset `r` to its fragment, its physical row there, and through each
/// of the fragment's data files to the pages and byte ranges that hold it.
fn dataset_row_walk(ds: &Dataset, r: u64) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    let addr = ds
        .row_addresses(&[r])?
        .first()
        .copied()
        .ok_or("no address")?;
    let (fid, prow) = (addr >> 32, addr & 0xFFFF_FFFF);
    let frag = ds
        .fragments()
        .iter()
        .find(|f| f.id == fid)
        .ok_or_else(|| format!("fragment {fid} is not in this version"))?;
    let row_id = ds.row_ids(&[r]).ok().and_then(|v| v.first().copied());
    let mut files = Vec::new();
    for d in &frag.files {
        let (store, rel) = ds.data_file_location(d)?;
        let (reader, io) = super::open_traced_in(&store, &rel)?;
        let walk = super::inspect::row_walk(&reader, &io, prow)?;
        files.push(serde_json::json!({ "path": format!("data/{}", d.path), "fields": walk }));
    }
    Ok(serde_json::json!({
        "row": r,
        "address": addr,
        "fragment": fid,
        "row_in_fragment": prow,
        "row_id": row_id,
        "files": files,
    }))
}

/// The full-text half of a hybrid `lancer search --text`.
pub struct HybridText {
    /// The match query.
    pub text: String,
    /// Its column (None: the only indexed one).
    pub column: Option<String>,
    /// The fusion's rank constant.
    pub rrf_k: f32,
}

/// `lancer search`.
#[allow(clippy::too_many_arguments)]
pub fn search(
    s: &Session,
    path: &Path,
    column: &str,
    query: Vec<f32>,
    query_row: Option<u64>,
    k: usize,
    metric: Option<&str>,
    ann: &lancer::search::AnnParams,
    columns: &[String],
    filtering: lancer::search::Filtering<'_>,
    hybrid: Option<HybridText>,
    format: crate::args::Format,
    at: &VersionArgs,
) -> CmdResult {
    use arrow_array::cast::AsArray;
    let ds = super::source::open_dataset(s, path, at)?;
    let metric = match metric {
        Some(m) => lancer::Metric::parse(m)?,
        None if ann.use_index => {
            lancer::search::column_index_metric(&ds, column)?.unwrap_or(lancer::Metric::L2)
        }
        None => lancer::Metric::L2,
    };
    let query = match query_row {
        Some(r) => {
            let b = ds.take(&[r], Some(&[column]))?;
            let fsl = b
                .column(0)
                .as_fixed_size_list_opt()
                .ok_or("the column is not a vector column")?;
            let v = arrow_cast::cast(fsl.value(0).as_ref(), &arrow_schema::DataType::Float32)?;
            v.as_primitive::<arrow_array::types::Float32Type>()
                .values()
                .to_vec()
        }
        None if query.is_empty() => return Err("give --query v1,v2,... or --query-row N".into()),
        None => query,
    };
    let cols = shown_columns(&ds, column, columns);
    let names: Vec<&str> = cols.iter().map(|s| s.as_str()).collect();
    let req = lancer::search::Nearest {
        column,
        query,
        k,
        metric,
    };
    let t = std::time::Instant::now();
    if let Some(h) = hybrid {
        use lancer::search::Filtering;
        let q = lancer::FtsQuery::from_text(&h.text, h.column.as_deref());
        let (filter, prefilter) = match filtering {
            Filtering::None => (None, true),
            Filtering::Pre(f) => (Some(f.to_string()), true),
            Filtering::Post(f) => (Some(f.to_string()), false),
        };
        let opts = lancer::search::HybridOptions {
            limit: k,
            filter,
            prefilter,
            rrf_k: h.rrf_k,
            columns: Some(cols.clone()),
            ann: ann.clone(),
            fast_search: ann.fast_search,
        };
        let rows = lancer::search::hybrid_search(&ds, &req, &q, &opts)?;
        eprintln!(
            "{} rows (vector + full text, fused) of {} in {:?}",
            rows.num_rows(),
            ds.count_rows(),
            t.elapsed()
        );
        return crate::output::print_batch(&rows, format);
    }
    let hits = lancer::search::nearest(
        &ds,
        &req,
        &lancer::search::SearchOptions {
            filtering,
            columns: Some(&names),
            ann: ann.clone(),
            ..Default::default()
        },
    )?;
    eprintln!(
        "{} nearest of {} rows in {:?}",
        hits.num_rows(),
        ds.count_rows(),
        t.elapsed()
    );
    crate::output::print_batch(&hits, format)
}

/// The columns a search prints besides `_distance`: those asked for, else every one
/// but the vector column.
fn shown_columns(ds: &lancer::Dataset, column: &str, columns: &[String]) -> Vec<String> {
    if !columns.is_empty() {
        return columns.to_vec();
    }
    ds.schema()
        .fields()
        .iter()
        .filter(|f| f.name() != column)
        .map(|f| f.name().clone())
        .collect()
}

/// `lancer search --queries-file`: every query's `k` nearest rows, `query_index`
/// first (pylance 14's batched search).
#[allow(clippy::too_many_arguments)]
pub fn search_batch(
    s: &Session,
    path: &Path,
    column: &str,
    queries: &[Vec<f32>],
    k: usize,
    metric: Option<&str>,
    ann: &lancer::search::AnnParams,
    columns: &[String],
    filtering: lancer::search::Filtering<'_>,
    format: crate::args::Format,
    at: &VersionArgs,
) -> CmdResult {
    let ds = super::source::open_dataset(s, path, at)?;
    let metric = match metric {
        Some(m) => lancer::Metric::parse(m)?,
        None if ann.use_index => {
            lancer::search::column_index_metric(&ds, column)?.unwrap_or(lancer::Metric::L2)
        }
        None => lancer::Metric::L2,
    };
    let cols = shown_columns(&ds, column, columns);
    let names: Vec<&str> = cols.iter().map(|s| s.as_str()).collect();
    let req = lancer::search::BatchNearest {
        column,
        queries: queries.to_vec(),
        k,
        metric,
    };
    let t = std::time::Instant::now();
    let meta = lancer::search::RowMeta::default();
    let hits = lancer::search::nearest_batch(&ds, &req, filtering, Some(&names), ann, meta)?;
    eprintln!(
        "{} rows for {} queries of {} rows in {:?}",
        hits.num_rows(),
        queries.len(),
        ds.count_rows(),
        t.elapsed()
    );
    crate::output::print_batch(&hits, format)
}

/// `lancer delete --where`: deletes matching rows as a new version.
pub fn delete(s: &Session, path: &Path, predicate: &str, json: bool) -> CmdResult {
    use lancer::DatasetExt;
    let ds = s.open(path)?;
    let before = ds.count_rows();
    let after = ds.delete(predicate)?;
    let deleted = before - after.count_rows();
    report(
        json,
        serde_json::json!({
            "deleted_rows": deleted,
            "version": after.version(),
            "rows": after.count_rows(),
        }),
        || {
            if after.version() == ds.version() {
                format!(
                    "no rows match {predicate:?}; version {} unchanged",
                    ds.version()
                )
            } else {
                format!(
                    "deleted {deleted} rows: version {} has {} rows",
                    after.version(),
                    after.count_rows()
                )
            }
        },
    )
}
