//! Scalar indexes against pylance: the golden cases of
//! `scripts/gen_golden_scalar_indexes.py` (every kind pylance 14 / 12 / 11 write, on
//! datasets with deletions before and after the build, unindexed appends, delta and merged
//! segments, stable row ids) return, through the index, exactly the rows of a plain
//! scan; Lancer uses an index wherever pylance does for the forms it plans (see
//! `docs/scalar-index-format.md` §10). Lancer-built indexes answer the whole filter
//! suite identically, and pylance plans with them.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use lancer::{Dataset, DatasetExt};
use serde_json::Value;

fn roots() -> Vec<PathBuf> {
    crate::common::golden_roots(
        "tests/data/scalar-indexes/pylance-14",
        "LANCER_GOLDEN_SCALAR_LIVE",
    )
}

fn ids(ds: &Dataset, filter: &str, index: bool) -> Result<Vec<i64>, lancer::Error> {
    let b = ds
        .scan()
        .columns(&["id"])
        .filter(filter)
        .use_scalar_index(index)
        .to_batch()?;
    Ok(b.column(0).as_primitive::<Int64Type>().values().to_vec())
}

/// Filters whose index use Lancer does not plan (negations, whose index answer would be
/// complemented: Lancer scans those), or where pylance's index use reads every row
/// (`contains` without an alphanumeric trigram: pylance 14 rechecks all indexed rows).
fn negated(f: &str) -> bool {
    f.contains("NOT")
        || f.contains("!=")
        || f.contains("IS TRUE")
        || f.contains("= false")
        || f.contains("'a-b'")
        || f.contains("'日本語'")
}

fn case_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("index.json"))
        .collect();
    v.sort();
    v
}

#[test]
fn pylance_built_scalar_indexes_answer_every_golden_filter() {
    for root in roots() {
        let mut failures = Vec::new();
        let (mut used, mut pylance_used, mut filters) = (0, 0, 0);
        let cases = case_files(&root);
        assert!(
            cases.len() >= 30,
            "{}: {} cases",
            root.display(),
            cases.len()
        );
        for file in cases {
            let case: Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            let name = case["name"].as_str().unwrap();
            let ds = Dataset::open(root.join(name)).unwrap();
            for f in case["filters"].as_array().unwrap() {
                let filter = f["filter"].as_str().unwrap();
                let want: Vec<i64> = f["ids_no_index"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect();
                filters += 1;
                // Lancer's plain scan is pylance's, except that pylance 11 orders float
                // zeros (-0.0 < 0.0) where 12 and 14 (and Lancer) take them as equal
                // (docs/scalar-index-format.md §10.2).
                let plain = ids(&ds, filter, false).unwrap();
                let zeros = case["column_type"]
                    .as_str()
                    .is_some_and(|t| t.contains("float"))
                    && root.ends_with("pylance-11")
                    && [
                        "v = 0.0",
                        "v = -0.0",
                        "v < 0",
                        "v >= 0",
                        "v BETWEEN -1 AND 1",
                    ]
                    .contains(&filter);
                if plain != want && !zeros {
                    failures.push(format!(
                        "{name}: {filter}: plain scan differs from pylance's"
                    ));
                }
                let want = plain;
                match ids(&ds, filter, true) {
                    Ok(got) if got == want => {}
                    Ok(got) => failures.push(format!(
                        "{name}: {filter}: {} rows, plain scan {} ({:?} vs {:?})",
                        got.len(),
                        want.len(),
                        &got[..got.len().min(8)],
                        &want[..want.len().min(8)]
                    )),
                    Err(e) => failures.push(format!("{name}: {filter}: {e}")),
                }
                let n = ds.count_where(filter).unwrap_or(u64::MAX);
                if n != want.len() as u64 {
                    failures.push(format!("{name}: {filter}: count {n}, want {}", want.len()));
                }
                let plan = ds.scan().filter(filter).explain().unwrap_or_default();
                let lancer_used = plan.contains("@");
                used += usize::from(lancer_used);
                if f["index_used"].as_bool() == Some(true) {
                    pylance_used += 1;
                    if !lancer_used && !negated(filter) {
                        failures.push(format!(
                            "{name}: {filter}: pylance uses the index, Lancer does not\n{plan}"
                        ));
                    }
                }
            }
        }
        eprintln!(
            "{}: {filters} filters; pylance used an index for {pylance_used}, Lancer for {used}",
            root.display()
        );
        assert!(
            failures.is_empty(),
            "{}:\n{}",
            root.display(),
            failures.join("\n")
        );
        assert!(
            used * 10 >= pylance_used * 7,
            "Lancer used an index for only {used} filters"
        );
    }
}

/// The scalar index Lancer builds on each filter-suite column (small pages and zones so
/// that pruning is exercised on 2,000 rows).
const SUITE_INDEXES: &[(&str, &str)] = &[
    ("id", "btree"),
    ("i32", "btree"),
    ("u8", "bitmap"),
    ("f32", "zonemap"),
    ("f64", "btree"),
    ("s", "bitmap"),
    ("ls", "ngram"),
    ("b", "bitmap"),
    ("d", "bloomfilter"),
    ("ts", "zonemap"),
    ("tags", "label_list"),
    ("nums", "label_list"),
    ("bin", "bloomfilter"),
    ("odd name", "btree"),
];

fn build_suite_indexes(ds: &Dataset) -> Dataset {
    use lancer::scalar_index::{create_scalar_index, ScalarIndexOptions};
    use lancer_index::scalar::ScalarKind;
    let mut ds = ds.clone();
    for (col, kind) in SUITE_INDEXES {
        let mut o = ScalarIndexOptions::new(ScalarKind::parse(kind).unwrap());
        o.params.btree_page_rows = 64;
        o.params.zone_rows = 64;
        o.params.bloom_items = 64;
        ds = create_scalar_index(&ds, col, &o).unwrap_or_else(|e| panic!("{col} {kind}: {e}"));
    }
    ds
}

/// The suite's index set built by pylance `v` on a copy of `dataset` (None without
/// that venv).
fn pylance_suite_indexes(v: &str, dataset: &Path, to: &Path) -> Option<Dataset> {
    let py = crate::common::pylance(v)?;
    let _ = std::fs::remove_dir_all(to);
    crate::common::copy_dir(dataset, to);
    let spec: Vec<Value> = SUITE_INDEXES
        .iter()
        .map(|(c, k)| {
            let params = match *k {
                "btree" => serde_json::json!({"zone_size": 64}),
                "zonemap" => serde_json::json!({"rows_per_zone": 64}),
                "bloomfilter" => serde_json::json!({"number_of_items": 64}),
                _ => serde_json::json!({}),
            };
            serde_json::json!([c, k, params])
        })
        .collect();
    let spec_file = to.with_extension("spec.json");
    std::fs::write(&spec_file, serde_json::to_string(&spec).unwrap()).unwrap();
    let out = std::process::Command::new(py)
        .arg(crate::common::repo().join("scripts/build_scalar_indexes.py"))
        .arg(to)
        .arg(&spec_file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&spec_file);
    assert!(
        out.status.success(),
        "pylance {v}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(Dataset::open(to).unwrap())
}

/// Runs every accepted suite filter on `ds` (with its indexes) against pylance's rows;
/// returns the accepted filters and how many used an index.
fn run_suite(ds: &Dataset, exp: &Value, what: &str) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut used = 0;
    let mut accepted = Vec::new();
    for case in exp["filters"].as_array().unwrap() {
        let filter = case["filter"].as_str().unwrap();
        let Some(want) = case.get("ids") else {
            assert!(
                ids(ds, filter, true).is_err(),
                "{filter}: pylance refuses it"
            );
            continue;
        };
        accepted.push(filter.to_string());
        let want: Vec<i64> = want
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        match ids(ds, filter, true) {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!(
                "{filter}: {} rows, pylance {}",
                got.len(),
                want.len()
            )),
            Err(e) => failures.push(format!("{filter}: {e}")),
        }
        if ds.count_where(filter).unwrap_or(u64::MAX) != want.len() as u64 {
            failures.push(format!("{filter}: count_where"));
        }
        used += usize::from(ds.scan().filter(filter).explain().unwrap().contains('@'));
    }
    eprintln!(
        "{what}: {} filters, {used} through an index",
        accepted.len()
    );
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n"));
    assert!(used >= 60, "{what}: only {used} filters used an index");
    (accepted, used)
}

