"""Vector columns of ``arrow.fixed_shape_tensor`` (issue 61): searched, indexed and read
back as pylance 14 does it — the tensor's fixed-size-list storage is the vector —
on the same pylance-written data, each engine searching the other's index."""

import shutil

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer

DIM = 8


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def tensors(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp(f"tensor-{request.param}") / "t.lance")
    arr = np.random.default_rng(3).random((400, DIM), dtype=np.float32)
    t = pa.table({"id": list(range(400)), "v": pa.FixedShapeTensorArray.from_numpy_ndarray(arr)})
    lance.write_dataset(t.slice(0, 250), path, data_storage_version=request.param)
    lance.write_dataset(t.slice(250), path, mode="append")
    lance.dataset(path).delete("id % 17 = 2")
    return path, arr


def search(lib, path, q, **kw):
    t = lib.dataset(path).to_table(nearest={"column": "v", "q": q, "k": 7, **kw})
    return t


def test_a_flat_search_answers_as_pylance(tensors):
    path, arr = tensors
    for q in (arr[5], arr[300].tolist(), arr[0] * 0.5):
        ours, theirs = search(lancer, path, q), search(lance, path, q)
        assert ours.schema == theirs.schema
        assert ours["id"].to_pylist() == theirs["id"].to_pylist()
        np.testing.assert_allclose(ours["_distance"].to_numpy(), theirs["_distance"].to_numpy(), rtol=1e-5)


@pytest.mark.parametrize("kind,params", [("IVF_FLAT", {"num_partitions": 2}),
                                         ("IVF_PQ", {"num_partitions": 2, "num_sub_vectors": 2})])
def test_an_index_either_engine_builds_is_searched_by_both(tensors, tmp_path, kind, params):
    path, arr = tensors
    for builder in (lance, lancer):
        copy = str(tmp_path / f"{builder.__name__}.lance")
        shutil.copytree(path, copy)
        builder.dataset(copy).create_index("v", kind, **params)
        assert [i.index_type for i in lance.dataset(copy).describe_indices()] == \
            [i.index_type for i in lancer.dataset(copy).describe_indices()]
        for q in (arr[5], arr[391]):
            ours = search(lancer, copy, q, nprobes=2)
            theirs = search(lance, copy, q, nprobes=2)
            assert ours["id"].to_pylist()[0] == theirs["id"].to_pylist()[0]
            if kind == "IVF_FLAT":
                assert ours["id"].to_pylist() == theirs["id"].to_pylist()
        plan = lancer.dataset(copy).scanner(nearest={"column": "v", "q": arr[5], "k": 3}).explain_plan()
        assert "ANNSubIndex" in plan or "ANNIvfPartition" in plan, plan


def test_a_tensor_column_lancer_writes_reads_in_pylance(tmp_path):
    arr = np.arange(5 * DIM, dtype=np.float32).reshape(5, DIM)
    t = pa.table({"v": pa.FixedShapeTensorArray.from_numpy_ndarray(arr)})
    path = str(tmp_path / "w.lance")
    lancer.write_dataset(t, path)
    back = lance.dataset(path).to_table()
    assert back.schema == t.schema and back == t
    assert search(lance, path, arr[2])["_distance"].to_pylist()[0] == 0.0
