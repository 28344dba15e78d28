//! Datasets written by pylance 14, 12 and 11 (`scripts/gen_golden_datasets.py`: create,
//! append, delete, tag, overwrite, delete; V1 and V2 manifest names; storage 2.0 / 2.1
//! / default; stable row ids; added columns in extra data files) read in Lancer with
//! exactly the values pylance read at every version, by tag, with counts from the
//! manifest alone and with random takes.

use std::path::PathBuf;

use arrow_array::{Array, UInt64Array};
use lancer_table::versions::list_tags;
use lancer_table::Dataset;

use crate::common::{copy_dir, golden_cases, golden_roots, read_arrow, repo, TempDir};

fn roots() -> Vec<PathBuf> {
    golden_roots(
        repo().join("tests/data/datasets"),
        "LANCER_GOLDEN_DATASETS_LIVE",
    )
}

#[test]
fn pylance_datasets_read_identically_at_every_version() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let (cases, _) = golden_cases(&roots());
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
                Ok(got) => {
                    for (i, f) in want.schema().fields().iter().enumerate() {
                        let g = got.column_by_name(f.name());
                        if g.map(|g| g.to_data()) != Some(want.column(i).to_data()) {
                            failures.push(format!("{label} v{n}: column {} differs", f.name()));
                        }
                    }
                }
                Err(e) => failures.push(format!("{label} v{n}: read: {e}")),
            }
            // Blob columns as descriptions, where pylance's default scan recorded them.
            let described = exp_dir.join(format!("v{n}.described.arrow"));
            if described.exists() {
                let want = read_arrow(&described);
                let d = ds.with_blob_descriptions();
                let rows = want.num_rows() as u64;
                let idx: Vec<u64> = vec![rows.saturating_sub(1), 0, rows / 2, rows / 3];
                match (d.to_batch(None), d.take(&idx, None)) {
                    (Ok(got), Ok(took)) => {
                        let ids = UInt64Array::from(idx.clone());
                        for (i, f) in want.schema().fields().iter().enumerate() {
                            let g = got.column_by_name(f.name()).map(|g| g.to_data());
                            if g != Some(want.column(i).to_data()) {
                                failures.push(format!(
                                    "{label} v{n}: described column {} differs: {g:?}",
                                    f.name()
                                ));
                            }
                            let w = arrow_select::take::take(want.column(i).as_ref(), &ids, None)
                                .unwrap();
                            if rows > 0
                                && took.column_by_name(f.name()).map(|g| g.to_data())
                                    != Some(w.to_data())
                            {
                                failures.push(format!(
                                    "{label} v{n}: described take of {} differs",
                                    f.name()
                                ));
                            }
                        }
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        failures.push(format!("{label} v{n}: described read: {e}"))
                    }
                }
            }
            // Stable row ids, where pylance recorded them.
            if let Some(rids) = v.get("row_ids").and_then(|r| r.as_array()) {
                let want_ids: Vec<u64> = rids.iter().map(|x| x.as_u64().unwrap()).collect();
                let offsets: Vec<u64> = (0..want_ids.len() as u64).collect();
                match ds.row_ids(&offsets) {
                    Ok(got) if got == want_ids => {}
                    Ok(got) => failures.push(format!(
                        "{label} v{n}: row ids {:?}... expected {:?}...",
                        &got[..got.len().min(5)],
                        &want_ids[..want_ids.len().min(5)]
                    )),
                    Err(e) => failures.push(format!("{label} v{n}: row ids: {e}")),
                }
                if let Some(&last) = want_ids.last() {
                    match ds.take_row_ids(&[last, want_ids[0]], None) {
                        Ok(got) => {
                            let ids = UInt64Array::from(vec![want_ids.len() as u64 - 1, 0]);
                            let w = arrow_select::take::take(want.column(0).as_ref(), &ids, None)
                                .unwrap();
                            if got.column(0).to_data() != w.to_data() {
                                failures.push(format!("{label} v{n}: take by row id differs"));
                            }
                        }
                        Err(e) => failures.push(format!("{label} v{n}: take by row id: {e}")),
                    }
                }
            }
            let rows = want.num_rows() as u64;
            if rows > 0 {
                let idx: Vec<u64> = vec![rows - 1, 0, rows / 2, rows / 3, rows / 2];
                // Row addresses reach the same rows.
                match ds
                    .row_addresses(&idx)
                    .and_then(|a| ds.take_addresses(&a, None))
                {
                    Ok(got) => {
                        let ids = UInt64Array::from(idx.clone());
                        let w =
                            arrow_select::take::take(want.column(0).as_ref(), &ids, None).unwrap();
                        if got.column(0).to_data() != w.to_data() {
                            failures.push(format!("{label} v{n}: take by row address differs"));
                        }
                    }
                    Err(e) => failures.push(format!("{label} v{n}: take by address: {e}")),
                }
                match ds.take(&idx, None) {
                    Ok(got) => {
                        let ids = UInt64Array::from(idx.clone());
                        for (i, f) in want.schema().fields().iter().enumerate() {
                            let w = arrow_select::take::take(want.column(i).as_ref(), &ids, None)
                                .unwrap();
                            if got.column_by_name(f.name()).map(|g| g.to_data())
                                != Some(w.to_data())
                            {
                                failures
                                    .push(format!("{label} v{n}: take of {} differs", f.name()));
                            }
                        }
                    }
                    Err(e) => failures.push(format!("{label} v{n}: take: {e}")),
                }
            }
        }
        // Tags.
        let tags = list_tags(&lancer_io::Store::local(ds_path)).unwrap();
        for (tag, v) in index["tags"].as_object().unwrap() {
            let want_v = v.as_u64().unwrap();
            if !tags.contains(&(tag.clone(), want_v)) {
                failures.push(format!(
                    "{label}: tag {tag} -> {want_v} missing from {tags:?}"
                ));
            }
            match Dataset::open_tag(ds_path, tag) {
                Ok(d) if d.version() == want_v => {}
                Ok(d) => {
                    failures.push(format!("{label}: tag {tag} opened version {}", d.version()))
                }
                Err(e) => failures.push(format!("{label}: tag {tag}: {e}")),
            }
        }
        // Latest.
        let latest = Dataset::open(ds_path).unwrap();
        if Some(&latest.version()) != case.versions().last() {
            failures.push(format!("{label}: latest is {}", latest.version()));
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(checked > 50, "only {checked} versions checked");
    assert!(failures.is_empty(), "{} failures", failures.len());
}

