//! Hostile or damaged datasets give clear errors, never panics; cleanup keeps what
//! must be kept.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::commit::{manifest_bytes, Naming};
use lancer_table::versions::{cleanup, versions};
use lancer_table::versions::{create_tag, list_versions};
use lancer_table::write::WriteParams;
use lancer_table::{Dataset, TableError};

use crate::common::TempDir;

/// A fresh temporary directory for the dataset of test `name`.
fn dir(name: &str) -> TempDir {
    TempDir::new(&format!("table-{name}"))
}

fn batch(start: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(start..start + n))],
    )
    .unwrap()
}

fn base(name: &str) -> (TempDir, Dataset) {
    let root = dir(name);
    let b = batch(0, 100);
    let ds = Dataset::write(&root, b.schema(), &[b], &WriteParams::default()).unwrap();
    (root, ds)
}

/// Commits a tampered copy of the latest manifest as the next version.
fn tamper(root: &Path, ds: &Dataset, f: impl Fn(&mut lancer_table::pb::Manifest)) {
    let mut m = ds.manifest().pb.clone();
    m.version += 1;
    f(&mut m);
    let p = root.join("_versions").join(Naming::V2.file_name(m.version));
    std::fs::write(p, manifest_bytes(&m)).unwrap();
}

#[test]
fn hostile_manifests_are_refused_clearly() {
    type Tamper = Box<dyn Fn(&mut lancer_table::pb::Manifest)>;
    let cases: Vec<(&str, Tamper, &str)> = vec![
        (
            "escape",
            Box::new(|m| m.fragments[0].files[0].path = "../../../etc/passwd".into()),
            "escapes the dataset",
        ),
        (
            "absolute",
            Box::new(|m| m.fragments[0].files[0].path = "/etc/passwd".into()),
            "escapes the dataset",
        ),
        (
            "missing",
            Box::new(|m| m.fragments[0].files[0].path = "nope.lance".into()),
            "nope.lance",
        ),
        (
            "rows",
            Box::new(|m| m.fragments[0].physical_rows = u64::MAX),
            "rows",
        ),
        (
            "flags",
            Box::new(|m| m.reader_feature_flags |= 1 << 20),
            "upgrade Lancer",
        ),
        (
            "deletion",
            Box::new(|m| {
                m.fragments[0].deletion_file = Some(lancer_table::pb::DeletionFile {
                    file_type: 0,
                    read_version: 1,
                    id: 7,
                    num_deleted_rows: 1,
                    base_id: None,
                });
            }),
            "_deletions",
        ),
    ];
    for (name, f, want) in cases {
        let (root, ds) = base(&format!("hostile-{name}"));
        tamper(&root, &ds, f);
        let r = std::panic::catch_unwind(|| {
            let ds = Dataset::open(&root)?;
            let _ = ds.count_rows();
            ds.to_batch(None).map(|_| ())
        });
        let err = match r {
            Err(_) => panic!("{name}: panicked"),
            Ok(Ok(())) => panic!("{name}: accepted"),
            Ok(Err(e)) => e.to_string(),
        };
        assert!(
            err.contains(want),
            "{name}: error {err:?} should mention {want:?}"
        );
    }
    // A fragment whose data file stores none of the schema's fields reads as nulls, as
    // the reference reads fields that have no data file (added without data).
    let (root, ds) = base("hostile-nofield");
    tamper(&root, &ds, |m| m.fragments[0].files[0].fields = vec![99]);
    let ds = Dataset::open(&root).unwrap();
    let b = ds.to_batch(None).unwrap();
    let first = ds.fragments()[0].physical_rows as usize;
    for c in b.columns() {
        assert_eq!(
            c.slice(0, first).null_count(),
            first,
            "fragment 0 reads as nulls"
        );
    }
    // A truncated manifest.
    let (root, _) = base("hostile-truncated");
    let v = list_versions(&lancer_io::Store::local(&root))
        .unwrap()
        .pop()
        .unwrap();
    let bytes = std::fs::read(root.join(&v.path)).unwrap();
    std::fs::write(root.join(&v.path), &bytes[..bytes.len() / 2]).unwrap();
    match Dataset::open(&root) {
        Err(TableError::Corrupt { what }) => {
            assert!(what.contains("LANC") || what.contains("manifest"))
        }
        other => panic!("truncated manifest: {other:?}"),
    }
    // Not a dataset.
    assert!(matches!(
        Dataset::open(dir("hostile-empty").join("nothing-here")),
        Err(TableError::NotFound { .. })
    ));
}

#[test]
fn cleanup_keeps_latest_and_tagged_versions() {
    let (root, mut ds) = base("cleanup");
    for i in 1..5 {
        ds = ds
            .append(&[batch(i * 100, 100)], &WriteParams::default())
            .unwrap();
    }
    ds = ds
        .delete_where("id < 50", |b| {
            let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            Ok(ids.iter().map(|x| Some(x.unwrap_or(0) < 50)).collect())
        })
        .unwrap();
    create_tag(&lancer_io::Store::local(&root), "keep", 2, 0).unwrap();
    let before: Vec<u64> = versions(&lancer_io::Store::local(&root))
        .unwrap()
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(before, vec![1, 2, 3, 4, 5, 6]);
    std::thread::sleep(Duration::from_millis(1100));
    let stats = cleanup(&lancer_io::Store::local(&root), Duration::from_millis(500)).unwrap();
    assert_eq!(stats.versions_removed, 4);
    let after: Vec<u64> = versions(&lancer_io::Store::local(&root))
        .unwrap()
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(after, vec![2, 6]);
    let latest = Dataset::open(&root).unwrap();
    assert_eq!(latest.count_rows(), 450);
    assert_eq!(latest.to_batch(None).unwrap().num_rows(), 450);
    assert_eq!(
        Dataset::open_tag(&root, "keep")
            .unwrap()
            .to_batch(None)
            .unwrap()
            .num_rows(),
        200
    );
    let _ = ds;
}
