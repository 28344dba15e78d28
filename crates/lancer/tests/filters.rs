//! The filter suite: every filter of tests/data/filters.sql over the suite dataset
//! (written by pylance 14 — checked in — and live by pylance 14, 12 and 11 during
//! scripts/test.sh) returns exactly pylance's rows in pylance's order, or is refused
//! when pylance refuses it. Full-row cases compare every column, limit/offset,
//! `_rowid` and nested projection. Deleting by SQL filter is checked by pylance.

use std::path::{Path, PathBuf};
use std::process::Command;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use lancer::{Dataset, DatasetExt, Error};
use serde_json::Value;

use crate::common::{copy_dir, pylance, repo, TempDir};

/// Suite directories: checked-in, then live ones when the test script made them.
fn suites() -> Vec<PathBuf> {
    crate::common::golden_roots(
        "tests/data/filter-suite/pylance-14",
        "LANCER_FILTER_SUITE_LIVE",
    )
}

fn expected(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn ids(batch: &RecordBatch) -> Vec<i64> {
    batch
        .column(0)
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}

#[test]
fn every_filter_returns_pylances_rows() {
    for dir in suites() {
        let ds = Dataset::open(dir.join("filters")).unwrap();
        let exp = expected(&dir);
        let mut accepted = 0;
        let mut failures = Vec::new();
        for case in exp["filters"].as_array().unwrap() {
            let filter = case["filter"].as_str().unwrap();
            let got = ds.scan().columns(&["id"]).filter(filter).to_batch();
            match (case.get("ids"), got) {
                (Some(want), Ok(b)) => {
                    accepted += 1;
                    let want: Vec<i64> = want
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_i64().unwrap())
                        .collect();
                    let got = ids(&b);
                    if got != want {
                        failures.push(format!(
                            "{filter}: {} rows, pylance {} (first differing at {:?})",
                            got.len(),
                            want.len(),
                            got.iter().zip(&want).position(|(a, b)| a != b)
                        ));
                    }
                    // count_where agrees with the scan.
                    let n = ds.count_where(filter).unwrap();
                    assert_eq!(n, want.len() as u64, "{filter}: count_where");
                }
                (Some(_), Err(e)) => failures.push(format!("{filter}: refused: {e}")),
                (None, Ok(b)) => failures.push(format!(
                    "{filter}: pylance refuses ({}), Lancer returned {} rows",
                    case["error"],
                    b.num_rows()
                )),
                (None, Err(e)) => {
                    // Refusals are typed and say which filter.
                    assert!(matches!(e, Error::Filter { .. }), "{filter}: {e:?}");
                    assert!(e.to_string().contains(filter.trim()), "{e}");
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{}: {} of {} filters differ from pylance:\n{}",
            dir.display(),
            failures.len(),
            exp["filters"].as_array().unwrap().len(),
            failures.join("\n")
        );
        assert!(accepted >= 100, "only {accepted} filters accepted");
    }
}

#[test]
fn full_rows_limit_offset_and_row_ids_match_pylance() {
    for dir in suites() {
        let ds = Dataset::open(dir.join("filters")).unwrap();
        let exp = expected(&dir);
        let cases = exp["full"].as_array().unwrap();
        assert!(cases.len() >= 30, "{} full cases", cases.len());
        for case in cases {
            let name = case["name"].as_str().unwrap();
            let f = std::fs::File::open(dir.join("full").join(format!("{name}.arrow"))).unwrap();
            let reader = arrow_ipc::reader::FileReader::try_new(f, None).unwrap();
            let schema = reader.schema();
            let want: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
            let want = arrow_select::concat::concat_batches(&schema, &want).unwrap();
            let mut scan = ds
                .scan()
                .filter(case["filter"].as_str().unwrap())
                .batch_size(97);
            if let Some(cols) = case.get("columns") {
                let cols: Vec<&str> = cols
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap())
                    .collect();
                scan = scan.columns(&cols);
            }
            if let Some(pairs) = case.get("project") {
                let pairs: Vec<(&str, &str)> = pairs
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| (p[0].as_str().unwrap(), p[1].as_str().unwrap()))
                    .collect();
                scan = scan.project(&pairs);
            }
            if let Some(l) = case.get("limit") {
                scan = scan.limit(l.as_u64());
            }
            if let Some(o) = case.get("offset") {
                scan = scan.offset(o.as_u64().unwrap());
            }
            if case.get("with_row_id").is_some() {
                scan = scan.with_row_id(true);
            }
            let got = scan.to_batch().unwrap();
            let names = |b: &RecordBatch| -> Vec<String> {
                b.schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect()
            };
            assert_eq!(names(&got), names(&want), "{name}");
            assert_eq!(got.num_rows(), want.num_rows(), "{name}");
            for (i, (g, w)) in got.columns().iter().zip(want.columns()).enumerate() {
                assert_eq!(g.data_type(), w.data_type(), "{name} column {i}");
                assert_eq!(g.to_data(), w.to_data(), "{name} column {i}");
            }
        }
    }
}

