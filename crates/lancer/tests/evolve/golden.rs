//! Datasets pylance evolved (scripts/gen_golden_evolution.py) read identically in
//! Lancer.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::ArrayRef;
use arrow_schema::DataType;
use lancer::{Dataset, DatasetExt};
use lancer_testkit::oracle::live_dir;
use serde_json::Value;

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
    let Some(live) = live_dir("LANCER_GOLDEN_EVOLUTION_LIVE") else {
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
