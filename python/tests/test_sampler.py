"""`lancer.sampler` against pylance 14's `lance.sampler`: each sampler run through both
on the same pylance-written dataset (several fragments, deleted rows, an appended
fragment) with the same arguments must yield the same batches (schema, values, batch
boundaries, order) and leave Python's `random` and NumPy's global generator in the same
state."""

import itertools
import random
import warnings

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance.sampler as psampler
import lancer
import lancer.sampler as lsampler


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sampler") / "d.lance")
    n = 2400
    rng = np.random.default_rng(3)
    table = pa.table({
        "id": pa.array(np.arange(n, dtype="int64")),
        "val": pa.array(rng.random(n) * 1000),
        "text": pa.array([None if i % 17 == 0 else f"row {i}" for i in range(n)]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(4 * n).astype("float32")), 4),
        "pt": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(2 * n).astype("float32")), 2),
        "st": pa.StructArray.from_arrays([pa.array(np.arange(n) * 2), pa.array((np.arange(n) % 5).astype("int32"))],
                                         names=["a", "b"]),
    })
    lance.write_dataset(table.slice(0, 2000), path, max_rows_per_file=300)
    lance.write_dataset(table.slice(2000), path, mode="append")
    ds = lance.dataset(path)
    ds.delete("id % 11 = 5 or (id >= 600 and id < 650) or (id > 2100 and id < 2110)")
    assert len(lance.dataset(path).get_fragments()) == 8
    return path


def datasets(uri):
    return lance.dataset(uri), lancer.dataset(uri)


def run(call):
    """The batches `call()` yields, and the state it leaves the generators in."""
    random.seed(1234)
    np.random.seed(99)
    out = call()
    batches = list(out)
    return out, batches, random.random(), np.random.random()


def assert_same(expected, actual):
    """Same batches: count, boundaries, schemas (with metadata) and values."""
    assert [b.num_rows for b in actual] == [b.num_rows for b in expected]
    for e, a in zip(expected, actual):
        assert a.schema.equals(e.schema, check_metadata=True), (a.schema, e.schema)
        assert a.equals(e)


def compare(make_py, make_lr):
    _, py, py_r, py_np = run(make_py)
    _, lr, lr_r, lr_np = run(make_lr)
    assert_same(py, lr)
    assert (lr_r, lr_np) == (py_r, py_np)
    return py, lr


def ids(batches, column="id"):
    return [v for b in batches for v in b.column(column).to_pylist()]


SHARDS = [(0, 1), (0, 2), (1, 2), (0, 3), (2, 3), (3, 4), (5, 8)]
FILTERS = [None, "id % 3 = 0", "val < 400", "text is not null and st.b = 2"]
COLUMNS = [None, ["id", "text"], ["val", "id"], ["id", "pt", "st"], ["vec", "id"]]


@pytest.mark.parametrize("batch_size,columns,filter,with_row_id", [
    (bs, c, f, r) for bs, c, f, r in itertools.product([16, 100, 128], COLUMNS, FILTERS, [False, True])
    if not (r and bs == 16)
])
def test_full_scan(uri, batch_size, columns, filter, with_row_id):
    pds, lds = datasets(uri)
    kw = dict(batch_size=batch_size, columns=columns, filter=filter, with_row_id=with_row_id)
    py, _ = compare(lambda: psampler.FullScanSampler()(pds, **kw),
                    lambda: lsampler.FullScanSampler()(lds, **kw))
    assert ids(py) == pds.to_table(columns=["id"], filter=filter)["id"].to_pylist()


