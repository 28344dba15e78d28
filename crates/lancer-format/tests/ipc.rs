//! The guarded Arrow IPC reader (`lancer_format::ipc`): round trips of what arrow-ipc
//! writes, and ≥ 10,000 mutations each of IPC files and streams (plain and zstd
//! compressed, many column types) that must end in a batch or a typed error with
//! bounded allocation.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
    StringViewArray, StructArray, UInt32Array,
};
use arrow_ipc::writer::{FileWriter, IpcWriteOptions, StreamWriter};
use arrow_ipc::CompressionType;
use arrow_schema::{DataType, Field, Fields};
use lancer_format::ipc;

use crate::mutate::run;

/// Single allocations above this fail the test (inputs are a few KB).
const BOUND: usize = 64 << 20;
const MUTATIONS: usize = 10_000;

fn deletions(n: u32) -> RecordBatch {
    RecordBatch::try_from_iter([(
        "row_id",
        Arc::new(UInt32Array::from_iter_values((0..n).map(|i| i * 3))) as ArrayRef,
    )])
    .unwrap()
}

fn mixed(n: usize) -> RecordBatch {
    let mut lists = ListBuilder::new(StringBuilder::new());
    for i in 0..n {
        if i % 5 == 0 {
            lists.append_null();
        } else {
            for j in 0..i % 3 {
                lists.values().append_value(format!("v{j}"));
            }
            lists.append(true);
        }
    }
    let inner = StructArray::try_new(
        Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ]),
        vec![
            Arc::new(Int64Array::from_iter(
                (0..n as i64).map(|i| (i % 4 != 0).then_some(i)),
            )),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("s{i}")),
            )),
        ],
        Some((0..n).map(|i| i % 7 != 0).collect()),
    )
    .unwrap();
    let dict: DictionaryArray<Int32Type> =
        (0..n).map(|i| ["red", "green", "blue"][i % 3]).collect();
    RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..n as i64)) as ArrayRef,
        ),
        (
            "x",
            Arc::new(Float64Array::from_iter(
                (0..n).map(|i| (i % 3 != 0).then_some(i as f64)),
            )),
        ),
        (
            "name",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("name {i}")),
            )),
        ),
        ("tags", Arc::new(lists.finish())),
        ("s", Arc::new(inner)),
        ("color", Arc::new(dict)),
        (
            "view",
            Arc::new(StringViewArray::from_iter_values(
                (0..n).map(|i| format!("a longer string value number {i}")),
            )),
        ),
    ])
    .unwrap()
}

fn options(zstd: bool) -> IpcWriteOptions {
    let o = IpcWriteOptions::default();
    if zstd {
        o.try_with_compression(Some(CompressionType::ZSTD)).unwrap()
    } else {
        o
    }
}

fn file(batches: &[RecordBatch], zstd: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w =
        FileWriter::try_new_with_options(&mut out, &batches[0].schema(), options(zstd)).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    drop(w);
    out
}

fn stream(batches: &[RecordBatch], zstd: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w =
        StreamWriter::try_new_with_options(&mut out, &batches[0].schema(), options(zstd)).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    drop(w);
    out
}

fn seeds(write: fn(&[RecordBatch], bool) -> Vec<u8>) -> Vec<Vec<u8>> {
    vec![
        write(&[deletions(40)], false),
        write(&[deletions(200), deletions(3)], true),
        write(&[mixed(30)], false),
        write(&[mixed(20), mixed(7)], true),
    ]
}

/// Decodes everything; touching every value so lazily wrong data would show.
fn decode(bytes: &[u8]) -> Result<(), String> {
    let (schema, batches) = ipc::read_all(bytes).map_err(|e| e.to_string())?;
    for b in &batches {
        assert_eq!(b.schema().fields().len(), schema.fields().len());
        for c in b.columns() {
            let _ = c.to_data().get_slice_memory_size();
            let _ = c.null_count();
        }
    }
    Ok(())
}

#[test]
fn ipc_round_trips() {
    for zstd in [false, true] {
        let want = vec![mixed(25), mixed(3)];
        for bytes in [file(&want, zstd), stream(&want, zstd)] {
            let (schema, got) = ipc::read_all(&bytes).unwrap();
            assert_eq!(schema, want[0].schema());
            assert_eq!(got, want);
        }
    }
}

#[test]
fn mutated_ipc_files_end_in_errors_not_crashes() {
    let t = run(
        "ipc file",
        &seeds(file),
        MUTATIONS,
        BOUND,
        0x9E37_79B9_7F4A_7C15,
        decode,
    );
    assert!(t.errors > MUTATIONS / 4);
}

#[test]
fn mutated_ipc_streams_end_in_errors_not_crashes() {
    let t = run(
        "ipc stream",
        &seeds(stream),
        MUTATIONS,
        BOUND,
        0xD1B5_4A32_D192_ED03,
        decode,
    );
    assert!(t.errors > MUTATIONS / 4);
}

#[test]
fn ipc_length_prefix_and_block_lengths_are_bounded() {
    // A compressed buffer whose 8-byte prefix claims 2^52 bytes: refused before any
    // allocation (arrow-ipc would allocate it and abort the process).
    let bytes = stream(&[deletions(500)], true);
    let mut found = 0;
    let mut d = bytes.clone();
    // The first compressed buffer prefix holding 500*4 = 2000 (the values buffer).
    for p in 0..d.len() - 8 {
        if d[p..p + 8] == 2000u64.to_le_bytes() {
            d[p..p + 8].copy_from_slice(&(1u64 << 52).to_le_bytes());
            found += 1;
            break;
        }
    }
    assert_eq!(found, 1);
    let e = ipc::read_all(&d).unwrap_err().to_string();
    assert!(e.contains("decompressed"), "{e}");
}
