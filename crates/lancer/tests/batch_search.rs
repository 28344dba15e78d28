//! Batched search (`lancer::search`, issue 42) against single searches: on a
//! dataset of several fragments with deleted rows and an unindexed appended fragment,
//! exactly and through IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ / IVF_HNSW_SQ indexes, under
//! nprobes, a min/max range, refine, fast_search, pre- and postfilters, every query's
//! rows and distances in a batch are bit for bit those of its single search (the
//! partition-grouped scoring must not change an answer). A dataset with its own
//! `query_index` column, queries of the wrong width and an empty batch end in typed
//! errors / an empty answer, never a panic.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int32Type, Int64Type};
use arrow_array::{BooleanArray, FixedSizeListArray, Float32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer::index::{create_index, IndexParams, IndexSpec};
use lancer::search::AnnParams;
use lancer::search::{nearest, Filtering, Metric, Nearest, RowMeta, SearchOptions};
use lancer::search::{nearest_batch, BatchNearest, QUERY_INDEX};
use lancer::{Dataset, WriteParams};

use crate::common::TempDir;

const DIM: usize = 8;

fn rng(seed: u64) -> impl FnMut() -> f32 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 20_000) as f32 / 10_000.0 - 1.0
    }
}

fn batch(first: i64, n: usize, seed: u64, name: &str) -> RecordBatch {
    let mut next = rng(seed);
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new(name, DataType::Int64, false),
        Field::new(
            "vec",
            DataType::FixedSizeList(item.clone(), DIM as i32),
            true,
        ),
    ]));
    let values = Float32Array::from_iter_values((0..n * DIM).map(|_| next()));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(first..first + n as i64)),
            Arc::new(FixedSizeListArray::new(
                item,
                DIM as i32,
                Arc::new(values),
                None,
            )),
        ],
    )
    .unwrap()
}

/// 3 fragments, rows deleted, the index `kind` (if any), an appended fragment.
fn dataset(tmp: &TempDir, kind: Option<&str>) -> Dataset {
    let dir = tmp.join(kind.unwrap_or("exact"));
    let b = batch(0, 6000, 0x9E37_79B9_7F4A_7C15, "id");
    let params = WriteParams {
        max_rows_per_file: 2000,
        ..Default::default()
    };
    let ds = Dataset::write(&dir, b.schema(), &[b], &params).unwrap();
    let ds = ds
        .delete_where("id % 7 = 2", |b| {
            let ids = b.column(0).as_primitive::<Int64Type>();
            Ok(BooleanArray::from_iter(
                ids.values().iter().map(|&i| Some(i % 7 == 2)),
            ))
        })
        .unwrap();
    let ds = match kind {
        Some(kind) => {
            let p = IndexParams {
                num_partitions: Some(6),
                num_sub_vectors: kind.ends_with("PQ").then_some(4),
                ..Default::default()
            };
            create_index(&ds, "vec", &IndexSpec::parse(kind, p).unwrap(), None).unwrap()
        }
        None => ds,
    };
    ds.append(&[batch(6000, 300, 0x1234_5678_9ABC_DEF1, "id")], &params)
        .unwrap()
}

fn queries(n: usize) -> Vec<Vec<f32>> {
    let mut next = rng(0xDEAD_BEEF_CAFE_F00D);
    (0..n).map(|_| (0..DIM).map(|_| next()).collect()).collect()
}

type Answer = (Vec<i64>, Vec<f32>);

fn single(ds: &Dataset, q: &[f32], f: Filtering<'_>, p: &AnnParams) -> Answer {
    let req = Nearest {
        column: "vec",
        query: q.to_vec(),
        k: 10,
        metric: Metric::L2,
    };
    let b = nearest(
        ds,
        &req,
        &SearchOptions {
            filtering: f,
            columns: Some(&["id"]),
            ann: p.clone(),
            row_meta: RowMeta::default(),
        },
    )
    .unwrap();
    (
        b.column(0).as_primitive::<Int64Type>().values().to_vec(),
        b.column(1).as_primitive::<Float32Type>().values().to_vec(),
    )
}

