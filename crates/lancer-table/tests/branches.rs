//! Branches written by Lancer (`lancer_table::versions::branch`): names checked by the spec's
//! rules, hostile branch files refused with typed errors (never a panic), writes on a
//! branch kept under `tree/{name}/` with the main branch untouched, cleanup of a branch
//! never reaching the parent's files, and the `%2F` file names on an object store.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{BooleanArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_io::{StorageOptions, Store};
use lancer_table::versions::branch::{self, Reference};
use lancer_table::write::WriteParams;
use lancer_table::{Dataset, TableError};

use crate::common::TempDir;

fn batch(start: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(start..start + n))],
    )
    .unwrap()
}

fn ids(ds: &Dataset) -> Vec<i64> {
    let b = ds.to_batch(None).unwrap();
    b.column(0).as_primitive::<Int64Type>().values().to_vec()
}

/// 30 rows in 3 fragments, row 3 deleted (version 2), 5 more rows (version 3).
fn dataset(root: &std::path::Path) -> Dataset {
    let params = WriteParams {
        max_rows_per_file: 10,
        ..WriteParams::default()
    };
    let b = batch(0, 30);
    let ds = Dataset::write(root, b.schema(), &[b], &params).unwrap();
    let ds = ds
        .delete_where("id = 3", |b| {
            let c = b.column(0).as_primitive::<Int64Type>();
            Ok(BooleanArray::from_iter(
                c.iter().map(|v| Some(v == Some(3))),
            ))
        })
        .unwrap();
    ds.append(&[batch(100, 5)], &WriteParams::default())
        .unwrap()
}

#[test]
fn branch_names_follow_the_spec() {
    for (name, rule) in [
        ("", "empty"),
        ("/a", "starts or ends"),
        ("a/", "starts or ends"),
        ("a//b", "'//'"),
        ("a..b", "'..'"),
        ("a\\b", "'\\'"),
        ("a b", "segment \"a b\""),
        ("x.lock", "'.lock'"),
        ("main", "reserved"),
    ] {
        match branch::check_name(name) {
            Err(TableError::InvalidInput { what }) => {
                assert!(what.contains(rule), "{name:?}: {what}")
            }
            other => panic!("{name:?}: {other:?}"),
        }
    }
    for ok in ["a", "feat/x", "é", "-x", ".hidden", "v1.2_b"] {
        branch::check_name(ok).unwrap();
    }
    assert_eq!(
        branch::file_name("bugfix/issue-123"),
        "bugfix%2Fissue-123.json"
    );
    assert_eq!(branch::file_name("é"), "%C3%A9.json");
}

#[test]
fn writes_on_a_branch_stay_in_its_tree() {
    let dir = TempDir::new("table-branch-writes");
    let root = dir.path();
    let main = dataset(root);
    let main_ids = ids(&main);
    let b = main
        .create_branch(
            "feat/x",
            Some(&Reference::Version {
                branch: None,
                version: Some(2),
            }),
        )
        .unwrap();
    assert_eq!((b.version(), b.branch()), (2, Some("feat/x")));
    assert_eq!(b.count_rows(), 29);
    let pb = &b.manifest().pb;
    assert_eq!(pb.base_paths.len(), 1);
    assert_eq!(pb.base_paths[0].id, 0);
    assert!(pb.reader_feature_flags & branch::FLAG_BASE_PATHS != 0);
    assert!(pb
        .fragments
        .iter()
        .all(|f| f.files.iter().all(|d| d.base_id == Some(0))));
    // append and delete on the branch: new files under tree/feat/x, versions 3 and 4
    let b = b.append(&[batch(200, 2)], &WriteParams::default()).unwrap();
    let b = b
        .delete_where("id = 5", |x| {
            let c = x.column(0).as_primitive::<Int64Type>();
            Ok(BooleanArray::from_iter(
                c.iter().map(|v| Some(v == Some(5))),
            ))
        })
        .unwrap();
    assert_eq!(b.version(), 4);
    assert_eq!(b.count_rows(), 30);
    let reopened = Dataset::open(root.join("tree/feat/x")).unwrap();
    assert_eq!(ids(&reopened), ids(&b));
    assert!(ids(&b).contains(&200) && !ids(&b).contains(&5));
    let main_again = Dataset::open(root).unwrap();
    assert_eq!((main_again.version(), ids(&main_again)), (3, main_ids));
    // a branch of the branch, and a checkout by reference
    let n = main
        .create_branch(
            "n",
            Some(&Reference::Version {
                branch: Some("feat/x".into()),
                version: None,
            }),
        )
        .unwrap();
    assert_eq!(ids(&n), ids(&b));
    assert_eq!(n.manifest().pb.base_paths.len(), 2);
    let at = n
        .checkout_ref(&Reference::Version {
            branch: Some("main".into()),
            version: Some(1),
        })
        .unwrap();
    assert_eq!((at.version(), at.count_rows()), (1, 30));
    // cleanup of the branch removes its own old versions only; main's files stay
    let before: Vec<_> = Store::local(root).list("data").unwrap();
    let st = lancer_table::versions::cleanup_retaining(
        b.store(),
        Some(std::time::Duration::ZERO),
        None,
        true,
        false,
    )
    .unwrap();
    assert_eq!(Store::local(root).list("data").unwrap(), before);
    assert!(st.versions_removed >= 1, "{st:?}");
    assert_eq!(
        ids(&Dataset::open(root.join("tree/feat/x")).unwrap()),
        ids(&b)
    );
    // cleanup of main keeps version 2 (feat/x starts there)
    lancer_table::versions::cleanup_retaining(
        main.store(),
        Some(std::time::Duration::ZERO),
        None,
        true,
        false,
    )
    .unwrap();
    assert_eq!(Dataset::open_version(root, 2).unwrap().count_rows(), 29);
    // deleting: refused while n was made from feat/x; then both go with their trees
    let root_store = Store::local(root);
    assert!(matches!(
        branch::delete(&root_store, "feat/x"),
        Err(TableError::Refused { .. })
    ));
    branch::delete(&root_store, "n").unwrap();
    branch::delete(&root_store, "feat/x").unwrap();
    assert!(!root.join("tree/feat").exists() && !root.join("tree/n").exists());
    assert!(branch::list(&root_store).unwrap().is_empty());
    assert_eq!(ids(&Dataset::open(root).unwrap()).len(), 34);
}

