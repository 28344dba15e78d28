//! Scan options of pylance's scanner beyond columns, filter and limit:
//! `fast_search` (a filter answered by a scalar index reads only the fragments the
//! index covers: rows appended since are skipped, as the reference does),
//! `include_deleted_rows` (deleted rows are returned too, their `_rowid` null; it needs
//! `with_row_id`) and `strict_batch_size` (every batch but the last has exactly
//! `batch_size` rows). Searches (vector, full text) take `fast_search` through their
//! own parameters.

use std::ops::Range;

use arrow_array::{RecordBatch, UInt64Array};
use lancer_table::dataset::KeptRuns;

use super::{ScanStream, Scanner};
use crate::{Error, Result};

/// The options (all off by default).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ScanOptions {
    pub(crate) fast_search: bool,
    pub(crate) include_deleted_rows: bool,
    pub(crate) strict_batch_size: bool,
}

impl ScanOptions {
    /// Refuses combinations the reference refuses.
    pub(crate) fn check(&self, with_row_id: bool) -> Result<()> {
        if self.include_deleted_rows && !with_row_id {
            return Err(Error::InvalidArgument {
                what: "include_deleted_rows needs with_row_id (a deleted row is told by its null _rowid)"
                    .into(),
            });
        }
        Ok(())
    }
}

impl Scanner {
    /// A filter answered by a scalar index reads only the fragments the index covers
    /// (the reference's `fast_search`: faster, but rows appended since the index was
    /// built are left out). A filter no index answers reads everything.
    pub fn fast_search(mut self, yes: bool) -> Self {
        self.opts.fast_search = yes;
        self
    }

    /// Deleted rows are returned too, with a null `_rowid` (the reference's
    /// `include_deleted_rows`; needs [`Scanner::with_row_id`]). Filters, offsets and
    /// limits count them as rows.
    pub fn include_deleted_rows(mut self, yes: bool) -> Self {
        self.opts.include_deleted_rows = yes;
        self
    }

    /// Every batch but the last has exactly the batch size's rows (the reference's
    /// `strict_batch_size`; by default batches may be smaller at fragment ends).
    pub fn strict_batch_size(mut self, yes: bool) -> Self {
        self.opts.strict_batch_size = yes;
        self
    }
}

/// `ids` (of the physical rows `runs`) with the rows `kept` leaves out made null.
pub(crate) fn null_deleted(
    ids: UInt64Array,
    runs: &[Range<u64>],
    kept: &KeptRuns,
) -> Result<UInt64Array> {
    let live = kept.runs();
    let mut valid = arrow_buffer::BooleanBufferBuilder::new(ids.len());
    let mut at = 0usize;
    // (the runs, like the kept runs, ascend: one pass over both)
    for r in runs {
        for row in r.clone() {
            // the kept runs are sorted: the first that ends after `row`
            while at < live.len() && live[at].end <= row {
                at += 1;
            }
            valid.append(at < live.len() && live[at].start <= row);
        }
    }
    let nulls = arrow_buffer::NullBuffer::new(valid.finish());
    Ok(UInt64Array::try_new(ids.values().clone(), Some(nulls))?)
}

/// Batches regrouped to exactly `size` rows (the last may be shorter).
pub(crate) struct Exact {
    inner: Box<ScanStream>,
    size: usize,
    held: Vec<RecordBatch>,
    rows: usize,
    done: bool,
}

impl Exact {
    pub(crate) fn new(inner: ScanStream, size: usize) -> Self {
        Self {
            inner: Box::new(inner),
            size: size.max(1),
            held: Vec::new(),
            rows: 0,
            done: false,
        }
    }

    pub(crate) fn schema(&self) -> arrow_schema::SchemaRef {
        self.inner.schema()
    }

    /// The first `n` held rows as one batch; the rest stay held.
    fn cut(&mut self, n: usize) -> Result<RecordBatch> {
        let all = lancer_table::dataset::concat_batches(&self.schema(), &self.held)?;
        self.held.clear();
        let n = n.min(all.num_rows());
        if n < all.num_rows() {
            self.held.push(all.slice(n, all.num_rows() - n));
        }
        self.rows = all.num_rows() - n;
        Ok(all.slice(0, n))
    }
}

impl Iterator for Exact {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.rows >= self.size {
                return Some(self.cut(self.size));
            }
            if self.done {
                return (self.rows > 0).then(|| self.cut(self.rows));
            }
            match self.inner.next() {
                Some(Ok(b)) if b.num_rows() > 0 => {
                    self.rows += b.num_rows();
                    self.held.push(b);
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    self.done = true;
                    self.held.clear();
                    self.rows = 0;
                    return Some(Err(e));
                }
                None => self.done = true,
            }
        }
    }
}
