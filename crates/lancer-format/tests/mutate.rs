//! A deterministic byte-mutation engine and harness for hostile-input tests, shared by
//! the test binaries of several crates (included with `#[path]`): each mutation must
//! end in a value or an error — no panic escaping the code under test, no abort, and
//! no single allocation beyond a bound (checked with the tracking allocator of
//! `alloc.rs`, per thread).

#![allow(dead_code)]

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;
use std::time::{Duration, Instant};

use super::alloc::{reset_thread_peak, thread_peak_allocation};

thread_local! {
    static PANICS: Cell<usize> = const { Cell::new(0) };
}

/// Counts panics per thread (also those the code under test contains itself), then
/// reports them as usual.
fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = PANICS.try_with(|p| p.set(p.get() + 1));
            previous(info);
        }));
    });
}

/// xorshift64: deterministic and dependency-free.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    fn at(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }
}

/// Extreme little-endian values of `w` bytes: all ones, signed max, signed min, zero.
fn extreme(w: usize, k: u64) -> Vec<u8> {
    let mut v = match k % 4 {
        0 => vec![0xFF; w],
        1 => vec![0xFF; w],
        2 => vec![0x00; w],
        _ => vec![0x00; w],
    };
    match k % 4 {
        1 => v[w - 1] = 0x7F,
        2 => v[w - 1] = 0x80,
        _ => {}
    }
    v
}

/// Huge values for a length/offset field of `w` bytes in a `len`-byte input.
fn huge(w: usize, len: usize, rng: &mut Rng) -> Vec<u8> {
    let v: u64 = match rng.below(6) {
        0 => u64::MAX,
        1 => i64::MAX as u64,
        2 => (len as u64).wrapping_add(1 + rng.below(1 << 20)),
        3 => 1 << (20 + rng.below(43)),
        4 => u64::MAX - rng.below(1000),
        _ => (i32::MAX as u64) - rng.below(16),
    };
    v.to_le_bytes()[..w].to_vec()
}

/// One mutation of `data`: a description and the mutated bytes.
pub fn mutate(data: &[u8], rng: &mut Rng) -> (String, Vec<u8>) {
    let mut d = data.to_vec();
    let kinds = rng.below(10);
    let what = apply(&mut d, kinds, rng);
    if kinds == 9 {
        // Two mutations at once.
        let k = rng.below(9);
        let more = apply(&mut d, k, rng);
        return (format!("{what}, then {more}"), d);
    }
    (what, d)
}

fn apply(d: &mut Vec<u8>, kind: u64, rng: &mut Rng) -> String {
    let len = d.len();
    if len == 0 {
        d.push(rng.next() as u8);
        return "grow empty".into();
    }
    match kind {
        0 => {
            let n = 1 + rng.below(4);
            let mut at = Vec::new();
            for _ in 0..n {
                let p = rng.at(len);
                d[p] ^= 1 << rng.below(8);
                at.push(p);
            }
            format!("bit flips at {at:?}")
        }
        1 => {
            let w = [1usize, 2, 4, 8][rng.at(4)];
            let p = rng.at(len.saturating_sub(w).max(1));
            let v = extreme(w, rng.next());
            let end = (p + w).min(len);
            d[p..end].copy_from_slice(&v[..end - p]);
            format!("{w}-byte extreme {v:02x?} at {p}")
        }
        2 => {
            // Truncations, half of them in the last 64 bytes (trailers, footers).
            let cut = if rng.below(2) == 0 {
                rng.at(len)
            } else {
                len - 1 - rng.at(len.min(64))
            };
            d.truncate(cut);
            format!("truncate at {cut}")
        }
        3 => {
            let p = rng.at(len + 1);
            let n = 1 + rng.at(64);
            let fill = rng.below(3);
            let span: Vec<u8> = (0..n)
                .map(|_| match fill {
                    0 => rng.next() as u8,
                    1 => 0xFF,
                    _ => 0,
                })
                .collect();
            d.splice(p..p, span);
            format!("insert {n} bytes at {p}")
        }
        4 => {
            let p = rng.at(len);
            let n = 1 + rng.at(64.min(len - p));
            d.drain(p..p + n);
            format!("delete {n} bytes at {p}")
        }
        5 | 6 => {
            // A length or offset field set huge: a 4- or 8-byte aligned word whose value
            // is plausible as a length in this input (0 < v <= len), else anywhere.
            let w = if rng.below(2) == 0 { 4 } else { 8 };
            if len < w {
                d[0] = 0xFF;
                return "short: first byte 0xFF".into();
            }
            let words: Vec<usize> = (0..=len - w)
                .step_by(4)
                .filter(|&p| {
                    let mut b = [0u8; 8];
                    b[..w].copy_from_slice(&d[p..p + w]);
                    let v = u64::from_le_bytes(b);
                    v > 0 && v <= len as u64
                })
                .collect();
            let p = if words.is_empty() {
                rng.at(len - w + 1)
            } else {
                words[rng.at(words.len())]
            };
            let v = huge(w, len, rng);
            d[p..p + w].copy_from_slice(&v);
            format!("{w}-byte length at {p} set to {v:02x?}")
        }
        7 => {
            let n = 1 + rng.at(8);
            let p = rng.at(len);
            for b in &mut d[p..(p + n).min(len)] {
                *b = rng.next() as u8;
            }
            format!("random bytes at {p}..{}", p + n)
        }
        _ => {
            let a = rng.at(len);
            let n = 1 + rng.at(32.min(len - a));
            let b = rng.at(len);
            let span = d[a..a + n].to_vec();
            let end = (b + n).min(len);
            d[b..end].copy_from_slice(&span[..end - b]);
            format!("copy {n} bytes from {a} to {b}")
        }
    }
}

