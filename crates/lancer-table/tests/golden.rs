//! Datasets written by pylance 14, 12 and 11 (`scripts/gen_golden_datasets.py`: create,
//! append, delete, tag, overwrite, delete; V1 and V2 manifest names; storage 2.0 / 2.1
//! / default; stable row ids; added columns in extra data files) read in Lancer with
//! exactly the values pylance read at every version, by tag, with counts from the
//! manifest alone and with random takes.

use std::path::{Path, PathBuf};

use arrow_array::{Array, UInt64Array};
use lancer_table::versions::list_tags;
use lancer_table::Dataset;

use crate::common::{golden_cases, golden_roots, read_arrow};

fn roots() -> Vec<PathBuf> {
    golden_roots(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/datasets"),
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