#[test]
fn blob_v2_datasets_delete_and_append_like_any_other() {
    let root = TempDir::new("table-blob-v2-edit");
    copy_dir(
        &repo().join("tests/data/datasets/pylance-14/blob_v2"),
        &root,
    );
    let ds = Dataset::open(&root).unwrap();
    let all = ds.to_batch(None).unwrap();
    let ids = |b: &arrow_array::RecordBatch| -> Vec<i64> {
        b.column_by_name("id")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap()
            .values()
            .to_vec()
    };
    let payloads = |b: &arrow_array::RecordBatch| -> Vec<Option<Vec<u8>>> {
        b.column_by_name("b")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::LargeBinaryArray>()
            .unwrap()
            .iter()
            .map(|v| v.map(<[u8]>::to_vec))
            .collect()
    };
    // the payloads are the bytes `gen_golden_datasets.py::blob_values` wrote
    for (id, p) in ids(&all).into_iter().zip(payloads(&all)) {
        let want = match id % 6 {
            0 => None,
            1 => Some(Vec::new()),
            2 | 3 => Some(vec![(id % 251) as u8; (id * 37 % 200 + 1) as usize]),
            4 => Some(vec![(id % 251) as u8; (300 + id * 11 % 600) as usize]),
            _ => Some(vec![(id % 251) as u8; (1100 + id * 13 % 400) as usize]),
        };
        assert_eq!(p, want, "row id {id}");
    }
    let ds2 = ds
        .delete_where("id % 2 = 0", |b| {
            Ok(ids(b).iter().map(|v| Some(v % 2 == 0)).collect())
        })
        .unwrap();
    let after = ds2.to_batch(None).unwrap();
    let kept: Vec<usize> = (0..all.num_rows())
        .filter(|&i| ids(&all)[i] % 2 != 0)
        .collect();
    assert_eq!(
        ids(&after),
        kept.iter().map(|&i| ids(&all)[i]).collect::<Vec<_>>()
    );
    assert_eq!(
        payloads(&after),
        kept.iter()
            .map(|&i| payloads(&all)[i].clone())
            .collect::<Vec<_>>()
    );
    // an append of rows read back (payloads as binary) stores them as blob v2 again
    let ds3 = ds2
        .append(&[after.slice(0, 3)], &Default::default())
        .unwrap();
    assert_eq!(Dataset::open(&root).unwrap().version(), ds2.version() + 1);
    let grown = ds3.to_batch(None).unwrap();
    let mut want = payloads(&after);
    want.extend(payloads(&after.slice(0, 3)));
    assert_eq!(payloads(&grown), want);
}
