//! Schema evolution and updates against a model: random sequences of appends, deletes,
//! updates, column adds (SQL and all-null), drops and renames applied to a Lancer
//! dataset and to an in-memory table; every version must equal the model, pylance
//! 14 / 12 / 11 must read every version identically (scripts/check_evolution.py), and
//! what pylance then writes on top (update, add_columns, append) must read the same in
//! Lancer.

mod compaction;
mod golden;
mod merge;
mod random;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use lancer::{Dataset, DatasetExt, WriteParams};
use lancer_format::container::FileVersion;
use lancer_table::evolution::ColumnChange;
use serde_json::{json, Value};

use crate::common::pylance;

/// The model: column names and types in order, rows by id.
#[derive(Clone, Debug, PartialEq)]
struct Model {
    columns: Vec<(String, DataType)>,
    rows: BTreeMap<i64, Vec<Value>>,
}

impl Model {
    fn col(&self, name: &str) -> usize {
        self.columns.iter().position(|c| c.0 == name).unwrap()
    }

    fn schema(&self) -> Arc<Schema> {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|(n, t)| Field::new(n, t.clone(), n != "id"))
                .collect::<Vec<_>>(),
        ))
    }

    fn batch_of(&self, ids: &[i64], rows: &[Vec<Value>]) -> RecordBatch {
        let _ = ids;
        let cols: Vec<ArrayRef> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, t))| -> ArrayRef {
                let vals = rows.iter().map(|r| &r[i]);
                match t {
                    DataType::Int64 => Arc::new(vals.map(Value::as_i64).collect::<Int64Array>()),
                    DataType::Float64 => {
                        Arc::new(vals.map(Value::as_f64).collect::<Float64Array>())
                    }
                    _ => Arc::new(vals.map(Value::as_str).collect::<StringArray>()),
                }
            })
            .collect();
        RecordBatch::try_new(self.schema(), cols).unwrap()
    }

    fn json(&self) -> Value {
        json!({
            "columns": self.columns.iter().map(|c| c.0.clone()).collect::<Vec<_>>(),
            "rows": self.rows.values().cloned().collect::<Vec<_>>(),
        })
    }
}

/// A table read back (by Lancer), as the model sees it.
fn read(ds: &Dataset) -> (Vec<String>, BTreeMap<i64, Vec<Value>>) {
    let b = ds.to_batch(None).unwrap();
    let names: Vec<String> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut rows = BTreeMap::new();
    for i in 0..b.num_rows() {
        let row: Vec<Value> = b.columns().iter().map(|c| value(c, i)).collect();
        rows.insert(row[0].as_i64().unwrap(), row);
    }
    (names, rows)
}

