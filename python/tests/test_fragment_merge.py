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
