//! Merges (`merge_insert`) in each mode on both joins, and appends to datasets with
//! stable row ids.

use std::process::Command;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer::{Dataset, DatasetExt, WriteParams};
use serde_json::json;

use crate::common::{pylance, TempDir};

use super::read;

/// Matched rows deleted (`when_matched_delete`) or failing the merge
/// (`when_matched_fail`) give the same answer whether the source is hashed in memory or
/// streamed against the target's keys: the deleted count and rows, the failure naming
/// the first matched key with nothing committed, and a second matched action refused.
#[test]
fn matched_rows_deleted_or_failing_on_both_joins() {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let batch = |ids: &[i64]| {
        RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(ids.to_vec()))],
        )
        .unwrap()
    };
    for (n, mem) in [Some(0usize), None].into_iter().enumerate() {
        let tmp = TempDir::new(&format!("merge-matched-{n}"));
        let params = WriteParams {
            max_rows_per_file: 4,
            ..Default::default()
        };
        let ids: Vec<i64> = (0..10).collect();
        let ds = Dataset::write(&tmp, schema.clone(), &[batch(&ids)], &params).unwrap();
        let merge = |opts: lancer::write::MergeOptions, ids: &[i64]| {
            let opts = lancer::write::MergeOptions {
                on: vec!["id".into()],
                source_in_memory: mem,
                ..opts
            };
            let b = batch(ids);
            lancer::write::merge_insert(&ds, &opts, b.schema(), [Ok(b)])
        };
        let delete = lancer::write::MergeOptions {
            delete_matched: true,
            insert_unmatched: true,
            ..Default::default()
        };
        let (after, s) = merge(delete.clone(), &[2, 5, 11]).unwrap();
        assert_eq!((s.updated, s.inserted, s.deleted), (0, 1, 2), "{mem:?}");
        let got: Vec<i64> = read(&after).1.keys().copied().collect();
        assert_eq!(got, vec![0, 1, 3, 4, 6, 7, 8, 9, 11], "{mem:?}");
        let e = merge(delete, &[2, 2]).unwrap_err().to_string();
        assert!(e.contains("Ambiguous merge inserts"), "{e}");
        let fail = lancer::write::MergeOptions {
            fail_on_match: true,
            insert_unmatched: true,
            ..Default::default()
        };
        let before = ds.latest().unwrap().version();
        let e = merge(fail.clone(), &[30, 4, 3]).unwrap_err();
        assert!(
            matches!(&e, lancer::Error::Table(lancer::TableError::Refused { .. })),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("found matching row with key values: id = "),
            "{e}"
        );
        assert_eq!(ds.latest().unwrap().version(), before, "nothing committed");
        let (after, s) = merge(fail, &[30, 31]).unwrap();
        assert_eq!((s.inserted, s.deleted), (2, 0));
        // committed on the latest version (the delete merge's nine rows), as a rebase
        assert_eq!(after.count_rows(), 9 + 2);
        let both = lancer::write::MergeOptions {
            update_matched: true,
            delete_matched: true,
            ..Default::default()
        };
        let e = merge(both, &[1]).unwrap_err().to_string();
        assert!(e.contains("one thing with matched rows"), "{e}");
    }
}

