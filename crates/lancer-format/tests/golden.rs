//! Every golden file under `tests/data/files/pylance-*/` (written by pylance, see
//! `scripts/gen_golden_files.py`) decodes to exactly what pylance read back from it:
//! fully, by row ranges, and by random takes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use bytes::Bytes;
use lancer_format::read::{RangeRead, TracingRead};
use lancer_format::reader::FileReader;

pub fn data_dir() -> PathBuf {
    lancer_testkit::repo().join("tests/data/files")
}

/// Directories holding `pylance-*/` golden file sets: the checked-in ones, plus the
/// ones written live by the test script (`LANCER_GOLDEN_LIVE`).
pub fn golden_roots() -> Vec<PathBuf> {
    let mut roots = vec![data_dir()];
    roots.extend(lancer_testkit::oracle::live_dir("LANCER_GOLDEN_LIVE"));
    roots
}

/// (lance file, expected arrow file) pairs.
pub fn golden_files() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let dirs = golden_roots()
        .into_iter()
        .filter_map(|r| std::fs::read_dir(r).ok())
        .flatten();
    for d in dirs.flatten() {
        let Ok(files) = std::fs::read_dir(d.path()) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "lance") {
                let exp = p.with_extension("arrow");
                if exp.exists() {
                    out.push((p, exp));
                }
            }
        }
    }
    out.sort();
    out
}

pub fn expected(path: &Path) -> RecordBatch {
    let f = std::fs::File::open(path).unwrap();
    let r = arrow_ipc::reader::FileReader::try_new(f, None).unwrap();
    let schema = r.schema();
    let batches: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

fn compare(label: &str, want: &RecordBatch, got: &RecordBatch, failures: &mut Vec<String>) {
    if want.num_rows() != got.num_rows() {
        failures.push(format!(
            "{label}: {} rows, expected {}",
            got.num_rows(),
            want.num_rows()
        ));
        return;
    }
    for (i, f) in want.schema().fields().iter().enumerate() {
        let Some(g) = got.column_by_name(f.name()) else {
            failures.push(format!("{label}: column {} missing", f.name()));
            continue;
        };
        let w = want.column(i);
        if w.data_type() != g.data_type() {
            failures.push(format!(
                "{label}: column {} type {:?}, expected {:?}",
                f.name(),
                g.data_type(),
                w.data_type()
            ));
            continue;
        }
        if w.to_data() != g.to_data() {
            let n = (0..w.len())
                .find(|&r| w.slice(r, 1).to_data() != g.slice(r, 1).to_data())
                .unwrap_or(0);
            failures.push(format!(
                "{label}: column {} differs first at row {n}: got {:?}, expected {:?}",
                f.name(),
                g.slice(n, 1),
                w.slice(n, 1)
            ));
        }
    }
}

/// Rows `rows` of `want`, in that order.
fn rows_of(want: &RecordBatch, rows: Vec<u64>) -> RecordBatch {
    let ids = arrow_array::UInt64Array::from(rows);
    let cols = want
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), &ids, None).unwrap())
        .collect();
    RecordBatch::try_new(want.schema(), cols).unwrap()
}

