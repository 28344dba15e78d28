//! `lancer inspect`: a file's columns, a row's byte ranges (inside the buffers pylance
//! reports), a dataset row followed to its fragment and bytes.

use std::process::Command;

use lancer_testkit::oracle::script;
use lancer_testkit::repo;

use crate::common::{cli, lancer, ok, pylance14};
use crate::{datasets, golden, json_of};

#[test]
fn inspect_json_describes_every_column() {
    let out = lancer()
        .args(["inspect", "--json", "--row", "7"])
        .arg(golden("structs.v2.2.lance"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], "2.2");
    assert_eq!(v["num_rows"], 2000);
    let cols = v["columns"].as_array().unwrap();
    assert_eq!(cols.len(), 10);
    assert_eq!(cols[0]["field"], "st.a");
    let walk = v["row"]["fields"].as_array().unwrap();
    assert_eq!(walk.len(), 5);
    assert!(!walk[0]["bytes_read"].as_array().unwrap().is_empty());
}

#[test]
fn inspect_row_byte_ranges_lie_in_the_buffers_pylance_reports() {
    let Some(py) = pylance14() else { return };
    let script = script("check_inspect_row.py");
    for v in ["14", "11"] {
        let dir = repo().join(format!("tests/data/files/pylance-{v}"));
        let out = ok(Command::new(&py).arg(&script).arg(cli().bin()).arg(&dir));
        let text = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert!(v["files"].as_u64().unwrap() >= 50, "{text}");
        assert!(v["ranges_checked"].as_u64().unwrap() >= 2000, "{text}");
    }
}

#[test]
fn inspect_dataset_row_follows_the_row_to_its_fragment_and_bytes() {
    for name in ["stable_row_ids", "history"] {
        let ds = datasets().join(format!("pylance-14/{name}"));
        let rows = json_of(&["count", "--json"], &ds)["rows"].as_u64().unwrap();
        for r in [0, rows / 2, rows - 1] {
            let v = json_of(&["inspect", "--json", "--row", &r.to_string()], &ds);
            let w = &v["row"];
            let cat = ok(lancer()
                .args([
                    "cat",
                    "--json",
                    "--columns",
                    "id",
                    "--with-row-id",
                    "--with-row-address",
                ])
                .args(["--offset", &r.to_string(), "--limit", "1"])
                .arg(&ds));
            let line: serde_json::Value =
                serde_json::from_str(String::from_utf8_lossy(&cat.stdout).trim()).unwrap();
            let addr = line["_rowaddr"].as_u64().unwrap();
            assert_eq!(w["address"].as_u64(), Some(addr), "{name} row {r}");
            assert_eq!(w["fragment"].as_u64(), Some(addr >> 32));
            assert_eq!(w["row_in_fragment"].as_u64(), Some(addr & 0xFFFF_FFFF));
            if name == "stable_row_ids" {
                assert_eq!(
                    w["row_id"].as_u64(),
                    line["_rowid"].as_u64(),
                    "{name} row {r}"
                );
            }
            let files = w["files"].as_array().unwrap();
            assert!(!files.is_empty());
            for f in files {
                let fields = f["fields"].as_array().unwrap();
                assert!(!fields.is_empty());
                assert!(fields
                    .iter()
                    .all(|x| !x["bytes_read"].as_array().unwrap().is_empty()));
            }
        }
    }
}
