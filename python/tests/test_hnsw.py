"""HNSW vector indexes (issue 42) through ``import lancer`` against pylance 14 on the
same files: IVF_HNSW_FLAT / _SQ / _PQ built by pylance searched by lancer, and built by
lancer searched by pylance — the same graph searched with the same distances gives
the same rows, so answers are compared id for id — under ``ef``, ``nprobes``,
``minimum_nprobes`` / ``maximum_nprobes``, ``refine_factor``, prefilters and deleted
rows; the ``ef < k`` refusal; index statistics; the ``nearest`` keys lancer refuses."""

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
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), DIM),
    })


KINDS = [
    ("IVF_HNSW_SQ", "l2", {}),
    ("IVF_HNSW_FLAT", "cosine", {}),
    ("IVF_HNSW_PQ", "l2", {"num_sub_vectors": 4}),
    ("IVF_HNSW_SQ", "dot", {}),
]

SEARCHES = [
    {"nprobes": 2},
    {"nprobes": 2, "ef": 10},
    {"nprobes": 4, "ef": 50},
    {"nprobes": 1, "ef": 30, "refine_factor": 2},
    {"minimum_nprobes": 1, "maximum_nprobes": 3},
]


def built(tmp_path, builder, kind, metric, params):
    """A dataset of 3 fragments, some rows deleted before and after the index, the
    index built by ``builder`` (lance or lancer), and a fragment appended after."""
    path = str(tmp_path / f"{builder.__name__}-{kind}-{metric}")
    lance.write_dataset(table(3000), path, max_rows_per_file=1000)
    lance.dataset(path).delete("id % 10 = 3")
    builder.dataset(path).create_index("vec", kind, metric=metric, num_partitions=4, m=8,
                                       ef_construction=40, **params)
    lance.dataset(path).delete("id % 17 = 5")
    lance.write_dataset(table(200, seed=2, start=3000), path, mode="append")
    return path


def answers(ds, queries, metric, search, **scan):
    out = []
    for q in queries:
        t = ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10, "metric": metric,
                                                 **search}, **scan)
        out.append((t["id"].to_pylist(), np.round(t["_distance"].to_numpy(), 3).tolist()))
    return out


@pytest.mark.parametrize("builder", [lance, lancer], ids=["pylance-built", "lancer-built"])
@pytest.mark.parametrize("kind,metric,params", KINDS, ids=[f"{k}-{m}" for k, m, _ in KINDS])
def test_searches_equal_pylances(tmp_path, builder, kind, metric, params):
    path = built(tmp_path, builder, kind, metric, params)
    theirs, ours = lance.dataset(path), lancer.dataset(path)
    assert ours.list_indices()[0]["type"] == kind == theirs.list_indices()[0]["type"]
    queries = list(vectors(8, 99)) + [np.full(DIM, 9.0, np.float32)]
    compared = reordered = traversed = 0
    for search in SEARCHES:
        if metric == "dot" and "maximum_nprobes" in search:
            # pylance probes past the minimum for dot distances by a rule not pinned
            # down yet (tests/indexes.rs compares those answers by overlap)
            continue
        for scan in ({}, {"prefilter": True, "filter": "id % 3 = 0"}, {"fast_search": True}):
            want = answers(theirs, queries, metric, search, **scan)
            got = answers(ours, queries, metric, search, **scan)
            for (g_ids, g_d), (w_ids, w_d) in zip(got, want):
                compared += 1
                if g_ids == w_ids:
                    np.testing.assert_allclose(g_d, w_d, rtol=1e-4, atol=1e-3)
                    continue
                # Of rows tied at the k-th estimate (SQ / PQ codes give equal
                # estimates) each engine keeps its own: seen as such with the index's
                # estimates (fast_search); re-ranked, the kept row shows its exact
                # distance, so there only one row may differ.
                reordered += 1
                odd = set(g_ids) ^ set(w_ids)
                both = dict(zip(w_ids, w_d))
                for i, d in zip(g_ids, g_d):
                    if i in both:  # a row both engines return has one estimate
                        assert abs(d - both[i]) <= 1e-3 * max(1.0, abs(d)), (i, d, both[i])
                if scan.get("fast_search"):
                    kth = w_d[-1]
                    tied = {i for i, d in list(zip(g_ids, g_d)) + list(zip(w_ids, w_d))
                            if abs(d - kth) <= 1e-3 * max(1.0, abs(kth))}
                    if not odd <= tied:
                        # The graph walk itself parted: pylance's heaps order equal
                        # distances by push order, so a tie met mid-walk (the graph is
                        # random per pylance build) can send the two walks down
                        # different edges. Seen once in ~60 builds, for one row; kept
                        # rare and small here, never a pattern.
                        traversed += 1
                        assert len(odd - tied) <= 2, (search, scan, g_ids, w_ids, g_d, w_d)
                else:
                    assert len(odd) <= 2, (search, scan, g_ids, w_ids, g_d, w_d)
    assert reordered * 20 <= compared, f"{reordered} of {compared} answers differ"
    assert traversed <= 1, f"{traversed} of {compared} graph walks parted beyond ties"


