"""Looking inside a dataset (issue 41), each call made through pylance 14 and through
lancer on the same data, written by either (several fragments, deletions, nulls):
VectorIndexReader on IVF_PQ / IVF_FLAT / IVF_SQ / IVF_RQ indexes (delta segments
included), lance.debug's information, LanceSchema / lance_schema, LanceFragment.validate
and physical_schema, LanceScanner.scan_batches, tags with metadata and times, and the
read counters; errors included."""

import importlib
import json
import os
import re
import time

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer

LIBS = {"pylance": lance, "lancer": lancer}
DATASET_MODULE = {"pylance": importlib.import_module("lance.dataset"),
                  "lancer": importlib.import_module("lancer.dataset")}
DEBUG = {"pylance": importlib.import_module("lance.debug"), "lancer": importlib.import_module("lancer.debug")}


def outcome(f):
    """("ok", value) or the exception's class name and message."""
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 (the comparison is the point)
        return (type(e).__name__, str(e))


def vectors_table(n=600, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    vec = rng.random((n, dim)).astype("float32")
    return pa.table({"id": pa.array(range(n), pa.int64()),
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), dim)})


INDEXES = [("IVF_PQ", {"num_sub_vectors": 2}), ("IVF_FLAT", {}), ("IVF_SQ", {}), ("IVF_RQ", {})]


@pytest.mark.parametrize("builder", ["pylance", "lancer"])
@pytest.mark.parametrize("kind,params", INDEXES, ids=[k for k, _ in INDEXES])
def test_vector_index_reader_reads_partitions_as_pylance(tmp_path, builder, kind, params):
    lib = LIBS[builder]
    path = str(tmp_path / "ds")
    ds = lib.write_dataset(vectors_table(), path, max_rows_per_file=200)
    ds.delete("id % 7 = 0")
    ds.create_index("vector", kind, num_partitions=4, **params)
    lib.write_dataset(vectors_table(50, seed=1), path, mode="append")
    theirs = DATASET_MODULE["pylance"].VectorIndexReader(lance.dataset(path), "vector_idx")
    ours = DATASET_MODULE["lancer"].VectorIndexReader(lancer.dataset(path), "vector_idx")
    assert ours.num_partitions() == theirs.num_partitions() > 0
    assert ours.index_name == theirs.index_name
    rows = 0
    for p in range(theirs.num_partitions()):
        for with_vector in (False, True):
            a = theirs.read_partition(p, with_vector=with_vector)
            b = ours.read_partition(p, with_vector=with_vector)
            assert b.schema.equals(a.schema, check_metadata=True), (p, with_vector)
            assert b.equals(a), (p, with_vector)
        rows += a.num_rows
    assert rows == lance.dataset(path).count_rows() - 50  # the appended rows are not indexed
    for bad in (-1, theirs.num_partitions()):
        e_theirs, e_ours = outcome(lambda: theirs.read_partition(bad)), outcome(lambda: ours.read_partition(bad))
        assert e_ours == e_theirs and e_ours[0] == "IndexError"


def test_vector_index_reader_over_delta_segments(tmp_path):
    path = str(tmp_path / "ds")
    ds = lance.write_dataset(vectors_table(), path, max_rows_per_file=200)
    ds.create_index("vector", "IVF_FLAT", num_partitions=4)
    lance.write_dataset(vectors_table(300, seed=2), path, mode="append")
    lance.dataset(path).optimize.optimize_indices(num_indices_to_merge=0)
    assert len(lance.dataset(path).describe_indices()[0].segments) == 2
    theirs = DATASET_MODULE["pylance"].VectorIndexReader(lance.dataset(path), "vector_idx")
    ours = DATASET_MODULE["lancer"].VectorIndexReader(lancer.dataset(path), "vector_idx")
    for p in range(theirs.num_partitions()):
        a = theirs.read_partition(p, with_vector=True)
        b = ours.read_partition(p, with_vector=True)
        # pylance interleaves its segments' streams: the same rows, in segment order here
        assert b.sort_by("_rowid").equals(a.sort_by("_rowid"))
        assert b.schema.equals(a.schema, check_metadata=True)


