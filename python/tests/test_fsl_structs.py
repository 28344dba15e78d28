"""Fixed-size lists of structs (issue 44's remaining types): pylance 14 writes them in
2.2 files as the struct's leaf columns, `dimension` page rows per list row, with the
list's nulls as one more item layer. lancer reads what pylance 14 writes and writes
what pylance 14 reads, on shapes: null rows, null structs, null leaves, strings, an
all-null column, one repeated value, several fragments with deletions, an empty table.

pylance 14 itself reads such a column only alone: beside any other column of the same
file it fails ("cannot read columns of differing lengths together"), so pylance reads
the columns of a mixed dataset one at a time here, where lancer reads them together.
Below 2.2 both engines refuse the type."""

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer

ITEM = pa.struct([("a", pa.int32()), ("b", pa.string())])


def fsl(shape, n, dim=3):
    rng = np.random.default_rng(5)
    if shape == "all_null":
        return pa.FixedSizeListArray.from_arrays(
            pa.array([None] * (n * dim), ITEM), dim, mask=pa.array([True] * n))
    if shape == "repeated":
        return pa.array([[{"a": 7, "b": "same"}] * dim] * n, pa.list_(ITEM, dim))
    a = pa.array(rng.integers(0, 1000, n * dim), pa.int32(), mask=rng.random(n * dim) < 0.2)
    b = pa.array(["x" * int(k) for k in rng.integers(0, 30, n * dim)], mask=rng.random(n * dim) < 0.2)
    items = pa.StructArray.from_arrays([a, b], names=["a", "b"], mask=pa.array(rng.random(n * dim) < 0.2))
    return pa.FixedSizeListArray.from_arrays(items, dim, mask=pa.array(rng.random(n) < 0.25))


SHAPES = ["mixed", "all_null", "repeated", "empty"]


def table(shape, with_id):
    n = 0 if shape == "empty" else 3000
    cols = {"f": fsl(shape, n)}
    if with_id:
        cols = {"id": pa.array(np.arange(n), pa.int64()), **cols}
    return pa.table(cols)


def write(mod, t, path):
    mod.write_dataset(t, path, data_storage_version="2.2", max_rows_per_file=1100)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("writer", [lance, lancer], ids=["pylance", "lancer"])
def test_one_column_reads_the_same_in_both(tmp_path, shape, writer):
    t = table(shape, with_id=False)
    path = str(tmp_path / "d")
    write(writer, t, path)
    ours, theirs = lancer.dataset(path), lance.dataset(path)
    assert ours.schema == theirs.schema == t.schema
    assert ours.to_table() == theirs.to_table() == t
    if t.num_rows:
        idx = [t.num_rows - 1, 0, 1500, 7, 1500]
        assert ours.take(idx) == theirs.take(idx) == t.take(idx)
        assert ours.to_table(limit=5, offset=1099) == theirs.to_table(limit=5, offset=1099)
    # appended by the other engine, then read by both
    (lance if writer is lancer else lancer).write_dataset(t.slice(0, 10), path, mode="append")
    want = pa.concat_tables([t, t.slice(0, 10)])
    assert lancer.dataset(path).to_table() == lance.dataset(path).to_table() == want


@pytest.mark.parametrize("writer", [lance, lancer], ids=["pylance", "lancer"])
def test_beside_other_columns_with_deletions(tmp_path, writer):
    t = table("mixed", with_id=True)
    path = str(tmp_path / "d")
    write(writer, t, path)
    lance.dataset(path).delete("id % 7 = 3")   # pylance's delete reads `id` alone
    keep = pa.array([i % 7 != 3 for i in range(t.num_rows)])
    want = t.filter(keep)
    ours = lancer.dataset(path)
    assert ours.to_table() == want
    assert ours.to_table(filter="id >= 2000 AND id < 2100") == want.filter(
        pa.compute.and_(pa.compute.greater_equal(want["id"], 2000), pa.compute.less(want["id"], 2100)))
    assert ours.take([0, 2500, 17]) == want.take([0, 2500, 17])
    # pylance 14 reads each column alone (together it fails, on its own files too)
    theirs = lance.dataset(path)
    assert theirs.to_table(columns=["f"])["f"] == want["f"]
    assert theirs.to_table(columns=["id"])["id"] == want["id"]
    with pytest.raises(Exception, match="differing lengths"):
        theirs.to_table()


def test_below_2_2_both_refuse(tmp_path):
    t = table("repeated", with_id=False)
    for mod in (lance, lancer):
        with pytest.raises(Exception) as e:
            mod.write_dataset(t, str(tmp_path / f"{mod.__name__}-21"), data_storage_version="2.1")
        assert "2.2" in str(e.value) or "not enabled" in str(e.value), str(e.value)
    # inside a struct pylance 14 writes what it cannot read back; lancer refuses it
    nested = pa.table({"s": pa.StructArray.from_arrays([fsl("mixed", 30)], names=["p"])})
    with pytest.raises(Exception, match="top-level columns only"):
        lancer.write_dataset(nested, str(tmp_path / "nested"), data_storage_version="2.2")
