//! Parquet decoded on several threads for `lancer import`: the top-level columns are
//! split into groups of about equal decoded size, each group is decoded by its own
//! reader on its own thread, and the groups' batches (same row boundaries: every reader
//! cuts at the same batch size) are put back together in schema order. Each decoder
//! call runs inside [`lancer::internal::contain`], so a panic of the parquet crate on a
//! malformed page ends the import with an error, as on one thread. Callers validate the
//! file's footer and page headers first (see `input`).

use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;

/// Bytes (decoded) a batch aims at: narrow rows come in long batches (fewer per-batch
/// costs), wide rows in short ones (a batch never makes a page many times the writer's
/// page size, and memory stays bounded).
const BATCH_BYTES: u64 = 2 << 20;
/// Rows per batch at least and at most.
const BATCH_ROWS: (usize, usize) = (8192, 65_536);

/// Rows per batch for rows of `row_bytes` decoded bytes on average.
pub fn batch_rows(row_bytes: u64) -> usize {
    let rows = BATCH_BYTES / row_bytes.max(1);
    (rows as usize).clamp(BATCH_ROWS.0, BATCH_ROWS.1)
}
/// Batches each group decodes ahead.
const AHEAD: usize = 2;

type Item = Result<RecordBatch, ArrowError>;

/// One group of columns: where its columns go in the full batch, and its batches.
struct Group {
    positions: Vec<usize>,
    rx: Receiver<Item>,
}

/// Batches of a Parquet file decoded by several threads.
pub struct ParallelParquet {
    schema: SchemaRef,
    groups: Vec<Group>,
    done: bool,
}

/// Splits the `n_roots` top-level columns into at most `threads` groups of about equal
/// decoded size (`size[root]`), each group in schema order.
pub fn groups(size: &[u64], threads: usize) -> Vec<Vec<usize>> {
    let k = threads.clamp(1, size.len().max(1));
    let mut order: Vec<usize> = (0..size.len()).collect();
    order.sort_by(|a, b| size[*b].cmp(&size[*a]).then(a.cmp(b)));
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); k];
    let mut load = vec![0u64; k];
    for r in order {
        let g = (0..k).min_by_key(|&g| (load[g], g)).unwrap_or(0);
        load[g] += size[r].max(1);
        out[g].push(r);
    }
    for g in &mut out {
        g.sort_unstable();
    }
    out.retain(|g| !g.is_empty());
    out
}

/// Starts one decoding thread per group of `roots` over the file behind `open`.
pub fn start<R: ChunkReader + 'static>(
    schema: SchemaRef,
    roots: Vec<Vec<usize>>,
    batch_rows: usize,
    open: impl Fn() -> parquet::errors::Result<ParquetRecordBatchReaderBuilder<R>>,
) -> Result<ParallelParquet, ArrowError> {
    let mut groups = Vec::with_capacity(roots.len());
    for rs in roots {
        let builder = open()?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), rs.iter().copied());
        let reader = builder
            .with_batch_size(batch_rows)
            .with_projection(mask)
            .build()?;
        let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD);
        std::thread::Builder::new()
            .name("lancer-parquet".into())
            .spawn(move || feed(reader, &tx))
            .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
        groups.push(Group { positions: rs, rx });
    }
    Ok(ParallelParquet {
        schema,
        groups,
        done: false,
    })
}

fn feed(mut reader: impl Iterator<Item = Item>, tx: &SyncSender<Item>) {
    loop {
        let item = match lancer::internal::contain::contain(|| reader.next()) {
            Ok(None) => return,
            Ok(Some(b)) => b,
            Err(msg) => Err(ArrowError::ParquetError(format!(
                "the reader failed on malformed data: {msg}"
            ))),
        };
        let failed = item.is_err();
        if tx.send(item).is_err() || failed {
            return;
        }
    }
}

impl Iterator for ParallelParquet {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
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
        let Some(columns) = columns.into_iter().collect::<Option<Vec<ArrayRef>>>() else {
            self.done = true;
            return Some(Err(ArrowError::ParquetError(
                "a column was not decoded".into(),
            )));
        };
        Some(RecordBatch::try_new(Arc::clone(&self.schema), columns))
    }
}

#[cfg(test)]
mod tests {
    use super::groups;

    #[test]
    fn groups_balance_sizes_and_keep_schema_order() {
        assert_eq!(groups(&[10, 1, 1, 8], 2), vec![vec![0], vec![1, 2, 3]]);
        assert_eq!(groups(&[5, 5, 5], 1), vec![vec![0, 1, 2]]);
        assert_eq!(groups(&[], 4), Vec::<Vec<usize>>::new());
        assert_eq!(groups(&[1, 1], 8), vec![vec![0], vec![1]]);
    }
}
