//! `lancer import-files`, `lancer blob ls` and `lancer blob get` (issue 44): a folder of
//! files of every size class (empty, small, packed, dedicated) becomes a blob v2 column
//! pylance 14 reads byte for byte with the files' paths, sizes and MIME types; `ls`
//! shows where each payload lives, `get` returns whole payloads and ranges exactly; a
//! range past the end and a non-blob column are one-line errors.

use super::*;
use common::{lancer, ok, py, TempDir};

const READ: &str = r#"
import json, sys, lance
t = lance.dataset(sys.argv[1]).to_table(blob_handling="all_binary")
def digest(b):
    return sum(x * (i % 65521 + 1) for i, x in enumerate(b)) % (2**61 - 1)
print(json.dumps([[p, s, m, digest(b)] for p, s, m, b in
                  zip(*(t.column(c).to_pylist() for c in ["path", "size", "mime_type", "img"]))]))
"#;

/// The digest READ computes (every byte weighted by its position).
fn digest(b: &[u8]) -> u64 {
    let m: u128 = (1 << 61) - 1;
    let s: u128 = b
        .iter()
        .enumerate()
        .map(|(i, &x)| u128::from(x) * (i as u128 % 65521 + 1))
        .sum();
    (s % m) as u64
}

/// `lancer --json blob ls` of `column`: its rows.
fn ls_rows(ds: &str, column: &str) -> Vec<serde_json::Value> {
    let out = ok(lancer().args(["--json", "blob", "ls", ds, "--column", column]));
    let ls: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    ls.as_array().unwrap().clone()
}

/// The kinds `lancer blob ls` gives the rows of `column`.
fn ls_kinds(ds: &str, column: &str) -> Vec<String> {
    ls_rows(ds, column)
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_string())
        .collect()
}

/// `lancer blob get` of one row of `column` (with `--range` arguments, if any).
fn blob_get(ds: &str, column: &str, row: &str, range: &[&str]) -> Vec<u8> {
    let mut args = vec!["blob", "get", ds, "--column", column, "--row", row];
    args.extend_from_slice(range);
    ok(lancer().args(&args)).stdout
}

