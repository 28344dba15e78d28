//! Discovery's cost, alone in its own test process: the store's request counters are
//! process-wide, so no other test may do I/O while it counts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use common::read_all;
use lancer::{Dataset, DatasetExt, WriteParams};
use lancer_loader::{discover, discover_in, Loader, Options, Pin};
use lancer_testkit::TempDir;

fn batch(start: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(start..start + n))],
    )
    .unwrap()
}

#[test]
fn discovery_is_two_requests_and_the_plan_round_trips() {
    let uri = format!("memory://loader-{}", std::process::id());
    let b = batch(0, 500);
    // memory:// stores belong to a session: the writes, the discovery and the loader
    // share one, as a program would.
    let session = lancer::Session::new();
    let store = session.store(Path::new(&uri)).unwrap();
    let params = WriteParams {
        max_rows_per_file: 120,
        ..Default::default()
    };
    let ds = Dataset::write_stream_in(store, b.schema(), [Ok(b)], &params).unwrap();
    let ds = Dataset::open_with(ds.store().clone(), Default::default(), None).unwrap();
    ds.delete("id < 7").unwrap();
    let d = discover_in(&session, &uri, &Pin::Latest).unwrap();
    assert_eq!(d.requests, 2, "a listing and the manifest");
    assert_eq!(d.data_files_opened, 0);
    assert_eq!(d.plan.version, 2);
    assert_eq!(d.plan.rows, 493);
    assert_eq!(d.plan.shards.len(), 5);
    assert_eq!(d.plan.shards[0].rows, 113);
    assert!(d
        .plan
        .shards
        .iter()
        .all(|s| s.bytes > 0 && s.files.len() == 1));
    let back = lancer_loader::Plan::from_json(&d.plan.to_json()).unwrap();
    assert_eq!(back, d.plan);
    // pinned: version 1 by number
    let v1 = discover_in(&session, &uri, &Pin::Version(1)).unwrap();
    assert_eq!(v1.plan.rows, 500);
    let l = Loader::new_in(&session, v1.plan, Options::default()).unwrap();
    assert_eq!(read_all(&l, 0), (0..500).collect::<Vec<i64>>());
    // a damaged plan is refused
    let mut bad = d.plan.clone();
    bad.rows += 1;
    assert!(lancer_loader::Plan::from_json(&bad.to_json()).is_err());

    // On a local disk with a version hint (pylance 14 writes one; so does Lancer): two
    // reads — the hint and the manifest — plus two size checks (the hinted version's
    // manifest exists, the next one does not), whoever wrote the dataset.
    let local_dir = TempDir::new("loader-discovery-local");
    let local = local_dir.join("ds");
    let b = batch(0, 300);
    let ds = Dataset::write(&local, b.schema(), std::slice::from_ref(&b), &params).unwrap();
    ds.append(&[batch(300, 50)], &params).unwrap();
    let pylance = lancer_testkit::repo().join("tests/data/datasets/pylance-14/history");
    for (who, path, version) in [("lancer", &local, 2), ("pylance 14", &pylance, 6)] {
        assert!(
            path.join("_versions/latest_version_hint.json").exists(),
            "{who}"
        );
        let d = discover(path.to_str().unwrap(), &Pin::Latest, &Default::default()).unwrap();
        assert_eq!(d.plan.version, version, "{who}");
        assert_eq!((d.reads, d.requests), (2, 4), "{who}: reads, requests");
        assert_eq!(d.data_files_opened, 0);
    }
}
