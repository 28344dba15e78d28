//! Writing 2.0 files: Lancer's 2.0 output reads back unchanged in Lancer (whole and by
//! random takes) and in pylance 14, 12 and 11 (`scripts/check_lancer_files.py`), for
//! generated shapes (no rows, all null, one repeated value, every offset width,
//! nested lists and structs, many pages), every golden table pylance writes at 2.0,
//! and random tables of the property test's generator; what 2.0 cannot hold (maps,
//! struct nulls, fixed-size lists of strings) is refused naming a version that can.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, LargeListBuilder, ListBuilder, StringBuilder};
use arrow_array::*;
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};
use bytes::Bytes;
use lancer_format::container::FileVersion;
use lancer_format::reader::FileReader;
use lancer_format::writer::{write_to_vec, WriteOptions};
use lancer_format::FormatError;
use lancer_testkit::arrow::write_file as write_arrow;
use lancer_testkit::TempDir;

fn opts(page: u64) -> WriteOptions {
    WriteOptions {
        version: FileVersion::V2_0,
        max_page_bytes: page,
        ..Default::default()
    }
}

/// The same array without struct validity (2.0 stores none), at every depth.
fn strip_struct_nulls(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Struct(fields) => {
            let s = a.as_any().downcast_ref::<StructArray>().unwrap();
            let kids = s.columns().iter().map(strip_struct_nulls).collect();
            Arc::new(StructArray::new(fields.clone(), kids, None))
        }
        DataType::List(f) => {
            let l = a.as_any().downcast_ref::<ListArray>().unwrap();
            Arc::new(ListArray::new(
                f.clone(),
                l.offsets().clone(),
                strip_struct_nulls(l.values()),
                l.nulls().cloned(),
            ))
        }
        DataType::LargeList(f) => {
            let l = a.as_any().downcast_ref::<LargeListArray>().unwrap();
            Arc::new(LargeListArray::new(
                f.clone(),
                l.offsets().clone(),
                strip_struct_nulls(l.values()),
                l.nulls().cloned(),
            ))
        }
        _ => a.clone(),
    }
}

fn has_map(dt: &DataType) -> bool {
    match dt {
        DataType::Map(_, _) => true,
        DataType::Struct(fs) => fs.iter().any(|f| has_map(f.data_type())),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            has_map(f.data_type())
        }
        _ => false,
    }
}

/// The property test's random case `seed` made 2.0-shaped (no maps: `None`; struct
/// validity dropped), written at 2.0.
fn random_case(seed: u64) -> Option<(RecordBatch, Vec<RecordBatch>, WriteOptions)> {
    let (batch, _, o, _) = crate::random::case(seed);
    if batch
        .schema()
        .fields()
        .iter()
        .any(|f| has_map(f.data_type()))
    {
        return None;
    }
    let cols: Vec<ArrayRef> = batch.columns().iter().map(strip_struct_nulls).collect();
    let batch = RecordBatch::try_new(batch.schema(), cols).unwrap();
    let n = batch.num_rows();
    let step = 1 + (seed as usize * 7919) % n.max(1);
    let batches = (0..n)
        .step_by(step)
        .map(|s| batch.slice(s, step.min(n - s)))
        .collect();
    Some((batch, batches, opts(o.max_page_bytes)))
}

fn strings(n: usize, f: impl Fn(usize) -> Option<String>) -> StringArray {
    (0..n).map(f).collect()
}