def test_lancer_built_graphs_find_what_pylances_find(tmp_path):
    """Recall@10 against the exact answer: lancer's build within 0.02 of pylance's on
    the same data and settings (L2, ef 10 and 40)."""
    recalls = {}
    queries = vectors(40, 5)
    for builder in (lance, lancer):
        path = built(tmp_path, builder, "IVF_HNSW_SQ", "l2", {})
        ds = lance.dataset(path)
        for ef in (10, 40):
            hit = 0
            for q in queries:
                exact = ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10,
                                                             "use_index": False})["id"].to_pylist()
                got = ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10,
                                                           "nprobes": 2, "ef": ef})["id"].to_pylist()
                hit += len(set(exact) & set(got))
            recalls[(builder.__name__, ef)] = hit / (10 * len(queries))
    for ef in (10, 40):
        assert recalls[("lancer", ef)] >= recalls[("lance", ef)] - 0.02, recalls


def test_ef_below_k_is_refused_as_pylance_refuses_it(tmp_path):
    path = built(tmp_path, lance, "IVF_HNSW_SQ", "l2", {})
    q = vectors(1, 3)[0]
    for mod in (lance, lancer):
        with pytest.raises(ValueError, match="ef must be greater than or equal to k"):
            mod.dataset(path).to_table(nearest={"column": "vec", "q": q, "k": 10, "ef": 5})
        with pytest.raises(ValueError, match="ef must be greater than or equal to k"):
            mod.dataset(path).to_table(nearest={"column": "vec", "q": q, "k": 10, "ef": 15,
                                                "refine_factor": 2})


def test_index_statistics_report_the_graph_as_pylance(tmp_path):
    for builder in (lance, lancer):
        path = built(tmp_path, builder, "IVF_HNSW_SQ", "l2", {})
        want = lance.dataset(path).stats.index_stats("vec_idx")
        got = lancer.dataset(path).stats.index_stats("vec_idx")
        w, g = want["indices"][0], got["indices"][0]
        assert g["index_type"] == w["index_type"] == "IVF_HNSW_SQ"
        assert g["sub_index"] == w["sub_index"]
        assert g["partitions"] == w["partitions"]


def test_create_index_settings_are_checked_and_recorded(tmp_path):
    path = str(tmp_path / "d")
    lancer.write_dataset(table(1000), path)
    with pytest.raises(ValueError, match="at least 4"):
        lancer.dataset(path).create_index("vec", "IVF_HNSW_SQ", num_partitions=2, m=3)
    # a beam narrower than m: refused, as pylance 14 refuses it ("must be at least m")
    with pytest.raises(ValueError, match="at least m"):
        lance.dataset(path).create_index("vec", "IVF_HNSW_SQ", num_partitions=2, m=8,
                                         ef_construction=7)
    with pytest.raises(ValueError, match="at least m"):
        lancer.dataset(path).create_index("vec", "IVF_HNSW_SQ", num_partitions=2, m=8,
                                          ef_construction=7)
    with pytest.raises(ValueError, match="m does not apply"):
        lancer.dataset(path).create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=4, m=8)
    lancer.dataset(path).create_index("vec", "IVF_HNSW_FLAT", num_partitions=2, m=5,
                                      ef_construction=33, max_level=4)
    params = lance.dataset(path).stats.index_stats("vec_idx")["indices"][0]["sub_index"]["params"]
    assert (params["m"], params["ef_construction"], params["max_level"]) == (5, 33, 4)


