"""The pylance API, run twice: with ``import lance`` (pylance 14) and ``import lancer``,
on the same data — every call must give the same table (a drop-in check); datasets
written by either are read by the other."""

import datetime
import os
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance
import lancer

LIBS = {"lance": lance, "lancer": lancer}
DIM = 16


def make_table(n=5000, seed=7):
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIM)).astype("float32")
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype="int64")),
            "category": pa.array([f"c{i % 7}" for i in range(n)]),
            "price": pa.array(rng.uniform(0, 100, n)),
            "maybe": pa.array([None if i % 5 == 0 else i * 0.5 for i in range(n)], pa.float64()),
            "tags": pa.array([[f"t{i % 3}", f"t{i % 4}"] for i in range(n)], pa.list_(pa.string())),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM),
        }
    )


@pytest.fixture(scope="module")
def table():
    return make_table()


@pytest.fixture(params=["lance", "lancer"])
def writer(request):
    return request.param


@pytest.fixture
def written(tmp_path, table, writer):
    """A 5-fragment dataset written by `writer`, 2.1 files, with one delete."""
    uri = str(tmp_path / f"by_{writer}.lance")
    ds = LIBS[writer].write_dataset(table, uri, max_rows_per_file=1000, data_storage_version="2.1")
    ds.delete("id % 11 = 3")
    return uri


def both(uri):
    return lance.dataset(uri), lancer.dataset(uri)


def test_full_read_matches_input_and_pylance(written, table):
    a, b = both(written)
    assert b.version == a.version == 2
    assert b.schema == a.schema == table.schema
    ta, tb = a.to_table(), b.to_table()
    assert tb.equals(ta)
    keep = [i for i in range(table.num_rows) if i % 11 != 3]
    assert tb.equals(table.take(keep))
    assert b.count_rows() == a.count_rows() == len(keep)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(columns=["id", "price"]),
        dict(filter="price > 50 AND category = 'c3'"),
        dict(filter="maybe IS NULL", columns=["id"]),
        dict(columns=["id", "tags"], limit=17, offset=990),
        dict(filter="id >= 4000", limit=5),
        dict(columns=["id"], with_row_id=True),
        dict(columns=["id"], with_row_address=True, filter="id < 50"),
        dict(columns={"twice": "id * 2", "cat": "upper(category)"}, filter="price < 5"),
    ],
)
def test_to_table_matches_pylance(written, kwargs):
    a, b = both(written)
    ta = a.to_table(**kwargs)
    tb = b.to_table(**kwargs)
    assert tb.equals(ta), (kwargs, tb.slice(0, 3), ta.slice(0, 3))


def test_count_rows_filter(written):
    a, b = both(written)
    for f in [None, "category = 'c1'", "price < 10 OR maybe IS NULL", "id < 0"]:
        assert b.count_rows(f) == a.count_rows(f), f
        assert b.scanner(filter=f).count_rows() == a.scanner(filter=f).count_rows()


def test_streaming_batches(written):
    a, b = both(written)
    batches = list(b.to_batches(columns=["id", "vec"], batch_size=300))
    assert batches and all(x.num_rows <= 300 for x in batches)
    assert pa.Table.from_batches(batches).equals(a.to_table(columns=["id", "vec"]))
    reader = b.scanner(filter="category = 'c2'").to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().equals(a.to_table(filter="category = 'c2'"))


def test_take_matches_pylance(written):
    a, b = both(written)
    idx = [0, 4500, 17, 17, 999, 1000, 3]
    assert b.take(idx).equals(a.take(idx))
    assert b.take(np.array([5, 1]), columns=["id", "tags"]).equals(a.take([5, 1], columns=["id", "tags"]))
    rowids = a.to_table(columns=["id"], with_row_id=True, filter="id > 4990")["_rowid"].to_pylist()
    got = b.take_rows(rowids, columns=["id"])
    assert got["id"].to_pylist() == a.to_table(columns=["id"], filter="id > 4990")["id"].to_pylist()


