//! Distributed compaction through the Rust API: a plan covers exactly what the local
//! compaction rewrites, tasks travel as JSON and run against their own handle of the
//! store, one commit of the results equals a local compaction row for row; partial
//! commits, a concurrent append (rebased), a concurrent delete (conflict), stable row
//! ids and tampered results.

use arrow_array::{Array, Int64Array};
use lancer::write::CommitParams;
use lancer::write::{
    commit_compaction, plan_compaction, CompactionPlan, CompactionTask, RewriteResult,
};
use lancer::{Dataset, DatasetExt, Store, WriteParams};
use lancer_table::evolution::CompactionOptions;

use crate::common::TempDir;
use crate::two_phase::{batch, schema};

fn params(stable: bool) -> WriteParams {
    WriteParams {
        enable_stable_row_ids: stable,
        ..Default::default()
    }
}

/// Fragments of 10, 10, 30, 5, 10 rows (ids 0..65), then rows 20..24 (fragment 2's
/// first four, over 10%) and 60 deleted.
fn dataset(dir: &TempDir, stable: bool) -> (Store, Dataset) {
    let store = Store::local(dir.path());
    let mut ds =
        Dataset::write_stream_in(store.clone(), schema(), [Ok(batch(0..10))], &params(stable))
            .unwrap();
    for r in [10..20, 20..50, 50..55, 55..65] {
        ds = ds.append(&[batch(r)], &params(stable)).unwrap();
    }
    let ds = ds.delete("id >= 20 AND id < 24 OR id = 60").unwrap();
    (store, ds)
}

fn options() -> CompactionOptions {
    CompactionOptions {
        target_rows_per_fragment: 20,
        ..Default::default()
    }
}

/// Each fragment's live `id`s, in order.
fn per_fragment(ds: &Dataset) -> Vec<Vec<i64>> {
    ds.fragments()
        .iter()
        .map(|f| {
            let runs = ds.kept_runs(f).unwrap();
            let b = ds.read_runs(f, Some(&["id"]), runs.runs()).unwrap();
            let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            a.values().to_vec()
        })
        .collect()
}

