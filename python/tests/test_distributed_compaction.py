"""Distributed compaction (issue 43): ``lancer.optimize.Compaction.plan`` on a driver,
tasks pickled to worker processes which ``execute`` them, one ``Compaction.commit`` of
the results. The rows (and their order per fragment) equal a local compaction of a
copy; pylance 14 reads the same rows; pylance's own plan groups the same fragments;
partial commits keep the other fragments; a concurrent append lands, a concurrent
delete of a planned fragment is a conflict.
"""

import json
import multiprocessing
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lancer
from lancer.optimize import Compaction, CompactionPlan, CompactionTask, RewriteResult

REPO = Path(__file__).resolve().parents[2]
OPTIONS = {"target_rows_per_fragment": 20}


def pylance14():
    py = REPO / ".venv" / "pylance-14" / "bin" / "python"
    if not py.exists():
        if os.environ.get("LANCER_REQUIRE_PYLANCE"):
            raise AssertionError(f"{py} missing (scripts/test.sh installs it)")
        pytest.skip("pylance 14 venv not installed")
    return str(py)


def run14(code, *args):
    out = subprocess.run([pylance14(), "-c", code, *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(lo, hi):
    ids = list(range(lo, hi))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})


def make(path):
    """Fragments of 10, 10, 30, 5, 10 rows (ids 0..65); rows 20..23 (over 10% of
    fragment 2) and 60 deleted."""
    ds = lancer.write_dataset(table(0, 10), path)
    for lo, hi in [(10, 20), (20, 50), (50, 55), (55, 65)]:
        ds = lancer.write_dataset(table(lo, hi), path, mode="append")
    ds.delete("id >= 20 AND id < 24 OR id = 60")
    return lancer.dataset(path)


def per_fragment(ds):
    return [f.to_table(columns=["id"]).column("id").to_pylist() for f in ds.get_fragments()]


def _worker(args):
    """A worker process: unpickles the task, opens the dataset itself, executes."""
    uri, blob = args
    import lancer as lc

    task = pickle.loads(blob)
    return pickle.dumps(task.execute(lc.dataset(uri)))


def execute_in_processes(uri, plan):
    blobs = [(uri, pickle.dumps(t)) for t in plan.tasks]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        return [pickle.loads(b) for b in pool.map(_worker, blobs)]


WANT = [list(range(0, 20)), list(range(24, 60)) + list(range(61, 65))]


def test_plan_tasks_in_processes_one_commit(tmp_path):
    uri = str(tmp_path / "ds")
    ds = make(uri)
    shutil.copytree(uri, tmp_path / "copy")
    plan = Compaction.plan(ds, OPTIONS)
    assert plan.read_version == ds.version == 6
    assert plan.num_tasks() == 2
    assert [[f.id for f in t.fragments] for t in plan.tasks] == [[0, 1], [2, 3, 4]]
    assert all(t.read_version == 6 for t in plan.tasks)
    # the plan's JSON reads back
    again = CompactionPlan.from_json(plan.json())
    assert [[f.id for f in t.fragments] for t in again.tasks] == [[0, 1], [2, 3, 4]]
    assert json.loads(plan.json())["options"]["target_rows_per_fragment"] == 20

    results = execute_in_processes(uri, plan)
    assert lancer.dataset(uri).version == 6  # nothing committed by the workers
    assert [r.read_version for r in results] == [6, 6]
    assert [[f.id for f in r.original_fragments] for r in results] == [[0, 1], [2, 3, 4]]
    assert [[f.physical_rows for f in r.new_fragments] for r in results] == [[20], [40]]
    assert results[1].metrics.fragments_removed == 3
    assert results[1].metrics.files_removed == 5  # 3 data files, 2 deletion files
    # a result travels as pylance's JSON too
    assert RewriteResult.from_json(results[0].json()).new_fragments == results[0].new_fragments

    metrics = Compaction.commit(ds, results)
    assert (metrics.fragments_removed, metrics.fragments_added) == (5, 2)
    assert (metrics.files_removed, metrics.files_added) == (7, 2)
    assert ds.version == 7
    after = lancer.dataset(uri)
    assert per_fragment(after) == WANT

    local = lancer.dataset(str(tmp_path / "copy"))
    m = Compaction.execute(local, OPTIONS)  # plan + execute + commit in this process
    assert (m.fragments_removed, m.fragments_added) == (5, 2)
    assert per_fragment(lancer.dataset(str(tmp_path / "copy"))) == WANT

    got = run14("""
import json, sys, lance
ds = lance.dataset(sys.argv[1])
print(json.dumps([ds.version, [f.to_table(columns=["id"]).column("id").to_pylist()
                               for f in ds.get_fragments()]]))
""", uri)
    assert got == [7, WANT]


