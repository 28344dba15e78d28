//! Lancer writes a dataset (storage 2.0, 2.1, 2.2) through create, append, delete,
//! append, tag, overwrite, delete and restore; every version reads back as expected in Lancer, and in pylance
//! 14, 12 and 11, which then append to it — and Lancer reads what pylance wrote.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::*;
use arrow_schema::{DataType, Field, Schema};
use lancer_table::versions::create_tag;
use lancer_table::write::WriteParams;
use lancer_table::Dataset;

use crate::common::{pylance, repo, TempDir};

fn table(start: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n as i64).collect();
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
        Field::new(
            "tags",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            true,
        ),
        Field::new("vec", DataType::FixedSizeList(item.clone(), 8), true),
    ]));
    let mut tags =
        arrow_array::builder::ListBuilder::new(arrow_array::builder::StringBuilder::new());
    for &i in &ids {
        for j in 0..i % 3 {
            tags.values().append_value(format!("t{j}"));
        }
        tags.append(true);
    }
    let vec: Vec<f32> = ids
        .iter()
        .flat_map(|&i| (0..8).map(move |k| (i * 8 + k) as f32 / 3.0))
        .collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("row-{i}")),
            )),
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|&i| i as f64 * 0.5),
            )),
            Arc::new(tags.finish()),
            Arc::new(FixedSizeListArray::new(
                item,
                8,
                Arc::new(Float32Array::from(vec)),
                None,
            )),
        ],
    )
    .unwrap()
}

fn keep(b: &RecordBatch, f: impl Fn(i64) -> bool) -> RecordBatch {
    let ids = b.column(0).as_primitive::<Int64Type>();
    let mask = BooleanArray::from_iter(ids.values().iter().map(|&i| Some(f(i))));
    arrow_select::filter::filter_record_batch(b, &mask).unwrap()
}

fn concat(parts: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(&parts[0].schema(), parts).unwrap()
}

fn write_arrow(p: &Path, b: &RecordBatch) {
    let f = std::fs::File::create(p).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &b.schema()).unwrap();
    w.write(b).unwrap();
    w.finish().unwrap();
}

fn ids_where(pred: fn(i64) -> bool) -> impl Fn(&RecordBatch) -> lancer_table::Result<BooleanArray> {
    move |b: &RecordBatch| {
        let ids = b.column(0).as_primitive::<Int64Type>();
        Ok(BooleanArray::from_iter(
            ids.values().iter().map(|&i| Some(pred(i))),
        ))
    }
}

