//! Metadata-only commits (`lancer_table::commit`): each map changed, replaced and
//! cleared; the older transaction form applied; concurrent updates rebased or refused
//! by the keys they touch; automatic cleanup due at its interval, keeping the version
//! before the commit, and a bad setting reported without failing the commit.

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::commit::{self, AutoCleanup, MapUpdate, MetadataUpdate};
use lancer_table::pb;
use lancer_table::pb::transaction::{Operation, UpdateConfig};
use lancer_table::versions::list_versions;
use lancer_table::write::WriteParams;
use lancer_table::{Dataset, TableError};

use crate::common::TempDir;

fn batch(n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "s",
        DataType::Struct(vec![Field::new("a", DataType::Int64, true)].into()),
        true,
    )]));
    let a = Arc::new(Int64Array::from_iter_values(0..n));
    let st = arrow_array::StructArray::from(vec![(
        Arc::new(Field::new("a", DataType::Int64, true)),
        a as arrow_array::ArrayRef,
    )]);
    RecordBatch::try_new(schema, vec![Arc::new(st)]).unwrap()
}

fn set(pairs: &[(&str, Option<&str>)]) -> MapUpdate {
    MapUpdate::set(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string))),
    )
}

fn config_of(ds: &Dataset) -> Vec<(String, String)> {
    let mut v: Vec<_> = ds.manifest().pb.config.clone().into_iter().collect();
    v.sort();
    v
}

