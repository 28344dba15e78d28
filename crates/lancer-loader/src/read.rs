//! Reading an epoch: the rows [`crate::split`] gives this rank's worker, in blocks,
//! shuffled deterministically, as Arrow record batches; resumable from a [`State`].
//!
//! The worker's rows form one sequence, cut into blocks of `block_rows` rows (the
//! shuffle buffer's size, or the batch size without a buffer). A block is read in one
//! go — for each shard run it covers, the fragment's surviving rows mapped to physical
//! runs through its deletion file, then `Dataset::read_runs` — filtered, its rows
//! permuted with a seed drawn from `(seed, epoch, rank, worker, block)`, and handed
//! out `batch_size` rows at a time. So the memory a shuffle holds is one block (plus
//! the one read ahead), and a position inside an epoch is `(block, offset)`: resuming
//! reads only the block it stopped in, and gives exactly the rows the uninterrupted
//! run would have given next. In global-random mode a block is `batch_size` positions
//! of a bijective permutation of all rows (no table held), read by takes.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_schema::Schema;
use lancer::{Dataset, StorageOptions};
use serde::{Deserialize, Serialize};

use crate::plan::Plan;
use crate::scatter::{self, Scatter};
use crate::split::{self, Part, Tail};
use crate::{rng, LoaderError, Result};

/// How rows are ordered within an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shuffle {
    /// The plan's shard order, rows in order.
    None,
    /// Shards in an order drawn from `(seed, epoch)`, rows permuted within blocks of
    /// `buffer` rows (a bounded shuffle buffer).
    Buffer {
        /// Rows the buffer holds.
        buffer: usize,
    },
    /// Every row of the epoch in a random order (reads by takes: slower, uniform).
    Global,
}

/// What a loader reads and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// This process's rank (0-based).
    pub rank: u64,
    /// Number of ranks.
    pub world_size: u64,
    /// This reader's worker within the rank (0-based).
    pub worker: u64,
    /// Workers per rank (at least 1).
    pub num_workers: u64,
    /// Columns to deliver (top-level names; all by default).
    pub columns: Option<Vec<String>>,
    /// A SQL filter rows must pass (applied after the split: ranks then deliver
    /// different counts).
    pub filter: Option<String>,
    /// Rows per batch delivered.
    pub batch_size: usize,
    /// Row order.
    pub shuffle: Shuffle,
    /// Seed of every random choice.
    pub seed: u64,
    /// Rows that do not divide evenly among ranks.
    pub tail: Tail,
    /// Opened data files and decoded deletion files kept (0: none; each block opens
    /// what it reads). Lancer maps files instead of holding descriptors, so this
    /// bounds memory, not open files.
    pub cache_entries: usize,
    /// Read the next blocks while the current one is consumed (on up to two threads).
    pub prefetch: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            rank: 0,
            world_size: 1,
            worker: 0,
            num_workers: 1,
            columns: None,
            filter: None,
            batch_size: 1024,
            shuffle: Shuffle::None,
            seed: 0,
            tail: Tail::Keep,
            cache_entries: 256,
            prefetch: true,
        }
    }
}

/// Where a reader is in an epoch: enough to resume it exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct State {
    /// The epoch.
    pub epoch: u64,
    /// Blocks finished.
    pub block: u64,
    /// Rows of the current block already delivered.
    pub offset: u64,
    /// Rows delivered this epoch (for progress; not needed to resume).
    pub rows: u64,
}

/// A loader over a pinned plan for one rank's worker.
#[derive(Clone)]
pub struct Loader {
    ds: Dataset,
    plan: Arc<Plan>,
    opts: Options,
    /// Columns read: the delivered ones, then the filter's.
    read_cols: Vec<String>,
    delivered: usize,
    filter: Option<Arc<lancer::Filter>>,
}

impl Loader {
    /// A loader for `plan` (opened at its pinned version with `storage`, in a session
    /// of its own: a loader usually runs in a worker process). Every argument is
    /// checked here — a bad column or filter fails now, not mid-epoch.
    pub fn new(plan: Plan, opts: Options, storage: &StorageOptions) -> Result<Loader> {
        let session = lancer::Session::builder()
            .storage_options(storage.clone())
            .build();
        Self::new_in(&session, plan, opts)
    }

