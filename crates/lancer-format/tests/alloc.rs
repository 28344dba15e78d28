//! A global allocator for the test binary that records the largest single allocation,
//! so hostile-input tests can prove allocations stay bounded.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Tracking;

static PEAK: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Const-initialized and without a destructor: reading it never allocates.
    static THREAD_PEAK: Cell<usize> = const { Cell::new(0) };
}

fn record(size: usize) {
    PEAK.fetch_max(size, Ordering::Relaxed);
    let _ = THREAD_PEAK.try_with(|p| p.set(p.get().max(size)));
}

#[allow(unsafe_code)]
// SAFETY: forwards every call unchanged to the system allocator; only records sizes.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// Largest single allocation since the last reset (all threads).
#[allow(dead_code)]
pub fn peak_allocation() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Forgets the recorded peak.
#[allow(dead_code)]
pub fn reset_peak() {
    PEAK.store(0, Ordering::Relaxed);
}

/// Largest single allocation made by the calling thread since its last
/// [`reset_thread_peak`] (unaffected by tests running on other threads).
#[allow(dead_code)]
pub fn thread_peak_allocation() -> usize {
    THREAD_PEAK.with(Cell::get)
}

/// Forgets the calling thread's recorded peak.
#[allow(dead_code)]
pub fn reset_thread_peak() {
    THREAD_PEAK.with(|p| p.set(0));
}