#[test]
fn hostile_branch_files_are_typed_errors() {
    let dir = TempDir::new("table-branch-hostile");
    let root = dir.path();
    dataset(root);
    let store = Store::local(root);
    let bodies: [&[u8]; 10] = [
        b"",
        b"not json",
        b"[]",
        b"{}",
        br#"{"parentVersion": "2"}"#,
        br#"{"parentVersion": -1}"#,
        br#"{"parentVersion": 2, "parentBranch": 7}"#,
        br#"{"parentVersion": 2, "identifier": {"version_mapping": [[1]]}}"#,
        br#"{"parentVersion": 2, "identifier": {"version_mapping": 5}}"#,
        br#"{"parentVersion": 2, "metadata": {"k": 1}}"#,
    ];
    for body in bodies {
        store
            .put("_refs/branches/h.json", bytes::Bytes::copy_from_slice(body))
            .unwrap();
        let shown = String::from_utf8_lossy(body).into_owned();
        assert!(
            matches!(branch::list(&store), Err(TableError::Corrupt { .. })),
            "{shown}"
        );
        assert!(
            matches!(branch::read(&store, "h"), Err(TableError::Corrupt { .. })),
            "{shown}"
        );
        assert!(Dataset::open_branch(root, "h").is_err(), "{shown}");
        // an existing name is refused before its file is read
        let main = Dataset::open(root).unwrap();
        assert!(matches!(
            main.create_branch("h", None),
            Err(TableError::InvalidInput { .. })
        ));
    }
    // a good file parses; missing optional keys default
    store
        .put(
            "_refs/branches/h.json",
            br#"{"parentVersion": 2, "parentBranch": null}"#.as_slice().into(),
        )
        .unwrap();
    assert_eq!(branch::read(&store, "h").unwrap().parent_version, 2);
    // a name given to read / delete is checked before any path is formed
    assert!(matches!(
        branch::read(&store, "../x"),
        Err(TableError::InvalidInput { .. })
    ));
    assert!(matches!(
        branch::delete(&store, "nosuch"),
        Err(TableError::NotFound { .. })
    ));
    // a missing source version or tag
    let main = Dataset::open(root).unwrap();
    let missing = Reference::Version {
        branch: None,
        version: Some(99),
    };
    assert!(matches!(
        main.create_branch("m", Some(&missing)),
        Err(TableError::NotFound { .. })
    ));
    assert!(matches!(
        main.create_branch("m", Some(&Reference::Tag("nosuch".into()))),
        Err(TableError::NotFound { .. })
    ));
    assert!(!root.join("_refs/branches/m.json").exists());
}

#[test]
fn branch_files_on_an_object_store_are_percent_encoded() {
    let ctx = lancer_io::Context::fresh();
    let store = Store::open_in("memory://branches/ds", &StorageOptions::new(), &ctx).unwrap();
    let b = batch(0, 10);
    let ds = Dataset::write_stream_in(
        store.clone(),
        b.schema(),
        std::iter::once(Ok(b)),
        &WriteParams::default(),
    )
    .unwrap();
    let br = ds.create_branch("a/b", None).unwrap();
    assert_eq!(br.store().uri(), "memory://branches/ds/tree/a/b");
    let names: Vec<String> = store
        .list("_refs/branches")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec!["a%2Fb.json".to_string()]);
    assert_eq!(branch::list(&store).unwrap()[0].0, "a/b");
    let br = br.append(&[batch(50, 1)], &WriteParams::default()).unwrap();
    assert_eq!(br.count_rows(), 11);
    assert_eq!(br.main_root().unwrap().uri(), "memory://branches/ds");
    assert_eq!(
        Dataset::open_in(store.clone(), None).unwrap().count_rows(),
        10
    );
    branch::delete(&store, "a/b").unwrap();
    assert!(store.list("tree").unwrap().is_empty());
}

