//! Damaged full-text (INVERTED) index files: every index file of pylance-14 golden
//! cases (scripts/gen_golden_fts.py — positions in format 2, format 1 and format 3 with
//! 256-document blocks, several ngram partitions) is truncated and has single bits
//! flipped, then match / AND / phrase / fuzzy / boolean queries run with and without a
//! limit and a prefilter. No mutation panics; a truncated file gives an error or, when
//! the part cut off is never read, the undamaged answer (never other rows); a flipped
//! bit gives an error or some answer; and no mutation makes Lancer allocate absurdly (a
//! tracking allocator records the largest single allocation of each run).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use lancer::search::{full_text_search, FtsOptions};
use lancer::Dataset;
use lancer_index::inverted::search::{FtsQuery, Occur};

use lancer_testkit::oracle::live_dir;

use crate::common::TempDir;

/// A single allocation above this while a mutation runs is absurd: the golden datasets
/// hold ~500 rows and their index files are at most ~120 KiB.
const ABSURD: usize = 64 << 20;

/// Records allocation sizes for the mutation runs (forwards everything to `System`).
struct Tracking;

/// Whether the largest allocation of every thread is recorded in [`PEAK`].
static ARMED: AtomicBool = AtomicBool::new(false);
/// Largest single allocation (all threads) since the last reset, while armed.
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Whether an absurd allocation was already reported with a backtrace.
static REPORTED: AtomicBool = AtomicBool::new(false);

