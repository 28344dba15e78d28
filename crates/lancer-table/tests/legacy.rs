//! Legacy datasets (`data_storage_version="legacy"`, files 0.1/0.2) written by pylance
//! 14 and 11 (`scripts/gen_golden_legacy.py`: every type, several fragments and
//! batches per file, appends, deletions, added columns; checked in under
//! `tests/data/legacy/`, plus the live ones of `LANCER_GOLDEN_LEGACY_LIVE`) read in
//! Lancer with exactly pylance's values at every version: whole, by take, by row
//! address, and with counts from the manifest.

use std::path::PathBuf;

use arrow_array::{Array, RecordBatch, UInt64Array};
use lancer_table::Dataset;

use crate::common::{copy_dir, golden_cases, golden_roots, read_arrow, repo, TempDir};

fn checked_in() -> PathBuf {
    repo().join("tests/data/legacy")
}

fn roots() -> Vec<PathBuf> {
    golden_roots(checked_in(), "LANCER_GOLDEN_LEGACY_LIVE")
}

fn same_columns(label: &str, want: &RecordBatch, got: &RecordBatch, failures: &mut Vec<String>) {
    if want.num_rows() != got.num_rows() {
        failures.push(format!(
            "{label}: {} rows, expected {}",
            got.num_rows(),
            want.num_rows()
        ));
        return;
    }
    for (i, f) in want.schema().fields().iter().enumerate() {
        let g = got.column_by_name(f.name());
        if g.map(|g| g.to_data()) != Some(want.column(i).to_data()) {
            failures.push(format!("{label}: column {} differs", f.name()));
        }
    }
}

#[test]
fn pylance_legacy_datasets_read_identically_at_every_version() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let (cases, sets) = golden_cases(&roots());
    for case in &cases {
        let (label, ds_path, exp_dir, index) =
            (&case.label, &case.dataset, &case.expected, &case.index);
        if let Some(f) = case.version_mismatch() {
            failures.push(f);
        }
        for v in index["versions"].as_array().unwrap() {
            let n = v["version"].as_u64().unwrap();
            let want = read_arrow(&exp_dir.join(format!("v{n}.arrow")));
            let ds = match Dataset::open_version(ds_path, n) {
                Ok(d) => d,
                Err(e) => {
                    failures.push(format!("{label} v{n}: open: {e}"));
                    continue;
                }
            };
            checked += 1;
            if ds.count_rows() != v["count_rows"].as_u64().unwrap() {
                failures.push(format!(
                    "{label} v{n}: count_rows {} expected {}",
                    ds.count_rows(),
                    v["count_rows"]
                ));
            }
            match ds.to_batch(None) {
                Ok(got) => same_columns(&format!("{label} v{n}"), &want, &got, &mut failures),
                Err(e) => failures.push(format!("{label} v{n}: read: {e}")),
            }
            let rows = want.num_rows() as u64;
            if rows == 0 {
                continue;
            }
            // Random takes, unsorted, duplicated, across fragments.
            let mut x = 0x2545_F491_4F6C_DD1Du64 ^ rows;
            let idx: Vec<u64> = (0..40)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % rows
                })
                .chain([rows - 1, 0])
                .collect();
            let ids = UInt64Array::from(idx.clone());
            let cols = want
                .columns()
                .iter()
                .map(|c| arrow_select::take::take(c.as_ref(), &ids, None).unwrap())
                .collect();
            let want_take = RecordBatch::try_new(want.schema(), cols).unwrap();
            match ds.take(&idx, None) {
                Ok(got) => same_columns(
                    &format!("{label} v{n} take"),
                    &want_take,
                    &got,
                    &mut failures,
                ),
                Err(e) => failures.push(format!("{label} v{n}: take: {e}")),
            }
            match ds
                .row_addresses(&idx)
                .and_then(|a| ds.take_addresses(&a, Some(&["id"])))
            {
                Ok(got) => {
                    if got.column(0).to_data() != want_take.column(0).to_data() {
                        failures.push(format!("{label} v{n}: take by address differs"));
                    }
                }
                Err(e) => failures.push(format!("{label} v{n}: take by address: {e}")),
            }
            // A projection of a later column only.
            let last = want.schema().field(want.num_columns() - 1).name().clone();
            match ds.to_batch(Some(&[last.as_str()])) {
                Ok(got) => {
                    let w = want.project(&[want.num_columns() - 1]).unwrap();
                    same_columns(&format!("{label} v{n} {last}"), &w, &got, &mut failures)
                }
                Err(e) => failures.push(format!("{label} v{n}: column {last}: {e}")),
            }
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(sets >= 2, "checked-in legacy sets missing");
    assert!(checked >= 20, "only {checked} legacy versions checked");
    assert!(failures.is_empty(), "{} failures", failures.len());
}

#[test]
fn legacy_dataset_deletes_stay_legacy_and_appends_are_refused() {
    let root = TempDir::new("table-legacy-edit");
    copy_dir(&checked_in().join("pylance-14/history"), &root);
    let ds = Dataset::open(&root).unwrap();
    assert!(ds.is_legacy_storage());
    let before = ds.count_rows();
    let all = ds.to_batch(None).unwrap();
    // Delete rows whose id is odd: a new version, still recorded as legacy storage.
    let ds2 = ds
        .delete_where("id % 2 = 1", |b| {
            let ids = b
                .column_by_name("id")
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::Int64Array>()
                .unwrap();
            Ok(ids.iter().map(|v| v.map(|v| v % 2 == 1)).collect())
        })
        .unwrap();
    assert_eq!(
        ds2.manifest().pb.data_format.as_ref().unwrap().version,
        "0.1"
    );
    let ids = all
        .column_by_name("id")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::Int64Array>()
        .unwrap();
    let even = ids.iter().filter(|v| v.unwrap() % 2 == 0).count() as u64;
    assert!(even < before);
    assert_eq!(ds2.count_rows(), even);
    assert_eq!(ds2.to_batch(None).unwrap().num_rows() as u64, even);
    // Appending would mix 2.x files into a legacy dataset: refused, nothing written.
    let err = ds2
        .append(&[all.slice(0, 3)], &Default::default())
        .unwrap_err();
    assert!(err.to_string().contains("legacy"), "{err}");
    assert_eq!(Dataset::open(&root).unwrap().version(), ds2.version());
}
