//! Two-phase (distributed) writes through the Rust API: fragments written without a
//! commit are invisible, travel as pylance-shaped JSON, and commit through the OCC path
//! (rebased over a concurrent append, refused when a concurrent commit conflicts);
//! descriptions naming missing or altered files are refused naming the file.

use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancer::write::{commit, write_fragments, CommitParams, FragmentMode, Operation};
use lancer::write::{fragment_from_json, fragment_to_json, fragments_from_json_text};
use lancer::{Dataset, DatasetExt, Store, WriteParams};

use crate::common::TempDir;

pub(crate) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]))
}

pub(crate) fn batch(ids: std::ops::Range<i64>) -> RecordBatch {
    let names: Vec<String> = ids.clone().map(|i| format!("n{i}")).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(StringArray::from(names)),
        ],
    )
    .unwrap()
}

fn ids(ds: &Dataset) -> Vec<i64> {
    let b = ds.scan().columns(&["id"]).to_batch().unwrap();
    let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    let mut v: Vec<i64> = a.values().to_vec();
    v.sort_unstable();
    v
}

fn params(rows: usize) -> WriteParams {
    WriteParams {
        max_rows_per_file: rows,
        ..Default::default()
    }
}

fn worker(
    store: &Store,
    rows: std::ops::Range<i64>,
    mode: FragmentMode,
) -> Vec<lancer::write::Fragment> {
    write_fragments(store, schema(), [Ok(batch(rows))], &params(4), mode).unwrap()
}

/// Two workers write fragments of a new dataset (nothing visible), their JSON goes to a
/// driver which commits one Overwrite: ids are assigned 0.., every row is there.
#[test]
fn workers_write_driver_commits() {
    let dir = TempDir::new("two-phase-create");
    let store = Store::local(dir.path());
    let a = worker(&store, 0..10, FragmentMode::Create);
    let b = worker(&store, 10..16, FragmentMode::Create);
    assert_eq!(
        a.iter().map(|f| f.physical_rows).collect::<Vec<_>>(),
        [4, 4, 2]
    );
    assert_eq!(
        b.iter().map(|f| f.physical_rows).collect::<Vec<_>>(),
        [4, 2]
    );
    assert!(a.iter().chain(&b).all(|f| f.id == 0));
    // data files are there; no version is
    assert_eq!(store.list("data").unwrap().len(), 5);
    assert!(Dataset::open_in(store.clone(), None).is_err());
    // through JSON text, as a driver receives it
    let text = serde_json::to_string(&a.iter().chain(&b).map(fragment_to_json).collect::<Vec<_>>())
        .unwrap();
    let frags = fragments_from_json_text(&text).unwrap();
    assert_eq!(frags, a.iter().chain(&b).cloned().collect::<Vec<_>>());
    let ds = commit(
        &store,
        Operation::Overwrite {
            schema: schema(),
            fragments: frags,
            initial_bases: Vec::new(),
        },
        None,
        &CommitParams::default(),
    )
    .unwrap();
    assert_eq!(ds.version(), 1);
    assert_eq!(
        ds.fragments().iter().map(|f| f.id).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert_eq!(ids(&ds), (0..16).collect::<Vec<_>>());
    let b = ds
        .scan()
        .columns(&["name"])
        .filter("id = 13")
        .to_batch()
        .unwrap();
    let names = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
    assert_eq!(names.value(0), "n13");
}

/// The JSON of a fragment has pylance 14's members (`FragmentMetadata.to_json()`),
/// absent ones null, and reads back to the same fragment; pylance's Rust-side shape
/// (absent members left out) reads too.
#[test]
fn json_shape_is_pylances() {
    let dir = TempDir::new("two-phase-json");
    let store = Store::local(dir.path());
    let f = worker(&store, 0..3, FragmentMode::Create).remove(0);
    let v = fragment_to_json(&f);
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "created_at_version_meta",
            "deletion_file",
            "files",
            "id",
            "last_updated_at_version_meta",
            "overlays",
            "physical_rows",
            "row_id_meta"
        ]
    );
    let file = &v["files"][0];
    let mut fkeys: Vec<&str> = file
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fkeys.sort_unstable();
    assert_eq!(
        fkeys,
        [
            "base_id",
            "column_indices",
            "fields",
            "file_major_version",
            "file_minor_version",
            "file_size_bytes",
            "path"
        ]
    );
    assert_eq!(file["fields"], serde_json::json!([0, 1]));
    assert_eq!(file["file_minor_version"], 1);
    let size = std::fs::metadata(dir.path().join("data").join(file["path"].as_str().unwrap()))
        .unwrap()
        .len();
    assert_eq!(file["file_size_bytes"], size);
    assert!(v["deletion_file"].is_null() && v["row_id_meta"].is_null());
    assert_eq!(v["physical_rows"], 3);
    assert_eq!(fragment_from_json(&v).unwrap(), f);
    // the serde shape of pylance's Rust side: no overlays, absent options left out
    let mut rust_shape = v.clone();
    for k in ["overlays", "deletion_file", "row_id_meta"] {
        rust_shape.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(fragment_from_json(&rust_shape).unwrap(), f);
    // a wrong member is named
    let mut bad = v.clone();
    bad["physical_rows"] = serde_json::json!("three");
    let err = fragment_from_json(&bad).unwrap_err().to_string();
    assert!(err.contains("physical_rows"), "{err}");
}

