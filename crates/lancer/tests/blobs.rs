//! Blob v2 writes and the blob API: payloads placed by the column's thresholds
//! (inline / packed / dedicated / external, each boundary and one byte either side),
//! packed sidecars rolled over at their size limit, appends, deletions, several
//! fragments, compaction and cleanup keeping sidecars consistent, and the read calls
//! (`read_blobs`, `read_blob_ranges`, `take_blobs`) against the written bytes.
//! pylance's reading of these datasets: python/tests/test_blobs.py.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{LargeBinaryBuilder, StringBuilder, UInt64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancer::blobs::{self, Selection, Selector};
use lancer::{Dataset, FileVersion, WriteParams};

use crate::common::TempDir;

/// A blob value of the input.
#[derive(Clone)]
enum V {
    Null,
    Data(Vec<u8>),
    Uri(String, Option<(u64, u64)>),
}

fn blob_field(name: &str, md: &[(&str, &str)]) -> Field {
    let mut m: HashMap<String, String> = md
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    m.insert("ARROW:extension:name".into(), "lance.blob.v2".into());
    m.insert("ARROW:extension:metadata".into(), String::new());
    Field::new(
        name,
        DataType::Struct(
            vec![
                Field::new("data", DataType::LargeBinary, true),
                Field::new("uri", DataType::Utf8, true),
                Field::new("position", DataType::UInt64, true),
                Field::new("size", DataType::UInt64, true),
            ]
            .into(),
        ),
        true,
    )
    .with_metadata(m)
}

fn blob_array(vals: &[V]) -> ArrayRef {
    let mut d = LargeBinaryBuilder::new();
    let mut u = StringBuilder::new();
    let mut p = UInt64Builder::new();
    let mut z = UInt64Builder::new();
    let mut valid = Vec::new();
    for v in vals {
        match v {
            V::Null => {
                d.append_null();
                u.append_null();
                p.append_null();
                z.append_null();
            }
            V::Data(b) => {
                d.append_value(b);
                u.append_null();
                p.append_null();
                z.append_null();
            }
            V::Uri(s, r) => {
                d.append_null();
                u.append_value(s);
                p.append_option(r.map(|r| r.0));
                z.append_option(r.map(|r| r.1));
            }
        }
        valid.push(!matches!(v, V::Null));
    }
    let DataType::Struct(fs) = blob_field("b", &[]).data_type().clone() else {
        unreachable!()
    };
    Arc::new(StructArray::new(
        fs,
        vec![
            Arc::new(d.finish()),
            Arc::new(u.finish()),
            Arc::new(p.finish()),
            Arc::new(z.finish()),
        ],
        Some(valid.into()),
    ))
}

fn table(first_id: i64, vals: &[V], md: &[(&str, &str)]) -> (SchemaRef, RecordBatch) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        blob_field("b", md),
    ]));
    let ids = Int64Array::from_iter_values(first_id..first_id + vals.len() as i64);
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), blob_array(vals)]).unwrap();
    (schema, batch)
}

fn params() -> WriteParams {
    WriteParams {
        storage: FileVersion::V2_2,
        ..Default::default()
    }
}

/// Rows chosen by index among live rows.
fn indices(rows: &[u64]) -> Selection<'_> {
    Selection {
        selector: Selector::Indices,
        rows,
    }
}

/// A payload of `n` bytes that differs by `seed` and by position.
fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A stored descriptor: kind, position, size, blob id, uri.
type Desc = (u8, u64, u64, u32, String);

/// Every row's descriptor as stored.
fn descriptors(ds: &Dataset) -> Vec<Option<Desc>> {
    let d = ds.with_blob_descriptions();
    let batch = d.to_batch(Some(&["b"])).unwrap();
    let s = batch.column(0).as_struct();
    (0..s.len())
        .map(|i| {
            s.is_valid(i).then(|| {
                (
                    s.column(0).as_primitive::<UInt8Type>().value(i),
                    s.column(1).as_primitive::<UInt64Type>().value(i),
                    s.column(2).as_primitive::<UInt64Type>().value(i),
                    s.column(3).as_primitive::<UInt32Type>().value(i),
                    s.column(4).as_string::<i32>().value(i).to_string(),
                )
            })
        })
        .collect()
}

