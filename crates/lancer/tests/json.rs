//! JSON columns end to end in Rust: Arrow's JSON type written (stored as JSONB, logical
//! type `json`), scanned back as JSON text of Arrow's JSON type over several fragments,
//! pages and deletions, in storage 2.1 and 2.2, and the JSON functions in filters and
//! computed columns. The oracle is serde_json: each value read must be the value written
//! (compared as parsed JSON, so key order and number spelling do not matter), and each
//! function's answer what a lookup in the parsed document gives. pylance's own rows and
//! bytes are compared by `python/tests/test_json.py`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use lancer::{DatasetExt, FileVersion, Session, WriteParams};
use lancer_format::json;
use serde_json::Value;

fn json_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true).with_metadata(
        [
            (
                "ARROW:extension:name".to_string(),
                json::ARROW_JSON_EXT.to_string(),
            ),
            ("ARROW:extension:metadata".to_string(), String::new()),
        ]
        .into(),
    )
}

/// Row `i`'s document (None for every 11th row).
fn doc(i: i64) -> Option<String> {
    if i % 11 == 4 {
        return None;
    }
    let v = match i % 5 {
        0 => serde_json::json!({"a": i, "s": format!("s{i}"), "arr": [i, "x", {"k": i}],
                                "ü日": {"n": null}}),
        1 => serde_json::json!([i, i + 1, [], {}]),
        2 => serde_json::json!({"a": i64::MAX - i, "u": u64::MAX, "f": 1e308, "neg": -i}),
        3 => serde_json::json!({"a": format!("{i}"), "arr": []}),
        _ => serde_json::json!({"a": (i as f64) + 0.5, "s": null, "b": i % 2 == 0}),
    };
    Some(v.to_string())
}

fn batch(lo: i64, n: i64) -> RecordBatch {
    batch_of(lo, n, doc)
}

/// Rows `lo..lo + n`: `id` and JSON column `j` holding `docs(id)`.
fn batch_of(lo: i64, n: i64, docs: fn(i64) -> Option<String>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        json_field("j"),
    ]));
    let docs: Vec<Option<String>> = (lo..lo + n).map(docs).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(lo..lo + n)),
            Arc::new(StringArray::from(docs)),
        ],
    )
    .unwrap()
}

