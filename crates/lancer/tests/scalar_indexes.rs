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

use crate::common::TempDir;

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

/// Filters whose index use Lancer does not plan (`IS TRUE`, and `= false`, which pylance
/// plans as a complement of `= true`), or where pylance's index use reads every row
/// (`contains` without an alphanumeric trigram: pylance 14 rechecks all indexed rows).
fn negated(f: &str) -> bool {
    f.contains("IS TRUE") || f.contains("= false") || f.contains("'a-b'") || f.contains("'日本語'")
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
                let lancer_used = plan.contains("ScalarIndexQuery");
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
    use lancer::index::{create_scalar_index, ScalarIndexOptions};
    use lancer_index::scalar::ScalarKind;
    let mut ds = ds.clone();
    for (col, kind) in SUITE_INDEXES {
        let mut o = ScalarIndexOptions::new(ScalarKind::parse(kind).unwrap());
        o.params.btree_page_rows = 64;
        o.params.zone_rows = 64;
        o.params.bloom_items = 64;
        ds =
            create_scalar_index(&ds, col, &o, None).unwrap_or_else(|e| panic!("{col} {kind}: {e}"));
    }
    ds
}

/// The suite's index set built by pylance `v` on a copy of `dataset` (None without
/// that venv).
fn pylance_suite_indexes(v: &str, dataset: &Path, to: &Path) -> Option<Dataset> {
    let py = crate::common::pylance(v)?;
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
        used += usize::from(
            ds.scan()
                .filter(filter)
                .explain()
                .unwrap()
                .contains("ScalarIndexQuery"),
        );
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
        let scratch = TempDir::new(&format!("suite-py{v}"));
        let tmp = scratch.join("ds");
        let Some(ds) = pylance_suite_indexes(v, &dir.join("filters"), &tmp) else {
            continue;
        };
        assert_eq!(ds.indices().unwrap().len(), SUITE_INDEXES.len());
        run_suite(&ds, &exp, &format!("pylance {v} indexes"));
    }
}

#[test]
fn lancer_built_indexes_answer_the_filter_suite_and_pylance_uses_them() {
    let suites = crate::common::golden_roots(
        "tests/data/filter-suite/pylance-14",
        "LANCER_FILTER_SUITE_LIVE",
    );
    for (k, dir) in suites.iter().enumerate() {
        let scratch = TempDir::new(&format!("suite-idx-{k}"));
        let tmp = scratch.join("ds");
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
    }
}