def test_take_index_forms(written):
    """Every form pylance takes indices in gives the same rows: lists, NumPy arrays of
    each integer width (also strided), Arrow arrays; bad values are a ValueError."""
    a, b = both(written)
    want = a.take([9, 0, 4000, 9])
    forms = [
        [9, 0, 4000, 9],
        np.array([9, 0, 4000, 9], dtype=np.int64),
        np.array([9, 0, 4000, 9], dtype=np.uint32),
        np.array([9, 0, 4000, 9], dtype=np.int16),
        np.array([9, 99, 0, 99, 4000, 99, 9], dtype=np.int64)[::2],
        pa.array([9, 0, 4000, 9], type=pa.uint64()),
        pa.chunked_array([[9, 0], [4000, 9]]),
        (9, 0, 4000, 9),
    ]
    for f in forms:
        assert b.take(f).equals(want), f
    assert b.take(np.array([], dtype=np.int64)).num_rows == 0
    # arrays over 256 values cross as int64 bytes
    many = np.arange(4500, -1, -7)
    assert len(many) > 256
    pd = pytest.importorskip("pandas")
    for f in (many, many.astype(np.uint16), pa.array(many), many.tolist(), pd.Series(many)):
        assert b.take(f, columns=["id"]).equals(a.take(many, columns=["id"])), type(f)
    with pytest.raises(ValueError, match="-3"):
        b.take(np.concatenate([many, [-3]]))
    with pytest.raises(ValueError):  # two-dimensional: not a list of row numbers
        b.take(many[:300].reshape(100, 3))
    with pytest.raises(ValueError, match="18446744073709551615"):
        b.take(np.concatenate([many.astype(np.uint64), np.array([2**64 - 1], dtype=np.uint64)]))
    for bad, name in [([3, -1], "-1"), (np.array([2, -5]), "-5"), ([1, None], "None"),
                      ([1.5], "1.5"), (pa.array([1, None]), "None")]:
        with pytest.raises(ValueError, match=name):
            b.take(bad)
    with pytest.raises(ValueError, match="18446744073709551615"):
        b.take(np.array([2**64 - 1], dtype=np.uint64))
    rows = a.to_table(columns=["id"], with_row_id=True, filter="id < 3")["_rowid"]
    assert b.take_rows(rows, columns=["id"])["id"].to_pylist() == [0, 1, 2]
    assert b.take_rows(rows.to_numpy(), columns=["id"])["id"].to_pylist() == [0, 1, 2]


def test_commit_conflicts(tmp_path):
    """A writer that read a version before another writer's delete of the same fragment
    meets a CommitConflictError; the public delete re-reads and retries, so deletes
    racing from threads all land."""
    uri = str(tmp_path / "c.lance")
    lancer.write_dataset(pa.table({"id": pa.array(range(1000), pa.int64())}), uri)
    stale = lancer.dataset(uri)._inner
    lancer.dataset(uri).delete("id < 10")
    with pytest.raises(lancer.CommitConflictError, match="retry"):
        stale.delete("id >= 990")
    assert lance.dataset(uri).count_rows() == 990

    import threading
    errors = []

    def worker(k):
        try:
            ds = lancer.dataset(uri)
            for j in range(5):
                lo = 10 + (k * 5 + j) * 20
                ds.delete(f"id >= {lo} AND id < {lo + 20}")
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = lance.dataset(uri).to_table()["id"].to_pylist()
    assert got == list(range(410, 1000))


def test_fragments(written):
    a, b = both(written)
    fa, fb = a.get_fragments(), b.get_fragments()
    assert [f.fragment_id for f in fb] == [f.fragment_id for f in fa]
    assert [f.count_rows() for f in fb] == [f.count_rows() for f in fa]
    assert [f.physical_rows for f in fb] == [f.physical_rows for f in fa]
    assert [[d.path for d in f.data_files()] for f in fb] == [[d.path for d in f.data_files()] for f in fa]
    assert fb[2].to_table(columns=["id"]).equals(fa[2].to_table(columns=["id"]))
    assert fb[1].count_rows("category = 'c0'") == fa[1].count_rows("category = 'c0'")