/// Outcome counts of a mutation run.
#[derive(Debug, Default)]
pub struct Tally {
    pub tried: usize,
    pub ok: usize,
    pub errors: usize,
    pub peak: usize,
    pub took: Duration,
    /// Panics inside third-party code that the code under test caught and turned
    /// into errors (escaped panics fail the run).
    pub contained: usize,
}

/// Runs `n` mutations of the `seeds` (round robin) through `decode`, which returns
/// whether the input was accepted (`Err` = a typed error). Fails the test on any
/// escaped panic or a single allocation above `bound` bytes, printing the first few
/// offenders; returns the tally.
pub fn run(
    name: &str,
    seeds: &[Vec<u8>],
    n: usize,
    bound: usize,
    seed: u64,
    mut decode: impl FnMut(&[u8]) -> Result<(), String>,
) -> Tally {
    assert!(!seeds.is_empty());
    let mut rng = Rng(seed);
    let mut t = Tally::default();
    let mut failures = Vec::new();
    count_panics();
    let panics_before = PANICS.with(Cell::get);
    let start = Instant::now();
    // The unmutated seeds must decode.
    for (i, s) in seeds.iter().enumerate() {
        if let Err(e) = decode(s) {
            panic!("{name}: seed {i} does not decode: {e}");
        }
    }
    for i in 0..n {
        let seed_bytes = &seeds[i % seeds.len()];
        let (what, bytes) = mutate(seed_bytes, &mut rng);
        reset_thread_peak();
        let r = catch_unwind(AssertUnwindSafe(|| decode(&bytes)));
        let peak = thread_peak_allocation();
        t.peak = t.peak.max(peak);
        t.tried += 1;
        match r {
            Err(_) => failures.push(format!("seed {}: {what}: PANIC", i % seeds.len())),
            Ok(Ok(())) => t.ok += 1,
            Ok(Err(_)) => t.errors += 1,
        }
        if peak > bound {
            failures.push(format!(
                "seed {}: {what}: allocated {peak} bytes at once (input {} bytes)",
                i % seeds.len(),
                bytes.len()
            ));
        }
    }
    t.took = start.elapsed();
    t.contained = PANICS.with(Cell::get) - panics_before;
    for f in failures.iter().take(20) {
        eprintln!("{name}: {f}");
    }
    eprintln!(
        "{name}: {} mutations in {:?}: {} accepted, {} typed errors ({} from contained third-party panics), largest allocation {} bytes",
        t.tried, t.took, t.ok, t.errors, t.contained, t.peak
    );
    assert!(
        failures.is_empty(),
        "{name}: {} of {} mutations misbehaved",
        failures.len(),
        t.tried
    );
    t
}