@pytest.mark.parametrize("rank,world_size", SHARDS)
@pytest.mark.parametrize("randomize,seed", [(False, 0), (True, 0), (True, 42)])
@pytest.mark.parametrize("filter", [None, "id % 3 = 0", "text is not null and st.b = 2"])
def test_sharded_fragments(uri, rank, world_size, randomize, seed, filter):
    pds, lds = datasets(uri)
    for epoch, batch_size, columns in [(0, 64, None), (3, 100, ["id", "val"]), (1, 7, ["text", "id"])]:
        def make(mod, ds):
            def call():
                sampler = mod.ShardedFragmentSampler(rank, world_size, randomize=randomize, seed=seed)
                sampler.set_epoch(epoch)
                return sampler(ds, batch_size=batch_size, columns=columns, filter=filter, with_row_id=True)
            return call
        compare(make(psampler, pds), make(lsampler, lds))


@pytest.mark.parametrize("world_size", [1, 2, 3, 8, 9])
@pytest.mark.parametrize("randomize", [False, True])
def test_sharded_fragments_cover_each_row_once(uri, world_size, randomize):
    _, lds = datasets(uri)
    seen = []
    for rank in range(world_size):
        sampler = lsampler.ShardedFragmentSampler(rank, world_size, randomize=randomize, seed=5)
        seen += ids(sampler(lds, batch_size=50, columns=["id"]))
    assert sorted(seen) == sorted(lds.to_table(columns=["id"])["id"].to_pylist())


@pytest.mark.parametrize("rank,world_size", SHARDS)
@pytest.mark.parametrize("randomize,seed", [(False, 0), (True, 0), (True, 7)])
@pytest.mark.parametrize("batch_size,columns", [(7, None), (64, ["text", "id"]), (100, ["id"]), (1000, ["val", "vec"])])
def test_sharded_batches(uri, rank, world_size, randomize, seed, batch_size, columns):
    pds, lds = datasets(uri)

    def make(mod, ds):
        return lambda: mod.ShardedBatchSampler(rank, world_size, randomize=randomize, seed=seed)(
            ds, batch_size=batch_size, columns=columns)

    (py_reader, py, *_), (lr_reader, lr, *_) = run(make(psampler, pds)), run(make(lsampler, lds))
    assert isinstance(lr_reader, pa.RecordBatchReader)
    assert lr_reader.schema.equals(py_reader.schema, check_metadata=True)
    compare(make(psampler, pds), make(lsampler, lds))


@pytest.mark.parametrize("world_size", [1, 2, 3, 5])
@pytest.mark.parametrize("randomize", [False, True])
def test_sharded_batches_cover_each_row_once(uri, world_size, randomize):
    _, lds = datasets(uri)
    seen = []
    for rank in range(world_size):
        sampler = lsampler.ShardedBatchSampler(rank, world_size, randomize=randomize, seed=3)
        seen += ids(sampler(lds, batch_size=37, columns=["id"]))
    assert sorted(seen) == sorted(lds.to_table(columns=["id"])["id"].to_pylist())