pub fn run_file(lance: &Path, arrow: &Path, failures: &mut Vec<String>) {
    let label = lance
        .strip_prefix(data_dir())
        .unwrap_or(lance)
        .display()
        .to_string();
    let want = expected(arrow);
    let bytes = Bytes::from(std::fs::read(lance).unwrap());
    let reader = match FileReader::open(Arc::new(bytes)) {
        Ok(r) => r,
        Err(e) => {
            failures.push(format!("{label}: open failed: {e}"));
            return;
        }
    };
    // Field and schema metadata as pylance reports them.
    for f in want.schema().fields() {
        match reader.schema().field_with_name(f.name()) {
            Ok(g) if g.metadata() != f.metadata() => failures.push(format!(
                "{label}: field {} metadata {:?}, expected {:?}",
                f.name(),
                g.metadata(),
                f.metadata()
            )),
            Ok(g) if g.is_nullable() != f.is_nullable() => failures.push(format!(
                "{label}: field {} nullable {}, expected {}",
                f.name(),
                g.is_nullable(),
                f.is_nullable()
            )),
            Ok(_) => {}
            Err(_) => failures.push(format!("{label}: field {} missing from schema", f.name())),
        }
    }
    if reader.schema().metadata() != want.schema().metadata() {
        failures.push(format!(
            "{label}: schema metadata {:?}, expected {:?}",
            reader.schema().metadata(),
            want.schema().metadata()
        ));
    }
    // Whole file, column by column so one bad column does not hide the others.
    let names: Vec<String> = want
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    for (i, name) in names.iter().enumerate() {
        let w = want.project(&[i]).unwrap();
        match reader.read_all(Some(&[name.as_str()])) {
            Ok(g) => compare(&format!("{label} full"), &w, &g, failures),
            Err(e) => failures.push(format!("{label} full: column {name}: {e}")),
        }
    }
    let n = want.num_rows() as u64;
    if n == 0 {
        return;
    }
    // Ranges.
    for (a, b) in [
        (0, n.min(1)),
        (n / 3, n / 2 + 1),
        (n.saturating_sub(7), n),
        (1, n),
    ] {
        if a >= b {
            continue;
        }
        match reader.read_range(a..b, None) {
            Ok(g) => compare(
                &format!("{label} range {a}..{b}"),
                &want.slice(a as usize, (b - a) as usize),
                &g,
                failures,
            ),
            Err(e) => failures.push(format!("{label} range {a}..{b}: {e}")),
        }
    }
    // Scattered rows, as an index's answer reads them: every `step`-th row as a range
    // of `len` rows (many short ranges per chunk take the pages' dense grouping; one
    // in 300 does not).
    for (step, len) in [(3u64, 1u64), (9, 1), (5, 2), (300, 1)] {
        let ranges: Vec<std::ops::Range<u64>> = (0..n)
            .step_by(step as usize)
            .map(|a| a..(a + len).min(n))
            .collect();
        let rows: Vec<u64> = ranges.iter().flat_map(|r| r.clone()).collect();
        match reader.read_ranges(&ranges, None) {
            Ok(g) => compare(
                &format!("{label} every {step}th ({len})"),
                &rows_of(&want, rows),
                &g,
                failures,
            ),
            Err(e) => failures.push(format!("{label} every {step}th ({len}): {e}")),
        }
    }
    // Random takes (deterministic), unsorted with duplicates.
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ n;
    let idx: Vec<u64> = (0..50)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        })
        .collect();
    match reader.take(&idx, None) {
        Ok(g) => compare(
            &format!("{label} take"),
            &rows_of(&want, idx.clone()),
            &g,
            failures,
        ),
        Err(e) => failures.push(format!("{label} take: {e}")),
    }
}

#[test]
fn golden_files_decode_like_pylance() {
    let files = golden_files();
    assert!(
        !files.is_empty(),
        "no golden files under {}",
        data_dir().display()
    );
    let mut failures = Vec::new();
    for (lance, arrow) in &files {
        run_file(lance, arrow, &mut failures);
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} failures over {} files",
        failures.len(),
        files.len()
    );
}

#[test]
fn take_reads_only_needed_bytes() {
    // One row of a 2.1 int column must not read the whole page.
    let path = data_dir().join("pylance-14/many_pages.v2.1.lance");
    let bytes = Bytes::from(std::fs::read(&path).unwrap());
    let size = bytes.len() as u64;
    let io = Arc::new(TracingRead::new(bytes));
    let reader = FileReader::open(io.clone()).unwrap();
    io.clear();
    let got = reader.take(&[4321], Some(&["i"])).unwrap();
    assert_eq!(got.num_rows(), 1);
    let read = io.bytes_read();
    assert!(
        read < 16 * 1024,
        "take of one row read {read} of {size} bytes"
    );
    let _ = io.size();
}
