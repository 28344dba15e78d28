//! Cached worker threads: a process-wide set of threads that run `'static` jobs and,
//! when done, wait for the next one (up to [`IDLE_FOR`]) instead of exiting.
//!
//! A scan starts its workers per query; a selective query through an index answers in
//! about a millisecond, and creating two threads (stack mapping, guard page, signal
//! stack, TLS, random keys: ~15 system calls each) was a tenth of it. A job is handed
//! to an idle thread if there is one, else to a new thread, so a job never waits for
//! another to finish (no pool size, no deadlock when a job starts and waits for jobs
//! of its own). After a `fork` the child has none of the parent's threads: the idle
//! list is dropped when the process id changes, so the child starts its own (a thread
//! lists itself as idle before its job's waiter is told the job is done, so a fork
//! right after a scan does not find the list locked).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long a thread without a job waits for one before it exits.
#[cfg(not(test))]
pub const IDLE_FOR: Duration = Duration::from_secs(20);
/// (short in tests, so that threads time out while jobs come)
#[cfg(test)]
pub const IDLE_FOR: Duration = Duration::from_millis(200);

/// A job's outcome: `Err` with the panic's payload if it panicked.
type Outcome = std::thread::Result<()>;

/// Where a job's outcome goes, and its waiter.
type Slot = Arc<(Mutex<Option<Outcome>>, Condvar)>;

/// A job and its slot.
type Job = (Box<dyn FnOnce() + Send + 'static>, Slot);

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

/// Waits for a job started by [`try_spawn`].
pub struct Handle {
    slot: Slot,
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

/// Runs `f` on an idle cached thread, or a new one; `Err` if no thread could be made
/// (the caller decides what then: a scan's reader runs the tasks itself).
pub fn try_spawn(f: impl FnOnce() + Send + 'static) -> std::io::Result<Handle> {
    let slot: Slot = Arc::new((Mutex::new(None), Condvar::new()));
    let mut job: Job = (Box::new(f), slot.clone());
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
                Ok(()) => return Ok(Handle { slot }),
                Err(back) => job = back.0,
            }
        }
        idle.next_id += 1;
        idle.next_id
    };
    let (tx, rx) = channel::<Job>();
    // (the first job goes through the channel too: if the thread cannot be made, it
    // was never run)
    tx.send(job)
        .map_err(|_| std::io::Error::other("a new thread's channel closed"))?;
    std::thread::Builder::new()
        .name("lancer-worker".into())
        .spawn(move || loop {
            let (f, slot) = match rx.recv_timeout(IDLE_FOR) {
                Ok(job) => job,
                Err(RecvTimeoutError::Timeout) => {
                    let mut idle = idle();
                    if let Some(at) = idle.threads.iter().position(|(i, _)| *i == id) {
                        idle.threads.remove(at);
                        return;
                    }
                    // taken off the list just now: a job is on its way
                    drop(idle);
                    match rx.recv() {
                        Ok(job) => job,
                        Err(_) => return,
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let out = catch_unwind(AssertUnwindSafe(f));
            // Listed as idle before the waiter learns the job is done: a process that
            // forks right after a scan then never forks while this thread holds the
            // list's lock for it.
            idle().threads.push((id, tx.clone()));
            let (m, cv) = &*slot;
            *m.lock().unwrap_or_else(PoisonError::into_inner) = Some(out);
            cv.notify_all();
        })?;
    Ok(Handle { slot })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// `n` jobs that each add one to `ran`.
    fn counting(ran: &Arc<AtomicUsize>, n: usize) -> Vec<Handle> {
        (0..n)
            .map(|_| {
                let ran = ran.clone();
                try_spawn(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn jobs_run_once_and_threads_are_reused() {
        let ran = Arc::new(AtomicUsize::new(0));
        let names = Arc::new(Mutex::new(std::collections::HashSet::new()));
        for _ in 0..50 {
            let handles: Vec<Handle> = (0..3)
                .map(|_| {
                    let ran = ran.clone();
                    let names = names.clone();
                    try_spawn(move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                        names.lock().unwrap().insert(std::thread::current().id());
                    })
                    .unwrap()
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        }
        assert_eq!(ran.load(Ordering::SeqCst), 150);
        // three at a time, reused: fewer threads than jobs (other tests of this binary
        // may hold some of the idle ones; a loaded machine may stall past IDLE_FOR)
        let threads = names.lock().unwrap().len();
        assert!(threads < 100, "{threads} threads for 150 jobs");
    }

    #[test]
    fn a_panicking_job_reports_it_and_the_thread_keeps_serving() {
        let h = try_spawn(|| panic!("job failed on purpose")).unwrap();
        let err = h.join().unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"job failed on purpose"));
        let (tx, rx) = channel();
        try_spawn(move || tx.send(7).unwrap())
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
    }

    #[test]
    fn a_job_waiting_on_its_own_jobs_does_not_deadlock() {
        let ran = Arc::new(AtomicUsize::new(0));
        let outer: Vec<Handle> = (0..4)
            .map(|_| {
                let ran = ran.clone();
                try_spawn(move || {
                    for h in counting(&ran, 4) {
                        h.join().unwrap();
                    }
                })
                .unwrap()
            })
            .collect();
        for h in outer {
            h.join().unwrap();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 16);
    }

    #[test]
    fn jobs_keep_running_while_idle_threads_time_out() {
        // (IDLE_FOR is 200 ms in tests: pauses around it make threads leave while jobs
        // come, racing the spawner's pick of an idle thread against its exit)
        let ran = Arc::new(AtomicUsize::new(0));
        let mut want = 0;
        for round in 0..10u64 {
            for h in counting(&ran, 2) {
                h.join().unwrap();
            }
            want += 2;
            std::thread::sleep(Duration::from_millis(180 + 5 * round));
        }
        assert_eq!(ran.load(Ordering::SeqCst), want);
    }
}
