//! Running a planned scan: worker threads take tasks in order, never more than `window`
//! ahead of what the reader has consumed, so memory stays bounded (about `window` batches)
//! while reads run ahead of the consumer. A reader whose next result is not ready runs
//! the next task itself instead of sleeping (waking across cores cost more than a short
//! task: an index-answered query is ~20 tasks of well under a millisecond). Workers are
//! cached threads ([`lancer_util::threads`]). Dropping the stream stops the workers.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::Plan;
use crate::{Error, Result};

type Done = Result<Option<RecordBatch>>;

struct State {
    /// Next task a worker (or the reader) will take.
    next_task: usize,
    /// Results handed to the reader so far.
    emitted: usize,
    /// Finished tasks not yet handed out, by task index.
    ready: BTreeMap<usize, Done>,
    stopped: bool,
    /// Threads waiting on `changed` (a notification is a system call even when
    /// nobody waits: made only when someone does).
    waiting: usize,
}

struct Shared {
    plan: Arc<Plan>,
    window: usize,
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| Error::InvalidArgument {
            what: "a scan worker panicked".into(),
        })
    }

    /// Waits for a change, counted in `waiting`.
    fn wait<'a>(
        &self,
        mut st: MutexGuard<'a, State>,
    ) -> std::result::Result<MutexGuard<'a, State>, ()> {
        st.waiting += 1;
        let mut st = self.changed.wait(st).map_err(|_| ())?;
        st.waiting -= 1;
        Ok(st)
    }

    /// Releases `st` and wakes whoever waits for a change.
    fn changed(&self, st: MutexGuard<'_, State>) {
        let waiting = st.waiting > 0;
        drop(st);
        if waiting {
            self.changed.notify_all();
        }
    }

    /// The next task, if one may start now (no more than `window` ahead of what the
    /// reader has taken).
    fn take(&self, st: &mut State) -> Option<usize> {
        let may = !st.stopped
            && st.next_task < self.plan.tasks.len()
            && st.next_task < st.emitted + self.window;
        may.then(|| {
            st.next_task += 1;
            st.next_task - 1
        })
    }

    /// Runs task `i` and files its result; false if the state is gone (a panic).
    fn run(&self, i: usize) -> bool {
        // (a panic is this task's error, not a reader waiting forever for its result)
        let out = lancer_util::contain::contain(|| {
            let out = self.plan.run(&self.plan.tasks[i]);
            let out = match (out, &self.plan.map) {
                (Ok(Some(b)), Some(m)) => (m.f)(b).map(Some),
                (out, _) => out,
            };
            // JSON columns leave as text of Arrow's JSON type (decoded here, in parallel)
            out.and_then(|b| b.map(|b| super::json_text(&b)).transpose())
        })
        .unwrap_or_else(|why| {
            Err(Error::InvalidArgument {
                what: format!("scan task {i} failed: {why}"),
            })
        });
        let failed = out.is_err();
        let Ok(mut st) = self.lock() else {
            return false;
        };
        st.ready.insert(i, out);
        if failed {
            // Nothing after a failure is needed.
            st.next_task = self.plan.tasks.len();
        }
        self.changed(st);
        true
    }

    fn work(&self) {
        loop {
            let i = {
                let Ok(mut st) = self.lock() else { return };
                loop {
                    if st.stopped || st.next_task >= self.plan.tasks.len() {
                        return;
                    }
                    if let Some(i) = self.take(&mut st) {
                        break i;
                    }
                    st = match self.wait(st) {
                        Ok(g) => g,
                        Err(()) => return,
                    };
                }
            };
            if !self.run(i) {
                return;
            }
        }
    }
}

/// The batches of a scan, as an iterator. Errors end the scan.
pub(crate) struct LiveStream {
    shared: Arc<Shared>,
    workers: Vec<lancer_util::threads::Handle>,
    /// Rows still to skip / to return (offset and limit applied after filtering).
    skip: u64,
    left: Option<u64>,
    done: bool,
}