    /// [`Loader::new`] in `session` (its storage options, caches and `memory://` stores).
    pub fn new_in(session: &lancer::Session, plan: Plan, opts: Options) -> Result<Loader> {
        let storage = session.storage_options();
        let bad = |what: String| Err(LoaderError::InvalidArgument { what });
        if opts.world_size == 0 || opts.rank >= opts.world_size {
            return bad(format!(
                "rank {} of world size {}",
                opts.rank, opts.world_size
            ));
        }
        if opts.num_workers == 0 || opts.worker >= opts.num_workers {
            return bad(format!("worker {} of {}", opts.worker, opts.num_workers));
        }
        if opts.batch_size == 0 {
            return bad("batch_size must be at least 1".into());
        }
        if opts.shuffle == (Shuffle::Buffer { buffer: 0 }) {
            return bad("a shuffle buffer holds at least 1 row".into());
        }
        let sum = plan
            .shards
            .iter()
            .try_fold(0u64, |a, s| a.checked_add(s.rows));
        if sum != Some(plan.rows) {
            return bad("the plan's row counts do not add up: discover again".into());
        }
        let store = lancer_table::dataset::open_store_in(
            std::path::Path::new(&plan.uri),
            storage,
            session.context(),
        )?;
        let ds = Dataset::open_with(store, storage.clone(), Some(plan.version))?
            .with_read_cache(opts.cache_entries);
        let now = crate::plan::plan_of(&plan.uri, &ds);
        if now.shards != plan.shards {
            return bad(format!(
                "the plan does not match version {} of {}: discover again",
                plan.version, plan.uri
            ));
        }
        let schema = ds.schema();
        let delivered_cols: Vec<String> = match &opts.columns {
            Some(c) => c.clone(),
            None => schema.fields().iter().map(|f| f.name().clone()).collect(),
        };
        for c in &delivered_cols {
            if schema.field_with_name(c).is_err() {
                return bad(format!("no column {c:?} (columns: {})", names(&schema)));
            }
        }
        let mut read_cols = delivered_cols.clone();
        let filter = match &opts.filter {
            Some(sql) => {
                let f = lancer::Filter::new(sql, &schema)?;
                for c in f.columns() {
                    let top = c.split('.').next().unwrap_or(c).to_string();
                    if !read_cols.contains(&top) {
                        read_cols.push(top);
                    }
                }
                Some(Arc::new(f))
            }
            None => None,
        };
        Ok(Loader {
            ds,
            plan: Arc::new(plan),
            delivered: delivered_cols.len(),
            read_cols,
            opts,
            filter,
        })
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The rows (before any filter) this reader gets in an epoch (the same count in
    /// every epoch: only the order and the rows change).
    pub fn rows_in_epoch(&self, _epoch: u64) -> u64 {
        self.ranges().iter().map(|(a, b)| b - a).sum()
    }

    /// This reader's ranges of the epoch's row sequence.
    fn ranges(&self) -> Vec<(u64, u64)> {
        let o = &self.opts;
        let rr = split::rank_ranges(self.plan.rows, o.rank, o.world_size, o.tail);
        split::worker_ranges(&rr, o.worker, o.num_workers)
    }

    /// The shard runs this reader reads in `epoch`, in order (not in global mode).
    pub fn parts(&self, epoch: u64) -> Vec<Part> {
        let shuffle = matches!(self.opts.shuffle, Shuffle::Buffer { .. });
        let order = split::shard_order(&self.plan, shuffle, self.opts.seed, epoch);
        split::parts(&self.plan, &order, &self.ranges())
    }

    /// Rows per block.
    fn block_rows(&self) -> u64 {
        match self.opts.shuffle {
            Shuffle::Buffer { buffer } => buffer.max(1) as u64,
            _ => self.opts.batch_size.max(1) as u64,
        }
    }

    /// `epoch` from its start.
    pub fn epoch(&self, epoch: u64) -> Epoch {
        self.resume(State {
            epoch,
            ..State::default()
        })
    }

    /// An epoch from a saved state (rows after the ones already delivered).
    pub fn resume(&self, state: State) -> Epoch {
        let work = Arc::new(Work {
            loader: self.clone(),
            epoch: state.epoch,
            parts: match self.opts.shuffle {
                Shuffle::Global => Vec::new(),
                _ => self.parts(state.epoch),
            },
            ranges: self.ranges(),
            total: self.rows_in_epoch(state.epoch),
            block_rows: self.block_rows(),
        });
        let blocks = work.total.div_ceil(work.block_rows);
        // Read-ahead: `n` threads, thread t reading blocks first + t, first + t + n, …
        // each one block ahead of the consumer, who takes them round-robin. A finished
        // block waits in its thread until the consumer takes it (a rendezvous channel),
        // so a thread never builds a second block before the first is taken: at most
        // the consumer's block, one waiting and one being built (its source rows and
        // permuted copy) are alive — `(2 + 2n) x` a shuffle buffer of decoded rows at
        // the very worst, ~3x in steady state (bench/loader.py measures it).
        let mut rx = Vec::new();
        if self.opts.prefetch {
            let n = read_threads(usize::try_from(self.opts.num_workers).unwrap_or(usize::MAX))
                .min(blocks.saturating_sub(state.block).max(1) as usize);
            for t in 0..n as u64 {
                let (tx, r) = sync_channel(0);
                let w = work.clone();
                let first = state.block + t;
                std::thread::spawn(move || {
                    let mut b = first;
                    while b < blocks {
                        if tx.send(w.block(b)).is_err() {
                            return;
                        }
                        b += n as u64;
                    }
                });
                rx.push(r);
            }
        }
        Epoch {
            work,
            rx,
            first: state.block,
            blocks,
            state,
            current: None,
            skip: state.offset,
            failed: false,
        }
    }
}

/// Read-ahead threads per reader: two where its share of the cores is two or more
/// (one decodes and shuffles a block while the other does the next), else one — the
/// `workers` readers of a rank run at once, each with its consumer (measured on 2
/// cores, 2 workers: 620k rows/s with two threads each).
fn read_threads(workers: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / workers.max(1)).clamp(1, 2)
}

fn names(schema: &Schema) -> String {
    let v: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    v.join(", ")
}

/// What an epoch's blocks are made of (shared with the read-ahead thread).
struct Work {
    loader: Loader,
    epoch: u64,
    parts: Vec<Part>,
    ranges: Vec<(u64, u64)>,
    total: u64,
    block_rows: u64,
}

impl Work {
    /// Block `b`: read, filtered, permuted.
    fn block(&self, b: u64) -> Result<RecordBatch> {
        let l = &self.loader;
        let (lo, hi) = (
            b * self.block_rows,
            ((b + 1) * self.block_rows).min(self.total),
        );
        let cols: Vec<&str> = l.read_cols.iter().map(String::as_str).collect();
        let mut batch = match l.opts.shuffle {
            Shuffle::Global => {
                let seed = rng::mix(&[l.opts.seed, self.epoch, 0x474C_4F42]);
                let n = l.plan.rows;
                let offsets: Vec<u64> = (lo..hi)
                    .filter_map(|p| position(&self.ranges, p))
                    .map(|i| rng::permute_index(i, n, seed))
                    .collect();
                l.ds.take_stored(&offsets, Some(&cols))?
            }
            Shuffle::Buffer { .. } if l.filter.is_none() => {
                match self.block_scattered(b, lo, hi, &cols)? {
                    Some(batch) => return Ok(batch),
                    None => self.block_read(lo, hi, &cols)?,
                }
            }
            _ => self.block_read(lo, hi, &cols)?,
        };
        if let Some(f) = &l.filter {
            let keep = f.evaluate(&batch)?;
            batch = arrow_select::filter::filter_record_batch(&batch, &keep)?;
        }
        if l.read_cols.len() > l.delivered {
            let idx: Vec<usize> = (0..l.delivered).collect();
            batch = batch.project(&idx)?;
        }
        if let Shuffle::Buffer { .. } = l.opts.shuffle {
            let order = self.order(b, batch.num_rows());
            let perm = UInt32Array::from(order.clone());
            let cols = batch
                .columns()
                .iter()
                .map(|c| match permute_rows(c, &order) {
                    Some(p) => p,
                    None => Ok(arrow_select::take::take(c.as_ref(), &perm, None)?),
                })
                .collect::<Result<Vec<_>>>()?;
            let rows = batch.num_rows();
            batch = RecordBatch::try_new_with_options(
                batch.schema(),
                cols,
                &RecordBatchOptions::new().with_row_count(Some(rows)),
            )?;
        }
        Ok(batch)
    }

