#!/usr/bin/env python3
"""HNSW benchmark (issue 42): build time and recall@10 / QPS at several beam widths,
Lancer vs pylance vs hnswlib vs FAISS IndexHNSWFlat vs usearch on the same clustered vectors, in
one run.

    .venv/bench/bin/python bench/hnsw.py [--rows 200000] [--dim 128] [--partitions 16]
                                         [--kind IVF_HNSW_SQ] [--m 20] [--ef-construction 150]
                                         [--nprobes 4] [--efs 10,20,40,80,160] [--queries 200]
                                         [--filters 1,10,50] [--filter-ef 40] [--no-record]

Data as bench/index.py makes it (`--rows` vectors around 1,000 Gaussian centres, 4
fragments written by pylance). pylance's `create_index` in-process and `lancer index
create` (whole process, peak RSS) build the same IVF_HNSW kind with the same partitions
and graph settings, each on its own copy; hnswlib and FAISS build one HNSW graph over
all vectors with the same m / ef_construction (all cores). Queries (held-out perturbed
rows) one at a time: recall@10 against exact NumPy answers and queries per second at
each `--efs` beam width — pylance and Lancer (`lancer-bench ann`, in-process) with
`--nprobes` partitions probed, hnswlib / FAISS with the same ef on their single graph,
1 thread. Both engines' indexes are also searched by the other engine (pylance on
Lancer's build, Lancer on pylance's), so the recall columns compare the builds.
Then at each ef the same queries from two threads (pylance from a 2-thread pool, Lancer's
search on 2 threads, hnswlib / FAISS batched on all cores) and p50 / p99 latency.

Prefiltered search (`--filters`, percent of rows kept) at `--filter-ef`: two integer
columns are added to both engines' datasets, `rnd` (uniform 0..99: a random mask) and
`grp` (the row's cluster id mod 100: a clustered mask, whole clusters kept or not, so
most queries' neighbourhoods are filtered out); pylance and Lancer search with
`prefilter=True`, FAISS with an IDSelectorBitmap, hnswlib with its filter callback.
Recall against the exact answer over the kept rows.
Appends the tables to bench/RESULTS.md.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("LANCE_LOG", "error")  # pylance warns per query that `_distance` is projected

import faiss
import usearch
import usearch.index
import hnswlib
import lance
import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402
from index import clusters, exact, make, recall  # noqa: E402
from run import run_cli  # noqa: E402


def pct(times, p):
    t = sorted(times)
    return t[min(int(len(t) * p), len(t) - 1)]


def pylance_curve(path, queries, truth, nprobes, efs):
    """Per ef: (recall, QPS one at a time, QPS from 2 threads, p50 s, p99 s)."""
    ds = lance.dataset(path)
    out = {}
    for ef in efs:
        kw = {"column": "vec", "k": 10, "nprobes": nprobes, "ef": ef}

        def one(q):
            return ds.to_table(columns=["id"], nearest={**kw, "q": q}).column("id").to_pylist()
        for q in queries[:5]:
            one(q)
        got, lat = [], []
        t = time.perf_counter()
        for q in queries:
            t1 = time.perf_counter()
            got.append(one(q))
            lat.append(time.perf_counter() - t1)
        qps = len(queries) / (time.perf_counter() - t)
        t = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(one, queries))
        qps2 = len(queries) / (time.perf_counter() - t)
        out[ef] = (recall(got, truth), qps, qps2, pct(lat, 0.5), pct(lat, 0.99))
    return out


def lancer_curve(bench, path, qfile, n, truth, nprobes, efs):
    """Per ef: (recall, QPS, search-alone QPS, search-alone QPS on 2 threads, p50, p99)."""
    out = {}
    for ef in efs:
        r = json.loads(subprocess.run([bench, "ann", path, "vec", qfile, "10", str(nprobes), "0", "1", str(ef)],
                                      capture_output=True, check=True).stdout)
        out[ef] = (recall(r["ids"], truth), n / r["seconds"], n / r["search_seconds"],
                   n / r["search_seconds_2_threads"], r["p50"], r["p99"])
    return out


def add_mask_columns(paths, rows, dim):
    """Adds `rnd` (random 0..99) and `grp` (cluster id mod 100) to each dataset."""
    rnd = np.random.default_rng(5).integers(0, 100, rows)
    grp = clusters(rows, dim) % 100

    def udf(b):
        ids = b.column("id").to_numpy()
        return pa.RecordBatch.from_arrays([pa.array(rnd[ids]), pa.array(grp[ids])], ["rnd", "grp"])
    for p in paths:
        lance.dataset(p).add_columns(udf, read_columns=["id"])
    return {"random": rnd, "clustered": grp}


def filtered(a, bench, py_ds, lan_ds, qfile, vec, queries, hl, fh, masks):
    rows = []
    ef = a.filter_ef
    for pct_kept in [int(x) for x in a.filters.split(",")]:
        for kind, col in (("random", "rnd"), ("clustered", "grp")):
            mask = masks[kind] < pct_kept
            kept = np.flatnonzero(mask)
            truth = [kept[i].tolist() for i in exact(vec[kept], queries)]
            where = f"{col} < {pct_kept}"
            ds = lance.dataset(py_ds)
            kw = {"column": "vec", "k": 10, "nprobes": a.nprobes, "ef": ef}
            for q in queries[:5]:
                ds.to_table(columns=["id"], nearest={**kw, "q": q}, filter=where, prefilter=True)
            got, t = [], time.perf_counter()
            for q in queries:
                got.append(ds.to_table(columns=["id"], nearest={**kw, "q": q}, filter=where,
                                       prefilter=True).column("id").to_pylist())
            py = (recall(got, truth), len(queries) / (time.perf_counter() - t))
            r = json.loads(subprocess.run([bench, "ann", lan_ds, "vec", qfile, "10", str(a.nprobes), "0", "1",
                                           str(ef), where], capture_output=True, check=True).stdout)
            lan = (recall(r["ids"], truth), len(queries) / r["seconds"])
            r = json.loads(subprocess.run([bench, "ann", py_ds, "vec", qfile, "10", str(a.nprobes), "0", "1",
                                           str(ef), where], capture_output=True, check=True).stdout)
            lan_py = (recall(r["ids"], truth), len(queries) / r["seconds"])
            bits = np.packbits(mask, bitorder="little")
            sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits))
            params = faiss.SearchParametersHNSW(sel=sel, efSearch=max(ef, 10))
            t = time.perf_counter()
            got = [fh.search(q[None, :], 10, params=params)[1][0].tolist() for q in queries]
            f = (recall(got, truth), len(queries) / (time.perf_counter() - t))
            hl.set_ef(max(ef, 10))
            keep = mask.tolist()
            t = time.perf_counter()
            got = []
            for q in queries:
                try:
                    got.append(hl.knn_query(q[None, :], k=10, filter=lambda i: keep[i])[0][0].tolist())
                except RuntimeError:  # fewer than k found
                    got.append([])
            h = (recall(got, truth), len(queries) / (time.perf_counter() - t))
            rows.append((pct_kept, kind, py, lan_py, lan, h, f))
            print(f"  filter {where} ({kind}, {pct_kept}%): recall/QPS pylance {py[0]:.3f}/{py[1]:.0f}, "
                  f"Lancer on pylance's {lan_py[0]:.3f}/{lan_py[1]:.0f}, Lancer {lan[0]:.3f}/{lan[1]:.0f}, "
                  f"hnswlib {h[0]:.3f}/{h[1]:.0f}, FAISS {f[0]:.3f}/{f[1]:.0f}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--kind", default="IVF_HNSW_SQ", help="IVF_HNSW_FLAT, IVF_HNSW_SQ or IVF_HNSW_PQ")
    ap.add_argument("--sub-vectors", type=int, default=16)
    ap.add_argument("--m", type=int, default=20)
    ap.add_argument("--ef-construction", type=int, default=150)
    ap.add_argument("--nprobes", type=int, default=4)
    ap.add_argument("--efs", default="10,20,40,80,160")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--filters", default="1,10,50", help="percent of rows a prefilter keeps (empty: none)")
    ap.add_argument("--filter-ef", type=int, default=40)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    efs = [int(x) for x in a.efs.split(",")]
    bins, prebuilt = file_read.release_binaries()
    exe, bench = os.path.join(bins, "lancer"), os.path.join(bins, "lancer-bench")
    base, vec, queries = make(a.rows, a.dim, a.queries)
    truth = exact(vec, queries)
    qfile = os.path.join(base, "queries.json")
    json.dump(queries.tolist(), open(qfile, "w"))
    kind = a.kind.upper()
    py_ds, lan_ds = os.path.join(base, "py_hnsw"), os.path.join(base, "lan_hnsw")
    for d in (py_ds, lan_ds):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(os.path.join(base, "ds"), d)
    params = dict(num_partitions=a.partitions, m=a.m, ef_construction=a.ef_construction)
    if kind == "IVF_HNSW_PQ":
        params["num_sub_vectors"] = a.sub_vectors
    t = time.perf_counter()
    lance.dataset(py_ds).create_index("vec", kind, metric="l2", **params)
    py_build = time.perf_counter() - t
    args = [exe, "index", "create", lan_ds, "--column", "vec", "--type", kind.lower(), "--metric", "l2",
            "--partitions", str(a.partitions), "--m", str(a.m), "--ef-construction", str(a.ef_construction)]
    if kind == "IVF_HNSW_PQ":
        args += ["--sub-vectors", str(a.sub_vectors)]
    lan_build, _, lan_rss = run_cli(1, args)
    threads = os.cpu_count()
    t = time.perf_counter()
    hl = hnswlib.Index(space="l2", dim=a.dim)
    hl.init_index(max_elements=a.rows, M=a.m, ef_construction=a.ef_construction, random_seed=1)
    hl.set_num_threads(threads)
    hl.add_items(vec, np.arange(a.rows))
    hl_build = time.perf_counter() - t
    faiss.omp_set_num_threads(threads)
    t = time.perf_counter()
    fh = faiss.IndexHNSWFlat(a.dim, a.m)
    fh.hnsw.efConstruction = a.ef_construction
    fh.add(vec)
    f_build = time.perf_counter() - t
    t = time.perf_counter()
    us = usearch.index.Index(ndim=a.dim, metric="l2sq", connectivity=a.m, expansion_add=a.ef_construction)
    us.add(np.arange(a.rows), vec, threads=threads)
    u_build = time.perf_counter() - t
    print(f"{kind} build: pylance {py_build:.2f} s, Lancer {lan_build:.2f} s ({lan_rss / 2**20:.0f} MiB), "
          f"hnswlib {hl_build:.2f} s, FAISS HNSWFlat {f_build:.2f} s, usearch {u_build:.2f} s", flush=True)

    py_on_py = pylance_curve(py_ds, queries, truth, a.nprobes, efs)
    py_on_lan = pylance_curve(lan_ds, queries, truth, a.nprobes, efs)
    lan_on_lan = lancer_curve(bench, lan_ds, qfile, len(queries), truth, a.nprobes, efs)
    lan_on_py = lancer_curve(bench, py_ds, qfile, len(queries), truth, a.nprobes, efs)
    rows, multi = [], []
    for ef in efs:
        hl.set_ef(max(ef, 10))
        fh.hnsw.efSearch = max(ef, 10)
        hl.set_num_threads(threads)
        faiss.omp_set_num_threads(threads)
        t = time.perf_counter()
        hl.knn_query(queries, k=10)
        hl_all = len(queries) / (time.perf_counter() - t)
        t = time.perf_counter()
        fh.search(queries, 10)
        f_all = len(queries) / (time.perf_counter() - t)
        hl.set_num_threads(1)
        faiss.omp_set_num_threads(1)
        t = time.perf_counter()
        got = [hl.knn_query(q[None, :], k=10)[0][0].tolist() for q in queries]
        hl_q = (recall(got, truth), len(queries) / (time.perf_counter() - t))
        t = time.perf_counter()
        got = [fh.search(q[None, :], 10)[1][0].tolist() for q in queries]
        f_q = (recall(got, truth), len(queries) / (time.perf_counter() - t))
        us.expansion_search = max(ef, 10)
        t = time.perf_counter()
        us.search(queries, 10, threads=threads)
        u_all = len(queries) / (time.perf_counter() - t)
        t = time.perf_counter()
        got = [us.search(q, 10, threads=1).keys.tolist() for q in queries]
        u_q = (recall(got, truth), len(queries) / (time.perf_counter() - t))
        rows.append((ef, py_on_py[ef], lan_on_py[ef], lan_on_lan[ef], py_on_lan[ef], hl_q, f_q, u_q))
        multi.append((ef, py_on_py[ef], lan_on_py[ef], lan_on_lan[ef], hl_all, f_all, u_all))
        print(f"  ef {ef}: recall/QPS pylance {py_on_py[ef][0]:.3f}/{py_on_py[ef][1]:.0f}, Lancer on pylance's "
              f"{lan_on_py[ef][0]:.3f}/{lan_on_py[ef][1]:.0f}, Lancer {lan_on_lan[ef][0]:.3f}/{lan_on_lan[ef][1]:.0f} "
              f"(search {lan_on_lan[ef][2]:.0f}), pylance on Lancer's {py_on_lan[ef][0]:.3f}, "
              f"hnswlib {hl_q[0]:.3f}/{hl_q[1]:.0f}, FAISS {f_q[0]:.3f}/{f_q[1]:.0f}, usearch {u_q[0]:.3f}/{u_q[1]:.0f}; "
              f"2 threads: pylance {py_on_py[ef][2]:.0f}, Lancer {lan_on_lan[ef][3]:.0f}, hnswlib {hl_all:.0f}, "
              f"FAISS {f_all:.0f}, usearch {u_all:.0f}",
              flush=True)
    frows = []
    if a.filters:
        masks = add_mask_columns([py_ds, lan_ds], a.rows, a.dim)
        frows = filtered(a, bench, py_ds, lan_ds, qfile, vec, queries, hl, fh, masks)
    for d in (py_ds, lan_ds):
        shutil.rmtree(d, ignore_errors=True)

    lines = [f"### HNSW ({kind}), {a.rows:,} x {a.dim}-d clustered float32 (4 fragments), {a.partitions} partitions, "
             f"m {a.m}, ef_construction {a.ef_construction}, l2",
             f"{datetime.date.today()}, {file_read.machine()}, pylance {lance.__version__}, hnswlib {hnswlib.__version__ if hasattr(hnswlib, '__version__') else '0.8.0'}, "
             f"faiss {faiss.__version__}, usearch {usearch.__version__}; {a.queries} queries one at a time, 1 thread for hnswlib / FAISS / usearch; "
             f"IVF engines probe {a.nprobes} partitions" + (f"; Lancer binaries from {bins}" if prebuilt else ""), "",
             "| build | pylance | Lancer | Lancer / pylance | Lancer peak RSS | hnswlib | FAISS HNSWFlat | usearch |",
             "|---|---|---|---|---|---|---|---|",
             f"| seconds ({threads} cores) | {py_build:.2f} | {lan_build:.2f} | {lan_build / py_build:.2f} | {lan_rss / 2**20:.0f} MiB | {hl_build:.2f} | {f_build:.2f} | {u_build:.2f} |",
             "",
             "| ef | pylance recall / QPS | Lancer on pylance's index recall / QPS | Lancer recall / QPS (search alone) | Lancer / pylance QPS | pylance on Lancer's index recall | hnswlib recall / QPS | FAISS recall / QPS | usearch recall / QPS |",
             "|---|---|---|---|---|---|---|---|---|"]
    for ef, pp, lp, ll, pl, h, f, u in rows:
        lines.append(f"| {ef} | {pp[0]:.3f} / {pp[1]:.0f} | {lp[0]:.3f} / {lp[1]:.0f} | {ll[0]:.3f} / {ll[1]:.0f} ({ll[2]:.0f}) | "
                     f"{lp[1] / pp[1]:.2f} | {pl[0]:.3f} | {h[0]:.3f} / {h[1]:.0f} | {f[0]:.3f} / {f[1]:.0f} | {u[0]:.3f} / {u[1]:.0f} |")
    lines += ["", f"{threads} threads (pylance: a {threads}-thread pool of single queries; Lancer: its search alone on "
              f"{threads} threads; hnswlib / FAISS: one batched call) and latency of single queries (ms, with the id column):", "",
              "| ef | pylance QPS | Lancer QPS | Lancer / pylance | hnswlib QPS | FAISS QPS | usearch QPS | pylance p50 / p99 | Lancer on pylance's p50 / p99 | Lancer p50 / p99 |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for ef, pp, lp, ll, h, f, u in multi:
        lines.append(f"| {ef} | {pp[2]:.0f} | {ll[3]:.0f} | {ll[3] / pp[2]:.2f} | {h:.0f} | {f:.0f} | {u:.0f} | "
                     f"{pp[3] * 1e3:.2f} / {pp[4] * 1e3:.2f} | {lp[4] * 1e3:.2f} / {lp[5] * 1e3:.2f} | {ll[4] * 1e3:.2f} / {ll[5] * 1e3:.2f} |")
    if frows:
        lines += ["", f"Prefiltered search at ef {a.filter_ef} (recall against the exact answer over the kept rows; "
                  "1 thread; hnswlib's filter is a Python callback):", "",
                  "| kept | mask | pylance recall / QPS | Lancer on pylance's index recall / QPS | Lancer recall / QPS | Lancer / pylance QPS | hnswlib recall / QPS | FAISS recall / QPS |",
                  "|---|---|---|---|---|---|---|---|"]
        for p, kind_, py, lp, ll, h, f in frows:
            lines.append(f"| {p}% | {kind_} | {py[0]:.3f} / {py[1]:.0f} | {lp[0]:.3f} / {lp[1]:.0f} | {ll[0]:.3f} / {ll[1]:.0f} | "
                         f"{lp[1] / py[1]:.2f} | {h[0]:.3f} / {h[1]:.0f} | {f[0]:.3f} / {f[1]:.0f} |")
    file_read.record(lines, a.no_record)


if __name__ == "__main__":
    main()
