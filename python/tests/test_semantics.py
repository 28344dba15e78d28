"""Arguments that change a call's answer are honoured as pylance 14 honours them, or
refused with NotImplementedError naming them — never accepted and ignored (issue 41):
order_by, nearest without k, a quoted full-text query, batch_size, and the scanner
arguments Lancer cannot honour yet."""

import numpy as np
import pyarrow as pa
import pytest
from lance.dataset import ColumnOrdering as PylanceOrdering

import lance
import lancer

from test_api import make_table


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sem") / "d.lance")
    ds = lance.write_dataset(make_table(3000), path, max_rows_per_file=700)
    ds.delete("id % 13 = 5")
    return path


def keys(t, cols):
    return [t[c].to_pylist() for c in cols]


ORDERS = [
    (["category"], {}),
    ([PylanceOrdering("maybe", ascending=False, nulls_first=True), "id"], {}),
    ([PylanceOrdering("maybe", nulls_first=False)], {"limit": 40, "offset": 10}),
    (["category", PylanceOrdering("price", ascending=False)], {"filter": "price > 50", "limit": 25}),
]


@pytest.mark.parametrize("order_by,kw", ORDERS)
def test_order_by_sorts_like_pylance(uri, order_by, kw):
    pl, ln = lance.dataset(uri), lancer.dataset(uri)
    a = pl.to_table(order_by=order_by, **kw)
    mine = [lancer.ColumnOrdering(o.column_name, o.ascending, o.nulls_first)
            if isinstance(o, PylanceOrdering) else o for o in order_by]
    b = ln.to_table(order_by=mine, **kw)
    cols = [o if isinstance(o, str) else o.column_name for o in order_by]
    # the sort keys in the same sequence (ties may come in any order in pylance; Lancer
    # keeps the scan's order among ties)
    assert keys(a, cols) == keys(b, cols)
    if "limit" not in kw:
        assert a.sort_by("id").equals(b.sort_by("id"))
    # a sort that is ignored would fail this: the keys are really ordered
    assert b.num_rows > 1


def test_nearest_k_defaults_to_limit(uri):
    t = make_table(3000)
    q = t["vec"][8].values.to_numpy()
    for lib in (lance, lancer):
        got = lib.dataset(uri).to_table(nearest={"column": "vec", "q": q}, limit=12)
        assert got.num_rows == 12, lib.__name__


def test_quoted_full_text_query_is_a_phrase(tmp_path):
    path = str(tmp_path / "fts.lance")
    table = pa.table({"id": [1, 2, 3], "t": ["red puppy kitten", "kitten red puppy", "puppy"]})
    for lib in (lance, lancer):
        p = f"{path}-{lib.__name__}"
        lance.write_dataset(table, p)
        lib.dataset(p).create_scalar_index("t", "INVERTED", with_position=True)
        ds = lib.dataset(p)
        assert sorted(ds.to_table(full_text_query='"puppy kitten"')["id"].to_pylist()) == [1]
        assert sorted(ds.to_table(full_text_query="puppy kitten")["id"].to_pylist()) == [1, 2, 3]


def test_batch_size_is_honoured(uri):
    for lib in (lance, lancer):
        sizes = [b.num_rows for b in lib.dataset(uri).to_batches(batch_size=12)]
        assert max(sizes) == 12 and sum(sizes) == lib.dataset(uri).count_rows()


