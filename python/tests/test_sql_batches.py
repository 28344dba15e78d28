"""``LanceDataset.sql(...).batch_size(n)`` and ``.batch_size_bytes(n)`` (pylance 14's
``SqlQueryBuilder``; issue 61): run through pylance 14 and lancer on one dataset of
several fragments (with deletions, nulls and long strings) and compared — the rows, the
batch sizes (as a multiset: lancer scans fragment groups in parallel, so batches come in
another order without ORDER BY; in order with it), the limits, and pylance's errors."""

import pyarrow as pa
import pytest

import lance
import lancer


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def uri(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sqlb") / "d.lance")
    n = 400
    t = pa.table({
        "x": pa.array(range(n), pa.int64()),
        "s": pa.array([None if i % 17 == 0 else "v" * (i % 90) for i in range(n)]),
    })
    lance.write_dataset(t, path, max_rows_per_file=70, data_storage_version=request.param)
    lance.dataset(path).delete("x % 9 = 5")
    return path


def run(mod, uri, query, rows=None, size=None):
    b = mod.dataset(uri).sql(query)
    if rows is not None:
        b = b.batch_size(rows)
    if size is not None:
        b = b.batch_size_bytes(size)
    return b.build().to_batch_records()


QUERIES = ["SELECT x, s FROM dataset", "SELECT x FROM dataset WHERE x % 2 = 0",
           "SELECT x FROM dataset ORDER BY x DESC", "SELECT s, count(*) AS n FROM dataset GROUP BY s",
           "SELECT count(*) FROM dataset"]


@pytest.mark.parametrize("rows", [1, 7, 64, 100000])
@pytest.mark.parametrize("query", QUERIES)
def test_batch_size_as_pylance(uri, query, rows):
    ours, theirs = run(lancer, uri, query, rows), run(lance, uri, query, rows)
    assert all(b.num_rows <= rows for b in ours)
    rows_of = lambda bs: [str(r) for b in bs for r in b.to_pylist()]  # noqa: E731
    if "ORDER BY" in query:
        assert rows_of(ours) == rows_of(theirs)
    else:
        assert sorted(rows_of(ours)) == sorted(rows_of(theirs))
    if "GROUP BY" not in query:
        assert sorted(b.num_rows for b in ours) == sorted(b.num_rows for b in theirs)


@pytest.mark.parametrize("size", [1, 500, 5000, 0])
def test_batch_size_bytes_bounds_each_batch(uri, size):
    query = "SELECT x, s FROM dataset"
    ours, theirs = run(lancer, uri, query, size=size), run(lance, uri, query, size=size)
    rows = lambda bs: sorted(str(r) for b in bs for r in b.to_pylist())  # noqa: E731
    assert rows(ours) == rows(theirs)
    if size <= 1:  # a row a batch (at least one), as pylance
        assert {b.num_rows for b in ours} == {b.num_rows for b in theirs} == {1}
    else:  # about `size` bytes (lancer adds its rows' values, pylance estimates):
        # validity bitmaps aside, within the limit
        assert all(b.num_rows == 1 or b.nbytes <= size + 64 for b in ours)
        whole = run(lancer, uri, query)
        if size < min(b.nbytes for b in whole):
            assert max(b.num_rows for b in ours) < max(b.num_rows for b in whole)
    # both limits: the one reached first
    both = run(lancer, uri, query, rows=5, size=size)
    assert all(b.num_rows <= 5 for b in both) and rows(both) == rows(theirs)


def test_errors_as_pylance(uri):
    for bad, kind in ((0, ValueError), (2 ** 33, ValueError)):
        for mod in (lance, lancer):
            with pytest.raises(kind, match="batch_size must be between 1 and 4294967295"):
                run(mod, uri, "SELECT x FROM dataset", rows=bad)
    for mod in (lance, lancer):
        with pytest.raises(OverflowError):
            mod.dataset(uri).sql("SELECT x FROM dataset").batch_size(-1)
        with pytest.raises(OverflowError):
            mod.dataset(uri).sql("SELECT x FROM dataset").batch_size_bytes(-1)