/// Every merge mode gives the same table whether the source is hashed in memory or
/// streamed against the target's keys, and whether a BTREE / BITMAP index on the key
/// locates the matched rows (pylance's indexed merge) or the key column is scanned;
/// duplicate source keys matching a row are pylance's ambiguity error on every path.
#[test]
fn merge_modes_agree_on_both_joins() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Int64, true),
    ]));
    let batch = |ids: &[i64], x: i64| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(ids.to_vec())),
                Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i * 10 + x))),
            ],
        )
        .unwrap()
    };
    let mut tables = Vec::new();
    let variants = [
        (Some(0usize), None),
        (None, None),
        (None, Some(lancer_index::scalar::ScalarKind::BTree)),
        (None, Some(lancer_index::scalar::ScalarKind::Bitmap)),
    ];
    for (n, (mem, kind)) in variants.into_iter().enumerate() {
        let tmp = TempDir::new(&format!("merge-modes-{n}"));
        let params = WriteParams {
            max_rows_per_file: 7,
            ..Default::default()
        };
        let ids: Vec<i64> = (0..20).collect();
        let mut ds = Dataset::write(&tmp, schema.clone(), &[batch(&ids, 0)], &params).unwrap();
        // with an index: deletions in an indexed fragment, an unindexed appended one
        if let Some(kind) = kind {
            ds = ds.delete("id = 3").unwrap();
            let mut opts = lancer::index::ScalarIndexOptions::new(kind);
            // one-row pages: a few keys read a few rows of the index, under the eighth
            // of it that makes the BTREE worth using
            opts.params.btree_page_rows = 1;
            ds = lancer::index::create_scalar_index(&ds, "id", &opts, None).unwrap();
            ds = ds
                .append(&[batch(&[3], 0)], &WriteParams::default())
                .unwrap();
        }
        let run_if = |ds: &Dataset,
                      ids: &[i64],
                      up: bool,
                      ins: bool,
                      del: Option<&str>,
                      cond: Option<&str>| {
            let opts = lancer::write::MergeOptions {
                on: vec!["id".into()],
                update_matched: up,
                insert_unmatched: ins,
                delete_unmatched_by_source: del.is_some(),
                delete_filter: del.filter(|d| !d.is_empty()).map(str::to_string),
                source_in_memory: mem,
                update_condition: cond.map(str::to_string),
                no_index: false,
                ..Default::default()
            };
            let b = batch(ids, 1);
            let r = lancer::write::merge_insert(ds, &opts, b.schema(), [Ok(b)]);
            if let Ok((_, s)) = &r {
                // the index is used exactly when pylance would use it
                let indexed = kind.is_some() && mem.is_none() && del.is_none();
                assert_eq!(!s.indexes.is_empty(), indexed, "{s:?}");
                if indexed {
                    assert!(s.indexes[0].contains("id_idx"), "{s:?}");
                    assert!(s.fragments_scanned < ds.fragments().len() as u64, "{s:?}");
                }
            }
            r
        };
        let run = |ds: &Dataset, ids: &[i64], up: bool, ins: bool, del: Option<&str>| {
            run_if(ds, ids, up, ins, del, None)
        };
        let (d, s) = run(&ds, &[5, 6, 100], true, true, None).unwrap();
        assert_eq!((s.updated, s.inserted, s.deleted), (2, 1, 0));
        ds = d;
        let (d, s) = run(&ds, &[5, 101], false, true, None).unwrap();
        assert_eq!((s.updated, s.inserted), (0, 1), "insert only");
        ds = d;
        let (d, s) = run(&ds, &[7, 102], true, false, None).unwrap();
        assert_eq!((s.updated, s.inserted), (1, 0), "update only");
        ds = d;
        // a conditional update: both match, only 11 passes, nothing inserted
        let cond = Some("target.id = 11 AND source.x > target.x");
        let (d, s) = run_if(&ds, &[10, 11, 103], true, false, None, cond).unwrap();
        assert_eq!((s.updated, s.inserted), (1, 0), "conditional update");
        ds = d;
        let (d, s) = run(&ds, &[1, 2], false, false, Some("id < 10")).unwrap();
        assert_eq!(s.deleted, 8, "ids 0, 3..9 deleted");
        ds = d;
        let v = ds.version();
        let e = run(&ds, &[12, 12], true, true, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Ambiguous merge inserts") && e.contains("(id = 12)"),
            "{e}"
        );
        assert_eq!(
            Dataset::open(&tmp).unwrap().version(),
            v,
            "nothing committed"
        );
        let (d, s) = run(&ds, &[200, 200], true, true, None).unwrap();
        assert_eq!(s.inserted, 2, "unmatched duplicates are both inserted");
        ds = d;
        let (_, rows) = read(&ds);
        tables.push(rows);
    }
    assert_eq!(tables[0], tables[1], "the two joins agree");
    let ids: Vec<i64> = tables[0].keys().copied().collect();
    assert_eq!(
        ids,
        vec![1, 2, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 100, 101, 200],
        "{:?}",
        tables[0]
    );
    assert_eq!(
        tables[0][&1],
        vec![json!(1), json!(10)],
        "a delete-only merge leaves matched rows"
    );
    assert_eq!(
        tables[0][&100],
        vec![json!(100), json!(1001)],
        "inserted with the source's x"
    );
}