def test_nearest_keys_lancer_does_not_honour_are_refused(tmp_path):
    path = built(tmp_path, lance, "IVF_HNSW_SQ", "l2", {})
    ds = lancer.dataset(path)
    q = vectors(1, 3)[0]
    base = {"column": "vec", "q": q, "k": 5}
    with pytest.raises(TypeError, match="efs"):
        ds.to_table(nearest={**base, "efs": 10})
    with pytest.raises(ValueError, match="approx_mode"):
        ds.to_table(nearest={**base, "approx_mode": "quick"})
    with pytest.raises(NotImplementedError, match="distance_range"):
        ds.to_table(nearest={**base, "distance_range": (0.0, 1.0)})
    # the defaults and tuning-only keys are accepted
    assert ds.to_table(nearest={**base, "approx_mode": "normal", "query_parallelism": 2}).num_rows == 5


@pytest.mark.parametrize("builder", [lance, lancer], ids=["pylance-built", "lancer-built"])
def test_vector_index_reader_reads_hnsw_storage_as_pylance(tmp_path, builder):
    from lance.dataset import VectorIndexReader as Theirs
    from lancer.dataset import VectorIndexReader as Ours

    path = built(tmp_path, builder, "IVF_HNSW_SQ", "l2", {})
    theirs, ours = Theirs(lance.dataset(path), "vec_idx"), Ours(lancer.dataset(path), "vec_idx")
    assert ours.num_partitions() == theirs.num_partitions() == 4
    for p in range(4):
        for with_vector in (False, True):
            want = theirs.read_partition(p, with_vector=with_vector)
            got = ours.read_partition(p, with_vector=with_vector)
            assert got.equals(want), (p, with_vector)


def test_approx_mode_fast_walks_past_a_selective_filter(tmp_path):
    """approx_mode="fast" (ACORN-1 in both engines, each its own walk): under a
    clustered prefilter passing 15% of the rows, recall@10 of lancer's fast search within
    0.05 of pylance's fast search and of both engines' normal search, k rows found; on
    IVF_RQ lancer refuses fast (pylance trades estimate precision there)."""
    path = built(tmp_path, lance, "IVF_HNSW_SQ", "l2", {})
    queries = vectors(30, 8)
    flt = "id < 450 OR (id >= 1500 AND id < 1950)"
    rec = {}
    for mod in (lance, lancer):
        for mode in ("normal", "fast"):
            hit = 0
            for q in queries:
                exact = lance.dataset(path).to_table(
                    columns=["id"], filter=flt, prefilter=True,
                    nearest={"column": "vec", "q": q, "k": 10, "use_index": False})["id"].to_pylist()
                got = mod.dataset(path).to_table(
                    columns=["id"], filter=flt, prefilter=True,
                    nearest={"column": "vec", "q": q, "k": 10, "nprobes": 4, "approx_mode": mode})["id"].to_pylist()
                assert len(got) == 10
                hit += len(set(exact) & set(got))
            rec[(mod.__name__, mode)] = hit / (10 * len(queries))
    print("recall", rec)
    assert rec[("lancer", "fast")] >= rec[("lance", "fast")] - 0.05, rec
    assert rec[("lancer", "fast")] >= rec[("lancer", "normal")] - 0.05, rec
    assert rec[("lancer", "normal")] == rec[("lance", "normal")], rec
    rq = str(tmp_path / "rq")
    lance.write_dataset(table(1000), rq)
    lance.dataset(rq).create_index("vec", "IVF_RQ", num_partitions=2)
    with pytest.raises(ValueError, match="approx_mode"):
        lancer.dataset(rq).to_table(nearest={"column": "vec", "q": queries[0], "k": 5, "approx_mode": "fast"})