fn parsed(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

#[test]
fn json_round_trips_and_answers_functions() {
    for storage in [FileVersion::V2_1, FileVersion::V2_2] {
        let session = Session::new();
        let params = WriteParams {
            storage,
            max_rows_per_file: 700,
            ..Default::default()
        };
        let uri = format!("memory://json/{storage:?}");
        let ds = session.write(&uri, &[batch(0, 2000)], &params).unwrap();
        // stored as JSONB with the manifest's logical type `json`
        let stored = ds.schema();
        assert!(json::is_jsonb_field(stored.field_with_name("j").unwrap()));
        let ds = ds.append(&[batch(2000, 300)], &params).unwrap();
        let ds = ds
            .delete_where("id % 13 = 1", |b| {
                let v = b.column(0).as_primitive::<Int64Type>();
                Ok(v.iter().map(|x| Some(x.unwrap_or(0) % 13 == 1)).collect())
            })
            .unwrap();
        assert!(ds.fragments().len() >= 4);

        let all = ds.scan().to_batch().unwrap();
        assert!(json::is_text_json_field(all.schema().field(1)));
        let ids = all.column(0).as_primitive::<Int64Type>();
        let texts = all.column(1).as_string::<i32>();
        assert_eq!(
            all.num_rows() as i64,
            2300 - (0..2300).filter(|i| i % 13 == 1).count() as i64
        );
        for r in 0..all.num_rows() {
            let want = doc(ids.value(r)).map(|s| parsed(&s));
            let got = texts.is_valid(r).then(|| parsed(texts.value(r)));
            assert_eq!(got, want, "row id {}", ids.value(r));
        }

        // json_get_int / json_extract / json_array_length against lookups in the
        // parsed documents (rows whose `a` does not convert to an integer left out)
        let scan = ds
            .scan()
            .filter("json_exists(j, '$.a') AND id % 5 IN (0, 2, 3)")
            .project(&[
                ("id", "id"),
                ("a", "json_get_int(j, 'a')"),
                ("s", "json_extract(j, '$.s')"),
                ("n", "json_array_length(j, '$.arr')"),
            ]);
        let got = scan.to_batch().unwrap();
        assert!(got.num_rows() > 1000);
        let ids = got.column(0).as_primitive::<Int64Type>();
        for r in 0..got.num_rows() {
            let d = parsed(&doc(ids.value(r)).unwrap());
            let a = match &d["a"] {
                Value::String(s) => s.parse::<i64>().ok(),
                v => v.as_i64(),
            };
            assert_eq!(
                got.column(1)
                    .as_primitive::<Int64Type>()
                    .iter()
                    .nth(r)
                    .flatten(),
                a
            );
            let s = got.column(2).as_string::<i32>();
            let want_s = d.get("s").map(|v| v.to_string());
            assert_eq!(s.is_valid(r).then(|| s.value(r).to_string()), want_s);
            let n = got.column(3).as_primitive::<Int64Type>();
            let want_n = d
                .get("arr")
                .and_then(Value::as_array)
                .map(|a| a.len() as i64);
            assert_eq!(n.is_valid(r).then(|| n.value(r)), want_n);
        }

        // a filter on a nested member, by chained json_get
        let hits = ds
            .scan()
            .filter("json_get_int(json_get(j, 'arr'), '0') = id")
            .columns(&["id"])
            .to_batch()
            .unwrap();
        let want = (0..2300)
            .filter(|i| i % 13 != 1 && i % 11 != 4 && i % 5 == 0)
            .count();
        assert_eq!(hits.num_rows(), want);
    }
}

#[test]
fn json_appends_refuse_other_types_by_name() {
    let session = Session::new();
    let ds = session
        .write(
            "memory://json/refuse",
            &[batch(0, 10)],
            &WriteParams::default(),
        )
        .unwrap();
    let plain = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("j", DataType::Utf8, true),
        ])),
        vec![
            Arc::new(Int64Array::from(vec![99])),
            Arc::new(StringArray::from(vec!["{}"])),
        ],
    )
    .unwrap();
    let err = ds.append(&[plain], &WriteParams::default()).unwrap_err();
    assert!(
        err.to_string().contains("\"j\"") && err.to_string().contains("JSON"),
        "{err}"
    );
    let mut bad = batch(10, 3);
    let texts = StringArray::from(vec![Some("[1]"), Some("[1,"), None]);
    bad = RecordBatch::try_new(bad.schema(), vec![bad.column(0).clone(), Arc::new(texts)]).unwrap();
    let err = ds.append(&[bad], &WriteParams::default()).unwrap_err();
    assert!(err.to_string().contains("row 1"), "{err}");
}

/// Row `i`'s document for the JSON path indexes: `n` an integer (missing every 7th row,
/// JSON null every 9th), `f` a float (an integer every 4th row: integers widen under a
/// Float64 index), `s` a string of 40 values, `b` a boolean, `o.k` nested; every 13th
/// document null.
fn path_doc(i: i64) -> Option<String> {
    if i % 13 == 5 {
        return None;
    }
    let mut d = serde_json::json!({
        "f": if i % 4 == 1 { serde_json::json!(i / 4) } else { serde_json::json!(i as f64 / 8.0 + 0.25) },
        "s": format!("v{}", i % 40),
        "b": i % 3 == 0,
        "o": {"k": i % 50},
    });
    if i % 7 != 0 {
        d["n"] = if i % 9 == 0 {
            Value::Null
        } else {
            serde_json::json!(i % 100 - 20)
        };
    }
    Some(d.to_string())
}

fn path_batch(lo: i64, n: i64) -> RecordBatch {
    batch_of(lo, n, path_doc)
}

fn ids_where(ds: &lancer::Dataset, filter: &str) -> Vec<i64> {
    let b = ds
        .scan()
        .filter(filter)
        .columns(&["id"])
        .to_batch()
        .unwrap();
    let mut v: Vec<i64> = b.column(0).as_primitive::<Int64Type>().values().to_vec();
    v.sort_unstable();
    v
}

