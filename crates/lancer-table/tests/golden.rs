//! Datasets written by pylance 14, 12 and 11 (`scripts/gen_golden_datasets.py`: create,
//! append, delete, tag, overwrite, delete; V1 and V2 manifest names; storage 2.0 / 2.1
//! / default; stable row ids; added columns in extra data files) read in Lancer with
//! exactly the values pylance read at every version, by tag, with counts from the
//! manifest alone and with random takes.

use std::path::{Path, PathBuf};

use arrow_array::{Array, RecordBatch, UInt64Array};
use lancer_table::versions::{list_tags, list_versions};
use lancer_table::Dataset;

fn roots() -> Vec<PathBuf> {
    let mut out = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/datasets")];
    match std::env::var_os("LANCER_GOLDEN_DATASETS_LIVE") {
        Some(live) => {
            let live = PathBuf::from(live);
            assert!(
                live.is_dir(),
                "LANCER_GOLDEN_DATASETS_LIVE {} is not a directory",
                live.display()
            );
            out.push(live);
        }
        None => assert!(
            std::env::var_os("LANCER_REQUIRE_PYLANCE").is_none(),
            "LANCER_REQUIRE_PYLANCE is set but LANCER_GOLDEN_DATASETS_LIVE is not: run scripts/test.sh"
        ),
    }
    out
}

fn expected(p: &Path) -> RecordBatch {
    let r = arrow_ipc::reader::FileReader::try_new(std::fs::File::open(p).unwrap(), None).unwrap();
    let schema = r.schema();
    let b: Vec<_> = r.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&schema, &b).unwrap()
}

#[test]
fn pylance_datasets_read_identically_at_every_version() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for root in roots() {
        let Ok(sets) = std::fs::read_dir(&root) else {
            continue;
        };
        for set in sets.flatten() {
            let Ok(cases) = std::fs::read_dir(set.path()) else {
                continue;
            };
            for case in cases.flatten() {
                let exp_dir = case.path();
                let Some(name) = exp_dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".expected"))
                else {
                    continue;
                };
                let ds_path = set.path().join(name);
                let label = format!("{}/{name}", set.file_name().to_string_lossy());
                let index: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(exp_dir.join("index.json")).unwrap(),
                )
                .unwrap();
                let versions: Vec<u64> = list_versions(&ds_path)
                    .unwrap()
                    .iter()
                    .map(|v| v.version)
                    .collect();
                let want_versions: Vec<u64> = index["versions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v["version"].as_u64().unwrap())
                    .collect();
                if versions != want_versions {
                    failures.push(format!(
                        "{label}: versions {versions:?}, expected {want_versions:?}"
                    ));
                }
                for v in index["versions"].as_array().unwrap() {
                    let n = v["version"].as_u64().unwrap();
                    let want = expected(&exp_dir.join(format!("v{n}.arrow")));
                    let ds = match Dataset::open_version(&ds_path, n) {
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
                                    failures
                                        .push(format!("{label} v{n}: column {} differs", f.name()));
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
                                    let w = arrow_select::take::take(
                                        want.column(0).as_ref(),
                                        &ids,
                                        None,
                                    )
                                    .unwrap();
                                    if got.column(0).to_data() != w.to_data() {
                                        failures
                                            .push(format!("{label} v{n}: take by row id differs"));
                                    }
                                }
                                Err(e) => {
                                    failures.push(format!("{label} v{n}: take by row id: {e}"))
                                }
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
                                    arrow_select::take::take(want.column(0).as_ref(), &ids, None)
                                        .unwrap();
                                if got.column(0).to_data() != w.to_data() {
                                    failures
                                        .push(format!("{label} v{n}: take by row address differs"));
                                }
                            }
                            Err(e) => failures.push(format!("{label} v{n}: take by address: {e}")),
                        }
                        match ds.take(&idx, None) {
                            Ok(got) => {
                                let ids = UInt64Array::from(idx.clone());
                                for (i, f) in want.schema().fields().iter().enumerate() {
                                    let w = arrow_select::take::take(
                                        want.column(i).as_ref(),
                                        &ids,
                                        None,
                                    )
                                    .unwrap();
                                    if got.column_by_name(f.name()).map(|g| g.to_data())
                                        != Some(w.to_data())
                                    {
                                        failures.push(format!(
                                            "{label} v{n}: take of {} differs",
                                            f.name()
                                        ));
                                    }
                                }
                            }
                            Err(e) => failures.push(format!("{label} v{n}: take: {e}")),
                        }
                    }
                }
                // Tags.
                let tags = list_tags(&ds_path).unwrap();
                for (tag, v) in index["tags"].as_object().unwrap() {
                    let want_v = v.as_u64().unwrap();
                    if !tags.contains(&(tag.clone(), want_v)) {
                        failures.push(format!(
                            "{label}: tag {tag} -> {want_v} missing from {tags:?}"
                        ));
                    }
                    match Dataset::open_tag(&ds_path, tag) {
                        Ok(d) if d.version() == want_v => {}
                        Ok(d) => failures
                            .push(format!("{label}: tag {tag} opened version {}", d.version())),
                        Err(e) => failures.push(format!("{label}: tag {tag}: {e}")),
                    }
                }
                // Latest.
                let latest = Dataset::open(&ds_path).unwrap();
                if Some(&latest.version()) != want_versions.last() {
                    failures.push(format!("{label}: latest is {}", latest.version()));
                }
            }
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(checked > 50, "only {checked} versions checked");
    assert!(failures.is_empty(), "{} failures", failures.len());
}