def test_scan_stats_callback_reports_each_scan_once(uri, tmp_path):
    """Called once per scan, after its last row (to_table, to_batches exhausted), never
    for count_rows, with pylance's fields; lancer's numbers are its own session's (a
    memory:// dataset counts every read)."""
    calls = {}
    for lib in (lance, lancer):
        got = []
        ds = lib.dataset(uri)
        ds.scanner(filter="id > 5", scan_stats_callback=got.append).to_table()
        n_table = len(got)
        batches = ds.scanner(scan_stats_callback=got.append).to_batches()
        before = len(got)
        list(batches)
        ds.scanner(filter="id > 5", scan_stats_callback=got.append).count_rows()
        calls[lib.__name__] = (n_table, before - n_table, len(got) - n_table)
        fields = {f for f in dir(got[0]) if not f.startswith("_")}
        assert {"iops", "requests", "bytes_read", "indices_loaded", "parts_loaded", "index_comparisons",
                "index_cache_hits", "index_cache_misses", "all_counts", "all_times"} <= fields
    assert calls["lancer"] == calls["lance"]
    mem = "memory://stats-" + str(abs(hash(str(tmp_path))))
    ds = lancer.write_dataset(lancer.dataset(uri).to_table(), mem)
    got = []
    ds.scanner(scan_stats_callback=got.append).to_table()
    assert got[0].bytes_read > 0 and got[0].requests > 0
    assert got[0].all_counts["rows_scanned"] == ds.count_rows()
    with pytest.raises(TypeError):
        ds.scanner(scan_stats_callback="print")