    /// The order of block `b`'s `n` rows under the buffer shuffle.
    fn order(&self, b: u64, n: usize) -> Vec<u32> {
        let o = &self.loader.opts;
        rng::permutation(n, rng::mix(&[o.seed, self.epoch, o.rank, o.worker, b]))
    }

    /// Reads the rows `lo..hi` of the epoch's sequence piece by piece (a run of one
    /// fragment each), handing each to `f` until it returns `false`.
    fn pieces(
        &self,
        lo: u64,
        hi: u64,
        cols: &[&str],
        mut f: impl FnMut(RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        let l = &self.loader;
        let mut at = 0u64;
        for part in &self.parts {
            let (s, e) = (lo.max(at), hi.min(at + part.len()));
            if s < e {
                let frag = l
                    .ds
                    .fragments()
                    .iter()
                    .find(|f| f.id == part.fragment_id)
                    .ok_or_else(|| LoaderError::InvalidArgument {
                        what: format!("fragment {} is not in the pinned version", part.fragment_id),
                    })?;
                let kept = l.ds.kept_runs(frag)?;
                let runs = kept.slice(part.start + (s - at), part.start + (e - at));
                if !f(l.ds.read_runs(frag, Some(cols), &runs)?)? {
                    return Ok(());
                }
            }
            at += part.len();
            if at >= hi {
                break;
            }
        }
        Ok(())
    }

    /// Rows `lo..hi` as one batch, in the sequence's order.
    fn block_read(&self, lo: u64, hi: u64, cols: &[&str]) -> Result<RecordBatch> {
        let mut pieces = Vec::new();
        self.pieces(lo, hi, cols, |p| {
            pieces.push(p);
            Ok(true)
        })?;
        Ok(match pieces.len() {
            1 => pieces
                .pop()
                .unwrap_or_else(|| RecordBatch::new_empty(self.schema())),
            0 => RecordBatch::new_empty(self.schema()),
            _ => arrow_select::concat::concat_batches(&pieces[0].schema(), &pieces)?,
        })
    }

    /// Block `b` (rows `lo..hi`, no filter) read and permuted with its vector columns
    /// scattered into place piece by piece (see [`crate::scatter`]): the same rows in
    /// the same order as reading it whole and permuting it. `None` when the block has
    /// no vector column, or one holds nulls inside its vectors (read it whole then).
    fn block_scattered(
        &self,
        b: u64,
        lo: u64,
        hi: u64,
        cols: &[&str],
    ) -> Result<Option<RecordBatch>> {
        let Ok(n) = usize::try_from(hi - lo) else {
            return Ok(None);
        };
        if u32::try_from(n).is_err() {
            return Ok(None);
        }
        let schema = self.schema();
        let mut scattered: Vec<Option<Scatter>> = schema
            .fields()
            .iter()
            .map(|f| Scatter::new(f.data_type(), n))
            .collect();
        if scattered.iter().all(Option::is_none) {
            return Ok(None);
        }
        let order = self.order(b, n);
        let inv = scatter::inverse(&order);
        let mut rest: Vec<Vec<ArrayRef>> = vec![Vec::new(); schema.fields().len()];
        let (mut first, mut ok, mut read_schema) = (0usize, true, None);
        self.pieces(lo, hi, cols, |p| {
            for (k, c) in p.columns().iter().enumerate() {
                match scattered.get_mut(k).and_then(Option::as_mut) {
                    Some(s) => ok &= s.put(c, first, &inv),
                    None => match rest.get_mut(k) {
                        Some(r) => r.push(c.clone()),
                        None => ok = false,
                    },
                }
            }
            first += p.num_rows();
            read_schema.get_or_insert_with(|| p.schema());
            Ok(ok)
        })?;
        if !ok || first != n {
            return Ok(None);
        }
        let perm = UInt32Array::from(order);
        let mut out = Vec::with_capacity(scattered.len());
        for (k, s) in scattered.into_iter().enumerate() {
            out.push(match s {
                Some(s) => s.finish()?,
                None => {
                    let parts: Vec<&dyn Array> = rest[k].iter().map(|a| a.as_ref()).collect();
                    let col = match parts.len() {
                        0 => arrow_array::new_empty_array(schema.field(k).data_type()),
                        1 => rest[k][0].clone(),
                        _ => arrow_select::concat::concat(&parts)?,
                    };
                    arrow_select::take::take(col.as_ref(), &perm, None)?
                }
            });
        }
        let mut batch = RecordBatch::try_new_with_options(
            read_schema.unwrap_or(schema),
            out,
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )?;
        let l = &self.loader;
        if l.read_cols.len() > l.delivered {
            let idx: Vec<usize> = (0..l.delivered).collect();
            batch = batch.project(&idx)?;
        }
        Ok(Some(batch))
    }

    fn schema(&self) -> Arc<Schema> {
        let s = self.loader.ds.schema();
        let fields: Vec<_> = self
            .loader
            .read_cols
            .iter()
            .filter_map(|c| s.field_with_name(c).ok().cloned())
            .collect();
        Arc::new(Schema::new(fields))
    }
}

/// Rows of a fixed-size list of fixed-width values without nulls (embeddings) in the
/// order `order`, one copy of each row's bytes through the same [`Scatter`] the
/// piecewise path uses — arrow's `take` expands such a column into one index per value
/// (768 per row for a 768-d vector) first. `None` for other columns (and vectors with
/// nulls, which `take` handles).
fn permute_rows(col: &ArrayRef, order: &[u32]) -> Option<Result<ArrayRef>> {
    if col.null_count() != 0 {
        return None;
    }
    let mut s = Scatter::new(col.data_type(), order.len())?;
    s.put(col, 0, &scatter::inverse(order)).then(|| s.finish())
}

/// The `p`-th row of a list of ranges.
fn position(ranges: &[(u64, u64)], mut p: u64) -> Option<u64> {
    for &(a, b) in ranges {
        if p < b - a {
            return Some(a + p);
        }
        p -= b - a;
    }
    None
}

/// One epoch of one reader: record batches of at most `batch_size` rows.
pub struct Epoch {
    work: Arc<Work>,
    /// The read-ahead threads' channels (none: blocks are read on `next`).
    rx: Vec<Receiver<Result<RecordBatch>>>,
    /// The block the read-ahead started at.
    first: u64,
    blocks: u64,
    state: State,
    /// The block being handed out and the next row of it.
    current: Option<(RecordBatch, usize)>,
    /// Rows of the first block to skip (a resumed state's offset).
    skip: u64,
    /// A block failed: no more batches.
    failed: bool,
}

impl Epoch {
    /// Where this epoch is: save it to resume after the batches delivered so far.
    pub fn state(&self) -> State {
        self.state
    }

