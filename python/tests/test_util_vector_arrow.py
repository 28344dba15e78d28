"""`lancer.util`, `lancer.vector`, `lancer.arrow` and `lancer.tracing` against pylance
14's `lance.util`, `lance.vector`, `lance.arrow` and `lance.tracing`: each call made
through both on the same inputs, comparing what a user sees (tables, types, values,
printed text, exception types and messages).

pylance's `lance.vector` imports `tqdm` at module level; when tqdm is not installed a
stand-in module is put in `sys.modules` before importing it (only the oracle needs it).
"""

import math
import pickle
import subprocess
import sys
import types
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

try:
    import tqdm.auto  # noqa: F401
except ImportError:
    _tqdm = types.ModuleType("tqdm")
    _tqdm_auto = types.ModuleType("tqdm.auto")
    _tqdm_auto.tqdm = object
    _tqdm.auto = _tqdm_auto
    sys.modules["tqdm"] = _tqdm
    sys.modules["tqdm.auto"] = _tqdm_auto

import lance
import lance.arrow as parrow
import lance.tracing as ptracing
import lance.util as putil
import lance.vector as pvector
import lancer
import lancer.arrow as larrow
import lancer.tracing as ltracing
import lancer.util as lutil
import lancer.vector as lvector


def outcome(f, *args, **kwargs):
    """("ok", result) or ("err", exception type name, message)."""
    try:
        return ("ok", f(*args, **kwargs))
    except Exception as e:  # noqa: BLE001
        return ("err", type(e).__name__, str(e))


def same_outcome(pf, lf, *args, **kwargs):
    p = outcome(pf, *args, **kwargs)
    q = outcome(lf, *args, **kwargs)
    assert p[0] == q[0], (p, q)
    if p[0] == "err":
        assert p[1:] == q[1:]
    return p, q


def has(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# --- lance.util: reachability ----------------------------------------------------------


def test_modules_reachable_as_in_pylance():
    assert lancer.util is lutil and lance.util is putil
    assert lancer.sanitize_ts is lutil.sanitize_ts
    for name in ["sanitize_ts", "td_to_micros", "KMeans", "validate_vector_index", "HNSW"]:
        assert hasattr(putil, name) and hasattr(lutil, name)
    public = [n for n in dir(pvector) if not n.startswith("_") and callable(getattr(pvector, n))
              and getattr(getattr(pvector, n), "__module__", "") == "lance.vector"]
    assert public and all(hasattr(lvector, n) for n in public)
    assert set(parrow.__all__) == set(larrow.__all__)
    for name in parrow.__all__ + ["ImageURIScalar", "EncodedImageScalar", "FixedShapeImageTensorScalar",
                                  "EncodedImageArray", "FixedShapeImageTensorArray"]:
        assert hasattr(larrow, name), name
    for name in ["trace_to_chrome", "capture_trace_events", "TraceEvent"]:
        assert hasattr(ptracing, name) and hasattr(ltracing, name)


# --- sanitize_ts / td_to_micros -------------------------------------------------------

TS_INPUTS = [
    datetime(2024, 1, 2, 3, 4, 5),
    datetime(1999, 12, 31, 23, 59, 59, 999999),
    pd.Timestamp("2024-05-06 07:08:09.123456"),
    pd.Timestamp("2024-05-06T07:08:09", tz="UTC"),
    "2024-01-02 03:04:05",
    "2024-01-02",
    "2024-01-02T03:04:05.5",
    "2024-01-02T03:04:05+02:00",
    "Jan 5 2021",
    "not a time",
    "",
    12345,
    1.5,
    None,
    b"2024-01-02",
]


@pytest.mark.parametrize("ts", TS_INPUTS, ids=[repr(t) for t in TS_INPUTS])
def test_sanitize_ts(ts):
    p, q = same_outcome(putil.sanitize_ts, lutil.sanitize_ts, ts)
    if p[0] == "ok":
        assert type(p[1]) is type(q[1]) and p[1] == q[1] and p[1].tzinfo == q[1].tzinfo


TDS = [timedelta(0), timedelta(seconds=1), timedelta(days=3, microseconds=7), timedelta(microseconds=-1),
       timedelta(days=-2, seconds=5), timedelta(milliseconds=1.5), timedelta(weeks=5000), pd.Timedelta("1h")]


@pytest.mark.parametrize("td", TDS, ids=[str(t) for t in TDS])
def test_td_to_micros(td):
    p, q = same_outcome(putil.td_to_micros, lutil.td_to_micros, td)
    assert p == q and type(p[1]) is type(q[1])


def test_td_to_micros_errors():
    for bad in [5, "1s", None]:
        same_outcome(putil.td_to_micros, lutil.td_to_micros, bad)


# --- KMeans ---------------------------------------------------------------------------


def blobs(k, dim, per, seed, spread=0.05):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, dim)).astype(np.float32) * 10
    centers[:, 0] = np.arange(k) * 30.0
    labels = np.repeat(np.arange(k), per)
    data = centers[labels] + rng.standard_normal((k * per, dim)).astype(np.float32) * spread
    order = rng.permutation(len(data))
    return data[order].astype(np.float32), labels[order], centers


