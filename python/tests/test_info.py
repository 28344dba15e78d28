"""What a dataset says about itself (issue 41), each call made through pylance 14 and
through lancer on the same data, written by either: fragment_ids, get_version, slice,
max_field_id, Tags.list_ordered, io_stats_snapshot / io_stats_incremental, all_files /
tracked_files, validate (on a good and on damaged datasets), truncate_table,
LanceDataset.drop, get_ivf_model / centroids, prewarm_index, and pylance's typing names."""

import importlib
import os
import typing

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer

LIBS = {"pylance": lance, "lancer": lancer}


def table(n=10):
    return pa.table({"x": pa.array(range(n), pa.int64()), "y": [f"v{i}" for i in range(n)]})


def history(lib, path):
    """Three versions: a write in three fragments, an append, a delete."""
    lib.write_dataset(table(), path, max_rows_per_file=4)
    ds = lib.write_dataset(table(3), path, mode="append")
    ds.delete("x = 5")
    return lib.dataset(path)


@pytest.fixture(params=["pylance", "lancer"])
def written(request, tmp_path):
    """A dataset with history written by one library; opened by each."""
    path = str(tmp_path / "ds")
    history(LIBS[request.param], path)
    return path


def both(path):
    return lance.dataset(path), lancer.dataset(path)


def test_fragment_ids_get_version_slice_and_max_field_id(written):
    theirs, ours = both(written)
    assert list(ours.fragment_ids()) == list(theirs.fragment_ids())
    assert set(ours.fragment_ids()) == set(theirs.fragment_ids())
    assert repr(ours.fragment_ids()) == repr(theirs.fragment_ids())
    assert len(ours.fragment_ids()) == len(theirs.fragment_ids())
    g_theirs, g_ours = theirs.get_version(), ours.get_version()
    assert g_ours == g_theirs
    assert type(g_ours["timestamp"]) is type(g_theirs["timestamp"])
    for v in (1, 2):
        assert lancer.dataset(written, version=v).get_version() == lance.dataset(written, version=v).get_version()
    for start, end in [(3, 7), (0, 0), (10, 100), (0, 12)]:
        assert ours.slice(start, end).equals(theirs.slice(start, end))
    assert ours.slice(1, 4, columns=["y"]).equals(theirs.slice(1, 4, columns=["y"]))
    for start, end in [(-1, 2), (5, 2)]:
        with pytest.raises(ValueError) as e_ours:
            ours.slice(start, end)
        with pytest.raises(ValueError) as e_theirs:
            theirs.slice(start, end)
        assert str(e_ours.value) == str(e_theirs.value)
    assert ours.max_field_id == theirs.max_field_id == 1


def test_max_field_id_after_adding_and_dropping_columns(tmp_path):
    for name, lib in LIBS.items():
        path = str(tmp_path / name)
        lib.write_dataset(table(), path)
        ds = lib.dataset(path)
        ds.add_columns({"z": "x * 2", "w": "x + 1"})
        assert lancer.dataset(path).max_field_id == lance.dataset(path).max_field_id == 3
        ds.drop_columns(["z"])
        # what pylance's manifest says once the column is gone
        assert lancer.dataset(path).max_field_id == lance.dataset(path).max_field_id


def test_tags_list_ordered(written):
    lance.dataset(written).tags.create("b", 1)
    lancer.dataset(written).tags.create("a", 2)
    lance.dataset(written).tags.create("c", 1)
    theirs, ours = both(written)
    for order in (None, "asc", "desc"):
        got = ours.tags.list_ordered(order)
        want = theirs.tags.list_ordered(order)
        assert [(n, t["version"]) for n, t in got] == [(n, t["version"]) for n, t in want]
        assert all(isinstance(p, tuple) for p in got)
    with pytest.raises(ValueError) as e_ours:
        ours.tags.list_ordered("sideways")
    with pytest.raises(ValueError) as e_theirs:
        theirs.tags.list_ordered("sideways")
    assert str(e_ours.value) == str(e_theirs.value)