fn batched(ds: &Dataset, qs: &[Vec<f32>], f: Filtering<'_>, p: &AnnParams) -> Vec<Answer> {
    let req = BatchNearest {
        column: "vec",
        queries: qs.to_vec(),
        k: 10,
        metric: Metric::L2,
    };
    let meta = RowMeta {
        row_id: true,
        row_address: false,
    };
    let b = nearest_batch(ds, &req, f, Some(&["id"]), p, meta).unwrap();
    let schema = b.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, [QUERY_INDEX, "id", "_distance", "_rowid"]);
    assert_eq!(b.schema().field(0).data_type(), &DataType::Int32);
    assert!(!b.schema().field(0).is_nullable());
    let qi = b.column(0).as_primitive::<Int32Type>().values();
    assert!(qi.windows(2).all(|w| w[0] <= w[1]), "rows by query");
    let ids = b.column(1).as_primitive::<Int64Type>().values();
    let d = b.column(2).as_primitive::<Float32Type>().values();
    let mut out: Vec<Answer> = vec![(Vec::new(), Vec::new()); qs.len()];
    for i in 0..b.num_rows() {
        let a = &mut out[qi[i] as usize];
        a.0.push(ids[i]);
        a.1.push(d[i]);
    }
    out
}

fn settings() -> Vec<(&'static str, AnnParams)> {
    let p = |f: fn(&mut AnnParams)| {
        let mut a = AnnParams::default();
        f(&mut a);
        a
    };
    vec![
        ("default probes", AnnParams::default()),
        ("nprobes 2", p(|a| a.nprobes = Some(2))),
        (
            "min 1 max 3",
            p(|a| {
                a.min_nprobes = Some(1);
                a.max_nprobes = Some(3)
            }),
        ),
        (
            "refine 3",
            p(|a| {
                a.nprobes = Some(1);
                a.refine_factor = Some(3)
            }),
        ),
        (
            "fast_search",
            p(|a| {
                a.nprobes = Some(3);
                a.fast_search = true
            }),
        ),
        ("exact", p(|a| a.use_index = false)),
    ]
}

#[test]
fn batches_answer_as_single_searches() {
    let tmp = TempDir::new("batch-search");
    let qs = queries(40);
    for kind in [
        None,
        Some("IVF_FLAT"),
        Some("IVF_PQ"),
        Some("IVF_SQ"),
        Some("IVF_RQ"),
        Some("IVF_HNSW_SQ"),
    ] {
        let ds = dataset(&tmp, kind);
        for (label, p) in settings() {
            for f in [
                Filtering::None,
                Filtering::Pre("id % 3 = 0"),
                Filtering::Post("id % 2 = 0"),
            ] {
                let got = batched(&ds, &qs, f, &p);
                for (q, g) in qs.iter().zip(&got) {
                    let want = single(&ds, q, f, &p);
                    assert_eq!(g.0, want.0, "{kind:?} {label} {f:?}");
                    assert_eq!(g.1, want.1, "{kind:?} {label} {f:?}");
                    assert!(
                        g.0.iter().all(|i| *i >= 6000 || i % 7 != 2),
                        "deleted rows stay out"
                    );
                }
                if !(matches!(f, Filtering::Post(_)) || p.fast_search && kind.is_none()) {
                    assert!(got.iter().all(|a| a.0.len() == 10), "{kind:?} {label}");
                }
            }
        }
    }
}

#[test]
fn bad_batches_end_in_errors_not_panics() {
    let tmp = TempDir::new("batch-search-bad");
    let ds = dataset(&tmp, Some("IVF_FLAT"));
    let req = |queries: Vec<Vec<f32>>| BatchNearest {
        column: "vec",
        queries,
        k: 5,
        metric: Metric::L2,
    };
    let p = AnnParams::default();
    let exact = AnnParams {
        use_index: false,
        ..Default::default()
    };
    for params in [&p, &exact] {
        let wide = nearest_batch(
            &ds,
            &req(vec![vec![0.0; DIM + 1]]),
            Filtering::None,
            None,
            params,
            RowMeta::default(),
        );
        let err = wide.unwrap_err().to_string();
        assert!(
            err.contains("Query vector size 9 does not match index column size 8"),
            "{err}"
        );
    }
    let empty = nearest_batch(
        &ds,
        &req(Vec::new()),
        Filtering::None,
        Some(&["id"]),
        &p,
        RowMeta::default(),
    )
    .unwrap();
    assert_eq!(empty.num_rows(), 0);
    assert_eq!(empty.schema().field(0).name(), QUERY_INDEX);
    let missing = BatchNearest {
        column: "nope",
        ..req(queries(2))
    };
    assert!(nearest_batch(&ds, &missing, Filtering::None, None, &p, RowMeta::default()).is_err());
    // a dataset with its own query_index column
    let b = batch(0, 100, 7, QUERY_INDEX);
    let dir = tmp.join("qi");
    let qi = Dataset::write(&dir, b.schema(), &[b], &WriteParams::default()).unwrap();
    let err = nearest_batch(
        &qi,
        &req(queries(2)),
        Filtering::None,
        None,
        &p,
        RowMeta::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("cannot be used on datasets with column 'query_index'"),
        "{err}"
    );
}