#[test]
fn each_map_changes_in_one_commit() {
    let root = TempDir::new("config-maps");
    let b = batch(10);
    let ds = Dataset::write(&root, b.schema(), &[b], &WriteParams::default()).unwrap();
    let ds = ds
        .update_metadata(&MetadataUpdate {
            config: Some(set(&[("a", Some("1")), ("b", Some("2"))])),
            table: Some(set(&[("owner", Some("me"))])),
            schema: Some(set(&[("s", Some("x"))])),
            fields: vec![("s.a".into(), set(&[("d", Some("child"))]))],
        })
        .unwrap();
    assert_eq!(ds.version(), 2);
    assert_eq!(
        config_of(&ds),
        vec![("a".into(), "1".into()), ("b".into(), "2".into())]
    );
    assert_eq!(ds.manifest().pb.table_metadata["owner"], "me");
    assert_eq!(ds.manifest().pb.schema_metadata["s"], b"x".to_vec());
    let child = &ds.manifest().schema.fields[0].children[0];
    assert_eq!(child.metadata["d"], "child");
    // removal, replacement (the data is untouched throughout)
    let ds = ds
        .update_metadata(&MetadataUpdate {
            config: Some(set(&[("a", None), ("never", None)])),
            table: Some(MapUpdate::replace([("k".to_string(), "v".to_string())])),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(config_of(&ds), vec![("b".into(), "2".into())]);
    assert_eq!(ds.manifest().pb.table_metadata.len(), 1);
    assert_eq!(ds.count_rows(), 10);
    let reopened = Dataset::open(&root).unwrap();
    assert_eq!(reopened.version(), 3);
    assert_eq!(config_of(&reopened), config_of(&ds));
    // an unknown field is the caller's mistake; nothing is committed
    let err = ds
        .update_metadata(&MetadataUpdate {
            fields: vec![("s.nope".into(), set(&[("d", Some("x"))]))],
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(err, TableError::InvalidInput { .. }), "{err}");
    assert_eq!(Dataset::open(&root).unwrap().version(), 3);
}

#[test]
fn the_older_transaction_form_applies() {
    let root = TempDir::new("config-legacy");
    let b = batch(4);
    let ds = Dataset::write(&root, b.schema(), &[b], &WriteParams::default()).unwrap();
    let ds = ds
        .update_metadata(&MetadataUpdate {
            config: Some(set(&[("gone", Some("1"))])),
            ..Default::default()
        })
        .unwrap();
    let mut field_md = std::collections::HashMap::new();
    field_md.insert(
        0u32,
        pb::transaction::update_config::FieldMetadataUpdate {
            metadata: [("f".to_string(), "1".to_string())].into_iter().collect(),
        },
    );
    let op = Operation::UpdateConfig(UpdateConfig {
        upsert_values: [("k".to_string(), "v".to_string())].into_iter().collect(),
        delete_keys: vec!["gone".into()],
        schema_metadata: [("m".to_string(), "1".to_string())].into_iter().collect(),
        field_metadata: field_md,
        ..Default::default()
    });
    let m = lancer_table::commit::commit(ds.store(), Some(2), op, "2.1", ds.naming()).unwrap();
    assert_eq!(m.pb.config.len(), 1);
    assert_eq!(m.pb.config["k"], "v");
    assert_eq!(m.pb.schema_metadata["m"], b"1".to_vec());
    assert_eq!(m.pb.fields[0].metadata["f"], b"1".to_vec());
}

#[test]
fn concurrent_updates_rebase_unless_they_touch_the_same_keys() {
    let root = TempDir::new("config-concurrent");
    let b = batch(4);
    let base = Dataset::write(&root, b.schema(), &[b], &WriteParams::default()).unwrap();
    let one = |u: MetadataUpdate| base.update_metadata(&u);
    // different keys: both land
    one(MetadataUpdate {
        config: Some(set(&[("x", Some("1"))])),
        ..Default::default()
    })
    .unwrap();
    let both = one(MetadataUpdate {
        config: Some(set(&[("y", Some("2"))])),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(config_of(&both).len(), 2);
    // the same key, a replacement, the schema metadata twice: refused as conflicts
    for u in [
        MetadataUpdate {
            config: Some(set(&[("x", Some("3"))])),
            ..Default::default()
        },
        MetadataUpdate {
            config: Some(MapUpdate::replace([("z".to_string(), "1".to_string())])),
            ..Default::default()
        },
    ] {
        let err = one(u).unwrap_err();
        assert!(matches!(err, TableError::Conflict { .. }), "{err}");
    }
    let latest = Dataset::open(&root).unwrap();
    latest
        .update_metadata(&MetadataUpdate {
            schema: Some(set(&[("a", Some("1"))])),
            ..Default::default()
        })
        .unwrap();
    let err = latest
        .update_metadata(&MetadataUpdate {
            schema: Some(set(&[("b", Some("1"))])),
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(err, TableError::Conflict { .. }), "{err}");
    // data changes commute with a metadata update read at the same version
    let v = Dataset::open(&root).unwrap();
    let b = batch(3);
    v.append(&[b], &WriteParams::default()).unwrap();
    let after = v
        .update_metadata(&MetadataUpdate {
            table: Some(set(&[("t", Some("1"))])),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(after.count_rows(), 7);
    assert_eq!(config_of(&after).len(), 2);
}

#[test]
fn auto_cleanup_runs_at_its_interval() {
    let root = TempDir::new("config-autoclean");
    let b = batch(2);
    let params = WriteParams {
        auto_cleanup: Some(AutoCleanup {
            interval: 3,
            older_than: Duration::ZERO,
        }),
        ..Default::default()
    };
    let mut ds = Dataset::write(&root, b.schema(), std::slice::from_ref(&b), &params).unwrap();
    assert_eq!(
        config_of(&ds),
        vec![
            (commit::AUTO_CLEANUP_INTERVAL.into(), "3".into()),
            (commit::AUTO_CLEANUP_OLDER_THAN.into(), "0s".into())
        ]
    );
    let mut seen = Vec::new();
    for _ in 0..5 {
        ds = ds
            .append(std::slice::from_ref(&b), &WriteParams::default())
            .unwrap();
        seen.push(
            list_versions(ds.store())
                .unwrap()
                .iter()
                .map(|v| v.version)
                .collect::<Vec<_>>(),
        );
    }
    // at versions 3 and 6 everything before the previous version goes (pylance's order)
    assert_eq!(
        seen,
        vec![
            vec![1, 2],
            vec![2, 3],
            vec![2, 3, 4],
            vec![2, 3, 4, 5],
            vec![5, 6]
        ]
    );
    assert_eq!(Dataset::open(&root).unwrap().count_rows(), 12);
    // skipped when asked
    let skip = WriteParams {
        skip_auto_cleanup: true,
        ..Default::default()
    };
    for _ in 0..3 {
        ds = ds.append(std::slice::from_ref(&b), &skip).unwrap();
    }
    assert_eq!(list_versions(ds.store()).unwrap().len(), 5);
    // a setting that does not parse: the commit stands, the session hears of it
    let ds = ds
        .update_metadata(&MetadataUpdate {
            config: Some(set(&[
                (commit::AUTO_CLEANUP_INTERVAL, Some("1")),
                (commit::AUTO_CLEANUP_OLDER_THAN, Some("soon")),
            ])),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(ds.version(), 10);
    assert!(ds
        .store()
        .context()
        .warnings()
        .iter()
        .any(|w| w.contains("soon") && w.contains("automatic cleanup")));
    assert_eq!(list_versions(ds.store()).unwrap().len(), 6);
}

#[test]
fn durations_as_pylance_writes_them() {
    assert_eq!(commit::parse_duration("0s").unwrap(), Duration::ZERO);
    assert_eq!(
        commit::parse_duration("3600s").unwrap(),
        Duration::from_secs(3600)
    );
    assert_eq!(
        commit::parse_duration("14days").unwrap(),
        Duration::from_secs(14 * 86400)
    );
    assert!(matches!(
        commit::parse_duration("fortnight"),
        Err(TableError::InvalidInput { .. })
    ));
}
