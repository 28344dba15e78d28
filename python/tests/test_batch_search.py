"""Batched vector search (issue 42): ``nearest`` with several query vectors through
``import lancer`` against pylance 14 on the same files. Datasets of several fragments
(written by either engine) with rows deleted before and after the index and a fragment
appended after it, searched exactly and through IVF_FLAT / IVF_PQ / IVF_SQ /
IVF_HNSW_SQ indexes built by pylance, under nprobes, refine, pre- and postfilters,
fast_search, use_index=False, row ids, limit / offset: the same columns in the same
order (``query_index`` Int32 non-null first), the same rows for each query_index (rows
tied at the k-th index estimate excepted, as in test_hnsw.py), and each batch equal to
lancer's single searches of its queries. The inputs pylance takes as a batch, and its
refusals (types and messages)."""

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer

DIM = 16


def vectors(n, seed):
    centres = np.random.default_rng(7).standard_normal((12, DIM)).astype(np.float32) * 3
    r = np.random.default_rng(seed)
    return (centres[r.integers(0, 12, n)] + r.standard_normal((n, DIM))).astype(np.float32)


def table(n, seed=1, start=0):
    x = vectors(n, seed)
    return pa.table({
        "id": np.arange(start, start + n),
        "cat": pa.array(np.arange(start, start + n) % 5, pa.int32()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), DIM),
    })


KINDS = [
    (None, "l2", {}),
    ("IVF_FLAT", "l2", {}),
    ("IVF_PQ", "l2", {"num_sub_vectors": 4}),
    ("IVF_SQ", "cosine", {}),
    ("IVF_HNSW_SQ", "l2", {"m": 8, "ef_construction": 40}),
]


def made(tmp_path, writer, kind, metric, params):
    """3 fragments written by ``writer``, rows deleted, the index (if any) built by
    pylance, rows deleted after it, then an unindexed fragment appended."""
    path = str(tmp_path / f"{writer.__name__}-{kind}-{metric}")
    writer.write_dataset(table(3000), path, max_rows_per_file=1000)
    lance.dataset(path).delete("id % 10 = 3")
    if kind is not None:
        lance.dataset(path).create_index("vec", kind, metric=metric, num_partitions=4, **params)
    lance.dataset(path).delete("id % 17 = 5")
    writer.write_dataset(table(200, seed=2, start=3000), path, mode="append")
    return path


SEARCHES = [
    ({"nprobes": 2}, {}),
    ({"nprobes": 1, "refine_factor": 3}, {}),
    ({"nprobes": 2}, {"filter": "cat = 1", "prefilter": True}),
    ({"nprobes": 4}, {"filter": "cat < 2"}),
    ({"nprobes": 2}, {"fast_search": True}),
    ({"use_index": False}, {}),
    ({"nprobes": 4}, {"with_row_id": True, "with_row_address": True, "columns": ["id", "cat"]}),
    ({"nprobes": 3}, {"limit": 7, "offset": 3}),
]


def by_query(t):
    """{query_index: (ids, distances)} of a batched result."""
    out = {}
    for qi, i, d in zip(t["query_index"].to_pylist(), t["id"].to_pylist(), t["_distance"].to_pylist()):
        ids, ds = out.setdefault(qi, ([], []))
        ids.append(i)
        ds.append(d)
    return out


def same_rows(got, want, estimated):
    """Whether two answers of one query agree: the same ids and distances, or ids that
    differ only among rows tied at the k-th estimate (``estimated``: the index's
    distances are shown) / in one re-ranked row."""
    (g_ids, g_d), (w_ids, w_d) = got, want
    if g_ids == w_ids:
        np.testing.assert_allclose(g_d, w_d, rtol=1e-4, atol=1e-3)
        return True
    odd = set(g_ids) ^ set(w_ids)
    if estimated:
        kth = w_d[-1]
        tied = {i for i, d in list(zip(g_ids, g_d)) + list(zip(w_ids, w_d))
                if abs(d - kth) <= 1e-3 * max(1.0, abs(kth))}
        assert odd <= tied, (g_ids, w_ids, g_d, w_d)
    else:
        assert len(odd) <= 2, (g_ids, w_ids, g_d, w_d)
    return False


@pytest.mark.parametrize("writer", [lance, lancer], ids=["pylance-written", "lancer-written"])
@pytest.mark.parametrize("kind,metric,params", KINDS, ids=[f"{k}-{m}" for k, m, _ in KINDS])
def test_batches_equal_pylances(tmp_path, writer, kind, metric, params):
    path = made(tmp_path, writer, kind, metric, params)
    theirs, ours = lance.dataset(path), lancer.dataset(path)
    queries = np.concatenate([vectors(6, 99), np.full((1, DIM), 9.0, np.float32)])
    compared = differ = 0
    for search, scan in SEARCHES:
        nearest = {"column": "vec", "q": queries, "k": 10, "metric": metric, **search}
        want = theirs.to_table(nearest=nearest, **scan)
        got = ours.to_table(nearest=nearest, **scan)
        assert got.schema == want.schema, (search, scan)
        assert got.schema.names[0] == "query_index"
        assert got["query_index"].to_pylist() == want["query_index"].to_pylist() or \
            "filter" in scan, (search, scan)
        g, w = by_query(got), by_query(want)
        assert sorted(g) == sorted(w) or "filter" in scan
        estimated = kind is not None and search.get("use_index", True) and scan.get("fast_search")
        for qi in set(g) & set(w):
            compared += 1
            differ += not same_rows(g[qi], w[qi], estimated)
        if "limit" in scan or "filter" in scan and not scan.get("prefilter"):
            continue
        # each query's rows are what lancer's single search of it returns
        for qi, q in enumerate(queries):
            one = ours.to_table(nearest={**nearest, "q": q}, **scan)
            ids, ds = g.get(qi, ([], []))
            assert one["id"].to_pylist() == ids, (search, scan, qi)
            assert one["_distance"].to_pylist() == ds
    assert differ * 20 <= compared, f"{differ} of {compared} answers differ"


