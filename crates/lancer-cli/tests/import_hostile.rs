//! `lancer import`'s readers on hostile input, in process: at least 10,000 mutations
//! each of Arrow IPC files, Arrow IPC streams, Parquet (and 1,000 of Parquet files read
//! through the mapping `import` uses), CSV and JSON lines must end in
//! batches or a typed `InputError` — no panic escaping, no abort, every single
//! allocation bounded (the tracking allocator of lancer-format's tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../lancer-format/tests/alloc.rs"]
mod alloc;
#[path = "../../lancer-format/tests/mutate.rs"]
mod mutate;

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use lancer_cli::input::{open, open_parquet, Format};
use lancer_testkit::TempDir;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use mutate::run;

const BOUND: usize = 64 << 20;
const MUTATIONS: usize = 10_000;

fn batch(start: i64, n: usize) -> RecordBatch {
    RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(start..start + n as i64)) as ArrayRef,
        ),
        (
            "price",
            Arc::new(Float64Array::from_iter(
                (0..n).map(|i| (i % 4 != 0).then_some(i as f64 * 1.5)),
            )),
        ),
        (
            "name",
            Arc::new(StringArray::from_iter((0..n).map(|i| {
                (i % 6 != 0).then(|| ["ann", "bob", "cy"][i % 3].to_string())
            }))),
        ),
    ])
    .unwrap()
}

fn read_all(format: Format, bytes: &[u8]) -> Result<(), String> {
    let input = if format == Format::Parquet {
        open_parquet("in.parquet", bytes::Bytes::copy_from_slice(bytes))
    } else {
        open(
            "in",
            format,
            Cursor::new(bytes.to_vec()),
            bytes.len() as u64,
        )
    }
    .map_err(|e| e.to_string())?;
    for b in input.batches {
        let b = b.map_err(|e| e.to_string())?;
        assert_eq!(b.schema().fields().len(), input.schema.fields().len());
    }
    Ok(())
}

fn ipc(stream: bool, zstd: bool) -> Vec<u8> {
    let mut o = arrow_ipc::writer::IpcWriteOptions::default();
    if zstd {
        o = o
            .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
            .unwrap();
    }
    let (a, b) = (batch(0, 60), batch(60, 25));
    let mut out = Vec::new();
    if stream {
        let mut w = arrow_ipc::writer::StreamWriter::try_new_with_options(&mut out, &a.schema(), o)
            .unwrap();
        w.write(&a).unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
    } else {
        let mut w =
            arrow_ipc::writer::FileWriter::try_new_with_options(&mut out, &a.schema(), o).unwrap();
        w.write(&a).unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
    }
    out
}

fn parquet(compression: Compression, dictionary: bool) -> Vec<u8> {
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_dictionary_enabled(dictionary)
        .set_max_row_group_row_count(Some(50))
        .set_data_page_row_count_limit(20)
        .build();
    let a = batch(0, 120);
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, a.schema(), Some(props)).unwrap();
    w.write(&a).unwrap();
    w.close().unwrap();
    out
}

#[test]
fn mutated_arrow_ipc_files() {
    let seeds = vec![ipc(false, false), ipc(false, true)];
    run("import arrow file", &seeds, MUTATIONS, BOUND, 0x11, |b| {
        read_all(Format::ArrowIpc, b)
    });
}

#[test]
fn mutated_arrow_ipc_streams() {
    let seeds = vec![ipc(true, false), ipc(true, true)];
    run("import arrow stream", &seeds, MUTATIONS, BOUND, 0x22, |b| {
        read_all(Format::ArrowIpc, b)
    });
}

#[test]
fn mutated_parquet_files() {
    let seeds = vec![
        parquet(Compression::UNCOMPRESSED, false),
        parquet(Compression::SNAPPY, true),
        parquet(Compression::ZSTD(Default::default()), true),
    ];
    run("import parquet", &seeds, MUTATIONS, BOUND, 0x33, |b| {
        read_all(Format::Parquet, b)
    });
}

/// The reader `lancer import` uses for a Parquet file on disk (a read-only mapping):
/// mutated files written out and read through it end in batches or an error too.
#[test]
fn mutated_parquet_files_mapped() {
    let seeds = vec![
        parquet(Compression::UNCOMPRESSED, false),
        parquet(Compression::SNAPPY, true),
    ];
    let dir = TempDir::new("cli-import-mapped");
    // A new file per mutation: a decoder thread of the previous one may still be reading
    // its mapping (unlinking keeps a mapped file readable; truncating it would not).
    let n = std::cell::Cell::new(0u64);
    run(
        "import parquet (mapped)",
        &seeds,
        MUTATIONS / 10,
        BOUND,
        0x66,
        |b| {
            n.set(n.get() + 1);
            let path = dir.join(format!("in-{}.parquet", n.get()));
            std::fs::write(&path, b).map_err(|e| e.to_string())?;
            let _ = std::fs::remove_file(dir.join(format!("in-{}.parquet", n.get() - 1)));
            let f = lancer_cli::input::MappedFile::open(&path).map_err(|e| e.to_string())?;
            let input = open_parquet("in.parquet", f).map_err(|e| e.to_string())?;
            for batch in input.batches {
                batch.map_err(|e| e.to_string())?;
            }
            Ok(())
        },
    );
}

#[test]
fn mutated_csv_files() {
    let seeds = vec![
        b"id,price,name\n1,2.5,ann\n2,,bob\n3,4e3,\"c,y\"\n4,5,\n".to_vec(),
        b"a,b,c,d\n1,true,2024-01-02,x\n2,false,2024-02-03,\"multi\nline\"\n".to_vec(),
    ];
    run("import csv", &seeds, MUTATIONS, BOUND, 0x44, |b| {
        read_all(Format::Csv, b)
    });
}

#[test]
fn mutated_json_lines() {
    let seeds = vec![
        b"{\"id\":1,\"name\":\"ann\",\"tags\":[\"a\",\"b\"],\"m\":{\"x\":1.5}}\n{\"id\":2,\"name\":null,\"tags\":[],\"m\":{\"x\":null}}\n".to_vec(),
        b"{\"a\":true,\"b\":[1,2,3],\"c\":\"2024-01-01\"}\n{\"a\":false,\"b\":null,\"c\":\"x\"}\n".to_vec(),
    ];
    run("import jsonl", &seeds, MUTATIONS, BOUND, 0x55, |b| {
        read_all(Format::Jsonl, b)
    });
}
