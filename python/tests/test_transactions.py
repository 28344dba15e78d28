"""Committed transactions read back and committed as objects, against pylance 14 (issue
43's two-phase commit surface): ``read_transaction`` / ``get_transactions`` return the
same operations (kind, fields, fragments, schemas with their field ids, index segments,
properties, uuids) as pylance's on the same histories — one pylance wrote, one lancer
wrote — and ``write_fragments(return_transaction=True)``, ``commit(Transaction)`` and
``commit_batch`` behave as pylance's (the uuid and properties a transaction carries are
the ones recorded; errors alike).

pylance 14 runs in-process here (the test venv's ``lance``).
"""

import dataclasses
import json
import uuid

import pyarrow as pa
import pytest

import lancer

lance = pytest.importorskip("lance")


def table(lo, hi):
    ids = list(range(lo, hi))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": [f"n{i}" for i in ids],
        "st": [{"x": i * 2, "tags": [f"t{i}", "u"]} for i in ids],
    })


def norm_schema(s):
    def field(f):
        return [f.name(), f.id(), str(f.to_arrow().type), [field(c) for c in f.children()]]
    return [field(f) for f in s.fields()]


def norm(v):
    """A plain-value picture of a transaction or anything inside one, alike for both
    engines' objects."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted(norm(x) for x in v)
    if isinstance(v, dict):
        return {str(k): norm(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    name = type(v).__name__
    if name == "FragmentMetadata":
        return v.to_json()
    if name == "LanceSchema":
        return norm_schema(v)
    if name == "DatasetBasePath":
        return [v.id, v.name, v.path, v.is_dataset_root]
    if hasattr(v, "uuid") and hasattr(v, "fragment_ids"):  # an index segment
        return {"uuid": str(v.uuid), "name": v.name, "fields": list(v.fields),
                "fragment_ids": sorted(int(i) for i in v.fragment_ids),
                "dataset_version": int(v.dataset_version)}
    if name == "Transaction":
        return {"read_version": v.read_version, "uuid": v.uuid,
                "properties": norm(v.transaction_properties or {}),
                "kind": type(v.operation).__name__, "operation": norm(v.operation)}
    if dataclasses.is_dataclass(v):
        return {f.name: norm(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if hasattr(v, "__dict__"):
        return {k: norm(x) for k, x in sorted(vars(v).items()) if not k.startswith("_")}
    raise TypeError(f"cannot picture {type(v)}")


def history(mod, uri, base_dir):
    """The same history through `mod` (lance or lancer): every kind of commit."""
    ds = mod.write_dataset(table(0, 40), uri, max_rows_per_file=15, commit_message="first")
    ds = mod.write_dataset(table(40, 60), uri, mode="append", transaction_properties={"who": "me"})
    ds.delete("id < 5")
    ds.delete("id >= 30 AND id < 45")  # a whole fragment goes
    ds.update({"name": "'x'"}, where="id = 10")
    ds.add_columns({"z": "id * 2"})
    ds.drop_columns(["z"])
    ds.alter_columns({"path": "name", "name": "label"})
    # (compaction before the index: pylance 14 cannot build the Python object of a
    # Rewrite that remapped an index — see test_a_rewrite_that_remapped_an_index)
    ds.optimize.compact_files(target_rows_per_fragment=100)
    ds.create_scalar_index("id", "BTREE")
    ds.update_config({"k": "v"})
    ds.update_metadata({"m": "1"})
    ds.update_schema_metadata({"s": "2"})
    ds.add_bases([mod.DatasetBasePath(str(base_dir), name="other")])
    ds = mod.dataset(uri, version=2)
    ds.restore()
    return mod.dataset(uri).version


def both_read(uri, latest):
    theirs = lance.dataset(uri)
    mine = lancer.dataset(uri)
    t_all, m_all = theirs.get_transactions(100), mine.get_transactions(100)
    assert len(t_all) == len(m_all) == latest
    for v in range(latest, 0, -1):
        t, m = norm(t_all[latest - v]), norm(m_all[latest - v])
        assert t == m, (v, t, m)
        assert norm(theirs.read_transaction(v)) == norm(mine.read_transaction(v)) == t
    return [norm(t)["kind"] for t in t_all]


def test_pylances_history_reads_the_same(tmp_path):
    uri = str(tmp_path / "p.lance")
    latest = history(lance, uri, tmp_path / "base")
    kinds = both_read(uri, latest)
    assert {"Overwrite", "Append", "Delete", "Update", "Merge", "Project", "CreateIndex", "Rewrite",
            "UpdateConfig", "Restore"} <= set(kinds), kinds


def test_lancers_history_reads_the_same(tmp_path):
    uri = str(tmp_path / "l.lance")
    latest = history(lancer, uri, tmp_path / "base")
    kinds = both_read(uri, latest)
    assert {"Overwrite", "Append", "Delete", "Update", "Merge", "Project", "CreateIndex", "Rewrite",
            "UpdateConfig", "Restore"} <= set(kinds), kinds

def test_properties_a_write_was_given_are_recorded(tmp_path):
    uri = str(tmp_path / "l.lance")
    history(lancer, uri, tmp_path / "base")
    t = lancer.dataset(uri).read_transaction(2)
    assert t.transaction_properties == {"who": "me"}
    assert lance.dataset(uri).read_transaction(2).transaction_properties == {"who": "me"}
    assert lancer.dataset(uri).read_transaction(1).transaction_properties == {"__lance_commit_message": "first"}


def test_counts_checkouts_and_missing_versions_as_pylance(tmp_path):
    uri = str(tmp_path / "c.lance")
    lance.write_dataset(table(0, 10), uri)
    for i in range(3):
        lance.write_dataset(table(10 + i, 11 + i), uri, mode="append")
    for n in (0, 1, 2, 4, 10):
        t = lance.dataset(uri).get_transactions(n)
        m = lancer.dataset(uri).get_transactions(n)
        assert norm(t) == norm(m), n
        assert len(m) == max(1, min(n, 4))
    t = lance.dataset(uri, version=2).get_transactions(10)
    m = lancer.dataset(uri, version=2).get_transactions(10)
    assert norm(t) == norm(m) and len(m) == 2
    # a version that is not there: both raise, the same class
    with pytest.raises(Exception) as theirs:
        lance.dataset(uri).read_transaction(99)
    with pytest.raises(Exception) as mine:
        lancer.dataset(uri).read_transaction(99)
    assert isinstance(mine.value, type(theirs.value)) or isinstance(theirs.value, type(mine.value)), \
        (theirs.value, mine.value)


@pytest.mark.parametrize("mode", ["create", "append", "overwrite"])
def test_write_fragments_returns_pylances_transaction(tmp_path, mode):
    got = {}
    for mod in (lance, lancer):
        uri = str(tmp_path / f"{mod.__name__}.lance")
        if mode != "create":
            mod.write_dataset(table(0, 10), uri)
        t = mod.fragment.write_fragments(table(100, 130), uri, mode=mode, max_rows_per_file=20,
                                         return_transaction=True)
        assert type(t).__name__ == "Transaction"
        ds = mod.LanceDataset.commit(uri, t)
        got[mod.__name__] = {"kind": type(t.operation).__name__, "read_version": t.read_version,
                             "files": len(t.operation.fragments), "version": ds.version,
                             "rows": sorted(ds.to_table()["id"].to_pylist()),
                             "schema": norm_schema(t.operation.new_schema)
                             if hasattr(t.operation, "new_schema") else None,
                             "uuid_recorded": ds.read_transaction(ds.version).uuid == t.uuid}
        # the other engine reads the commit the same way
        other = lancer if mod is lance else lance
        assert norm(other.dataset(uri).read_transaction(ds.version)) == norm(ds.read_transaction(ds.version))
    assert got["lance"] == got["lancer"], got


def test_commit_transaction_records_its_uuid_and_properties(tmp_path):
    uri = str(tmp_path / "t.lance")
    lancer.write_dataset(table(0, 10), uri)
    frags = lancer.fragment.write_fragments(table(10, 20), uri)
    u = str(uuid.uuid4())
    t = lancer.Transaction(1, lancer.LanceOperation.Append(frags), u, {"job": "42"})
    ds = lancer.LanceDataset.commit(uri, t)
    for reader in (lance.dataset(uri), lancer.dataset(uri)):
        got = reader.read_transaction(2)
        assert got.uuid == u and got.transaction_properties == {"job": "42"} and got.read_version == 1
    assert ds.count_rows() == 20
    # pylance's refusals, alike
    for mod in (lance, lancer):
        op = mod.LanceOperation.Append(mod.fragment.write_fragments(table(20, 21), uri))
        with pytest.raises(ValueError, match="commit_message is not supported"):
            mod.LanceDataset.commit(uri, mod.Transaction(2, op), commit_message="m")
        with pytest.raises(TypeError):
            mod.LanceDataset.commit(uri, "not an operation")
    with pytest.raises((ValueError, OSError), match="uuid"):
        lancer.LanceDataset.commit(uri, lancer.Transaction(2, op, "../../escape"))


def test_commit_batch_merges_appends_as_pylance(tmp_path):
    got = {}
    for mod in (lance, lancer):
        uri = str(tmp_path / f"{mod.__name__}.lance")
        mod.write_dataset(table(0, 10), uri)
        a = mod.fragment.write_fragments(table(10, 20), uri, return_transaction=True)
        mod.write_dataset(table(20, 25), uri, mode="append")
        b = mod.fragment.write_fragments(table(30, 40), uri, return_transaction=True)
        out = mod.LanceDataset.commit_batch(uri, [a, b])
        ds, merged = out["dataset"], out["merged"]
        got[mod.__name__] = {"version": ds.version, "read_version": merged.read_version,
                             "fragments": len(merged.operation.fragments),
                             "rows": sorted(ds.to_table()["id"].to_pylist()),
                             "recorded": norm(ds.read_transaction(ds.version))["operation"]["fragments"]
                             == norm(ds.read_transaction(ds.version))["operation"]["fragments"]}
        other = lancer if mod is lance else lance
        assert norm(other.dataset(uri).read_transaction(ds.version)) == norm(ds.read_transaction(ds.version))
        with pytest.raises(Exception) as e:
            mod.LanceDataset.commit_batch(uri, [])
        got[mod.__name__]["empty"] = isinstance(e.value, OSError)
        d = mod.Transaction(ds.version, mod.LanceOperation.Delete([], [0], "id < 10"))
        with pytest.raises(Exception) as e:
            mod.LanceDataset.commit_batch(uri, [d])
        got[mod.__name__]["delete"] = ("append" in str(e.value).lower(), isinstance(e.value, OSError))
    assert got["lance"] == got["lancer"], got


def test_a_rewrite_that_remapped_an_index(tmp_path):
    """pylance 14 fails building a Rewrite that remapped an index (its RewrittenIndex
    is made with two of its five fields: TypeError); lancer returns it whole, the
    segment's old and new uuids those the two versions list."""
    uri = str(tmp_path / "r.lance")
    ds = lance.write_dataset(table(0, 40), uri, max_rows_per_file=10)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id < 3")
    ds.optimize.compact_files(target_rows_per_fragment=100)
    v = lance.dataset(uri).version
    with pytest.raises(TypeError, match="RewrittenIndex"):
        lance.dataset(uri).read_transaction(v)
    t = lancer.dataset(uri).read_transaction(v)
    assert type(t.operation).__name__ == "Rewrite"
    (r,) = t.operation.rewritten_indices
    before = {i.uuid for i in lancer.dataset(uri, version=v - 1).describe_indices()[0].segments}
    after = {i.uuid for i in lancer.dataset(uri).describe_indices()[0].segments}
    assert r.old_id in before and r.new_id in after and r.new_details_type_url