/// Generated shapes, `n` rows: nullable ints, all-null columns, one repeated value,
/// strings and binaries of both offset widths (empty strings too), booleans, a
/// fixed-size list (nullable rows and items), a dictionary with nulls, the Null type,
/// nested lists (list of list, large list of strings), a struct holding a list and a
/// list of structs.
pub fn shapes(n: usize) -> RecordBatch {
    let ints = Int32Array::from_iter((0..n).map(|i| (i % 5 != 0).then_some(i as i32 * 31 - 7)));
    let all_null = Int64Array::new_null(n);
    let all_null_str = StringArray::new_null(n);
    let repeated = strings(n, |_| Some("the same".into()));
    let text = strings(n, |i| match i % 7 {
        0 => None,
        1 => Some(String::new()),
        _ => Some("x".repeat(i % 23) + &i.to_string()),
    });
    let large_text = arrow_cast::cast(&text, &DataType::LargeUtf8).unwrap();
    let bin = arrow_cast::cast(&text, &DataType::Binary).unwrap();
    let large_bin = arrow_cast::cast(&text, &DataType::LargeBinary).unwrap();
    let bools = BooleanArray::from_iter((0..n).map(|i| (i % 3 != 0).then_some(i % 2 == 0)));
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let fsl = FixedSizeListArray::new(
        item,
        3,
        Arc::new(Float32Array::from_iter(
            (0..n * 3).map(|i| (i % 4 != 1).then_some(i as f32 / 2.0)),
        )),
        Some(NullBuffer::from_iter((0..n).map(|i| i % 6 != 2))),
    );
    let dict: DictionaryArray<arrow_array::types::Int16Type> = (0..n)
        .map(|i| (i % 4 != 3).then(|| ["red", "green", "blue"][i % 3]))
        .collect();
    let mut lol = ListBuilder::new(ListBuilder::new(Int32Builder::new()));
    let mut lls = LargeListBuilder::new(StringBuilder::new());
    for i in 0..n {
        if i % 9 == 4 {
            lol.append_null();
            lls.append_null();
            continue;
        }
        for j in 0..(i % 3) {
            if (i + j) % 5 == 0 {
                lol.values().append_null();
            } else {
                for k in 0..(j + i % 2) {
                    lol.values().values().append_value((i * 10 + k) as i32);
                }
                lol.values().append(true);
            }
            lls.values().append_value(format!("s{i}-{j}"));
        }
        lol.append(true);
        lls.append(true);
    }
    let lol = lol.finish();
    let lls = lls.finish();
    // struct { a: int32, tags: list<utf8> }
    let tags = {
        let mut b = ListBuilder::new(StringBuilder::new());
        for i in 0..n {
            if i % 4 == 1 {
                b.append_null();
            } else {
                for j in 0..(i % 3) {
                    b.values().append_value(format!("t{j}"));
                }
                b.append(true);
            }
        }
        b.finish()
    };
    let st_fields = Fields::from(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("tags", tags.data_type().clone(), true),
    ]);
    let st = StructArray::new(
        st_fields,
        vec![
            Arc::new(Int32Array::from_iter(
                (0..n).map(|i| (i % 8 != 0).then_some(i as i32)),
            )),
            Arc::new(tags),
        ],
        None,
    );
    // list<struct { x: int64, s: large_utf8 }>
    let mut offs = vec![0i32];
    for i in 0..n {
        offs.push(offs[i] + (i % 4) as i32);
    }
    let m = *offs.last().unwrap() as usize;
    let inner_fields = Fields::from(vec![
        Field::new("x", DataType::Int64, true),
        Field::new("s", DataType::LargeUtf8, true),
    ]);
    let inner = StructArray::new(
        inner_fields.clone(),
        vec![
            Arc::new(Int64Array::from_iter(
                (0..m).map(|i| (i % 3 != 0).then_some(i as i64)),
            )),
            arrow_cast::cast(
                &strings(m, |i| (i % 5 != 0).then(|| format!("v{i}"))),
                &DataType::LargeUtf8,
            )
            .unwrap(),
        ],
        None,
    );
    let los = ListArray::new(
        Arc::new(Field::new("item", DataType::Struct(inner_fields), true)),
        OffsetBuffer::new(offs.into()),
        Arc::new(inner),
        Some(NullBuffer::from_iter((0..n).map(|i| i % 10 != 7))),
    );
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("ints", Arc::new(ints) as ArrayRef),
        ("all_null", Arc::new(all_null) as _),
        ("all_null_str", Arc::new(all_null_str) as _),
        ("repeated", Arc::new(repeated) as _),
        ("text", Arc::new(text) as _),
        ("large_text", large_text),
        ("bin", bin),
        ("large_bin", large_bin),
        ("bools", Arc::new(bools) as _),
        ("fsl", Arc::new(fsl) as _),
        ("dict", Arc::new(dict) as _),
        ("nulls", Arc::new(NullArray::new(n)) as _),
        ("list_of_lists", Arc::new(lol) as _),
        ("large_list_strings", Arc::new(lls) as _),
        ("st", Arc::new(st) as _),
        ("list_of_structs", Arc::new(los) as _),
    ];
    RecordBatch::try_from_iter_with_nullable(cols.into_iter().map(|(n, a)| (n, a, true))).unwrap()
}