#[test]
fn lancer_datasets_read_in_lancer_and_pylance() {
    for (label, storage) in [
        ("v20", lancer_format::container::FileVersion::V2_0),
        ("v21", lancer_format::container::FileVersion::V2_1),
        ("v22", lancer_format::container::FileVersion::V2_2),
    ] {
        // check_lancer_dataset.py writes pylance's copies beside `root`: in `scratch`
        let scratch = TempDir::new(&format!("table-history-{label}"));
        let root = scratch.join("history");
        let exp = scratch.join("history.expected");
        std::fs::create_dir_all(&exp).unwrap();
        let params = WriteParams {
            storage,
            max_rows_per_file: 400,
            ..Default::default()
        };
        let mut expected: Vec<(u64, RecordBatch)> = Vec::new();
        let check = |ds: &Dataset, want: &RecordBatch, expected: &mut Vec<(u64, RecordBatch)>| {
            let got = ds.to_batch(None).unwrap();
            assert_eq!(got.columns(), want.columns(), "{label} v{}", ds.version());
            assert_eq!(ds.count_rows(), want.num_rows() as u64);
            expected.push((ds.version(), want.clone()));
        };
        let t0 = table(0, 1000);
        let ds = Dataset::write(&root, t0.schema(), std::slice::from_ref(&t0), &params).unwrap();
        check(&ds, &t0, &mut expected);
        let t1 = table(1000, 500);
        let ds = ds.append(std::slice::from_ref(&t1), &params).unwrap();
        let mut cur = concat(&[t0, t1]);
        check(&ds, &cur, &mut expected);
        let ds = ds
            .delete_where("id % 7 = 0", ids_where(|i| i % 7 == 0))
            .unwrap();
        cur = keep(&cur, |i| i % 7 != 0);
        check(&ds, &cur, &mut expected);
        let t2 = table(1500, 300);
        let ds = ds.append(std::slice::from_ref(&t2), &params).unwrap();
        cur = concat(&[cur, t2]);
        check(&ds, &cur, &mut expected);
        let tagged = ds.version();
        create_tag(
            &lancer_io::Store::local(&root),
            "before_overwrite",
            tagged,
            0,
        )
        .unwrap();
        let t3 = table(5000, 700);
        let ds = Dataset::write(&root, t3.schema(), std::slice::from_ref(&t3), &params).unwrap();
        check(&ds, &t3, &mut expected);
        let ds = ds
            .delete_where("id % 3 != 0", ids_where(|i| i % 3 != 0))
            .unwrap();
        check(&ds, &keep(&t3, |i| i % 3 == 0), &mut expected);
        let restored_want = expected
            .iter()
            .find(|(v, _)| *v == tagged)
            .unwrap()
            .1
            .clone();
        let ds = ds.restore(tagged).unwrap();
        check(&ds, &restored_want, &mut expected);
        // Fragment ids keep rising across overwrite and restore.
        let ids: Vec<u64> = Dataset::open_version(&root, 5)
            .unwrap()
            .fragments()
            .iter()
            .map(|f| f.id)
            .collect();
        assert!(ids.iter().all(|&i| i >= 6), "{ids:?}");
        assert!(
            Dataset::open_tag(&root, "before_overwrite")
                .unwrap()
                .version()
                == tagged
        );

        let mut versions = Vec::new();
        for (v, b) in &expected {
            write_arrow(&exp.join(format!("v{v}.arrow")), b);
            versions.push(serde_json::json!({"version": v, "rows": b.num_rows()}));
        }
        let index = serde_json::json!({"versions": versions, "tags": {"before_overwrite": tagged}});
        std::fs::write(exp.join("index.json"), index.to_string()).unwrap();

        for v in ["14", "12", "11"] {
            let Some(py) = pylance(v) else { continue };
            // pylance {v} must agree on {label} (the script fails where it does not)
            check_with_pylance(&py, &root, &exp);
            // Lancer reads what pylance appended.
            let copy = PathBuf::from(format!("{}.pylance-{v}", root.display()));
            let info: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(format!("{}.expected.json", copy.display())).unwrap(),
            )
            .unwrap();
            let ds = Dataset::open(&copy).unwrap();
            assert_eq!(ds.version(), info["version"].as_u64().unwrap());
            assert_eq!(ds.count_rows(), info["rows"].as_u64().unwrap());
            let f = std::fs::File::open(format!("{}.expected.arrow", copy.display())).unwrap();
            let r = arrow_ipc::reader::FileReader::try_new(f, None).unwrap();
            let s = r.schema();
            let want = arrow_select::concat::concat_batches(
                &s,
                &r.map(|b| b.unwrap()).collect::<Vec<_>>(),
            )
            .unwrap();
            let got = ds.to_batch(None).unwrap();
            assert_eq!(
                got.columns(),
                want.columns(),
                "Lancer reading pylance {v}'s append to {label}"
            );
        }
    }
}

/// `write_stream` reads its input on the calling thread while another thread writes:
/// the input need not be `Send` (here it counts batches in an `Rc`), every row arrives
/// across several files in order, and an error from the input stops the write with
/// that error and commits nothing.
#[test]
fn streamed_writes_read_ahead_and_stop_on_input_errors() {
    let root = TempDir::new("table-stream-read-ahead");
    let params = WriteParams {
        max_rows_per_file: 2_500,
        ..Default::default()
    };
    let batches: Vec<RecordBatch> = (0..20).map(|k| table(k * 500, 500)).collect();
    let schema = batches[0].schema();
    let seen = std::rc::Rc::new(std::cell::Cell::new(0));
    let counter = seen.clone();
    let input = batches.clone().into_iter().map(move |b| {
        counter.set(counter.get() + 1);
        Ok(b)
    });
    let ds = Dataset::write_stream(&root, schema.clone(), input, &params).unwrap();
    assert_eq!(seen.get(), 20);
    assert_eq!(ds.count_rows(), 10_000);
    assert_eq!(ds.fragments().len(), 4);
    let got = ds.to_batch(None).unwrap();
    let want = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    assert_eq!(got.columns(), want.columns());

    // An input error after some batches: the error comes back, no new version.
    let failing = batches.into_iter().enumerate().map(|(k, b)| {
        if k == 7 {
            Err(lancer_table::TableError::corrupt("input broke at batch 7"))
        } else {
            Ok(b)
        }
    });
    let Err(err) = Dataset::write_stream(&root, schema, failing, &params) else {
        panic!("a failing input was committed");
    };
    let err = err.to_string();
    assert!(err.contains("input broke at batch 7"), "{err}");
    assert_eq!(Dataset::open(&root).unwrap().version(), ds.version());
}