def test_vector_index_reader_errors(tmp_path):
    path = str(tmp_path / "ds")
    ds = lance.write_dataset(vectors_table(300), path)
    ds.create_index("vector", "IVF_FLAT", num_partitions=2)
    ds.create_scalar_index("id", "BTREE")
    cases = [
        lambda m, d: m.VectorIndexReader(d, "id_idx"),  # not a vector index: ValueError
        lambda m, d: m.VectorIndexReader(d, "nope"),  # KeyError
        lambda m, d: m.VectorIndexReader(d, "vector_idx").read_partition("1"),  # TypeError
    ]
    for case in cases:
        e_theirs = outcome(lambda: case(DATASET_MODULE["pylance"], lance.dataset(path)))
        e_ours = outcome(lambda: case(DATASET_MODULE["lancer"], lancer.dataset(path)))
        assert e_ours == e_theirs and e_ours[0] != "ok"


def history(lib, path):
    """Three fragments (nulls, a struct, a list), an append, a delete."""
    n = 10
    t = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array(["a", None] * 5),
                  "st": pa.array([{"x": i, "y": None if i % 3 else "q"} for i in range(n)]),
                  "l": pa.array([[i, i + 1] for i in range(n)])})
    lib.write_dataset(t, path, max_rows_per_file=4)
    lib.write_dataset(t.slice(0, 3), path, mode="append")
    ds = lib.dataset(path)
    ds.delete("id = 5")
    return lib.dataset(path)


@pytest.fixture(params=["pylance", "lancer"])
def written(request, tmp_path):
    path = str(tmp_path / "ds")
    history(LIBS[request.param], path)
    return path


# (key, value) pairs of the debug texts whose values print alike in both: names, ids,
# paths, versions, uuids, file versions
FACTS = re.compile(r"\b(name|id|parent_id|path|read_version|uuid|file_major_version|file_minor_version|version"
                   r"|predicate): (\"[^\"]*\"|-?\d+)\b")


def facts(text):
    return sorted(FACTS.findall(text))


def test_debug_texts_carry_pylances_information(written):
    theirs, ours = lance.dataset(written), lancer.dataset(written)
    p, o = DEBUG["pylance"], DEBUG["lancer"]
    assert set(facts(o.format_schema(ours))) == set(facts(p.format_schema(theirs)))
    manifest_facts = set(facts(p.format_manifest(theirs)))
    assert manifest_facts and manifest_facts <= set(facts(o.format_manifest(ours)))
    for ft, fo in zip(theirs.get_fragments(), ours.get_fragments()):
        assert ft.fragment_id == fo.fragment_id
        expected = set(facts(p.format_fragment(ft.metadata, theirs)))
        assert expected and expected <= set(facts(o.format_fragment(fo, ours)))
    for limit in (None, 1, 2, 10):
        kw = {} if limit is None else {"max_transactions": limit}
        t_theirs, t_ours = p.list_transactions(theirs, **kw), o.list_transactions(ours, **kw)
        assert len(t_ours) == len(t_theirs)
        for a, b in zip(t_theirs, t_ours):
            assert set(facts(a)) <= set(facts(b))
    missing = 99
    assert outcome(lambda: p.format_fragment(missing, theirs))[0] != "ok"
    assert outcome(lambda: o.format_fragment(missing, ours))[0] != "ok"


def lance_fields(schema):
    def one(f):
        return (f.name(), f.id(), str(f.to_arrow()), f.metadata, f.is_unenforced_primary_key(),
                [one(c) for c in f.children()])
    return [one(f) for f in schema.fields()]