def same_partition(a, b):
    """Whether two labelings group the rows alike (labels may be renamed)."""
    a = np.asarray(a)
    b = np.asarray(b)
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("metric", ["l2", "euclidean", "L2", "dot", "DOT", "cosine", "hamming", "", "Cosine "])
def test_kmeans_metric_names(metric):
    p, q = same_outcome(lambda: repr(putil.KMeans(3, metric_type=metric)),
                        lambda: repr(lutil.KMeans(3, metric_type=metric)))
    assert p == q


@pytest.mark.parametrize("dim", [1, 2, 8, 33, 128])
@pytest.mark.parametrize("kind", ["numpy", "fsl", "tensor"])
def test_kmeans_l2_recovers_blobs_like_pylance(dim, kind):
    data, truth, _ = blobs(5, dim, 60, seed=dim)
    # random initial rows land two in one blob most of the time (both libraries find
    # the 5 blobs in 25-35% of fits here): require each to find them within 40 fits
    conv = {
        "numpy": lambda x: x,
        "fsl": lambda x: pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), x.shape[1]),
        "tensor": lambda x: pa.FixedShapeTensorArray.from_numpy_ndarray(x),
    }[kind]
    for mod in (putil, lutil):
        found = False
        for _ in range(40):
            km = mod.KMeans(5, metric_type="l2")
            assert km.centroids is None
            assert km.fit(conv(data)) is None
            pred = km.predict(conv(data))
            assert pred.type == pa.uint32() and len(pred) == len(data) and pred.null_count == 0
            c = km.centroids
            assert isinstance(c, pa.FixedShapeTensorArray)
            assert c.type == pa.fixed_shape_tensor(pa.float32(), (dim,)) and len(c) == 5
            if same_partition(pred.to_numpy(), truth):
                found = True
                break
        assert found, mod.__name__


def test_kmeans_quality_matches_pylance():
    """Average loss over several fits on overlapping data: Lancer's within 5% of
    pylance's."""
    rng = np.random.default_rng(7)
    data = rng.standard_normal((3000, 16)).astype(np.float32)

    def loss(mod):
        total = 0.0
        for _ in range(4):
            km = mod.KMeans(16, max_iters=50)
            km.fit(data)
            c = km.centroids.to_numpy_ndarray()
            p = km.predict(data).to_numpy()
            total += float(((data - c[p]) ** 2).sum())
        return total / 4

    lp, ll = loss(putil), loss(lutil)
    assert ll <= lp * 1.05, (lp, ll)


def test_kmeans_dot_unit_centroids_and_directions():
    rng = np.random.default_rng(2)
    dirs = rng.standard_normal((4, 8)).astype(np.float32)
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    labels = np.repeat(np.arange(4), 50)
    data = (dirs[labels] * rng.uniform(1, 5, (200, 1)) + rng.standard_normal((200, 8)) * 0.01).astype(np.float32)
    for mod in (putil, lutil):
        ok = False
        for _ in range(30):
            km = mod.KMeans(4, metric_type="dot")
            km.fit(data)
            norms = np.linalg.norm(km.centroids.to_numpy_ndarray(), axis=1)
            np.testing.assert_allclose(norms, 1.0, rtol=1e-4)
            if same_partition(km.predict(data).to_numpy(), labels):
                ok = True
                break
        assert ok, mod.__name__


def test_kmeans_cosine_clusters_directions():
    """pylance 14's native k-means panics on cosine; Lancer's clusters by direction."""
    rng = np.random.default_rng(4)
    dirs = rng.standard_normal((3, 6)).astype(np.float32)
    labels = np.repeat(np.arange(3), 40)
    data = (dirs[labels] * rng.uniform(0.5, 20, (120, 1)) + rng.standard_normal((120, 6)) * 0.001).astype(np.float32)
    ok = False
    for _ in range(30):
        km = lutil.KMeans(3, metric_type="cosine")
        km.fit(data)
        if same_partition(km.predict(data).to_numpy(), labels):
            ok = True
            break
    assert ok


@pytest.mark.parametrize("metric", ["l2", "dot"])
def test_kmeans_given_centroids(metric):
    data, _, centers = blobs(4, 8, 50, seed=11, spread=2.0)
    init = pa.FixedSizeListArray.from_arrays(pa.array(data[:4].ravel()), 8)
    pk, lk = putil.KMeans(4, metric_type=metric, centroids=init), lutil.KMeans(4, metric_type=metric, centroids=init)
    # before fitting: the given centroids, and predictions with them
    np.testing.assert_allclose(pk.centroids.to_numpy_ndarray(), lk.centroids.to_numpy_ndarray(), rtol=1e-6, atol=1e-7)
    assert pk.centroids.type == lk.centroids.type
    assert pk.predict(data).to_pylist() == lk.predict(data).to_pylist()
    # fitting: pylance's result is not determined by the given centroids (its fit
    # draws again); Lancer's starts from them. Both give k trained centroids.
    pk.fit(data)
    lk.fit(data)
    assert len(pk.centroids) == len(lk.centroids) == 4 and pk.centroids.type == lk.centroids.type
    lk2 = lutil.KMeans(4, metric_type=metric, centroids=init)
    lk2.fit(data)
    assert lk2.predict(data).to_pylist() == lk.predict(data).to_pylist()


