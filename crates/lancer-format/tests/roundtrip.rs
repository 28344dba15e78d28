//! Lancer writes every golden table (as pylance read it) in 2.1 and 2.2 and reads it
//! back with identical values; small pages force many pages per column.

use std::sync::Arc;

use arrow_array::{Array, Int32Array, RecordBatch};
use arrow_schema::{DataType, Field};
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

pub fn writable(name: &str, v: FileVersion) -> bool {
    // Maps, variable packed structs and fixed-size lists of structs need 2.2.
    !(matches!(
        name,
        "packed_var" | "maps" | "fsl_structs" | "fsl_structs_nn"
    ) && v == FileVersion::V2_1)
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
    for (name, want) in [
        ("maps", "2.2"),
        ("packed_var", "2.2"),
        ("fsl_structs", "2.2"),
    ] {
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
    // A fixed-size list of structs inside a struct (pylance 14 writes it but cannot read
    // it back): refused naming what to store instead.
    let item = Field::new(
        "item",
        DataType::Struct(vec![Field::new("a", DataType::Int32, true)].into()),
        true,
    );
    let st = arrow_array::StructArray::new(
        vec![Field::new("a", DataType::Int32, true)].into(),
        vec![Arc::new(Int32Array::from(vec![1, 2, 3, 4]))],
        None,
    );
    let fsl = arrow_array::FixedSizeListArray::new(Arc::new(item), 2, Arc::new(st), None);
    let outer = arrow_array::StructArray::from(vec![(
        Arc::new(Field::new("p", fsl.data_type().clone(), true)),
        Arc::new(fsl) as arrow_array::ArrayRef,
    )]);
    let batch =
        RecordBatch::try_from_iter(vec![("v", Arc::new(outer) as arrow_array::ArrayRef)]).unwrap();
    let opts = WriteOptions {
        version: FileVersion::V2_2,
        ..Default::default()
    };
    let err = write_to_vec(batch.schema(), std::slice::from_ref(&batch), opts).unwrap_err();
    assert!(
        matches!(err, lancer_format::FormatError::UnsupportedType { .. }),
        "{err}"
    );
    let err = err.to_string();
    assert!(err.contains("\"p\"") && err.contains("as a list"), "{err}");
    // a fixed-size list of size 0, or of structs without fields: refused at the write
    // (the first would leave a schema no reader parses, the second no leaf to read)
    for (item, n) in [
        (Field::new("item", DataType::Int32, true), 0),
        (
            Field::new(
                "item",
                DataType::Struct(arrow_schema::Fields::empty()),
                true,
            ),
            2,
        ),
    ] {
        let values = arrow_array::new_empty_array(item.data_type());
        let fsl = arrow_array::FixedSizeListArray::new(Arc::new(item), n, values, None);
        let batch = RecordBatch::try_from_iter(vec![("z", Arc::new(fsl) as arrow_array::ArrayRef)])
            .unwrap();
        let opts = WriteOptions {
            version: FileVersion::V2_2,
            ..Default::default()
        };
        let err = write_to_vec(batch.schema(), std::slice::from_ref(&batch), opts).unwrap_err();
        assert!(
            matches!(err, lancer_format::FormatError::UnsupportedType { .. })
                && err.to_string().contains("\"z\""),
            "{err}"
        );
    }
    let (_, batch) = inputs().into_iter().find(|(n, _)| n == "ints").unwrap();
    // Legacy (0.1 / 0.2) files are read, not written.
    let opts = WriteOptions {
        version: FileVersion::Legacy,
        ..Default::default()
    };
    let err = write_to_vec(batch.schema(), &[batch], opts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("legacy") && err.contains("2.1"), "{err}");
}

/// A table of many columns and many pages: ints, sorted ints, low-cardinality and
/// free text strings (dictionary, FSST), floats, nullable ints, a 128-d vector (the
/// zero-copy full-zip path), lists and a struct.
fn wide_table(rows: usize) -> RecordBatch {
    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::{FixedSizeListArray, Float32Array, Float64Array, Int64Array, StructArray};
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let words = [
        "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
    ];
    let ids = Int64Array::from_iter_values((0..rows).map(|_| (next() >> 20) as i64));
    let sorted = Int64Array::from_iter_values((0..rows as i64).map(|i| i * 3));
    let cats: arrow_array::StringArray = (0..rows)
        .map(|_| Some(words[(next() % 8) as usize]))
        .collect();
    let text: arrow_array::StringArray = (0..rows)
        .map(|i| {
            let w: Vec<&str> = (0..6).map(|_| words[(next() % 8) as usize]).collect();
            Some(format!("{} {i}", w.join(" ")))
        })
        .collect();
    let floats = Float64Array::from_iter_values((0..rows).map(|_| next() as f64 / 7.0));
    let nullable: Int32Array = (0..rows)
        .map(|i| (i % 5 != 0).then(|| (next() % 1000) as i32))
        .collect();
    let vec = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, true)),
        128,
        Arc::new(Float32Array::from_iter_values(
            (0..rows * 128).map(|_| (next() % 1000) as f32 / 3.0),
        )),
        None,
    )
    .unwrap();
    let mut lists = ListBuilder::new(StringBuilder::new());
    for i in 0..rows {
        if i % 11 == 0 {
            lists.append_null();
            continue;
        }
        for _ in 0..(next() % 4) {
            lists.values().append_value(words[(next() % 8) as usize]);
        }
        lists.append(true);
    }
    let st = StructArray::from(vec![
        (
            Arc::new(Field::new("a", DataType::Int32, true)),
            Arc::new(Int32Array::from_iter_values(
                (0..rows as i32).map(|i| i % 7),
            )) as _,
        ),
        (
            Arc::new(Field::new("b", DataType::Utf8, true)),
            Arc::new(cats.clone()) as _,
        ),
    ]);
    RecordBatch::try_from_iter(vec![
        ("id", Arc::new(ids) as arrow_array::ArrayRef),
        ("sorted", Arc::new(sorted) as _),
        ("cat", Arc::new(cats) as _),
        ("text", Arc::new(text) as _),
        ("f", Arc::new(floats) as _),
        ("n", Arc::new(nullable) as _),
        ("vec", Arc::new(vec) as _),
        ("tags", Arc::new(lists.finish()) as _),
        ("st", Arc::new(st) as _),
    ])
    .unwrap()
}