/// A branch named below another one (`x/data`, `x/_transactions`) lives inside the
/// other's tree: cleaning up `x`, unverified files included, leaves its files alone;
/// an age beyond the clock's range removes nothing it should keep and does not panic.
#[test]
fn cleanup_leaves_nested_branches_alone() {
    use lancer_table::versions::cleanup_retaining;
    use std::time::Duration;
    let dir = TempDir::new("table-branch-nested");
    let root = dir.path();
    let main = dataset(root);
    let reference = |version| Reference::Version {
        branch: None,
        version: Some(version),
    };
    let x = main.create_branch("x", Some(&reference(3))).unwrap();
    for nested in ["x/data", "x/_transactions"] {
        let n = main.create_branch(nested, Some(&reference(3))).unwrap();
        n.append(&[batch(500, 3)], &WriteParams::default()).unwrap();
    }
    let x = x.append(&[batch(600, 1)], &WriteParams::default()).unwrap();
    let x = x.append(&[batch(700, 1)], &WriteParams::default()).unwrap();
    cleanup_retaining(x.store(), None, Some(1), true, false).unwrap();
    for nested in ["x/data", "x/_transactions"] {
        let n = Dataset::open(root.join("tree").join(nested)).unwrap();
        assert_eq!(n.count_rows(), 34 + 3, "{nested} kept its rows");
    }
    assert_eq!(Dataset::open(root.join("tree/x")).unwrap().count_rows(), 36);
    let huge = Duration::from_secs(u64::MAX / 2);
    cleanup_retaining(main.store(), Some(huge), None, false, false).unwrap();
    assert_eq!(Dataset::open(root).unwrap().count_rows(), 34);
}

/// A shallow clone (pylance's `shallow_clone`): a dataset of its own at another
/// location, its first version the source's numbered version, every file shared through
/// the source registered as a base path (deletion files too), a `Clone` transaction
/// with no branch name; appends to it stay in the clone; a location holding a dataset
/// is refused.
#[test]
fn shallow_clone_shares_files_and_writes_its_own() {
    let dir = TempDir::new("shallow-clone");
    let src = dataset(&dir.path().join("src"));
    let target = Store::local(dir.path().join("clone"));
    let clone = src
        .shallow_clone(
            Some(&Reference::Version {
                branch: None,
                version: Some(2),
            }),
            target.clone(),
            StorageOptions::default(),
        )
        .unwrap();
    assert_eq!(clone.version(), 2);
    assert_eq!(
        ids(&clone),
        ids(&Dataset::open_version(dir.path().join("src"), 2).unwrap())
    );
    let m = &clone.manifest().pb;
    assert_eq!(m.base_paths.len(), 1);
    assert!(m.base_paths[0].is_dataset_root && m.base_paths[0].name.is_none());
    let base = m.base_paths[0].id;
    assert!(m
        .fragments
        .iter()
        .all(|f| f.files.iter().all(|d| d.base_id == Some(base))));
    assert!(m
        .fragments
        .iter()
        .filter_map(|f| f.deletion_file.as_ref())
        .all(|d| d.base_id == Some(base)));
    assert!(m.branch.is_none());
    let t = lancer_table::commit::read_transaction(&target, m).unwrap();
    match t.operation {
        Some(lancer_table::pb::transaction::Operation::Clone(c)) => {
            assert!(c.is_shallow && c.branch_name.is_none() && c.ref_version == 2)
        }
        other => panic!("a clone's transaction is a Clone, not {other:?}"),
    }
    // nothing but metadata was written at the clone
    assert!(target.list("data").unwrap().is_empty());
    // appends land in the clone only
    let grown = clone
        .append(&[batch(500, 3)], &WriteParams::default())
        .unwrap();
    assert_eq!(grown.version(), 3);
    assert!(ids(&grown).contains(&500));
    assert!(!ids(&Dataset::open(dir.path().join("src")).unwrap()).contains(&500));
    assert_eq!(target.list("data").unwrap().len(), 1);
    // the latest by default; a taken location refused
    let again = src.shallow_clone(
        None,
        Store::local(dir.path().join("c2")),
        StorageOptions::default(),
    );
    assert_eq!(again.unwrap().version(), src.version());
    let err = src
        .shallow_clone(None, target, StorageOptions::default())
        .unwrap_err();
    assert!(matches!(err, TableError::Refused { .. }), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");
}
