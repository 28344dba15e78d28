//! `lancer sql` on a dataset pylance 14 wrote and indexed, and a Parquet file beside it:
//! aggregates, filters and joins answer as DuckDB answers over the same rows;
//! `vector_search` and `fts` give pylance's nearest rows and matches; EXPLAIN shows
//! Lancer's scan with its filter and index; CREATE TABLE AS / INSERT / UPDATE / DELETE
//! are commits pylance reads; mistakes are one-line errors naming what to write.

use std::path::Path;

use lancer_testkit::oracle::{run_python_code, venv_python};

use crate::common::{lancer, ok, py, TempDir};

/// pylance 14 writes the dataset `ds` (400 rows, 3 fragments, BTREE on id, BITMAP on
/// cat, INVERTED on text, IVF_FLAT on vec) and the same rows as `rows.parquet`.
fn fixture(dir: &Path) -> bool {
    let code = r#"
import sys, lance, numpy as np, pyarrow as pa, pyarrow.parquet as pq
d = sys.argv[1]
rng = np.random.default_rng(11)
n = 400
t = pa.table({
    "id": pa.array(np.arange(n), pa.int64()),
    "cat": [["art", "science", "music", "sport"][i % 4] for i in range(n)],
    "price": pa.array(np.round(rng.random(n) * 100, 2)),
    "text": [("apple pie " if i % 5 == 0 else "") + f"word{i % 13} pear" for i in range(n)],
    "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, dtype="float32")), 4),
})
ds = lance.write_dataset(t, d + "/ds", max_rows_per_file=150)
ds.create_scalar_index("id", "BTREE")
ds.create_scalar_index("cat", "BITMAP")
ds.create_scalar_index("text", "INVERTED")
ds.create_index("vec", "IVF_FLAT", num_partitions=2)
pq.write_table(t.drop_columns(["vec"]), d + "/rows.parquet")
pq.write_table(pa.table({"cat": ["art", "music"], "label": ["A", "M"]}), d + "/labels.parquet")
print("ok")
"#;
    py(code, &[dir.to_str().unwrap()]) == "ok"
}

/// A new temporary directory holding the fixture (None without pylance).
fn fixture_dir(name: &str) -> Option<TempDir> {
    let dir = TempDir::new(name);
    fixture(dir.path()).then_some(dir)
}

