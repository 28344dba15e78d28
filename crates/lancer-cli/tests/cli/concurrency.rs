//! Concurrent and killed writers: `update`, `import --mode append`, `compact`,
//! `add-column` and `merge` processes at once, or killed at each point of a commit,
//! lose nothing and leave the last version whole.

use lancer_testkit::TempDir;

use crate::common::{lancer, ok, py, pylance14};
use crate::json_of;

/// Runs `lancer ARGS` until it does not fail with a commit conflict (a concurrent
/// writer won); returns how many attempts it took.
fn until_committed(args: &[String]) -> usize {
    for attempt in 1..=300 {
        let out = lancer().args(args).output().unwrap();
        if out.status.success() {
            return attempt;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("conflict"), "lancer {args:?}: {err}");
    }
    panic!("lancer {args:?}: still conflicting after 300 attempts");
}

/// Real processes at once: four updaters (each `x = x + 1` five times on its own
/// quarter of the rows), two appenders and a compactor. Every commit lands exactly
/// once: each original row ends at x = 5, every appended row is there, every version
/// reads, and pylance reads the last one the same.
#[test]
fn concurrent_updates_appends_and_compactions_lose_nothing() {
    let dir = TempDir::new("cli-concurrent");
    let ds = dir.join("ds");
    import_parts(&dir, &ds, 4, 100, |_| 0);
    let s = |x: &str| x.to_string();
    let d = ds.to_string_lossy().to_string();
    let mut jobs: Vec<Vec<Vec<String>>> = Vec::new();
    for k in 0..4 {
        let set = vec![
            s("update"),
            d.clone(),
            s("--set"),
            s("x=x + 1"),
            s("--where"),
            format!("id < 400 AND id % 4 = {k}"),
        ];
        jobs.push(vec![set; 5]);
    }
    for a in 0..2 {
        let mut runs = Vec::new();
        for b in 0..3 {
            let csv = dir.join(format!("a{a}-{b}.csv"));
            let from = 1000 + a * 100 + b * 10;
            let body: String = std::iter::once("id,x\n".to_string())
                .chain((from..from + 10).map(|i| format!("{i},0\n")))
                .collect();
            std::fs::write(&csv, body).unwrap();
            runs.push(vec![
                s("import"),
                csv.to_string_lossy().to_string(),
                d.clone(),
                s("--mode"),
                s("append"),
            ]);
        }
        jobs.push(runs);
    }
    jobs.push(vec![
        vec![
            s("compact"),
            d.clone(),
            s("--target-rows"),
            s("1000")
        ];
        3
    ]);
    let attempts: usize = std::thread::scope(|sc| {
        let hs: Vec<_> = jobs
            .iter()
            .map(|runs| sc.spawn(move || runs.iter().map(|r| until_committed(r)).sum::<usize>()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert!(attempts >= 29, "{attempts} attempts for 29 commits");
    eprintln!("{attempts} attempts for 29 commits");
    let rows: Vec<serde_json::Value> = {
        let out = ok(lancer().args(["cat", "--format", "jsonl"]).arg(&ds));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(rows.len(), 460, "400 rows + 60 appended");
    for r in &rows {
        let (id, x) = (r["id"].as_i64().unwrap(), r["x"].as_i64().unwrap());
        let want = if id < 400 { 5 } else { 0 };
        assert_eq!(x, want, "row {id}");
    }
    let v = json_of(&["versions", "--json"], &ds);
    for entry in v.as_array().unwrap() {
        let n = entry["version"].as_u64().unwrap().to_string();
        ok(lancer().args(["count", "--version", &n]).arg(&ds));
    }
    if pylance14().is_some() {
        let out = py(
            "import lance,sys; t=lance.dataset(sys.argv[1]).to_table(); print(t.num_rows, sum(t['x'].to_pylist()))",
            &[ds.to_str().unwrap()],
        );
        assert_eq!(out, "460 2000");
    }
}

/// Writers killed in the middle of an update, a column add or a compaction (after
/// writing data, after the transaction file, before the manifest, after reserving
/// fragment ids) leave the last version whole; the same command then succeeds.
#[test]
fn killed_evolution_writers_leave_the_last_version_intact() {
    let dir = TempDir::new("cli-killed");
    let ds = dir.join("ds");
    import_parts(&dir, &ds, 3, 50, |i| i);
    let table = || ok(lancer().args(["cat", "--format", "jsonl"]).arg(&ds)).stdout;
    let mut added = 0;
    for point in [
        "after-data",
        "after-txn",
        "before-manifest",
        "after-reserve",
    ] {
        let commands: Vec<Vec<String>> = vec![
            vec![
                "update".into(),
                "--set".into(),
                "x=x * 2".into(),
                "--where".into(),
                "id % 3 = 0".into(),
            ],
            vec!["add-column".into(), format!("c{added}=x + 1")],
            vec!["compact".into(), "--target-rows".into(), "1000".into()],
        ];
        for cmd in commands {
            let before = table();
            let out = lancer()
                .arg(&cmd[0])
                .arg(&ds)
                .args(&cmd[1..])
                .env("LANCER_CRASH_AT", point)
                .output()
                .unwrap();
            if out.status.success() {
                // the command has no such point (only compaction reserves ids); it
                // committed normally
                assert!(
                    point == "after-reserve" && cmd[0] != "compact",
                    "{point} {cmd:?}"
                );
                if cmd[0] == "add-column" {
                    added += 1;
                }
                continue;
            }
            assert_eq!(table(), before, "{point} {cmd:?}: the table changed");
            ok(lancer().arg(&cmd[0]).arg(&ds).args(&cmd[1..]));
            if cmd[0] == "add-column" {
                added += 1;
            }
        }
    }
    let out = ok(lancer().args(["verify"]).arg(&ds));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ok"));
}

/// Three processes upserting overlapping key ranges at once, four times each: every
/// key stays unique, each row holds a value one of its writers wrote, every insert is
/// kept once.
#[test]
fn concurrent_merges_on_overlapping_keys_keep_keys_unique() {
    let dir = TempDir::new("cli-merges");
    let ds = dir.join("ds");
    import_parts(&dir, &ds, 3, 100, |_| 0);
    let d = ds.to_string_lossy().to_string();
    let mut jobs = Vec::new();
    for k in 0..3i64 {
        let mut runs = Vec::new();
        for round in 0..4i64 {
            let csv = dir.join(format!("m{k}-{round}.csv"));
            let body: String = std::iter::once("id,x\n".to_string())
                .chain((k * 75..k * 75 + 150).map(|i| format!("{i},{}\n", k + 1)))
                .chain(std::iter::once(format!(
                    "{},{}\n",
                    1000 + k * 10 + round,
                    k + 1
                )))
                .collect();
            std::fs::write(&csv, body).unwrap();
            runs.push(vec![
                "merge".to_string(),
                d.clone(),
                csv.to_string_lossy().to_string(),
                "--on".to_string(),
                "id".to_string(),
            ]);
        }
        jobs.push(runs);
    }
    let attempts: usize = std::thread::scope(|sc| {
        let hs: Vec<_> = jobs
            .iter()
            .map(|runs| sc.spawn(move || runs.iter().map(|r| until_committed(r)).sum::<usize>()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    eprintln!("{attempts} attempts for 12 merges");
    let out = ok(lancer().args(["cat", "--format", "jsonl"]).arg(&ds));
    let mut seen = std::collections::BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        let (id, x) = (r["id"].as_i64().unwrap(), r["x"].as_i64().unwrap());
        assert!(seen.insert(id, x).is_none(), "key {id} twice");
    }
    assert_eq!(seen.len(), 300 + 12, "300 rows + 12 inserted");
    for (id, x) in &seen {
        if *id >= 1000 {
            assert_eq!(*x, (id - 1000) / 10 + 1, "insert {id}");
            continue;
        }
        // the writers whose range holds the id
        let writers: Vec<i64> = (0..3)
            .filter(|k| (k * 75..k * 75 + 150).contains(id))
            .collect();
        let ok_values: Vec<i64> = writers.iter().map(|k| k + 1).collect();
        if writers.is_empty() {
            assert_eq!(*x, 0, "row {id}");
        } else {
            assert!(ok_values.contains(x), "row {id}: {x} not from {writers:?}");
        }
    }
}

/// Imports `parts` CSV files of `per` rows (`id`, `x = x_of(id)`) into `ds`: a dataset
/// of `parts` fragments.
fn import_parts(
    dir: &std::path::Path,
    ds: &std::path::Path,
    parts: i64,
    per: i64,
    x_of: fn(i64) -> i64,
) {
    for part in 0..parts {
        let csv = dir.join(format!("p{part}.csv"));
        let body: String = std::iter::once("id,x\n".to_string())
            .chain((part * per..part * per + per).map(|i| format!("{i},{}\n", x_of(i))))
            .collect();
        std::fs::write(&csv, body).unwrap();
        let mode = if part == 0 { "create" } else { "append" };
        ok(lancer()
            .arg("import")
            .arg(&csv)
            .arg(ds)
            .args(["--mode", mode]));
    }
}
