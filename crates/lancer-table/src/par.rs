//! Per-fragment work on every core: [`map`] runs a function over items on
//! `available_parallelism` scoped threads (each taking the next item) and returns the
//! results in item order; the first error wins and stops the others from starting more.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::{Result, TableError};

/// `f` over `items` on every core; results in order.
pub fn map<T: Sync, R: Send, E: Send + From<TableError>>(
    items: &[T],
    f: impl Fn(&T) -> std::result::Result<R, E> + Sync,
) -> std::result::Result<Vec<R>, E> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len())
        .max(1);
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
}