fn all_ids(ds: &Dataset) -> Vec<i64> {
    let mut v: Vec<i64> = per_fragment(ds).concat();
    v.sort_unstable();
    v
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Through JSON text, as a task travels to a worker.
fn via_json_task(t: &CompactionTask) -> CompactionTask {
    CompactionTask::from_json(&serde_json::from_str(&t.to_json().to_string()).unwrap()).unwrap()
}

fn via_json_result(r: &RewriteResult) -> RewriteResult {
    RewriteResult::from_json(&serde_json::from_str(&r.to_json().to_string()).unwrap()).unwrap()
}

/// The plan's groups are the local compaction's; tasks run from JSON on their own store
/// handles; one commit equals a local compaction of a copy, fragment by fragment.
#[test]
fn plan_execute_commit_equals_local() {
    let dir = TempDir::new("dist-compact");
    let (store, ds) = dataset(&dir, false);
    let copy = TempDir::new("dist-compact-copy");
    copy_dir(dir.path(), copy.path());

    let plan = plan_compaction(&ds, &options()).unwrap();
    assert_eq!(plan.read_version, ds.version());
    let groups: Vec<Vec<u64>> = plan
        .tasks
        .iter()
        .map(|t| t.fragments.iter().map(|f| f.id).collect())
        .collect();
    assert_eq!(groups, ds.plan_compaction(&options()).unwrap());
    // one bin (2 has over 10% deleted, the rest are small): 0+1 reach 20 rows; 2 (26
    // live), 3 and 4 (9 live) follow, the rest too small for a task of its own
    assert_eq!(groups, [vec![0, 1], vec![2, 3, 4]]);
    // the plan's JSON reads back to the same tasks
    let text = plan.to_json().to_string();
    let back = CompactionPlan::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
    assert_eq!(back.num_tasks(), 2);
    assert_eq!(back.tasks[1].fragments, plan.tasks[1].fragments);
    assert_eq!(back.options.target_rows_per_fragment, 20);

    let results: Vec<RewriteResult> = plan
        .tasks
        .iter()
        .map(|t| {
            let worker = Store::local(dir.path());
            via_json_result(&via_json_task(t).execute(&worker).unwrap())
        })
        .collect();
    // nothing committed by the tasks
    assert_eq!(
        Dataset::open_in(store.clone(), None).unwrap().version(),
        ds.version()
    );
    assert_eq!(results[0].metrics.fragments_removed, 2);
    assert_eq!(results[1].metrics.files_removed, 3 + 2); // 3 data + 2 deletion files
    assert_eq!(results[1].new_fragments[0].physical_rows, 26 + 5 + 9);

    let (after, m) = commit_compaction(
        &store,
        plan.read_version,
        &results,
        &CommitParams::default(),
    )
    .unwrap();
    assert_eq!(after.version(), ds.version() + 1);
    assert_eq!((m.fragments_removed, m.fragments_added), (5, 2));
    assert_eq!((m.files_removed, m.files_added), (7, 2));

    let local_ds = Dataset::open_in(Store::local(copy.path()), None).unwrap();
    let (local, _) = lancer::write::compact_files(&local_ds, &options(), &|_, _| {}).unwrap();
    let want: Vec<Vec<i64>> = vec![
        (0..20).collect(),
        (24..60).chain(61..65).collect::<Vec<_>>(),
    ];
    assert_eq!(per_fragment(&local), want);
    assert_eq!(per_fragment(&after), want);
    assert!(after.fragments().iter().all(|f| f.deletion_file.is_none()));
}

/// Committing only some results rewrites those fragments and keeps the others; a
/// result committed twice, or edited, or from another dataset is refused.
#[test]
fn partial_commit_and_bad_results() {
    let dir = TempDir::new("dist-compact-partial");
    let (store, ds) = dataset(&dir, false);
    let plan = plan_compaction(&ds, &options()).unwrap();
    let r1 = plan.tasks[1].execute(&store).unwrap();

    // edited: a new fragment claims fewer rows
    let mut edited = r1.clone();
    edited.new_fragments[0].physical_rows -= 1;
    let err = commit_compaction(
        &store,
        plan.read_version,
        &[edited],
        &CommitParams::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("hold 39 rows") && err.contains("40 live rows"),
        "{err}"
    );
    // foreign: an original fragment that is not the committed one
    let mut foreign = r1.clone();
    foreign.original_fragments[0].physical_rows = 99;
    let err = commit_compaction(
        &store,
        plan.read_version,
        &[foreign],
        &CommitParams::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("fragment 2 differs"), "{err}");
    // the same task twice
    let err = commit_compaction(
        &store,
        plan.read_version,
        &[r1.clone(), r1.clone()],
        &CommitParams::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("rewritten by two results"), "{err}");
    // a task edited to name a fragment with other rows
    let mut t = plan.tasks[0].clone();
    t.fragments[0].physical_rows = 3;
    let err = t.execute(&store).unwrap_err().to_string();
    assert!(err.contains("fragment 0 differs"), "{err}");
    // nothing was committed by the refusals
    assert_eq!(
        Dataset::open_in(store.clone(), None).unwrap().version(),
        ds.version()
    );

    let (after, m) =
        commit_compaction(&store, plan.read_version, &[r1], &CommitParams::default()).unwrap();
    assert_eq!(m.fragments_removed, 3);
    // fragments 0 and 1 untouched, the rewritten one after them
    let ids: Vec<u64> = after.fragments().iter().map(|f| f.id).collect();
    assert_eq!(ids, [0, 1, 5]);
    assert_eq!(
        per_fragment(&after),
        [
            (0..10).collect::<Vec<_>>(),
            (10..20).collect(),
            (24..60).chain(61..65).collect()
        ]
    );
    // no results: nothing committed
    let (same, m) =
        commit_compaction(&store, plan.read_version, &[], &CommitParams::default()).unwrap();
    assert_eq!(same.version(), after.version());
    assert_eq!(m.fragments_added, 0);
}

/// An append committed between plan and commit is rebased over; a delete touching a
/// planned fragment makes the commit a conflict.
#[test]
fn concurrent_append_lands_concurrent_delete_conflicts() {
    let dir = TempDir::new("dist-compact-occ");
    let (store, ds) = dataset(&dir, false);
    let plan = plan_compaction(&ds, &options()).unwrap();
    let results: Vec<RewriteResult> = plan
        .tasks
        .iter()
        .map(|t| t.execute(&store).unwrap())
        .collect();
    ds.append(&[batch(100..103)], &params(false)).unwrap();
    let (after, _) = commit_compaction(
        &store,
        plan.read_version,
        &results,
        &CommitParams::default(),
    )
    .unwrap();
    assert_eq!(after.version(), ds.version() + 2);
    let mut want: Vec<i64> = (0..20)
        .chain(24..60)
        .chain(61..65)
        .chain(100..103)
        .collect();
    want.sort_unstable();
    assert_eq!(all_ids(&after), want);
    assert_eq!(after.fragments().len(), 3);

    // again: a plan, then a delete of a row in a planned fragment
    let dir2 = TempDir::new("dist-compact-occ2");
    let (store2, ds2) = dataset(&dir2, false);
    let plan = plan_compaction(&ds2, &options()).unwrap();
    let results: Vec<RewriteResult> = plan
        .tasks
        .iter()
        .map(|t| t.execute(&store2).unwrap())
        .collect();
    let deleted = ds2.delete("id = 12").unwrap();
    let err = commit_compaction(
        &store2,
        plan.read_version,
        &results,
        &CommitParams::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("conflict")
            && err.contains("fragment 1 (rewrite result 0) changed or removed since")
            && err.contains("plan the compaction again"),
        "{err}"
    );
    let latest = Dataset::open_in(store2, None).unwrap();
    assert_eq!(latest.version(), deleted.version());
    assert!(!all_ids(&latest).contains(&12));
    assert_eq!(all_ids(&latest).len(), 65 - 5 - 1);
}

/// With stable row ids, the rows keep their ids through a distributed compaction, as
/// through a local one.
#[test]
fn stable_row_ids_are_kept() {
    let dir = TempDir::new("dist-compact-stable");
    let (store, ds) = dataset(&dir, true);
    let rowids = |d: &Dataset| -> Vec<(i64, u64)> {
        let b = d
            .scan()
            .columns(&["id"])
            .with_row_id(true)
            .to_batch()
            .unwrap();
        let id = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let rid = b
            .column_by_name("_rowid")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::UInt64Array>()
            .unwrap();
        let mut v: Vec<(i64, u64)> = (0..b.num_rows())
            .map(|i| (id.value(i), rid.value(i)))
            .collect();
        v.sort_unstable();
        v
    };
    let before = rowids(&ds);
    assert_eq!(before.len(), 60);
    assert_eq!(before[0], (0, 0));
    assert_eq!(before[20], (24, 24));
    let plan = plan_compaction(&ds, &options()).unwrap();
    let results: Vec<RewriteResult> = plan
        .tasks
        .iter()
        .map(|t| via_json_result(&t.execute(&store).unwrap()))
        .collect();
    assert!(results
        .iter()
        .flat_map(|r| &r.new_fragments)
        .all(|f| f.row_id_sequence.is_some()));
    let (after, _) = commit_compaction(
        &store,
        plan.read_version,
        &results,
        &CommitParams::default(),
    )
    .unwrap();
    assert_eq!(after.fragments().len(), 2);
    assert_eq!(rowids(&after), before);
}

/// An index covering the compacted fragments covers the new ones after the commit, as
/// after a local compaction, and answers filters right.
#[test]
fn indexes_cover_the_new_fragments() {
    let dir = TempDir::new("dist-compact-index");
    let (store, ds) = dataset(&dir, false);
    let opts = lancer::index::ScalarIndexOptions::new(lancer_index::scalar::ScalarKind::BTree);
    let ds = lancer::index::create_scalar_index(&ds, "id", &opts, None).unwrap();
    let plan = plan_compaction(&ds, &options()).unwrap();
    assert_eq!(plan.num_tasks(), 2);
    let results: Vec<RewriteResult> = plan
        .tasks
        .iter()
        .map(|t| t.execute(&store).unwrap())
        .collect();
    let (after, _) = commit_compaction(
        &store,
        plan.read_version,
        &results,
        &CommitParams::default(),
    )
    .unwrap();
    let new_ids: Vec<u64> = after.fragments().iter().map(|f| f.id).collect();
    assert_eq!(new_ids, [5, 6]);
    let mut covered = roaring::RoaringBitmap::new();
    for m in after.indices().unwrap() {
        covered |= roaring::RoaringBitmap::deserialize_from(m.fragment_bitmap.as_slice()).unwrap();
    }
    assert!(covered.contains(5) && covered.contains(6), "{covered:?}");
    for (filter, want) in [
        ("id = 30", vec![30i64]),
        ("id = 21", vec![]),
        ("id >= 58", vec![58, 59, 61, 62, 63, 64]),
    ] {
        let b = after
            .scan()
            .columns(&["id"])
            .filter(filter)
            .to_batch()
            .unwrap();
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let mut got = a.values().to_vec();
        got.sort_unstable();
        assert_eq!(got, want, "{filter}");
    }
}