#[test]
fn pylance_built_indexes_on_every_suite_column_give_the_suites_rows() {
    let dir = crate::common::repo().join("tests/data/filter-suite/pylance-14");
    let exp: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    for v in ["14", "12", "11"] {
        let tmp = std::env::temp_dir().join(format!("lancer-suite-py{v}-{}", std::process::id()));
        let Some(ds) = pylance_suite_indexes(v, &dir.join("filters"), &tmp) else {
            continue;
        };
        assert_eq!(ds.indices().unwrap().len(), SUITE_INDEXES.len());
        run_suite(&ds, &exp, &format!("pylance {v} indexes"));
        let _ = std::fs::remove_dir_all(&tmp);
    }
}

#[test]
fn lancer_built_indexes_answer_the_filter_suite_and_pylance_uses_them() {
    let suites = crate::common::golden_roots(
        "tests/data/filter-suite/pylance-14",
        "LANCER_FILTER_SUITE_LIVE",
    );
    for (k, dir) in suites.iter().enumerate() {
        let tmp = std::env::temp_dir().join(format!("lancer-suite-idx-{}-{k}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        crate::common::copy_dir(&dir.join("filters"), &tmp);
        let ds = build_suite_indexes(&Dataset::open(&tmp).unwrap());
        let exp: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap())
                .unwrap();
        let (accepted_filters, _) =
            run_suite(&ds, &exp, &format!("Lancer indexes on {}", dir.display()));
        if k == 0 {
            // pylance 14 / 12 / 11 list the Lancer-built indexes, plan with them and
            // answer exactly as without them.
            let list = tmp.with_extension("filters.json");
            std::fs::write(&list, serde_json::to_string(&accepted_filters).unwrap()).unwrap();
            for v in ["14", "12", "11"] {
                let Some(py) = crate::common::pylance(v) else {
                    continue;
                };
                let out = std::process::Command::new(py)
                    .arg(crate::common::repo().join("scripts/check_scalar_index_use.py"))
                    .arg(&tmp)
                    .arg(&list)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "pylance {v}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let r: Value = serde_json::from_slice(&out.stdout).unwrap();
                let types: Vec<&str> = r["indices"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i["type"].as_str().unwrap())
                    .collect();
                assert_eq!(
                    types.len(),
                    SUITE_INDEXES.len(),
                    "pylance {v} lists {types:?}"
                );
                let n_used = r["used"].as_array().unwrap().len();
                eprintln!(
                    "pylance {v}: {} filters compared, {n_used} planned with a Lancer-built index, types {types:?}",
                    r["compared"]
                );
                assert!(
                    r["differ"].as_array().unwrap().is_empty(),
                    "pylance {v}: {}",
                    r["differ"]
                );
                assert!(
                    n_used >= 50,
                    "pylance {v} used Lancer's indexes for {n_used} filters"
                );
            }
            let _ = std::fs::remove_file(&list);
        }
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
