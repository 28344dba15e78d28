//! Sessions: what datasets opened through one share (memory:// stores, counters, index
//! caches, warnings) and what two sessions do not; the async forms of the calls.

use std::sync::{Arc, Mutex};

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer::{Dataset, DatasetExt, Session, WriteParams};

fn batch(n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(0..n))]).unwrap()
}

/// `memory://` stores belong to a session: a second open in the same session finds
/// the dataset, another session (or an open by location alone) starts empty, as each
/// pylance open of a `memory://` URI does.
#[test]
fn memory_stores_are_the_sessions() {
    let a = Session::new();
    a.write("memory://s/ds", &[batch(10)], &WriteParams::default())
        .unwrap();
    assert_eq!(a.open("memory://s/ds").unwrap().count_rows(), 10);
    let b = Session::new();
    let err = b.open("memory://s/ds").unwrap_err().to_string();
    assert!(
        err.contains("not found") || err.contains("not a Lance dataset"),
        "{err}"
    );
    assert!(Dataset::open("memory://s/ds").is_err());
    // requests count in the session that made them
    let before = a.stats();
    a.open("memory://s/ds").unwrap();
    assert!(a.stats().since(&before).requests() >= 1);
    assert_eq!(b.stats().gets, 0, "b read nothing: {}", b.stats());
}

/// Storage options given to the session are the ones its datasets carry (and a
/// misspelt one is refused naming it, not ignored).
#[test]
fn storage_options_reach_every_store() {
    let s = Session::builder()
        .storage_option("client_max_retries", "3")
        .build();
    s.write("memory://opts/ds", &[batch(3)], &WriteParams::default())
        .unwrap();
    let ds = s.open("memory://opts/ds").unwrap();
    assert_eq!(
        ds.storage_options()
            .get("client_max_retries")
            .map(String::as_str),
        Some("3")
    );
    assert_eq!(
        Session::of(&ds).storage_options(),
        s.storage_options(),
        "the session of a dataset is the one it was opened in"
    );
    let bad = Session::builder().storage_option("regoin", "x").build();
    let err = bad.store("s3://bucket/ds").unwrap_err().to_string();
    assert!(err.contains("regoin"), "{err}");
}

fn golden_btree() -> (std::path::PathBuf, Vec<String>) {
    let root = crate::common::repo().join("tests/data/scalar-indexes/pylance-14");
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("btree_int64_pages16.json")).unwrap(),
    )
    .unwrap();
    let filters = meta["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filter"].as_str().unwrap().to_string())
        .take(4)
        .collect();
    (root.join("btree_int64_pages16"), filters)
}

/// Opened index segments are cached in the session, bounded by its configured size;
/// a second query is answered from the cache; another session opens its own.
#[test]
fn index_segments_are_cached_per_session_and_bounded() {
    let (dir, filters) = golden_btree();
    let s = Session::builder().index_cache_entries(1).build();
    let ds = s.open(&dir).unwrap();
    let first = ds.count_where(&filters[0]).unwrap();
    let after_one = s.index_cache_stats();
    assert_eq!(after_one.capacity, 1);
    assert_eq!(after_one.entries, 1, "{after_one:?}");
    // the same answer again, from the cache (another open in the same session too)
    assert_eq!(
        s.open(&dir).unwrap().count_where(&filters[0]).unwrap(),
        first
    );
    let after_two = s.index_cache_stats();
    assert!(
        after_two.hits > after_one.hits,
        "{after_one:?} then {after_two:?}"
    );
    assert_eq!(after_two.entries, 1);
    let other = Session::new();
    assert_eq!(other.index_cache_stats().entries, 0);
    assert_eq!(
        other.open(&dir).unwrap().count_where(&filters[0]).unwrap(),
        first
    );
    assert_eq!(other.index_cache_stats().entries, 1);
    assert_eq!(
        other.index_cache_stats().capacity,
        lancer::DEFAULT_INDEX_CACHE_ENTRIES
    );
}

/// A damaged index's warning goes to the session's sink, once, and the answer stays
/// right (the rows are scanned); nothing is printed by the library.
#[test]
fn warnings_go_to_the_sessions_sink() {
    let (golden, filters) = golden_btree();
    let dir = crate::common::TempDir::new("session-warn");
    let tmp = dir.path().join("ds");
    crate::common::copy_dir(&golden, &tmp);
    let want: Vec<u64> = {
        let ds = Dataset::open(&golden).unwrap();
        filters.iter().map(|f| ds.count_where(f).unwrap()).collect()
    };
    let idx = std::fs::read_dir(tmp.join("_indices"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("page_lookup.lance");
    std::fs::write(&idx, b"").unwrap();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = seen.clone();
    let s = Session::builder()
        .warnings(move |m| sink.lock().unwrap().push(m.to_string()))
        .build();
    let ds = s.open(&tmp).unwrap();
    let got: Vec<u64> = filters.iter().map(|f| ds.count_where(f).unwrap()).collect();
    assert_eq!(got, want);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        1,
        "one distinct warning, reported once: {seen:?}"
    );
    assert!(seen[0].contains("scalar index skipped"), "{seen:?}");
    assert_eq!(s.warnings(), seen);
    assert!(Session::new().warnings().is_empty());
}

/// The async forms complete on any executor without blocking it, and on a session
/// given the program's own runtime.
#[test]
fn async_calls_complete_on_the_programs_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let s = Session::builder().runtime(rt.handle().clone()).build();
    let rows = rt.block_on(async {
        let ds = s
            .write_async("memory://async/ds", vec![batch(7)], WriteParams::default())
            .await
            .unwrap();
        assert_eq!(ds.version(), 1);
        let again = s.open_async("memory://async/ds").await.unwrap();
        let counted = s
            .spawn(move |_| again.count_where("id >= 3"))
            .await
            .unwrap();
        let v1 = s.open_version_async("memory://async/ds", 1).await.unwrap();
        (counted, v1.count_rows())
    });
    assert_eq!(rows, (4, 7));
    // a session with its own runtime, awaited from another executor's thread
    let own = Session::new();
    let err = rt
        .block_on(own.open_async("memory://async/nothing"))
        .unwrap_err()
        .to_string();
    assert!(!err.is_empty());
}