/// Parallel encoding does not change the bytes: the same input written with 1, 2 and 4
/// encoding threads (twice with 4) gives byte-identical files, for a many-column,
/// many-page table and for every golden table, at 2.1 and 2.2.
#[test]
fn writes_are_byte_identical_whatever_the_thread_count() {
    let mut tables = vec![("wide".to_string(), wide_table(30_000))];
    tables.extend(inputs());
    let mut checked = 0;
    for (name, batch) in tables {
        for v in [FileVersion::V2_1, FileVersion::V2_2] {
            if !writable(&name, v) {
                continue;
            }
            let step = (batch.num_rows() / 40).max(1);
            let batches: Vec<RecordBatch> = (0..batch.num_rows())
                .step_by(step)
                .map(|s| batch.slice(s, step.min(batch.num_rows() - s)))
                .collect();
            let write = |threads: usize| {
                let opts = WriteOptions {
                    version: v,
                    max_page_bytes: 64 * 1024,
                    threads,
                    ..Default::default()
                };
                write_to_vec(batch.schema(), &batches, opts)
                    .unwrap_or_else(|e| panic!("{name} {v} threads {threads}: {e}"))
            };
            let one = write(1);
            for threads in [1, 2, 4, 4] {
                let other = write(threads);
                let at = one.iter().zip(&other).position(|(a, b)| a != b);
                assert!(
                    other == one,
                    "{name} {v}: {threads} threads wrote other bytes than 1 (sizes {} and {}, first difference at {at:?})",
                    one.len(),
                    other.len()
                );
            }
            if name == "wide" {
                // Many pages per column, and every value read back.
                let reader = FileReader::open(Arc::new(Bytes::from(one))).unwrap();
                let got = reader.read_all(None).unwrap();
                let pages: usize = reader
                    .metadata()
                    .columns
                    .iter()
                    .map(|c| c.pages.len())
                    .sum();
                assert!(pages > 30, "{name} {v}: only {pages} pages");
                for i in 0..batch.num_columns() {
                    assert!(
                        got.column(i).to_data() == batch.column(i).to_data(),
                        "{name} {v}: column {i} differs"
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} tables checked");
}

/// An encoding error on a worker thread ends the write with that error.
#[test]
fn encoding_errors_on_workers_end_the_write() {
    let (_, batch) = inputs()
        .into_iter()
        .find(|(n, _)| n == "packed_var")
        .unwrap();
    for threads in [1, 2, 4] {
        let opts = WriteOptions {
            version: FileVersion::V2_1,
            max_page_bytes: 1024,
            threads,
            ..Default::default()
        };
        let err = write_to_vec(batch.schema(), &[batch.clone(), batch.clone()], opts)
            .unwrap_err()
            .to_string();
        assert!(err.contains("2.2"), "threads {threads}: {err}");
    }
}