#[test]
fn unordered_and_batched_scans_return_the_same_rows() {
    let dir = repo().join("tests/data/filter-suite/pylance-14");
    let ds = Dataset::open(dir.join("filters")).unwrap();
    let ordered = ids(&ds
        .scan()
        .columns(&["id"])
        .filter("i32 > 0")
        .to_batch()
        .unwrap());
    for (batch, threads) in [(1, 1), (7, 2), (100, 3), (100_000, 2)] {
        let stream = ds
            .scan()
            .columns(&["id"])
            .filter("i32 > 0")
            .batch_size(batch)
            .threads(threads)
            .ordered(false)
            .stream()
            .unwrap();
        let mut got: Vec<i64> = Vec::new();
        for b in stream {
            let b = b.unwrap();
            assert!(b.num_rows() <= batch);
            got.extend(ids(&b));
        }
        got.sort();
        let mut want = ordered.clone();
        want.sort();
        assert_eq!(got, want, "batch {batch}, threads {threads}");
    }
    // Without a filter, offset and limit choose the rows directly.
    let all = ids(&ds.scan().columns(&["id"]).to_batch().unwrap());
    let page = ids(&ds
        .scan()
        .columns(&["id"])
        .offset(598)
        .limit(Some(5))
        .to_batch()
        .unwrap());
    assert_eq!(page, all[598..603].to_vec());
    let past = ds
        .scan()
        .columns(&["id"])
        .offset(10_000)
        .to_batch()
        .unwrap();
    assert_eq!(past.num_rows(), 0);
    // Takes with struct paths equal the scan's nested projection.
    let nested = ds.scan().columns(&["meta.lang", "id"]).to_batch().unwrap();
    let picked = ds
        .take_paths(&[7, 0, 7, 1600], Some(&["meta.lang", "id"]))
        .unwrap();
    let idx = arrow_array::UInt64Array::from(vec![7u64, 0, 7, 1600]);
    for k in 0..2 {
        let want = arrow_select::take::take(nested.column(k).as_ref(), &idx, None).unwrap();
        assert_eq!(picked.column(k).to_data(), want.to_data());
        assert_eq!(picked.schema().field(k), nested.schema().field(k));
    }
    // Takes: in order (no reordering copy), unordered and repeated — same rows as the scan.
    for offsets in [vec![0u64, 5, 599, 600, 1600], vec![1600, 3, 3, 599, 0]] {
        let t = ds.take(&offsets, Some(&["id"])).unwrap();
        let want: Vec<i64> = offsets.iter().map(|&o| all[o as usize]).collect();
        assert_eq!(ids(&t), want, "{offsets:?}");
    }
    // Dropping a stream early stops it cleanly.
    let mut s = ds.scan().batch_size(10).stream().unwrap();
    assert!(s.next().is_some());
    drop(s);
}

#[test]
fn bad_filters_and_columns_name_what_is_wrong() {
    let dir = repo().join("tests/data/filter-suite/pylance-14");
    let ds = Dataset::open(dir.join("filters")).unwrap();
    let err = |f: &str| ds.scan().filter(f).to_batch().unwrap_err().to_string();
    assert!(
        err("nosuch > 1").contains("nosuch"),
        "{}",
        err("nosuch > 1")
    );
    assert!(err("id >").contains("EOF"));
    assert!(err("id = 1 junk").contains("junk"));
    assert!(err("id > 1.5").contains("Int64"));
    assert!(err("u8 = 256").contains("UInt8"));
    assert!(err("id + 1").contains("boolean"));
    let col = ds
        .scan()
        .columns(&["meta.nope"])
        .to_batch()
        .unwrap_err()
        .to_string();
    assert!(col.contains("nope") && col.contains("lang"), "{col}");
    let col = ds
        .scan()
        .columns(&["id.x"])
        .to_batch()
        .unwrap_err()
        .to_string();
    assert!(col.contains("not a struct"), "{col}");
    let frag = ds
        .scan()
        .fragments(&[99])
        .to_batch()
        .unwrap_err()
        .to_string();
    assert!(frag.contains("99"), "{frag}");
}