def test_sharded_batches_with_row_id_warns(uri):
    pds, lds = datasets(uri)
    for mod, ds in [(psampler, pds), (lsampler, lds)]:
        with pytest.warns(UserWarning, match="with_row_id is not supported"):
            mod.ShardedBatchSampler(0, 2)(ds, batch_size=10, with_row_id=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mod.ShardedBatchSampler(0, 2)(ds, batch_size=10, filter="id > 5", with_row_id=True)


@pytest.mark.parametrize("rank,world_size", SHARDS)
@pytest.mark.parametrize("randomize,seed", [(False, 0), (True, 0), (True, 11)])
@pytest.mark.parametrize("filter", ["id % 3 = 0", "val < 400", "text is not null and st.b = 2"])
def test_sharded_batches_filtered(uri, rank, world_size, randomize, seed, filter):
    pds, lds = datasets(uri)
    for epoch, batch_size, columns in [(0, 5, None), (2, 50, ["text", "id"]), (1, 128, ["id", "val"])]:
        def make(mod, ds):
            def call():
                sampler = mod.ShardedBatchSampler(rank, world_size, randomize=randomize, seed=seed)
                sampler.set_epoch(epoch)
                return sampler(ds, batch_size=batch_size, columns=columns, filter=filter)
            return call
        compare(make(psampler, pds), make(lsampler, lds))


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
@pytest.mark.parametrize("randomize", [False, True])
def test_sharded_batches_filtered_cover_each_row_once(uri, world_size, randomize):
    pds, lds = datasets(uri)
    seen = []
    for rank in range(world_size):
        sampler = lsampler.ShardedBatchSampler(rank, world_size, randomize=randomize, seed=2)
        seen += ids(sampler(lds, batch_size=16, columns=["id"], filter="val < 700"))
    assert sorted(seen) == sorted(pds.to_table(columns=["id"], filter="val < 700")["id"].to_pylist())


@pytest.mark.parametrize("world_size", [1, 2])
def test_sharded_batches_filtered_reservoir_overflows(uri, world_size):
    """More than 256 batches: the heap pushes batches out as new ones come."""
    pds, lds = datasets(uri)
    for seed, epoch in [(0, 0), (4, 9)]:
        def make(mod, ds):
            def call():
                sampler = mod.ShardedBatchSampler(0, world_size, randomize=True, seed=seed)
                sampler.set_epoch(epoch)
                return sampler(ds, batch_size=2, columns=["id"], filter="id % 2 = 0")
            return call
        py, _ = compare(make(psampler, pds), make(lsampler, lds))
        assert len(py) > 256


@pytest.mark.parametrize("world_size", [3, 4, 7])
def test_sharded_batches_filtered_short_batches(uri, world_size):
    """A filter leaving fewer rows in a scanned batch than there are ranks (pylance's
    every-Nth bookkeeping then drifts: the same rows come out)."""
    pds, lds = datasets(uri)
    for rank in range(world_size):
        compare(lambda: psampler.ShardedBatchSampler(rank, world_size)(pds, batch_size=3, filter="id % 97 = 1"),
                lambda: lsampler.ShardedBatchSampler(rank, world_size)(lds, batch_size=3, filter="id % 97 = 1"))


def test_sharded_batches_filter_matching_nothing(uri):
    pds, lds = datasets(uri)
    for mod, ds in [(psampler, pds), (lsampler, lds)]:
        with pytest.raises(ValueError):
            list(mod.ShardedBatchSampler(0, 2)(ds, filter="id < 0"))


@pytest.mark.parametrize("rank,world_size", [(0, 1), (0, 4), (3, 4), (2, 3), (6, 7)])
@pytest.mark.parametrize("randomize,seed", [(False, 0), (True, 0), (True, 9)])
@pytest.mark.parametrize("total,batch_size", [(1000, 100), (1001, 64), (5, 2), (0, 0), (0, 10)])
def test_sharded_fixed_batches(rank, world_size, randomize, seed, total, batch_size):
    for epoch in [0, 1, 5]:
        out = []
        for mod in (psampler, lsampler):
            random.seed(77)
            sampler = mod.ShardedFixedBatchSampler(rank, world_size, randomize=randomize, seed=seed,
                                                   batch_size=batch_size, total_num_rows=total)
            sampler.set_epoch(epoch)
            out.append((len(sampler), list(sampler), random.random()))
        assert out[1] == out[0]


def test_fixed_batches_cover_each_row_once():
    seen = []
    for rank in range(4):
        for batch in lsampler.ShardedFixedBatchSampler(rank, 4, randomize=True, batch_size=30, total_num_rows=1001):
            seen += batch
    assert sorted(seen) == list(range(1001))


def test_lengths_and_zero_batch_size():
    for mod in (psampler, lsampler):
        with pytest.raises(AttributeError):
            len(mod.ShardedBatchSampler(0, 2))
        with pytest.raises(ZeroDivisionError):
            mod.ShardedFixedBatchSampler(0, 2, batch_size=0, total_num_rows=10)


@pytest.mark.parametrize("n,columns,kw", [
    (50, ["id", "text"], {}),                                  # numpy.random.choice
    (30, "val", dict(batch_size=8)),
    (500, ["id", "vec"], dict(max_takes=16)),                  # runs of adjacent rows
    (700, ["id"], dict(max_takes=64, batch_size=100)),
    (333, ["val"], dict(max_takes=7, batch_size=1000)),
    (5000, ["id", "text"], dict(batch_size=128)),              # more than the rows: a scan
    (5000, ["id", "text"], dict(batch_size=100, filt="val < 300")),
    (300, "text", dict(filt="text is not null", batch_size=64, max_takes=10)),  # shuffled slices
    (1000, ["text"], dict(filt="TEXT IS NOT NULL", batch_size=128, max_takes=100)),
    (77, ["text"], dict(filt="text is not null", batch_size=500, max_takes=4)),
])
def test_maybe_sample(uri, n, columns, kw):
    pds, lds = datasets(uri)
    for _ in range(2):
        compare(lambda: psampler.maybe_sample(pds, n, columns, **kw),
                lambda: lsampler.maybe_sample(lds, n, columns, **kw))
    # a path opens the dataset
    compare(lambda: psampler.maybe_sample(uri, n, columns, **kw),
            lambda: lsampler.maybe_sample(uri, n, columns, **kw))


def test_maybe_sample_unsupported_filter(uri):
    pds, lds = datasets(uri)
    for mod, ds in [(psampler, pds), (lsampler, lds)]:
        with pytest.raises(NotImplementedError, match="in-memory"):
            list(mod.maybe_sample(ds, 10, ["id"], filt="id > 3"))


def test_reservoir_sampling(monkeypatch):
    import numpy

    out = []
    for mod in (psampler, lsampler):
        monkeypatch.setattr(numpy.random, "default_rng", lambda: numpy.random.Generator(numpy.random.PCG64(8)))
        out.append([mod.reservoir_sampling(iter(range(n)), k) for n, k in [(0, 3), (5, 10), (1000, 16), (30000, 40)]])
    assert out[1] == out[0]


def test_heap_entries_compare_by_priority_only():
    for mod in (psampler, lsampler):
        a, b, c = mod.PrioritizedItem(1, "x"), mod.PrioritizedItem(1, "y"), mod.PrioritizedItem(2, "x")
        assert a == b and not a < b and a <= b and a < c and c > b and c >= a and a != c


def test_public_names():
    assert lsampler.__all__ == psampler.__all__
    for name in psampler.__all__ + ["ShardedFixedBatchSampler", "reservoir_sampling", "PrioritizedItem"]:
        assert hasattr(lsampler, name)
    assert lancer.sampler is lsampler
    with pytest.raises(TypeError):
        lsampler.Sampler()
    with pytest.raises(TypeError):
        lsampler.FragmentSampler()


def test_custom_fragment_sampler(uri):
    """A FragmentSampler subclass: its fragments are scanned in the order it yields."""
    pds, lds = datasets(uri)

    def sampler(base):
        class Reverse(base):
            def iter_fragments(self, ds, **kwargs):
                yield from reversed(ds.get_fragments()[kwargs.get("skip", 0):])
        return Reverse()

    compare(lambda: sampler(psampler.FragmentSampler)(pds, batch_size=90, skip=2, filter="val > 100"),
            lambda: sampler(lsampler.FragmentSampler)(lds, batch_size=90, skip=2, filter="val > 100"))


def test_from_torch_needs_torch():
    pytest.importorskip("numpy")
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed")
    except ImportError:
        pass
    with pytest.raises(ImportError):
        lsampler.ShardedFragmentSampler.from_torch()
    with pytest.raises(ImportError):
        lsampler.ShardedBatchSampler.from_torch(randomize=True)
    with pytest.raises(ImportError):
        lsampler.ShardedFixedBatchSampler.from_torch(10, 100)
