//! Building INVERTED (full-text) indexes in pylance's format
//! (docs/fts-index-format.md §13): the string column is scanned in row order with row
//! addresses (stable row ids where the dataset has them), tokenized with the index's
//! analyzer into one partition (`lancer_index::inverted::build`) and committed as a
//! `CreateIndex`; `optimize` adds the fragments appended since as a delta segment with
//! the same analyzer (pylance's `optimize_indices(num_indices_to_merge=0)` form).

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use lancer_index::inverted::build::{ChunkTokenizer, InvertedBuilder, TokenizedChunk, FORMAT};
use lancer_index::inverted::segment::{InvertedSegment, INVERTED_DETAILS_URL};
use lancer_index::inverted::tokenizer::AnalyzerParams;
use lancer_table::pb;

use lancer_index::progress::{Progress, Stage};

use crate::scan::{DatasetExt, ROW_ADDRESS, ROW_ID};
use crate::{Dataset, Error, Result};

/// How to build a full-text index.
#[derive(Clone, Debug)]
pub struct FtsIndexOptions {
    /// Index name (default `<column>_idx`).
    pub name: Option<String>,
    /// Replace an index of the same name.
    pub replace: bool,
    /// The analyzer (pylance 14's defaults: simple tokenizer, English, lower case,
    /// stemming, stop words, ASCII folding, tokens under 40 bytes; no positions).
    pub params: AnalyzerParams,
}

impl Default for FtsIndexOptions {
    fn default() -> Self {
        Self {
            name: None,
            replace: false,
            params: AnalyzerParams::defaults(),
        }
    }
}

fn invalid(what: impl Into<String>) -> Error {
    Error::InvalidArgument { what: what.into() }
}

/// Builds a full-text index on the string column `column` and commits it, telling
/// `progress` (when given) the stages `load_data`, `tokenize_docs`
/// (rows), `copy_partitions` and `write_metadata` (see `lancer_index::progress`).
pub fn create_fts_index(
    ds: &Dataset,
    column: &str,
    opts: &FtsIndexOptions,
    progress: Option<&Progress>,
) -> Result<Dataset> {
    let field_id = crate::catalog::indexable_field(ds, column, "to index")?;
    let params = column_params(ds, column, &opts.params)?;
    let name = opts.name.clone().unwrap_or_else(|| format!("{column}_idx"));
    let existing = crate::index::vector::replaced_segments(ds, &name, opts.replace)?;
    let all: Vec<u64> = ds.fragments().iter().map(|f| f.id).collect();
    let files = build(ds, column, &all, params, progress)?;
    crate::index::scalar::commit(
        ds,
        field_id,
        name,
        INVERTED_DETAILS_URL,
        files.files,
        files.details,
        FORMAT,
        &all,
        existing,
    )
}

/// The analyzer settings an index of `column` is built with: `params`, on a JSON
/// column with the JSON tokenizer (`path,type,value` triples, as pylance 14 builds
/// it). Full-text indexes are built on string and JSON columns.
pub(crate) fn column_params(
    ds: &Dataset,
    column: &str,
    params: &AnalyzerParams,
) -> Result<AnalyzerParams> {
    let mut params = params.clone();
    if check_column(ds, column)? {
        params.lance_tokenizer = "json".into();
        if params.with_position {
            return Err(invalid(format!(
                "column {column:?} is a JSON column: its full-text index is built without \
                 positions here (with_position=False); phrase queries do not apply to \
                 path,type,value triples"
            )));
        }
    }
    Ok(params)
}

