"""``MergeInsertBuilder.execute_uncommitted`` / ``explain_plan`` / ``analyze_plan`` and
committing ``LanceOperation.Update`` (issue 61), each next to pylance 14 on copies of one
dataset (several fragments, deletions, two key columns)."""

import os
import re
import shutil

import pyarrow as pa
import pytest

import lance
import lancer


def base_table(n=300):
    return pa.table({
        "k1": pa.array([i % 50 for i in range(n)], pa.int64()),
        "k2": pa.array([f"g{i // 50}" for i in range(n)], pa.string()),
        "v": pa.array([float(i) for i in range(n)], pa.float64()),
        "s": pa.array([None if i % 7 == 0 else f"s{i}" for i in range(n)], pa.string()),
    })


@pytest.fixture(params=["2.0", "2.2"])
def pair(request, tmp_path):
    """Two copies of one pylance-written dataset: lancer's and pylance's."""
    path = str(tmp_path / "base.lance")
    t = base_table()
    lance.write_dataset(t.slice(0, 120), path, data_storage_version=request.param)
    lance.write_dataset(t.slice(120, 120), path, mode="append")
    lance.write_dataset(t.slice(240), path, mode="append")
    lance.dataset(path).delete("v > 100 AND v < 110")
    a, b = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    shutil.copytree(path, a)
    shutil.copytree(path, b)
    return a, b


def source():
    return pa.table({
        "k1": pa.array([3, 4, 49, 77, 78], pa.int64()),
        "k2": pa.array(["g0", "g2", "g5", "g9", "g9"], pa.string()),
        "v": pa.array([-1.0, -2.0, -3.0, -4.0, -5.0], pa.float64()),
        "s": pa.array(["new", None, "new", "ins", "ins"], pa.string()),
    })


def rows(path):
    return lance.dataset(path).to_table().sort_by([("k2", "ascending"), ("k1", "ascending")]).to_pylist()


def builders(ds):
    m = ds.merge_insert(["k1", "k2"])
    return {
        "upsert": m.when_matched_update_all().when_not_matched_insert_all(),
        "update_if": ds.merge_insert(["k1", "k2"]).when_matched_update_all("source.v < target.v"),
        "insert_only": ds.merge_insert(["k1", "k2"]).when_not_matched_insert_all(),
        "delete_matched": ds.merge_insert(["k1", "k2"]).when_matched_delete(),
        "replace_group": ds.merge_insert(["k1", "k2"]).when_matched_update_all().when_not_matched_insert_all()
        .when_not_matched_by_source_delete("k2 = 'g0'"),
    }


@pytest.mark.parametrize("kind", ["upsert", "update_if", "insert_only", "delete_matched", "replace_group"])
def test_execute_uncommitted_then_commit_is_the_merge_pylance_makes(pair, kind):
    a, b = pair
    ours_ds, theirs_ds = lancer.dataset(a), lance.dataset(b)
    txn, ours = builders(ours_ds)[kind].execute_uncommitted(source())
    t_txn, theirs = builders(theirs_ds)[kind].execute_uncommitted(source())
    assert ours == theirs
    # nothing is committed until the transaction is
    assert lancer.dataset(a).version == ours_ds.version
    assert txn.read_version == ours_ds.version == t_txn.read_version
    assert type(txn.operation).__name__ == type(t_txn.operation).__name__ == "Update"
    assert txn.operation.update_mode == t_txn.operation.update_mode
    done = lancer.LanceDataset.commit(a, txn)
    lance.LanceDataset.commit(b, t_txn)
    assert done.version == ours_ds.version + 1
    assert rows(a) == rows(b)
    # the committed transaction reads back as an Update, in pylance too
    assert type(lance.dataset(a).read_transaction(done.version).operation).__name__ == "Update"


def test_an_uncommitted_merge_is_rebased_over_a_later_append(pair):
    a, b = pair
    for lib, path in ((lancer, a), (lance, b)):
        ds = lib.dataset(path)
        txn, _ = ds.merge_insert(["k1", "k2"]).when_matched_update_all().when_not_matched_insert_all() \
            .execute_uncommitted(source())
        lib.write_dataset(base_table(10).set_column(1, "k2", pa.array(["late"] * 10)), path, mode="append")
        lib.LanceDataset.commit(path, txn)
    assert rows(a) == rows(b)
    assert lance.dataset(a).count_rows("k2 = 'late'") == 10


def test_a_transaction_naming_files_that_are_not_there_is_refused(pair):
    a, _ = pair
    ds = lancer.dataset(a)
    txn, _ = ds.merge_insert(["k1", "k2"]).when_not_matched_insert_all().execute_uncommitted(source())
    for f in txn.operation.new_fragments[0].files:
        os.remove(os.path.join(a, "data", f.path))
    with pytest.raises(OSError, match=r"\.lance"):
        lancer.LanceDataset.commit(a, txn)
    assert lancer.dataset(a).version == ds.version


def header(plan):
    return plan.splitlines()[0].strip()


@pytest.mark.parametrize("kind", ["upsert", "update_if", "insert_only", "delete_matched", "replace_group"])
def test_explain_plan_names_the_merge_as_pylance_does_and_writes_nothing(pair, kind):
    a, b = pair
    ours = builders(lancer.dataset(a))[kind].explain_plan(source().schema)
    theirs = builders(lance.dataset(b))[kind].explain_plan(source().schema)
    assert header(ours) == header(theirs)
    for op in ("HashJoinExec", "LanceRead: uri=", "StreamingTableExec"):
        assert op in ours and op in theirs, (op, ours)
    # the dataset's schema by default; verbose is accepted
    assert header(builders(lancer.dataset(a))[kind].explain_plan(verbose=True)) == header(ours)
    assert lancer.dataset(a).version == lance.dataset(b).version
    assert sorted(os.listdir(os.path.join(a, "data"))) == sorted(os.listdir(os.path.join(b, "data")))


