//! `lancer import` and `export` (and the history commands: tags, restore, versions):
//! byte caps split files, every version exports as pylance read it, a bad row commits
//! nothing, imported shapes are read by pylance.

use lancer_testkit::oracle::{run_python, script};
use lancer_testkit::{pylance, TempDir};

use crate::common::{lancer, ok};
use crate::{arrow_file, datasets, golden, json_of};

/// `--max-bytes-per-file` on import and compact, checked as pylance checks it: after
/// each batch, against what its writer has flushed (a column's rows in pieces of over
/// 8 MiB) — so a small import under a small cap is one file, and a 12 MiB one under an
/// 8 MiB cap is two; compaction under the cap rewrites them without losing a row; a
/// size that is not a byte count is refused before anything is written.
#[test]
fn byte_caps_split_imports_and_compactions() {
    let dir = TempDir::new("cli-bytecap");
    let small = dir.join("small.csv");
    let mut body = String::from("id,name\n");
    for i in 0..3_000 {
        body.push_str(&format!("{i},name-{i}-{}\n", "x".repeat(i % 40)));
    }
    std::fs::write(&small, body).unwrap();
    let ds = dir.join("ds");
    let bad = lancer()
        .args(["import", "--max-bytes-per-file", "12XB"])
        .arg(&small)
        .arg(&ds)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown unit"));
    assert!(!ds.exists(), "nothing written");
    ok(lancer()
        .args(["import", "--max-bytes-per-file", "20KiB"])
        .arg(&small)
        .arg(&ds));
    let info = json_of(&["inspect", "--json"], &ds);
    assert_eq!(info["fragments"].as_array().unwrap().len(), 1, "{info}");

    // 3,000 rows of 4 KiB names: about 12 MiB, read in batches of 1,024 rows
    let big = dir.join("big.csv");
    let mut body = String::from("id,name\n");
    for i in 0..3_000 {
        body.push_str(&format!("{i},{i}{}\n", "y".repeat(4096)));
    }
    std::fs::write(&big, body).unwrap();
    let ds = dir.join("big-ds");
    ok(lancer()
        .args(["import", "--max-bytes-per-file", "8MiB"])
        .arg(&big)
        .arg(&ds));
    let info = json_of(&["inspect", "--json"], &ds);
    let frags = info["fragments"].as_array().unwrap().len() as u64;
    assert_eq!(frags, 2, "{info}");
    let done = json_of(
        &[
            "compact",
            "--max-bytes-per-file",
            "8MiB",
            "--target-rows",
            "100000",
            "--json",
        ],
        &ds,
    );
    assert_eq!(done["fragments_removed"].as_u64(), Some(frags), "{done}");
    assert!(done["fragments_added"].as_u64().unwrap() >= 1, "{done}");
    let out = ok(lancer().arg("count").arg(&ds));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3000");
}