/// Appends to a dataset with stable row ids (pylance-made) give the new rows ids from
/// the dataset's `next_row_id` and their created / updated version, so pylance 14 / 12 /
/// 11 open it (without them pylance refused: "All fragments must have row ids").
#[test]
fn appends_to_stable_row_id_datasets_carry_row_ids() {
    let Some(py14) = pylance("14") else { return };
    let scratch = TempDir::new("stable-append");
    let tmp = scratch.join("ds");
    let out = Command::new(&py14)
        .arg("-c")
        .arg("import lance, pyarrow as pa, sys; lance.write_dataset(pa.table({'id': list(range(5))}), sys.argv[1], enable_stable_row_ids=True)")
        .arg(&tmp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ds = Dataset::open(&tmp).unwrap();
    assert!(ds.uses_stable_row_ids());
    let schema = ds.schema();
    let batch = |ids: Vec<i64>| {
        RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(ids))]).unwrap()
    };
    let ds = ds
        .append(&[batch(vec![10, 11])], &WriteParams::default())
        .unwrap();
    let ds = ds
        .append(&[batch(vec![12])], &WriteParams::default())
        .unwrap();
    let ds = ds.delete("id = 10").unwrap();
    let b = ds.scan().with_row_id(true).to_batch().unwrap();
    let ids = b
        .column_by_name("_rowid")
        .unwrap()
        .as_primitive::<arrow_array::types::UInt64Type>();
    assert_eq!(ids.values().to_vec(), vec![0, 1, 2, 3, 4, 6, 7]);
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        let out = Command::new(&py)
            .arg("-c")
            .arg("import lance, sys; t = lance.dataset(sys.argv[1]).to_table(with_row_id=True); print(t['id'].to_pylist(), t['_rowid'].to_pylist())")
            .arg(&tmp)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "[0, 1, 2, 3, 4, 11, 12] [0, 1, 2, 3, 4, 6, 7]",
            "pylance {v}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A source struct naming a field the dataset's struct does not have (here after a
/// rename) is refused, nested in lists too, never paired by position; nothing is
/// committed.
#[test]
fn merge_sources_with_unknown_struct_fields_are_refused() {
    let inner = |names: [&str; 2]| {
        DataType::Struct(
            vec![
                Field::new(names[0], DataType::Int64, true),
                Field::new(names[1], DataType::Utf8, true),
            ]
            .into(),
        )
    };
    let table = |names: [&str; 2], ids: Vec<i64>| {
        let n = ids.len();
        let st = arrow_array::StructArray::from(vec![
            (
                Arc::new(Field::new(names[0], DataType::Int64, true)),
                Arc::new(Int64Array::from(ids.clone())) as arrow_array::ArrayRef,
            ),
            (
                Arc::new(Field::new(names[1], DataType::Utf8, true)),
                Arc::new(arrow_array::StringArray::from(vec!["x"; n])) as arrow_array::ArrayRef,
            ),
        ]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("st", inner(names), true),
        ]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(ids)), Arc::new(st)]).unwrap()
    };
    let tmp = TempDir::new("merge-struct-names");
    let base = table(["a", "bb"], (0..6).collect());
    let ds = Dataset::write(&tmp, base.schema(), &[base], &WriteParams::default()).unwrap();
    let before = ds.version();
    let src = table(["a", "b"], vec![1, 9]);
    let opts = lancer::write::MergeOptions {
        on: vec!["id".into()],
        update_matched: true,
        insert_unmatched: true,
        ..Default::default()
    };
    let e = lancer::write::merge_insert(&ds, &opts, src.schema(), [Ok(src)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"b\"") && e.contains("bb"), "{e}");
    assert_eq!(ds.latest().unwrap().version(), before);
    // the same names merge
    let ok = table(["a", "bb"], vec![1, 9]);
    let (after, s) = lancer::write::merge_insert(&ds, &opts, ok.schema(), [Ok(ok)]).unwrap();
    assert_eq!((s.updated, s.inserted), (1, 1));
    assert_eq!(after.count_rows(), 7);
}