/// An append built at version 1 lands after a concurrent append made version 2
/// (rebased); a delete built at version 2 conflicts with a concurrent overwrite.
#[test]
fn commits_rebase_or_conflict_as_local_writes() {
    let dir = TempDir::new("two-phase-occ");
    let store = Store::local(dir.path());
    let ds =
        Dataset::write_stream_in(store.clone(), schema(), [Ok(batch(0..5))], &params(100)).unwrap();
    let frags = worker(&store, 100..106, FragmentMode::Append);
    // another writer appends meanwhile
    ds.append(&[batch(50..52)], &params(100)).unwrap();
    let out = commit(
        &store,
        Operation::Append { fragments: frags },
        Some(1),
        &CommitParams::default(),
    )
    .unwrap();
    assert_eq!(out.version(), 3);
    let mut want: Vec<i64> = (0..5).chain(50..52).chain(100..106).collect();
    want.sort_unstable();
    assert_eq!(ids(&out), want);
    // fragment ids: 0 (v1), 1 (v2), then the two-phase ones
    assert_eq!(
        out.fragments().iter().map(|f| f.id).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );

    // a delete of fragment 0's first row, built at version 3 by hand...
    let v3 = out;
    let deleted = v3.delete("id = 0").unwrap();
    let updated: Vec<_> = deleted
        .fragments()
        .iter()
        .filter(|f| f.deletion_file.is_some())
        .cloned()
        .collect();
    assert_eq!(updated.len(), 1);
    // ...while someone overwrites the dataset: committing it at version 3 conflicts
    Dataset::write_stream_in(store.clone(), schema(), [Ok(batch(0..2))], &params(100)).unwrap();
    let err = commit(
        &store,
        Operation::Delete {
            updated_fragments: updated,
            deleted_fragment_ids: vec![],
            predicate: "id = 0".into(),
        },
        Some(3),
        &CommitParams::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("incompatible") || err.contains("conflict"),
        "{err}"
    );
    assert_eq!(ids(&Dataset::open_in(store.clone(), None).unwrap()), [0, 1]);
}

