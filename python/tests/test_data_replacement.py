"""``LanceOperation.DataReplacement`` (issue 61): a column's data files replaced (or
added where the column was all null) fragment by fragment, committed by lancer and by
pylance 14 on copies of one pylance-written dataset, each reading the other's result;
rebased over a concurrent delete or append as the spec says; bad replacements refused."""

import os
import shutil
import uuid

import pyarrow as pa
import pytest

import lance
import lancer


@pytest.fixture(params=["2.0", "2.1"])
def pair(request, tmp_path):
    path = str(tmp_path / "base.lance")
    t = pa.table({"a": list(range(30)), "b": [f"s{i}" for i in range(30)]})
    lance.write_dataset(t.slice(0, 12), path, data_storage_version=request.param, max_rows_per_file=12)
    lance.write_dataset(t.slice(12), path, mode="append", max_rows_per_file=9)
    lance.dataset(path).add_columns({"d": "a * 10"})
    a, b = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    shutil.copytree(path, a)
    shutil.copytree(path, b)
    return a, b, request.param


def new_files(lib, path, version, column, arrow_type, values):
    """One new file per fragment with ``column``'s new values, and its groups."""
    ds = lib.dataset(path)
    field_id = next(f.id() for f in ds.lance_schema.fields() if f.name() == column)
    groups = []
    for frag in ds.get_fragments():
        name = f"{uuid.uuid4()}.lance"
        n = frag.physical_rows
        with lib.file.LanceFileWriter(os.path.join(path, "data", name), pa.schema([(column, arrow_type)]),
                                      version=version) as w:
            w.write_batch(pa.table({column: pa.array(values(frag.fragment_id, n), arrow_type)}))
        major, minor = (int(x) for x in version.split("."))
        groups.append(lib.LanceOperation.DataReplacementGroup(
            frag.fragment_id, lib.fragment.DataFile(name, [field_id], [0], major, minor)))
    return ds, groups


def table(path):
    return lance.dataset(path).to_table().sort_by("a")


def test_replacing_a_column_answers_as_pylance(pair):
    a, b, version = pair
    for lib, path in ((lancer, a), (lance, b)):
        ds, groups = new_files(lib, path, version, "d", pa.int64(), lambda f, n: [-(f * 100 + i) for i in range(n)])
        lib.LanceDataset.commit(path, lib.LanceOperation.DataReplacement(groups), read_version=ds.version)
    assert table(a) == table(b)
    assert lancer.dataset(b).to_table().sort_by("a") == table(b)
    assert table(a)["d"][0].as_py() == 0 and table(a)["d"][1].as_py() == -1
    for path in (a, b):
        op = lance.dataset(path).read_transaction(lance.dataset(path).version).operation
        assert type(op).__name__ == "DataReplacement"
    mine = lancer.dataset(a).read_transaction(lancer.dataset(a).version).operation
    assert type(mine).__name__ == "DataReplacement" and len(mine.replacements) == len(lance.dataset(a).get_fragments())


def test_a_column_that_was_all_null_gets_its_files(pair):
    a, b, version = pair
    for lib, path in ((lancer, a), (lance, b)):
        lib.dataset(path).add_columns(pa.field("e", pa.float64()))
        ds, groups = new_files(lib, path, version, "e", pa.float64(), lambda f, n: [f + i / 10 for i in range(n)])
        lib.LanceDataset.commit(path, lib.LanceOperation.DataReplacement(groups), read_version=ds.version)
    assert table(a) == table(b)
    assert table(a)["e"].null_count == 0


def test_a_replacement_rebases_over_a_concurrent_delete_and_append(pair):
    a, b, version = pair
    for lib, path in ((lancer, a), (lance, b)):
        ds, groups = new_files(lib, path, version, "d", pa.int64(), lambda f, n: [7] * n)
        lib.dataset(path).delete("a % 5 = 0")  # deletion vectors on the target fragments
        lib.write_dataset(pa.table({"a": [101], "b": ["late"], "d": [1]}), path, mode="append")
        lib.LanceDataset.commit(path, lib.LanceOperation.DataReplacement(groups), read_version=ds.version)
    assert table(a) == table(b)
    assert lance.dataset(a).count_rows("a % 5 = 0") == 0 and lance.dataset(a).count_rows("d = 7") == 24


def test_bad_replacements_are_refused(pair):
    a, _, version = pair
    ds, groups = new_files(lancer, a, version, "d", pa.int64(), lambda f, n: [1] * n)
    L = lancer.LanceOperation
    # a fragment the dataset does not have
    wrong = [L.DataReplacementGroup(99, groups[0].new_file)]
    with pytest.raises(ValueError, match="fragment 99"):
        lancer.LanceDataset.commit(a, L.DataReplacement(wrong), read_version=ds.version)
    # rows other than the fragment's
    short = [L.DataReplacementGroup(groups[1].fragment_id, groups[0].new_file)]
    with pytest.raises(OSError, match="rows"):
        lancer.LanceDataset.commit(a, L.DataReplacement(short), read_version=ds.version)
    # a file of another type than the column's (pylance commits it; its reads then fail)
    _, strings = new_files(lancer, a, version, "d", pa.string(), lambda f, n: ["x"] * n)
    with pytest.raises(ValueError, match="types"):
        lancer.LanceDataset.commit(a, L.DataReplacement(strings), read_version=ds.version)
    # fields that overlap a file without matching it
    with_a = [L.DataReplacementGroup(g.fragment_id, lancer.fragment.DataFile(
        g.new_file.path, [0, 3], [0, 1], g.new_file.file_major_version, g.new_file.file_minor_version))
        for g in groups[:1]]
    with pytest.raises(OSError):
        lancer.LanceDataset.commit(a, L.DataReplacement(with_a), read_version=ds.version)
    assert lancer.dataset(a).version == ds.version
    assert table(a)["d"].to_pylist() == [i * 10 for i in range(30)]