/// `max_bytes_per_file` is checked as pylance checks it: after each input batch,
/// against what pylance's writer has written by then (a column's rows go to the encoder
/// in pieces of over 8 MiB). So a small write under a tiny cap stays one file, as in
/// pylance; a large one in 64K-row batches closes each file at the first batch after a
/// piece went out; one batch is never cut for bytes; pylance 14 reads the same rows.
#[test]
fn byte_capped_writes_cut_files_where_pylance_cuts_them() {
    let base = TempDir::new("table-byte-cap");
    let small: Vec<RecordBatch> = (0..5).map(|k| table(k * 8_000, 8_000)).collect();
    let tiny = WriteParams {
        max_bytes_per_file: 1000,
        ..Default::default()
    };
    let ds = Dataset::write(base.join("small"), small[0].schema(), &small, &tiny).unwrap();
    assert_eq!(
        ds.fragments().len(),
        1,
        "a small write under a tiny cap is one file"
    );

    // one int64 column, 65,536 rows (512 KiB) per batch: the column's first piece goes
    // out with batch 17 (16 x 512 KiB is 8 MiB, not over it), as pylance 14 cuts it
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let batch = |k: i64| {
        let v: Int64Array = (0..65_536i64)
            .map(|i| (k * 65_536 + i).wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64))
            .collect();
        RecordBatch::try_new(schema.clone(), vec![Arc::new(v)]).unwrap()
    };
    let batches: Vec<RecordBatch> = (0..40).map(batch).collect();
    let capped = WriteParams {
        max_bytes_per_file: 8 << 20,
        max_rows_per_file: usize::MAX >> 1,
        ..Default::default()
    };
    let ds = Dataset::write(base.join("capped"), schema.clone(), &batches, &capped).unwrap();
    let rows: Vec<u64> = ds.fragments().iter().map(|f| f.physical_rows).collect();
    assert_eq!(rows, vec![17 * 65_536, 17 * 65_536, 6 * 65_536]);
    let whole = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    let one = Dataset::write(base.join("one"), schema.clone(), &[whole], &capped).unwrap();
    assert_eq!(one.fragments().len(), 1, "one batch is never cut for bytes");
    if let Some(py) = pylance("14") {
        let out = Command::new(py)
            .arg("-c")
            .arg("import lance, sys\nds = lance.dataset(sys.argv[1])\nt = ds.to_table()\nprint(t.num_rows, len(ds.get_fragments()))")
            .arg(base.join("capped"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("{} 3", 40 * 65_536)
        );
    }
}