/// A description naming a missing data file, or one whose size or row count was
/// altered, is refused before anything is committed, naming the file.
#[test]
fn missing_or_altered_files_are_refused() {
    let dir = TempDir::new("two-phase-tamper");
    let store = Store::local(dir.path());
    Dataset::write_stream_in(store.clone(), schema(), [Ok(batch(0..5))], &params(100)).unwrap();
    let frags = worker(&store, 10..13, FragmentMode::Append);
    let path = frags[0].files[0].path.clone();
    let try_commit = |fragments: Vec<lancer::write::Fragment>| {
        commit(
            &store,
            Operation::Append { fragments },
            Some(1),
            &CommitParams::default(),
        )
        .map(|d| d.version())
        .map_err(|e| e.to_string())
    };
    let mut rows = frags.clone();
    rows[0].physical_rows = 4;
    let err = try_commit(rows).unwrap_err();
    assert!(err.contains(&path) && err.contains("3 rows"), "{err}");
    let mut size = frags.clone();
    size[0].files[0].file_size_bytes += 1;
    let err = try_commit(size).unwrap_err();
    assert!(err.contains(&path) && err.contains("bytes"), "{err}");
    let mut escape = frags.clone();
    escape[0].files[0].path = "../elsewhere.lance".into();
    assert!(try_commit(escape).is_err());
    let mut field = frags.clone();
    field[0].files[0].fields = vec![0, 7];
    let err = try_commit(field).unwrap_err();
    assert!(err.contains("field id 7"), "{err}");
    // committed once; the same descriptions again would duplicate the rows
    assert_eq!(try_commit(frags.clone()), Ok(2));
    let err = try_commit(frags.clone()).unwrap_err();
    assert!(err.contains(&path) && err.contains("already part"), "{err}");
    let frags = worker(&store, 20..22, FragmentMode::Append);
    let path = frags[0].files[0].path.clone();
    std::fs::remove_file(dir.path().join("data").join(&path)).unwrap();
    let err = try_commit(frags).unwrap_err();
    assert!(
        err.contains(&path) && err.contains("does not exist"),
        "{err}"
    );
    // nothing else was committed
    assert_eq!(Dataset::open_in(store.clone(), None).unwrap().version(), 2);
}

/// Rewrite (compaction's operation) of two fragments into one written by a worker,
/// and Merge (a column added per fragment) commit through the same path.
#[test]
fn rewrite_and_merge() {
    let dir = TempDir::new("two-phase-rewrite");
    let store = Store::local(dir.path());
    let ds = Dataset::write_stream_in(
        store.clone(),
        schema(),
        [Ok(batch(0..4)), Ok(batch(4..8))],
        &params(4),
    )
    .unwrap();
    let old = ds.fragments().to_vec();
    assert_eq!(old.len(), 2);
    // a worker rewrites both into one fragment
    let new = write_fragments(
        &store,
        schema(),
        [Ok(batch(0..8))],
        &params(100),
        FragmentMode::Append,
    )
    .unwrap();
    let out = commit(
        &store,
        Operation::Rewrite {
            groups: vec![lancer::write::RewriteGroup {
                old_fragments: old,
                new_fragments: new,
            }],
        },
        Some(ds.version()),
        &CommitParams::default(),
    )
    .unwrap();
    assert_eq!(out.fragments().len(), 1);
    assert_eq!(out.fragments()[0].id, 2);
    assert_eq!(ids(&out), (0..8).collect::<Vec<_>>());
    // Merge with the same fragments and a schema without a new column keeps the ids
    let merged = commit(
        &store,
        Operation::Merge {
            fragments: out.fragments().to_vec(),
            schema: schema(),
        },
        Some(out.version()),
        &CommitParams::default(),
    )
    .unwrap();
    assert_eq!(merged.schema().fields().len(), 2);
    assert_eq!(ids(&merged), (0..8).collect::<Vec<_>>());
    // a Merge changing a column's shape is refused
    let altered = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new(
            "name",
            DataType::Struct(vec![Field::new("x", DataType::Int64, true)].into()),
            true,
        ),
    ]));
    let err = commit(
        &store,
        Operation::Merge {
            fragments: merged.fragments().to_vec(),
            schema: altered,
        },
        Some(merged.version()),
        &CommitParams::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("\"name\""), "{err}");
}