fn value(c: &ArrayRef, i: usize) -> Value {
    if c.is_null(i) {
        return Value::Null;
    }
    match c.data_type() {
        DataType::Int64 => json!(c.as_primitive::<Int64Type>().value(i)),
        DataType::Float64 => json!(c.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 => json!(c.as_string::<i32>().value(i)),
        t => panic!("unexpected type {t}"),
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn new_row(m: &Model, id: i64, rng: &mut Rng) -> Vec<Value> {
    m.columns
        .iter()
        .map(|(n, t)| match (n.as_str(), t) {
            ("id", _) => json!(id),
            (_, DataType::Int64) if rng.below(7) == 0 => Value::Null,
            (_, DataType::Int64) => json!(rng.below(1000) as i64 - 500),
            (_, DataType::Float64) => Value::Null,
            (_, _) if rng.below(5) == 0 => Value::Null,
            (_, _) => json!(format!("w{}", rng.below(50))),
        })
        .collect()
}

/// Applies `steps` random operations; returns the model of every version after the
/// first (version, model).
/// `_rowid` by `id` (datasets with stable row ids).
fn row_ids(ds: &Dataset) -> BTreeMap<i64, u64> {
    let b = ds
        .scan()
        .columns(&["id"])
        .with_row_id(true)
        .to_batch()
        .unwrap();
    let ids = b.column(0).as_primitive::<Int64Type>();
    let rid = b
        .column_by_name("_rowid")
        .unwrap()
        .as_primitive::<arrow_array::types::UInt64Type>();
    ids.values()
        .iter()
        .copied()
        .zip(rid.values().iter().copied())
        .collect()
}

/// A dataset of `b` with stable row ids, written by pylance 14 (Lancer does not create
/// them), fragments of `per_file` rows.
fn stable_dataset(
    root: &Path,
    storage: FileVersion,
    b: &RecordBatch,
    per_file: usize,
) -> Option<Dataset> {
    let py = pylance("14")?;
    let file = root.with_extension("arrow");
    let mut w =
        arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&file).unwrap(), &b.schema())
            .unwrap();
    w.write(b).unwrap();
    w.finish().unwrap();
    let out = Command::new(&py)
        .arg("-c")
        .arg("import lance, pyarrow as pa, sys; t = pa.ipc.open_file(sys.argv[1]).read_all(); lance.write_dataset(t, sys.argv[2], enable_stable_row_ids=True, max_rows_per_file=int(sys.argv[4]), data_storage_version=sys.argv[3])")
        .arg(&file)
        .arg(root)
        .arg(storage.to_string())
        .arg(per_file.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(Dataset::open(root).unwrap())
}

fn run(
    root: &Path,
    storage: FileVersion,
    seed: u64,
    steps: usize,
    stable: bool,
) -> Vec<(u64, Model, Value)> {
    let mut rng = Rng(seed);
    let mut m = Model {
        columns: vec![
            ("id".into(), DataType::Int64),
            ("x".into(), DataType::Int64),
            ("name".into(), DataType::Utf8),
        ],
        rows: BTreeMap::new(),
    };
    let params = WriteParams {
        storage,
        max_rows_per_file: 40,
        ..Default::default()
    };
    let mut next_id = 0i64;
    let mut rows = Vec::new();
    for _ in 0..90 {
        let r = new_row(&m, next_id, &mut rng);
        m.rows.insert(next_id, r.clone());
        rows.push(r);
        next_id += 1;
    }
    let first = m.batch_of(&[], &rows);
    let mut ds = if stable {
        match stable_dataset(root, storage, &first, 40) {
            Some(d) => d,
            None => return Vec::new(),
        }
    } else {
        Dataset::write(root, m.schema(), &[first], &params).unwrap()
    };
    let mut ids_before = if stable {
        row_ids(&ds)
    } else {
        BTreeMap::new()
    };
    let ids_json = |ds: &Dataset| -> Value {
        if stable {
            json!(row_ids(ds).into_iter().collect::<Vec<_>>())
        } else {
            Value::Null
        }
    };
    let mut out = vec![(ds.version(), m.clone(), ids_json(&ds))];
    let mut added = 0;
    for step in 0..steps {
        let what = rng.below(13);
        let int_cols: Vec<String> = m
            .columns
            .iter()
            .filter(|(n, t)| n != "id" && *t == DataType::Int64)
            .map(|c| c.0.clone())
            .collect();
        let str_cols: Vec<String> = m
            .columns
            .iter()
            .filter(|(_, t)| *t == DataType::Utf8)
            .map(|c| c.0.clone())
            .collect();
        let others: Vec<String> = m
            .columns
            .iter()
            .filter(|(n, _)| n != "id")
            .map(|c| c.0.clone())
            .collect();
        let at = format!("seed {seed} step {step} op {what}");
        ds = match what {
            0 => {
                let k = 1 + rng.below(30) as usize;
                let mut rows = Vec::new();
                for _ in 0..k {
                    let r = new_row(&m, next_id, &mut rng);
                    m.rows.insert(next_id, r.clone());
                    rows.push(r);
                    next_id += 1;
                }
                ds.append(&[m.batch_of(&[], &rows)], &params).unwrap()
            }
            1 => {
                let (md, r) = (2 + rng.below(6) as i64, rng.below(2) as i64);
                m.rows.retain(|id, _| id % md != r);
                ds.delete(&format!("id % {md} = {r}")).unwrap()
            }
            2 if !int_cols.is_empty() => {
                let c = &int_cols[rng.below(int_cols.len() as u64) as usize];
                let (md, r) = (2 + rng.below(5) as i64, rng.below(2) as i64);
                let i = m.col(c);
                for (id, row) in m.rows.iter_mut() {
                    if id % md == r {
                        row[i] = row[i].as_i64().map_or(Value::Null, |v| json!(v + 1));
                    }
                }
                let sql = format!("{c} + 1");
                lancer::write::update(&ds, Some(&format!("id % {md} = {r}")), &[(c, &sql)], None)
                    .unwrap()
                    .0
            }
            3 if !str_cols.is_empty() => {
                let c = &str_cols[rng.below(str_cols.len() as u64) as usize];
                let i = m.col(c);
                for (id, row) in m.rows.iter_mut() {
                    if id % 3 == 0 {
                        row[i] = row[i]
                            .as_str()
                            .map_or(Value::Null, |s| json!(s.to_uppercase()));
                    }
                }
                lancer::write::update(
                    &ds,
                    Some("id % 3 = 0"),
                    &[(c, &format!("upper({c})"))],
                    None,
                )
                .unwrap()
                .0
            }
            4 if !int_cols.is_empty() => {
                added += 1;
                let name = format!("c{added}");
                let src = &int_cols[rng.below(int_cols.len() as u64) as usize];
                let i = m.col(src);
                m.columns.push((name.clone(), DataType::Int64));
                for row in m.rows.values_mut() {
                    let v = row[i].as_i64().map_or(Value::Null, |v| json!(v * 2));
                    row.push(v);
                }
                lancer::write::add_columns(&ds, &[(&name, &format!("{src} * 2"))], None).unwrap()
            }
            5 => {
                added += 1;
                let name = format!("n{added}");
                m.columns.push((name.clone(), DataType::Float64));
                for row in m.rows.values_mut() {
                    row.push(Value::Null);
                }
                let s = Schema::new(vec![Field::new(&name, DataType::Float64, true)]);
                lancer::write::add_null_columns(&ds, &s).unwrap()
            }
            6 if others.len() > 1 => {
                let c = others[rng.below(others.len() as u64) as usize].clone();
                if rng.below(2) == 0 {
                    let i = m.col(&c);
                    m.columns.remove(i);
                    for row in m.rows.values_mut() {
                        row.remove(i);
                    }
                    lancer::write::drop_columns(&ds, &[&c]).unwrap()
                } else {
                    added += 1;
                    let new = format!("{c}_r{added}");
                    let i = m.col(&c);
                    m.columns[i].0 = new.clone();
                    let ch = ColumnChange {
                        path: c,
                        rename: Some(new),
                        nullable: None,
                    };
                    lancer::write::alter_columns(&ds, &[ch]).unwrap()
                }
            }
            7 => {
                let opts = lancer_table::evolution::CompactionOptions {
                    target_rows_per_fragment: 30 + rng.below(60),
                    // now and then a byte cap that splits a task into several files
                    max_bytes_per_file: (rng.below(3) == 0).then(|| 300 + rng.below(2000)),
                    ..Default::default()
                };
                lancer::write::compact_files(&ds, &opts, &|_, _| {})
                    .unwrap()
                    .0
            }
            8 => {
                // an upsert: some live ids, some new ones
                let live: Vec<i64> = m.rows.keys().copied().collect();
                let mut ids: Vec<i64> = Vec::new();
                for _ in 0..1 + rng.below(8) {
                    if let Some(&id) = live.get(rng.below(live.len() as u64) as usize) {
                        if !ids.contains(&id) {
                            ids.push(id);
                        }
                    }
                }
                for _ in 0..rng.below(4) {
                    ids.push(next_id);
                    next_id += 1;
                }
                let rows: Vec<Vec<Value>> =
                    ids.iter().map(|&id| new_row(&m, id, &mut rng)).collect();
                for r in &rows {
                    m.rows.insert(r[0].as_i64().unwrap(), r.clone());
                }
                let opts = lancer::write::MergeOptions {
                    on: vec!["id".into()],
                    update_matched: true,
                    insert_unmatched: true,
                    // both joins: the source hashed, or streamed against the target
                    // (with stable row ids: updated rows keep their ids, inserted
                    // ones spilled and written after them)
                    source_in_memory: Some(if rng.below(2) == 0 { 0 } else { 1 << 20 }),
                    ..Default::default()
                };
                let streamed = opts.source_in_memory == Some(0);
                let b = m.batch_of(&[], &rows);
                let (after, stats) =
                    lancer::write::merge_insert(&ds, &opts, b.schema(), [Ok(b)]).unwrap();
                if streamed && stable {
                    STREAMED_STABLE_MERGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                assert_eq!(stats.updated + stats.inserted, rows.len() as u64, "{at}");
                if !stats.indexes.is_empty() {
                    INDEXED_MERGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                after
            }
            10 if !int_cols.is_empty() => {
                // an integer column does not become a float one (pylance's rule: a cast
                // keeps the column's kind): refused, nothing changed
                let c = &int_cols[rng.below(int_cols.len() as u64) as usize];
                let e = lancer::write::cast_columns(&ds, &[(c, DataType::Float64)]);
                assert!(
                    e.is_err_and(|e| e.to_string().contains("keeps its kind")),
                    "{at}"
                );
                let latest = Dataset::open_in(ds.store().clone(), None).unwrap();
                assert_eq!(latest.version(), ds.version(), "{at}");
                ds
            }
            11 => {
                // columns from a table joined on id (pylance's merge): some rows match
                added += 1;
                let name = format!("j{added}");
                let ids: Vec<i64> = m
                    .rows
                    .keys()
                    .copied()
                    .filter(|id| id % 3 != 0)
                    .chain([next_id + 1000])
                    .collect();
                m.columns.push((name.clone(), DataType::Int64));
                for (id, row) in m.rows.iter_mut() {
                    row.push(if id % 3 != 0 {
                        json!(id * 3)
                    } else {
                        Value::Null
                    });
                }
                let s = Arc::new(Schema::new(vec![
                    Field::new("id", DataType::Int64, false),
                    Field::new(&name, DataType::Int64, true),
                ]));
                let b = RecordBatch::try_new(
                    s.clone(),
                    vec![
                        Arc::new(Int64Array::from(ids.clone())),
                        Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i * 3))),
                    ],
                )
                .unwrap();
                lancer::write::merge_columns(&ds, "id", s, [Ok(b)]).unwrap()
            }
            12 => {
                // an index on the key: later merges locate their rows through it
                let kind = if rng.below(2) == 0 {
                    lancer_index::scalar::ScalarKind::BTree
                } else {
                    lancer_index::scalar::ScalarKind::Bitmap
                };
                let mut opts = lancer::index::ScalarIndexOptions::new(kind);
                opts.replace = true;
                opts.params.btree_page_rows = 4;
                lancer::index::create_scalar_index(&ds, "id", &opts, None).unwrap()
            }
            9 => {
                let (v, old, _) = out[rng.below(out.len() as u64) as usize].clone();
                m = old;
                ds.restore(v).unwrap()
            }
            _ => continue,
        };
        if stable {
            // rows keep their ids through updates, merges and compactions; ids stay
            // unique; a restore brings back the old version's
            let now = row_ids(&ds);
            if what != 9 {
                for (id, rid) in &now {
                    if let Some(before) = ids_before.get(id) {
                        assert_eq!(rid, before, "{at}: row {id} changed its row id");
                    }
                }
            }
            let distinct: std::collections::BTreeSet<u64> = now.values().copied().collect();
            assert_eq!(distinct.len(), now.len(), "{at}: row ids repeat");
            ids_before = now;
        }
        let (names, rows) = read(&ds);
        let want: Vec<String> = m.columns.iter().map(|c| c.0.clone()).collect();
        assert_eq!(names, want, "{at}: columns");
        assert_eq!(rows, m.rows, "{at}: rows");
        out.push((ds.version(), m.clone(), ids_json(&ds)));
    }
    out
}

/// Merges of the random runs that located their rows through an index on `id`.
static INDEXED_MERGES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Merges of a streamed source into a dataset with stable row ids.
static STREAMED_STABLE_MERGES: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);