/// The payloads a scan returns, as bytes.
fn payloads(ds: &Dataset) -> Vec<Option<Vec<u8>>> {
    let batch = ds.to_batch(Some(&["b"])).unwrap();
    let b = batch.column(0).as_binary::<i64>();
    (0..b.len())
        .map(|i| b.is_valid(i).then(|| b.value(i).to_vec()))
        .collect()
}

fn expected(vals: &[V]) -> Vec<Option<Vec<u8>>> {
    vals.iter()
        .map(|v| match v {
            V::Null => None,
            V::Data(b) => Some(b.clone()),
            V::Uri(..) => panic!("external values are checked apart"),
        })
        .collect()
}

/// `ds` compacted with deleted rows materialized (every fragment rewritten).
fn compacted(ds: &Dataset) -> Dataset {
    let opts = lancer_table::evolution::CompactionOptions {
        materialize_deletions_threshold: 0.0,
        ..Default::default()
    };
    lancer::write::compact_files(ds, &opts, &|_, _| {})
        .unwrap()
        .0
}

/// The sidecar files of the dataset, by name, with their sizes (sorted).
fn sidecars(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir.join("data")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            for f in std::fs::read_dir(e.path()).unwrap() {
                let f = f.unwrap();
                let name = format!(
                    "{}/{}",
                    e.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                );
                out.push((name, f.metadata().unwrap().len()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn payloads_are_placed_by_the_columns_thresholds() {
    let tmp = TempDir::new("blob-thresholds");
    // each threshold, one byte either side, empty, null (pylance 14 placed these sizes
    // so: 256 inline, 257 packed, 1024 packed, 1025 dedicated)
    let sizes = [0usize, 1, 255, 256, 257, 1023, 1024, 1025, 4000];
    let mut vals: Vec<V> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| V::Data(bytes(n, i as u8)))
        .collect();
    vals.insert(3, V::Null);
    let md = [
        ("lance-encoding:blob-inline-size-threshold", "256"),
        ("lance-encoding:blob-dedicated-size-threshold", "1024"),
    ];
    let (schema, batch) = table(0, &vals, &md);
    let ds = Dataset::write(tmp.path(), schema, &[batch], &params()).unwrap();
    assert_eq!(payloads(&ds), expected(&vals));
    let kinds: Vec<Option<u8>> = descriptors(&ds)
        .iter()
        .map(|d| d.as_ref().map(|d| d.0))
        .collect();
    let want: Vec<Option<u8>> = vec![
        Some(0),
        Some(0),
        Some(0),
        None,
        Some(0),
        Some(1),
        Some(1),
        Some(1),
        Some(2),
        Some(2),
    ];
    assert_eq!(kinds, want);
    // one packed sidecar (257 + 1023 + 1024 bytes, in row order) and two dedicated ones
    let files = sidecars(tmp.path());
    let sizes: Vec<u64> = files.iter().map(|f| f.1).collect();
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(sizes.contains(&(257 + 1023 + 1024)) && sizes.contains(&1025) && sizes.contains(&4000));
    let desc = descriptors(&ds);
    let packed: Vec<(u64, u64, u32)> = desc
        .iter()
        .flatten()
        .filter(|d| d.0 == 1)
        .map(|d| (d.1, d.2, d.3))
        .collect();
    assert_eq!(packed, vec![(0, 257, 1), (257, 1023, 1), (1280, 1024, 1)]);
    // the schema the dataset records is the logical one, thresholds kept
    let f = &ds.manifest().schema.fields[1];
    assert!(f.is_blob_v2());
    assert_eq!(
        f.children
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["data", "uri", "position", "size"]
    );
    assert_eq!(
        f.metadata
            .get("lance-encoding:blob-dedicated-size-threshold")
            .map(String::as_str),
        Some("1024")
    );
}

#[test]
fn packed_sidecars_roll_over_and_defaults_match_pylance() {
    let tmp = TempDir::new("blob-pack");
    let vals: Vec<V> = (0..10).map(|i| V::Data(bytes(300, i))).collect();
    let md = [
        ("lance-encoding:blob-inline-size-threshold", "0"),
        ("lance-encoding:blob-dedicated-size-threshold", "1000"),
    ];
    let (schema, batch) = table(0, &vals, &md);
    let mut p = params();
    p.blobs.pack_file_size_threshold = Some(1000);
    let ds = Dataset::write(tmp.path(), schema, &[batch], &p).unwrap();
    assert_eq!(payloads(&ds), expected(&vals));
    // three 300-byte payloads per 1000-byte pack (a fourth would pass it): 4 packs
    let mut sizes: Vec<u64> = sidecars(tmp.path()).iter().map(|f| f.1).collect();
    sizes.sort();
    assert_eq!(sizes, vec![300, 900, 900, 900]);
    let ids: Vec<u32> = descriptors(&ds).iter().flatten().map(|d| d.3).collect();
    assert_eq!(ids, vec![1, 1, 1, 2, 2, 2, 3, 3, 3, 4]);

    // defaults: 64 KiB inline, 4 MiB packed, more dedicated
    let tmp = TempDir::new("blob-defaults");
    let k = 1024;
    let vals: Vec<V> = [64 * k, 64 * k + 1, 4 * k * k, 4 * k * k + 1]
        .iter()
        .enumerate()
        .map(|(i, &n)| V::Data(bytes(n, i as u8)))
        .collect();
    let (schema, batch) = table(0, &vals, &[]);
    let ds = Dataset::write(tmp.path(), schema, &[batch], &params()).unwrap();
    let kinds: Vec<u8> = descriptors(&ds).iter().flatten().map(|d| d.0).collect();
    assert_eq!(kinds, vec![0, 1, 1, 2]);
    assert_eq!(payloads(&ds), expected(&vals));
}

#[test]
fn binary_blob_columns_are_blob_v2_at_2_2_and_legacy_below() {
    let field = Field::new("b", DataType::LargeBinary, true).with_metadata(
        [("lance-encoding:blob".to_string(), "true".to_string())]
            .into_iter()
            .collect(),
    );
    let schema = Arc::new(Schema::new(vec![field]));
    let vals: Vec<Option<Vec<u8>>> = vec![
        Some(bytes(10, 1)),
        None,
        Some(vec![]),
        Some(bytes(70_000, 2)),
    ];
    let arr = arrow_array::LargeBinaryArray::from_iter(vals.iter().map(|v| v.as_deref()));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(arr)]).unwrap();
    for (storage, v2) in [(FileVersion::V2_2, true), (FileVersion::V2_1, false)] {
        let tmp = TempDir::new("blob-binary");
        let p = WriteParams {
            storage,
            ..Default::default()
        };
        let ds =
            Dataset::write(tmp.path(), schema.clone(), std::slice::from_ref(&batch), &p).unwrap();
        let f = &ds.manifest().schema.fields[0];
        assert_eq!(f.is_blob_v2(), v2, "{storage}");
        if v2 {
            // pylance 14's minimal logical shape, without the legacy marker
            assert_eq!(
                f.children
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>(),
                ["data", "uri"]
            );
            assert!(!f.metadata.contains_key("lance-encoding:blob"));
            assert_eq!(sidecars(tmp.path()).len(), 1);
        }
        assert_eq!(payloads(&ds), vals, "{storage}");
        let got = blobs::read_blobs(
            &ds,
            "b",
            Selection {
                selector: Selector::Indices,
                rows: &[3, 0, 1],
            },
            true,
        )
        .unwrap();
        let got: Vec<Option<Vec<u8>>> = got
            .into_iter()
            .map(|(_, b)| b.map(|b| b.to_vec()))
            .collect();
        assert_eq!(got, vec![vals[3].clone(), vals[0].clone(), None]);
    }
    // a blob v2 struct below 2.2 is refused naming the version
    let tmp = TempDir::new("blob-v21");
    let (schema, batch) = table(0, &[V::Data(vec![1])], &[]);
    let p = WriteParams {
        storage: FileVersion::V2_1,
        ..Default::default()
    };
    let e = Dataset::write(tmp.path(), schema, &[batch], &p)
        .unwrap_err()
        .to_string();
    assert!(e.contains("2.2") && e.contains("\"b\""), "{e}");
}

#[test]
fn appends_deletes_compaction_and_cleanup_keep_payloads() {
    let tmp = TempDir::new("blob-history");
    let md = [
        ("lance-encoding:blob-inline-size-threshold", "100"),
        ("lance-encoding:blob-dedicated-size-threshold", "2000"),
    ];
    let first: Vec<V> = (0..40)
        .map(|i| match i % 5 {
            0 => V::Null,
            1 => V::Data(vec![]),
            2 => V::Data(bytes(50, i as u8)),
            3 => V::Data(bytes(500, i as u8)),
            _ => V::Data(bytes(3000, i as u8)),
        })
        .collect();
    let (schema, batch) = table(0, &first, &md);
    let mut p = params();
    p.max_rows_per_file = 15;
    let ds = Dataset::write(tmp.path(), schema, &[batch], &p).unwrap();
    assert_eq!(ds.fragments().len(), 3);
    // an append of binary values and one of blob structs
    let more: Vec<V> = (0..10).map(|i| V::Data(bytes(i * 400, 7))).collect();
    let (_, batch) = table(40, &more, &md);
    let ds = ds.append(&[batch], &params()).unwrap();
    let plain_schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("b", DataType::LargeBinary, true),
    ]));
    let plain = RecordBatch::try_new(
        plain_schema,
        vec![
            Arc::new(Int64Array::from(vec![50, 51])),
            Arc::new(arrow_array::LargeBinaryArray::from(vec![
                Some(&b"xy"[..]),
                None,
            ])),
        ],
    )
    .unwrap();
    let ds = ds.append(&[plain], &params()).unwrap();
    let mut want = expected(&first);
    want.extend(expected(&more));
    want.extend([Some(b"xy".to_vec()), None]);
    assert_eq!(payloads(&ds), want);
    // thresholds other than the column's are refused on append
    let (_, other) = table(
        60,
        &more,
        &[("lance-encoding:blob-inline-size-threshold", "7")],
    );
    let e = ds.append(&[other], &params()).unwrap_err().to_string();
    assert!(e.contains("blob-inline-size-threshold"), "{e}");

    use lancer::DatasetExt;
    let ds = ds.delete("id % 3 = 0").unwrap();
    let live: Vec<Option<Vec<u8>>> = want
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 != 0)
        .map(|(_, v)| v.clone())
        .collect();
    assert_eq!(payloads(&ds), live);
    // read_blobs by index counts live rows only
    let idx: Vec<u64> = (0..live.len() as u64).rev().collect();
    let got = blobs::read_blobs(&ds, "b", indices(&idx), true).unwrap();
    let got: Vec<Option<Vec<u8>>> = got
        .into_iter()
        .map(|(_, b)| b.map(|b| b.to_vec()))
        .collect();
    let mut rev = live.clone();
    rev.reverse();
    assert_eq!(got, rev);

    // compaction rewrites the rows (payloads placed anew), cleanup removes the old
    // data files with their sidecars and keeps every referenced one
    let before = sidecars(tmp.path()).len();
    let ds = compacted(&ds);
    assert_eq!(payloads(&ds), live);
    std::thread::sleep(std::time::Duration::from_millis(5));
    lancer_table::versions::cleanup_retaining(ds.store(), None, Some(1), true, false).unwrap();
    let ds = Dataset::open(tmp.path()).unwrap();
    assert_eq!(payloads(&ds), live);
    let after = sidecars(tmp.path());
    assert!(
        !after.is_empty() && after.len() <= before,
        "{before} -> {after:?}"
    );
}

