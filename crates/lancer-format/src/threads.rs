//! Cached worker threads: a process-wide set of threads that run `'static` jobs and,
//! when done, wait for the next one (up to [`IDLE_FOR`]) instead of exiting.
//!
//! A scan starts its workers per query; a selective query through an index answers in
//! about a millisecond, and creating two threads (stack mapping, guard page, signal
//! stack, TLS, random keys: ~15 system calls each) was a tenth of it. A job is handed
//! to an idle thread if there is one, else to a new thread, so a job never waits for
//! another to finish (no pool size, no deadlock when a job starts and waits for jobs
//! of its own). After a `fork` the child has none of the parent's threads: the idle
//! list is dropped when the process id changes, so the child starts its own.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long a thread without a job waits for one before it exits.
pub const IDLE_FOR: Duration = Duration::from_secs(20);

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Idle threads (id, where to send a job) and the process they belong to.
struct Idle {
    pid: u32,
    next_id: u64,
    threads: Vec<(u64, Sender<Job>)>,
}

static IDLE: Mutex<Idle> = Mutex::new(Idle {
    pid: 0,
    next_id: 0,
    threads: Vec::new(),
});

fn idle() -> MutexGuard<'static, Idle> {
    // (the list stays consistent under a panic: every change is one push or remove)
    IDLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A job's outcome: `Err` with the panic's payload if it panicked.
type Outcome = std::thread::Result<()>;

/// Waits for a job started by [`spawn`].
pub struct Handle {
    slot: Arc<(Mutex<Option<Outcome>>, Condvar)>,
}

impl Handle {
    /// Waits until the job has run; `Err` carries its panic (as `JoinHandle::join`).
    pub fn join(self) -> Outcome {
        let (m, cv) = &*self.slot;
        let mut g = m.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(out) = g.take() {
                return out;
            }
            g = cv.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Runs `f` on an idle cached thread, or a new one; if no thread can be created it
/// runs on the caller before returning.
pub fn spawn(f: impl FnOnce() + Send + 'static) -> Handle {
    let slot = Arc::new((Mutex::new(None), Condvar::new()));
    let done = slot.clone();
    let mut job: Job = Box::new(move || {
        let out = catch_unwind(AssertUnwindSafe(f));
        let (m, cv) = &*done;
        *m.lock().unwrap_or_else(PoisonError::into_inner) = Some(out);
        cv.notify_all();
    });
    let pid = std::process::id();
    let id = {
        let mut idle = idle();
        if idle.pid != pid {
            // a forked child: the parent's threads are not here
            idle.pid = pid;
            idle.threads.clear();
        }
        // a thread is removed from the list before it may exit, so it is waiting;
        // the send fails only if it is gone all the same
        while let Some((_, tx)) = idle.threads.pop() {
            match tx.send(job) {
                Ok(()) => return Handle { slot },
                Err(back) => job = back.0,
            }
        }
        idle.next_id += 1;
        idle.next_id
    };
    let (tx, rx) = channel::<Job>();
    let first = Arc::new(Mutex::new(Some(job)));
    let mine = first.clone();
    let started = std::thread::Builder::new()
        .name("lancer-worker".into())
        .spawn(move || {
            let job = mine.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(job) = job {
                job();
            }
            loop {
                idle().threads.push((id, tx.clone()));
                match rx.recv_timeout(IDLE_FOR) {
                    Ok(job) => job(),
                    Err(RecvTimeoutError::Timeout) => {
                        let mut idle = idle();
                        if let Some(at) = idle.threads.iter().position(|(i, _)| *i == id) {
                            idle.threads.swap_remove(at);
                            return;
                        }
                        // taken off the list just now: a job is on its way
                        drop(idle);
                        match rx.recv() {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        });
    if started.is_err() {
        // no thread: the job runs here (it was not taken by a thread that started)
        let job = first.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(job) = job {
            job();
        }
    }
    Handle { slot }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn jobs_run_once_and_threads_are_reused() {
        let ran = Arc::new(AtomicUsize::new(0));
        let names = Arc::new(Mutex::new(std::collections::HashSet::new()));
        for _ in 0..50 {
            let handles: Vec<Handle> = (0..3)
                .map(|_| {
                    let ran = ran.clone();
                    let names = names.clone();
                    spawn(move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                        names.lock().unwrap().insert(std::thread::current().id());
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        }
        assert_eq!(ran.load(Ordering::SeqCst), 150);
        // three at a time, reused: far fewer threads than jobs (other tests of this
        // binary may hold some of the idle ones)
        let threads = names.lock().unwrap().len();
        assert!(threads < 50, "{threads} threads for 150 jobs");
    }

    #[test]
    fn a_panicking_job_reports_it_and_the_thread_keeps_serving() {
        let h = spawn(|| panic!("job failed on purpose"));
        let err = h.join().unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"job failed on purpose"));
        let (tx, rx) = channel();
        spawn(move || tx.send(7).unwrap()).join().unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
    }

    #[test]
    fn a_job_waiting_on_its_own_jobs_does_not_deadlock() {
        let ran = Arc::new(AtomicUsize::new(0));
        let outer: Vec<Handle> = (0..4)
            .map(|_| {
                let ran = ran.clone();
                spawn(move || {
                    let inner: Vec<Handle> = (0..4)
                        .map(|_| {
                            let ran = ran.clone();
                            spawn(move || {
                                ran.fetch_add(1, Ordering::SeqCst);
                            })
                        })
                        .collect();
                    for h in inner {
                        h.join().unwrap();
                    }
                })
            })
            .collect();
        for h in outer {
            h.join().unwrap();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 16);
    }
}
