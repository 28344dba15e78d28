//! `Scanner::order_by` against a plain reference sort, on shapes that stress the
//! key-prefix comparison: strings sharing prefixes longer than 16 bytes, strings that
//! are prefixes of others, embedded zero bytes, nulls first and last, descending keys,
//! one repeated value, several fragments with deletions; whole sorts, top-k (limit) and
//! offsets. Ties keep the scan's order.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use lancer::{Dataset, DatasetExt, Session, SortKey, WriteParams};

fn data(n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
        Field::new("k", DataType::Int64, true),
    ]));
    let long = "p".repeat(20);
    let s: StringArray = (0..n)
        .map(|i| match i % 9 {
            0 => None,
            1 => Some(format!("{long}{}", i % 5)),
            2 => Some(long.clone()),
            3 => Some(format!("{long}\0{}", i % 3)),
            4 => Some(String::new()),
            5 => Some("a".to_string()),
            _ => Some(format!("{}", (i * 7919) % 101)),
        })
        .collect();
    let k: Int64Array = (0..n)
        .map(|i| (i % 11 != 3).then_some((i * 31) % 7 - 3))
        .collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..n)),
            Arc::new(s),
            Arc::new(k),
        ],
    )
    .unwrap()
}

fn cmp_opt<T: Ord>(a: Option<T>, b: Option<T>, key: &SortKey) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => {
            if key.nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (Some(_), None) => {
            if key.nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Some(x), Some(y)) => {
            if key.ascending {
                x.cmp(&y)
            } else {
                y.cmp(&x)
            }
        }
    }
}

#[test]
fn order_by_matches_a_reference_sort() {
    let session = Session::new();
    let uri = "memory://order/ds";
    let params = WriteParams {
        max_rows_per_file: 700,
        ..Default::default()
    };
    let ds = session.write(uri, &[data(3000)], &params).unwrap();
    let ds: Dataset = ds
        .delete_where("id % 13 = 5", |b| {
            let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            Ok(ids.iter().map(|x| Some(x.unwrap_or(0) % 13 == 5)).collect())
        })
        .unwrap();
    let all = ds.scan().to_batch().unwrap();
    let ids = all.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    let s = all
        .column(1)
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    let k = all.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
    let key = |c: &str, asc: bool, nf: bool| SortKey {
        column: c.into(),
        ascending: asc,
        nulls_first: nf,
    };
    let orders = [
        vec![key("s", true, false)],
        vec![key("s", false, true), key("k", true, false)],
        vec![key("k", true, true), key("s", true, false)],
        vec![key("k", false, false)],
    ];
    for keys in &orders {
        // the reference: a stable sort of scan positions by the keys
        let mut want: Vec<usize> = (0..all.num_rows()).collect();
        want.sort_by(|&a, &b| {
            let mut o = Ordering::Equal;
            for kk in keys {
                o = o.then_with(|| match kk.column.as_str() {
                    "s" => cmp_opt(
                        s.is_valid(a).then(|| s.value(a)),
                        s.is_valid(b).then(|| s.value(b)),
                        kk,
                    ),
                    _ => cmp_opt(
                        k.is_valid(a).then(|| k.value(a)),
                        k.is_valid(b).then(|| k.value(b)),
                        kk,
                    ),
                });
            }
            o
        });
        let want: Vec<i64> = want.iter().map(|&i| ids.value(i)).collect();
        for (offset, limit) in [
            (0, None),
            (0, Some(1)),
            (0, Some(37)),
            (25, Some(100)),
            (2500, None),
        ] {
            let got = ds
                .scan()
                .order_by(keys)
                .offset(offset)
                .limit(limit)
                .to_batch()
                .unwrap();
            let got: Vec<i64> = got
                .column_by_name("id")
                .unwrap()
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .values()
                .to_vec();
            let start = (offset as usize).min(want.len());
            let end = limit.map_or(want.len(), |l| (start + l as usize).min(want.len()));
            assert_eq!(
                got,
                want[start..end],
                "{keys:?} offset {offset} limit {limit:?}"
            );
        }
    }
}

/// Large enough to be sorted in parallel runs and merged: the same order as a plain
/// stable sort, ties (many equal keys) in scan order.
#[test]
fn parallel_sorts_merge_to_the_reference_order() {
    let session = Session::new();
    let n = 150_000i64;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("k", DataType::Int64, true),
    ]));
    let k: Int64Array = (0..n)
        .map(|i| (i % 97 != 5).then_some((i * 7919) % 1013))
        .collect();
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(0..n)), Arc::new(k)],
    )
    .unwrap();
    let params = WriteParams {
        max_rows_per_file: 40_000,
        ..Default::default()
    };
    let ds = session
        .write("memory://order/big", std::slice::from_ref(&batch), &params)
        .unwrap();
    let keys = [SortKey {
        column: "k".into(),
        ascending: false,
        nulls_first: true,
    }];
    let got = ds.scan().order_by(&keys).to_batch().unwrap();
    let got = got
        .column_by_name("id")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .values()
        .to_vec();
    let kc = batch
        .column(1)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    let mut want: Vec<i64> = (0..n).collect();
    want.sort_by(|&a, &b| {
        let (x, y) = (a as usize, b as usize);
        cmp_opt(
            kc.is_valid(x).then(|| kc.value(x)),
            kc.is_valid(y).then(|| kc.value(y)),
            &keys[0],
        )
    });
    assert_eq!(got, want);
}

/// Computed columns only, ordered by a dataset column they do not include (pylance's
/// `scanner(columns={"id2": "id * 2"}, order_by=["k"])`): the key is read for the sort
/// and left out of the rows.
#[test]
fn computed_columns_sort_by_a_column_not_projected() {
    let session = Session::new();
    let ds = session
        .write(
            "memory://order/computed",
            &[data(200)],
            &WriteParams::default(),
        )
        .unwrap();
    let mut key = SortKey::ascending("k");
    key.nulls_first = true;
    let got = ds
        .scan()
        .project(&[("id2", "id * 2")])
        .order_by(&[key, SortKey::ascending("id")])
        .limit(Some(30))
        .to_batch()
        .unwrap();
    assert_eq!(got.num_columns(), 1);
    assert_eq!(got.schema().field(0).name(), "id2");
    let all = data(200);
    let ids = all.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    let k = all.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
    let mut want: Vec<(Option<i64>, i64)> = (0..200)
        .map(|i| (k.is_valid(i).then(|| k.value(i)), ids.value(i)))
        .collect();
    want.sort();
    let want: Vec<i64> = want.iter().take(30).map(|(_, id)| id * 2).collect();
    let got = got.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!(got.values().to_vec(), want);
}
