//! Encoding pages on worker threads.
//!
//! A flush of one field (its buffered arrays) is a task: a worker concatenates and
//! shreds the arrays, then queues one task per leaf column, which any worker encodes.
//! Results come back over a channel; the [`FileWriter`](super::FileWriter) writes the
//! flushes strictly in the order it submitted them (and the leaves of a flush in column
//! order), so the file's bytes do not depend on the number of workers or on which one
//! finishes first. Blob leaves come back shredded, to be encoded by the writer when
//! their turn to be written comes (their values go out of line at the write position).

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

use arrow_array::{Array, ArrayRef};

use super::page::{self, EncodedPage, Knobs};
use super::shred::{self, Shredded};
use crate::container::FileVersion;
use crate::schema::LanceField;
use crate::{FormatError, Result};

/// What a field's flushes need to know about it.
#[derive(Debug)]
pub(crate) struct FieldPlan {
    /// The field.
    pub field: LanceField,
    /// Knobs of each leaf column.
    pub knobs: Vec<Knobs>,
    /// Whether each leaf column is a blob column.
    pub blobs: Vec<bool>,
}

/// One leaf column's page of a flush.
#[derive(Debug)]
pub(crate) enum Leaf {
    /// Encoded.
    Page(EncodedPage),
    /// A blob leaf, encoded when written.
    Blob(Shredded),
}

/// Concatenates a flush's arrays (None when they hold no rows).
pub(crate) fn concat(arrays: &[ArrayRef]) -> Result<Option<ArrayRef>> {
    let array = match arrays {
        [] => return Ok(None),
        [one] => one.clone(),
        _ => {
            let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
            crate::concat::concat(&refs)?
        }
    };
    Ok((!array.is_empty()).then_some(array))
}

/// Encodes leaf `k` of a shredded flush.
pub(crate) fn encode_leaf(
    plan: &FieldPlan,
    k: usize,
    s: Shredded,
    version: FileVersion,
) -> Result<Leaf> {
    if plan.blobs.get(k).copied().unwrap_or(false) {
        return Ok(Leaf::Blob(s));
    }
    let knobs = plan.knobs.get(k).cloned().unwrap_or_default();
    page::encode_page(&s, &knobs, version).map(Leaf::Page)
}

/// Encodes a whole flush on the calling thread.
pub(crate) fn encode_inline(
    plan: &FieldPlan,
    arrays: &[ArrayRef],
    version: FileVersion,
) -> Result<Vec<Leaf>> {
    let Some(array) = concat(arrays)? else {
        return Ok(Vec::new());
    };
    shred::shred(&plan.field, &array)?
        .into_iter()
        .enumerate()
        .map(|(k, s)| encode_leaf(plan, k, s, version))
        .collect()
}

enum Task {
    Flush {
        seq: u64,
        plan: Arc<FieldPlan>,
        arrays: Vec<ArrayRef>,
    },
    Leaf {
        seq: u64,
        k: usize,
        plan: Arc<FieldPlan>,
        shredded: Shredded,
    },
}

/// A worker's report.
pub(crate) enum Done {
    /// Flush `seq` has `leaves` leaf columns (0: nothing to write).
    Shredded { seq: u64, leaves: usize },
    /// Leaf `k` of flush `seq`.
    Leaf { seq: u64, k: usize, leaf: Leaf },
    /// A task failed: the write ends with this error.
    Failed(FormatError),
}

struct Queue {
    tasks: VecDeque<Task>,
    closed: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

impl Shared {
    fn push(&self, t: Task, front: bool) {
        if let Ok(mut q) = self.queue.lock() {
            if front {
                q.tasks.push_front(t);
            } else {
                q.tasks.push_back(t);
            }
            self.ready.notify_one();
        }
    }

    fn close(&self) {
        if let Ok(mut q) = self.queue.lock() {
            q.closed = true;
            q.tasks.clear();
        }
        self.ready.notify_all();
    }

    /// The next task; None once closed.
    fn next(&self) -> Option<Task> {
        let mut q = self.queue.lock().ok()?;
        loop {
            if q.closed {
                return None;
            }
            if let Some(t) = q.tasks.pop_front() {
                return Some(t);
            }
            q = self.ready.wait(q).ok()?;
        }
    }
}

/// Worker threads encoding flushes.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    done: Receiver<Done>,
    workers: Vec<std::thread::JoinHandle<()>>,
}

impl Pool {
    /// Starts `threads` workers writing files of `version`.
    pub fn new(threads: usize, version: FileVersion) -> Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                tasks: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        });
        let (tx, done) = std::sync::mpsc::channel();
        let mut workers = Vec::with_capacity(threads);
        for k in 0..threads.max(1) {
            let shared = shared.clone();
            let tx = tx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("lancer-encode-{k}"))
                .spawn(move || work(&shared, &tx, version))
                .map_err(FormatError::Io)?;
            workers.push(handle);
        }
        Ok(Self {
            shared,
            done,
            workers,
        })
    }

    /// Queues flush `seq` of `plan`'s field.
    pub fn submit(&self, seq: u64, plan: Arc<FieldPlan>, arrays: Vec<ArrayRef>) {
        self.shared.push(Task::Flush { seq, plan, arrays }, false);
    }

    /// The next report (blocking).
    pub fn recv(&self) -> Result<Done> {
        self.done.recv().map_err(|_| {
            FormatError::Io(std::io::Error::other("the page encoding threads stopped"))
        })
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.close();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn work(shared: &Shared, tx: &Sender<Done>, version: FileVersion) {
    while let Some(task) = shared.next() {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_task(shared, tx, task, version)
        }));
        let failed = match run {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some(FormatError::Io(std::io::Error::other(
                "a page encoding thread panicked",
            ))),
        };
        if let Some(e) = failed {
            let _ = tx.send(Done::Failed(e));
            return;
        }
    }
}

fn run_task(shared: &Shared, tx: &Sender<Done>, task: Task, version: FileVersion) -> Result<()> {
    let stopped = || FormatError::Io(std::io::Error::other("the file writer stopped"));
    match task {
        Task::Flush { seq, plan, arrays } => {
            let leaves = match concat(&arrays)? {
                Some(array) => shred::shred(&plan.field, &array)?,
                None => Vec::new(),
            };
            drop(arrays);
            tx.send(Done::Shredded {
                seq,
                leaves: leaves.len(),
            })
            .map_err(|_| stopped())?;
            // Leaves of this flush go to the front: the writer waits for them first.
            for (k, shredded) in leaves.into_iter().enumerate().rev() {
                shared.push(
                    Task::Leaf {
                        seq,
                        k,
                        plan: plan.clone(),
                        shredded,
                    },
                    true,
                );
            }
        }
        Task::Leaf {
            seq,
            k,
            plan,
            shredded,
        } => {
            let leaf = encode_leaf(&plan, k, shredded, version)?;
            tx.send(Done::Leaf { seq, k, leaf })
                .map_err(|_| stopped())?;
        }
    }
    Ok(())
}
