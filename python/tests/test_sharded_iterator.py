"""``lance._dataset.sharded_batch_iterator.ShardedBatchIterator`` and
``lance._dataset.cache.CachedDataset`` (issue 61), each run through pylance 14 and
lancer on one dataset (several fragments, deletions, nulls) and compared batch by batch:
every rank of several world sizes, both granularities, columns as a list and as SQL,
row ids, the deprecation warning and pylance's errors."""

import warnings

import pyarrow as pa
import pytest

import lance
import lancer
from lance._dataset.cache import CachedDataset as PyCached
from lance._dataset.sharded_batch_iterator import ShardedBatchIterator as PySharded
from lancer._dataset.cache import CachedDataset as OurCached
from lancer._dataset.sharded_batch_iterator import ShardedBatchIterator as OurSharded


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def uri(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sharded") / "d.lance")
    n = 1000
    t = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": pa.array([None if i % 13 == 0 else f"n{i % 37}" for i in range(n)]),
        "x": pa.array([i * 0.5 for i in range(n)], pa.float64()),
    })
    lance.write_dataset(t, path, max_rows_per_file=230, data_storage_version=request.param)
    lance.dataset(path).delete("id % 11 = 2 OR (id > 500 AND id < 520)")
    return path


def batches(cls, data, *args, **kwargs):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        it = cls(data, *args, **kwargs)
    assert any("deprecated" in str(x.message) for x in w)
    return [b.to_pydict() for b in it]


@pytest.mark.parametrize("world", [1, 2, 3, 7])
@pytest.mark.parametrize("granularity", ["fragment", "batch"])
def test_every_rank_gets_pylances_batches(uri, world, granularity):
    seen = []
    for rank in range(world):
        kw = dict(columns=["id", "name"], batch_size=97, granularity=granularity)
        ours = batches(OurSharded, uri, rank, world, **kw)
        theirs = batches(PySharded, uri, rank, world, **kw)
        assert [len(b["id"]) for b in ours] == [len(b["id"]) for b in theirs]
        assert ours == theirs
        seen += [i for b in ours for i in b["id"]]
    # the shards together: every live row once
    assert sorted(seen) == sorted(lance.dataset(uri).to_table(columns=["id"])["id"].to_pylist())


def test_sql_columns_row_ids_and_a_dataset_object(uri):
    kw = dict(columns={"id": "id", "twice": "x * 2"}, batch_size=50)
    assert batches(OurSharded, lancer.dataset(uri), 1, 3, **kw) == batches(PySharded, lance.dataset(uri), 1, 3, **kw)
    ours = batches(OurSharded, uri, 0, 2, with_row_id=True, columns=["id"])
    theirs = batches(PySharded, uri, 0, 2, with_row_id=True, columns=["id"])
    assert ours == theirs and "_rowid" in ours[0]
    # all columns by default
    assert batches(OurSharded, uri, 2, 4) == batches(PySharded, uri, 2, 4)


def test_errors_as_pylance(uri):
    for cls in (OurSharded, PySharded):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(NotImplementedError):
                list(cls(uri, 0, 2, granularity="batch", with_row_id=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="granularity"):
            list(OurSharded(uri, 0, 2, granularity="rows"))


def test_cached_dataset_replays_its_stream(uri, tmp_path):
    for cls, mod in ((OurCached, lancer), (PyCached, lance)):
        stream = mod.dataset(uri).to_batches(columns=["id", "name"], batch_size=128)
        with cls(stream, cache=str(tmp_path)) as cached:
            first = [b.to_pydict() for b in cached]
            second = [b.to_pydict() for b in cached]
            assert first == second and len(first) > 1
            assert sum(len(b["id"]) for b in first) == lance.dataset(uri).count_rows()
    half = OurCached(iter(lancer.dataset(uri).to_batches(batch_size=100)))
    it = iter(half)
    next(it)
    with pytest.raises(RuntimeError, match="has not finished"):
        list(iter(half))
    with pytest.raises(ValueError, match="Unsupported cache type"):
        OurCached(iter([]), cache=3)