impl LiveStream {
    pub(crate) fn start(plan: Arc<Plan>, threads: usize) -> Self {
        let threads = threads.clamp(1, plan.tasks.len().max(1));
        let (skip, left) = (plan.offset, plan.limit);
        let shared = Arc::new(Shared {
            plan,
            window: threads * 2,
            state: Mutex::new(State {
                next_task: 0,
                emitted: 0,
                ready: BTreeMap::new(),
                stopped: false,
                waiting: 0,
            }),
            changed: Condvar::new(),
        });
        // (cached threads: a selective query is over in a millisecond, and creating its
        // workers cost a tenth of that; a worker that cannot be started is done
        // without: the reader runs the tasks no worker takes)
        let workers = (0..threads)
            .filter_map(|_| {
                let s = shared.clone();
                lancer_util::threads::try_spawn(move || s.work()).ok()
            })
            .collect();
        Self {
            shared,
            workers,
            skip,
            left,
            done: false,
        }
    }

    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.shared.plan.yields()
    }

    /// The next task result in the stream's order, or `None` at the end.
    fn next_done(&mut self) -> Option<Done> {
        let total = self.shared.plan.tasks.len();
        let mut st = match self.shared.lock() {
            Ok(g) => g,
            Err(e) => return Some(Err(e)),
        };
        loop {
            if st.emitted >= total {
                return None;
            }
            let key = if self.shared.plan.ordered {
                st.ready.contains_key(&st.emitted).then_some(st.emitted)
            } else {
                st.ready.keys().next().copied()
            };
            if let Some(k) = key {
                let out = st.ready.remove(&k);
                st.emitted += 1;
                self.shared.changed(st);
                return out;
            }
            // Rather than sleep until a worker is done (a wake-up across cores costs
            // more than a short task), the reader runs the next task itself.
            if let Some(i) = self.shared.take(&mut st) {
                drop(st);
                if !self.shared.run(i) {
                    return Some(Err(Error::InvalidArgument {
                        what: "a scan worker panicked".into(),
                    }));
                }
                st = match self.shared.lock() {
                    Ok(g) => g,
                    Err(e) => return Some(Err(e)),
                };
                continue;
            }
            st = match self.shared.wait(st) {
                Ok(g) => g,
                Err(()) => {
                    return Some(Err(Error::InvalidArgument {
                        what: "a scan worker panicked".into(),
                    }))
                }
            };
        }
    }

    fn stop(&mut self) {
        if let Ok(mut st) = self.shared.lock() {
            st.stopped = true;
        }
        self.shared.changed.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl Iterator for LiveStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if self.left == Some(0) {
                break;
            }
            let batch = match self.next_done()? {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(None) => continue,
                Ok(Some(b)) => b,
            };
            let n = batch.num_rows() as u64;
            if self.skip >= n {
                self.skip -= n;
                continue;
            }
            let start = self.skip;
            self.skip = 0;
            let take = self.left.map_or(n - start, |l| l.min(n - start));
            if let Some(l) = self.left.as_mut() {
                *l -= take;
            }
            if take == 0 {
                continue;
            }
            let out = if start == 0 && take == n {
                batch
            } else {
                batch.slice(start as usize, take as usize)
            };
            return Some(Ok(out));
        }
        self.done = true;
        self.stop();
        None
    }
}

impl Drop for LiveStream {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The batches of a scan as they come: from the worker threads, or (a sorted scan)
/// from its finished result.
pub struct ScanStream(Source);

enum Source {
    Live(LiveStream),
    Ready(SchemaRef, std::collections::VecDeque<RecordBatch>),
    Exact(super::options::Exact),
}

impl ScanStream {
    pub(crate) fn start(plan: Arc<Plan>, threads: usize) -> Self {
        Self(Source::Live(LiveStream::start(plan, threads)))
    }

    /// A stream of batches already made (of `schema`).
    pub(crate) fn ready(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self(Source::Ready(schema, batches.into()))
    }

    /// `inner`'s batches regrouped to exactly `size` rows (the last may be shorter).
    pub(crate) fn exact(inner: ScanStream, size: usize) -> Self {
        Self(Source::Exact(super::options::Exact::new(inner, size)))
    }

    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        match &self.0 {
            Source::Live(l) => l.schema(),
            Source::Ready(s, _) => s.clone(),
            Source::Exact(e) => e.schema(),
        }
    }
}

impl Iterator for ScanStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Source::Live(l) => l.next(),
            Source::Ready(_, b) => b.pop_front().map(Ok),
            Source::Exact(e) => e.next(),
        }
    }
}
