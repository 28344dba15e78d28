//! Reading a Parquet file for `lancer import`, decoded on several threads: the
//! top-level columns are split into groups of about equal decoded size, each group is
//! decoded by its own reader on its own thread, and the groups' batches (which have the
//! same row boundaries: every reader cuts at the same batch size) are put back
//! together in schema order.

use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, SchemaRef};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

/// Rows per batch.
const BATCH_ROWS: usize = 8192;
/// Batches each group decodes ahead.
const AHEAD: usize = 2;

/// One group of columns: where its columns go in the full batch, and its batches.
struct Group {
    positions: Vec<usize>,
    rx: Receiver<Result<RecordBatch, ArrowError>>,
}

/// Batches of a Parquet file decoded by `groups` threads.
pub struct ParallelParquet {
    schema: SchemaRef,
    groups: Vec<Group>,
    done: bool,
}

/// Opens `path`: its Arrow schema, its row count and its batches.
pub fn open(
    path: &Path,
    threads: usize,
) -> Result<(SchemaRef, u64, ParallelParquet), Box<dyn std::error::Error>> {
    let open =
        || std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()));
    let meta = ArrowReaderMetadata::load(&open()?, Default::default())
        .map_err(|e| format!("{}: not a readable Parquet file: {e}", path.display()))?;
    let schema = meta.schema().clone();
    let pmeta = meta.metadata().clone();
    let rows = u64::try_from(pmeta.file_metadata().num_rows()).unwrap_or(0);
    let descr = pmeta.file_metadata().schema_descr_ptr();
    // Decoded bytes of each top-level column (the decoding work, roughly).
    let n_roots = schema.fields().len();
    let mut size = vec![0u64; n_roots];
    for rg in pmeta.row_groups() {
        for (leaf, c) in rg.columns().iter().enumerate() {
            let root = descr.get_column_root_idx(leaf);
            if let Some(s) = size.get_mut(root) {
                *s += u64::try_from(c.uncompressed_size()).unwrap_or(0);
            }
        }
    }
    let k = threads.clamp(1, n_roots.max(1));
    let mut order: Vec<usize> = (0..n_roots).collect();
    order.sort_by(|a, b| size[*b].cmp(&size[*a]).then(a.cmp(b)));
    let mut roots: Vec<Vec<usize>> = vec![Vec::new(); k];
    let mut load = vec![0u64; k];
    for r in order {
        let g = (0..k).min_by_key(|&g| (load[g], g)).unwrap_or(0);
        load[g] += size[r].max(1);
        roots[g].push(r);
    }
    let mut groups = Vec::with_capacity(k);
    for mut rs in roots.into_iter().filter(|r| !r.is_empty()) {
        rs.sort_unstable();
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(open()?, meta.clone())
            .with_batch_size(BATCH_ROWS)
            .with_projection(ProjectionMask::roots(&descr, rs.iter().copied()));
        let reader = builder.build()?;
        let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD);
        std::thread::Builder::new()
            .name("lancer-parquet".into())
            .spawn(move || feed(reader, &tx))?;
        groups.push(Group { positions: rs, rx });
    }
    Ok((
        schema.clone(),
        rows,
        ParallelParquet {
            schema,
            groups,
            done: false,
        },
    ))
}

fn feed(
    reader: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    tx: &SyncSender<Result<RecordBatch, ArrowError>>,
) {
    for b in reader {
        let failed = b.is_err();
        if tx.send(b).is_err() || failed {
            return;
        }
    }
}

impl Iterator for ParallelParquet {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.groups.is_empty() {
            return None;
        }
        let mut columns: Vec<Option<ArrayRef>> = vec![None; self.schema.fields().len()];
        let mut ended = 0;
        let mut rows = None;
        for g in &self.groups {
            match g.rx.recv() {
                Err(_) => ended += 1,
                Ok(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(Ok(b)) => {
                    if *rows.get_or_insert(b.num_rows()) != b.num_rows() {
                        self.done = true;
                        return Some(Err(ArrowError::ParquetError(
                            "column groups decoded batches of different sizes".into(),
                        )));
                    }
                    for (p, c) in g.positions.iter().zip(b.columns()) {
                        if let Some(slot) = columns.get_mut(*p) {
                            *slot = Some(c.clone());
                        }
                    }
                }
            }
        }
        if ended > 0 {
            self.done = true;
            if ended == self.groups.len() {
                return None;
            }
            return Some(Err(ArrowError::ParquetError(
                "column groups ended at different rows".into(),
            )));
        }
        let columns: Option<Vec<ArrayRef>> = columns.into_iter().collect();
        let Some(columns) = columns else {
            self.done = true;
            return Some(Err(ArrowError::ParquetError(
                "a column was not decoded".into(),
            )));
        };
        Some(RecordBatch::try_new(Arc::clone(&self.schema), columns))
    }
}