#[test]
fn external_uris_and_range_reads() {
    let tmp = TempDir::new("blob-external");
    let ext = tmp.path().join("outside.bin");
    std::fs::write(&ext, bytes(100, 9)).unwrap();
    let uri = format!("file://{}", ext.display());
    let vals = vec![
        V::Uri(uri.clone(), None),
        V::Uri(uri.clone(), Some((10, 20))),
        V::Data(bytes(5000, 3)),
        V::Null,
        V::Data(vec![]),
        V::Data(bytes(70_000, 4)),
    ];
    let (schema, batch) = table(0, &vals, &[]);
    let dir = tmp.path().join("ds");
    // refused unless allowed, naming the option
    let e = Dataset::write(
        &dir,
        schema.clone(),
        std::slice::from_ref(&batch),
        &params(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("allow_external_blob_outside_bases"), "{e}");
    let mut p = params();
    p.blobs.allow_external_outside_bases = true;
    let ds = Dataset::write(&dir, schema, &[batch], &p).unwrap();
    let d = descriptors(&ds);
    assert_eq!(d[0], Some((3, 0, 0, 0, uri.clone())));
    assert_eq!(d[1], Some((3, 10, 20, 0, uri.clone())));
    let full = bytes(100, 9);
    let got = payloads(&ds);
    assert_eq!(got[0].as_deref(), Some(&full[..]));
    assert_eq!(got[1].as_deref(), Some(&full[10..30]));

    let reqs = [
        (0u64, 5u64, 10u64),
        (1, 0, 20),
        (1, 19, 1),
        (2, 4000, 1000),
        (3, 0, 0),
        (4, 0, 0),
        (2, 0, 0),
    ];
    let got = blobs::read_blob_ranges(&ds, "b", &reqs, Selector::Indices, true).unwrap();
    let inline = bytes(5000, 3);
    let want: Vec<Option<Vec<u8>>> = vec![
        Some(full[5..15].to_vec()),
        Some(full[10..30].to_vec()),
        Some(full[29..30].to_vec()),
        Some(inline[4000..5000].to_vec()),
        None,
        Some(vec![]),
        Some(vec![]),
    ];
    assert_eq!(
        got.iter()
            .map(|(_, _, b)| b.as_ref().map(|b| b.to_vec()))
            .collect::<Vec<_>>(),
        want
    );
    assert_eq!(
        got.iter().map(|r| r.0).collect::<Vec<_>>(),
        (0..7).collect::<Vec<_>>()
    );
    // past a blob's end: an error naming the request
    let e = blobs::read_blob_ranges(&ds, "b", &[(1, 15, 6)], Selector::Indices, true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("request 0") && e.contains("exceeds blob size 20"),
        "{e}"
    );
    // handles read only what is asked
    let files = blobs::take_blobs(
        &ds,
        "b",
        Selection {
            selector: Selector::Addresses,
            rows: &[2, 3, 4],
        },
    )
    .unwrap();
    assert!(files[1].is_none());
    let f = files[0].as_ref().unwrap();
    assert_eq!(f.size(), 5000);
    assert_eq!(&f.read_range(100..110).unwrap()[..], &inline[100..110]);
    assert!(f.read_range(4990..5001).is_err());
    assert_eq!(files[2].as_ref().unwrap().size(), 0);
    // not a blob column / no such column
    let sel = indices(&[0]);
    let e = blobs::read_blobs(&ds, "id", sel, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a blob column"), "{e}");
    assert!(blobs::read_blobs(&ds, "zz", sel, true).is_err());
    // a sidecar gone: an error naming the file, never a panic
    let gone = sidecars(&dir);
    assert_eq!(gone.len(), 1);
    for (name, _) in gone {
        std::fs::remove_file(dir.join("data").join(name)).unwrap();
    }
    let sel = indices(&[5]);
    let e = blobs::read_blobs(&ds, "b", sel, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains(".blob"), "{e}");
    // the other rows still read
    let sel = indices(&[2]);
    assert_eq!(
        blobs::read_blobs(&ds, "b", sel, true).unwrap()[0]
            .1
            .as_deref(),
        Some(&inline[..])
    );
}

#[test]
fn hostile_blob_input_is_refused_naming_the_row() {
    let tmp = TempDir::new("blob-hostile");
    // both data and uri in one row
    let schema = Arc::new(Schema::new(vec![blob_field("b", &[])]));
    let DataType::Struct(fs) = blob_field("b", &[]).data_type().clone() else {
        unreachable!()
    };
    let both = StructArray::new(
        fs.clone(),
        vec![
            Arc::new(arrow_array::LargeBinaryArray::from(vec![Some(&b"a"[..])])),
            Arc::new(arrow_array::StringArray::from(vec![Some("file:///x")])),
            Arc::new(arrow_array::UInt64Array::from(vec![None::<u64>])),
            Arc::new(arrow_array::UInt64Array::from(vec![None::<u64>])),
        ],
        None,
    );
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(both)]).unwrap();
    let e = Dataset::write(tmp.path(), schema.clone(), &[batch], &params())
        .unwrap_err()
        .to_string();
    assert!(e.contains("row 0") && e.contains("not both"), "{e}");
    for (vals, what) in [
        (vec![V::Uri("relative/path".into(), None)], "absolute"),
        (vec![V::Uri("file:///x".into(), Some((0, 0)))], "size > 0"),
        (vec![V::Uri(String::new(), None)], "empty"),
    ] {
        let (schema, batch) = table(0, &vals, &[]);
        let mut p = params();
        p.blobs.allow_external_outside_bases = true;
        let e = Dataset::write(tmp.path(), schema, &[batch], &p)
            .unwrap_err()
            .to_string();
        assert!(e.contains(what), "{what}: {e}");
    }
    let (schema, batch) = table(
        0,
        &[V::Data(vec![1])],
        &[("lance-encoding:blob-dedicated-size-threshold", "0")],
    );
    let e = Dataset::write(tmp.path(), schema, &[batch], &params())
        .unwrap_err()
        .to_string();
    assert!(e.contains("positive"), "{e}");
    // nothing was committed by any of them
    assert!(Dataset::open(tmp.path()).is_err());
}

