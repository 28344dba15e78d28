//! Mutation tests of every byte source the table layer parses — Arrow and bitmap
//! deletion files, row-id sequences, transaction files, version hints, manifests —
//! at least 10,000 mutations each (deterministic seeds): each ends in a value or a
//! typed error, never a panic or abort, with every single allocation bounded. And
//! the same at dataset level: a real dataset's deletion file damaged on disk, then
//! scanned, counted and taken from.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::commit::decode_sequence;
use lancer_table::commit::Manifest;
use lancer_table::commit::{decode_transaction, read_transaction};
use lancer_table::dataset::decode_deletions;
use lancer_table::pb;
use lancer_table::versions::{latest_version, list_versions, parse_version_hint};
use lancer_table::write::WriteParams;
use lancer_table::Dataset;
use prost::Message;
use roaring::RoaringBitmap;

use crate::alloc::{reset_thread_peak, thread_peak_allocation};
use crate::common::TempDir;
use crate::mutate::{mutate, run, Rng};

/// Single allocations above this fail (inputs are at most a few KB).
const BOUND: usize = 64 << 20;
const MUTATIONS: usize = 10_000;

/// A fresh temporary directory for the dataset of test `name`.
fn scratch(name: &str) -> TempDir {
    TempDir::new(&format!("table-{name}"))
}

fn golden_datasets() -> PathBuf {
    crate::common::repo().join("tests/data/datasets")
}

/// Every checked-in file under the golden datasets whose path ends with `suffix`.
fn golden(suffix: &str) -> Vec<Vec<u8>> {
    fn walk(d: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, suffix, out);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&golden_datasets(), suffix, &mut paths);
    paths.sort();
    // A handful is enough: they share structure.
    paths.truncate(6);
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

fn batch(start: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(start..start + n))],
    )
    .unwrap()
}

/// A 300-row dataset in 3 fragments with rows deleted (an Arrow deletion file each).
fn dataset_with_deletions(name: &str) -> (TempDir, Dataset) {
    let root = scratch(name);
    let params = WriteParams {
        max_rows_per_file: 100,
        ..Default::default()
    };
    let b = batch(0, 300);
    let ds = Dataset::write(&root, b.schema(), &[b], &params).unwrap();
    let ds = ds
        .delete_where("id % 7 = 3", |b| {
            let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            Ok(ids.iter().map(|x| Some(x.unwrap_or(0) % 7 == 3)).collect())
        })
        .unwrap();
    (root, ds)
}