/// Full-text indexes are built on string columns and JSON columns (true for these).
pub(crate) fn check_column(ds: &Dataset, column: &str) -> Result<bool> {
    let field = crate::catalog::arrow_field_at(ds, column);
    match field
        .as_ref()
        .map(|f| f.data_type().clone())
        .ok_or_else(|| format!("no column {column:?} to index"))
    {
        Ok(DataType::Utf8 | DataType::LargeUtf8) => Ok(false),
        // a list of strings: each row's items are one document (as the reference)
        Ok(DataType::List(item) | DataType::LargeList(item))
            if matches!(item.data_type(), DataType::Utf8 | DataType::LargeUtf8) =>
        {
            Ok(false)
        }
        Ok(DataType::LargeBinary)
            if field
                .as_ref()
                .is_some_and(lancer_format::json::is_jsonb_field) =>
        {
            Ok(true)
        }
        Ok(other) => Err(invalid(format!(
            "column {column:?} is {other}: full-text indexes are built on string columns and \
             lists of strings"
        ))),
        Err(e) => Err(invalid(e)),
    }
}

/// Tokenizes the rows of `fragments` into one segment: the scan's batches are
/// tokenized on every core (each into a chunk with its own token ids) and merged into
/// the builder in row order.
pub(crate) fn build(
    ds: &Dataset,
    column: &str,
    fragments: &[u64],
    params: AnalyzerParams,
    progress: Option<&Progress>,
) -> Result<lancer_index::inverted::build::BuiltInverted> {
    build_partition(ds, column, fragments, params, progress, 0, false)
}

/// [`build`], its rows written as partition `id` (`staged`: with its own
/// `part_<id>_metadata.lance`, pylance 14's fragment-level layout).
pub(crate) fn build_partition(
    ds: &Dataset,
    column: &str,
    fragments: &[u64],
    params: AnalyzerParams,
    progress: Option<&Progress>,
    id: u64,
    staged: bool,
) -> Result<lancer_index::inverted::build::BuiltInverted> {
    use std::sync::mpsc::{sync_channel, Receiver};
    use std::sync::Mutex;
    let mut params = params;
    params.models = lancer_index::inverted::tokenizer::LanguageModels::of(ds.store().context());
    let builder = InvertedBuilder::new(params)?;
    let stable = ds.uses_stable_row_ids();
    let mut order = fragments.to_vec();
    order.sort_unstable();
    Stage::start(progress, "load_data", "rows", None).complete();
    let mut tokenized = Stage::start(progress, "tokenize_docs", "rows", None);
    let builder = if order.is_empty() {
        builder
    } else {
        let mut scan = ds.scan().columns(&[column]).fragments(&order);
        scan = if stable {
            scan.with_row_id(true)
        } else {
            scan.with_row_address(true)
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8);
        let (batch_tx, batch_rx) = sync_channel::<(usize, RecordBatch)>(threads * 2);
        let batch_rx: Mutex<Receiver<(usize, RecordBatch)>> = Mutex::new(batch_rx);
        let (chunk_tx, chunk_rx) = sync_channel::<(usize, Result<TokenizedChunk>)>(threads * 2);
        std::thread::scope(|s| -> Result<InvertedBuilder> {
            for _ in 0..threads {
                let mut tok = builder.chunk_tokenizer();
                let (rx, tx) = (&batch_rx, chunk_tx.clone());
                s.spawn(move || loop {
                    let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((seq, batch)) = next else { return };
                    let chunk = tokenize(&mut tok, &batch, stable).map(|()| tok.finish());
                    if tx.send((seq, chunk)).is_err() {
                        return;
                    }
                });
            }
            drop(chunk_tx);
            let merger = s.spawn(move || -> Result<InvertedBuilder> {
                let mut builder = builder;
                let mut waiting = std::collections::BTreeMap::new();
                let mut next = 0usize;
                for (seq, chunk) in chunk_rx {
                    waiting.insert(seq, chunk?);
                    while let Some(c) = waiting.remove(&next) {
                        builder.push_chunk(c)?;
                        next += 1;
                    }
                }
                Ok(builder)
            });
            let mut fed = Ok(());
            for (seq, batch) in scan.stream()?.enumerate() {
                match batch {
                    // a closed channel: a worker or the merger failed (reported below)
                    Ok(b) => {
                        let rows = b.num_rows() as u64;
                        if batch_tx.send((seq, b)).is_err() {
                            break;
                        }
                        tokenized.advance(rows);
                    }
                    Err(e) => {
                        fed = Err(e);
                        break;
                    }
                }
            }
            drop(batch_tx);
            let merged = merger
                .join()
                .map_err(|_| invalid("the index builder's merge thread panicked"))?;
            fed?;
            merged
        })?
    };
    tokenized.complete();
    let mut copy = Stage::start(progress, "copy_partitions", "partitions", Some(1));
    let built =
        builder.finish_partition(crate::index::vector::index_file_version(ds), id, staged)?;
    copy.to(1);
    copy.complete();
    let mut meta = Stage::start(progress, "write_metadata", "files", Some(1));
    meta.to(1);
    meta.complete();
    Ok(built)
}