#[test]
fn export_streams_every_version_as_pylance_read_it() {
    let dir = TempDir::new("cli-export");
    for set in ["pylance-14", "pylance-12"] {
        let root = datasets().join(set).join("history");
        let exp = datasets().join(set).join("history.expected");
        for v in 1..=6 {
            let out = dir.join(format!("{set}-v{v}.arrow"));
            let r = lancer()
                .args(["export", "--version", &v.to_string()])
                .arg(&root)
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                r.status.success(),
                "{set} v{v}: {}",
                String::from_utf8_lossy(&r.stderr)
            );
            let want = arrow_file(&exp.join(format!("v{v}.arrow")));
            let got = arrow_file(&out);
            assert_eq!(got.num_rows(), want.num_rows(), "{set} v{v}");
            assert_eq!(got.columns(), want.columns(), "{set} v{v}");
        }
    }
    // Parquet out and back in: the re-imported dataset holds what pylance read.
    for set in ["pylance-14", "pylance-12"] {
        let root = datasets().join(set).join("history");
        let want = arrow_file(&datasets().join(set).join("history.expected/v6.arrow"));
        let pq = dir.join(format!("{set}.parquet"));
        let ds2 = dir.join(format!("{set}-from-parquet"));
        for args in [
            vec![
                "export".into(),
                root.display().to_string(),
                pq.display().to_string(),
            ],
            vec![
                "import".into(),
                pq.display().to_string(),
                ds2.display().to_string(),
            ],
        ] {
            let r = lancer().args(&args).output().unwrap();
            assert!(
                r.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&r.stderr)
            );
        }
        let out = lancer()
            .args(["cat", "--format", "arrow-ipc"])
            .arg(&ds2)
            .output()
            .unwrap();
        let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None)
            .unwrap();
        let got: Vec<_> = r.map(|b| b.unwrap()).collect();
        let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(got.columns(), want.columns(), "{set} via parquet");
    }
    let bad = lancer()
        .arg("export")
        .arg(datasets().join("pylance-14/history"))
        .arg(dir.join("out.xlsx"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown output format"));
    assert!(
        !dir.join("out.xlsx").exists(),
        "no file left behind for a refused format"
    );
}

#[test]
fn import_export_and_history_commands() {
    let dir = TempDir::new("cli-history");
    let csv = dir.join("in.csv");
    std::fs::write(&csv, "id,name,score\n1,a,0.5\n2,b,1.5\n3,c,\n").unwrap();
    let ds = dir.join("ds");
    let run = |args: &[&str]| {
        let out = lancer().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let ds_s = ds.to_str().unwrap();
    run(&["import", csv.to_str().unwrap(), ds_s]);
    run(&["import", csv.to_str().unwrap(), ds_s, "--mode", "append"]);
    assert_eq!(run(&["count", ds_s]).trim(), "6");
    run(&["tag", "create", ds_s, "two", "2"]);
    assert!(run(&["tag", "list", ds_s]).contains("two\t2"));
    run(&["import", csv.to_str().unwrap(), ds_s, "--mode", "overwrite"]);
    assert_eq!(run(&["count", ds_s]).trim(), "3");
    assert_eq!(run(&["count", ds_s, "--tag", "two"]).trim(), "6");
    run(&["restore", ds_s, "2"]);
    assert_eq!(run(&["count", ds_s]).trim(), "6");
    let v: serde_json::Value = serde_json::from_str(&run(&["versions", ds_s, "--json"])).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 4);
    let out = dir.join("out.csv");
    run(&["export", ds_s, out.to_str().unwrap()]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 7, "{text}");
    assert!(run(&["verify", ds_s]).starts_with("ok"));
    run(&["tag", "delete", ds_s, "two"]);
    assert!(!run(&["tag", "list", ds_s]).contains("two"));
}

#[test]
fn import_streams_and_a_bad_row_commits_nothing() {
    let dir = TempDir::new("cli-import");
    let good = dir.join("good.csv");
    let mut text = String::from("id,name\n");
    for i in 0..20_000 {
        text.push_str(&format!("{i},n{i}\n"));
    }
    std::fs::write(&good, &text).unwrap();
    let ds = dir.join("ds");
    let good = good.to_string_lossy().to_string();
    let v = json_of(
        &["import", "--json", "--max-rows-per-file", "7000", &good],
        &ds,
    );
    assert_eq!(
        (v["imported_rows"].as_u64(), v["version"].as_u64()),
        (Some(20_000), Some(1))
    );
    // Past the 10,000 rows used to infer the schema, a row that is not an integer.
    let bad = dir.join("bad.csv");
    text.push_str("oops,late\n");
    std::fs::write(&bad, &text).unwrap();
    let out = lancer()
        .args(["import", "--mode", "append"])
        .arg(&bad)
        .arg(&ds)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("oops"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json_of(&["count", "--json"], &ds)["rows"].as_u64(),
        Some(20_000)
    );
    let v = json_of(&["versions", "--json"], &ds);
    assert_eq!(v.as_array().map(|a| a.len()), Some(1), "{v}");
}

/// An append parses a CSV with the dataset's column types: whole numbers go into a
/// float column, and a value that fits no float is named with its line and column (a
/// mismatch, not a damaged file); nothing is committed. A new dataset is written at
/// storage 2.2, as pylance 14 writes by default.
#[test]
fn an_append_parses_the_csv_with_the_datasets_types() {
    let dir = TempDir::new("cli-import-typed");
    let first = dir.join("first.csv");
    std::fs::write(&first, "id,score\n1,0.5\n2,1.5\n").unwrap();
    let ds = dir.join("ds");
    let v = json_of(&["import", "--json", first.to_str().unwrap()], &ds);
    assert_eq!(v["version"].as_u64(), Some(1));
    // the data file's footer ends with its version (major, minor as u16) and "LANC"
    let file = std::fs::read_dir(ds.join("data"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bytes = std::fs::read(&file).unwrap();
    let tail = &bytes[bytes.len() - 8..];
    assert_eq!(&tail[4..], b"LANC");
    assert_eq!(
        (tail[0], tail[2]),
        (2, 2),
        "a new dataset is written at 2.2"
    );
    // scores that look like integers: read as the dataset's float column
    let ints = dir.join("ints.csv");
    std::fs::write(&ints, "id,score\n3,2\n4,7\n").unwrap();
    let out = lancer()
        .args(["import", "--mode", "append"])
        .arg(&ints)
        .arg(&ds)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json_of(&["count", "--json"], &ds)["rows"].as_u64(), Some(4));
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "id,score\n5,1.0\n6,high\n").unwrap();
    let out = lancer()
        .args(["import", "--mode", "append"])
        .arg(&bad)
        .arg(&ds)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("'high'") && err.contains("Float64") && err.contains("line"),
        "{err}"
    );
    assert!(!err.contains("damaged"), "{err}");
    assert_eq!(json_of(&["count", "--json"], &ds)["rows"].as_u64(), Some(4));
}

/// `lancer import` of every shape the outside check found unreadable when Lancer wrote
/// it — dictionary columns, large_utf8 / large_binary constant pages, Null-typed
/// columns, empty strings, one repeated value — at 2.0, 2.1 and 2.2: pylance 14 and 12 read
/// the dataset with exactly the imported values (and go on writing to it).
#[test]
fn imported_shapes_are_read_by_pylance() {
    let dir = TempDir::new("cli-import-shapes");
    let mut checked = 0;
    for case in ["shapes", "null_type"] {
        let input = golden(&format!("{case}.v2.2.arrow"));
        for v in ["2.0", "2.1", "2.2"] {
            let ds = dir.join(format!("{case}-{v}"));
            ok(lancer()
                .arg("import")
                .arg(&input)
                .arg(&ds)
                .args(["--data-storage-version", v]));
            let exp = dir.join(format!("{case}-{v}.expected"));
            std::fs::create_dir_all(&exp).unwrap();
            std::fs::copy(&input, exp.join("v1.arrow")).unwrap();
            std::fs::write(
                exp.join("index.json"),
                r#"{"versions": [{"version": 1}], "tags": {}}"#,
            )
            .unwrap();
            for py in ["14", "12"] {
                let Some(python) = pylance(py) else { continue };
                // pylance `py` on `lancer import` of `case` at `v`
                run_python(&python, [&script("check_lancer_dataset.py"), &ds, &exp]);
                checked += 1;
            }
        }
    }
    eprintln!("{checked} imported datasets checked by pylance");
}