BAD_INPUTS = [
    np.zeros((4, 3), dtype=np.float64),
    np.zeros(4, dtype=np.float32),
    np.zeros((2, 2, 2), dtype=np.float32),
    [[1.0, 2.0], [3.0, 4.0]],
    pa.array([1.0, 2.0], pa.float32()),
    pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0, 3.0, 4.0], pa.float64()), 2),
    pa.FixedSizeListArray.from_arrays(pa.array([1, 2, 3, 4], pa.int32()), 2),
    pa.FixedShapeTensorArray.from_numpy_ndarray(np.zeros((3, 2, 2), np.float32)),
    pa.FixedShapeTensorArray.from_numpy_ndarray(np.zeros((3, 2), np.float64)),
    None,
    "vectors",
]


@pytest.mark.parametrize("bad", BAD_INPUTS, ids=[type(b).__name__ + str(i) for i, b in enumerate(BAD_INPUTS)])
def test_kmeans_input_errors(bad):
    same_outcome(lambda: putil.KMeans(2).fit(bad), lambda: lutil.KMeans(2).fit(bad))
    trained = {}
    for mod in (putil, lutil):
        km = mod.KMeans(2)
        km.fit(np.random.default_rng(0).standard_normal((10, 2)).astype(np.float32))
        trained[mod] = km
    same_outcome(lambda: trained[putil].predict(bad), lambda: trained[lutil].predict(bad))


def test_kmeans_errors_and_edges():
    d = np.random.default_rng(1).standard_normal((30, 4)).astype(np.float32)
    # untrained
    same_outcome(lambda: putil.KMeans(2).predict(d), lambda: lutil.KMeans(2).predict(d))
    # fewer rows than clusters, no rows
    for rows in [d[:3], d[:0]]:
        same_outcome(lambda: putil.KMeans(5).fit(rows), lambda: lutil.KMeans(5).fit(rows))
    # as many rows as clusters: each its own cluster
    for mod in (putil, lutil):
        km = mod.KMeans(3)
        km.fit(d[:3])
        assert sorted(km.predict(d[:3]).to_pylist()) == [0, 1, 2]
    # one cluster
    p1, l1 = putil.KMeans(1), lutil.KMeans(1)
    p1.fit(d)
    l1.fit(d)
    assert p1.predict(d).to_pylist() == l1.predict(d).to_pylist() == [0] * 30
    np.testing.assert_allclose(p1.centroids.to_numpy_ndarray(), l1.centroids.to_numpy_ndarray(), rtol=1e-5, atol=1e-6)
    # dimension mismatch
    pk, lk = putil.KMeans(2), lutil.KMeans(2)
    pk.fit(d)
    lk.fit(d)
    same_outcome(lambda: pk.predict(d[:, :2].copy()), lambda: lk.predict(d[:, :2].copy()))
    # empty prediction input
    assert pk.predict(d[:0]).to_pylist() == lk.predict(d[:0]).to_pylist() == []
    # too few given centroids
    init = pa.FixedSizeListArray.from_arrays(pa.array(d[:2].ravel()), 4)
    same_outcome(lambda: putil.KMeans(3, centroids=init).fit(d), lambda: lutil.KMeans(3, centroids=init).fit(d))
    # max_iters=0 leaves no centroids
    pz, lz = putil.KMeans(2, max_iters=0), lutil.KMeans(2, max_iters=0)
    pz.fit(d)
    lz.fit(d)
    assert len(pz.centroids) == len(lz.centroids) == 0
    assert pz.centroids.type == lz.centroids.type
    # attributes
    assert pk.k == lk.k == 2
    assert [a for a in dir(pk) if not a.startswith("_")] == [a for a in dir(lk) if not a.startswith("_")]


def test_kmeans_nulls_and_nan():
    fsl = pa.array([[1.0, 2.0], None, [3.0, 4.0], [50.0, 60.0], [51.0, 61.0]], pa.list_(pa.float32(), 2))
    init = pa.FixedSizeListArray.from_arrays(pa.array([0.0, 0.0, 50.0, 60.0], pa.float32()), 2)
    pk, lk = putil.KMeans(2, centroids=init), lutil.KMeans(2, centroids=init)
    assert pk.predict(fsl).to_pylist() == lk.predict(fsl).to_pylist()
    nan = np.array([[np.nan, 1.0], [1.0, 1.0], [np.inf, 0.0], [49.0, 59.0]], np.float32)
    assert pk.predict(nan).to_pylist() == lk.predict(nan).to_pylist()
    withnan = np.array([[1, 2], [np.nan, 1], [3, 4], [50, 60], [52, 62]], np.float32)
    for mod in (putil, lutil):
        km = mod.KMeans(2, centroids=init)
        km.fit(withnan)
        out = km.predict(withnan).to_pylist()
        assert out[1] is None and out[0] == out[2] and out[3] == out[4] and out[0] != out[3]


def test_kmeans_large_k_and_dims():
    data = np.random.default_rng(5).standard_normal((2000, 64)).astype(np.float32)
    for mod in (putil, lutil):
        km = mod.KMeans(64, max_iters=10)
        km.fit(data)
        pred = km.predict(data).to_numpy()
        assert len(km.centroids) == 64 and pred.max() < 64 and len(np.unique(pred)) > 48


