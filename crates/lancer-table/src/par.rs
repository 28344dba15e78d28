//! Per-fragment work on every core: [`map`] runs a function over items on
//! `available_parallelism` scoped threads (each taking the next item) and returns the
//! results in item order; the first error wins and stops the others from starting more.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::{Result, TableError};

/// Reports work done: `(items done, items)`, from any worker thread.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// `f` over `items` on every core; results in order.
pub fn map<T: Sync, R: Send, E: Send + From<TableError>>(
    items: &[T],
    f: impl Fn(&T) -> std::result::Result<R, E> + Sync,
) -> std::result::Result<Vec<R>, E> {
    map_progress(items, f, &|_, _| {})
}

/// [`map`], calling `progress` as items finish.
pub fn map_progress<T: Sync, R: Send, E: Send + From<TableError>>(
    items: &[T],
    f: impl Fn(&T) -> std::result::Result<R, E> + Sync,
    progress: Progress<'_>,
) -> std::result::Result<Vec<R>, E> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    map_width(items, f, progress, cores)
}

/// Threads for work that waits on a store (object-store requests), not on the CPU.
pub const IO_WIDTH: usize = 16;

/// [`map`] on `width` threads (more than the cores for work that waits on requests).
pub fn map_io<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> Result<R> + Sync) -> Result<Vec<R>> {
    map_width(items, f, &|_, _| {}, IO_WIDTH)
}

fn map_width<T: Sync, R: Send, E: Send + From<TableError>>(
    items: &[T],
    f: impl Fn(&T) -> std::result::Result<R, E> + Sync,
    progress: Progress<'_>,
    width: usize,
) -> std::result::Result<Vec<R>, E> {
    let done = AtomicUsize::new(0);
    let f = |t: &T| {
        let r = f(t);
        progress(done.fetch_add(1, Ordering::Relaxed) + 1, items.len());
        r
    };
    let threads = width.min(items.len()).max(1);
    if threads == 1 {
        return items.iter().map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let error: Mutex<Option<E>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { return };
                match f(item) {
                    Ok(r) => {
                        if let Ok(mut v) = slots.lock() {
                            v[i] = Some(r);
                        }
                    }
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        if let Ok(mut slot) = error.lock() {
                            slot.get_or_insert(e);
                        }
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = error.into_inner().ok().flatten() {
        return Err(e);
    }
    let slots = slots
        .into_inner()
        .map_err(|_| TableError::corrupt("a worker thread panicked"))?;
    slots
        .into_iter()
        .map(|r| r.ok_or_else(|| TableError::corrupt("a worker thread panicked").into()))
        .collect()
}

/// [`map`] with the table layer's error.
pub fn try_map<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    map(items, f)
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_in_order_and_first_error() {
        let items: Vec<u32> = (0..1000).collect();
        let out = super::try_map(&items, |&x| Ok(x * 2)).unwrap();
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        let err = super::try_map(&items, |&x| {
            if x == 500 {
                Err(crate::TableError::corrupt("boom"))
            } else {
                Ok(x)
            }
        });
        assert!(err.unwrap_err().to_string().contains("boom"));
    }

    #[test]
    fn progress_counts_every_item() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let items: Vec<u32> = (0..300).collect();
        let (calls, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let out = super::map_progress(
            &items,
            |&x| Ok::<_, crate::TableError>(x + 1),
            &|done, total| {
                assert_eq!(total, 300);
                calls.fetch_add(1, Ordering::Relaxed);
                most.fetch_max(done, Ordering::Relaxed);
            },
        )
        .unwrap();
        assert_eq!(out.len(), 300);
        assert_eq!(calls.load(Ordering::Relaxed), 300);
        assert_eq!(most.load(Ordering::Relaxed), 300);
    }
}