def test_delete_versions_restore_tags(tmp_path, table, writer):
    """The same sequence of writes through each library leaves the same states."""
    states = {}
    for name, lib in LIBS.items():
        uri = str(tmp_path / f"{name}.lance")
        ds = lib.write_dataset(table.slice(0, 2000), uri, max_rows_per_file=700)
        ds = lib.write_dataset(table.slice(2000, 500), uri, mode="append")
        res = ds.delete("category = 'c4'")
        assert res["num_deleted_rows"] == 357, res
        assert ds.version == 3
        ds.tags.create("before-delete", 2)
        assert ds.tags.list()["before-delete"]["version"] == 2
        old = ds.checkout_version("before-delete")
        assert old.version == 2 and old.count_rows() == 2500
        old.restore()
        assert old.version == 4 and lib.dataset(uri).count_rows() == 2500
        assert [v["version"] for v in ds.versions()] == [1, 2, 3, 4]
        ds.tags.update("before-delete", 3)
        assert lib.dataset(uri, version="before-delete").count_rows() == 2143
        ds.tags.delete("before-delete")
        assert ds.tags.list() == {}
        states[name] = (lib.dataset(uri).to_table(), lib.dataset(uri, version=3).to_table())
    assert states["lancer"][0].equals(states["lance"][0])
    assert states["lancer"][1].equals(states["lance"][1])
    # and each library reads what the other wrote
    for name in LIBS:
        uri = str(tmp_path / f"{name}.lance")
        other = lancer if name == "lance" else lance
        assert other.dataset(uri).to_table().equals(states[name][0])


def test_cleanup_old_versions(tmp_path, table, writer):
    """The same removals as pylance's cleanup, step by step: files of removed versions
    go whatever their age (verified), files no version names stay while younger than a
    week unless delete_unverified."""
    lib = LIBS[writer]
    seen = {}
    for cleaner in (lance, lancer):
        uri = str(tmp_path / f"c-{cleaner.__name__}.lance")
        ds = lib.write_dataset(table.slice(0, 100), uri)
        for i in range(3):
            ds = lib.write_dataset(table.slice(100 * (i + 1), 100), uri, mode="overwrite")
        steps, sizes = [], []
        for kw in (dict(retain_versions=2), dict(retain_versions=2, delete_unverified=True),
                   dict(older_than=datetime.timedelta(0))):
            st = cleaner.dataset(uri).cleanup_old_versions(**kw)
            steps.append((st.old_versions, st.data_files_removed, st.transaction_files_removed,
                          st.index_files_removed, st.deletion_files_removed))
            sizes.append(st.bytes_removed)
            steps.append([v["version"] for v in lance.dataset(uri).versions()])
        assert lance.dataset(uri).to_table().equals(table.slice(300, 100))
        seen[cleaner.__name__] = (steps, sizes)
    assert seen["lancer"][0] == seen["lance"][0]
    assert seen["lancer"][0][0][:2] == (2, 2)
    # bytes within 1%: the two datasets' manifests differ by a few varint bytes
    for a, b in zip(seen["lancer"][1], seen["lance"][1]):
        assert abs(a - b) <= max(a, b) // 100