def test_pylance_plans_the_same_groups(tmp_path):
    uri = str(tmp_path / "ds")
    ds = make(uri)
    ours = [[f.id for f in t.fragments] for t in Compaction.plan(ds, OPTIONS).tasks]
    theirs = run14("""
import json, sys, lance
from lance.optimize import Compaction
ds = lance.dataset(sys.argv[1])
plan = Compaction.plan(ds, {"target_rows_per_fragment": 20})
print(json.dumps([[f.id for f in t.fragments] for t in plan.tasks]))
""", uri)
    assert ours == theirs == [[0, 1], [2, 3, 4]]
    # and with a larger target: one group of everything
    ours = [[f.id for f in t.fragments] for t in Compaction.plan(ds, {"target_rows_per_fragment": 1000}).tasks]
    theirs = run14("""
import json, sys, lance
from lance.optimize import Compaction
plan = Compaction.plan(lance.dataset(sys.argv[1]), {"target_rows_per_fragment": 1000})
print(json.dumps([[f.id for f in t.fragments] for t in plan.tasks]))
""", uri)
    assert ours == theirs == [[0, 1, 2, 3, 4]]


def test_partial_commit_keeps_other_fragments(tmp_path):
    uri = str(tmp_path / "ds")
    ds = make(uri)
    plan = Compaction.plan(ds, OPTIONS)
    second = pickle.loads(pickle.dumps(plan.tasks[1])).execute(lancer.dataset(uri))
    m = Compaction.commit(ds, [pickle.loads(pickle.dumps(second))])
    assert (m.fragments_removed, m.fragments_added) == (3, 1)
    after = lancer.dataset(uri)
    assert [f.fragment_id for f in after.get_fragments()] == [0, 1, 5]
    assert per_fragment(after) == [list(range(10)), list(range(10, 20)), WANT[1]]
    assert after.count_rows() == 60


def test_concurrent_append_lands(tmp_path):
    uri = str(tmp_path / "ds")
    ds = make(uri)
    plan = Compaction.plan(ds, OPTIONS)
    results = [t.execute(ds) for t in plan.tasks]
    lancer.write_dataset(table(100, 103), uri, mode="append")
    Compaction.commit(ds, results)
    after = lancer.dataset(uri)
    assert after.version == 8
    # the appended fragment (id 5) stays; the rewritten ones come after it
    assert per_fragment(after) == [[100, 101, 102]] + WANT
    assert sorted(after.to_table().column("id").to_pylist()) == sorted(WANT[0] + WANT[1] + [100, 101, 102])


def test_concurrent_delete_conflicts(tmp_path):
    uri = str(tmp_path / "ds")
    ds = make(uri)
    plan = Compaction.plan(ds, OPTIONS)
    results = [t.execute(ds) for t in plan.tasks]
    other = lancer.dataset(uri)
    other.delete("id = 12")
    with pytest.raises(Exception, match="(?i)conflict|incompatible") as e:
        Compaction.commit(ds, results)
    assert "fragment 1 (rewrite result 0) changed or removed since" in str(e.value)
    assert "plan the compaction again" in str(e.value)
    after = lancer.dataset(uri)
    assert after.version == 7
    assert after.count_rows() == 59
    assert 12 not in after.to_table().column("id").to_pylist()