/// JSON path indexes (pylance 14's `index_type="json"`): BTREE and BITMAP targets on
/// integer, float, string, boolean and nested paths, over several fragments with
/// deletions, give a plain scan's rows for every typed-accessor filter (a JSONPath-syntax
/// path: the index's rows, as pylance answers) and show in the
/// plan as pylance prints them; an accessor of another type, another path or
/// `json_extract` scans; rows appended later are added by optimize (of the same type,
/// else refused); values of two types, arrays and bad parameters are refused by name.
#[test]
fn json_path_indexes_answer_as_a_scan() {
    use lancer::{create_index, IndexParams, IndexSpec};
    let session = Session::new();
    let params = WriteParams {
        max_rows_per_file: 600,
        ..Default::default()
    };
    let plain = session
        .write("memory://jsonidx/a", &[path_batch(0, 2000)], &params)
        .unwrap();
    let plain = plain
        .delete_where("id % 17 = 3", |b| {
            let v = b.column(0).as_primitive::<Int64Type>();
            Ok(v.iter().map(|x| Some(x.unwrap_or(0) % 17 == 3)).collect())
        })
        .unwrap();
    let spec = |path: &str, target: &str, name: &str| {
        IndexSpec::parse(
            "json",
            IndexParams {
                name: Some(name.into()),
                json_path: Some(path.into()),
                target_index_type: Some(target.into()),
                ..Default::default()
            },
        )
        .unwrap()
    };
    let mut ds = plain.clone();
    for (path, target, name) in [
        ("n", "btree", "n_idx"),
        ("f", "btree", "f_idx"),
        ("s", "bitmap", "s_idx"),
        ("b", "bitmap", "b_idx"),
        ("$.o.k", "btree", "ok_idx"),
    ] {
        ds = create_index(&ds, "j", &spec(path, target, name), None).unwrap();
    }
    let filters = [
        ("json_get_int(j, 'n') = 10", Some("->n)]@n_idx(BTree)")),
        ("json_get_int(j, 'n') > 50", Some("n_idx")),
        ("json_get_int(j, 'n') BETWEEN -5 AND 5", Some("n_idx")),
        ("json_get_int(j, 'n') IN (1, 2, 3, 1000)", Some("n_idx")),
        ("json_get_int(j, 'n') IS NULL", Some("n_idx")),
        ("json_get_int(j, 'n') = 10 AND id < 500", Some("n_idx")),
        ("json_get_float(j, 'f') < 20.5", Some("f_idx")),
        ("json_get_float(j, 'f') = 25", Some("f_idx")),
        (
            "json_get_string(j, 's') = 'v7'",
            Some("->s)]@s_idx(Bitmap)"),
        ),
        ("json_get_string(j, 's') IN ('v1', 'v39')", Some("s_idx")),
        ("json_get_bool(j, 'b') = true", None),
        ("json_get_bool(j, 'b') IS NULL", Some("b_idx")),
        // another type, path or function than the index's: a scan
        ("json_get_float(j, 'n') = 10", None),
        ("json_get_int(j, 'f') = 25", None),
        ("json_get_int(j, 'm') = 10", None),
        ("json_extract(j, '$.n') = '10'", None),
        ("json_get_int(j, '$.o.k') = 7", Some("ok_idx")),
    ];
    for (f, used) in filters {
        // a JSONPath-syntax path answers from the index, as pylance's: the rows whose
        // `o.k` matches (a scan reads the key "$.o.k", which no document has)
        let want = if f.contains("$.o.k") {
            ids_where(&plain, "json_get_int(json_get(j, 'o'), 'k') = 7")
        } else {
            ids_where(&plain, f)
        };
        assert_eq!(ids_where(&ds, f), want, "{f}");
        assert_eq!(ds.count_where(f).unwrap(), want.len() as u64, "{f}");
        let plan = ds.scan().filter(f).explain().unwrap();
        match used {
            Some(text) => assert!(plan.contains(text), "{f}: {plan}"),
            None => assert!(!plan.contains("ScalarIndexQuery"), "{f}: {plan}"),
        }
    }
    // the integer path's answers came from the index
    assert!(!ids_where(&ds, "json_get_int(j, 'n') = 10").is_empty());

    // appended rows: unindexed until optimize adds them (same type), then indexed
    let more = ds.append(&[path_batch(2000, 700)], &params).unwrap();
    let plain_more = plain.append(&[path_batch(2000, 700)], &params).unwrap();
    let more = lancer::index::optimize_index(&more, "n_idx").unwrap();
    for f in ["json_get_int(j, 'n') = 10", "json_get_int(j, 'n') < 0"] {
        assert_eq!(ids_where(&more, f), ids_where(&plain_more, f), "{f}");
    }
    // rows whose path holds another type cannot join the index
    let strings = RecordBatch::try_new(
        path_batch(0, 1).schema(),
        vec![
            Arc::new(Int64Array::from(vec![9000])),
            Arc::new(StringArray::from(vec![r#"{"n": "ten"}"#])),
        ],
    )
    .unwrap();
    let mixed = more
        .append(std::slice::from_ref(&strings), &params)
        .unwrap();
    let err = lancer::index::optimize_index(&mixed, "n_idx")
        .unwrap_err()
        .to_string();
    assert!(err.contains("String") && err.contains("Int64"), "{err}");

    // refusals: two types in one path, arrays, missing path, other targets, plain columns
    let two = plain.append(&[strings], &params).unwrap();
    let err = create_index(&two, "j", &spec("n", "btree", "x"), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected Int64") && err.contains("String"),
        "{err}"
    );
    let arr = session
        .write(
            "memory://jsonidx/arr",
            &[RecordBatch::try_new(
                path_batch(0, 1).schema(),
                vec![
                    Arc::new(Int64Array::from(vec![1, 2])),
                    Arc::new(StringArray::from(vec![r#"{"a": [1]}"#, r#"{"a": [2]}"#])),
                ],
            )
            .unwrap()],
            &params,
        )
        .unwrap();
    let err = create_index(&arr, "j", &spec("a", "btree", "x"), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Array") && err.contains("only scalar"),
        "{err}"
    );
    for (p, target) in [
        (None, Some("btree")),
        (Some("n"), Some("inverted")),
        (Some("n"), Some("ngram")),
    ] {
        let e = IndexSpec::parse(
            "json",
            IndexParams {
                json_path: p.map(String::from),
                target_index_type: target.map(String::from),
                ..Default::default()
            },
        );
        assert!(e.is_err(), "{p:?} {target:?}");
    }
    let err = create_index(&plain, "id", &spec("n", "btree", "x"), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a JSON column"), "{err}");
    let err = create_index(
        &plain,
        "j",
        &IndexSpec::parse("btree", IndexParams::default()).unwrap(),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("json_path") || err.contains("index one of its paths"),
        "{err}"
    );
}

/// Vector search results (exact and through an IVF index, pre- and post-filtered by a
/// JSON function, batched) carry JSON columns as text of Arrow's JSON type, as scans do
/// (they returned the stored JSONB bytes).
#[test]
fn search_results_carry_json_as_text() {
    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
    use lancer::search::AnnParams;
    use lancer::search::{nearest, Filtering, Metric, Nearest, RowMeta, SearchOptions};
    use lancer::search::{nearest_batch, BatchNearest};
    use lancer::{create_index, IndexParams, IndexSpec};
    let n = 400i64;
    let mut vecs = FixedSizeListBuilder::new(Float32Builder::new(), 4);
    for i in 0..n {
        for d in 0..4 {
            vecs.values().append_value(((i * 7 + d * 13) % 101) as f32);
        }
        vecs.append(true);
    }
    let b = batch(0, n);
    let schema = Arc::new(Schema::new(vec![
        b.schema().field(0).clone(),
        b.schema().field(1).clone(),
        Field::new(
            "v",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 4),
            true,
        ),
    ]));
    let b = RecordBatch::try_new(
        schema,
        vec![
            b.column(0).clone(),
            b.column(1).clone(),
            Arc::new(vecs.finish()),
        ],
    )
    .unwrap();
    let session = Session::new();
    let plain = session
        .write("memory://jsonsearch/a", &[b], &WriteParams::default())
        .unwrap();
    let spec = IndexSpec::parse(
        "ivf_flat",
        IndexParams {
            num_partitions: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    let indexed = create_index(&plain, "v", &spec, None).unwrap();
    let req = Nearest {
        column: "v",
        query: vec![1.0, 2.0, 3.0, 4.0],
        k: 20,
        metric: Metric::L2,
    };
    let check = |out: &RecordBatch, what: &str| {
        assert!(out.num_rows() > 0, "{what}");
        let f = out.schema().field_with_name("j").unwrap().clone();
        assert!(json::is_text_json_field(&f), "{what}: {f:?}");
        let ids = out.column(0).as_primitive::<Int64Type>();
        let texts = out.column_by_name("j").unwrap().as_string::<i32>();
        for r in 0..out.num_rows() {
            let want = doc(ids.value(r)).map(|s| parsed(&s));
            assert_eq!(
                texts.is_valid(r).then(|| parsed(texts.value(r))),
                want,
                "{what}"
            );
        }
    };
    for (ds, name) in [(&plain, "exact"), (&indexed, "ivf")] {
        for filtering in [
            Filtering::None,
            Filtering::Pre("json_exists(j, '$.a')"),
            Filtering::Post("json_exists(j, '$.a')"),
        ] {
            let out = nearest(
                ds,
                &req,
                &SearchOptions {
                    filtering,
                    columns: Some(&["id", "j"]),
                    ann: AnnParams::default().clone(),
                    ..Default::default()
                },
            )
            .unwrap();
            check(&out, name);
        }
        let batch_req = BatchNearest {
            column: "v",
            queries: vec![vec![1.0, 2.0, 3.0, 4.0], vec![50.0; 4]],
            k: 5,
            metric: Metric::L2,
        };
        let out = nearest_batch(
            ds,
            &batch_req,
            Filtering::Post("json_exists(j, '$.a')"),
            Some(&["id", "j"]),
            &AnnParams::default(),
            RowMeta::default(),
        )
        .unwrap();
        // (query_index first)
        let out = out.project(&[1, 2]).unwrap();
        check(&out, name);
    }
}

#[test]
fn takes_at_the_front_door_carry_json_as_text() {
    // `DatasetExt::take_paths` returns JSON columns as a scan does (text of Arrow's
    // JSON type), whole rows or named columns, in any order with repeats
    let session = Session::new();
    let ds = session
        .write(
            "memory://jsontake/a",
            &[batch(0, 300)],
            &WriteParams::default(),
        )
        .unwrap();
    let scanned = ds.scan().to_batch().unwrap();
    let offsets = [299u64, 0, 17, 17, 150];
    let idx = arrow_array::UInt64Array::from(offsets.to_vec());
    for cols in [None, Some(&["j", "id"][..])] {
        let got = ds.take_paths(&offsets, cols).unwrap();
        let j = got.column_by_name("j").unwrap();
        let field = got.schema().field_with_name("j").unwrap().clone();
        assert_eq!(field.data_type(), &DataType::Utf8, "{cols:?}");
        assert_eq!(
            field
                .metadata()
                .get("ARROW:extension:name")
                .map(String::as_str),
            Some(json::ARROW_JSON_EXT)
        );
        let want =
            arrow_select::take::take(scanned.column_by_name("j").unwrap(), &idx, None).unwrap();
        assert_eq!(j.to_data(), want.to_data(), "{cols:?}");
        // the dataset's own takes (by offset, address, row id) return the same text; the
        // stored form stays reachable for code that filters or rewrites JSONB
        let addrs = ds.row_addresses(&offsets).unwrap();
        let with_ids = session
            .write(
                "memory://jsontake/ids",
                &[batch(0, 300)],
                &WriteParams {
                    enable_stable_row_ids: true,
                    ..Default::default()
                },
            )
            .unwrap();
        let ids = with_ids.row_ids(&offsets).unwrap();
        for (how, b) in [
            ("take", ds.take(&offsets, cols).unwrap()),
            ("take_addresses", ds.take_addresses(&addrs, cols).unwrap()),
            ("take_row_ids", with_ids.take_row_ids(&ids, cols).unwrap()),
        ] {
            assert_eq!(b.schema(), got.schema(), "{how} {cols:?}");
            assert_eq!(
                b.column_by_name("j").unwrap().to_data(),
                want.to_data(),
                "{how}"
            );
        }
        let whole = ds.to_batch(cols).unwrap();
        assert_eq!(
            whole.column_by_name("j").unwrap().to_data(),
            scanned.column_by_name("j").unwrap().to_data(),
            "to_batch {cols:?}"
        );
        let per_fragment = ds.scan_fragment_batch(&ds.fragments()[0], cols).unwrap();
        assert_eq!(per_fragment.schema(), whole.schema());
        let stored = ds.take_addresses_stored(&addrs, cols).unwrap();
        let raw = stored.column_by_name("j").unwrap();
        assert_eq!(raw.data_type(), &DataType::LargeBinary, "{cols:?}");
        assert_eq!(
            json::to_text(&stored)
                .unwrap()
                .column_by_name("j")
                .unwrap()
                .to_data(),
            want.to_data()
        );
    }
}