def test_nearest_exact_matches_pylance(written):
    a, b = both(written)
    q = np.random.default_rng(1).standard_normal(DIM).astype("float32")
    for kw in [
        dict(),
        dict(filter="category = 'c5'"),
        dict(filter="category = 'c5'", prefilter=True),
        dict(filter="price < 30", columns=["id", "price"], prefilter=True),
        dict(filter="price < 60", columns=["id", "price"], prefilter=False),
    ]:
        ta = a.to_table(nearest={"column": "vec", "q": q, "k": 9}, **kw)
        tb = b.to_table(nearest={"column": "vec", "q": q, "k": 9}, **kw)
        assert tb.column_names == ta.column_names, kw
        assert tb["id"].to_pylist() == ta["id"].to_pylist(), kw
        np.testing.assert_allclose(tb["_distance"].to_numpy(), ta["_distance"].to_numpy(), rtol=1e-4)


def test_indexes_built_by_lancer_used_by_pylance(tmp_path, table):
    uri = str(tmp_path / "idx.lance")
    lance.write_dataset(table, uri, max_rows_per_file=2500)
    ds = lancer.dataset(uri)
    ds.create_index("vec", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("category", "BITMAP")
    names = sorted(i["name"] for i in ds.list_indices())
    assert names == ["category_idx", "id_idx", "vec_idx"]
    pl = lance.dataset(uri)
    assert sorted(i["name"] for i in pl.list_indices()) == names
    q = table["vec"][42].values.to_numpy()
    ra = pl.to_table(nearest={"column": "vec", "q": q, "k": 5, "nprobes": 4}, columns=["id"])
    rb = ds.to_table(nearest={"column": "vec", "q": q, "k": 5, "nprobes": 4}, columns=["id"])
    assert ra["id"][0].as_py() == rb["id"][0].as_py() == 42
    assert ds.to_table(filter="id = 77")["id"].to_pylist() == pl.to_table(filter="id = 77")["id"].to_pylist() == [77]
    assert ds.count_rows("category = 'c6'") == pl.count_rows("category = 'c6'")


def test_index_defaults_are_pylances(tmp_path, table):
    """An IVF_RQ index without num_bits has pylance 14's default bits in both front ends
    (the CLI and Python share one parse: lancer::IndexSpec); a parameter that does not
    apply to the kind is refused, naming it."""
    bits = {}
    for lib, name in ((lance, "pylance"), (lancer, "lancer")):
        uri = str(tmp_path / f"rq-{name}.lance")
        lance.write_dataset(table, uri)
        lib.dataset(uri).create_index("vec", "IVF_RQ", num_partitions=2)
        stats = lance.dataset(uri).stats.index_stats("vec_idx")
        bits[name] = stats["indices"][0]["sub_index"]["num_bits"]
    assert bits["lancer"] == bits["pylance"] == 5
    uri = str(tmp_path / "rq-lancer.lance")
    with pytest.raises(ValueError, match="num_bits"):
        lancer.dataset(uri).create_index("id", "BTREE", num_bits=4)


def test_write_inputs(tmp_path, table):
    pd = pytest.importorskip("pandas")
    df = table.select(["id", "category", "price"]).to_pandas()
    ds = lancer.write_dataset(df, str(tmp_path / "pd.lance"))
    assert ds.to_table().to_pandas().equals(df)
    ds = lancer.write_dataset([{"a": 1, "b": "x"}, {"a": 2, "b": None}], str(tmp_path / "rows.lance"))
    assert lance.dataset(str(tmp_path / "rows.lance")).to_table().to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": None}]
    batches = table.to_batches(max_chunksize=1000)
    ds = lancer.write_dataset(iter(batches), str(tmp_path / "it.lance"), schema=table.schema)
    assert ds.to_table().equals(table)
    ds2 = lancer.write_dataset(lance.dataset(str(tmp_path / "it.lance")), str(tmp_path / "copy.lance"))
    assert ds2.to_table().equals(table)
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"k": [3, 1, 2], "v": ["c", "a", "b"]})  # an __arrow_c_stream__ object
    ds = lancer.write_dataset(frame, str(tmp_path / "polars.lance"))
    assert lance.dataset(str(tmp_path / "polars.lance")).to_table().to_pydict() == {"k": [3, 1, 2], "v": ["c", "a", "b"]}
    assert ds.count_rows() == 3
    assert ds.schema == lance.write_dataset(frame, str(tmp_path / "polars_pl.lance")).schema


