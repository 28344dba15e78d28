//! Hostile input: every golden file, truncated, bit-flipped, and with tampered
//! offset/length fields, must decode to an error or a value — never a panic, a hang,
//! or an allocation out of proportion to the file.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use lancer_format::reader::FileReader;

use crate::alloc::{peak_allocation, reset_peak};
use crate::golden::golden_files;

pub struct Rng(pub u64);
impl Rng {
    fn next(&mut self) -> u64 {
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
}

/// Decodes one mutated file. A panic, a decode slower than 10 s or a single allocation
/// beyond the bound is recorded in `failures`; returns whether the file was refused
/// with an error.
pub fn check_mutant(name: &str, what: &str, bytes: Vec<u8>, failures: &mut Vec<String>) -> bool {
    let size = bytes.len();
    reset_peak();
    let start = Instant::now();
    let r = catch_unwind(AssertUnwindSafe(|| decode(Bytes::from(bytes))));
    let took = start.elapsed();
    let peak = peak_allocation();
    if took > Duration::from_secs(10) {
        failures.push(format!("{name}: {what}: took {took:?}"));
    }
    // Decoded output may legitimately be a few times the file (compression); a single
    // allocation beyond this bound means a length was trusted.
    let bound = 64 * size + (64 << 20);
    if peak > bound {
        failures.push(format!(
            "{name}: {what}: allocated {peak} bytes at once (file {size})"
        ));
    }
    match r {
        Err(_) => {
            failures.push(format!("{name}: {what}: PANIC"));
            false
        }
        Ok(decoded) => !decoded,
    }
}

/// Decodes everything it can; returns whether it succeeded (errors are fine).
pub fn decode(bytes: Bytes) -> bool {
    let Ok(reader) = FileReader::open(Arc::new(bytes)) else {
        return false;
    };
    let n = reader.num_rows();
    let mut ok = reader.read_all(None).is_ok();
    if n > 0 {
        ok &= reader.take(&[0, n / 2, n - 1], None).is_ok();
        ok &= reader.read_range(n / 3..n / 3 + 1, None).is_ok();
    }
    ok
}

pub fn mutations(data: &[u8], rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let len = data.len() as u64;
    let mut out = Vec::new();
    // Truncations (the tail holds the metadata: cut near the end too).
    for _ in 0..3 {
        let cut = rng.below(len) as usize;
        out.push((format!("truncate at {cut}"), data[..cut].to_vec()));
    }
    let cut = (len - rng.below(len.min(200))) as usize;
    out.push((format!("truncate at {cut}"), data[..cut].to_vec()));
    // Bit flips, mostly in the metadata region at the end.
    for i in 0..6 {
        let mut d = data.to_vec();
        let pos = if i % 3 == 0 {
            rng.below(len)
        } else {
            len - 1 - rng.below(len.min(4096))
        } as usize;
        d[pos] ^= 1 << rng.below(8);
        out.push((format!("flip byte {pos}"), d));
    }
    // Tampered footer / offset-table fields.
    let footer = data.len() - 40;
    for i in 0..4 {
        let mut d = data.to_vec();
        let field = (rng.below(3) * 8) as usize;
        let v = match i {
            0 => u64::MAX - rng.below(1000),
            1 => len + rng.below(1 << 20),
            2 => rng.below(len),
            _ => 1u64 << rng.below(63),
        };
        d[footer + field..footer + field + 8].copy_from_slice(&v.to_le_bytes());
        out.push((format!("footer field {field} = {v}"), d));
    }
    for _ in 0..3 {
        // An entry of the column-metadata or global-buffer offset table.
        let cmo = u64::from_le_bytes(data[footer + 8..footer + 16].try_into().unwrap()) as usize;
        let mut d = data.to_vec();
        let at = cmo + 8 * rng.below(((footer - cmo) / 8) as u64) as usize;
        let v = match rng.below(3) {
            0 => u64::MAX,
            1 => len * 2,
            _ => rng.below(len),
        };
        d[at..at + 8].copy_from_slice(&v.to_le_bytes());
        out.push((format!("offset table word at {at} = {v}"), d));
    }
    out
}

#[test]
fn corrupt_files_never_panic_hang_or_overallocate() {
    let files = golden_files();
    assert!(!files.is_empty());
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut failures = Vec::new();
    let mut tried = 0;
    let mut errors = 0;
    // Every file, a few mutations each (all golden files share the structures under
    // test; the sample keeps the debug-build test fast).
    for (lance, _) in files.iter() {
        let data = std::fs::read(lance).unwrap();
        let name = lance.file_name().unwrap().to_string_lossy().to_string();
        for (what, bytes) in mutations(&data, &mut rng) {
            tried += 1;
            if check_mutant(&name, &what, bytes, &mut failures) {
                errors += 1;
            }
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    eprintln!("{tried} mutated files, {errors} rejected with an error");
    assert!(
        failures.is_empty(),
        "{} of {tried} mutations misbehaved",
        failures.len()
    );
    assert!(
        errors > tried / 4,
        "too few mutations were detected: {errors} of {tried}"
    );
}

/// A full-zip string page (values of 300+ bytes) whose repetition index is tampered
/// with: pointing back (row 6 before row 4's end) and holding two rows where the index
/// says one. A take of scattered rows unzips every asked row's bytes into one stream,
/// so each region is checked on its own: both are refused with an error naming the
/// page's structure, and the untampered file takes the same rows.
#[test]
fn full_zip_takes_refuse_a_tampered_repetition_index() {
    use arrow_array::{RecordBatch, StringArray};
    use lancer_format::container::FileVersion;
    use lancer_format::writer::{write_to_vec, WriteOptions};

    let strings: StringArray = (0..40)
        .map(|i| Some(format!("{i:04}-{}", "x".repeat(300 + i))))
        .collect();
    let batch = RecordBatch::try_from_iter(vec![("s", Arc::new(strings.clone()) as _)]).unwrap();
    let opts = WriteOptions {
        version: FileVersion::V2_1,
        ..Default::default()
    };
    let bytes = write_to_vec(batch.schema(), &[batch], opts).unwrap();
    let reader = FileReader::open(Arc::new(Bytes::from(bytes.clone()))).unwrap();
    let page = &reader.metadata().columns[0].pages[0];
    assert_eq!(
        page.buffers.len(),
        2,
        "a full-zip page with a repetition index"
    );
    let idx = page.buffers[1].clone();
    let w = ((idx.end - idx.start) / 41) as usize;
    let entry = |data: &[u8], i: usize| {
        let at = idx.start as usize + i * w;
        let mut b = [0u8; 8];
        b[..w].copy_from_slice(&data[at..at + w]);
        u64::from_le_bytes(b)
    };
    let set = |data: &mut Vec<u8>, i: usize, v: u64| {
        let at = idx.start as usize + i * w;
        data[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
    };
    let take = |data: Vec<u8>, rows: &[u64]| {
        FileReader::open(Arc::new(Bytes::from(data)))
            .and_then(|r| r.take(rows, None))
            .map(|b| {
                let s = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
                s.iter().map(|v| v.unwrap().to_string()).collect::<Vec<_>>()
            })
    };
    let want: Vec<String> = [3u64, 6, 9]
        .iter()
        .map(|&i| strings.value(i as usize).to_string())
        .collect();
    assert_eq!(take(bytes.clone(), &[3, 6, 9]).unwrap(), want);

    // Row 6 starts where row 3 does: the rows' bytes would overlap.
    let mut back = bytes.clone();
    set(&mut back, 6, entry(&bytes, 3));
    let e = take(back, &[3, 6, 9]).unwrap_err().to_string();
    assert!(e.contains("repetition index points at"), "{e}");

    // Row 3's bytes run to row 5's start: two rows where one was asked.
    let mut two = bytes.clone();
    set(&mut two, 4, entry(&bytes, 5));
    let e = take(two, &[3, 9]).unwrap_err().to_string();
    assert!(e.contains("bytes of 1 rows hold 2"), "{e}");
}