/// Two shapes of their own: a blob column whose every value is null (no sidecar
/// written, no descriptor, every read null; the blob API answers null rows without
/// reading anything), and one payload repeated in every row for each size class (each
/// row its own copy: inline in the data file, packed back to back, a dedicated
/// sidecar per row), read whole, by range and after a delete and compaction.
#[test]
fn all_null_and_repeated_payload_columns() {
    let md = [
        ("lance-encoding:blob-inline-size-threshold", "64"),
        ("lance-encoding:blob-dedicated-size-threshold", "512"),
    ];
    // all null, over two fragments
    let tmp = TempDir::new("blob-all-null");
    let nulls = vec![V::Null; 40];
    let (schema, batch) = table(0, &nulls, &md);
    let p = WriteParams {
        max_rows_per_file: 25,
        ..params()
    };
    let ds = Dataset::write(tmp.path(), schema, &[batch], &p).unwrap();
    assert_eq!(ds.fragments().len(), 2);
    assert_eq!(payloads(&ds), expected(&nulls));
    assert!(descriptors(&ds).iter().all(Option::is_none));
    assert!(sidecars(tmp.path()).is_empty());
    let got = blobs::read_blobs(&ds, "b", indices(&[0, 17, 39]), true).unwrap();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|(_, b)| b.is_none()), "{got:?}");

    // one payload repeated, in each size class
    for (n, kind) in [(40usize, 0u8), (300, 1), (2000, 2)] {
        let tmp = TempDir::new("blob-repeated");
        let one = bytes(n, 7);
        let vals = vec![V::Data(one.clone()); 30];
        let (schema, batch) = table(0, &vals, &md);
        let ds = Dataset::write(tmp.path(), schema, &[batch], &params()).unwrap();
        assert_eq!(payloads(&ds), expected(&vals), "{n}");
        let desc = descriptors(&ds);
        assert!(
            desc.iter()
                .all(|d| d.as_ref().map(|d| (d.0, d.2)) == Some((kind, n as u64))),
            "{n}"
        );
        let files = sidecars(tmp.path());
        match kind {
            0 => assert!(files.is_empty(), "{files:?}"),
            // one packed sidecar holding every copy back to back
            1 => assert_eq!(
                files.iter().map(|f| f.1).collect::<Vec<_>>(),
                [30 * n as u64]
            ),
            _ => assert_eq!(files.len(), 30, "{files:?}"),
        }
        let ranges =
            blobs::read_blob_ranges(&ds, "b", &[(3, 5, 20), (29, 0, 1)], Selector::Indices, true)
                .unwrap();
        let ranges: Vec<Option<Vec<u8>>> = ranges
            .into_iter()
            .map(|r| r.2.map(|b| b.to_vec()))
            .collect();
        assert_eq!(
            ranges,
            vec![Some(one[5..25].to_vec()), Some(one[0..1].to_vec())],
            "{n}"
        );
        let ds = ds
            .delete_where("id % 3 = 0", |b| {
                let v = b.column(0).as_primitive::<arrow_array::types::Int64Type>();
                Ok(v.iter().map(|x| Some(x.unwrap_or(0) % 3 == 0)).collect())
            })
            .unwrap();
        let ds = compacted(&ds);
        assert_eq!(
            payloads(&ds),
            vec![Some(one.clone()); 20],
            "{n} after compaction"
        );
    }
}