# --- validate_vector_index ------------------------------------------------------------


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    rng = np.random.default_rng(9)
    n = 600
    vecs = rng.standard_normal((n, 8)).astype(np.float32)
    vecs[5] = np.nan
    table = pa.table({"id": np.arange(n), "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), 8)})
    path = str(tmp_path_factory.mktemp("vvi") / "d.lance")
    ds = lance.write_dataset(table, path)
    ds.create_index("vec", index_type="IVF_FLAT", num_partitions=4)
    return path


@pytest.mark.parametrize("kwargs", [{}, {"refine_factor": 1}, {"sample_size": 50}, {"pass_threshold": 0.5},
                                    {"pass_threshold": 1.5}])
def test_validate_vector_index(indexed, kwargs):
    p = outcome(putil.validate_vector_index, lance.dataset(indexed), "vec", **kwargs)
    q = outcome(lutil.validate_vector_index, lancer.dataset(indexed), "vec", **kwargs)
    assert p[0] == q[0] and p[1:] == q[1:], (p, q)


def test_validate_vector_index_bad_column(indexed):
    p = outcome(putil.validate_vector_index, lance.dataset(indexed), "nope")
    q = outcome(lutil.validate_vector_index, lancer.dataset(indexed), "nope")
    assert p[0] == q[0] == "err"


def test_hnsw_not_available():
    with pytest.raises(NotImplementedError, match="HNSW"):
        lutil.HNSW.build(iter([pa.array([[1.0, 2.0]], pa.list_(pa.float32(), 2))]))


# --- vec_to_table ---------------------------------------------------------------------

rng0 = np.random.default_rng(0)
VEC_CASES = [
    ({"a": [1.0, 2.0], "b": [3.0, 4.0]}, {}),
    ({"x": np.arange(5.0), "y": np.ones(5)}, {}),
    ({1: [1, 2, 3], 2: [4, 5, 6]}, {}),
    ({"a": [1.0, 2.0]}, {"names": ["key", "emb"]}),
    ({"a": [1.0, 2.0]}, {"names": ("key", "emb")}),
    ({"a": [1.0, 2.0]}, {"names": "ab"}),
    ({"a": [1.0, 2.0]}, {"names": "abc"}),
    ({"a": [1.0, 2.0], "b": [3.0]}, {}),
    ({"a": [1.0, 2.0], "b": [3.0]}, {"check_ndim": False}),
    ({"a": [1.0, 2.0, 3.0, 4.0]}, {"ndim": 2, "check_ndim": False}),
    ({"a": [1.0, 2.0, 3.0, 4.0]}, {"ndim": 2}),
    ({}, {}),
    ([[1.0, 2.0], [3.0, 4.0]], {}),
    ([[1, 2], [3, 4]], {"names": "v"}),
    ([[1, 2], [3, 4]], {"names": ["v"]}),
    ([[1, 2], [3, 4]], {"names": ["v", "w"]}),
    ([[1.0, 2.0], [3.0]], {}),
    ([[1.0, 2.0, 3.0]], {"ndim": 3}),
    ([np.float32(1.5)], {}),
    ([], {}),
    ([[]], {}),
    (rng0.standard_normal((7, 16)), {}),
    (rng0.standard_normal((7, 1)).astype(np.float32), {"names": "e"}),
    (np.arange(12).reshape(3, 4), {}),
    (np.zeros((0, 4)), {}),
    (np.array([[np.nan, np.inf], [-np.inf, 1e40]]), {}),
    (rng0.standard_normal(5), {}),
    (((1.0, 2.0), (3.0, 4.0)), {}),
    ("abc", {}),
    (pa.array([[1.0]]), {}),
    ([[1.0, None]], {}),
]


@pytest.mark.parametrize("data,kwargs", VEC_CASES, ids=[f"case{i}" for i in range(len(VEC_CASES))])
def test_vec_to_table(data, kwargs):
    p = outcome(pvector.vec_to_table, data, **kwargs)
    q = outcome(lvector.vec_to_table, data, **kwargs)
    assert p[0] == q[0], (p, q)
    if p[0] == "err":
        assert p[1] == q[1]
        if p[1] != "TypeError":
            assert p[2] == q[2]
        return
    assert p[1].schema == q[1].schema
    for a, b in zip(p[1].columns, q[1].columns):
        if pa.types.is_fixed_size_list(a.type):
            np.testing.assert_array_equal(a.combine_chunks().flatten().to_numpy(zero_copy_only=False),
                                          b.combine_chunks().flatten().to_numpy(zero_copy_only=False))
        else:
            assert a.equals(b)


def test_vec_to_table_written_reads_back(tmp_path):
    t = lvector.vec_to_table(np.random.default_rng(1).standard_normal((20, 4)))
    lancer.write_dataset(t, str(tmp_path / "d.lance"))
    assert lance.dataset(str(tmp_path / "d.lance")).to_table().equals(t)


ACCEL = [
    ("train_ivf_centroids_on_accelerator", lambda ds: (ds, "vector", 2, "l2", "cuda")),
    ("train_ivf_centroids_on_accelerator", lambda ds: (ds, "vector", 2, "bogus", "cpu")),
    ("train_pq_codebook_on_accelerator", lambda ds: (ds, "l2", "cuda", 2)),
    ("compute_partitions", lambda ds: (ds, "vector", None)),
    ("compute_pq_codes", lambda ds: (ds, [None])),
    ("one_pass_train_ivf_pq_on_accelerator", lambda ds: (ds, "vector", 2, "l2", "cuda", 2)),
    ("one_pass_assign_ivf_pq_on_accelerator", lambda ds: (ds, "vector", "l2", "cuda", None, [None])),
]


@pytest.mark.skipif(has("torch"), reason="the no-torch behaviour is what is compared")
@pytest.mark.parametrize("name,args", ACCEL, ids=[a[0] + str(i) for i, a in enumerate(ACCEL)])
def test_accelerator_functions_without_torch(tmp_path, name, args):
    path = str(tmp_path / "d.lance")
    lance.write_dataset(pvector.vec_to_table(np.random.default_rng(0).standard_normal((10, 4))), path)
    p = outcome(getattr(pvector, name), *args(lance.dataset(path)))
    q = outcome(getattr(lvector, name), *args(lancer.dataset(path)))
    assert p == q and p[0] == "err" and p[1] == "ModuleNotFoundError" and "torch" in p[2]


def test_accelerator_signatures_match():
    import inspect

    for name, _ in ACCEL:
        ps = inspect.signature(getattr(pvector, name))
        ls = inspect.signature(getattr(lvector, name))
        assert list(ps.parameters) == list(ls.parameters), name
        for a, b in zip(ps.parameters.values(), ls.parameters.values()):
            assert a.kind == b.kind and a.default == b.default, (name, a, b)


@pytest.mark.parametrize("name,args", [
    ("find_duplicate_pairs", ("vector", 0.1)),
    ("find_duplicate_pairs_in_partition", ("vector", "00000000-0000-0000-0000-000000000000", 0, 0.1)),
    ("hamming_clustering_for_ivf_partition", ("idx", 0, 3)),
    ("get_ivf_partition_info", ("idx",)),
    ("hamming_clustering_for_sample", ("vector",)),
    ("hamming_clustering_for_range", ("vector", 0, 0, 5)),
])
def test_native_scans_not_in_lancer(tmp_path, name, args):
    path = str(tmp_path / "d.lance")
    lancer.write_dataset(lvector.vec_to_table(np.zeros((4, 8))), path)
    with pytest.raises(NotImplementedError, match=name):
        getattr(lvector, name)(lancer.dataset(path), *args)


# --- bfloat16 -------------------------------------------------------------------------

BF_VALUES = [0.0, -0.0, 1.0, 1.5, -2.25, 3.14159, 0.1, 1e10, 1e-30, 1e-40, 65504.0, 123456.0, 3.3e38, 1e40,
             -1e40, float("inf"), float("-inf"), float("nan"), 1 + 2 ** -8, 1 + 2 ** -8 + 2 ** -30, 1 + 3 * 2 ** -8,
             7, -3, True, np.float32(2.5), np.float64(0.3), np.int64(9)]


@pytest.mark.parametrize("v", BF_VALUES, ids=[repr(v) for v in BF_VALUES])
def test_bfloat16_value(v):
    import lance.lance as native

    p, q = native.BFloat16(v), larrow.BFloat16(v)
    assert str(p) == str(q) and repr(p) == repr(q)
    pf, qf = p.as_float(), q.as_float()
    assert (math.isnan(pf) and math.isnan(qf)) or (pf == qf and math.copysign(1, pf) == math.copysign(1, qf))
    assert parrow.bfloat16_array([v]).storage.to_pylist() == larrow.bfloat16_array([v]).storage.to_pylist()


def test_bfloat16_value_errors_and_ordering():
    import lance.lance as native

    for bad in ["x", None, [1.0], b"ab"]:
        same_outcome(native.BFloat16, larrow.BFloat16, bad)
    for raw in [b"", b"abc", b"\x00\x00", b"\x80\x3f", b"\xc0\x7f", b"\x80\xff"]:
        p, q = same_outcome(native.BFloat16.from_bytes, larrow.BFloat16.from_bytes, raw)
        if p[0] == "ok":
            assert str(p[1]) == str(q[1])
    P, L = native.BFloat16, larrow.BFloat16
    for a, b in [(1.0, 2.0), (2.0, 1.0), (1.0, 1.0), (1.0, 1.001), (-0.0, 0.0), (float("nan"), 1.0)]:
        for op in ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]:
            assert getattr(P(a), op)(P(b)) == getattr(L(a), op)(L(b)), (a, b, op)
    assert (P(1.0) == 1.0) == (L(1.0) == 1.0)
    same_outcome(lambda: P(1.0) < 2.0, lambda: L(1.0) < 2.0)
    same_outcome(lambda: hash(P(1.0)), lambda: hash(L(1.0)))


def test_bfloat16_text_many_values():
    import lance.lance as native

    rng = np.random.default_rng(0)
    vals = list(rng.standard_normal(2000) * 10.0 ** rng.integers(-38, 38, 2000)) + [i / 7 for i in range(300)]
    assert [str(native.BFloat16(v)) for v in vals] == [str(larrow.BFloat16(v)) for v in vals]


@pytest.mark.parametrize("values", [
    [], [1.0], [1.0, None, 2.5, 3.14159], [None], [None, None], [float("nan"), float("inf")],
    [float(i) / 7 for i in range(21)], [float(i) / 7 for i in range(22)], [float(i) for i in range(100)] + [None],
    np.arange(5, dtype=np.float64), np.linspace(-1, 1, 9, dtype=np.float32), (1, 2, 3), range(4),
])
def test_bfloat16_array(values):
    p, q = parrow.bfloat16_array(values), larrow.bfloat16_array(values)
    assert p.type.extension_name == q.type.extension_name == "lance.bfloat16"
    assert p.type.storage_type == q.type.storage_type == pa.binary(2)
    assert p.storage.equals(q.storage)
    assert p.null_count == q.null_count and len(p) == len(q)
    assert str(p) == str(q)
    assert repr(p).split("\n", 1)[1] == repr(q).split("\n", 1)[1]
    assert [None if s.as_py() is None else str(s.as_py()) for s in p] == \
           [None if s.as_py() is None else str(s.as_py()) for s in q]
    assert [str(s) for s in p] == [str(s) for s in q]


def test_bfloat16_array_errors():
    for bad in [["x"], [1.0, "y"], [[1.0]], 5]:
        same_outcome(parrow.bfloat16_array, larrow.bfloat16_array, bad)


def test_bfloat16_numpy_needs_ml_dtypes():
    p, q = parrow.bfloat16_array([1.0, 2.0]), larrow.bfloat16_array([1.0, 2.0])
    pn, qn = parrow.bfloat16_array([1.0, None]), larrow.bfloat16_array([1.0, None])
    same_outcome(pn.to_numpy, qn.to_numpy)
    if has("ml_dtypes"):
        from ml_dtypes import bfloat16

        np.testing.assert_array_equal(p.to_numpy().astype(np.float32), q.to_numpy().astype(np.float32))
        arr = np.array([1.0, 2.5, -3.0], dtype=bfloat16)
        assert parrow.BFloat16Array.from_numpy(arr).storage.equals(larrow.BFloat16Array.from_numpy(arr).storage)
    else:
        same_outcome(p.to_numpy, q.to_numpy)
        same_outcome(parrow.BFloat16Array.from_numpy, larrow.BFloat16Array.from_numpy, np.zeros(2, np.float32))


def test_bfloat16_pandas():
    q = larrow.bfloat16_array([1.0, None, 2.5])
    s = q.to_pandas()
    assert str(s.dtype) == "lance.bfloat16"
    assert len(s) == 3 and s.isna().tolist() == [False, True, False]
    p = parrow.bfloat16_array([1.0, None, 2.5]).to_pandas()
    assert str(p.dtype) == str(s.dtype) and [str(x) for x in p] == [str(x) for x in s]


def test_bfloat16_pylance_file_reads_back(tmp_path):
    values = [1.0, None, -2.5, 3.14159, float("inf")]
    path = str(tmp_path / "bf.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(5)), "b": parrow.bfloat16_array(values)}), path)
    got = lancer.dataset(path).to_table()
    want = lance.dataset(path).to_table()
    assert got.schema.field("b").type.extension_name == "lance.bfloat16"
    assert got.column("b").combine_chunks().storage.equals(want.column("b").combine_chunks().storage)
    # lancer writes it back readable by pylance
    path2 = str(tmp_path / "bf2.lance")
    lancer.write_dataset(pa.table({"b": larrow.bfloat16_array(values)}), path2)
    back = lance.dataset(path2).to_table().column("b").combine_chunks()
    assert back.type.extension_name == "lance.bfloat16"
    assert back.storage.equals(parrow.bfloat16_array(values).storage)


def test_extension_types_registered_by_lancer_alone(tmp_path):
    """In a process without pylance, `import lancer.arrow` registers the types: a file
    pylance wrote with bfloat16 and image columns reads back with lancer's classes."""
    path = str(tmp_path / "ext.lance")
    tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(np.arange(24, dtype=np.uint8).reshape(2, 2, 3, 2))
    lance.write_dataset(pa.table({
        "b": parrow.bfloat16_array([1.0, 2.0]),
        "u": parrow.ImageURIArray.from_uris(["a.png", "b.png"]),
        "e": pa.ExtensionArray.from_storage(parrow.EncodedImageType(), pa.array([b"x", b"y"])),
        "t": parrow.ImageArray.from_array(tensor),
    }), path)
    code = f"""
import sys, lancer, lancer.arrow as A
assert "lance" not in sys.modules
t = lancer.dataset({path!r}).to_table()
assert type(t.schema.field("b").type) is A.BFloat16Type, t.schema
assert type(t.schema.field("u").type) is A.ImageURIType, t.schema
assert type(t.schema.field("e").type) is A.EncodedImageType, t.schema
ft = t.schema.field("t").type
assert type(ft) is A.FixedShapeImageTensorType and list(ft.shape) == [2, 3, 2], t.schema
c = t.column("b").combine_chunks()
assert isinstance(c, A.BFloat16Array) and [str(v.as_py()) for v in c] == ["1", "2"]
assert t.column("t").combine_chunks().to_numpy().tolist() == {tensor.to_numpy_ndarray().tolist()!r}
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# --- cast -----------------------------------------------------------------------------

FLOAT_ARRAYS = [
    pa.array([1.0, 2.5, -3.14159, 1e10], pa.float32()),
    pa.array([0.1, 1 + 2 ** -8 + 2 ** -30, -0.0], pa.float64()),
    pa.array(np.array([1.0, 0.5, 65504], np.float16)),
    pa.array([], pa.float32()),
    pa.array([float("nan"), float("inf")], pa.float64()),
]


@pytest.mark.parametrize("arr", FLOAT_ARRAYS, ids=[str(a.type) + str(len(a)) for a in FLOAT_ARRAYS])
@pytest.mark.parametrize("target", ["bfloat16", "bf16", "type"])
def test_cast_to_bfloat16(arr, target):
    t = larrow.BFloat16Type() if target == "type" else target
    got = larrow.cast(arr, t)
    want = parrow.bfloat16_array(arr.to_pylist())
    assert got.type.extension_name == "lance.bfloat16"
    assert got.storage.equals(want.storage)


@pytest.mark.parametrize("to", [pa.float32(), pa.float64(), pa.float16()])
def test_cast_from_bfloat16(to):
    values = [1.0, -2.5, 3.14159, 1e-3, float("inf")]
    src = parrow.bfloat16_array(values)
    got = larrow.cast(src, to)
    assert got.type == to
    want = [s.as_py().as_float() for s in src]
    np.testing.assert_array_equal(got.to_numpy(), np.array(want).astype(to.to_pandas_dtype()))
    # nulls stay nulls
    withnull = larrow.cast(larrow.bfloat16_array([1.0, None]), to)
    assert withnull.to_pylist() == [1.0, None]


def test_cast_fixed_size_lists_and_fallback():
    fsl = pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0, 3.0, 4.0], pa.float64()), 2)
    out = larrow.cast(fsl, pa.list_(pa.float32(), 2))
    assert out.type == pa.list_(pa.float32(), 2) and out.to_pylist() == [[1.0, 2.0], [3.0, 4.0]]
    bf = larrow.cast(fsl, pa.list_(larrow.BFloat16Type(), 2))
    assert bf.type.value_type.extension_name == "lance.bfloat16"
    assert bf.values.storage.equals(parrow.bfloat16_array([1.0, 2.0, 3.0, 4.0]).storage)
    back = larrow.cast(bf, pa.list_(pa.float32(), 2))
    assert back.to_pylist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match="same size"):
        larrow.cast(fsl, pa.list_(pa.float32(), 4))
    for arr, t in [(pa.array([1, 2, None]), pa.float64()), (pa.array(["1", "2"]), pa.int32()),
                   (pa.array([1.5]), "int64")]:
        p, q = outcome(pc.cast, arr, t), outcome(larrow.cast, arr, t)
        assert p[0] == q[0] and (p[1].equals(q[1]) if p[0] == "ok" else p[1] == q[1])
    with pytest.raises(ValueError, match="Only support casting floating array to bfloat16"):
        larrow.cast(pa.array([1, 2]), "bf16")
    with pytest.raises(ValueError, match="Only support casting bfloat16 array to floating"):
        larrow.cast(larrow.bfloat16_array([1.0]), pa.int32())


# --- images ---------------------------------------------------------------------------


def ext_view(arr):
    return (type(arr).__name__, arr.type.extension_name, arr.type.storage_type, arr.to_pylist())


URI_INPUTS = [
    ["file:///tmp/1.png", "s3://b/2.jpg"],
    [Path("/tmp/a.png"), "rel/b.png"],
    pa.array(["x.png", None]),
    pa.array(["x.png"], pa.large_string()),
    [],
    ("a", "b"),
    iter(["g.png"]),
]


@pytest.mark.parametrize("uris", URI_INPUTS, ids=[f"u{i}" for i in range(len(URI_INPUTS))])
def test_image_uri_array(uris):
    if isinstance(uris, type(iter([]))):
        items = list(uris)
        p, q = same_outcome(lambda: parrow.ImageURIArray.from_uris(iter(items)),
                            lambda: larrow.ImageURIArray.from_uris(iter(items)))
    else:
        p, q = same_outcome(parrow.ImageURIArray.from_uris, larrow.ImageURIArray.from_uris, uris)
    if p[0] == "ok" and p[1].null_count:
        # pylance's image scalars of nulls fail in as_py (so in to_pylist); Lancer's are None
        assert outcome(p[1].to_pylist)[1] == "AttributeError"
        assert q[1].to_pylist() == p[1].storage.to_pylist()
    elif p[0] == "ok":
        assert ext_view(p[1]) == ext_view(q[1])
        assert repr(p[1]).split("\n", 1)[1] == repr(q[1]).split("\n", 1)[1]
        if p[1].null_count == 0:  # (pylance's scalars of nulls fail in as_py)
            assert [s.as_py() for s in p[1]] == [s.as_py() for s in q[1]]
        assert [s.as_py() for s in q[1]] == q[1].to_pylist()


def test_image_uri_errors():
    same_outcome(parrow.ImageURIArray.from_uris, larrow.ImageURIArray.from_uris, 5)
    same_outcome(parrow.ImageURIType, larrow.ImageURIType, pa.int32())
    same_outcome(parrow.EncodedImageType, larrow.EncodedImageType, pa.string())
    same_outcome(parrow.ImageArray.from_array, larrow.ImageArray.from_array, 5)


@pytest.mark.parametrize("case", ["str", "large_str", "bin", "large_bin", "tensor", "list", "empty"])
def test_image_from_array(case):
    src = {
        "str": pa.array(["a.png", "b.png"]),
        "large_str": pa.array(["a.png"], pa.large_string()),
        "bin": pa.array([b"\x89PNG", b"xx"]),
        "large_bin": pa.array([b"\x89PNG"], pa.large_binary()),
        "tensor": pa.FixedShapeTensorArray.from_numpy_ndarray(np.arange(12, dtype=np.uint8).reshape(2, 2, 3)),
        "list": ["a.png", "b.png"],
        "empty": [],
    }[case]
    p, q = parrow.ImageArray.from_array(src), larrow.ImageArray.from_array(src)
    assert ext_view(p) == ext_view(q)
    if case == "tensor":
        assert list(p.type.shape) == list(q.type.shape)
        np.testing.assert_array_equal(p.to_numpy(), q.to_numpy())
    assert larrow.ImageArray.from_array(q) is q


def test_read_uris_and_tensors(tmp_path):
    files = []
    for i in range(3):
        f = tmp_path / f"{i}.bin"
        f.write_bytes(bytes([i]) * (i + 5))
        files.append(str(f))
    for storage in [pa.binary(), pa.large_binary()]:
        p = parrow.ImageURIArray.from_uris(files).read_uris(storage_type=storage)
        q = larrow.ImageURIArray.from_uris(files).read_uris(storage_type=storage)
        assert ext_view(p) == ext_view(q)
    p = parrow.ImageURIArray.from_uris(files).read_uris()
    q = larrow.ImageURIArray.from_uris(files).read_uris()
    missing = [str(tmp_path / "nope.png")]
    same_outcome(lambda: parrow.ImageURIArray.from_uris(missing).read_uris(),
                 lambda: larrow.ImageURIArray.from_uris(missing).read_uris())

    def decoder(images):
        return np.stack([np.frombuffer(b[:5], dtype=np.uint8).reshape(5, 1) for b in images.to_pylist()])

    pt, qt = p.to_tensor(decoder), q.to_tensor(decoder)
    assert ext_view(pt) == ext_view(qt) and list(pt.type.shape) == list(qt.type.shape)
    np.testing.assert_array_equal(pt.to_numpy(), qt.to_numpy())

    def encoder(imgs):
        return pa.array([im.tobytes() for im in imgs], pa.binary())

    pe, qe = pt.to_encoded(encoder), qt.to_encoded(encoder)
    assert ext_view(pe) == ext_view(qe)
    if not has("PIL"):
        same_outcome(p.to_tensor, q.to_tensor)
        same_outcome(pt.to_encoded, qt.to_encoded)
        assert repr(p).split("\n", 1)[1] == repr(q).split("\n", 1)[1]


def test_image_tensor_type_roundtrips():
    arr = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
    for mod in (parrow, larrow):
        typ = mod.FixedShapeImageTensorType(pa.float32(), (4, 3))
        assert typ.storage_type == pa.list_(pa.float32(), 12) and typ.extension_name == "lance.arrow.fixed_shape_image_tensor"
        assert typ.__arrow_ext_serialize__() == b'{"shape": [4, 3]}'
    lt = larrow.FixedShapeImageTensorType(pa.float32(), (4, 3))
    storage = pa.FixedShapeTensorArray.from_numpy_ndarray(arr).storage
    la = pa.ExtensionArray.from_storage(lt, storage)
    np.testing.assert_array_equal(la.to_numpy(), arr)
    t2 = pickle.loads(pickle.dumps(lt))
    assert list(t2.shape) == [4, 3] and t2.storage_type == lt.storage_type
    for typ in [larrow.ImageURIType(pa.large_string()), larrow.EncodedImageType(pa.large_binary()), larrow.BFloat16Type()]:
        back = pickle.loads(pickle.dumps(typ))
        assert back.extension_name == typ.extension_name and back.storage_type == typ.storage_type
    # through IPC (the registered classes answer: pylance's here, imported first)
    sink = pa.BufferOutputStream()
    tbl = pa.table({"t": la, "u": larrow.ImageURIArray.from_uris(["a", "b"])})
    with pa.ipc.new_stream(sink, tbl.schema) as w:
        w.write_table(tbl)
    back = pa.ipc.open_stream(sink.getvalue()).read_all()
    assert back.schema.field("t").type.extension_name == "lance.arrow.fixed_shape_image_tensor"
    assert list(back.schema.field("t").type.shape) == [4, 3]
    assert back.column("u").to_pylist() == ["a", "b"]


# --- tracing --------------------------------------------------------------------------


def test_tracing_not_available(tmp_path):
    with pytest.raises(NotImplementedError, match="trace_to_chrome"):
        ltracing.trace_to_chrome(file=str(tmp_path / "t.json"))
    with pytest.raises(NotImplementedError, match="capture_trace_events"):
        ltracing.capture_trace_events(lambda e: None)
    same_outcome(ptracing.TraceEvent, ltracing.TraceEvent)
    with pytest.raises(TypeError):
        ltracing.trace_to_chrome("positional.json")