/// `lancer sql QUERY --format jsonl` run in `dir`: its rows as JSON values.
fn rows(dir: &Path, query: &str) -> Vec<serde_json::Value> {
    let out = ok(lancer()
        .current_dir(dir)
        .args(["sql", "--format", "jsonl", query]));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// DuckDB's rows of `query` (run in `dir`) as JSON values, numbers as floats where
/// they are fractional.
fn duckdb(dir: &Path, query: &str) -> Option<Vec<serde_json::Value>> {
    let py = venv_python("py")?;
    let code = r#"
import sys, json, os, duckdb
os.chdir(sys.argv[1])
cur = duckdb.sql(sys.argv[2])
cols = [c[0] for c in cur.description]
for r in cur.fetchall():
    print(json.dumps(dict(zip(cols, r))))
"#;
    let out = run_python_code(&py, code, [dir.to_str().unwrap(), query]);
    Some(
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

/// Numbers compared as floats (DuckDB and DataFusion type sums differently).
fn normalized(v: &[serde_json::Value]) -> Vec<Vec<(String, String)>> {
    v.iter()
        .map(|r| {
            let mut cols: Vec<(String, String)> = r
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, x)| {
                    let text = match x.as_f64() {
                        Some(f) => format!("{:.6}", f),
                        None => x.to_string(),
                    };
                    (k.clone(), text)
                })
                .collect();
            cols.sort();
            cols
        })
        .collect()
}

#[test]
fn sql_over_datasets_answers_as_duckdb_and_pylance() {
    let Some(dir) = fixture_dir("cli-sql") else {
        return;
    };
    let d = dir.path();
    // aggregates, filters (pushed into Lancer's scan), joins with Parquet files
    for (ours, theirs) in [
        (
            "SELECT cat, count(*) AS n, sum(price) AS total FROM 'ds' WHERE price > 10 GROUP BY cat ORDER BY cat",
            "SELECT cat, count(*) AS n, sum(price) AS total FROM 'rows.parquet' WHERE price > 10 GROUP BY cat ORDER BY cat",
        ),
        (
            "SELECT id, cat FROM 'ds' WHERE id BETWEEN 100 AND 110 AND cat = 'art' ORDER BY id",
            "SELECT id, cat FROM 'rows.parquet' WHERE id BETWEEN 100 AND 110 AND cat = 'art' ORDER BY id",
        ),
        (
            "SELECT l.label, count(*) AS n FROM 'ds' d JOIN 'labels.parquet' l ON d.cat = l.cat GROUP BY l.label ORDER BY l.label",
            "SELECT l.label, count(*) AS n FROM 'rows.parquet' d JOIN 'labels.parquet' l ON d.cat = l.cat GROUP BY l.label ORDER BY l.label",
        ),
        (
            "SELECT id FROM 'ds' WHERE text LIKE '%apple%' ORDER BY id LIMIT 5",
            "SELECT id FROM 'rows.parquet' WHERE text LIKE '%apple%' ORDER BY id LIMIT 5",
        ),
        ("SELECT count(*) AS n FROM 'ds'", "SELECT count(*) AS n FROM 'rows.parquet'"),
    ] {
        let got = rows(d, ours);
        if let Some(want) = duckdb(d, theirs) {
            assert_eq!(normalized(&got), normalized(&want), "{ours}");
        }
        assert!(!got.is_empty(), "{ours}");
    }

    // vector search and full-text search inside SQL, as pylance searches
    let q = "[0.5, 0.5, 0.5, 0.5]";
    let got = rows(
        d,
        &format!("SELECT id, _distance FROM vector_search('ds', 'vec', {q}, k => 5)"),
    );
    let ids: Vec<i64> = got.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    let want = py(
        "import sys, lance\nds = lance.dataset(sys.argv[1])\nprint(ds.to_table(nearest={'column': 'vec', 'q': [0.5] * 4, 'k': 5}, columns=['id'])['id'].to_pylist())",
        &[d.join("ds").to_str().unwrap()],
    );
    if !want.is_empty() {
        assert_eq!(format!("{ids:?}"), want);
    }
    assert_eq!(ids.len(), 5);
    let got = rows(
        d,
        "SELECT id, _score FROM fts('ds', 'text', 'apple', limit => 100) ORDER BY id",
    );
    let want = py(
        "import sys, lance\nds = lance.dataset(sys.argv[1])\nprint(sorted(ds.to_table(full_text_query='apple', columns=['id'], limit=100)['id'].to_pylist()))",
        &[d.join("ds").to_str().unwrap()],
    );
    let ids: Vec<i64> = got.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    if !want.is_empty() {
        assert_eq!(format!("{ids:?}"), want);
    }
    assert_eq!(ids.len(), 80);
    // hybrid search as a join of the two, on the row id
    let got = rows(
        d,
        &format!(
            "SELECT v.id FROM vector_search('ds', 'vec', {q}, k => 50) v \
             JOIN fts('ds', 'text', 'apple', limit => 400) f ON v._rowid = f._rowid ORDER BY v._distance"
        ),
    );
    assert!(
        got.iter().all(|r| r["id"].as_i64().unwrap() % 5 == 0),
        "{got:?}"
    );

    // EXPLAIN: Lancer's scan, its pushed filter and the index answering it
    let out = ok(lancer().current_dir(d).args([
        "sql",
        "--format",
        "csv",
        "EXPLAIN SELECT id FROM 'ds' WHERE id = 7",
    ]));
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("LanceScanExec"), "{plan}");
    assert!(plan.contains("id_idx(BTree)"), "{plan}");

    // a named table at a version
    let out = ok(lancer().current_dir(d).args([
        "sql",
        "--format",
        "csv",
        "--table",
        "t=ds@1",
        "SELECT count(*) AS n FROM t",
    ]));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "n\n400");
}