/// Damaged scalar index files never panic: truncated ones are skipped with a warning
/// (the filter scans, so the rows stay right); bit flips give an error, a skip or some
/// answer, never a crash or an unbounded allocation.
#[test]
fn truncated_or_flipped_index_files_never_panic_and_truncation_never_changes_rows() {
    let root = crate::common::repo().join("tests/data/scalar-indexes/pylance-14");
    let base = TempDir::new("scalar-mut");
    let mut runs = 0;
    for case in [
        "btree_int64_pages16",
        "bitmap_utf8",
        "label_list_utf8",
        "zonemap_int64",
        "bloomfilter_int64",
        "ngram_text",
    ] {
        let meta: Value = serde_json::from_str(
            &std::fs::read_to_string(root.join(format!("{case}.json"))).unwrap(),
        )
        .unwrap();
        let filters: Vec<String> = meta["filters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["filter"].as_str().unwrap().to_string())
            .take(6)
            .collect();
        let plain_ds = Dataset::open(root.join(case)).unwrap();
        let plain: Vec<Vec<i64>> = filters
            .iter()
            .map(|f| ids(&plain_ds, f, false).unwrap())
            .collect();
        let idx_dir = std::fs::read_dir(root.join(case).join("_indices"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let files: Vec<PathBuf> = std::fs::read_dir(&idx_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            let len = bytes.len();
            let mut mutations: Vec<(bool, Vec<u8>)> = Vec::new();
            for cut in [0, 1, 8, 40, len / 3, len / 2, len - 41, len - 8, len - 1] {
                mutations.push((true, bytes[..cut.min(len)].to_vec()));
            }
            for k in 0..24 {
                let mut b = bytes.clone();
                let at = (k * 7919 + 13) % len;
                b[at] ^= 1 << (k % 8);
                mutations.push((false, b));
            }
            for (truncated, data) in mutations {
                runs += 1;
                let dir = base.join(format!("{runs}"));
                crate::common::copy_dir(&root.join(case), &dir);
                let rel = file.strip_prefix(root.join(case)).unwrap();
                std::fs::write(dir.join(rel), &data).unwrap();
                let ds = Dataset::open(&dir).unwrap();
                for (f, want) in filters.iter().zip(&plain) {
                    let got = ids(&ds, f, true);
                    let _ = ds.count_where(f);
                    if truncated {
                        assert_eq!(
                            got.as_ref().ok(),
                            Some(want),
                            "{case} {} cut to {}: {f}",
                            rel.display(),
                            data.len()
                        );
                    }
                }
                // each copy goes once checked: there are hundreds
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    assert!(runs > 200, "{runs} mutations");
}

/// The life of a scalar index on a Lancer-written dataset: appended fragments are
/// scanned until `optimize_index` adds them as a delta segment, deleted rows never come
/// back, `drop_index` removes it and an overwrite leaves no index behind.
#[test]
fn scalar_index_lifecycle_append_optimize_delete_drop_overwrite() {
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use lancer::index::{create_scalar_index, ScalarIndexOptions};
    use lancer::index::{drop_index, list_indices, optimize_index};
    use lancer::WriteParams;
    use lancer_index::scalar::ScalarKind;
    use std::sync::Arc;

    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("cat", DataType::Utf8, true),
    ]));
    let batch = |from: i64, n: i64| {
        let id: ArrayRef = Arc::new(Int64Array::from_iter_values(from..from + n));
        let cat: ArrayRef = Arc::new(StringArray::from_iter(
            (from..from + n).map(|i| (i % 7 != 0).then(|| format!("c{}", i % 5))),
        ));
        RecordBatch::try_new(schema.clone(), vec![id, cat]).unwrap()
    };
    let dir = TempDir::new("scalar-life");
    let params = WriteParams {
        max_rows_per_file: 500,
        ..WriteParams::default()
    };
    let ds = Dataset::write(&dir, schema.clone(), &[batch(0, 1000)], &params).unwrap();
    let mut o = ScalarIndexOptions::new(ScalarKind::BTree);
    o.params.btree_page_rows = 50;
    let ds = create_scalar_index(&ds, "id", &o, None).unwrap();
    let ds = create_scalar_index(
        &ds,
        "cat",
        &ScalarIndexOptions::new(ScalarKind::Bitmap),
        None,
    )
    .unwrap();
    assert!(create_scalar_index(
        &ds,
        "cat",
        &ScalarIndexOptions::new(ScalarKind::Bitmap),
        None
    )
    .is_err());
    let types: Vec<_> = list_indices(&ds)
        .unwrap()
        .into_iter()
        .map(|i| i.index_type)
        .collect();
    assert_eq!(
        types,
        vec![Some("BTREE".to_string()), Some("BITMAP".to_string())]
    );
    let f = "id >= 990 AND cat = 'c3'";
    let plan = ds.scan().filter(f).explain().unwrap();
    assert!(
        plan.contains("AND([id >= Int64(990)]@id_idx(BTree),[cat = Utf8(\"c3\")]@cat_idx(Bitmap))"),
        "{plan}"
    );
    assert!(plan.contains("rows_planned=2,"), "{plan}");
    assert_eq!(ids(&ds, f, true).unwrap(), vec![993, 998]);

    // Appended rows are found by scanning the new fragment.
    let ds = ds.append(&[batch(1000, 100)], &params).unwrap();
    // (ids 1008, 1043, 1078 are multiples of 7: null category)
    let want: Vec<i64> = (990..1100).filter(|i| i % 5 == 3 && i % 7 != 0).collect();
    assert_eq!(ids(&ds, f, true).unwrap(), want);
    assert_eq!(ids(&ds, f, false).unwrap(), want);
    assert!(ds
        .scan()
        .filter(f)
        .explain()
        .unwrap()
        .contains("fragments_covered=2 of 3"));
    let ds = optimize_index(&ds, "id_idx").unwrap();
    let ds = optimize_index(&ds, "cat_idx").unwrap();
    assert_eq!(ds.indices().unwrap().len(), 4, "two delta segments");
    let plan = ds.scan().filter(f).explain().unwrap();
    assert!(plan.contains("fragments_covered=3 of 3"), "{plan}");
    assert_eq!(ds.count_where(f).unwrap(), want.len() as u64);

    // Deleted rows stay deleted; counts agree with a plain scan.
    let ds = ds.delete("id % 2 = 1").unwrap();
    let want: Vec<i64> = want.into_iter().filter(|i| i % 2 == 0).collect();
    assert_eq!(ids(&ds, f, true).unwrap(), want);
    assert_eq!(ids(&ds, f, false).unwrap(), want);
    assert_eq!(ds.count_where(f).unwrap(), want.len() as u64);
    assert_eq!(
        ds.count_where("cat IS NULL").unwrap(),
        ds.scan()
            .filter("cat IS NULL")
            .use_scalar_index(false)
            .count_rows()
            .unwrap()
    );

    // Comparisons of one column merge into one range (ties keep the exclusive bound).
    for f in [
        "id >= 990 AND id > 990 AND id < 995",
        "id > 990 AND id >= 990 AND id <= 995 AND id <= 994",
        "id < 5 AND id >= 5",
        "990 < id AND id < 1000 AND cat = 'c2'",
        "id BETWEEN 10 AND 20 AND id != 12",
    ] {
        assert_eq!(
            ids(&ds, f, true).unwrap(),
            ids(&ds, f, false).unwrap(),
            "{f}"
        );
        assert_eq!(
            ds.count_where(f).unwrap(),
            ids(&ds, f, false).unwrap().len() as u64,
            "{f}"
        );
    }
    let plan = ds
        .scan()
        .filter("id >= 990 AND id > 990 AND id < 995")
        .explain()
        .unwrap();
    assert!(
        plan.contains(
            "[id >= Int64(990) && id > Int64(990) && id < Int64(995)]@id_idx(BTree), exact=true"
        ),
        "{plan}"
    );

    let ds = drop_index(&ds, "cat_idx").unwrap();
    assert!(!ds
        .scan()
        .filter("cat = 'c1'")
        .explain()
        .unwrap()
        .contains("ScalarIndexQuery"));
    let ds = Dataset::write(&dir, schema.clone(), &[batch(0, 10)], &params).unwrap();
    assert!(
        ds.indices().unwrap().is_empty(),
        "an overwrite drops the indexes"
    );
}

/// Large `IN` lists (over 16 values: pages found by binary search over the page bounds,
/// rows tested against a hashed set) give the rows a scan gives, on BTREE pages of 8
/// rows over keys with nulls, duplicates spanning pages, negative values, floats with
/// both zeros and NaN, and strings; also through an index covering part of the table.
#[test]
fn large_in_lists_match_the_scan() {
    use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let tmp = TempDir::new("large-in");
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, true),
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    let n = 600;
    let ints: Vec<Option<i64>> = (0..n)
        .map(|_| (next(10) != 0).then(|| next(300) as i64 - 100))
        .collect();
    let floats: Vec<Option<f64>> = (0..n)
        .map(|_| match next(12) {
            0 => None,
            1 => Some(-0.0),
            2 => Some(0.0),
            3 => Some(f64::NAN),
            _ => Some(next(200) as f64 / 4.0),
        })
        .collect();
    let strs: Vec<Option<String>> = (0..n)
        .map(|_| (next(9) != 0).then(|| format!("k{}", next(250))))
        .collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(ints)) as ArrayRef,
            Arc::new(Float64Array::from(floats)),
            Arc::new(StringArray::from(strs)),
        ],
    )
    .unwrap();
    let params = lancer::WriteParams {
        max_rows_per_file: 250,
        ..Default::default()
    };
    let mut ds =
        Dataset::write(&tmp, schema.clone(), std::slice::from_ref(&batch), &params).unwrap();
    for col in ["i", "f", "s"] {
        let mut opts =
            lancer::index::ScalarIndexOptions::new(lancer_index::scalar::ScalarKind::BTree);
        opts.params.btree_page_rows = 8;
        ds = lancer::index::create_scalar_index(&ds, col, &opts, None).unwrap();
    }
    // an unindexed fragment too
    ds = ds.append(&[batch.slice(0, 90)], &params).unwrap();
    let mut checked = 0;
    for round in 0..40 {
        let k = 17 + next(120) as usize;
        let list: Vec<String> = match round % 3 {
            0 => (0..k)
                .map(|_| (next(340) as i64 - 120).to_string())
                .collect(),
            1 => (0..k)
                .map(|_| match next(10) {
                    0 => "-0.0".to_string(),
                    1 => "0.0".to_string(),
                    _ => format!("{:.2}", next(220) as f64 / 4.0),
                })
                .collect(),
            _ => (0..k).map(|_| format!("'k{}'", next(300))).collect(),
        };
        let col = ["i", "f", "s"][round % 3];
        let filter = format!("{col} IN ({})", list.join(", "));
        let with = ds.scan().filter(&filter).count_rows().unwrap();
        let without = ds
            .scan()
            .filter(&filter)
            .use_scalar_index(false)
            .count_rows()
            .unwrap();
        assert_eq!(with, without, "{filter}");
        checked += with;
    }
    assert!(checked > 100, "the lists matched only {checked} rows");
}
