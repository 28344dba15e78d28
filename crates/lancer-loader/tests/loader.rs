//! The loader's promises on real datasets: every row exactly once per epoch for world
//! sizes 1–8 and 1–4 workers (with deletions, and appends after discovery), the same
//! order for the same seed, resumption equal to the uninterrupted run, discovery in
//! two requests without opening a data file, refusals at discovery, and pylance's
//! evolved / legacy / mixed-version datasets read as Lancer's scanner reads them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::{ids, read_all};
use lancer::{Dataset, DatasetExt, WriteParams};
use lancer_loader::{discover, Loader, LoaderError, Options, Pin, Shuffle, State, Tail};
use lancer_testkit::TempDir;

/// A fresh temporary directory for the dataset of test `name`.
fn dir(name: &str) -> TempDir {
    TempDir::new(&format!("loader-{name}"))
}

fn batch(start: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let ids: Vec<i64> = (start..start + n).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Float64Array::from_iter(
                ids.iter().map(|i| (i % 9 != 0).then_some(*i as f64 / 2.0)),
            )),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("s{}", i % 13)),
            )),
        ],
    )
    .unwrap()
}

/// 9 fragments of uneven sizes (an empty one after deletes), ~8% deleted.
fn dataset(name: &str) -> (TempDir, Dataset) {
    let root = dir(name);
    let params = WriteParams {
        max_rows_per_file: 173,
        ..Default::default()
    };
    let ds = Dataset::write(&root, batch(0, 1000).schema(), &[batch(0, 1000)], &params).unwrap();
    let ds = ds.append(&[batch(1000, 40)], &params).unwrap();
    let ds = ds
        .delete("id % 12 = 5 OR (id >= 173 AND id < 346)")
        .unwrap();
    (root, ds)
}

fn live_ids(ds: &Dataset) -> Vec<i64> {
    let b = ds.to_batch(Some(&["id"])).unwrap();
    let mut v = ids(&b);
    v.sort_unstable();
    v
}

#[test]
fn every_row_exactly_once_across_ranks_and_workers() {
    let (root, ds) = dataset("once");
    let uri = root.to_string_lossy().to_string();
    let d = discover(&uri, &Pin::Latest, &Default::default()).unwrap();
    // written after discovery: the pinned plan must not see these
    ds.append(&[batch(5000, 77)], &WriteParams::default())
        .unwrap();
    ds.latest().unwrap().delete("id < 20").unwrap();
    let want = live_ids(&ds);
    assert_eq!(d.plan.rows as usize, want.len());
    for shuffle in [
        Shuffle::None,
        Shuffle::Buffer { buffer: 100 },
        Shuffle::Global,
    ] {
        for world in 1..=8u64 {
            for workers in 1..=4u64 {
                let mut all = Vec::new();
                let mut per_rank = Vec::new();
                for rank in 0..world {
                    let mut n = 0;
                    for worker in 0..workers {
                        let opts = Options {
                            rank,
                            world_size: world,
                            worker,
                            num_workers: workers,
                            batch_size: 37,
                            shuffle,
                            seed: 11,
                            prefetch: worker % 2 == 0,
                            ..Default::default()
                        };
                        let l = Loader::new(d.plan.clone(), opts, &Default::default()).unwrap();
                        let got = read_all(&l, 2);
                        n += got.len();
                        all.extend(got);
                    }
                    per_rank.push(n);
                }
                all.sort_unstable();
                assert_eq!(all, want, "{shuffle:?} world {world} workers {workers}");
                let (min, max) = (
                    per_rank.iter().min().unwrap(),
                    per_rank.iter().max().unwrap(),
                );
                assert!(max - min <= 1, "balanced by rows: {per_rank:?}");
            }
        }
    }
}

#[test]
fn drop_last_and_pad_give_every_rank_the_same_count() {
    let (root, ds) = dataset("tail");
    let n = ds.count_rows();
    let d = discover(&root.to_string_lossy(), &Pin::Latest, &Default::default()).unwrap();
    for world in [3u64, 7] {
        for (tail, want) in [(Tail::DropLast, n / world), (Tail::Pad, n.div_ceil(world))] {
            let mut seen = std::collections::HashSet::new();
            for rank in 0..world {
                let opts = Options {
                    rank,
                    world_size: world,
                    tail,
                    batch_size: 50,
                    ..Default::default()
                };
                let got = read_all(
                    &Loader::new(d.plan.clone(), opts, &Default::default()).unwrap(),
                    0,
                );
                assert_eq!(got.len() as u64, want, "{tail:?} world {world}");
                seen.extend(got);
            }
            if tail == Tail::Pad {
                assert_eq!(seen.len() as u64, n, "padding repeats rows, it loses none");
            }
        }
    }
}