#[test]
fn delete_by_sql_filter_reads_identically_in_pylance() {
    let Some(py) = pylance("14") else { return };
    let src = repo().join("tests/data/filter-suite/pylance-14/filters");
    let tmp = TempDir::new("delete-sql");
    copy_dir(&src, &tmp);
    let ds = Dataset::open(&tmp).unwrap();
    let before = ds.count_rows();
    let filter = "s LIKE 'a%' OR (i32 IS NULL AND meta.lang = 'en')";
    let doomed = ds.count_where(filter).unwrap();
    assert!(doomed > 0);
    let after = ds.delete(filter).unwrap();
    assert_eq!(after.count_rows(), before - doomed);
    assert_eq!(after.count_where(filter).unwrap(), 0);
    let ours = ids(&after.scan().columns(&["id"]).to_batch().unwrap());
    let script = "import lance,sys,json; ds=lance.dataset(sys.argv[1]); \
        print(json.dumps([ds.version, ds.to_table(columns=['id'])['id'].to_pylist(), \
        lance.dataset(sys.argv[1], version=ds.version-1).to_table(columns=['id'], filter=sys.argv[2])['id'].to_pylist()]))";
    let out = Command::new(py)
        .args(["-c", script])
        .arg(&tmp)
        .arg(format!("NOT ({filter}) OR ({filter}) IS NULL"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0].as_u64(), Some(after.version()));
    let theirs: Vec<i64> = v[1]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    let kept_by_pylance: Vec<i64> = v[2]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    assert_eq!(ours, theirs);
    assert_eq!(ours, kept_by_pylance);
}

/// Mangled filters (every truncation, random byte edits, deep nesting) never panic:
/// each either compiles and evaluates, or is refused with a typed error.
#[test]
fn mangled_filters_never_panic() {
    let dir = repo().join("tests/data/filter-suite/pylance-14");
    let ds = Dataset::open(dir.join("filters")).unwrap();
    let batch = ds.scan().limit(Some(300)).to_batch().unwrap();
    let schema = batch.schema();
    let text = std::fs::read_to_string(repo().join("tests/data/filters.sql")).unwrap();
    let filters: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split("  ## ").next().unwrap())
        .collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let pieces = [
        "(", ")", "'", "\"", "`", ".", ",", "[", "]", " AND ", " NOT ", "%", "::", "\u{fffd}",
        "1e999", "-", "*",
    ];
    let mut cases: Vec<String> = Vec::new();
    for f in &filters {
        let chars: Vec<char> = f.chars().collect();
        for cut in (0..chars.len()).step_by(3) {
            cases.push(chars[..cut].iter().collect());
        }
        for _ in 0..8 {
            let mut c = chars.clone();
            let at = (next() as usize) % (c.len() + 1);
            let piece = pieces[(next() as usize) % pieces.len()];
            if next() % 2 == 0 && at < c.len() {
                c.remove(at);
            }
            let mut s: String = c[..at.min(c.len())].iter().collect();
            s.push_str(piece);
            s.extend(&c[at.min(c.len())..]);
            cases.push(s);
        }
    }
    cases.push(format!("{}id > 1{}", "(".repeat(300), ")".repeat(300)));
    // The deepest nestings short enough to compile on the calling thread (this test's
    // thread, its default stack).
    cases.push(format!("{}id > 1{}", "(".repeat(29), ")".repeat(29)));
    cases.push("NOT ".repeat(15) + "b");
    cases.push("-".repeat(58) + "id > 1");
    cases.push("-".repeat(63) + "b");
    cases.push(format!("{}b{}", "(".repeat(31), ")".repeat(32)));
    cases.push(vec!["b"; 13].join(" OR "));
    for n in [100, 256, 257, 1000] {
        cases.push("NOT ".repeat(n) + "b");
        cases.push("b".to_string() + &" IS NULL".repeat(n));
    }
    // Generated lists of alternatives: balanced, so accepted at any length.
    let alternatives: Vec<String> = (0..5000).map(|i| format!("id = {i}")).collect();
    cases.push(alternatives.join(" OR "));
    let some: Vec<String> = (0..3000).map(|i| format!("id = {}", i * 3)).collect();
    let thirds = ds.count_where(&some.join(" OR ")).unwrap();
    assert_eq!(thirds, ds.count_where("id % 3 = 0").unwrap());
    cases.push(vec!["i32 > 0"; 3000].join(" AND "));
    for n in [150, 199, 200, 1000] {
        cases.push(vec!["id"; n].join(" + ") + " > 5");
        cases.push("b".to_string() + &" = true".repeat(n));
    }
    let (mut ok, mut refused) = (0, 0);
    for case in &cases {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lancer::Filter::new(case, &schema).and_then(|f| f.evaluate(&batch).map(|_| ()))
        }));
        match outcome {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => {
                assert!(
                    matches!(e, Error::Filter { .. }),
                    "{case:?}: untyped error {e:?}"
                );
                refused += 1;
            }
            Err(_) => panic!("filter {case:?} panicked"),
        }
    }
    assert!(
        ok > 100 && refused > 1000,
        "{ok} compiled, {refused} refused"
    );
}