/// A 2.0 dataset written by Lancer goes through add columns (a struct holding a list:
/// 2.0 data files give structs and lists columns of their own), update (rewritten rows)
/// and compaction (deletions materialized), all in 2.0 files; the last version holds
/// exactly the rows and values those steps make, and pylance 14, 12 and 11 read every
/// version as Lancer does.
#[test]
fn a_2_0_dataset_evolves_and_pylance_reads_it() {
    use lancer_format::container::FileVersion;
    use lancer_table::TableError;
    let scratch = TempDir::new("table-evolve-2.0");
    let root = scratch.join("evolved");
    let exp = scratch.join("evolved.expected");
    std::fs::create_dir_all(&exp).unwrap();
    let params = WriteParams {
        storage: FileVersion::V2_0,
        max_rows_per_file: 300,
        ..Default::default()
    };
    let t0 = table(0, 900);
    let mut versions = Vec::new();
    let ds = Dataset::write(&root, t0.schema(), std::slice::from_ref(&t0), &params).unwrap();
    versions.push(ds.version());
    let ds = ds
        .delete_where("id % 5 = 0", ids_where(|i| i % 5 == 0))
        .unwrap();
    versions.push(ds.version());
    let tag_type = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
    let st_type = DataType::Struct(
        vec![
            Field::new("a", DataType::Int64, true),
            Field::new("l", tag_type.clone(), true),
        ]
        .into(),
    );
    let added = Arc::new(Schema::new(vec![
        Field::new("double", DataType::Int64, true),
        Field::new("st", st_type.clone(), true),
    ]));
    let ds = ds
        .add_columns_with(added.clone(), Some(&["id"]), |b: &RecordBatch| {
            let ids = b.column(0).as_primitive::<Int64Type>();
            let mut l =
                arrow_array::builder::ListBuilder::new(arrow_array::builder::StringBuilder::new());
            for &i in ids.values() {
                for k in 0..i % 3 {
                    l.values().append_value(format!("s{k}"));
                }
                l.append(i % 11 != 0);
            }
            let DataType::Struct(fs) = &st_type else {
                unreachable!()
            };
            let st = StructArray::new(
                fs.clone(),
                vec![
                    Arc::new(Int64Array::from_iter_values(
                        ids.values().iter().map(|i| i + 1),
                    )),
                    Arc::new(l.finish()),
                ],
                None,
            );
            Ok::<_, TableError>(
                RecordBatch::try_new(
                    added.clone(),
                    vec![
                        Arc::new(Int64Array::from_iter_values(
                            ids.values().iter().map(|i| i * 2),
                        )),
                        Arc::new(st),
                    ],
                )
                .unwrap(),
            )
        })
        .unwrap();
    versions.push(ds.version());
    let (ds, _) = ds
        .update_rows(
            &["score"],
            Some(&["id"]),
            |b: &RecordBatch| {
                let ids = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                Ok::<_, TableError>(BooleanArray::from_iter(
                    ids.values().iter().map(|&i| Some(i % 7 == 0)),
                ))
            },
            |b: &RecordBatch| {
                let i = b.schema().index_of("score").unwrap();
                let mut cols = b.columns().to_vec();
                cols[i] = Arc::new(Float64Array::from(vec![-1.0; b.num_rows()]));
                Ok::<_, TableError>(RecordBatch::try_new(b.schema(), cols).unwrap())
            },
        )
        .unwrap();
    versions.push(ds.version());
    let (ds, _) = ds.compact_files(&Default::default(), &|_, _| {}).unwrap();
    versions.push(ds.version());
    assert!(
        ds.fragments().len() < 4,
        "compaction left {} fragments",
        ds.fragments().len()
    );
    for f in ds.fragments() {
        for d in &f.files {
            assert_eq!((d.file_major_version, d.file_minor_version), (2, 0));
        }
    }
    // The last version: the rows the steps leave, with the values they give.
    let got = ds.to_batch(None).unwrap();
    let col = |n: &str| got.column_by_name(n).unwrap().clone();
    let ids = col("id");
    let ids = ids.as_primitive::<Int64Type>();
    let mut seen: Vec<i64> = ids.values().to_vec();
    seen.sort();
    let want: Vec<i64> = (0..900).filter(|i| i % 5 != 0).collect();
    assert_eq!(seen, want);
    let score = col("score");
    let double = col("double");
    let st = col("st");
    let st = st.as_struct();
    for r in 0..got.num_rows() {
        let i = ids.value(r);
        let s = score
            .as_primitive::<arrow_array::types::Float64Type>()
            .value(r);
        assert_eq!(s, if i % 7 == 0 { -1.0 } else { i as f64 * 0.5 }, "id {i}");
        assert_eq!(double.as_primitive::<Int64Type>().value(r), i * 2);
        assert_eq!(st.column(0).as_primitive::<Int64Type>().value(r), i + 1);
        let l = st.column(1).as_list::<i32>();
        assert_eq!(l.is_valid(r), i % 11 != 0, "id {i}");
        if l.is_valid(r) {
            assert_eq!(l.value(r).len() as i64, i % 3, "id {i}");
        }
    }
    let mut listed = Vec::new();
    for v in &versions {
        let b = Dataset::open_version(&root, *v)
            .unwrap()
            .to_batch(None)
            .unwrap();
        write_arrow(&exp.join(format!("v{v}.arrow")), &b);
        listed.push(serde_json::json!({"version": v, "rows": b.num_rows()}));
    }
    let index = serde_json::json!({"versions": listed, "tags": {}});
    std::fs::write(exp.join("index.json"), index.to_string()).unwrap();
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        // pylance {v} must agree on the evolved 2.0 dataset
        check_with_pylance(&py, &root, &exp);
    }
}

/// Runs `scripts/check_lancer_dataset.py ROOT EXPECTED` with pylance `py`, which must
/// succeed (it fails naming each version, row or tag pylance reads otherwise).
fn check_with_pylance(py: &Path, root: &Path, exp: &Path) {
    let script = repo().join("scripts/check_lancer_dataset.py");
    let text = lancer_testkit::oracle::run_python(py, [script.as_path(), root, exp]);
    eprintln!("{text}");
}