#[test]
fn same_seed_same_order_and_resume_equals_the_uninterrupted_run() {
    let (root, _ds) = dataset("resume");
    let d = discover(&root.to_string_lossy(), &Pin::Latest, &Default::default()).unwrap();
    for shuffle in [
        Shuffle::None,
        Shuffle::Buffer { buffer: 64 },
        Shuffle::Global,
    ] {
        let opts = Options {
            rank: 1,
            world_size: 2,
            batch_size: 10,
            shuffle,
            seed: 5,
            filter: Some("s != 's3'".into()),
            columns: Some(vec!["id".into(), "x".into()]),
            ..Default::default()
        };
        let l = Loader::new(d.plan.clone(), opts.clone(), &Default::default()).unwrap();
        let full = read_all(&l, 4);
        assert_eq!(
            full,
            read_all(&l, 4),
            "{shuffle:?}: same seed and epoch, same order"
        );
        if shuffle != Shuffle::None {
            assert_ne!(
                full,
                read_all(&l, 5),
                "{shuffle:?}: another epoch, another order"
            );
        }
        // stop after k batches, save the state (through JSON), resume in a new loader
        for k in [0usize, 1, 3, 7, 12] {
            let mut e = l.epoch(4);
            let mut head: Vec<i64> = Vec::new();
            for _ in 0..k {
                match e.next() {
                    Some(b) => head.extend(ids(&b.unwrap())),
                    None => break,
                }
            }
            let saved = serde_json::to_string(&e.state()).unwrap();
            drop(e);
            let state: State = serde_json::from_str(&saved).unwrap();
            let l2 = Loader::new(d.plan.clone(), opts.clone(), &Default::default()).unwrap();
            let tail: Vec<i64> = l2.resume(state).flat_map(|b| ids(&b.unwrap())).collect();
            head.extend(tail);
            assert_eq!(head, full, "{shuffle:?}: resumed after {k} batches");
        }
    }
}

#[test]
fn refusals_and_bad_arguments_come_before_the_first_batch() {
    let (root, ds) = dataset("refuse");
    let uri = root.to_string_lossy().to_string();
    // a manifest with a reader flag this build does not know
    let mut m = ds.manifest().pb.clone();
    m.version += 1;
    m.reader_feature_flags |= 1 << 40;
    let name = lancer_table::commit::Naming::V2.file_name(m.version);
    std::fs::write(
        root.join("_versions").join(name),
        lancer_table::commit::manifest_bytes(&m),
    )
    .unwrap();
    match discover(&uri, &Pin::Latest, &Default::default()) {
        Err(LoaderError::Refused { reason, remedy }) => {
            assert!(reason.contains("feature flags"), "{reason}");
            assert!(remedy.contains("upgrade"), "{remedy}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let d = discover(&uri, &Pin::Version(ds.version()), &Default::default()).unwrap();
    let bad = |o: Options| {
        Loader::new(d.plan.clone(), o, &Default::default())
            .err()
            .map(|e| e.to_string())
    };
    assert!(bad(Options {
        rank: 2,
        world_size: 2,
        ..Default::default()
    })
    .unwrap()
    .contains("rank 2"));
    assert!(bad(Options {
        columns: Some(vec!["nope".into()]),
        ..Default::default()
    })
    .unwrap()
    .contains("nope"));
    assert!(bad(Options {
        filter: Some("nope > 1".into()),
        ..Default::default()
    })
    .is_some());
    assert!(bad(Options {
        batch_size: 0,
        ..Default::default()
    })
    .is_some());
    // a plan that does not match its version
    let mut wrong = d.plan.clone();
    wrong.shards[0].rows -= 1;
    wrong.rows -= 1;
    assert!(Loader::new(wrong, Options::default(), &Default::default()).is_err());
}

/// The checked-in datasets pylance wrote (multi-file fragments after add_columns,
/// dropped / cast columns, mixed file versions, stable row ids, legacy files): the
/// loader delivers what Lancer's scanner reads (which the golden tests check against
/// pylance), split over 3 ranks x 2 workers.
#[test]
fn pylance_written_datasets_read_as_the_scanner_reads_them() {
    let data = lancer_testkit::repo().join("tests/data");
    let mut checked = BTreeMap::new();
    for group in [
        "datasets/pylance-14",
        "datasets/pylance-11",
        "legacy/pylance-14",
    ] {
        let Ok(entries) = std::fs::read_dir(data.join(group)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if !p.join("_versions").is_dir() {
                continue;
            }
            let ds = Dataset::open(&p).unwrap();
            let d = discover(&p.to_string_lossy(), &Pin::Latest, &Default::default()).unwrap();
            let want = match ds.scan().to_batch() {
                Ok(w) => w,
                Err(e) => {
                    // data Lancer (and pylance) cannot decode, seen only in the data file:
                    // the loader's read fails the same way, with an error
                    let l = Loader::new(d.plan.clone(), Options::default(), &Default::default())
                        .unwrap();
                    let failed = l.epoch(0).any(|b| b.is_err());
                    assert!(
                        failed,
                        "{}: the scanner refused ({e}) but the loader read it",
                        p.display()
                    );
                    checked.insert(format!("{group}/{} (refused)", p.display()), 0);
                    continue;
                }
            };
            let mut got: Vec<RecordBatch> = Vec::new();
            for rank in 0..3 {
                for worker in 0..2 {
                    let o = Options {
                        rank,
                        world_size: 3,
                        worker,
                        num_workers: 2,
                        batch_size: 29,
                        ..Default::default()
                    };
                    let l = Loader::new(d.plan.clone(), o, &Default::default()).unwrap();
                    got.extend(l.epoch(0).map(|b| b.unwrap()));
                }
            }
            let got = arrow_select::concat::concat_batches(&want.schema(), &got).unwrap();
            assert_eq!(got.num_rows(), want.num_rows(), "{}", p.display());
            for (a, b) in got.columns().iter().zip(want.columns()) {
                assert_eq!(a.to_data(), b.to_data(), "{}", p.display());
            }
            checked.insert(
                format!("{group}/{}", e.file_name().to_string_lossy()),
                want.num_rows(),
            );
        }
    }
    assert!(checked.len() >= 10, "golden datasets found: {checked:?}");
}

/// Rows of `id` and a 4-d float32 vector derived from it: null for every 11th row,
/// and with a null value inside for every 97th when `inner_nulls`.
fn vector_batch(start: i64, n: i64, inner_nulls: bool) -> RecordBatch {
    use arrow_array::{FixedSizeListArray, Float32Array};
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("vec", DataType::FixedSizeList(item.clone(), 4), true),
    ]));
    let ids: Vec<i64> = (start..start + n).collect();
    let values = Float32Array::from_iter(ids.iter().flat_map(|&i| {
        (0..4).map(move |j| {
            (!(inner_nulls && i % 97 == 3 && j == 2)).then_some(i as f32 + j as f32 / 2.0)
        })
    }));
    let nulls = arrow_buffer::NullBuffer::from(ids.iter().map(|i| i % 11 != 0).collect::<Vec<_>>());
    let vec = FixedSizeListArray::try_new(item, 4, Arc::new(values), Some(nulls)).unwrap();
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(ids)), Arc::new(vec)]).unwrap()
}