@pytest.fixture
def searchable(tmp_path):
    """100 indexed rows (BTREE on id, INVERTED on s, IVF_FLAT on v), then 100 appended
    rows no index covers, then every tenth row deleted."""
    import numpy as np

    rng = np.random.default_rng(7)

    def part(lo):
        n = 100
        return pa.table({"id": pa.array(np.arange(lo, lo + n)),
                         "s": pa.array([f"w{i % 5} q" for i in range(n)]),
                         "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8).astype("float32")), 8)})

    path = str(tmp_path / "searchable")
    ds = lance.write_dataset(part(0), path, max_rows_per_file=40)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("s", "INVERTED")
    ds.create_index("v", "IVF_FLAT", num_partitions=2)
    lance.write_dataset(part(100), path, mode="append", max_rows_per_file=40)
    lance.dataset(path).delete("id % 10 = 3")
    return path, rng.random(8).astype("float32")


def _outcome(call):
    try:
        r = call()
    except Exception as e:  # noqa: BLE001 - the kind is the answer
        return ("error", e)
    if isinstance(r, pa.Table):
        return ("table", r.column_names, r.to_pydict())
    return ("value", r)


def _same(got, want):
    """Equal results, or errors where lancer's is of pylance's built-in kind."""
    if want[0] == "error" and got[0] == "error":
        kinds = (KeyError, TypeError, NotImplementedError, ValueError, OSError)
        kind = next((k for k in kinds if isinstance(want[1], k)), type(want[1]))
        return isinstance(got[1], kind)
    return got == want


def test_fast_search_include_deleted_rows_and_strict_batch_size_match_pylance(searchable):
    path, q = searchable
    calls = [
        ("fast filter on an indexed column", lambda ds: ds.to_table(filter="id > 50", fast_search=True, columns=["id"])),
        ("fast filter on a column without index", lambda ds: ds.to_table(filter="s = 'w1 q'", fast_search=True,
                                                                          columns=["id"])),
        ("fast without filter", lambda ds: ds.count_rows(fast_search=True)),
        ("fast count", lambda ds: ds.scanner(filter="id > 50", fast_search=True).count_rows()),
        ("fast full text", lambda ds: sorted(ds.to_table(full_text_query="w1", fast_search=True)["id"].to_pylist())),
        ("fast vector", lambda ds: sorted(ds.to_table(nearest={"column": "v", "q": q, "k": 300}, fast_search=True,
                                                      columns=["id"])["id"].to_pylist())),
        ("deleted rows with a filter", lambda ds: ds.to_table(include_deleted_rows=True, with_row_id=True,
                                                              columns=["id"], filter="id < 25")),
        ("deleted rows with a limit", lambda ds: ds.to_table(include_deleted_rows=True, with_row_id=True,
                                                             columns=["id"], limit=5, offset=1)),
        ("deleted rows counted", lambda ds: ds.scanner(include_deleted_rows=True, with_row_id=True,
                                                       filter="id < 25").count_rows()),
        ("deleted rows without row ids", lambda ds: ds.to_table(include_deleted_rows=True, columns=["id"])),
        ("strict 7", lambda ds: [b.num_rows for b in ds.to_batches(batch_size=7, strict_batch_size=True)]),
        ("strict 64 filtered", lambda ds: [b.num_rows for b in ds.to_batches(batch_size=64, strict_batch_size=True,
                                                                              filter="id % 3 = 0")]),
        ("strict rows", lambda ds: pa.Table.from_batches(list(ds.to_batches(
            batch_size=9, strict_batch_size=True, columns=["id"]))).to_pydict()),
        ("order_by nearest", lambda ds: ds.to_table(nearest={"column": "v", "q": q, "k": 7}, order_by=["id"],
                                                     columns=["id"])["id"].to_pylist()),
        ("order_by full text", lambda ds: ds.to_table(full_text_query="w2", order_by=[lance_ordering(ds, "id", False)],
                                                      columns=["id"], limit=6)["id"].to_pylist()),
    ]
    for label, call in calls:
        want = _outcome(lambda: call(lance.dataset(path)))
        got = _outcome(lambda: call(lancer.dataset(path)))
        assert _same(got, want), (label, got, want)


def lance_ordering(ds, column, ascending):
    mod = lancer if isinstance(ds, lancer.LanceDataset) else None
    if mod is not None:
        return lancer.ColumnOrdering(column, ascending)
    from lance.dataset import ColumnOrdering

    return ColumnOrdering(column, ascending)


@pytest.mark.parametrize("kwargs", [{"base_tokenizer": "nope"}, {"language": "Klingon"}])
def test_invalid_tokenizer_options_are_refused(tmp_path, kwargs):
    table = pa.table({"t": ["a b", "c"]})
    for lib in (lance, lancer):
        p = str(tmp_path / f"t-{lib.__name__}")
        lance.write_dataset(table, p)
        with pytest.raises(Exception):
            lib.dataset(p).create_scalar_index("t", "INVERTED", **kwargs)
    with pytest.raises(TypeError, match="nope"):
        lancer.dataset(p).create_scalar_index("t", "BTREE", nope=1)


@pytest.mark.parametrize("storage", ["2.1", "2.2"])
def test_empty_structs_written_as_pylance_writes_them(tmp_path, storage):
    """A struct without fields keeps its (valid) rows: Lancer writes pylance's placeholder
    column, so pylance reads Lancer's file as it reads its own, scans and takes included;
    a null one is refused as pylance refuses it."""
    table = pa.table({"id": [1, 2, 3], "e": pa.array([{}, {}, {}], pa.struct([]))})
    seen = {}
    for lib in (lance, lancer):
        p = str(tmp_path / f"e-{lib.__name__}")
        lib.write_dataset(table, p, data_storage_version=storage)
        for reader in (lance, lancer):
            ds = reader.dataset(p)
            seen[lib.__name__, reader.__name__] = (ds.to_table().to_pylist(), ds.take([2, 0]).to_pylist())
    want = (table.to_pylist(), [table.to_pylist()[2], table.to_pylist()[0]])
    assert all(v == want for v in seen.values()), seen
    bad = pa.table({"e": pa.array([{}, None], pa.struct([]))})
    for lib in (lance, lancer):
        with pytest.raises((OSError, ValueError)):
            lib.write_dataset(bad, str(tmp_path / f"bad-{lib.__name__}"), data_storage_version=storage)


def test_memory_uris_start_empty_at_each_open_as_pylance():
    """Each open of a memory:// URI is a store of its own (pylance gives every open
    a session of its own); a dataset object keeps its store across its versions."""
    t = pa.table({"a": [1, 2, 3]})
    seen = {}
    for mod in (lance, lancer):
        d1 = mod.write_dataset(t, "memory://same")
        d2 = mod.write_dataset(t, "memory://same")  # mode="create": a fresh store, not "exists"
        with pytest.raises(ValueError) as e:
            mod.dataset("memory://same")
        appended = mod.write_dataset(t, "memory://same", mode="append")
        d1.delete("a = 1")
        seen[mod.__name__] = (
            d1.count_rows(),
            d1.version,
            d2.version,
            appended.version,
            appended.count_rows(),
            isinstance(e.value, ValueError),
        )
    assert seen["lancer"] == seen["lance"], seen


def test_a_damaged_index_warns_as_a_python_warning(tmp_path):
    """The session's warnings reach Python as UserWarning; the rows stay right."""
    import shutil
    from pathlib import Path

    golden = Path(__file__).resolve().parents[2] / "tests/data/scalar-indexes/pylance-14/btree_int64_pages16"
    dst = tmp_path / "ds"
    shutil.copytree(golden, dst)
    want = lancer.dataset(str(golden)).to_table(filter="v = 7").num_rows
    (index_dir,) = list((dst / "_indices").iterdir())
    (index_dir / "page_lookup.lance").write_bytes(b"")
    with pytest.warns(UserWarning, match="scalar index skipped"):
        got = lancer.dataset(str(dst)).to_table(filter="v = 7").num_rows
    assert got == want


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("meta", [{"with_row_id": True}, {"with_row_address": True},
                                  {"with_row_id": True, "with_row_address": True}])
def test_searches_return_row_ids_and_addresses_as_pylance(tmp_path, stable, meta):
    """_rowid / _rowaddr after _distance / _score, as pylance, with stable row ids (ids
    differ from addresses after a compaction) and without."""
    n = 600
    rng = np.random.default_rng(3)
    words = ["alpha", "beta", "gamma", "delta"]
    t = pa.table({
        "id": np.arange(n),
        "text": [f"{words[i % 4]} {words[(i // 4) % 4]}" for i in range(n)],
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, dtype=np.float32)), 4),
    })
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri, max_rows_per_file=150, enable_stable_row_ids=stable)
    ds = lance.dataset(uri)
    ds.delete("id % 7 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=400)
    lance.dataset(uri).create_scalar_index("text", "INVERTED")
    calls = [
        {"nearest": {"column": "v", "q": [0.3, 0.1, 0.9, 0.5], "k": 7}, "columns": ["id"]},
        {"nearest": {"column": "v", "q": [0.3, 0.1, 0.9, 0.5], "k": 7}, "columns": ["id"],
         "filter": "id > 100", "prefilter": False},
        {"full_text_query": "gamma", "columns": ["id"], "limit": 1000},
    ]
    for call in calls:
        want = lance.dataset(uri).to_table(**call, **meta)
        got = lancer.dataset(uri).to_table(**call, **meta)
        assert got.schema.names == want.schema.names
        key = "_distance" if "nearest" in call else "_score"
        rows = lambda tb: sorted(zip(*(tb[c].to_pylist() for c in tb.schema.names if c != key)))  # noqa: E731
        assert rows(got) == rows(want), call


REFUSED_CALLS = [
    ("write_dataset", {"progress": object()}, TypeError),  # not a FragmentWriteProgress
    ("write_dataset", {"auto_cleanup_options": {"interval": 1}}, ValueError),  # older_than_seconds missing
    ("write_dataset", {"external_blob_mode": "copy"}, ValueError),
    ("write_dataset", {"no_such_argument": 1}, TypeError),
    ("dataset", {"session": object()}, TypeError),  # a lancer.Session is taken
    ("dataset", {"default_scan_options": {"batch_size": "3"}}, NotImplementedError),
    ("dataset", {"commit_lock": object()}, NotImplementedError),
    ("dataset", {"no_such_argument": 1}, TypeError),
    ("create_index", {"accelerator": "cuda"}, NotImplementedError),
    ("create_index", {"index_file_version": "Legacy"}, NotImplementedError),
    ("create_index", {"train": False}, NotImplementedError),
    ("create_index", {"target_partition_size": 10}, NotImplementedError),
    ("create_index", {"no_such_argument": 1}, TypeError),
    ("create_scalar_index", {"fragment_ids": [0]}, ValueError),  # BTREE: pylance's create_index_uncommitted
    ("create_scalar_index", {"train": False}, NotImplementedError),
    ("take", {"no_such_argument": 1}, TypeError),
    ("count_rows", {"filter": object()}, TypeError),
    ("to_table", {"filter": 3}, TypeError),
]


@pytest.mark.parametrize("call,kwargs,error", REFUSED_CALLS,
                         ids=[f"{c}-{next(iter(k))}" for c, k, _ in REFUSED_CALLS])
def test_arguments_lancer_does_not_act_on_are_refused_by_name(tmp_path, call, kwargs, error):
    """pylance's arguments that change what happens are honoured or refused naming them,
    never accepted and ignored; names pylance does not take are a TypeError."""
    import pyarrow.compute as pc

    t = pa.table({"id": list(range(8)),
                  "v": pa.FixedSizeListArray.from_arrays(pa.array([float(i) for i in range(32)], pa.float32()), 4)})
    uri = str(tmp_path / "ds")
    lancer.write_dataset(t, uri)
    kwargs = {k: (pc.field("id") > 3 if v == "expression" else v) for k, v in kwargs.items()}
    name = next(iter(kwargs))
    with pytest.raises(error, match=name if error is NotImplementedError and name != "filter" else None):
        if call == "write_dataset":
            lancer.write_dataset(t, uri, mode="overwrite", **kwargs)
        elif call == "dataset":
            lancer.dataset(uri, **kwargs)
        elif call == "create_index":
            lancer.dataset(uri).create_index("v", "IVF_FLAT", num_partitions=1, **kwargs)
        elif call == "create_scalar_index":
            lancer.dataset(uri).create_scalar_index("id", "BTREE", **kwargs)
        elif call == "take":
            lancer.dataset(uri).take([1], **kwargs)
        elif call == "count_rows":
            lancer.dataset(uri).count_rows(**kwargs)
        else:
            lancer.dataset(uri).to_table(**kwargs)


def test_tuning_arguments_are_accepted(tmp_path):
    t = pa.table({"id": list(range(8)),
                  "v": pa.FixedSizeListArray.from_arrays(pa.array([float(i) for i in range(32)], pa.float32()), 4)})
    uri = str(tmp_path / "ds")
    lancer.write_dataset(t, uri, max_rows_per_group=3, data_cache_bytes=1 << 20, max_page_bytes=1 << 20,
                         enable_v2_manifest_paths=True)
    ds = lancer.dataset(uri, block_size=4096, index_cache_size=8, index_cache_size_bytes=1 << 20, read_params={})
    ds.create_index("v", "IVF_FLAT", num_partitions=1, shuffle_partition_batches=4, filter_nan=True, train=True)
    ds.create_scalar_index("id", "BTREE", train=True)
    assert ds.count_rows("id > 3") == ds.count_rows(filter="id > 3", batch_readahead=2) == 4


def test_to_pandas_sample_and_checkout_latest_as_pylance(tmp_path):
    import random

    t = pa.table({"id": list(range(50)), "s": [str(i) for i in range(50)]})
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri)
    py, lan = lance.dataset(uri), lancer.dataset(uri)
    kw = {"columns": ["id"], "filter": "id > 40"}
    assert lan.to_pandas(**kw).equals(py.to_pandas(**kw))
    # the same draws from Python's random give the same rows
    for randomize in (True, False):
        random.seed(5)
        want = py.sample(7, columns=["id"], randomize_order=randomize)
        random.seed(5)
        got = lan.sample(7, columns=["id"], randomize_order=randomize)
        assert got.equals(want)
    for mod in (lance, lancer):
        with pytest.raises(ValueError):
            mod.dataset(uri).sample(51)
    old = lancer.dataset(uri)
    lance.write_dataset(t, uri, mode="append")
    old.checkout_latest()
    assert old.version == 2 and old.count_rows() == 100


def test_fragment_take_head_and_counts_as_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": list(range(30)), "s": [str(i) for i in range(30)]}), uri,
                        max_rows_per_file=10)
    lance.dataset(uri).delete("id in (0, 2, 11, 25)")
    for i in range(3):
        want = lance.dataset(uri).get_fragments()[i]
        got = lancer.dataset(uri).get_fragments()[i]
        assert got.take([0, 1, 3], columns=["id"]).equals(want.take([0, 1, 3], columns=["id"]))
        assert got.head(4).equals(want.head(4))
        assert got.count_rows("id % 2 = 1") == want.count_rows("id % 2 = 1")
        assert got.schema == want.schema
        assert got.to_pandas().equals(want.to_pandas())
        for f in (want, got):
            with pytest.raises(OSError):
                f.take([f.count_rows()])