/// The text of a description is what Python's `json.dumps(fragment.to_json())` prints
/// for pylance's: its key order and separators.
#[test]
fn python_text_is_json_dumps() {
    let dir = TempDir::new("two-phase-text");
    let store = Store::local(dir.path());
    let f = worker(&store, 0..3, FragmentMode::Create).remove(0);
    let text = lancer::write::python_json_text(&fragment_to_json(&f));
    let want = format!(
        "{{\"id\": 0, \"files\": [{{\"fields\": [0, 1], \"column_indices\": [0, 1], \
         \"file_major_version\": 2, \"file_minor_version\": 1, \"file_size_bytes\": {}, \
         \"base_id\": null, \"path\": \"{}\"}}], \"overlays\": [], \"physical_rows\": 3, \
         \"deletion_file\": null, \"row_id_meta\": null, \"created_at_version_meta\": null, \
         \"last_updated_at_version_meta\": null}}",
        f.files[0].file_size_bytes, f.files[0].path
    );
    assert_eq!(text, want);
    assert_eq!(fragments_from_json_text(&text).unwrap(), vec![f]);
}

/// CreateIndex through the two-phase commit: a BTREE segment built elsewhere is
/// removed, then added back (its files are there) over a concurrent append (rebased);
/// a filter it answers still finds the appended rows (the segment covers the old
/// fragments only).
#[test]
fn create_index_adds_and_removes_segments() {
    use lancer::{create_index, IndexParams, IndexSpec};
    let dir = TempDir::new("two-phase-index");
    let store = Store::local(dir.path());
    let ds =
        Dataset::write_stream_in(store.clone(), schema(), [Ok(batch(0..50))], &params(20)).unwrap();
    let indexed = create_index(
        &ds,
        "id",
        &IndexSpec::parse("BTREE", IndexParams::default()).unwrap(),
        None,
    )
    .unwrap();
    let seg = indexed.indices().unwrap().to_vec();
    assert_eq!(seg.len(), 1);
    // a segment whose files are gone is refused naming the file
    let dir = dir.path().join("_indices");
    let seg_dir = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let moved = seg_dir.with_extension("away");
    std::fs::rename(&seg_dir, &moved).unwrap();
    let removed_then_added = |new: Vec<_>| {
        commit(
            &store,
            Operation::CreateIndex {
                new_indices: new,
                removed_indices: seg.clone(),
            },
            Some(indexed.version()),
            &CommitParams::default(),
        )
        .map(|d| d.version())
        .map_err(|e| e.to_string())
    };
    let err = removed_then_added(seg.clone()).unwrap_err();
    assert!(
        err.contains("_indices/") && err.contains("does not exist"),
        "{err}"
    );
    std::fs::rename(&moved, &seg_dir).unwrap();
    let dropped = commit(
        &store,
        Operation::CreateIndex {
            new_indices: vec![],
            removed_indices: seg.clone(),
        },
        Some(indexed.version()),
        &CommitParams::default(),
    )
    .unwrap();
    assert!(dropped.indices().unwrap().is_empty());
    // an append lands meanwhile; adding the segment back at the older version rebases
    dropped.append(&[batch(50..55)], &params(20)).unwrap();
    let back = commit(
        &store,
        Operation::CreateIndex {
            new_indices: seg.clone(),
            removed_indices: vec![],
        },
        Some(dropped.version()),
        &CommitParams::default(),
    )
    .unwrap();
    assert_eq!(back.version(), dropped.version() + 2);
    assert_eq!(back.indices().unwrap(), &seg[..]);
    let rows = |d: &Dataset| {
        let b = d
            .scan()
            .columns(&["id"])
            .filter("id >= 45")
            .to_batch()
            .unwrap();
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let mut v = a.values().to_vec();
        v.sort_unstable();
        v
    };
    assert_eq!(rows(&back), (45..55).collect::<Vec<_>>());
    assert_eq!(
        rows(&back),
        rows(&dropped.at_version(back.version()).unwrap())
    );
}