@pytest.mark.parametrize("name", ["pylance", "lancer"])
def test_io_stats_snapshot_and_incremental(name):
    """memory:// datasets: every read is a request in both (on local disk lancer maps
    data files and counts only the metadata requests)."""
    lib = LIBS[name]
    ds = lib.write_dataset(table(), f"memory://io-{name}", max_rows_per_file=4)
    first = ds.io_stats_snapshot()
    assert first.write_iops > 0 and first.written_bytes > 0
    counts = lambda s: (s.read_iops, s.read_bytes, s.write_iops, s.written_bytes)  # noqa: E731
    assert counts(ds.io_stats_snapshot()) == counts(first)  # no reset
    ds.io_stats_incremental()
    quiet = ds.io_stats_incremental()
    assert (quiet.read_iops, quiet.read_bytes, quiet.write_iops, quiet.written_bytes) == (0, 0, 0, 0)
    assert ds.to_table().num_rows == 10
    read = ds.io_stats_incremental()
    assert read.read_iops > 0 and read.read_bytes > 0 and read.write_iops == 0
    again = ds.io_stats_incremental()
    assert (again.read_iops, again.read_bytes) == (0, 0)
    # a snapshot counts since the last incremental call and resets nothing
    assert counts(ds.io_stats_snapshot()) == (0, 0, 0, 0)
    ds.delete("x = 1")
    snap = ds.io_stats_snapshot()
    assert snap.write_iops > 0 and snap.written_bytes > 0
    assert counts(ds.io_stats_snapshot()) == counts(snap)
    assert counts(ds.io_stats_incremental()) == counts(snap)
    assert repr(snap).startswith("IOStats(read_iops=")


def test_io_stats_shape_matches_pylance(tmp_path):
    theirs = lance.write_dataset(table(), f"memory://shape-a").io_stats_snapshot()
    ours = lancer.write_dataset(table(), f"memory://shape-b").io_stats_snapshot()
    for attr in ("read_iops", "read_bytes", "write_iops", "written_bytes"):
        assert type(getattr(ours, attr)) is type(getattr(theirs, attr)) is int


def test_all_files_and_tracked_files(written):
    lancer.dataset(written).create_scalar_index("x", "BTREE")
    lance.dataset(written).tags.create("t", 1)
    theirs, ours = both(written)
    a_theirs, a_ours = theirs.all_files().read_all(), ours.all_files().read_all()
    assert a_ours.schema.equals(a_theirs.schema)
    key = lambda t: sorted(zip(t["path"].to_pylist(), t["size_bytes"].to_pylist()))  # noqa: E731
    assert key(a_ours) == key(a_theirs)
    assert set(a_ours["base_uri"].to_pylist()) == set(a_theirs["base_uri"].to_pylist())
    when = dict(zip(a_theirs["path"].to_pylist(), a_theirs["last_modified"].to_pylist()))
    for p, t in zip(a_ours["path"].to_pylist(), a_ours["last_modified"].to_pylist()):
        assert abs((t - when[p]).total_seconds()) < 0.002
    for min_version in (None, 2, 4):
        t_theirs = theirs.tracked_files(min_version=min_version).read_all()
        t_ours = ours.tracked_files(min_version=min_version).read_all()
        assert t_ours.schema.equals(t_theirs.schema)
        rows = lambda t: sorted(zip(t["version"].to_pylist(), t["path"].to_pylist(),  # noqa: E731
                                    [str(x) for x in t["type"].to_pylist()]))
        assert rows(t_ours) == rows(t_theirs)
        assert set(t_ours["base_uri"].to_pylist()) == set(t_theirs["base_uri"].to_pylist())
    calls = []
    ours.tracked_files(progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i + 1, 4) for i in range(4)]


def test_validate_good_and_damaged(tmp_path, written):
    theirs, ours = both(written)
    assert theirs.validate() is None and ours.validate() is None
    data = sorted(os.listdir(os.path.join(written, "data")))
    # a data file gone
    os.remove(os.path.join(written, "data", data[0]))
    for ds in both(written):
        with pytest.raises(OSError):
            ds.validate()
    with pytest.raises(lancer.CorruptDataError, match="not found"):
        lancer.dataset(written).validate()


def test_validate_garbage_file(tmp_path):
    for name, lib in LIBS.items():
        path = str(tmp_path / name)
        lib.write_dataset(table(), path, max_rows_per_file=4)
        victim = sorted(os.listdir(os.path.join(path, "data")))[0]
        with open(os.path.join(path, "data", victim), "wb") as f:
            f.write(b"garbage" * 10)
        for ds in both(path):
            with pytest.raises(OSError):
                ds.validate()


def test_truncate_table(tmp_path):
    out = {}
    for name, lib in LIBS.items():
        path = str(tmp_path / name)
        lib.write_dataset(table(), path, max_rows_per_file=4)
        ds = lib.dataset(path)
        ds.create_scalar_index("x", "BTREE")
        assert ds.truncate_table() is None
        after = lance.dataset(path)
        op = after.read_transaction(after.version).operation
        ds.insert(pa.table({"x": pa.array([1], pa.int64()), "y": ["n"]}))
        out[name] = (ds.version, ds.count_rows(), type(op).__name__, sorted(op.deleted_fragment_ids),
                     op.predicate, after.schema, [i.name for i in after.describe_indices()],
                     lancer.dataset(path).fragment_ids() == lance.dataset(path).fragment_ids(),
                     list(lance.dataset(path).fragment_ids()))
    assert out["lancer"] == out["pylance"]