def test_postfilter_keeps_each_querys_passing_rows(tmp_path):
    path = made(tmp_path, lance, "IVF_FLAT", "l2", {})
    queries = vectors(5, 4)
    for mod in (lance, lancer):
        t = mod.dataset(path).to_table(nearest={"column": "vec", "q": queries, "k": 10, "nprobes": 4},
                                       filter="cat = 2", columns=["id", "cat"])
        assert set(t["cat"].to_pylist()) <= {2}
    want = lance.dataset(path).to_table(nearest={"column": "vec", "q": queries, "k": 10, "nprobes": 4},
                                        filter="cat = 2", columns=["id"])
    got = lancer.dataset(path).to_table(nearest={"column": "vec", "q": queries, "k": 10, "nprobes": 4},
                                        filter="cat = 2", columns=["id"])
    assert got.select(["query_index", "id"]).equals(want.select(["query_index", "id"]))


INPUTS = {
    "2-D numpy": lambda q: q,
    "list of lists": lambda q: q.tolist(),
    "list of numpy": lambda q: list(q),
    "tuple of tuples": lambda q: tuple(tuple(float(x) for x in v) for v in q),
    "list of pyarrow arrays": lambda q: [pa.array(v) for v in q],
    "float64": lambda q: q.astype(np.float64),
    "batch of one": lambda q: q[:1],
}


@pytest.mark.parametrize("shape", list(INPUTS))
def test_query_shapes_pylance_takes(tmp_path, shape):
    path = made(tmp_path, lance, None, "l2", {})
    q = INPUTS[shape](vectors(3, 8))
    want = lance.dataset(path).to_table(nearest={"column": "vec", "q": q, "k": 4})
    got = lancer.dataset(path).to_table(nearest={"column": "vec", "q": q, "k": 4})
    assert got.schema == want.schema
    assert got.drop_columns(["_distance"]).equals(want.drop_columns(["_distance"]))
    np.testing.assert_allclose(got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=1e-5)
    # a single vector has no query_index
    single = lancer.dataset(path).to_table(nearest={"column": "vec", "q": vectors(1, 8)[0], "k": 4})
    assert "query_index" not in single.schema.names


def test_k_from_limit_and_count_rows(tmp_path):
    path = made(tmp_path, lance, None, "l2", {})
    q = vectors(3, 8)
    for scan in ({"limit": 2}, {"limit": 5, "offset": 4}):
        want = lance.dataset(path).to_table(nearest={"column": "vec", "q": q}, columns=["id"], **scan)
        got = lancer.dataset(path).to_table(nearest={"column": "vec", "q": q}, columns=["id"], **scan)
        assert got.select(["query_index", "id"]).equals(want.select(["query_index", "id"]))
    counts = [m.dataset(path).scanner(nearest={"column": "vec", "q": q, "k": 3}).count_rows()
              for m in (lance, lancer)]
    assert counts[0] == counts[1]


def refusals(path):
    q = vectors(3, 8)
    return [
        ("flattened", {"q": q.ravel()}, ValueError, None),
        ("ragged", {"q": [q[0].tolist(), q[1].tolist()[:5]]}, ValueError, "same length"),
        ("wrong width", {"q": np.zeros((2, DIM + 1), np.float32)}, ValueError, "does not match"),
        ("empty", {"q": np.zeros((0, DIM), np.float32)}, IndexError, None),
        ("empty list", {"q": []}, IndexError, None),
        ("FixedSizeListArray", {"q": pa.FixedSizeListArray.from_arrays(pa.array(q.ravel()), DIM)},
         TypeError, "query vector must be list-like"),
        ("k 0", {"q": q, "k": 0}, ValueError, "Nearest-K must be > 0"),
        ("3-D", {"q": q.reshape(3, 1, DIM)}, ValueError, None),
    ]


@pytest.mark.parametrize("case", [c[0] for c in refusals("")])
def test_refusals_as_pylances(tmp_path, case):
    path = made(tmp_path, lance, None, "l2", {})
    _, nearest, kind, match = next(c for c in refusals(path) if c[0] == case)
    for mod in (lance, lancer):
        with pytest.raises(kind, match=match):
            mod.dataset(path).to_table(nearest={"column": "vec", "k": 3, **nearest})


def test_a_query_index_column_is_refused_for_batches_only(tmp_path):
    path = str(tmp_path / "qi")
    t = table(300).rename_columns(["query_index", "cat", "vec"])
    lance.write_dataset(t, path)
    q = vectors(2, 3)
    for mod in (lance, lancer):
        ds = mod.dataset(path)
        for cols in (None, ["vec"]):
            with pytest.raises(ValueError, match="batch nearest neighbor search cannot be used on "
                                                 "datasets with column 'query_index'"):
                ds.to_table(nearest={"column": "vec", "q": q, "k": 3}, columns=cols)
    single = [m.dataset(path).to_table(nearest={"column": "vec", "q": q[0], "k": 3})["query_index"]
              for m in (lance, lancer)]
    assert single[0].equals(single[1])
