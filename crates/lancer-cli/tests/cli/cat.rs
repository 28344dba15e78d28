//! `lancer cat` and `count` (and `delete --where`): files and dataset versions stream
//! what pylance read; filters, pages and computed columns give pylance's rows; legacy
//! (0.1) datasets read.

use lancer_testkit::{repo, TempDir};

use crate::common;
use crate::common::{lancer, ok};
use crate::{arrow_file, copy_dir, datasets, golden, json_of};

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
fn cat_dataset_versions_equal_pylance() {
    for set in ["pylance-14", "pylance-11"] {
        let root = datasets().join(set).join("history");
        let exp = datasets().join(set).join("history.expected");
        for v in 1..=6 {
            let out = lancer()
                .args(["cat", "--format", "arrow-ipc", "--version", &v.to_string()])
                .arg(&root)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{set} v{v}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let r =
                arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None)
                    .unwrap();
            let got: Vec<_> = r.map(|b| b.unwrap()).collect();
            let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
            let want = arrow_file(&exp.join(format!("v{v}.arrow")));
            assert_eq!(got.columns(), want.columns(), "{set} v{v}");
        }
    }
}

/// The filter suite's pylance answer for `filter` (ids in order).
fn suite_ids(filter: &str) -> Vec<i64> {
    let dir = repo().join("tests/data/filter-suite/pylance-14");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let case = v["filters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["filter"] == filter)
        .unwrap_or_else(|| panic!("{filter} is not in the suite"));
    case["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

#[test]
fn filter_count_delete_and_filtered_search() {
    let src = repo().join("tests/data/filter-suite/pylance-14/filters");
    let tmp = TempDir::new("cli-filter");
    copy_dir(&src, &tmp);
    // cat --filter returns pylance's rows; --offset/--limit page after the filter.
    for f in [
        "s LIKE 'app%'",
        "meta.lang = 'en'",
        "array_has_any(tags, ['red', 'blue'])",
    ] {
        let out = ok(lancer()
            .args([
                "cat",
                "--columns",
                "id,meta.lang",
                "--format",
                "jsonl",
                "--filter",
                f,
            ])
            .arg(&tmp));
        assert_eq!(common::json_ids(&out), suite_ids(f), "{f}");
        let page = lancer()
            .args([
                "cat",
                "--columns",
                "id",
                "--json",
                "--offset",
                "3",
                "--limit",
                "4",
                "-w",
                f,
            ])
            .arg(&tmp)
            .output()
            .unwrap();
        assert_eq!(common::json_ids(&page), suite_ids(f)[3..7].to_vec(), "{f}");
        let v = json_of(&["count", "--json", "--filter", f], &tmp);
        assert_eq!(v["rows"].as_u64(), Some(suite_ids(f).len() as u64), "{f}");
    }
    // Computed columns after the plain ones.
    let out = ok(lancer()
        .args([
            "cat",
            "--json",
            "--columns",
            "id",
            "--expr",
            "id2=id * 2",
            "-w",
            "id < 20",
        ])
        .arg(&tmp));
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["id2"].as_i64(), v["id"].as_i64().map(|i| i * 2), "{line}");
    }
    let bad = lancer()
        .args(["cat", "--expr", "noequals"])
        .arg(&tmp)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    // A table without --limit shows the first 100 rows and says so.
    let t = ok(lancer().args(["cat", "--columns", "id"]).arg(&tmp));
    assert!(String::from_utf8_lossy(&t.stderr).contains("first 100 rows"));
    let body = String::from_utf8_lossy(&t.stdout);
    assert!(
        body.contains("│ 109 ") && !body.contains("│ 111 "),
        "{body}"
    );
    // A parquet page of a filtered scan.
    let pq = ok(lancer()
        .args([
            "cat",
            "--format",
            "parquet",
            "--with-row-address",
            "--filter",
            "id < 10",
        ])
        .arg(&tmp));
    assert_eq!(&pq.stdout[..4], b"PAR1");
    // A bad filter: one line naming the column, exit 2.
    let bad = lancer()
        .args(["cat", "--filter", "nosuch > 1"])
        .arg(&tmp)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("nosuch") && err.lines().count() == 1, "{err}");
    // Filtered search: every hit passes the filter.
    let hits = ok(lancer()
        .args([
            "search",
            "--column",
            "vec",
            "--query",
            "0.1,0.2,-0.3,0.4",
            "-k",
            "5",
        ])
        .args([
            "--columns",
            "id,meta.lang",
            "--filter",
            "meta.lang = 'fr'",
            "--json",
        ])
        .arg(&tmp));
    let fr = suite_ids("meta.lang IN ('fr', 'de')");
    let got = common::json_ids(&hits);
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|i| fr.contains(i)), "{got:?}");
    // delete --where, then the rows are gone and the old version still has them.
    let before = suite_ids("s LIKE 'app%'").len();
    let v = json_of(&["delete", "--json", "--where", "s LIKE 'app%'"], &tmp);
    assert_eq!(v["deleted_rows"].as_u64(), Some(before as u64));
    let version = v["version"].as_u64().unwrap();
    let v = json_of(&["count", "--json", "-w", "s LIKE 'app%'"], &tmp);
    assert_eq!(v["rows"].as_u64(), Some(0));
    let old = (version - 1).to_string();
    let v = json_of(
        &["count", "--json", "-w", "s LIKE 'app%'", "--version", &old],
        &tmp,
    );
    assert_eq!(v["rows"].as_u64(), Some(before as u64));
}

#[test]
fn legacy_dataset_cat_count_and_inspect() {
    for set in ["pylance-14", "pylance-11"] {
        let dir = repo().join("tests/data/legacy").join(set);
        let root = dir.join("history");
        let index: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("history.expected/index.json")).unwrap(),
        )
        .unwrap();
        for v in index["versions"].as_array().unwrap() {
            let n = v["version"].as_u64().unwrap().to_string();
            // The whole version as pylance read it.
            let out = ok(lancer()
                .args(["cat", "--format", "arrow-ipc", "--version", &n])
                .arg(&root));
            let r =
                arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.stdout), None)
                    .unwrap();
            let got: Vec<_> = r.map(|b| b.unwrap()).collect();
            let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
            let want = arrow_file(&dir.join(format!("history.expected/v{n}.arrow")));
            assert_eq!(got.columns(), want.columns(), "{set} v{n}");
            // A filtered scan and count: pylance's rows.
            let filter = v["filter"].as_str().unwrap();
            let want_ids: Vec<i64> = v["filter_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            let out = ok(lancer()
                .args([
                    "--json",
                    "cat",
                    "--columns",
                    "id",
                    "--filter",
                    filter,
                    "--version",
                    &n,
                ])
                .arg(&root));
            assert_eq!(common::json_ids(&out), want_ids, "{set} v{n} {filter}");
            let c = json_of(
                &["--json", "count", "--filter", filter, "--version", &n],
                &root,
            );
            assert_eq!(
                c["rows"].as_u64(),
                Some(want_ids.len() as u64),
                "{set} v{n}: {c}"
            );
        }
        // take by offset, and inspect of one legacy data file.
        let out = ok(lancer().args(["--json", "take"]).arg(&root).arg("0,3"));
        assert_eq!(common::json_ids(&out).len(), 2);
        let file = std::fs::read_dir(root.join("data"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let out = ok(lancer().arg("inspect").arg(&file));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("legacy Lance file (format 0.2"), "{text}");
        let j = json_of(&["inspect", "--json"], &file);
        assert_eq!(j["legacy"]["format"], "0.2");
    }
}