#[test]
fn files_become_a_blob_column_pylance_reads() {
    let dir = TempDir::new("cli-blobs");
    let files = dir.join("files");
    std::fs::create_dir_all(files.join("sub")).unwrap();
    let content = |n: usize, seed: u8| -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed))
            .collect()
    };
    let made: Vec<(&str, Vec<u8>)> = vec![
        ("a.png", content(100, 1)),
        ("c.bin", content(5_000_000, 2)),
        ("empty.txt", vec![]),
        ("sub/b.mp4", content(100_000, 3)),
    ];
    for (name, bytes) in &made {
        std::fs::write(files.join(name), bytes).unwrap();
    }
    let ds = dir.join("ds");
    let ds_s = ds.to_str().unwrap();
    ok(lancer().args([
        "import-files",
        files.to_str().unwrap(),
        ds_s,
        "--column",
        "img",
    ]));
    // pylance reads the same bytes as the files hold (its hashes of both)
    let got: serde_json::Value = serde_json::from_str(py(READ, &[ds_s]).trim()).unwrap();
    let rows = got.as_array().unwrap();
    assert_eq!(rows.len(), made.len());
    for ((name, bytes), row) in made.iter().zip(rows) {
        assert_eq!(row[0], *name);
        assert_eq!(row[1].as_u64().unwrap(), bytes.len() as u64);
        assert_eq!(row[3].as_u64().unwrap(), digest(bytes), "{name}");
    }
    assert_eq!(rows[0][2], "image/png");
    assert_eq!(rows[3][2], "video/mp4");
    // ls: kinds by size (64 KiB inline, 4 MiB packed, larger dedicated), nothing read
    assert_eq!(
        ls_kinds(ds_s, "img"),
        ["inline", "dedicated", "inline", "packed"]
    );
    // get: whole payloads and ranges, byte for byte
    let get = |row: &str, range: &[&str]| blob_get(ds_s, "img", row, range);
    for (row, (_, bytes)) in made.iter().enumerate() {
        assert_eq!(&get(&row.to_string(), &[]), bytes, "row {row}");
    }
    assert_eq!(
        &get("1", &["--range", "4999990.."])[..],
        &made[1].1[4_999_990..]
    );
    assert_eq!(&get("3", &["--range", "10..20"])[..], &made[3].1[10..20]);
    // errors: one line, non-zero exit
    for args in [
        vec![
            "blob",
            "get",
            ds_s,
            "--column",
            "img",
            "--row",
            "1",
            "--range",
            "10..5000001",
        ],
        vec!["blob", "get", ds_s, "--column", "path", "--row", "0"],
        vec!["blob", "ls", ds_s, "--column", "size"],
        vec!["blob", "get", ds_s, "--column", "img", "--row", "9"],
    ] {
        let out = lancer().args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

const LEGACY: &str = r#"
import json, sys, lance, pyarrow as pa
f = pa.field("b", pa.large_binary(), True, {"lance-encoding:blob": "true"})
vals = [b"abc", None, b"", bytes(range(256)) * 20]
t = pa.table({"id": list(range(4)), "b": pa.array(vals, pa.large_binary())},
             schema=pa.schema([pa.field("id", pa.int64()), f]))
lance.write_dataset(t, sys.argv[1], data_storage_version=sys.argv[2], max_rows_per_file=3)
print(json.dumps(lance.dataset(sys.argv[1]).to_table().column("b").to_pylist()))
"#;

#[test]
fn legacy_blob_columns_list_and_get_as_pylance_describes_them() {
    let dir = TempDir::new("cli-legacy-blobs");
    for version in ["2.0", "2.1"] {
        let ds = dir.join(format!("ds-{version}"));
        let ds_s = ds.to_str().unwrap();
        // pylance's descriptions: (position, size) in the data file; a 2.0 null (1, 0)
        let described: serde_json::Value =
            serde_json::from_str(py(LEGACY, &[ds_s, version]).trim()).unwrap();
        let rows = ls_rows(ds_s, "b");
        assert_eq!(rows.len(), 4, "{version}: {rows:?}");
        let kinds: Vec<&str> = rows.iter().map(|r| r["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["legacy", "null", "legacy", "legacy"], "{version}");
        for (r, d) in rows.iter().zip(described.as_array().unwrap()) {
            if r["kind"] == "legacy" {
                let (p, n) = (d["position"].as_u64().unwrap(), d["size"].as_u64().unwrap());
                assert_eq!(r["size"].as_u64(), Some(n), "{version}");
                assert_eq!(
                    r["location"].as_str().unwrap(),
                    format!("data file bytes {p}..{}", p + n),
                    "{version}"
                );
            }
        }
        let big: Vec<u8> = (0..20).flat_map(|_| 0u8..=255).collect();
        let get = |row: &str, range: &[&str]| blob_get(ds_s, "b", row, range);
        assert_eq!(get("0", &[]), b"abc");
        assert_eq!(get("2", &[]), b"");
        assert_eq!(get("3", &[]), big);
        assert_eq!(get("3", &["--range", "1000..1300"]), &big[1000..1300]);
    }
}

const NESTED: &str = r#"
import sys, lance, pyarrow as pa
bf = lance.blob_field("b", inline_size_threshold=64, dedicated_size_threshold=1000)
vals = [b"abc", bytes(range(200)), None, bytes(range(256)) * 8]
st = pa.StructArray.from_arrays([pa.array(["a", "b", "c", "d"]), lance.blob_array(vals)],
                                fields=[pa.field("name", pa.string()), bf])
lance.write_dataset(pa.table({"s": st}), sys.argv[1], data_storage_version="2.2")
"#;

#[test]
fn blobs_inside_structs_list_and_get_by_path() {
    let dir = TempDir::new("cli-nested-blobs");
    let ds = dir.join("ds");
    let ds_s = ds.to_str().unwrap();
    py(NESTED, &[ds_s]);
    assert_eq!(
        ls_kinds(ds_s, "s.b"),
        ["inline", "packed", "null", "dedicated"]
    );
    let get = |row: &str, range: &[&str]| blob_get(ds_s, "s.b", row, range);
    let big: Vec<u8> = (0..8).flat_map(|_| 0u8..=255).collect();
    assert_eq!(get("0", &[]), b"abc");
    assert_eq!(get("1", &[]), (0u8..200).collect::<Vec<u8>>());
    assert_eq!(get("3", &["--range", "100..900"]), &big[100..900]);
    let out = lancer()
        .args(["blob", "ls", ds_s, "--column", "s.name"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a blob column"));
}

#[test]
fn inspect_lists_registered_base_paths() {
    let dir = TempDir::new("cli-bases");
    let ds = dir.join("ds");
    let ds_s = ds.to_str().unwrap();
    py(
        r#"
import sys, lance, pyarrow as pa
lance.write_dataset(pa.table({"x": [1]}), sys.argv[1], data_storage_version="2.2",
                    initial_bases=[lance.DatasetBasePath("s3://bucket/media", name="media")])
lance.dataset(sys.argv[1]).add_bases([lance.DatasetBasePath("s3://bucket/more", is_dataset_root=True)])
"#,
        &[ds_s],
    );
    let out = ok(lancer().args(["--json", "inspect", ds_s]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["base_paths"],
        serde_json::json!([
            {"id": 1, "name": "media", "path": "s3://bucket/media", "is_dataset_root": false},
            {"id": 2, "name": null, "path": "s3://bucket/more", "is_dataset_root": true},
        ])
    );
    let text = String::from_utf8(ok(lancer().args(["inspect", ds_s])).stdout).unwrap();
    assert!(
        text.contains("[2] s3://bucket/more, a dataset root"),
        "{text}"
    );
}