def metric(plan, name):
    found = re.search(rf"\b{name}=(\d+)", plan)
    return None if found is None else int(found.group(1))


@pytest.mark.parametrize("kind", ["upsert", "delete_matched", "replace_group"])
def test_analyze_plan_reports_what_the_merge_did_without_committing(pair, kind):
    a, b = pair
    ours = builders(lancer.dataset(a))[kind].analyze_plan(source())
    theirs = builders(lance.dataset(b))[kind].analyze_plan(source())
    assert header(ours).split(", metrics=")[0].replace(re.search(r"elapsed=[^,]+, ", header(ours)).group(0), "") \
        == header(theirs).split(", metrics=")[0].replace(re.search(r"elapsed=[^,]+, ", header(theirs)).group(0), "")
    for name in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows", "num_files_written"):
        assert metric(ours, name) == metric(theirs, name), (name, ours, theirs)
    assert (metric(ours, "bytes_written") > 0) == (metric(ours, "num_files_written") > 0)
    assert lancer.dataset(a).version == lance.dataset(b).version  # not committed


def test_with_a_key_index_the_plan_says_so(pair):
    a, b = pair
    ds = lancer.dataset(a)
    ds.create_scalar_index("k1", "BTREE")
    ds.create_scalar_index("k2", "BITMAP")
    plan = ds.merge_insert(["k1", "k2"]).when_matched_update_all().explain_plan(source().schema)
    assert "ScalarIndexQuery" in plan and "k1_idx" in plan and "k2_idx" in plan, plan
    # pylance refuses to explain the indexed path; lancer's merge still answers as pylance's
    theirs = lance.dataset(b)
    theirs.create_scalar_index("k1", "BTREE")
    theirs.create_scalar_index("k2", "BITMAP")
    with pytest.raises(OSError):
        theirs.merge_insert(["k1", "k2"]).when_matched_update_all().explain_plan(source().schema)
    assert (ds.merge_insert(["k1", "k2"]).when_matched_update_all().execute(source())
            == theirs.merge_insert(["k1", "k2"]).when_matched_update_all().execute(source()))
    assert rows(a) == rows(b)


def project_table():
    return pa.table({
        "a": pa.array([1, 2, 3], pa.int64()),
        "b": pa.array(["x", None, "z"], pa.string()),
        "st": pa.array([{"p": 1, "q": "u"}, None, {"p": 3, "q": "w"}],
                       pa.struct([("p", pa.int32()), ("q", pa.string())])),
        "c": pa.array([1.5, 2.5, 3.5], pa.float64()),
    })


@pytest.mark.parametrize("names", [
    ["a", "c", "b"],                  # rename, swapping names (pylance's example)
    ["a", "b"],                       # drop the trailing columns
    ["a", "b", "nested"],             # a struct renamed, its children kept
])
def test_project_commits_renames_and_drops_as_pylance(tmp_path, names):
    """pylance's LanceSchema.from_pyarrow numbers fields in order, so a Project built
    from it keeps the dataset's fields by position: renames, and drops of the last ones."""
    flat = len(names) == 3 and names[2] != "nested"
    t = project_table().select(["a", "b", "c"]) if flat else project_table().select(["a", "b", "st", "c"])
    paths = {}
    for lib in (lancer, lance):
        path = str(tmp_path / f"{lib.__name__}.lance")
        lance.write_dataset(t, path, data_storage_version="2.1")
        ds = lib.dataset(path)
        kept = [ds.schema.field(i).with_name(n) for i, n in enumerate(names)]
        ls = lib.schema.LanceSchema.from_pyarrow(pa.schema(kept))
        lib.LanceDataset.commit(path, lib.LanceOperation.Project(ls), read_version=ds.version)
        paths[lib.__name__] = path
    ours, theirs = lance.dataset(paths["lancer"]), lance.dataset(paths["lance"])
    assert ours.schema == theirs.schema and ours.schema.names == names
    assert ours.to_table() == theirs.to_table()
    assert lancer.dataset(paths["lancer"]).to_table() == theirs.to_table()
    assert type(ours.read_transaction(ours.version).operation).__name__ == "Project"


def test_a_projection_that_alters_is_refused(tmp_path):
    path = str(tmp_path / "p.lance")
    lancer.write_dataset(project_table(), path)
    ds = lancer.dataset(path)
    # field 0 as a string: a type change
    bad = lancer.schema.LanceSchema.from_pyarrow(pa.schema([pa.field("a", pa.string())]))
    with pytest.raises(ValueError, match="cannot change a field's type"):
        lancer.LanceDataset.commit(path, lancer.LanceOperation.Project(bad), read_version=ds.version)
    # ids the dataset does not have
    wide = pa.schema(list(project_table().schema) + [pa.field("extra", pa.int64())])
    with pytest.raises(ValueError, match="no field with id"):
        lancer.LanceDataset.commit(path, lancer.LanceOperation.Project(lancer.schema.LanceSchema.from_pyarrow(wide)),
                                   read_version=ds.version)
    with pytest.raises(NotImplementedError, match="preserves_nullability"):
        lancer.LanceDataset.commit(path, lancer.LanceOperation.Project(
            lancer.schema.LanceSchema.from_pyarrow(pa.schema([pa.field("a", pa.int64())])), True),
            read_version=ds.version)
    assert lancer.dataset(path).version == ds.version