/// `(id, vector)` pairs in delivery order.
fn id_vectors(l: &Loader) -> Vec<(i64, Option<Vec<Option<f32>>>)> {
    use arrow_array::{FixedSizeListArray, Float32Array};
    let mut out = Vec::new();
    for b in l.epoch(2) {
        let b = b.unwrap();
        let v = b.column_by_name("vec").unwrap();
        let v = v.as_any().downcast_ref::<FixedSizeListArray>().unwrap();
        for (r, id) in ids(&b).into_iter().enumerate() {
            let row = v.is_valid(r).then(|| {
                let x = v.value(r);
                let x = x.as_any().downcast_ref::<Float32Array>().unwrap();
                x.iter().collect::<Vec<_>>()
            });
            out.push((id, row));
        }
    }
    out
}

#[test]
fn shuffled_vectors_are_scattered_into_place_with_their_rows() {
    for inner_nulls in [false, true] {
        let root = dir(&format!("vectors-{inner_nulls}"));
        let params = WriteParams {
            max_rows_per_file: 230,
            ..Default::default()
        };
        let b = vector_batch(0, 1000, inner_nulls);
        let ds = Dataset::write(&root, b.schema(), &[b], &params).unwrap();
        ds.delete("id % 7 = 1").unwrap();
        let d = discover(&root.to_string_lossy(), &Pin::Latest, &Default::default()).unwrap();
        let opts = |filter: Option<&str>| Options {
            shuffle: Shuffle::Buffer { buffer: 300 },
            seed: 11,
            batch_size: 64,
            filter: filter.map(String::from),
            ..Default::default()
        };
        // no filter: vectors scattered as pieces are read (inner nulls: read whole)
        let l = Loader::new(d.plan.clone(), opts(None), &Default::default()).unwrap();
        let got = id_vectors(&l);
        let mut seen: Vec<i64> = got.iter().map(|(i, _)| *i).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).filter(|i| i % 7 != 1).collect::<Vec<i64>>());
        for (id, v) in &got {
            let want = (id % 11 != 0).then(|| {
                (0..4)
                    .map(|j| {
                        (!(inner_nulls && id % 97 == 3 && j == 2))
                            .then_some(*id as f32 + j as f32 / 2.0)
                    })
                    .collect::<Vec<_>>()
            });
            assert_eq!(v, &want, "row {id} (inner nulls {inner_nulls})");
        }
        // a filter keeping every row reads blocks whole, then permutes: the same order
        let whole =
            Loader::new(d.plan.clone(), opts(Some("id >= 0")), &Default::default()).unwrap();
        assert_eq!(id_vectors(&whole), got, "inner nulls {inner_nulls}");
        let first = |l: &Loader| l.epoch(2).next().unwrap().unwrap();
        let (a, b) = (first(&l), first(&whole));
        assert_eq!(a.schema(), b.schema(), "inner nulls {inner_nulls}: schemas");
        assert_eq!(a, b, "inner nulls {inner_nulls}: first batch");
        assert_ne!(
            got.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            seen,
            "shuffled"
        );
    }
}
