//! Lancer writes every golden table (as pylance read it) in 2.1 and 2.2 and reads it
//! back with identical values; small pages force many pages per column.

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use bytes::Bytes;
use lancer_format::container::FileVersion;
use lancer_format::reader::FileReader;
use lancer_format::writer::{write_to_vec, WriteOptions};

use crate::golden::{expected, golden_files};

/// Tables to write: the pylance-14 2.2 golden inputs (every type written there).
pub fn inputs() -> Vec<(String, RecordBatch)> {
    golden_files()
        .into_iter()
        .filter(|(l, _)| {
            let s = l.to_string_lossy();
            s.contains("pylance-14") && s.ends_with(".v2.2.lance")
        })
        .map(|(l, a)| {
            let name = l
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace(".v2.2.lance", "");
            (name, expected(&a))
        })
        .collect()
}

fn writable(name: &str, v: FileVersion) -> bool {
    // Maps and variable packed structs need 2.2.
    !((name == "packed_var" || name == "maps") && v == FileVersion::V2_1)
}

#[test]
fn lancer_round_trips_every_golden_table() {
    let mut failures = Vec::new();
    let mut done = 0;
    for (name, batch) in inputs() {
        for v in [FileVersion::V2_1, FileVersion::V2_2] {
            if !writable(&name, v) {
                continue;
            }
            for page in [lancer_format::writer::DEFAULT_MAX_PAGE_BYTES, 16 * 1024] {
                let opts = WriteOptions {
                    version: v,
                    max_page_bytes: page,
                    ..Default::default()
                };
                // Feed it in several batches so pages split across batches.
                let step = (batch.num_rows() / 3).max(1);
                let batches: Vec<RecordBatch> = (0..batch.num_rows())
                    .step_by(step)
                    .map(|s| batch.slice(s, step.min(batch.num_rows() - s)))
                    .collect();
                let bytes = match write_to_vec(batch.schema(), &batches, opts) {
                    Ok(b) => b,
                    Err(e) => {
                        failures.push(format!("{name} {v} page {page}: write failed: {e}"));
                        continue;
                    }
                };
                done += 1;
                let reader = match FileReader::open(Arc::new(Bytes::from(bytes))) {
                    Ok(r) => r,
                    Err(e) => {
                        failures.push(format!("{name} {v}: open failed: {e}"));
                        continue;
                    }
                };
                for (i, f) in batch.schema().fields().iter().enumerate() {
                    match reader.read_all(Some(&[f.name().as_str()])) {
                        Ok(got) => {
                            let (w, g) = (batch.column(i), got.column(0));
                            if w.to_data() != g.to_data() {
                                let n = (0..w.len())
                                    .find(|&r| w.slice(r, 1).to_data() != g.slice(r, 1).to_data())
                                    .unwrap_or(0);
                                failures.push(format!(
                                    "{name} {v} page {page}: {} differs at row {n}: {:?} vs {:?}",
                                    f.name(),
                                    g.slice(n, 1),
                                    w.slice(n, 1)
                                ));
                            }
                        }
                        Err(e) => {
                            failures.push(format!("{name} {v} page {page}: {}: {e}", f.name()))
                        }
                    }
                }
                // Scattered runs (every 7th row dropped) spanning pages: the path a
                // dataset scan with deletions takes, including gathered full-zip pages.
                let total = batch.num_rows() as u64;
                let runs: Vec<std::ops::Range<u64>> = (0..total)
                    .step_by(7)
                    .map(|s| s + 1..(s + 7).min(total))
                    .filter(|r| r.start < r.end)
                    .collect();
                match reader.read_ranges(&runs, None) {
                    Ok(got) => {
                        let parts: Vec<RecordBatch> = runs
                            .iter()
                            .map(|r| batch.slice(r.start as usize, (r.end - r.start) as usize))
                            .collect();
                        let want = arrow_select::concat::concat_batches(&batch.schema(), &parts)
                            .expect("concat expected runs");
                        for (i, f) in batch.schema().fields().iter().enumerate() {
                            if want.column(i).to_data() != got.column(i).to_data() {
                                failures.push(format!(
                                    "{name} {v} page {page}: {} differs when read as runs",
                                    f.name()
                                ));
                            }
                        }
                    }
                    Err(e) => failures.push(format!("{name} {v} page {page}: runs: {e}")),
                }
                // Random access on what we wrote.
                let n = batch.num_rows() as u64;
                if n > 2 {
                    if let Err(e) = reader.take(&[n - 1, 0, n / 2], None) {
                        failures.push(format!("{name} {v}: take: {e}"));
                    }
                }
            }
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(done > 20, "only {done} files written");
    assert!(failures.is_empty(), "{} failures", failures.len());
}

#[test]
fn unwritable_types_name_the_version_that_takes_them() {
    for (name, want) in [("maps", "2.2"), ("packed_var", "2.2")] {
        let (_, batch) = inputs().into_iter().find(|(n, _)| n == name).unwrap();
        let opts = WriteOptions {
            version: FileVersion::V2_1,
            ..Default::default()
        };
        let err = write_to_vec(batch.schema(), &[batch], opts)
            .unwrap_err()
            .to_string();
        assert!(err.contains(want) && err.contains("2.1"), "{name}: {err}");
    }
    let (_, batch) = inputs().into_iter().find(|(n, _)| n == "ints").unwrap();
    let opts = WriteOptions {
        version: FileVersion::V2_0,
        ..Default::default()
    };
    let err = write_to_vec(batch.schema(), &[batch], opts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("2.0") && err.contains("2.1"), "{err}");
}