/// On every golden dataset (pylance 14, 12, 11; storage 2.0 / 2.1 / default; stable row
/// ids; deletions) at every version, the Scanner returns what the table layer's
/// whole-version read returns, and its `_rowaddr` / `_rowid` columns equal the table
/// layer's row addresses and row ids (themselves checked against pylance).
#[test]
fn scanner_row_ids_and_addresses_match_the_table_layer() {
    let mut checked = 0;
    for v in ["14", "12", "11"] {
        let root = repo().join(format!("tests/data/datasets/pylance-{v}"));
        for entry in std::fs::read_dir(&root).unwrap() {
            let dir = entry.unwrap().path();
            if !dir.join("_versions").is_dir() {
                continue;
            }
            let latest = Dataset::open(&dir).unwrap();
            for version in 1..=latest.version() {
                let Ok(ds) = Dataset::open_version(&dir, version) else {
                    continue; // cleaned-up or overwritten history
                };
                let whole = ds.to_batch(None).unwrap();
                let scan = ds
                    .scan()
                    .with_row_id(true)
                    .with_row_address(true)
                    .batch_size(333)
                    .to_batch()
                    .unwrap();
                let n = whole.num_columns();
                for i in 0..n {
                    assert_eq!(
                        scan.column(i).to_data(),
                        whole.column(i).to_data(),
                        "{}",
                        dir.display()
                    );
                }
                let offsets: Vec<u64> = (0..ds.count_rows()).collect();
                let addrs = ds.row_addresses(&offsets).unwrap();
                let col = |k: usize| -> Vec<u64> {
                    scan.column(k)
                        .as_primitive::<arrow_array::types::UInt64Type>()
                        .values()
                        .to_vec()
                };
                assert_eq!(col(n + 1), addrs, "{} v{version} _rowaddr", dir.display());
                let ids = ds.row_ids(&offsets).unwrap_or(addrs);
                assert_eq!(col(n), ids, "{} v{version} _rowid", dir.display());
                checked += 1;
            }
        }
    }
    assert!(checked >= 30, "{checked} versions checked");
}

/// A damaged data file under a threaded scan: an error naming the problem, never a
/// hang or a panic, whether the scan is ordered, unordered, filtered or dropped early.
#[test]
fn scans_of_damaged_datasets_fail_cleanly() {
    let src = repo().join("tests/data/filter-suite/pylance-14/filters");
    let tmp = TempDir::new("damaged-scan");
    copy_dir(&src, &tmp);
    let ds = Dataset::open(&tmp).unwrap();
    let victim = tmp.join("data").join(&ds.fragments()[2].files[0].path);
    let len = std::fs::metadata(&victim).unwrap().len();
    // Keep the footer's position valid but zero the middle: corrupt pages.
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 3;
    let span = 4096.min(bytes.len() / 3);
    for b in &mut bytes[mid..mid + span] {
        *b = 0xFF;
    }
    std::fs::write(&victim, &bytes).unwrap();
    for (ordered, filter) in [
        (true, None),
        (false, None),
        (true, Some("i32 > 0")),
        (false, Some("s LIKE 'a%'")),
    ] {
        let ds = Dataset::open(&tmp).unwrap();
        let mut scan = ds.scan().ordered(ordered).batch_size(100);
        if let Some(f) = filter {
            scan = scan.filter(f);
        }
        // Either the damage is caught (an error) or it lands in bytes no value uses;
        // a hang or panic fails the test.
        let mut errors = 0;
        for b in scan.stream().unwrap() {
            if b.is_err() {
                errors += 1;
            }
        }
        assert!(errors <= 1, "a stream ends at its first error");
    }
    // A truncated file is always an error that names it.
    std::fs::write(&victim, &bytes[..(len / 2) as usize]).unwrap();
    let ds = Dataset::open(&tmp).unwrap();
    let err = ds.scan().to_batch().unwrap_err().to_string();
    assert!(!err.is_empty());
    let mut s = ds.scan().ordered(false).batch_size(50).stream().unwrap();
    let mut saw_error = false;
    for b in s.by_ref() {
        saw_error |= b.is_err();
    }
    assert!(saw_error);
    assert!(s.next().is_none(), "nothing after the error");
    std::fs::remove_file(&victim).unwrap();
    let ds = Dataset::open(&tmp).unwrap();
    let err = ds
        .scan()
        .filter("id > 5")
        .to_batch()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&victim.file_name().unwrap().to_string_lossy().to_string())
            || err.contains("No such file"),
        "{err}"
    );
}