/// Tokenizes a scan batch (the text column, then row ids) into `tok`'s chunk.
fn tokenize(tok: &mut ChunkTokenizer, batch: &RecordBatch, stable: bool) -> Result<()> {
    let id_col = if stable { ROW_ID } else { ROW_ADDRESS };
    let ids = batch
        .column_by_name(id_col)
        .and_then(|c| c.as_primitive_opt::<arrow_array::types::UInt64Type>())
        .ok_or_else(|| invalid("row ids missing from the index scan"))?;
    let col = batch.column(0);
    if let Some((offsets, items)) = list_parts(col.as_ref()) {
        let large = matches!(items.data_type(), DataType::LargeUtf8);
        let mut parts: Vec<&str> = Vec::new();
        for i in 0..batch.num_rows() {
            if col.is_null(i) {
                continue;
            }
            parts.clear();
            for j in offsets[i]..offsets[i + 1] {
                if items.is_null(j) {
                    continue;
                }
                parts.push(if large {
                    items.as_string::<i64>().value(j)
                } else {
                    items.as_string::<i32>().value(j)
                });
            }
            tok.push_parts(ids.value(i), &parts);
        }
        return Ok(());
    }
    let large = matches!(col.data_type(), DataType::LargeUtf8);
    for i in 0..batch.num_rows() {
        if col.is_null(i) {
            continue;
        }
        let text = if large {
            col.as_string::<i64>().value(i)
        } else {
            col.as_string::<i32>().value(i)
        };
        tok.push(ids.value(i), text);
    }
    Ok(())
}

/// A list column's row bounds (into its items) and its items; None for a non-list.
fn list_parts(col: &dyn Array) -> Option<(Vec<usize>, ArrayRef)> {
    if let Some(l) = col.as_list_opt::<i32>() {
        let o = l.value_offsets().iter().map(|&x| x as usize).collect();
        return Some((o, l.values().clone()));
    }
    let l = col.as_list_opt::<i64>()?;
    let o = l.value_offsets().iter().map(|&x| x as usize).collect();
    Some((o, l.values().clone()))
}

/// Indexes the fragments `new` as one segment of the index `name` with the analyzer of
/// its segment `first`, replacing the segments `merged` (whose fragments `new` holds).
pub(crate) fn optimize(
    ds: &Dataset,
    name: &str,
    first: &pb::IndexMetadata,
    column: &str,
    new: &[u64],
    merged: Vec<pb::IndexMetadata>,
) -> Result<Dataset> {
    let seg = InvertedSegment::open(ds, first)?.ok_or_else(|| {
        invalid(format!(
            "index {name:?} is of a format Lancer does not read"
        ))
    })?;
    let field_id = seg.field_id;
    let files = build(ds, column, new, seg.params.clone(), None)?;
    crate::index::scalar::commit(
        ds,
        field_id,
        name.to_string(),
        INVERTED_DETAILS_URL,
        files.files,
        files.details,
        FORMAT,
        new,
        merged,
    )
}