fn deletion_files(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root.join("_deletions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

#[test]
fn mutated_arrow_deletion_files() {
    let (root, _) = dataset_with_deletions("mut-arrow-deletions");
    let mut seeds: Vec<Vec<u8>> = deletion_files(&root)
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    seeds.extend(golden("_deletions").into_iter().take(3));
    let t = run("arrow deletion file", &seeds, MUTATIONS, BOUND, 0xA1, |b| {
        decode_deletions(b, false, 1 << 20, "d.arrow")
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    assert!(t.errors > MUTATIONS / 4);
}

#[test]
fn mutated_bitmap_deletion_files() {
    let mut seeds = Vec::new();
    for bm in [
        RoaringBitmap::from_iter([1u32, 5, 9, 100, 4000]),
        RoaringBitmap::from_iter((0u32..5000).filter(|x| x % 3 == 0)),
        RoaringBitmap::from_iter(1000u32..3000),
        RoaringBitmap::from_iter((0u32..200_000).step_by(17)),
    ] {
        let mut runs = bm.clone();
        let mut b = Vec::new();
        bm.serialize_into(&mut b).unwrap();
        seeds.push(b);
        // Run containers (a different cookie).
        runs.optimize();
        let mut b = Vec::new();
        runs.serialize_into(&mut b).unwrap();
        seeds.push(b);
    }
    let t = run(
        "bitmap deletion file",
        &seeds,
        MUTATIONS,
        BOUND,
        0xB2,
        |b| {
            decode_deletions(b, true, 1 << 20, "d.bin")
                .map(|_| ())
                .map_err(|e| e.to_string())
        },
    );
    assert!(t.errors > MUTATIONS / 10);
}

fn seq(segments: Vec<pb::u64_segment::Segment>) -> Vec<u8> {
    pb::RowIdSequence {
        segments: segments
            .into_iter()
            .map(|s| pb::U64Segment { segment: Some(s) })
            .collect(),
    }
    .encode_to_vec()
}

#[test]
fn mutated_row_id_sequences() {
    use pb::encoded_u64_array::{Array, U16Array, U32Array, U64Array};
    use pb::u64_segment::{Range, RangeWithBitmap, RangeWithHoles, Segment};
    let arr = |a: Array| pb::EncodedU64Array { array: Some(a) };
    let seeds = vec![
        seq(vec![Segment::Range(Range { start: 0, end: 500 })]),
        seq(vec![
            Segment::Range(Range { start: 10, end: 60 }),
            Segment::RangeWithHoles(RangeWithHoles {
                start: 100,
                end: 200,
                holes: Some(arr(Array::U16Array(U16Array {
                    base: 100,
                    offsets: [3u16, 9, 40].iter().flat_map(|v| v.to_le_bytes()).collect(),
                }))),
            }),
            Segment::RangeWithBitmap(RangeWithBitmap {
                start: 300,
                end: 364,
                bitmap: vec![0xF0, 0x0F, 0xAA, 0x55, 0xFF, 0, 1, 2],
            }),
        ]),
        seq(vec![
            Segment::SortedArray(arr(Array::U32Array(U32Array {
                base: 7,
                offsets: (0u32..50).flat_map(|v| (v * 3).to_le_bytes()).collect(),
            }))),
            Segment::Array(arr(Array::U64Array(U64Array {
                values: [9u64, 4, 1 << 40]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            }))),
        ]),
    ];
    run("row id sequence", &seeds, MUTATIONS, BOUND, 0xC3, |b| {
        decode_sequence(b, 1000)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    // Declared counts cannot make it allocate: a range of 2^60 rows, whatever the
    // fragment claims.
    let huge = seq(vec![Segment::Range(Range {
        start: 0,
        end: 1 << 60,
    })]);
    reset_thread_peak();
    assert!(decode_sequence(&huge, 1000).is_err());
    let frag = pb::DataFragment {
        id: 0,
        physical_rows: u64::MAX,
        row_id_sequence: Some(pb::data_fragment::RowIdSequence::InlineRowIds(huge)),
        ..Default::default()
    };
    let e = lancer_table::commit::fragment_row_ids(&lancer_io::Store::local("/nonexistent"), &frag)
        .unwrap_err();
    assert!(e.to_string().contains("2^32"), "{e}");
    assert!(thread_peak_allocation() < 1 << 20);
}

#[test]
fn mutated_transaction_files() {
    let seeds = golden(".txn");
    assert!(!seeds.is_empty());
    let t = run("transaction file", &seeds, MUTATIONS, BOUND, 0xD4, |b| {
        // A damaged transaction only loses the conflict information it carried.
        decode_transaction(b)
            .map(|_| ())
            .ok_or_else(|| "unreadable".to_string())
    });
    assert!(t.errors > MUTATIONS / 4);
    // And through the file, as commits read it.
    let root = scratch("mut-transactions");
    std::fs::create_dir_all(root.join("_transactions")).unwrap();
    let m = pb::Manifest {
        transaction_file: "t.txn".into(),
        ..Default::default()
    };
    let path = root.join("_transactions/t.txn");
    run("transaction file on disk", &seeds, 200, BOUND, 0xD5, |b| {
        std::fs::write(&path, b).unwrap();
        read_transaction(&lancer_io::Store::local(&root), &m)
            .map(|_| ())
            .ok_or_else(|| "unreadable".to_string())
    });
}

#[test]
fn mutated_version_hints() {
    let root = scratch("mut-hints");
    let b = batch(0, 10);
    let mut ds = Dataset::write(&root, b.schema(), &[b], &WriteParams::default()).unwrap();
    for i in 1..3 {
        ds = ds
            .append(&[batch(i * 10, 10)], &WriteParams::default())
            .unwrap();
    }
    let hint = root.join("_versions/latest_version_hint.json");
    let mut seeds = vec![std::fs::read(&hint).unwrap_or_else(|_| br#"{"version":3}"#.to_vec())];
    seeds.extend(golden("latest_version_hint.json").into_iter().take(2));
    let t = run("version hint", &seeds, MUTATIONS, BOUND, 0xE5, |b| {
        parse_version_hint(b)
            .map(|_| ())
            .ok_or_else(|| "damaged".to_string())
    });
    assert!(t.errors > MUTATIONS / 4);
    // A damaged hint is best-effort: the latest version is still found.
    run("version hint on disk", &seeds, 200, BOUND, 0xE6, |b| {
        std::fs::write(&hint, b).unwrap();
        let v = latest_version(&lancer_io::Store::local(&root)).map_err(|e| e.to_string())?;
        assert_eq!(v.version, 3);
        Ok(())
    });
    let _ = ds;
}

#[test]
fn mutated_manifests() {
    let (root, _) = dataset_with_deletions("mut-manifests");
    let mut seeds: Vec<Vec<u8>> = list_versions(&lancer_io::Store::local(&root))
        .unwrap()
        .iter()
        .map(|v| std::fs::read(root.join(&v.path)).unwrap())
        .collect();
    seeds.extend(golden(".manifest").into_iter().take(3));
    let t = run("manifest", &seeds, MUTATIONS, BOUND, 0xF6, |b| {
        Manifest::parse(b).map(|_| ()).map_err(|e| e.to_string())
    });
    assert!(t.errors > MUTATIONS / 4);
}

/// Damages one deletion file of a real dataset on disk, many ways, and reads the
/// dataset each time through the table layer: scan, count, take.
#[test]
fn datasets_with_damaged_deletion_files_fail_cleanly() {
    let (root, _) = dataset_with_deletions("mut-dataset-deletions");
    let files = deletion_files(&root);
    let mut rng = Rng(0x5EED);
    let (mut ok, mut errors, mut named) = (0, 0, 0);
    for i in 0..400 {
        let target = &files[i % files.len()];
        let original = std::fs::read(target).unwrap();
        let (what, bytes) = mutate(&original, &mut rng);
        std::fs::write(target, &bytes).unwrap();
        reset_thread_peak();
        let r = std::panic::catch_unwind(|| -> lancer_table::Result<()> {
            let ds = Dataset::open(&root)?;
            let _ = ds.count_rows();
            ds.to_batch(None)?;
            ds.take(&[0, 5, 50, 150], None)?;
            for f in ds.fragments() {
                ds.deletions(f)?;
            }
            Ok(())
        });
        std::fs::write(target, &original).unwrap();
        match r {
            Err(_) => panic!("{}: {what}: panicked", target.display()),
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => {
                if e.to_string().contains("deletion file") {
                    named += 1;
                }
                errors += 1;
            }
        }
        assert!(thread_peak_allocation() < BOUND, "{what}: over-allocated");
    }
    eprintln!(
        "dataset deletion damage: {ok} read fine, {errors} typed errors ({named} naming the deletion file)"
    );
    assert!(named > 100);
}