def test_lance_schema(written):
    theirs, ours = lance.dataset(written), lancer.dataset(written)
    assert lance_fields(ours.lance_schema) == lance_fields(theirs.lance_schema)
    assert ours.lance_schema.to_pyarrow() == theirs.lance_schema.to_pyarrow()
    assert ours.lance_schema == ours.lance_schema
    for name in ["id", "st", "st.x", "st.y", "l.item", "ST.x", "Id", "nope", "st.nope", "`st`.x"]:
        for method in ("field", "field_case_insensitive"):
            a = getattr(theirs.lance_schema, method)(name)
            b = getattr(ours.lance_schema, method)(name)
            assert (b is None) == (a is None), (method, name)
            if a is not None:
                assert (b.name(), b.id(), b.to_arrow()) == (a.name(), a.id(), a.to_arrow())
    assert outcome(lambda: ours.lance_schema.field(3))[0] == outcome(lambda: theirs.lance_schema.field(3))[0]
    # after a column is dropped the ids keep their gaps
    for lib, path in (("pylance", written + "_t"), ("lancer", written + "_o")):
        history(LIBS[lib], path)
        LIBS[lib].dataset(path).drop_columns(["s"])
    assert lance_fields(lancer.dataset(written + "_o").lance_schema) == \
        lance_fields(lance.dataset(written + "_t").lance_schema)
    nested = pa.schema([pa.field("a", pa.int32()), pa.field("b", pa.struct([pa.field("c", pa.string())])),
                        pa.field("l", pa.large_list(pa.float32())), pa.field("f", pa.list_(pa.float32(), 4))])
    assert lance_fields(lancer.schema.LanceSchema.from_pyarrow(nested)) == \
        lance_fields(lance.schema.LanceSchema.from_pyarrow(nested))
    e_theirs = outcome(lambda: lance.schema.LanceSchema.from_pyarrow("x"))
    e_ours = outcome(lambda: lancer.schema.LanceSchema.from_pyarrow("x"))
    assert e_ours == e_theirs


def test_fragment_validate_and_physical_schema(written):
    theirs, ours = lance.dataset(written), lancer.dataset(written)
    for ft, fo in zip(theirs.get_fragments(), ours.get_fragments()):
        assert outcome(fo.validate) == outcome(ft.validate) == ("ok", None)
        assert outcome(lambda: fo.physical_schema) == outcome(lambda: ft.physical_schema)
    victim = theirs.get_fragments()[1].data_files()[0].path
    os.remove(os.path.join(written, "data", victim))
    theirs, ours = lance.dataset(written), lancer.dataset(written)
    for ft, fo in zip(theirs.get_fragments(), ours.get_fragments()):
        e_theirs, e_ours = outcome(ft.validate), outcome(fo.validate)
        assert (e_ours[0] == "ok") == (e_theirs[0] == "ok"), ft.fragment_id
        if e_theirs[0] != "ok":
            with pytest.raises(OSError, match=victim):
                fo.validate()


def test_scan_batches(written):
    theirs, ours = lance.dataset(written), lancer.dataset(written)
    expected = list(theirs.scanner(columns=["id", "s"], batch_size=3).to_batches())
    got = ours.scanner(columns=["id", "s"], batch_size=3).scan_batches()
    assert all(isinstance(b, pa.RecordBatch) for b in got)
    assert pa.Table.from_batches(got).equals(pa.Table.from_batches(expected))
    # pylance 14's own scan_batches waits for a None pyarrow never returns: it reads
    # every batch and raises StopIteration (lancer returns the list it means to)
    assert outcome(lambda: theirs.scanner(columns=["id"]).scan_batches())[0] == "StopIteration"


def strip_times(tags):
    return {n: {k: v for k, v in t.items() if k not in ("created_at", "updated_at")} for n, t in tags.items()}


def test_tags_with_metadata(written):
    """Each library makes the same tags on its own copy; both list the same, and each
    reads the other's files."""
    results = {}
    for name, lib in LIBS.items():
        path = f"{written}_{name}"
        os.system(f"cp -r {written} {path}")
        ds = lib.dataset(path)
        ds.tags.create("a", 1)
        ds.tags.create("b", "a")
        ds.tags.create("c")
        ds.tags.create("d", (None, 2))
        ds.tags.replace_metadata("a", {"k": "v", "z": "1"})
        before = ds.tags.list()["a"]
        time.sleep(0.01)
        ds.tags.update("a", 2)
        after = ds.tags.list()["a"]
        assert after["created_at"] == before["created_at"] and after["updated_at"] > before["updated_at"]
        assert after["created_at"].tzinfo is not None
        ds.tags.replace_metadata("b", {"x": "y"})
        assert lib.dataset(path).tags.list()["b"]["updated_at"] == ds.tags.list()["b"]["updated_at"]
        results[name] = (strip_times(ds.tags.list()), path)
        assert json.loads(open(os.path.join(path, "_refs/tags/a.json")).read()).keys() == {
            "branch", "version", "createdAt", "updatedAt", "manifestSize", "metadata"}
    assert results["lancer"][0] == results["pylance"][0]
    for name, (tags, path) in results.items():
        for lib in LIBS.values():
            assert strip_times(lib.dataset(path).tags.list()) == tags
            assert lib.dataset(path, version="a").version == 2
    path = results["pylance"][1]
    for call in (lambda d: d.tags.replace_metadata("zz", {}), lambda d: d.tags.replace_metadata("a", {"k": 1}),
                 lambda d: d.tags.update("zz", 1), lambda d: d.tags.create("a", 1), lambda d: d.tags.create("q", 99),
                 lambda d: d.tags.create("q", "nope")):
        e_theirs, e_ours = outcome(lambda: call(lance.dataset(path))), outcome(lambda: call(lancer.dataset(path)))
        assert e_theirs[0] != "ok"
        kinds = {"ValueError": ValueError, "TypeError": TypeError, "OSError": OSError}
        assert e_ours[0] != "ok"
        with pytest.raises(kinds[e_theirs[0]]):
            call(lancer.dataset(path))


