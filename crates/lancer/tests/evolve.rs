//! Schema evolution and updates against a model: random sequences of appends, deletes,
//! updates, column adds (SQL and all-null), drops and renames applied to a Lancer
//! dataset and to an in-memory table; every version must equal the model, pylance
//! 14 / 12 / 11 must read every version identically (scripts/check_evolution.py), and
//! what pylance then writes on top (update, add_columns, append) must read the same in
//! Lancer.

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
use lancer_table::evolve::ColumnChange;
use serde_json::{json, Value};

use crate::common::{pylance, repo};

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
                lancer::evolve::update(&ds, Some(&format!("id % {md} = {r}")), &[(c, &sql)])
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
                lancer::evolve::update(&ds, Some("id % 3 = 0"), &[(c, &format!("upper({c})"))])
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
                lancer::evolve::add_columns(&ds, &[(&name, &format!("{src} * 2"))]).unwrap()
            }
            5 => {
                added += 1;
                let name = format!("n{added}");
                m.columns.push((name.clone(), DataType::Float64));
                for row in m.rows.values_mut() {
                    row.push(Value::Null);
                }
                let s = Schema::new(vec![Field::new(&name, DataType::Float64, true)]);
                lancer::evolve::add_null_columns(&ds, &s).unwrap()
            }
            6 if others.len() > 1 => {
                let c = others[rng.below(others.len() as u64) as usize].clone();
                if rng.below(2) == 0 {
                    let i = m.col(&c);
                    m.columns.remove(i);
                    for row in m.rows.values_mut() {
                        row.remove(i);
                    }
                    lancer::evolve::drop_columns(&ds, &[&c]).unwrap()
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
                    lancer::evolve::alter_columns(&ds, &[ch]).unwrap()
                }
            }
            7 => {
                let opts = lancer_table::compact::CompactionOptions {
                    target_rows_per_fragment: 30 + rng.below(60),
                    // now and then a byte cap that splits a task into several files
                    max_bytes_per_file: (rng.below(3) == 0).then(|| 300 + rng.below(2000)),
                    ..Default::default()
                };
                lancer::evolve::compact_files(&ds, &opts, &|_, _| {})
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
                let opts = lancer::evolve::MergeOptions {
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
                    lancer::evolve::merge_insert(&ds, &opts, b.schema(), [Ok(b)]).unwrap();
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
                let e = lancer::evolve::cast_columns(&ds, &[(c, DataType::Float64)]);
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
                lancer::evolve::merge_columns(&ds, "id", s, [Ok(b)]).unwrap()
            }
            12 => {
                // an index on the key: later merges locate their rows through it
                let kind = if rng.below(2) == 0 {
                    lancer_index::scalar::ScalarKind::BTree
                } else {
                    lancer_index::scalar::ScalarKind::Bitmap
                };
                let mut opts = lancer::scalar_index::ScalarIndexOptions::new(kind);
                opts.replace = true;
                opts.params.btree_page_rows = 4;
                lancer::scalar_index::create_scalar_index(&ds, "id", &opts).unwrap()
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

#[test]
fn random_evolution_matches_the_model_and_pylance() {
    let tmp = std::env::temp_dir().join(format!("lancer-evolve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cases = Vec::new();
    for (i, storage) in [FileVersion::V2_1, FileVersion::V2_2]
        .into_iter()
        .enumerate()
    {
        for seed in 1..=4u64 {
            // the fourth dataset of each storage version has stable row ids
            let stable = seed == 4;
            let root = tmp.join(format!("ds-{storage}-{seed}"));
            let versions = run(&root, storage, seed * 7919 + i as u64, 30, stable);
            if versions.is_empty() {
                continue;
            }
            cases.push(json!({
                "path": root,
                "versions": versions.iter().map(|(v, m, ids)| json!({"version": v, "table": m.json(), "rowids": ids})).collect::<Vec<_>>(),
            }));
        }
    }
    let list = tmp.join("cases.json");
    std::fs::write(&list, serde_json::to_string(&cases).unwrap()).unwrap();
    let checked: usize = cases
        .iter()
        .map(|c| c["versions"].as_array().unwrap().len())
        .sum();
    assert!(checked > 100, "{checked} versions");
    let indexed = INDEXED_MERGES.load(std::sync::atomic::Ordering::Relaxed);
    assert!(indexed > 0, "no merge went through the key's index");
    eprintln!("{indexed} merges located their rows through an index");
    let streamed = STREAMED_STABLE_MERGES.load(std::sync::atomic::Ordering::Relaxed);
    if pylance("14").is_some() {
        // the stable-row-id datasets come from pylance
        assert!(
            streamed > 0,
            "no streamed merge into a dataset with stable row ids"
        );
    }
    eprintln!("{streamed} streamed merges into datasets with stable row ids");
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        let out = Command::new(&py)
            .arg(repo().join("scripts/check_evolution.py"))
            .arg(&list)
            .arg(tmp.join(format!("pylance-{v}")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pylance {v}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // what pylance wrote on top of each Lancer dataset reads the same in Lancer
        let after: Value = serde_json::from_slice(&out.stdout).unwrap();
        for c in after.as_array().unwrap() {
            let ds = Dataset::open(c["path"].as_str().unwrap()).unwrap();
            let (names, rows) = read(&ds);
            let want = &c["table"];
            assert_eq!(
                json!(names),
                want["columns"],
                "pylance {v} then Lancer: {c}"
            );
            assert_eq!(
                json!(rows.values().cloned().collect::<Vec<_>>()),
                want["rows"],
                "pylance {v} then Lancer"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn bad_evolution_requests_leave_the_dataset_unchanged() {
    let tmp = std::env::temp_dir().join(format!("lancer-evolve-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
            Arc::new(StringArray::from(vec!["a", "b", "c"])),
        ],
    )
    .unwrap();
    let ds = Dataset::write(&tmp, schema, &[b], &WriteParams::default()).unwrap();
    let v = ds.version();
    let err = |r: lancer::Result<Dataset>| r.unwrap_err().to_string();
    let e = err(lancer::evolve::update(&ds, None, &[("x", "'abc'")]).map(|r| r.0));
    assert!(e.contains("'abc'") && e.contains("Int64"), "{e}");
    let e = err(lancer::evolve::update(&ds, None, &[("nope", "1")]).map(|r| r.0));
    assert!(e.contains("nope"), "{e}");
    let e = err(lancer::evolve::update(&ds, Some("nope > 1"), &[("x", "1")]).map(|r| r.0));
    assert!(e.contains("nope"), "{e}");
    let e = err(lancer::evolve::update(&ds, None, &[("id", "x")]).map(|r| r.0));
    assert!(e.contains("not nullable"), "{e}");
    let e = err(lancer::evolve::add_columns(&ds, &[("x", "id + 1")]));
    assert!(e.contains("exists"), "{e}");
    let e = err(lancer::evolve::add_columns(&ds, &[("y", "nope + 1")]));
    assert!(e.contains("nope"), "{e}");
    let e = err(lancer::evolve::drop_columns(&ds, &["id", "x", "s"]));
    assert!(e.contains("every column"), "{e}");
    let e = err(lancer::evolve::drop_columns(&ds, &["zz"]));
    assert!(e.contains("zz"), "{e}");
    let rename = |from: &str, to: &str| ColumnChange {
        path: from.into(),
        rename: Some(to.into()),
        nullable: None,
    };
    let e = err(lancer::evolve::alter_columns(&ds, &[rename("x", "s")]));
    assert!(e.contains("exists"), "{e}");
    let not_null = ColumnChange {
        path: "x".into(),
        rename: None,
        nullable: Some(false),
    };
    let e = err(lancer::evolve::alter_columns(&ds, &[not_null]));
    assert!(e.contains("nulls"), "{e}");
    let again = Dataset::open(&tmp).unwrap();
    assert_eq!(again.version(), v, "no version was committed");
    assert_eq!(read(&again), read(&ds));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A cell of a pylance table (JSON) and of Lancer's (an Arrow array), equal within
/// f32 rounding for floats.
fn cells_equal(want: &Value, got: &ArrayRef, i: usize) -> bool {
    use arrow_array::types::{Float32Type, Int32Type, UInt64Type};
    if got.is_null(i) || want.is_null() {
        return got.is_null(i) && want.is_null();
    }
    match got.data_type() {
        DataType::Int64 => want.as_i64() == Some(got.as_primitive::<Int64Type>().value(i)),
        DataType::Int32 => {
            want.as_i64() == Some(i64::from(got.as_primitive::<Int32Type>().value(i)))
        }
        DataType::UInt64 => want.as_u64() == Some(got.as_primitive::<UInt64Type>().value(i)),
        DataType::Float32 => want
            .as_f64()
            .is_some_and(|w| (w as f32) == got.as_primitive::<Float32Type>().value(i)),
        DataType::Float64 => want.as_f64() == Some(got.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 => want.as_str() == Some(got.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => want.as_str() == Some(got.as_string::<i64>().value(i)),
        DataType::FixedSizeList(..) => {
            let l = got.as_fixed_size_list().value(i);
            let w = want.as_array().unwrap();
            w.len() == l.len() && (0..l.len()).all(|k| cells_equal(&w[k], &l, k))
        }
        DataType::Struct(fields) => {
            let s = got.as_struct();
            fields
                .iter()
                .enumerate()
                .all(|(k, f)| cells_equal(&want[f.name()], s.column(k), i))
        }
        t => panic!("a golden column of type {t}"),
    }
}

/// Every version of every dataset pylance 14 / 12 / 11 evolved
/// (scripts/gen_golden_evolution.py: add / drop / alter columns, update, merge_insert,
/// compaction with and without indexes, restore, cleanup) reads in Lancer as pylance
/// read it: columns, values, row addresses (and stable row ids); filters through the
/// indexes pylance remapped give the scan's rows.
#[test]
fn pylance_evolved_datasets_read_identically() {
    let Some(live) = std::env::var_os("LANCER_GOLDEN_EVOLUTION_LIVE") else {
        assert!(
            std::env::var_os("LANCER_REQUIRE_PYLANCE").is_none(),
            "LANCER_GOLDEN_EVOLUTION_LIVE unset: run scripts/test.sh"
        );
        eprintln!("SKIPPED: LANCER_GOLDEN_EVOLUTION_LIVE unset");
        return;
    };
    let mut checked = 0;
    let mut unreadable_by_pylance = 0;
    let mut roots: Vec<_> = std::fs::read_dir(&live)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.json").exists())
        .collect();
    roots.sort();
    assert_eq!(
        roots.len(),
        3,
        "one directory per pylance version in {live:?}"
    );
    for root in roots {
        let expected: Value =
            serde_json::from_slice(&std::fs::read(root.join("expected.json")).unwrap()).unwrap();
        for (name, case) in expected["datasets"].as_object().unwrap() {
            let path = root.join(case["path"].as_str().unwrap());
            let present: Vec<u64> =
                lancer_table::versions::list_versions(&lancer_io::Store::local(&path))
                    .unwrap()
                    .iter()
                    .map(|v| v.version)
                    .collect();
            for v in case["versions"].as_array().unwrap() {
                let Some(version) = v["version"].as_u64() else {
                    continue;
                };
                // cleanup removed the older versions of its case
                if !present.contains(&version) {
                    continue;
                }
                let at = format!("{}: {name} v{version}", root.display());
                if !v["pylance_read_error"].is_null() {
                    // pylance committed a version it cannot read (a nested cast on
                    // 2.0 files): Lancer reads it, every row
                    let ds = Dataset::open_version(&path, version)
                        .unwrap_or_else(|e| panic!("{at}: {e}"));
                    let b = ds.scan().to_batch().unwrap_or_else(|e| panic!("{at}: {e}"));
                    if let Some(n) = v["num_rows"].as_u64() {
                        assert_eq!(b.num_rows() as u64, n, "{at}: rows");
                    }
                    unreadable_by_pylance += 1;
                    continue;
                }
                if !v["table"].is_object() {
                    continue;
                }
                let ds =
                    Dataset::open_version(&path, version).unwrap_or_else(|e| panic!("{at}: {e}"));
                let stable = ds.uses_stable_row_ids();
                let b = ds
                    .scan()
                    .with_row_address(true)
                    .with_row_id(stable)
                    .to_batch()
                    .unwrap_or_else(|e| panic!("{at}: {e}"));
                let table = v["table"].as_object().unwrap();
                let rows = v["num_rows"].as_u64().unwrap() as usize;
                assert_eq!(b.num_rows(), rows, "{at}: rows");
                for (col, values) in table {
                    let got = match col.as_str() {
                        "_rowaddr" => b.column_by_name("_rowaddr"),
                        "_rowid" if !stable => continue,
                        c if c.starts_with("_row_") => continue,
                        c => b.column_by_name(c),
                    }
                    .unwrap_or_else(|| panic!("{at}: no column {col}"));
                    let values = values.as_array().unwrap();
                    for (i, w) in values.iter().enumerate() {
                        assert!(
                            cells_equal(w, got, i),
                            "{at}: {col}[{i}]: {w} vs {:?}",
                            got.slice(i, 1)
                        );
                    }
                }
                // an indexed filter answers as the scan does
                let indexed = v["manifest"]["indices"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|i| i["name"] == "id_idx"));
                if indexed && b.column_by_name("id").is_some() {
                    let f = ds.scan().filter("id < 100").to_batch().unwrap();
                    let ids = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
                    let want = ids.values().iter().filter(|&&x| x < 100).count();
                    assert_eq!(f.num_rows(), want, "{at}: id < 100 through the index");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 300, "{checked} versions checked");
    // pylance 12 / 14's nested casts on 2.0 files (if pylance ever reads them, this goes)
    assert!(
        unreadable_by_pylance >= 4,
        "{unreadable_by_pylance} versions pylance cannot read"
    );
}

/// Lancer plans the compactions pylance made in the golden datasets (same groups of
/// fragments, from the version pylance planned on, with its options).
#[test]
fn compaction_plans_like_pylance() {
    let Some(live) = std::env::var_os("LANCER_GOLDEN_EVOLUTION_LIVE") else {
        assert!(std::env::var_os("LANCER_REQUIRE_PYLANCE").is_none());
        eprintln!("SKIPPED: LANCER_GOLDEN_EVOLUTION_LIVE unset");
        return;
    };
    let mut compared = 0;
    for entry in std::fs::read_dir(&live).unwrap() {
        let root = entry.unwrap().path();
        let Ok(bytes) = std::fs::read(root.join("expected.json")) else {
            continue;
        };
        let expected: Value = serde_json::from_slice(&bytes).unwrap();
        for (name, case) in expected["datasets"].as_object().unwrap() {
            if case["stable_row_ids"] == true {
                continue;
            }
            let path = root.join(case["path"].as_str().unwrap());
            let versions = case["versions"].as_array().unwrap();
            // the latest version before each step
            let mut latest = 0u64;
            for step in case["steps"].as_array().unwrap() {
                let label = step["step"].as_str().unwrap();
                let made: Vec<u64> = step["versions"]
                    .as_array()
                    .map(|v| v.iter().filter_map(Value::as_u64).collect())
                    .unwrap_or_default();
                let before = latest;
                latest = made.iter().copied().max().unwrap_or(latest).max(latest);
                if !label.starts_with("compact_files") {
                    continue;
                }
                // the options the generator passed (scripts/gen_golden_evolution.py)
                let mut opts = lancer_table::compact::CompactionOptions::default();
                // "again (no-op)" repeats target 150
                if label.contains("target 150") || label.contains("again") {
                    opts.target_rows_per_fragment = 150;
                } else if label.contains("target 300") {
                    opts.target_rows_per_fragment = 300;
                }
                if label.contains("threshold 0.01") {
                    opts.materialize_deletions_threshold = 0.01;
                }
                // planned on the version before the step; none made: nothing to do
                let planned_on = before;
                let Ok(ds) = Dataset::open_version(&path, planned_on) else {
                    continue;
                };
                let plan = ds.plan_compaction(&opts).unwrap();
                let want: Vec<Vec<u64>> = match made.last() {
                    Some(&rw) => {
                        let v = versions.iter().find(|v| v["version"] == rw).unwrap();
                        v["manifest"]["transaction"]["op"]["groups"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|g| {
                                g["old_fragments"]
                                    .as_array()
                                    .unwrap()
                                    .iter()
                                    .map(|f| f["id"].as_u64().unwrap())
                                    .collect()
                            })
                            .collect()
                    }
                    None => Vec::new(),
                };
                assert_eq!(plan, want, "{}: {name} {label}", root.display());
                compared += 1;
            }
        }
    }
    assert!(compared >= 30, "{compared} compactions compared");
}

/// A BTREE index stays correct through a compaction (its bitmap keeps the old
/// fragments; the new ones are searched unindexed), in Lancer and in pylance.
#[test]
fn indexed_filters_stay_right_after_compaction() {
    indexed_compaction(false);
    // with stable row ids the index's ids stay valid: its bitmap moves to the new
    // fragment (no new segment)
    indexed_compaction(true);
}

fn indexed_compaction(stable: bool) {
    let tmp = std::env::temp_dir().join(format!(
        "lancer-compact-idx-{}-{stable}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Int64, true),
    ]));
    let params = WriteParams {
        max_rows_per_file: 100,
        ..Default::default()
    };
    let batch = |from: i64, n: i64| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(from..from + n)),
                Arc::new(Int64Array::from_iter_values(
                    (from..from + n).map(|v| v % 7),
                )),
            ],
        )
        .unwrap()
    };
    let ds = if stable {
        match stable_dataset(&tmp, FileVersion::V2_1, &batch(0, 400), 100) {
            Some(d) => d,
            None => return,
        }
    } else {
        Dataset::write(&tmp, schema.clone(), &[batch(0, 400)], &params).unwrap()
    };
    assert_eq!(ds.uses_stable_row_ids(), stable);
    let opts =
        lancer::scalar_index::ScalarIndexOptions::new(lancer_index::scalar::ScalarKind::BTree);
    let ds = lancer::scalar_index::create_scalar_index(&ds, "id", &opts).unwrap();
    let ds = ds.append(&[batch(400, 50)], &params).unwrap();
    let ds = ds.delete("id % 10 = 3").unwrap();
    let copts = lancer_table::compact::CompactionOptions {
        target_rows_per_fragment: 1000,
        ..Default::default()
    };
    let (after, stats) = lancer::evolve::compact_files(&ds, &copts, &|_, _| {}).unwrap();
    assert_eq!(
        stats.fragments_removed, 4,
        "{stats:?}: the indexed fragments, one task"
    );
    assert_eq!(
        after.fragments().len(),
        2,
        "the unindexed fragment alone is left"
    );
    for f in ["id < 120", "id >= 395 AND id < 410", "id = 13", "id = 14"] {
        let want = ds.scan().filter(f).to_batch().unwrap();
        let got = after.scan().filter(f).to_batch().unwrap();
        let ids = |b: &RecordBatch| {
            let mut v = b.column(0).as_primitive::<Int64Type>().values().to_vec();
            v.sort_unstable();
            v
        };
        assert_eq!(ids(&got), ids(&want), "{f}");
    }
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        let out = Command::new(&py)
            .arg("-c")
            .arg(
                "import lance, sys\n\
                 ds = lance.dataset(sys.argv[1])\n\
                 print(sorted(ds.to_table(filter='id < 120')['id'].to_pylist()) == [i for i in range(120) if i % 10 != 3], ds.count_rows(), len({i['name'] for i in ds.list_indices()}))",
            )
            .arg(&tmp)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.trim(),
            "True 405 1",
            "pylance {v}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
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
        let tmp =
            std::env::temp_dir().join(format!("lancer-merge-modes-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let params = WriteParams {
            max_rows_per_file: 7,
            ..Default::default()
        };
        let ids: Vec<i64> = (0..20).collect();
        let mut ds = Dataset::write(&tmp, schema.clone(), &[batch(&ids, 0)], &params).unwrap();
        // with an index: deletions in an indexed fragment, an unindexed appended one
        if let Some(kind) = kind {
            ds = ds.delete("id = 3").unwrap();
            let mut opts = lancer::scalar_index::ScalarIndexOptions::new(kind);
            // one-row pages: a few keys read a few rows of the index, under the eighth
            // of it that makes the BTREE worth using
            opts.params.btree_page_rows = 1;
            ds = lancer::scalar_index::create_scalar_index(&ds, "id", &opts).unwrap();
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
            let opts = lancer::evolve::MergeOptions {
                on: vec!["id".into()],
                update_matched: up,
                insert_unmatched: ins,
                delete_unmatched_by_source: del.is_some(),
                delete_filter: del.filter(|d| !d.is_empty()).map(str::to_string),
                source_in_memory: mem,
                update_condition: cond.map(str::to_string),
                no_index: false,
            };
            let b = batch(ids, 1);
            let r = lancer::evolve::merge_insert(ds, &opts, b.schema(), [Ok(b)]);
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
        let _ = std::fs::remove_dir_all(&tmp);
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
    let tmp = std::env::temp_dir().join(format!("lancer-stable-append-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
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
    let _ = std::fs::remove_dir_all(&tmp);
}