def test_errors(tmp_path, table):
    with pytest.raises(FileNotFoundError):
        lancer.dataset(str(tmp_path / "missing"))
    with pytest.raises(ValueError):  # pylance raises ValueError here too
        lancer.dataset(str(tmp_path / "missing"))
    uri = str(tmp_path / "e.lance")
    lancer.write_dataset(table.slice(0, 10), uri)
    ds = lancer.dataset(uri)
    with pytest.raises(ValueError, match="nope"):
        ds.to_table(filter="nope > 1")
    with pytest.raises(ValueError):
        ds.to_table(filter="id >")
    with pytest.raises(ValueError, match="already exists"):
        lancer.write_dataset(table.slice(0, 10), uri)
    with pytest.raises(ValueError):
        ds.take([100])
    # an append to nothing creates the dataset, in both
    for lib, name in ((lance, "nothing-lance"), (lancer, "nothing-lancer")):
        made = lib.write_dataset(table.slice(0, 10), str(tmp_path / name), mode="append")
        assert made.version == 1 and made.count_rows() == 10
    # a commit conflict is an OSError, as pylance raises them
    assert issubclass(lancer.CommitConflictError, OSError)


def test_duckdb_polars_pandas(tmp_path, table):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    uri = str(tmp_path / "q.lance")
    lance.write_dataset(table, uri, max_rows_per_file=1200)
    ds = lancer.dataset(uri)
    got = duckdb.sql("select category, count(*) as n from ds group by category order by category").fetchall()
    assert got == [(f"c{i}", sum(1 for j in range(table.num_rows) if j % 7 == i)) for i in range(7)]
    frame = pl.DataFrame(ds.scanner(columns=["id", "price"]))
    assert frame.height == table.num_rows and frame["id"].sum() == sum(range(table.num_rows))
    frame = pl.from_arrow(ds.to_table(filter="id < 10"))
    assert frame["id"].to_list() == list(range(10))
    pdf = ds.to_table(columns=["id", "category"]).to_pandas()
    back = lancer.write_dataset(pdf, str(tmp_path / "back.lance"))
    # pandas 3 strings come back as large_string, in pylance as here
    assert back.to_table().cast(table.select(["id", "category"]).schema).equals(table.select(["id", "category"]))
    assert back.schema == lance.write_dataset(pdf, str(tmp_path / "back_pl.lance")).schema


ZERO_COPY = r"""
import resource, sys, numpy as np, lancer
ds = lancer.dataset(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = ds.to_table(columns=["vec"])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
vals = t["vec"].chunks[0].values
print(t.nbytes, (after - before) * 1024)
"""


def test_zero_copy_scan(tmp_path):
    """A scan of a 768-d vector column crosses into pyarrow without a second copy: the
    process's peak memory grows by about the data's size, not twice it."""
    n, dim = 40_000, 768
    vecs = np.random.default_rng(3).standard_normal((n, dim)).astype("float32")
    t = pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), dim)})
    uri = str(tmp_path / "zc.lance")
    lance.write_dataset(t, uri)
    del vecs, t
    out = subprocess.run([sys.executable, "-c", ZERO_COPY, uri], capture_output=True, text=True, check=True)
    data, grew = map(int, out.stdout.split())
    assert data == n * dim * 4
    assert grew < 1.5 * data, f"peak grew by {grew / data:.2f}x the data's {data} bytes"


def test_written_by_lancer_2_2_and_pylance_default(tmp_path, table):
    uri = str(tmp_path / "v22.lance")
    ds = lancer.write_dataset(table, uri)
    assert ds.data_storage_version == lance.dataset(uri).data_storage_version == "2.2"
    assert lance.dataset(uri).to_table().equals(table)
    shutil.rmtree(uri)
    assert not os.path.exists(uri)