def test_bad_input_is_refused_by_name(tmp_path):
    uri = str(tmp_path / "ds")
    ds = make(uri)
    with pytest.raises(ValueError, match="unknown compaction options: bogus"):
        Compaction.plan(ds, {"bogus": 1})
    with pytest.raises(NotImplementedError, match="defer_index_remap"):
        Compaction.plan(ds, {"defer_index_remap": True})
    plan = Compaction.plan(ds, dict(OPTIONS, num_threads=1, batch_size=8))
    assert plan.num_tasks() == 2
    r = plan.tasks[0].execute(ds)
    d = json.loads(r.json())
    d["new_fragments"][0]["physical_rows"] = 19
    with pytest.raises(Exception, match="hold 19 rows.*20 live rows"):
        Compaction.commit(ds, [RewriteResult.from_json(json.dumps(d))])
    with pytest.raises(Exception, match="not JSON"):
        lancer._lancer.compaction_task_execute(ds._inner, "{nope")
    with pytest.raises(TypeError, match="RewriteResult objects"):
        Compaction.commit(ds, [r.json()])
    assert lancer.dataset(uri).version == 6
    assert Compaction.commit(ds, []).fragments_removed == 0
    assert lancer.dataset(uri).version == 6


def test_stable_row_ids_and_index_carry_over(tmp_path):
    """With stable row ids every row keeps its id; a BTREE index covering the rewritten
    fragments covers the new ones; pylance 14 reads the same ids."""
    uri = str(tmp_path / "ds")
    ds = lancer.write_dataset(table(0, 10), uri, enable_stable_row_ids=True)
    for lo, hi in [(10, 20), (20, 50), (50, 55), (55, 65)]:
        lancer.write_dataset(table(lo, hi), uri, mode="append")
    ds = lancer.dataset(uri)
    ds.delete("id >= 20 AND id < 24 OR id = 60")
    ds.create_scalar_index("id", "BTREE")

    def pairs(d):
        t = d.to_table(columns=["id"], with_row_id=True)
        return sorted(zip(t.column("id").to_pylist(), t.column("_rowid").to_pylist()))

    before = pairs(lancer.dataset(uri))
    assert len(before) == 60 and before[20] == (24, 24)
    ds = lancer.dataset(uri)
    plan = Compaction.plan(ds, OPTIONS)
    results = execute_in_processes(uri, plan)
    Compaction.commit(ds, results)
    after = lancer.dataset(uri)
    assert per_fragment(after) == WANT
    assert pairs(after) == before
    assert after.to_table(filter="id = 30").column("id").to_pylist() == [30]
    assert after.to_table(filter="id = 21").num_rows == 0
    theirs = run14("""
import json, sys, lance
ds = lance.dataset(sys.argv[1])
t = ds.to_table(columns=["id"], with_row_id=True, filter="id >= 0")
print(json.dumps(sorted(zip(t["id"].to_pylist(), t["_rowid"].to_pylist()))))
""", uri)
    assert [tuple(p) for p in theirs] == before


def test_plans_and_results_cross_with_pylance(tmp_path):
    """pylance 14's plan JSON runs on lancer workers and a lancer driver commits it;
    lancer's results JSON is committed by a pylance 14 driver (its commit takes two
    versions: reserve fragments, rewrite)."""
    uri = str(tmp_path / "a")
    ds = make(uri)
    text = run14("""
import json, sys, lance
from lance.optimize import Compaction
print(json.dumps(Compaction.plan(lance.dataset(sys.argv[1]), {"target_rows_per_fragment": 20}).json()))
""", uri)
    plan = CompactionPlan.from_json(text)
    assert [[f.id for f in t.fragments] for t in plan.tasks] == [[0, 1], [2, 3, 4]]
    m = Compaction.commit(ds, [t.execute(ds) for t in plan.tasks])
    assert (m.fragments_removed, m.fragments_added) == (5, 2)
    assert per_fragment(lancer.dataset(uri)) == WANT

    uri = str(tmp_path / "b")
    ds = make(uri)
    results = [t.execute(ds).json() for t in Compaction.plan(ds, OPTIONS).tasks]
    got = run14("""
import json, sys, lance
from lance.optimize import Compaction, RewriteResult
ds = lance.dataset(sys.argv[1])
m = Compaction.commit(ds, [RewriteResult.from_json(t) for t in json.loads(sys.argv[2])])
ds = lance.dataset(sys.argv[1])
print(json.dumps([m.fragments_removed, ds.version,
                  [f.to_table(columns=["id"])["id"].to_pylist() for f in ds.get_fragments()]]))
""", uri, json.dumps(results))
    assert got == [5, 8, WANT]
    assert per_fragment(lancer.dataset(uri)) == WANT


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