def test_drop(tmp_path):
    for name, lib in LIBS.items():
        path = str(tmp_path / name)
        lib.write_dataset(table(), path)
        assert lancer.LanceDataset.drop(path) is None
        assert not os.path.exists(path)
        for drop in (lance.LanceDataset.drop, lancer.LanceDataset.drop):
            with pytest.raises(OSError):
                drop(path)
            drop(path, ignore_not_found=True)
    other = tmp_path / "not-a-dataset"
    (other / "data").mkdir(parents=True)
    (other / "data" / "x.lance").write_bytes(b"x")
    for drop in (lance.LanceDataset.drop, lancer.LanceDataset.drop):
        with pytest.raises(ValueError, match="(?i)refusing to drop"):
            drop(str(other))
    assert (other / "data" / "x.lance").exists()


@pytest.fixture(scope="module", params=["pylance", "lancer"])
def indexed(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ivf") / "ds")
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((600, 8)).astype("float32")
    t = pa.table({"id": pa.array(range(600), pa.int64()),
                  "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), 8)})
    lib = LIBS[request.param]
    lib.write_dataset(t, path, max_rows_per_file=250)
    ds = lib.dataset(path)
    ds.create_index("vec", "IVF_PQ", num_partitions=4, num_sub_vectors=2, metric="cosine")
    ds.create_scalar_index("id", "BTREE")
    return path


def test_ivf_model_and_centroids(indexed):
    theirs, ours = both(indexed)
    m_theirs, m_ours = theirs.get_ivf_model("vec_idx"), ours.get_ivf_model("vec_idx")
    assert type(m_ours.centroids) is type(m_theirs.centroids)
    assert m_ours.centroids.equals(m_theirs.centroids)
    assert m_ours.num_partitions == len(m_theirs.centroids)
    assert m_ours.distance_type == "cosine"
    assert ours.centroids(index_name="vec_idx").equals(theirs.centroids(index_name="vec_idx"))
    assert ours.centroids(column="vec").equals(theirs.centroids(column="vec"))
    cases = [(dict(), ValueError), (dict(column="id"), KeyError), (dict(column="nope"), KeyError),
             (dict(index_name="id_idx"), ValueError), (dict(index_name="nope"), ValueError)]
    for kw, kind in cases:
        for ds in (theirs, ours):
            with pytest.raises(kind):
                ds.centroids(**kw)
    for ds in (theirs, ours):
        with pytest.raises(ValueError):
            ds.get_ivf_model("id_idx")


def test_prewarm_index(indexed):
    theirs, ours = both(indexed)
    for name in ("vec_idx", "id_idx"):
        assert theirs.prewarm_index(name) is None
        assert ours.prewarm_index(name) is None
    for ds in (theirs, ours):
        with pytest.raises(RuntimeError):
            ds.prewarm_index("nope")
    with pytest.raises(NotImplementedError, match="index_segments"):
        ours.prewarm_index("vec_idx", index_segments=[])
    # the segments are in the session's cache: the searches that follow only hit it
    from lancer import _lancer

    entries, hits, misses = _lancer.index_cache_stats(ours._inner)
    assert entries == 2
    q = np.ones(8, dtype="float32")
    got = ours.to_table(nearest={"column": "vec", "q": q, "k": 5}, filter="id < 300", prefilter=True)
    want = theirs.to_table(nearest={"column": "vec", "q": q, "k": 5}, filter="id < 300", prefilter=True)
    assert got["id"].to_pylist() == want["id"].to_pylist()
    after = _lancer.index_cache_stats(ours._inner)
    assert after[0] == entries and after[2] == misses and after[1] > hits


def test_typing_names_have_pylances_shapes():
    # (lance.dataset / lancer.dataset are the functions: the modules by import path)
    lance_dataset = importlib.import_module("lance.dataset")
    lancer_dataset = importlib.import_module("lancer.dataset")
    for name in ("AlterColumn", "DeleteResult", "ExecuteResult", "UpdateResult", "IndexInformation",
                 "Tag", "Version", "DatasetStats"):
        theirs, ours = getattr(lance_dataset, name), getattr(lancer_dataset, name)
        assert list(typing.get_type_hints(ours)) == list(typing.get_type_hints(theirs)), name
        assert typing.is_typeddict(ours) == typing.is_typeddict(theirs), name
