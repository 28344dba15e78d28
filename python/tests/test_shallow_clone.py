"""``LanceDataset.shallow_clone`` against pylance 14 (issue 44's multi-base datasets): a
clone made by either engine, of a version, a tag, a branch's version or the latest,
shares the source's files through a registered base path as pylance's does — the same
version number, base path, fragments naming it, index segments carried, a ``Clone``
transaction — and each engine reads, filters with the carried index, and appends to the
other's clone; the source stays as it was; a location holding a dataset is refused by
both.

pylance 14 runs in-process here (the test venv's ``lance``).
"""

import pyarrow as pa
import pytest

import lancer

lance = pytest.importorskip("lance")


def table(lo, hi):
    ids = list(range(lo, hi))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})


def source(uri):
    ds = lance.write_dataset(table(0, 30), uri, max_rows_per_file=10)
    ds.delete("id = 3")
    ds.create_scalar_index("id", "BTREE")
    ds.tags.create("t", 3)
    ds = lance.write_dataset(table(30, 40), uri, mode="append")
    ds.create_branch("b", 2)
    return lance.dataset(uri)


def picture(ds):
    """What a clone is: version, rows, base paths, fragments' bases, indexes, its
    transaction."""
    bases = sorted((b.id, b.name, b.is_dataset_root) for b in ds.base_paths().values())
    frags = [(f.fragment_id, [d.base_id for d in f.data_files()]) for f in ds.get_fragments()]
    t = ds.read_transaction(ds.version)
    op = t.operation
    return {"version": ds.version, "rows": sorted(ds.to_table()["id"].to_pylist()),
            "bases": bases, "frags": frags,
            "indices": sorted(i["name"] for i in ds.list_indices()) if hasattr(ds, "list_indices")
            else sorted(i.name for i in ds.describe_indices()),
            "clone": (type(op).__name__, op.is_shallow, op.ref_name, op.ref_version, op.branch_name)}


@pytest.mark.parametrize("reference", [2, 3, "t", (None, None), ("b", None), ("b", 2)])
def test_clones_as_pylance_and_each_reads_the_others(tmp_path, reference):
    src = str(tmp_path / "src.lance")
    source(src)
    before = sorted(lance.dataset(src).to_table()["id"].to_pylist())
    clones = {}
    for name, mod in (("lance", lance), ("lancer", lancer)):
        target = str(tmp_path / f"{name}-clone.lance")
        c = mod.dataset(src).shallow_clone(target, reference)
        assert c.version == mod.dataset(target).version
        mine, theirs = picture(lancer.dataset(target)), picture(lance.dataset(target))
        assert mine == theirs, (name, mine, theirs)
        clones[name] = mine
        # the carried index answers in both engines
        for reader in (lance, lancer):
            got = reader.dataset(target).to_table(columns=["id"], filter="id = 7")["id"].to_pylist()
            assert got == ([7] if 7 in mine["rows"] else []), (name, reader.__name__)
    assert clones["lance"] == clones["lancer"], clones
    # appends go to the clone, by either engine; the source is untouched
    lancer.write_dataset(table(100, 105), str(tmp_path / "lance-clone.lance"), mode="append")
    lance.write_dataset(table(200, 205), str(tmp_path / "lancer-clone.lance"), mode="append")
    for name, extra in (("lance", range(100, 105)), ("lancer", range(200, 205))):
        target = str(tmp_path / f"{name}-clone.lance")
        want = sorted(clones[name]["rows"] + list(extra))
        for reader in (lance, lancer):
            assert sorted(reader.dataset(target).to_table()["id"].to_pylist()) == want
    assert sorted(lancer.dataset(src).to_table()["id"].to_pylist()) == before
    assert lance.dataset(src).version == lancer.dataset(src).version


def test_a_location_holding_a_dataset_is_refused(tmp_path):
    src = str(tmp_path / "src.lance")
    source(src)
    taken = str(tmp_path / "taken.lance")
    lance.write_dataset(table(0, 3), taken)
    for mod in (lance, lancer):
        with pytest.raises(OSError, match="already exists"):
            mod.dataset(src).shallow_clone(taken, 2)
    assert lancer.dataset(taken).count_rows() == 3
    with pytest.raises((ValueError, OSError)):
        lancer.dataset(src).shallow_clone(str(tmp_path / "x.lance"), "no-such-tag")