#[test]
fn sql_statements_change_datasets_in_one_commit_each() {
    let Some(dir) = fixture_dir("cli-sql-dml") else {
        return;
    };
    let d = dir.path();
    let n = rows(
        d,
        "CREATE TABLE 'cheap.lance' AS SELECT id, cat, price FROM 'ds' WHERE price < 20",
    );
    let created = n[0]["count"].as_u64().unwrap();
    assert!(created > 0);
    rows(
        d,
        "INSERT INTO 'cheap.lance' SELECT id + 1000, cat, price FROM 'ds' WHERE id < 3",
    );
    rows(d, "DELETE FROM 'cheap.lance' WHERE id = 1001");
    let n = rows(
        d,
        "UPDATE 'cheap.lance' SET price = price * 2 WHERE cat = 'art'",
    );
    assert!(n[0]["count"].as_u64().is_some());
    let got = rows(d, "SELECT count(*) AS n FROM 'cheap.lance'");
    assert_eq!(got[0]["n"].as_u64(), Some(created + 2));
    // pylance reads each version the statements committed
    let seen = py(
        "import sys, lance\nds = lance.dataset(sys.argv[1])\nprint(ds.version, ds.count_rows(), len([i for i in ds.to_table()['id'].to_pylist() if i >= 1000]))",
        &[d.join("cheap.lance").to_str().unwrap()],
    );
    if !seen.is_empty() {
        assert_eq!(seen, format!("4 {} 2", created + 2));
    }
    // the statement over the same table twice: the second sees the first's commit
    let out = ok(lancer().current_dir(d).args([
        "sql",
        "--format",
        "csv",
        "DELETE FROM 'cheap.lance' WHERE id >= 1000; SELECT count(*) AS n FROM 'cheap.lance'",
    ]));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("n\n{created}")
    );
}

#[test]
fn sql_mistakes_are_one_line_errors() {
    let Some(dir) = fixture_dir("cli-sql-errors") else {
        return;
    };
    let d = dir.path();
    for (query, says) in [
        ("SELEC 1", "SELEC"),
        (
            "SELECT * FROM fts('ds', 'text', 'x', top => 3)",
            "no argument \"top\"",
        ),
        (
            "SELECT * FROM vector_search('ds', 'vec', 'oops')",
            "list of numbers",
        ),
        ("SELECT nope FROM 'ds'", "nope"),
        (
            "MERGE INTO 'ds' t USING 'rows.parquet' s ON t.id = s.id WHEN MATCHED THEN UPDATE SET price = s.price * 2",
            "lancer merge",
        ),
        (
            "MERGE INTO 'ds' t USING 'rows.parquet' s ON t.id < s.id WHEN MATCHED THEN DELETE",
            "keys are equalities",
        ),
        ("CREATE TABLE 'ds' AS SELECT 1 AS x", "already"),
    ] {
        let out = lancer()
            .current_dir(d)
            .args(["sql", query])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{query}: {err}");
        assert!(err.contains(says), "{query}: {err}");
        assert!(!err.contains("panicked"), "{query}: {err}");
    }
}

/// What a terminal showed, without its control sequences (ESC [ ... letter) and carriage
/// returns.
fn terminal_text(raw: &[u8]) -> String {
    let out = String::from_utf8_lossy(raw);
    let mut clean = String::new();
    let mut chars = out.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() || c == '~' {
                        break;
                    }
                }
            }
            continue;
        }
        if c != '\r' {
            clean.push(c);
        }
    }
    clean
}