    /// Rows (before any filter) this epoch has in all.
    pub fn rows(&self) -> u64 {
        self.work.total
    }

    fn next_block(&mut self) -> Option<Result<RecordBatch>> {
        if self.failed || self.state.block >= self.blocks {
            return None;
        }
        let n = self.rx.len() as u64;
        let got = match self
            .rx
            .get(((self.state.block - self.first) % n.max(1)) as usize)
        {
            Some(rx) => rx.recv().unwrap_or_else(|_| {
                Err(LoaderError::InvalidArgument {
                    what: "the read-ahead thread stopped".into(),
                })
            }),
            None => self.work.block(self.state.block),
        };
        Some(got)
    }
}

impl Iterator for Epoch {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((batch, at)) = &mut self.current {
                if *at < batch.num_rows() {
                    let n = (batch.num_rows() - *at).min(self.work.loader.opts.batch_size);
                    let out = batch.slice(*at, n);
                    *at += n;
                    self.state.offset += n as u64;
                    self.state.rows += n as u64;
                    return Some(Ok(out));
                }
                self.current = None;
                self.state.block += 1;
                self.state.offset = 0;
            }
            match self.next_block()? {
                Err(e) => {
                    // the epoch ends at an error; the state stays where the rows
                    // delivered end, so a saved state resumes there
                    self.failed = true;
                    return Some(Err(e));
                }
                Ok(batch) => {
                    // JSON columns leave as text (filters ran on the stored JSONB)
                    let batch = match lancer::json_to_text(&batch) {
                        Ok(b) => b,
                        Err(e) => {
                            self.failed = true;
                            return Some(Err(lancer_table::TableError::from(e).into()));
                        }
                    };
                    let skip = std::mem::take(&mut self.skip) as usize;
                    let skip = skip.min(batch.num_rows());
                    self.current = Some((batch, skip));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Float32Type;
    use arrow_array::FixedSizeListArray;

    #[test]
    fn row_permutation_of_vectors_equals_arrows_take() {
        let rows: Vec<Option<Vec<Option<f32>>>> = (0..40)
            .map(|i| Some((0..3).map(|j| Some((i * 3 + j) as f32)).collect()))
            .collect();
        let full = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(rows, 3);
        // a slice: the child and parent offsets must be honoured
        let col: ArrayRef = Arc::new(full.slice(5, 20));
        let order = rng::permutation(20, 4);
        let fast = permute_rows(&col, &order)
            .expect("fast path")
            .expect("built");
        let slow =
            arrow_select::take::take(col.as_ref(), &UInt32Array::from(order), None).expect("take");
        assert_eq!(fast.to_data(), slow.to_data());
        // with a null row the general path is used
        let with_null = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            vec![Some(vec![Some(1.0f32)]), None],
            1,
        );
        assert!(permute_rows(&(Arc::new(with_null) as ArrayRef), &[1, 0]).is_none());
    }
}
