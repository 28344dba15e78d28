//! The `lancer` binary on golden files: the demo runs, `inspect --json` describes the
//! file, `cat --format arrow-ipc` streams exactly what pylance read, and errors are one
//! line with a non-zero exit code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

fn lancer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lancer"))
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/files/pylance-14")
        .join(name)
}

#[test]
fn demo_runs() {
    let out = lancer().arg("demo").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("identical to what was written"), "{text}");
    assert!(text.contains("id   4242  distance 0.0000"), "{text}");
}

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
fn cat_arrow_ipc_equals_pylance() {
    for f in ["lists.v2.1.lance", "strings.v2.2.lance", "ints.v2.0.lance"] {
        let out = lancer()
            .args(["cat", "--format", "arrow-ipc"])
            .arg(golden(f))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None)
            .unwrap();
        let got: Vec<_> = r.map(|b| b.unwrap()).collect();
        let want_file = std::fs::File::open(golden(f).with_extension("arrow")).unwrap();
        let want: Vec<_> = arrow_ipc::reader::FileReader::try_new(want_file, None)
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        let want = arrow_select::concat::concat_batches(&want[0].schema(), &want).unwrap();
        assert_eq!(got.columns(), want.columns(), "{f}");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_1() {
    let dir = std::env::temp_dir().join(format!("lancer-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.lance");
    std::fs::write(
        &bad,
        b"this is not a lance file at all, not even close......",
    )
    .unwrap();
    let out = lancer().arg("inspect").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("not a Lance file"), "{err}");
    let out = lancer()
        .args(["cat", "--columns", "nope"])
        .arg(golden("ints.v2.1.lance"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"nope\""));
}