thread_local! {
    // Const-initialized and without a destructor: using them never allocates.
    static THREAD_PEAK: Cell<usize> = const { Cell::new(0) };
    static IN_REPORT: Cell<bool> = const { Cell::new(false) };
    /// Where the last panic of this thread happened (set by the chained panic hook).
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn record(size: usize) {
    let _ = THREAD_PEAK.try_with(|p| p.set(p.get().max(size)));
    if !ARMED.load(Ordering::Relaxed) {
        return;
    }
    PEAK.fetch_max(size, Ordering::Relaxed);
    if size > ABSURD && !REPORTED.swap(true, Ordering::Relaxed) {
        // The first absurd request says where it comes from (allocations made while
        // reporting are forwarded without a report).
        let _ = IN_REPORT.try_with(|r| {
            if !r.replace(true) {
                eprintln!(
                    "fts_hostile: allocation of {size} bytes at\n{}",
                    std::backtrace::Backtrace::force_capture()
                );
                r.set(false);
            }
        });
    }
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

/// The live pylance-14 golden root, or none when the test script did not make it (a
/// failure with LANCER_REQUIRE_PYLANCE).
fn root() -> Option<PathBuf> {
    Some(live_dir("LANCER_GOLDEN_FTS_LIVE")?.join("pylance-14"))
}

/// The golden cases mutated, with the bit flips per index file (the ngram case, with
/// three partitions of 1–6-grams, searches ~5× slower than the others), and the most
/// index bytes a case may have to be included.
const CASES: [(&str, usize); 4] = [
    ("positions", 24),
    ("format_v1_positions", 24),
    ("format_v3_block256_positions", 24),
    ("multi_partition", 12),
];
const MAX_INDEX_BYTES: u64 = 1 << 20;

fn queries() -> Vec<(&'static str, FtsQuery)> {
    let text = Some("text".to_string());
    let matching = |t: &str| FtsQuery::matching(t, Some("text"));
    vec![
        ("match fox", FtsQuery::matching("fox", None)),
        (
            "match fox AND dog",
            FtsQuery::Match {
                column: text.clone(),
                text: "fox dog".into(),
                and: true,
                boost: 1.0,
                fuzziness: 0,
                prefix_length: 0,
                max_expansions: 50,
            },
        ),
        (
            "phrase 'brown fox' slop 1",
            FtsQuery::Phrase {
                column: text.clone(),
                text: "brown fox".into(),
                slop: 1,
            },
        ),
        (
            "fuzzy fxo~1",
            FtsQuery::Match {
                column: text,
                text: "fxo".into(),
                and: false,
                boost: 1.0,
                fuzziness: 1,
                prefix_length: 0,
                max_expansions: 50,
            },
        ),
        (
            "+fox dog -cat",
            FtsQuery::Boolean(vec![
                (Occur::Must, matching("fox")),
                (Occur::Should, matching("dog")),
                (Occur::MustNot, matching("cat")),
            ]),
        ),
    ]
}

fn options() -> Vec<(&'static str, FtsOptions)> {
    let base = FtsOptions {
        columns: Some(vec!["id".into()]),
        ..Default::default()
    };
    vec![
        ("all rows", base.clone()),
        (
            "limit 10",
            FtsOptions {
                limit: Some(10),
                ..base.clone()
            },
        ),
        (
            "limit 20 prefilter id < 300",
            FtsOptions {
                limit: Some(20),
                filter: Some("id < 300".into()),
                prefilter: true,
                ..base
            },
        ),
    ]
}

/// A search's answer: the rows' ids and scores, best first (or the error's text).
type Answer = Result<(Vec<i64>, Vec<f32>), String>;

fn answer(ds: &Dataset, q: &FtsQuery, o: &FtsOptions) -> Answer {
    let b = full_text_search(ds, q, o).map_err(|e| e.to_string())?;
    let ids = b
        .column_by_name("id")
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .map(|a| a.values().to_vec())
        .ok_or("no id column")?;
    let scores = b
        .column_by_name("_score")
        .and_then(|c| c.as_primitive_opt::<Float32Type>())
        .map(|a| a.values().to_vec())
        .ok_or("no _score column")?;
    Ok((ids, scores))
}

/// The damaged versions of a file: (description, truncated, bytes) — 9 truncations and
/// `flips` single-bit flips.
fn mutations(bytes: &[u8], flips: usize) -> Vec<(String, bool, Vec<u8>)> {
    let len = bytes.len();
    let mut out = Vec::new();
    let mut cuts = vec![
        0,
        1,
        8,
        len / 4,
        len / 2,
        len.saturating_sub(64),
        len.saturating_sub(40),
        len.saturating_sub(16),
        len.saturating_sub(1),
    ];
    cuts.retain(|&c| c < len);
    cuts.dedup();
    for cut in cuts {
        out.push((format!("cut to {cut} bytes"), true, bytes[..cut].to_vec()));
    }
    // A third of the flips in the last 64 bytes (the footer and what it points at), a
    // sixth around the middle, the rest spread over the file; the bit moves with the
    // position.
    let (footer, middle) = (flips / 3, flips / 6);
    let spread = flips - footer - middle;
    let mut at: Vec<usize> = (0..footer)
        .map(|k| len.saturating_sub(64) + k * 64 / footer + k % 3)
        .collect();
    at.extend((0..middle).map(|k| len / 2 + k * 5));
    at.extend((0..spread).map(|k| (k * len) / spread + (k * 37) % 17));
    for (k, &a) in at.iter().enumerate() {
        let a = a.min(len.saturating_sub(1));
        if len == 0 {
            break;
        }
        let mut b = bytes.to_vec();
        let bit = (k * 3) % 8;
        b[a] ^= 1 << bit;
        out.push((format!("bit {bit} of byte {a} flipped"), false, b));
    }
    out
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".into())
}

#[derive(Default)]
struct Tally {
    same: usize,
    other: usize,
    error: usize,
}

#[test]
fn corrupt_or_truncated_fts_index_files_never_panic_nor_allocate_absurdly() {
    let Some(root) = root() else {
        return;
    };
    // Where a panic happened, for the report (then the usual message).
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let at = info.location().map(|l| l.to_string()).unwrap_or_default();
        let _ = PANIC_AT.try_with(|p| *p.borrow_mut() = Some(at));
        previous(info);
    }));
    // Allocations on Lancer's worker threads count only when no other test of this
    // binary runs at the same time (the filter names this module): else the threads of
    // other tests would count too, and only this thread's allocations are checked.
    let alone = std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && a.contains("fts_hostile"));
    let start = Instant::now();
    let base = TempDir::new("fts-hostile");
    let (queries, options) = (queries(), options());
    let (mut runs, mut searches, mut failures) = (0usize, 0usize, Vec::<String>::new());
    let (mut cut_tally, mut flip_tally) = (Tally::default(), Tally::default());
    let mut worst: (usize, String) = (0, String::new());
    for (case, flips) in CASES {
        let case_root = root.join(case);
        let idx_dir = std::fs::read_dir(case_root.join("_indices"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&idx_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let size: u64 = files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum();
        if size > MAX_INDEX_BYTES {
            eprintln!("fts_hostile: {case} skipped: {size} index bytes");
            continue;
        }
        let ds = Dataset::open(&case_root).unwrap();
        let want: Vec<Answer> = queries
            .iter()
            .flat_map(|(_, q)| options.iter().map(|(_, o)| answer(&ds, q, o)))
            .collect();
        // the undamaged index answers (the phrase query of the ngram case, without
        // positions, is refused)
        assert!(
            want.iter().filter(|a| a.is_ok()).count() >= 12,
            "{case}: {want:?}"
        );
        for file in &files {
            let rel = file.strip_prefix(&case_root).unwrap();
            let bytes = std::fs::read(file).unwrap();
            for (what, truncated, data) in mutations(&bytes, flips) {
                runs += 1;
                let at = format!("{case} {} {what}", rel.display());
                let dir = base.join(format!("{runs}"));
                crate::common::copy_dir(&case_root, &dir);
                std::fs::write(dir.join(rel), &data).unwrap();
                THREAD_PEAK.with(|p| p.set(0));
                PEAK.store(0, Ordering::Relaxed);
                ARMED.store(true, Ordering::Relaxed);
                let ds = match catch_unwind(AssertUnwindSafe(|| Dataset::open(&dir))) {
                    Ok(ds) => ds.unwrap(),
                    Err(p) => {
                        ARMED.store(false, Ordering::Relaxed);
                        let loc = PANIC_AT.with(|p| p.borrow_mut().take()).unwrap_or_default();
                        failures.push(format!("{at}: open panicked at {loc}: {}", panic_text(&*p)));
                        continue;
                    }
                };
                let mut k = 0;
                for (qn, q) in &queries {
                    for (on, o) in &options {
                        let want = &want[k];
                        k += 1;
                        searches += 1;
                        let got = match catch_unwind(AssertUnwindSafe(|| answer(&ds, q, o))) {
                            Ok(got) => got,
                            Err(p) => {
                                let loc =
                                    PANIC_AT.with(|p| p.borrow_mut().take()).unwrap_or_default();
                                failures.push(format!(
                                    "{at}: {qn} ({on}) panicked at {loc}: {}",
                                    panic_text(&*p)
                                ));
                                continue;
                            }
                        };
                        let tally = if truncated {
                            &mut cut_tally
                        } else {
                            &mut flip_tally
                        };
                        match (&got, want) {
                            (Err(_), _) => tally.error += 1,
                            (Ok(_), _) if got == *want => tally.same += 1,
                            (Ok(g), _) => {
                                tally.other += 1;
                                if truncated {
                                    failures.push(format!(
                                        "{at}: {qn} ({on}) gives {} other rows {:?} (undamaged: {want:?})",
                                        g.0.len(),
                                        &g.0[..g.0.len().min(10)]
                                    ));
                                }
                            }
                        }
                    }
                }
                ARMED.store(false, Ordering::Relaxed);
                let peak = THREAD_PEAK.with(Cell::get).max(if alone {
                    PEAK.load(Ordering::Relaxed)
                } else {
                    0
                });
                if peak > worst.0 {
                    worst = (peak, at.clone());
                }
                if peak > ABSURD {
                    failures.push(format!("{at}: a single allocation of {peak} bytes"));
                }
                drop(ds);
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "fts_hostile: {runs} mutations, {searches} searches in {secs:.1} s; truncations: {} \
         undamaged answers, {} errors, {} other answers; bit flips: {} undamaged answers, \
         {} errors, {} other answers; largest single allocation {} bytes ({}; all threads \
         counted: {alone}); {} failures",
        cut_tally.same,
        cut_tally.error,
        cut_tally.other,
        flip_tally.same,
        flip_tally.error,
        flip_tally.other,
        worst.0,
        worst.1,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(runs > 500, "{runs} mutations");
    assert!(searches > 500 * 15, "{searches} searches");
    // truncation always breaks the file's footer: most answers are errors
    assert!(
        cut_tally.error > cut_tally.same,
        "truncations hardly ever fail"
    );
}