/// Writes `batches` at 2.0 and checks Lancer reads back `want`: all of it and random
/// takes. Returns the file.
fn round_trip(
    label: &str,
    want: &RecordBatch,
    batches: &[RecordBatch],
    o: WriteOptions,
) -> Vec<u8> {
    let bytes =
        write_to_vec(want.schema(), batches, o).unwrap_or_else(|e| panic!("{label}: write: {e}"));
    let reader = FileReader::open(Arc::new(Bytes::from(bytes.clone())))
        .unwrap_or_else(|e| panic!("{label}: open: {e}"));
    assert_eq!(reader.metadata().version, FileVersion::V2_0, "{label}");
    let got = reader
        .read_all(None)
        .unwrap_or_else(|e| panic!("{label}: read: {e}"));
    assert_eq!(got.num_rows(), want.num_rows(), "{label}");
    for (i, f) in want.schema().fields().iter().enumerate() {
        let (g, w) = (got.column(i), want.column(i));
        if g.to_data() != w.to_data() {
            let row = (0..w.len()).find(|&r| g.slice(r, 1).to_data() != w.slice(r, 1).to_data());
            let show = |a: &ArrayRef| row.map(|r| format!("{:?}", a.slice(r, 1)));
            panic!(
                "{label}: column {} differs at row {row:?}:\n{:?}\nwant\n{:?}",
                f.name(),
                show(g),
                show(w)
            );
        }
    }
    let n = want.num_rows() as u64;
    if n > 0 {
        let idx: Vec<u64> = (0..n)
            .step_by(1 + (n as usize / 13))
            .chain([n - 1])
            .collect();
        let mut idx = idx;
        idx.dedup();
        let got = reader
            .take(&idx, None)
            .unwrap_or_else(|e| panic!("{label}: take: {e}"));
        let ids = UInt64Array::from(idx.clone());
        for i in 0..want.num_columns() {
            let w = arrow_select::take::take(want.column(i).as_ref(), &ids, None).unwrap();
            assert!(
                got.column(i).to_data() == w.to_data(),
                "{label}: take {idx:?} column {i}"
            );
        }
    }
    bytes
}

fn batches_of(b: &RecordBatch, step: usize) -> Vec<RecordBatch> {
    let n = b.num_rows();
    (0..n)
        .step_by(step.max(1))
        .map(|s| b.slice(s, step.max(1).min(n - s)))
        .collect()
}

/// Every 2.0 file this test writes, by stem, with the values it holds.
fn written() -> Vec<(String, RecordBatch, Vec<u8>)> {
    let mut out = Vec::new();
    for n in [0usize, 1, 7, 3000] {
        let b = shapes(n);
        for (tag, page) in [
            ("", lancer_format::writer::DEFAULT_MAX_PAGE_BYTES),
            (".smallpages", 4096),
        ] {
            let label = format!("shapes-{n}{tag}.v2.0");
            let bytes = round_trip(&label, &b, &batches_of(&b, 1 + n / 5), opts(page));
            out.push((label, b.clone(), bytes));
        }
    }
    for (name, b) in crate::roundtrip::inputs() {
        let label = format!("golden-{name}.v2.0");
        let b = RecordBatch::try_new(
            b.schema(),
            b.columns().iter().map(strip_struct_nulls).collect(),
        )
        .unwrap();
        match write_to_vec(b.schema(), std::slice::from_ref(&b), opts(16 * 1024)) {
            Ok(_) => {
                let bytes = round_trip(
                    &label,
                    &b,
                    &batches_of(&b, 1 + b.num_rows() / 3),
                    opts(16 * 1024),
                );
                out.push((label, b, bytes));
            }
            Err(e) => refused(&label, &b, &e),
        }
    }
    for seed in 1..=120 {
        let Some((b, batches, o)) = random_case(seed) else {
            continue;
        };
        let label = format!("random-{seed}.v2.0");
        match write_to_vec(b.schema(), &batches, o.clone()) {
            Ok(_) => {
                let bytes = round_trip(&label, &b, &batches, o);
                out.push((label, b, bytes));
            }
            Err(e) => refused(&label, &b, &e),
        }
    }
    out
}

/// A refusal must be of a type 2.0 cannot hold, naming the type and a version that can.
fn refused(label: &str, b: &RecordBatch, e: &FormatError) {
    let text = e.to_string();
    assert!(
        matches!(e, FormatError::UnsupportedType { .. }),
        "{label}: refused with {text}"
    );
    let why = b.schema().fields().iter().any(|f| needs_later(f));
    assert!(
        why,
        "{label}: nothing in {:?} needs a later version, yet: {text}",
        b.schema()
    );
    assert!(
        text.contains("2.1") || text.contains("2.2"),
        "{label}: no remedy in {text}"
    );
    eprintln!("{label}: refused as expected: {text}");
}

/// Fields Lancer does not write at 2.0: packed structs of other than whole-byte
/// fixed-width fields, and the types of [`cannot_2_0`].
fn needs_later(f: &Field) -> bool {
    let md = f.metadata();
    let packed = ["packed", "lance-encoding:packed"]
        .iter()
        .any(|k| md.contains_key(*k));
    let nested = match f.data_type() {
        DataType::Struct(fs) => fs.iter().any(|c| needs_later(c)),
        DataType::List(c) | DataType::LargeList(c) => needs_later(c),
        _ => false,
    };
    packed || nested || cannot_2_0(f.data_type())
}