INTERRUPT = r"""
import sys, time, pyarrow as pa, lancer
uri = sys.argv[1]
lancer.write_dataset(pa.table({"id": pa.array(range(1_000_000), pa.int64())}), uri)
ds = lancer.dataset(uri)
print("ready", flush=True)
t = time.perf_counter()
try:
    ds.to_table(batch_size=1)  # a million one-row batches: minutes
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"interrupted after {time.perf_counter() - t:.2f} s", flush=True)
"""


def test_ctrl_c_stops_a_long_scan(tmp_path):
    """SIGINT during one long `to_table` call ends it with KeyboardInterrupt (checked
    between batches), instead of running the scan to its end."""
    import signal
    import time

    p = subprocess.Popen([sys.executable, "-c", INTERRUPT, str(tmp_path / "i.lance")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    sent = time.perf_counter()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    took = time.perf_counter() - sent
    assert out.startswith("interrupted after"), (out, err)
    assert took < 10, f"the scan took {took:.1f} s to stop"


def _count_in_child(path, q):
    q.put(lancer.dataset(path).to_table(filter="id % 3 = 0").num_rows)


def test_scans_after_fork(tmp_path, table):
    """Scans run on cached worker threads; a forked child (DataLoader workers, the
    default multiprocessing start on Linux) has none of the parent's threads and must
    start its own instead of handing work to threads that are not there."""
    import multiprocessing

    path = str(tmp_path / "ds")
    lancer.write_dataset(table, path, max_rows_per_file=1000)
    ds = lancer.dataset(path)
    want = ds.to_table(filter="id % 3 = 0").num_rows  # the parent's threads now idle
    assert want == (table.num_rows + 2) // 3
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_count_in_child, args=(path, q))
    p.start()
    p.join(60)
    assert p.exitcode == 0, "the forked child's scan hung or failed"
    assert q.get(timeout=5) == want


def test_small_filtered_batches_are_joined_up_to_batch_size(tmp_path, table):
    """A selective filter leaves a few rows per scan task: for a whole table the
    batches crossing to pyarrow are joined (each import costs ~10 µs), never past
    `batch_size`; a stream still hands each task's rows over as they come."""
    path = str(tmp_path / "ds")
    lancer.write_dataset(table, path, max_rows_per_file=500)
    f = "id % 50 = 0"
    ds = lancer.dataset(path)
    t = ds.scanner(filter=f, batch_size=64).to_table()
    assert t.num_rows == table.num_rows // 50
    sizes = [b.num_rows for b in t.to_batches()]
    assert all(0 < n <= 64 for n in sizes)
    # 100 rows from 80 tasks of 64 rows each: two or three batches, not dozens
    assert len(sizes) <= 3
    assert t.equals(lance.dataset(path).to_table(filter=f))
    streamed = [b.num_rows for b in ds.to_batches(filter=f, batch_size=64)]
    assert sum(streamed) == t.num_rows and len(streamed) > 3


@pytest.mark.parametrize("source", ["lancer scanner", "pylance scanner", "pyarrow scanner", "lancer dataset"])
def test_write_dataset_from_scanners_and_datasets(tmp_path, source):
    import pyarrow.dataset as pds

    t = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    src = str(tmp_path / "src")
    lance.write_dataset(t, src)
    make = {
        "lancer scanner": lambda: lancer.dataset(src).scanner(filter="a > 1"),
        "pylance scanner": lambda: lance.dataset(src).scanner(filter="a > 1"),
        "pyarrow scanner": lambda: pds.dataset(t).scanner(filter=pds.field("a") > 1),
        "lancer dataset": lambda: lancer.dataset(src),
    }[source]
    out = str(tmp_path / "out")
    lancer.write_dataset(make(), out)
    want = t if source == "lancer dataset" else t.slice(1)
    assert lance.dataset(out).to_table().equals(want)
