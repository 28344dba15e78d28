"""``LanceFragment.merge`` (issue 61): per-fragment left joins committed as one
``LanceOperation.Merge``, next to pylance 14 on copies of one dataset (several
fragments, deletions, null keys, string and integer keys, duplicate keys, no match),
each library committing what the other's fragments wrote, errors compared."""

import json
import shutil

import pyarrow as pa
import pytest

import lance
import lancer


def base(n=40):
    return pa.table({
        "k": pa.array([None if i % 9 == 5 else i for i in range(n)], pa.int64()),
        "s": pa.array([f"key{i % 13}" for i in range(n)]),
        "v": pa.array([float(i) for i in range(n)]),
    })


@pytest.fixture(params=["2.0", "2.1", "2.2"])
def pair(request, tmp_path):
    path = str(tmp_path / "base.lance")
    lance.write_dataset(base(), path, max_rows_per_file=12, data_storage_version=request.param)
    lance.dataset(path).delete("v > 20 AND v < 26")
    a, b = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    shutil.copytree(path, a)
    shutil.copytree(path, b)
    return a, b


RIGHTS = {
    "int_keys": ("k", lambda: pa.table({"k": pa.array([0, 3, 7, 22, 39, 100], pa.int64()),
                                        "z": ["a", "b", None, "d", "e", "f"],
                                        "w": pa.array([1, 2, 3, 4, 5, 6], pa.int32())})),
    "null_key_joins_null": ("k", lambda: pa.table({"k": pa.array([None, 1], pa.int64()), "z": ["N", "one"]})),
    "duplicate_keys_last_wins": ("k", lambda: pa.table({"k": pa.array([2, 2, 4], pa.int64()), "z": ["x", "y", "q"]})),
    "string_keys": ("s", lambda: pa.table({"s": [f"key{i}" for i in range(0, 13, 2)], "z": list(range(0, 13, 2))})),
    "no_match": ("k", lambda: pa.table({"k": pa.array([1000], pa.int64()), "z": ["never"]})),
}


def merged(mod, path, key, right):
    ds = mod.dataset(path)
    frags, schema = [], None
    for f in ds.get_fragments():
        m, schema = f.merge(right, key)
        frags.append(m)
    return ds, frags, schema


def rows(path):
    return lance.dataset(path).to_table().sort_by("v").to_pylist()


@pytest.mark.parametrize("case", sorted(RIGHTS))
@pytest.mark.parametrize("committer", ["lancer", "lance"])
def test_fragment_merge_as_pylance(pair, case, committer):
    ours, theirs = pair
    key, right = RIGHTS[case]
    ds, frags, schema = merged(lance, theirs, key, right())
    lance.LanceDataset.commit(theirs, lance.LanceOperation.Merge(frags, schema), read_version=ds.version)
    ds, frags, schema = merged(lancer, ours, key, right())
    if committer == "lancer":
        lancer.LanceDataset.commit(ours, lancer.LanceOperation.Merge(frags, schema), read_version=ds.version)
    else:
        # lancer's fragments and schema, committed by pylance
        theirs_frags = [lance.FragmentMetadata.from_json(json.dumps(f.to_json())) for f in frags]
        lance.LanceDataset.commit(ours, lance.LanceOperation.Merge(theirs_frags, schema.to_pyarrow()),
                                  read_version=ds.version)
    assert rows(ours) == rows(theirs)
    assert lancer.dataset(ours).to_table().sort_by("v").to_pylist() == rows(theirs)
    assert lancer.dataset(ours).schema == lance.dataset(theirs).schema


@pytest.mark.parametrize("right,key", [
    (pa.table({"k": pa.array([1], pa.int32()), "z": ["a"]}), "k"),   # key types differ
    (pa.table({"k": pa.array([1], pa.int64()), "v": [1.0]}), "k"),   # a column the dataset has
    (pa.table({"x": pa.array([1], pa.int64()), "z": ["a"]}), "k"),   # no key in the data
    (pa.table({"k": pa.array([], pa.int64()), "z": pa.array([], pa.string())}), "k"),  # no rows
])
def test_fragment_merge_errors_as_pylance(pair, right, key):
    ours, theirs = pair
    got = []
    for mod, path in ((lance, theirs), (lancer, ours)):
        with pytest.raises(ValueError) as e:
            mod.dataset(path).get_fragments()[0].merge(right, key)
        got.append(str(e.value))
    # the words before pylance's source location
    assert got[1].lower() in got[0].lower()


# LanceFragment.update_columns, committed as LanceOperation.Update


def with_struct(n=40):
    t = base(n)
    return t.append_column("st", pa.array([{"a": i, "b": f"b{i}"} for i in range(n)]))


@pytest.fixture(params=["2.0", "2.1", "2.2"])
def upair(request, tmp_path):
    path = str(tmp_path / "base.lance")
    lance.write_dataset(with_struct(), path, max_rows_per_file=12, data_storage_version=request.param)
    lance.dataset(path).delete("v > 20 AND v < 26")
    lance.dataset(path).create_scalar_index("v", "BTREE")
    a, b = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    shutil.copytree(path, a)
    shutil.copytree(path, b)
    return a, b