/// One thing typed into the shell: a line (Enter is added) or Ctrl-C (`"\x03"`), and
/// whether to wait for the shell's next prompt before typing on (else a pause, for a
/// statement that is to be cancelled while it runs).
enum Typed<'a> {
    Line(&'a str),
    RunningFor(&'a str, u64),
    CtrlC,
}

/// The shell on a real terminal (`script` gives it a pseudo-terminal): each of `typed`
/// sent once the shell shows its prompt again (so a loaded machine only makes it slower);
/// what the terminal showed, as text.
fn shell_session(dir: &Path, history: &Path, typed: &[Typed]) -> String {
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    // `script` runs the command through `$SHELL -c`; `exec` makes the lancer process the
    // shell itself, so a Ctrl-C reaches lancer alone (a `dash` left waiting in between
    // would take the SIGINT's default action and `script` would report its death)
    let cmd = format!("exec {} sql --table ds=ds", env!("CARGO_BIN_EXE_lancer"));
    let mut child = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(dir)
        .env("SHELL", "/bin/sh")
        .env("LANCER_HISTORY", history)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux's `script` runs the shell on a pseudo-terminal");
    let mut stdin = child.stdin.take().unwrap();
    let shown = Arc::new(Mutex::new(Vec::<u8>::new()));
    let reader = {
        let shown = Arc::clone(&shown);
        let mut stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shown.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let len = || shown.lock().unwrap().len();
    let text = || terminal_text(&shown.lock().unwrap());
    // until the output has grown past `since`, ends with a prompt and stays so a moment
    let prompt_after = |since: usize| {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let now = len();
            let t = text();
            let t = t.trim_end();
            if now > since && (t.ends_with("lancer>") || t.ends_with("...>")) {
                std::thread::sleep(Duration::from_millis(100));
                if len() == now {
                    return;
                }
                continue;
            }
            assert!(
                Instant::now() < deadline,
                "the shell showed no prompt in 120 s:\n{t}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    prompt_after(0);
    for step in typed {
        let before = len();
        match step {
            Typed::Line(line) => {
                stdin.write_all(format!("{line}\r").as_bytes()).unwrap();
                stdin.flush().unwrap();
                if *line == ".quit" {
                    break;
                }
                prompt_after(before);
            }
            Typed::RunningFor(line, ms) => {
                stdin.write_all(format!("{line}\r").as_bytes()).unwrap();
                stdin.flush().unwrap();
                std::thread::sleep(Duration::from_millis(*ms));
            }
            Typed::CtrlC => {
                stdin.write_all(b"\x03").unwrap();
                stdin.flush().unwrap();
                prompt_after(before);
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the shell did not end on .quit:\n{}", text());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    reader.join().unwrap();
    let shown = text();
    assert!(status.success(), "the shell ended with {status}:\n{shown}");
    shown
}

#[test]
fn the_shell_runs_statements_dot_commands_and_cancels_with_ctrl_c() {
    let Some(dir) = fixture_dir("cli-sql-shell") else {
        return;
    };
    let d = dir.path();
    let history = d.join("history");
    let shown = shell_session(
        d,
        &history,
        &[
            Typed::Line(".tables"),
            Typed::Line("SELECT cat, count(*) AS n"),
            Typed::Line("  FROM ds GROUP BY cat ORDER BY cat;"),
            Typed::Line(".schema ds"),
            Typed::Line(".format csv"),
            Typed::Line("SELECT id FROM 'ds' WHERE id < 2 ORDER BY id;"),
            Typed::RunningFor("SELECT sum(value) FROM range(1, 100000000000);", 1500),
            Typed::CtrlC,
            Typed::Line("SELECT 40 + 2 AS answer;"),
            Typed::Line("SELECT nope FROM ds;"),
            Typed::Line("half a statement"),
            Typed::CtrlC,
            Typed::Line(".nonsense"),
            Typed::Line(".quit"),
        ],
    );
    let after = |what: &str| -> &str {
        let at = shown
            .find(what)
            .unwrap_or_else(|| panic!("{what:?} not shown:\n{shown}"));
        &shown[at + what.len()..]
    };
    // .tables names the --table
    assert!(after(".tables").trim_start().starts_with("ds"), "{shown}");
    // a statement over two lines (continuation prompt), its table and its timing
    assert!(shown.contains("   ...>   FROM ds GROUP BY cat"), "{shown}");
    let grouped = after("ORDER BY cat;");
    for cat in ["art", "music", "science", "sport"] {
        assert!(grouped.contains(&format!("{cat} ")), "{shown}");
    }
    assert!(grouped.contains("4 rows in "), "{shown}");
    // .schema lists the dataset's columns with their Arrow types
    let schema = after(".schema ds");
    assert!(
        schema.contains("vec") && schema.contains("FixedSizeList"),
        "{shown}"
    );
    // .format csv: later rows as CSV
    assert!(
        after("ORDER BY id;").starts_with("\nid\n0\n1\n2 rows in"),
        "{shown}"
    );
    // Ctrl-C cancels the running statement; the shell goes on
    assert!(
        after("range(1, 100000000000);").contains("cancelled after"),
        "{shown}"
    );
    assert!(after("AS answer;").starts_with("\nanswer\n42\n"), "{shown}");
    // a mistake is an error line, and the next statement runs
    assert!(
        after("SELECT nope FROM ds;").contains("error: Schema error: No field named nope"),
        "{shown}"
    );
    assert!(
        after(".nonsense").contains("unknown command \".nonsense\""),
        "{shown}"
    );
    // the history keeps the statements (the one over two lines as one entry), not the
    // half statement Ctrl-C cleared
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(
        kept.contains("SELECT cat, count(*) AS n\\n  FROM ds GROUP BY cat ORDER BY cat;"),
        "{kept}"
    );
    assert!(kept.contains("SELECT 40 + 2 AS answer;"), "{kept}");
    assert!(!kept.contains("half a statement"), "{kept}");
}

#[test]
fn row_ids_are_hidden_columns_of_every_dataset_table() {
    let Some(dir) = fixture_dir("cli-sql-rowid") else {
        return;
    };
    let d = dir.path();
    // pylance's row ids and addresses of the rows with id 140..160 (fragments 0 and 1)
    let want = py(
        r#"import sys, json, lance
t = lance.dataset(sys.argv[1]).to_table(columns=["id"], filter="id >= 140 AND id < 160", with_row_id=True, with_row_address=True)
print(json.dumps([[r["id"], r["_rowid"], r["_rowaddr"]] for r in t.to_pylist()]))"#,
        &[d.join("ds").to_str().unwrap()],
    );
    if want.is_empty() {
        return;
    }
    let want: Vec<Vec<u64>> = serde_json::from_str(&want).unwrap();
    let got = rows(
        d,
        "SELECT id, _rowid, _rowaddr FROM ds WHERE id >= 140 AND id < 160 ORDER BY id",
    );
    let got: Vec<Vec<u64>> = got
        .iter()
        .map(|r| {
            ["id", "_rowid", "_rowaddr"]
                .map(|k| r[k].as_u64().unwrap())
                .to_vec()
        })
        .collect();
    assert_eq!(got, want);
    // a filter on the row address reaches the same rows
    let (id, addr) = (want[15][0], want[15][2]);
    let got = rows(d, &format!("SELECT id FROM ds WHERE _rowaddr = {addr}"));
    assert_eq!(got[0]["id"].as_u64(), Some(id));
    // `*` shows the dataset's own columns, also in a statement that names _rowid
    for q in [
        "SELECT * FROM ds WHERE id = 3",
        "SELECT * FROM ds WHERE _rowid = 3",
        "SELECT a.* FROM ds a JOIN ds b ON a._rowid = b._rowid WHERE a.id = 3",
    ] {
        let got = rows(d, q);
        let keys: Vec<&String> = got[0].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["cat", "id", "price", "text", "vec"], "{q}");
    }
    let got = rows(d, "SELECT *, _rowid FROM ds WHERE id = 3");
    assert_eq!(got[0]["_rowid"].as_u64(), Some(3));
}

#[test]
fn merge_into_is_one_merge_insert_commit_pylance_reads() {
    let Some(dir) = fixture_dir("cli-sql-merge") else {
        return;
    };
    let d = dir.path();
    rows(d, "CREATE TABLE 'm.lance' AS SELECT * FROM ds");
    // five rows updated (prices doubled), three inserted
    let got = rows(
        d,
        "MERGE INTO 'm.lance' t USING (\
           SELECT id, cat, price * 2 AS price, text, vec FROM 'm.lance' WHERE id < 5 \
           UNION ALL SELECT id + 1000 AS id, cat, price, text, vec FROM 'm.lance' WHERE id < 3) AS s \
         ON t.id = s.id \
         WHEN MATCHED THEN UPDATE SET cat = s.cat, price = s.price, text = s.text, vec = s.vec \
         WHEN NOT MATCHED THEN INSERT ROW",
    );
    assert_eq!(got[0]["count"].as_u64(), Some(8));
    // target rows no source row matched, among those the condition selects, deleted
    let got = rows(
        d,
        "MERGE INTO 'm.lance' t USING (SELECT * FROM 'm.lance' WHERE id < 390) s ON t.id = s.id \
         WHEN NOT MATCHED BY SOURCE AND t.id >= 390 AND t.id < 1000 THEN DELETE",
    );
    assert_eq!(got[0]["count"].as_u64(), Some(10));
    let seen = py(
        r#"import sys, lance
ds = lance.dataset(sys.argv[1]); orig = lance.dataset(sys.argv[2])
t = ds.to_table(columns=["id", "price"]).to_pylist(); by = {r["id"]: r["price"] for r in t}
o = {r["id"]: r["price"] for r in orig.to_table(columns=["id", "price"]).to_pylist()}
print(ds.version, len(t), all(abs(by[i] - 2 * o[i]) < 1e-9 for i in range(5)), sorted(i for i in by if i >= 1000), max(i for i in by if i < 1000))"#,
        &[
            d.join("m.lance").to_str().unwrap(),
            d.join("ds").to_str().unwrap(),
        ],
    );
    if !seen.is_empty() {
        assert_eq!(seen, "3 393 True [1000, 1001, 1002] 389");
    }
}
