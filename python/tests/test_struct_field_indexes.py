"""Indexes on struct fields (issue 61): BTREE, BITMAP, INVERTED and vector indexes on
``meta.score`` / ``meta.lang`` / ``meta.text`` / ``meta.vec``, built by pylance 14 or by
lancer on copies of one pylance-written dataset (several fragments, deletions, null
structs in 2.2), listed, planned and queried by both, each on the other's index."""

import shutil

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer

N = 360


def table(with_nulls):
    rng = np.random.default_rng(5)
    meta = pa.StructArray.from_arrays(
        [pa.array([["en", "fr", "de"][i % 3] for i in range(N)]), pa.array(list(range(N)), pa.int64()),
         pa.array([f"hello w{i % 5} world {i % 7}" for i in range(N)]),
         pa.FixedSizeListArray.from_arrays(pa.array(rng.random(N * 4, dtype=np.float32)), 4)],
        names=["lang", "score", "text", "vec"],
        mask=pa.array([with_nulls and i % 23 == 0 for i in range(N)]))
    return pa.table({"id": list(range(N)), "meta": meta})


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def base(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp(f"struct-{request.param}") / "b.lance")
    t = table(request.param != "2.0")
    lance.write_dataset(t.slice(0, 200), path, data_storage_version=request.param)
    lance.write_dataset(t.slice(200), path, mode="append")
    lance.dataset(path).delete("id % 19 = 7")
    return path


def build(lib, path):
    ds = lib.dataset(path)
    ds.create_scalar_index("meta.score", "BTREE")
    ds.create_scalar_index("meta.lang", "BITMAP")
    ds.create_scalar_index("meta.text", "INVERTED")
    ds.create_index("meta.vec", "IVF_FLAT", num_partitions=2)


FILTERS = ["meta.score > 300", "meta.score BETWEEN 10 AND 40 AND id % 2 = 0", "meta.lang = 'fr'",
           "meta.lang IN ('de', 'en') AND meta.score < 30", "meta.score = 123"]


@pytest.mark.parametrize("builder", ["lance", "lancer"])
def test_struct_field_indexes_built_by_either_engine_answer_as_pylance(base, tmp_path, builder):
    path = str(tmp_path / "i.lance")
    shutil.copytree(base, path)
    build({"lance": lance, "lancer": lancer}[builder], path)
    ours, theirs = lancer.dataset(path), lance.dataset(path)
    assert sorted((i.name, list(i.field_names), i.index_type) for i in ours.describe_indices()) == \
        sorted((i.name, list(i.field_names), i.index_type) for i in theirs.describe_indices())
    for f in FILTERS:
        got = sorted(ours.to_table(columns=["id"], filter=f)["id"].to_pylist())
        assert got == sorted(theirs.to_table(columns=["id"], filter=f)["id"].to_pylist()), f
        assert got
        assert ours.count_rows(f) == len(got)
        assert "ScalarIndexQuery" in ours.scanner(filter=f).explain_plan(), f
    # full-text search of the struct field: the same rows and scores
    q = {"columns": ["meta.text"], "query": "w3"}
    a = ours.to_table(columns=["id"], full_text_query=q).sort_by("id")
    b = theirs.to_table(columns=["id"], full_text_query=q).sort_by("id")
    assert a["id"] == b["id"] and len(a) > 0
    np.testing.assert_allclose(a["_score"].to_numpy(), b["_score"].to_numpy(), rtol=1e-4)
    # a vector search through the struct field's index
    qv = [0.5, 0.5, 0.5, 0.5]
    a = ours.to_table(columns=["id"], nearest={"column": "meta.vec", "q": qv, "k": 6, "nprobes": 2})
    b = theirs.to_table(columns=["id"], nearest={"column": "meta.vec", "q": qv, "k": 6, "nprobes": 2})
    assert a["id"] == b["id"]
    np.testing.assert_allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(), rtol=1e-5)


def test_an_unknown_struct_field_is_refused(base, tmp_path):
    path = str(tmp_path / "u.lance")
    shutil.copytree(base, path)
    for lib in (lance, lancer):
        with pytest.raises((KeyError, ValueError)):
            lib.dataset(path).create_scalar_index("meta.nope", "BTREE")
    assert lancer.dataset(path).describe_indices() == []