def test_read_counters(written):
    """pylance counts reads process-wide; lancer per session (a dataset's, or one passed)."""
    before = (lance.bytes_read_counter(), lance.iops_counter())
    lance.dataset(written).to_table()
    assert lance.bytes_read_counter() > before[0] and lance.iops_counter() > before[1]
    ds = lancer.dataset(written)
    start = (lancer.bytes_read_counter(ds), lancer.iops_counter(ds))
    ds.to_table()
    ds.get_fragments()[0].validate()
    assert lancer.bytes_read_counter(ds) > start[0] and lancer.iops_counter(ds.session()) > start[1]
    assert lancer.iops_counter(lancer.Session()) == 0
    with pytest.raises(TypeError, match="no process-wide counters"):
        lancer.bytes_read_counter()


def keys_of(schema):
    return ([(f.name(), f.is_unenforced_primary_key(), f.unenforced_primary_key_position(),
              f.is_unenforced_clustering_key(), f.unenforced_clustering_key_position()) for f in schema.fields()],
            [f.name() for f in schema.unenforced_primary_key()], [f.name() for f in schema.unenforced_clustering_key()])


def test_unenforced_keys(tmp_path):
    pk, ck = "lance-schema:unenforced-primary-key", "lance-schema:unenforced-clustering-key"
    schema = pa.schema([
        pa.field("a", pa.int64(), False, metadata={pk: "true", f"{pk}:position": "2"}),
        pa.field("b", pa.string(), False, metadata={pk: "TRUE", f"{pk}:position": "1"}),
        pa.field("c", pa.int64(), False, metadata={pk: "true"}),
        pa.field("d", pa.int64(), False, metadata={ck: "true", f"{ck}:position": "1"}),
        pa.field("e", pa.int64(), True, metadata={ck: "true"}),
        pa.field("f", pa.int64(), True, metadata={f"{ck}:position": "2"}),
        pa.field("g", pa.int64(), False, metadata={f"{pk}:position": "3"}),
        pa.field("h", pa.int64(), False, metadata={pk: "yes"}),
        pa.field("i", pa.int64(), True, metadata={f"{ck}:position": "0"}),
        pa.field("j", pa.int64(), True, metadata={f"{ck}:position": "x"}),
        pa.field("k", pa.int64(), True, metadata={ck: "false", f"{ck}:position": "4"}),
    ])
    assert keys_of(lancer.schema.LanceSchema.from_pyarrow(schema)) == \
        keys_of(lance.schema.LanceSchema.from_pyarrow(schema))
    data = pa.table({n: ([1, 2] if n != "b" else ["x", "y"]) for n in "abcdefghijk"}, schema=schema)
    path = str(tmp_path / "pylance")
    lance.write_dataset(data, path)
    assert keys_of(lancer.dataset(path).lance_schema) == keys_of(lance.dataset(path).lance_schema)
    # lancer's writer records no key in the manifest's fields, where pylance reads them:
    # pylance sees no primary key on lancer's dataset, and neither does lancer
    path = str(tmp_path / "lancer")
    lancer.write_dataset(data, path)
    theirs, ours = keys_of(lance.dataset(path).lance_schema), keys_of(lancer.dataset(path).lance_schema)
    assert ours[1] == theirs[1] == []
    assert [k[:3] for k in ours[0]] == [k[:3] for k in theirs[0]]