/// Types 2.0 cannot hold (pylance refuses them at 2.0 too).
fn cannot_2_0(dt: &DataType) -> bool {
    match dt {
        DataType::Map(_, _) => true,
        DataType::FixedSizeList(f, _) => {
            !matches!(f.data_type(), DataType::FixedSizeList(_, _))
                && lancer_format::block::fixed_width_bits(f.data_type()).is_none()
                || cannot_2_0(f.data_type())
        }
        DataType::Struct(fs) => fs.iter().any(|f| cannot_2_0(f.data_type())),
        DataType::List(f) | DataType::LargeList(f) => cannot_2_0(f.data_type()),
        DataType::Dictionary(_, v) => {
            !matches!(
                v.as_ref(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
            ) && lancer_format::block::fixed_width_bits(v).is_none()
        }
        _ => false,
    }
}

#[test]
fn lancer_reads_its_2_0_files() {
    let files = written();
    assert!(files.len() > 40, "only {} files written", files.len());
    // Pages: the small-page shapes file holds several pages per column.
    let (_, _, bytes) = files
        .iter()
        .find(|(l, _, _)| l == "shapes-3000.smallpages.v2.0")
        .unwrap();
    let reader = FileReader::open(Arc::new(Bytes::from(bytes.clone()))).unwrap();
    let pages = reader
        .metadata()
        .columns
        .iter()
        .map(|c| c.pages.len())
        .max()
        .unwrap();
    assert!(
        pages >= 3,
        "the small-page file has at most {pages} pages per column"
    );
    // The blob column of the golden blob table is a 2.0 blob column: values out of line.
    let (_, _, bytes) = files
        .iter()
        .find(|(l, _, _)| l == "golden-blob.v2.0")
        .unwrap();
    let reader = FileReader::open(Arc::new(Bytes::from(bytes.clone()))).unwrap();
    let blob = reader.metadata().columns[0]
        .encoding
        .as_ref()
        .and_then(|e| e.column_encoding.as_ref());
    assert!(
        matches!(
            blob,
            Some(lancer_format::pb::enc20::column_encoding::ColumnEncoding::Blob(_))
        ),
        "{blob:?}"
    );
}

#[test]
fn two_point_o_refuses_what_it_cannot_hold() {
    let map = {
        let mut b =
            arrow_array::builder::MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
        b.keys().append_value("k");
        b.values().append_value(1);
        b.append(true).unwrap();
        b.finish()
    };
    let st = StructArray::new(
        Fields::from(vec![Field::new("a", DataType::Int32, true)]),
        vec![Arc::new(Int32Array::from(vec![1, 2]))],
        Some(NullBuffer::from(vec![true, false])),
    );
    let fsl_str = FixedSizeListArray::new(
        Arc::new(Field::new("item", DataType::Utf8, true)),
        1,
        Arc::new(StringArray::from(vec!["a", "b"])),
        None,
    );
    for (name, a, needs) in [
        ("map", Arc::new(map) as ArrayRef, "2.2"),
        ("nullable struct", Arc::new(st) as _, "2.1"),
        ("fixed-size list of strings", Arc::new(fsl_str) as _, "2.2"),
    ] {
        let b = RecordBatch::try_from_iter(vec![("c", a)]).unwrap();
        let e = write_to_vec(b.schema(), &[b], opts(1 << 20)).unwrap_err();
        assert!(
            matches!(e, FormatError::UnsupportedType { .. }),
            "{name}: {e}"
        );
        let text = e.to_string();
        assert!(
            text.contains("\"c\"") && text.contains(needs),
            "{name}: {text}"
        );
    }
}

#[test]
fn pylance_reads_lancer_2_0_files() {
    let dir = TempDir::new("format-written-2.0");
    let files = written();
    for (stem, b, bytes) in &files {
        std::fs::write(dir.join(format!("{stem}.lance")), bytes).unwrap();
        write_arrow(&dir.join(format!("{stem}.arrow")), b);
    }
    check_with_pylance(&dir);
}

fn check_with_pylance(dir: &Path) {
    let required = lancer_testkit::oracle::required();
    let mut ran = 0;
    for v in ["14", "12", "11"] {
        let Some(py) = lancer_testkit::pylance(v) else {
            eprintln!("pylance {v} not installed: its check of 2.0 files is skipped");
            continue;
        };
        // pylance {v} must read Lancer's 2.0 files as written (its check fails otherwise)
        let script = lancer_testkit::oracle::script("check_lancer_files.py");
        let text = lancer_testkit::oracle::run_python(&py, [script.as_path(), dir]);
        eprintln!("{text}");
        ran += 1;
    }
    assert!(ran > 0 || !required);
}
