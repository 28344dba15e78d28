//! Scanner options: `strict_batch_size` (exact batches over fragment ends, filters and
//! limits), `include_deleted_rows` (deleted rows back with a null `_rowid`, counted,
//! refused without row ids) and `fast_search` (an index-answered filter reads only the
//! fragments the index covers).

use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use lancer::index::{create_scalar_index, ScalarIndexOptions};
use lancer::{Dataset, DatasetExt, ScalarKind, Session, WriteParams};

fn ids(lo: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(lo..lo + n))],
    )
    .unwrap()
}

fn dataset(session: &Session) -> Dataset {
    let params = WriteParams {
        max_rows_per_file: 30,
        ..Default::default()
    };
    let ds = session
        .write("memory://opts/ds", &[ids(0, 100)], &params)
        .unwrap();
    let ds =
        create_scalar_index(&ds, "id", &ScalarIndexOptions::new(ScalarKind::BTree), None).unwrap();
    let ds = ds.append(&[ids(100, 50)], &params).unwrap();
    ds.delete_where("id % 10 = 3", |b| {
        let v = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        Ok(v.iter().map(|x| Some(x.unwrap_or(0) % 10 == 3)).collect())
    })
    .unwrap()
}

fn column(b: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let c = b.column_by_name(name).unwrap();
    if let Some(u) = c.as_any().downcast_ref::<UInt64Array>() {
        return u.iter().map(|x| x.map(|v| v as i64)).collect();
    }
    c.as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .iter()
        .collect()
}

#[test]
fn strict_batches_are_exact() {
    let session = Session::new();
    let ds = dataset(&session);
    for (size, filter, limit) in [
        (7, None, None),
        (64, Some("id % 3 = 0"), None),
        (9, None, Some(40)),
    ] {
        let mut scan = ds
            .scan()
            .batch_size(size)
            .strict_batch_size(true)
            .limit(limit);
        if let Some(f) = filter {
            scan = scan.filter(f);
        }
        let batches: Vec<RecordBatch> = scan.stream().unwrap().map(Result::unwrap).collect();
        let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let mut plain = ds.scan().batch_size(size).limit(limit);
        if let Some(f) = filter {
            plain = plain.filter(f);
        }
        assert_eq!(total as u64, plain.count_rows().unwrap());
        let (last, rest) = batches.split_last().unwrap();
        assert!(
            rest.iter().all(|b| b.num_rows() == size),
            "{size} {filter:?}"
        );
        assert!(last.num_rows() <= size && last.num_rows() > 0);
        // the same rows in the same order as the plain scan
        let a: Vec<_> = batches.iter().flat_map(|b| column(b, "id")).collect();
        let b: Vec<_> = plain.to_batch().map(|b| column(&b, "id")).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn deleted_rows_come_back_with_null_row_ids() {
    let session = Session::new();
    let ds = dataset(&session);
    let all = ds
        .scan()
        .with_row_id(true)
        .include_deleted_rows(true)
        .filter("id < 25")
        .to_batch()
        .unwrap();
    let got = column(&all, "id");
    assert_eq!(got, (0..25).map(Some).collect::<Vec<_>>());
    let row_ids = column(&all, "_rowid");
    for (id, rid) in got.iter().zip(&row_ids) {
        assert_eq!(rid.is_none(), id.unwrap() % 10 == 3, "{id:?} {rid:?}");
    }
    let counted = ds
        .scan()
        .with_row_id(true)
        .include_deleted_rows(true)
        .filter("id < 25")
        .count_rows()
        .unwrap();
    assert_eq!(counted, 25);
    let err = ds.scan().include_deleted_rows(true).stream().err().unwrap();
    assert!(err.to_string().contains("with_row_id"), "{err}");
}

#[test]
fn fast_search_reads_only_indexed_fragments_for_indexed_filters() {
    let session = Session::new();
    let ds = dataset(&session);
    let fast = ds.scan().filter("id > 50").fast_search(true);
    let rows = column(&fast.to_batch().unwrap(), "id");
    assert!(
        rows.iter().all(|x| x.unwrap() < 100),
        "appended rows left out"
    );
    assert_eq!(rows.len() as u64, fast.count_rows().unwrap());
    assert_eq!(rows.len(), (51..100).filter(|i| i % 10 != 3).count());
    // without the index answering (no filter), every fragment
    assert_eq!(
        ds.scan().fast_search(true).count_rows().unwrap(),
        ds.count_rows()
    );
}