/// A distributed delete: workers write deletion files per fragment without committing
/// (`delete_in_fragment`), one Delete commits them; a fragment whose rows all go is
/// named as deleted.
#[test]
fn deletes_per_fragment_then_one_commit() {
    use lancer::write::delete_in_fragment;
    let dir = TempDir::new("two-phase-delete");
    let store = Store::local(dir.path());
    let ds =
        Dataset::write_stream_in(store.clone(), schema(), [Ok(batch(0..12))], &params(4)).unwrap();
    let f0 = delete_in_fragment(&ds, 0, "id % 2 = 0").unwrap().unwrap();
    assert_eq!(f0.deletion_file.as_ref().unwrap().num_deleted_rows, 2);
    assert!(delete_in_fragment(&ds, 2, "id >= 8").unwrap().is_none());
    let same = delete_in_fragment(&ds, 1, "id > 100").unwrap().unwrap();
    assert_eq!(same, ds.fragments()[1]);
    assert!(delete_in_fragment(&ds, 9, "id > 0").is_err());
    assert_eq!(Dataset::open_in(store.clone(), None).unwrap().version(), 1);
    let out = commit(
        &store,
        Operation::Delete {
            updated_fragments: vec![f0],
            deleted_fragment_ids: vec![2],
            predicate: "distributed".into(),
        },
        Some(1),
        &CommitParams::default(),
    )
    .unwrap();
    assert_eq!(ids(&out), [1, 3, 4, 5, 6, 7]);
}

/// Malformed descriptions are errors naming what is wrong, never panics.
#[test]
fn malformed_descriptions_are_errors() {
    let good = r#"{"id": 0, "files": [{"fields": [0], "column_indices": [0], "file_major_version": 2, "file_minor_version": 1, "file_size_bytes": 10, "base_id": null, "path": "a.lance"}], "overlays": [], "physical_rows": 3, "deletion_file": null, "row_id_meta": null, "created_at_version_meta": null, "last_updated_at_version_meta": null}"#;
    assert_eq!(fragments_from_json_text(good).unwrap()[0].physical_rows, 3);
    let cases = [
        ("", "not JSON"),
        ("[1, 2]", "JSON object"),
        ("{}", "\"id\""),
        (r#"{"id": -1, "files": [], "physical_rows": 1}"#, "\"id\""),
        (r#"{"id": 0, "files": {}, "physical_rows": 1}"#, "files"),
        (
            r#"{"id": 0, "files": [{"fields": [0]}], "physical_rows": 1}"#,
            "path",
        ),
        (
            r#"{"id": 0, "files": [{"path": "a", "fields": [4294967296]}], "physical_rows": 1}"#,
            "32-bit",
        ),
        (
            r#"{"id": 0, "files": [], "physical_rows": "1"}"#,
            "physical_rows",
        ),
        (
            r#"{"id": 0, "files": [], "physical_rows": 1, "deletion_file": {"read_version": 1, "id": 2, "file_type": "zip"}}"#,
            "file_type",
        ),
        (
            r#"{"id": 0, "files": [], "physical_rows": 1, "row_id_meta": {"Inline": [300]}}"#,
            "not a byte",
        ),
        (
            r#"{"id": 0, "files": [], "physical_rows": 1, "row_id_meta": {"Other": 1}}"#,
            "row_id_meta",
        ),
        (
            r#"{"id": 0, "files": [], "physical_rows": 1, "overlays": [{"data_file": {}}]}"#,
            "overlay",
        ),
    ];
    for (text, what) in cases {
        let err = fragments_from_json_text(text).unwrap_err().to_string();
        assert!(err.contains(what), "{text}: {err}");
    }
}

/// Distributed `add_columns`: each worker writes one fragment's new column file
/// uncommitted (through JSON), one `Merge` of every fragment and the schema with the
/// new column commits them; each row's value is computed from its own id (deleted rows
/// stay deleted); a fragment the version lacks is refused.
#[test]
fn columns_added_per_fragment_then_one_merge() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    let tmp = TempDir::new("two-phase-add-columns");
    let ds = Dataset::write(&tmp, schema(), &[batch(0..30)], &params(8)).unwrap();
    let ds = ds.delete("id = 5").unwrap();
    let new = Arc::new(Schema::new(vec![Field::new(
        "twice",
        DataType::Int64,
        true,
    )]));
    let compute = |b: &RecordBatch| -> lancer_table::Result<RecordBatch> {
        let ids = b.column(0).as_primitive::<Int64Type>();
        Ok(RecordBatch::try_new(
            new.clone(),
            vec![Arc::new(Int64Array::from_iter_values(
                ids.values().iter().map(|i| i * 2),
            ))],
        )
        .unwrap())
    };
    let texts: Vec<String> = ds
        .fragments()
        .iter()
        .map(|f| {
            let out = ds
                .add_columns_to_fragment(f.id, new.clone(), Some(&["id"]), compute)
                .unwrap();
            fragment_to_json(&out).to_string()
        })
        .collect();
    assert_eq!(
        Dataset::open(&tmp).unwrap().version(),
        ds.version(),
        "nothing committed"
    );
    let frags = texts
        .iter()
        .map(|t| fragment_from_json(&serde_json::from_str(t).unwrap()).unwrap())
        .collect();
    let mut fields: Vec<Field> = schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("twice", DataType::Int64, true));
    let store = Store::local(tmp.path());
    let merged = commit(
        &store,
        Operation::Merge {
            fragments: frags,
            schema: Arc::new(Schema::new(fields)),
        },
        Some(ds.version()),
        &CommitParams::default(),
    )
    .unwrap();
    let b = merged.scan().columns(&["id", "twice"]).to_batch().unwrap();
    let ids = b.column(0).as_primitive::<Int64Type>().values().to_vec();
    let twice = b.column(1).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(ids.len(), 29);
    assert!(!ids.contains(&5));
    assert!(ids.iter().zip(&twice).all(|(i, t)| *t == 2 * i));
    let e = ds
        .add_columns_to_fragment(99, new.clone(), Some(&["id"]), compute)
        .unwrap_err()
        .to_string();
    assert!(e.contains("fragment 99"), "{e}");
}

