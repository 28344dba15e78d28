"""Single data files (``lancer.file`` / ``lance.file``): what either writes the other
reads with the same values, at 2.0, 2.1 and 2.2, for reads of everything, ranges and rows
by index, with the same refusals."""

import numpy as np
import pyarrow as pa
import pytest

import lance.file as pf
import lancer.file as lf


def table(n):
    rng = np.random.default_rng(1)
    return pa.table({
        "id": pa.array(np.arange(n)),
        "s": pa.array([None if i % 7 == 0 else f"s{i}" * (i % 5) for i in range(n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, dtype=np.float32)), 4),
        "l": pa.array([[i, i + 1][: i % 3] for i in range(n)], pa.list_(pa.int32())),
        "st": pa.array([{"a": i, "b": str(i)} for i in range(n)]),
    })


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2", None])
@pytest.mark.parametrize("writer,reader", [(lf, pf), (pf, lf), (lf, lf)])
def test_files_cross_read(tmp_path, version, writer, reader):
    t = table(3000)
    path = str(tmp_path / "f.lance")
    w = writer.LanceFileWriter(path, version=version)
    w.add_schema_metadata("k", "v")
    w.write_batch(t.slice(0, 1000))
    w.write_batch(t.slice(1000))
    assert w.close() == 3000
    r = reader.LanceFileReader(path)
    assert r.num_rows() == 3000
    m = r.metadata()
    want = {"2.0": (0, 3), "2.1": (2, 1)}.get(version, (2, 2))
    assert (m.major_version, m.minor_version) == want
    got = r.read_all(batch_size=700).to_table()
    assert got.select(t.schema.names).equals(t)
    assert [b.num_rows for b in r.read_all(batch_size=700).to_batches()] == [700] * 4 + [200]
    assert r.read_range(123, 456).to_table().select(t.schema.names).equals(t.slice(123, 456))
    idx = [0, 5, 999, 1000, 2999]
    assert r.take_rows(idx).to_table().select(t.schema.names).equals(t.take(idx))


def test_columns_and_refusals_as_pylance(tmp_path):
    t = table(100)
    path = str(tmp_path / "f.lance")
    with lf.LanceFileWriter(path) as w:
        w.write_batch(t)
    for mod in (pf, lf):
        r = mod.LanceFileReader(path, columns=["s", "id"])
        assert sorted(r.read_all().to_table().schema.names) == ["id", "s"]
        with pytest.raises(ValueError, match="ascending"):
            r.take_rows([5, 1])
    with pytest.raises(ValueError):
        lf.LanceFileWriter(str(tmp_path / "g.lance")).close()
    with pytest.raises(ValueError, match="2.0, 2.1 and 2.2"):
        lf.LanceFileWriter(str(tmp_path / "h.lance"), version="0.1")