UPDATES = {
    "by_key": ("k", lambda: pa.table({"k": pa.array([0, 3, 14, 30, 99], pa.int64()),
                                      "v": [-1.0, -2.0, -3.0, -4.0, -5.0]})),
    "two_columns": ("k", lambda: pa.table({"k": pa.array([1, 2, 13], pa.int64()),
                                           "s": ["S1", None, "S13"], "v": [0.5, 1.5, 2.5]})),
    "struct_column": ("k", lambda: pa.table({"k": pa.array([4, 16], pa.int64()),
                                             "st": pa.array([{"a": -4, "b": "x"}, {"a": -16, "b": None}])})),
    "null_key": ("k", lambda: pa.table({"k": pa.array([None], pa.int64()), "v": [100.0]})),
    "duplicates_last_wins": ("k", lambda: pa.table({"k": pa.array([6, 6], pa.int64()), "v": [6.1, 6.2]})),
    "by_rowid": ("_rowid", lambda: pa.table({"_rowid": pa.array([(1 << 32) + 2, (2 << 32) + 0, 7], pa.uint64()),
                                             "v": [71.0, 72.0, 73.0]})),
    "no_match": ("k", lambda: pa.table({"k": pa.array([12345], pa.int64()), "v": [1.0]})),
}


def updated(mod, path, key, right):
    ds = mod.dataset(path)
    frags, fields = [], set()
    for f in ds.get_fragments():
        m, modified = f.update_columns(right, left_on=key)
        frags.append(m)
        fields.update(modified)
    return ds, frags, sorted(fields)


@pytest.mark.parametrize("case", sorted(UPDATES))
@pytest.mark.parametrize("committer", ["lancer", "lance"])
def test_fragment_update_columns_as_pylance(upair, case, committer):
    ours, theirs = upair
    key, right = UPDATES[case]
    ds, frags, fields = updated(lance, theirs, key, right())
    lance.LanceDataset.commit(theirs, lance.LanceOperation.Update(updated_fragments=frags, fields_modified=fields),
                              read_version=ds.version)
    ds, frags, ours_fields = updated(lancer, ours, key, right())
    assert ours_fields == fields
    if committer == "lancer":
        op = lancer.LanceOperation.Update(updated_fragments=frags, fields_modified=ours_fields)
        lancer.LanceDataset.commit(ours, op, read_version=ds.version)
    else:
        theirs_frags = [lance.FragmentMetadata.from_json(json.dumps(f.to_json())) for f in frags]
        op = lance.LanceOperation.Update(updated_fragments=theirs_frags, fields_modified=ours_fields)
        lance.LanceDataset.commit(ours, op, read_version=ds.version)
    assert rows(ours) == rows(theirs)
    for mod in (lance, lancer):
        assert mod.dataset(ours).to_table().sort_by("v").to_pylist() == rows(theirs)
        # a filter on the indexed column: the same rows after the update
        assert sorted(mod.dataset(ours).to_table(filter="v < 3", columns=["k", "v"]).to_pylist(),
                      key=lambda r: r["v"]) == sorted(
            lance.dataset(theirs).to_table(filter="v < 3", columns=["k", "v"]).to_pylist(), key=lambda r: r["v"])


@pytest.mark.parametrize("right,key,error", [
    (pa.table({"k": pa.array([1], pa.int64()), "nope": [1]}), "k", ValueError),
    (pa.table({"k": pa.array([1], pa.int64()), "v": ["x"]}), "k", RuntimeError),
    (pa.table({"x": pa.array([1], pa.int64()), "v": [1.0]}), "k", ValueError),
])
def test_fragment_update_columns_errors_as_pylance(upair, right, key, error):
    ours, theirs = upair
    got = []
    for mod, path in ((lance, theirs), (lancer, ours)):
        with pytest.raises(error) as e:
            mod.dataset(path).get_fragments()[0].update_columns(right, left_on=key)
        got.append(str(e.value))
    assert got[1].split(":")[0] in got[0]


def test_a_tampered_update_is_refused(upair):
    ours, _ = upair
    ds = lancer.dataset(ours)
    m, fields = ds.get_fragments()[0].update_columns(pa.table({"k": pa.array([1], pa.int64()), "v": [9.0]}),
                                                      left_on="k")
    d = m.to_json()
    # the new file's field left live in the old file too: two copies of one column
    d["files"][0]["fields"] = [x if x != -2 else fields[0] for x in d["files"][0]["fields"]]
    bad = lancer.FragmentMetadata.from_json(json.dumps(d))
    with pytest.raises(ValueError):
        lancer.LanceDataset.commit(ours, lancer.LanceOperation.Update(updated_fragments=[bad], fields_modified=fields),
                                   read_version=ds.version)