/// Transactions read back (`lancer::inspect`): each version's operation, read
/// version, uuid and properties as committed — a given uuid and properties recorded as
/// given, a hostile uuid refused — and the recent list newest first, at least one long,
/// ending at version 1.
#[test]
fn transactions_read_back_as_committed() {
    use lancer::inspect::{read_transaction, recent_transactions};
    use lancer_table::pb::transaction::Operation as Op;
    let dir = TempDir::new("two-phase-transactions");
    let store = Store::local(dir.path());
    let frags = worker(&store, 0..6, FragmentMode::Create);
    let ds = commit(
        &store,
        Operation::Overwrite {
            schema: schema(),
            fragments: frags,
            initial_bases: Vec::new(),
        },
        None,
        &CommitParams::default(),
    )
    .unwrap();
    let frags = worker(&store, 6..9, FragmentMode::Append);
    let mut p = CommitParams {
        uuid: Some("0a1b2c3d-aaaa-bbbb-cccc-00112233aabb".into()),
        ..Default::default()
    };
    p.transaction_properties.insert("job".into(), "7".into());
    let ds = commit(
        &store,
        Operation::Append {
            fragments: frags.clone(),
        },
        Some(ds.version()),
        &p,
    )
    .unwrap();
    let ds = ds.delete("id < 2").unwrap();
    assert_eq!(ds.version(), 3);

    let t = read_transaction(&ds, 2).unwrap().unwrap();
    assert_eq!(t.uuid, "0a1b2c3d-aaaa-bbbb-cccc-00112233aabb");
    assert_eq!(t.read_version, 1);
    assert_eq!(
        t.transaction_properties.get("job").map(String::as_str),
        Some("7")
    );
    match t.operation {
        Some(Op::Append(a)) => assert_eq!(a.fragments.len(), 1),
        other => panic!("version 2 is an append, not {other:?}"),
    }
    let all = recent_transactions(&ds, 10).unwrap();
    let kinds: Vec<&str> = all
        .iter()
        .map(|t| match t.as_ref().and_then(|t| t.operation.as_ref()) {
            Some(Op::Overwrite(_)) => "overwrite",
            Some(Op::Append(_)) => "append",
            Some(Op::Delete(d)) => {
                assert_eq!(d.predicate, "id < 2");
                "delete"
            }
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["delete", "append", "overwrite"]);
    assert_eq!(recent_transactions(&ds, 0).unwrap().len(), 1);
    assert_eq!(recent_transactions(&ds, 2).unwrap().len(), 2);
    assert!(read_transaction(&ds, 9).is_err());
    // two commits of one uuid read at the same version: the second refused, the first's
    // transaction file kept
    let q = CommitParams {
        uuid: Some("11111111-2222-3333-4444-555555555555".into()),
        ..Default::default()
    };
    let first = worker(&store, 9..10, FragmentMode::Append);
    let v4 = commit(&store, Operation::Append { fragments: first }, Some(3), &q).unwrap();
    let kept = read_transaction(&v4, 4).unwrap().unwrap();
    assert_eq!(kept.uuid, "11111111-2222-3333-4444-555555555555");
    assert_eq!(kept.read_version, 3);
    // a concurrent committer of the same uuid at the same version has written its
    // transaction file: this commit refuses rather than replace (or later delete) it
    let theirs = "_transactions/4-11111111-2222-3333-4444-555555555555.txn";
    store
        .put(theirs, bytes::Bytes::from_static(b"theirs"))
        .unwrap();
    let second = worker(&store, 10..11, FragmentMode::Append);
    let err = commit(&store, Operation::Append { fragments: second }, Some(4), &q).unwrap_err();
    assert!(err.to_string().contains("uuid"), "{err}");
    assert_eq!(store.get(theirs).unwrap().as_ref(), b"theirs");
    // a uuid that would name a file elsewhere is refused before anything is written
    let bad = CommitParams {
        uuid: Some("../../x".into()),
        ..Default::default()
    };
    let err = commit(
        &store,
        Operation::Append { fragments: frags },
        Some(3),
        &bad,
    )
    .unwrap_err();
    assert!(err.to_string().contains("uuid"), "{err}");
    assert_eq!(Dataset::open_in(store.clone(), None).unwrap().version(), 4);
}

/// A merge insert written without its commit (`merge_insert_uncommitted`) changes no
/// version; its `Update` commits later through the same path, rebased over an append
/// committed in between, and answers as the committed merge does.
#[test]
fn uncommitted_merge_insert_commits_as_an_update() {
    let dir = TempDir::new("two-phase-merge");
    let store = Store::local(dir.path());
    let frags = worker(&store, 0..12, FragmentMode::Create);
    let ds = commit(
        &store,
        Operation::Overwrite {
            schema: schema(),
            fragments: frags,
            initial_bases: Vec::new(),
        },
        None,
        &CommitParams::default(),
    )
    .unwrap();
    let opts = lancer::write::MergeOptions {
        on: vec!["id".into()],
        update_matched: true,
        insert_unmatched: true,
        ..Default::default()
    };
    let source = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(10..14)),
            Arc::new(StringArray::from(vec!["u10", "u11", "u12", "u13"])),
        ],
    )
    .unwrap();
    let (op, stats) =
        lancer::write::merge_insert_uncommitted(&ds, &opts, schema(), [Ok(source.clone())])
            .unwrap();
    assert_eq!((stats.inserted, stats.updated, stats.deleted), (2, 2, 0));
    assert!(matches!(op, Operation::Update { .. }));
    assert_eq!(Dataset::open_in(store.clone(), None).unwrap().version(), 1);
    // another writer appends first
    let late = worker(&store, 100..103, FragmentMode::Append);
    commit(
        &store,
        Operation::Append { fragments: late },
        Some(1),
        &CommitParams::default(),
    )
    .unwrap();
    let after = commit(&store, op, Some(1), &CommitParams::default()).unwrap();
    assert_eq!(after.version(), 3);
    let mut want: Vec<i64> = (0..14).collect();
    want.extend(100..103);
    assert_eq!(ids(&after), want);
    // matched and inserted rows hold the source's values, once each
    let b = after
        .scan()
        .columns(&["id", "name"])
        .filter("id >= 9 AND id < 100")
        .to_batch()
        .unwrap();
    let idc = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    let names = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
    let mut got: Vec<(i64, String)> = (0..b.num_rows())
        .map(|i| (idc.value(i), names.value(i).to_string()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            (9, "n9"),
            (10, "u10"),
            (11, "u11"),
            (12, "u12"),
            (13, "u13")
        ]
        .map(|(i, n)| (i, n.to_string()))
    );
}
