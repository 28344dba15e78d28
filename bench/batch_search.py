"""Batched vector search (issue 42): a batch of 100 query vectors in one ``nearest``
call against 100 single calls in lancer, and against pylance 14's batched call, on a
200,000 x 64 float32 dataset with an IVF_PQ index built by pylance (256 partitions,
16 sub-vectors x 8 bits), k = 10. Rows: nprobes 20, nprobes 20 + refine 4, default
probes, exact (use_index=False). Timings are the best of ``--iters`` runs. Answers are
checked: lancer's batch equals its 100 singles, and its rows overlap pylance's batch
(recall of pylance's rows; tied estimates may differ). Prints the ratios and appends
the table to bench/RESULTS.md with the date and machine (``--no-record`` to skip).

    .venv/py/bin/python bench/batch_search.py [--iters 3] [--no-record]

Use a release build of the Python package (``cd python && maturin develop --release``).
"""

import argparse
import datetime
import os
import platform
import shutil
import time

import numpy as np
import pyarrow as pa

import lance
import lancer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N, DIM, NQ, K = 200_000, 64, 100, 10


def machine():
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor() or "unknown"
    return f"{model}, {os.cpu_count()} cores"


def data(path):
    """The dataset (made once, reused while its shape matches)."""
    if os.path.exists(path):
        ds = lance.dataset(path)
        if ds.count_rows() == N and ds.list_indices():
            return
        shutil.rmtree(path)
    rng = np.random.default_rng(42)
    centres = rng.standard_normal((300, DIM)).astype(np.float32) * 2
    x = (centres[rng.integers(0, 300, N)] + rng.standard_normal((N, DIM))).astype(np.float32)
    t = pa.table({"id": np.arange(N), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), DIM)})
    lance.write_dataset(t, path, max_rows_per_file=50_000)
    start = time.perf_counter()
    lance.dataset(path).create_index("vec", "IVF_PQ", num_partitions=256, num_sub_vectors=16)
    print(f"dataset written, IVF_PQ built by pylance in {time.perf_counter() - start:.1f} s", flush=True)


def best(f, iters):
    out, times = None, []
    for _ in range(iters):
        start = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - start)
    return min(times), out


def fmt(s):
    return f"{s * 1000:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--data", default=os.path.join(ROOT, "target", "bench-batch-search.lance"))
    args = ap.parse_args()
    data(args.data)
    queries = np.random.default_rng(7).standard_normal((NQ, DIM)).astype(np.float32) * 2
    theirs, ours = lance.dataset(args.data), lancer.dataset(args.data)
    settings = [
        ("IVF_PQ nprobes 20", {"nprobes": 20}),
        ("IVF_PQ nprobes 20, refine 4", {"nprobes": 20, "refine_factor": 4}),
        ("IVF_PQ default probes", {}),
        ("exact (use_index=False)", {"use_index": False}),
    ]
    rows = []
    for label, extra in settings:
        nearest = {"column": "vec", "k": K, **extra}

        def batch(ds):
            return ds.to_table(nearest={**nearest, "q": queries}, columns=["id"])

        def singles(ds):
            return [ds.to_table(nearest={**nearest, "q": q}, columns=["id"]) for q in queries]

        iters = 1 if "exact" in label else args.iters
        t_ob, ob = best(lambda: batch(ours), iters)
        t_os, os_ = best(lambda: singles(ours), iters)
        t_tb, tb = best(lambda: batch(theirs), iters)
        t_ts, _ = best(lambda: singles(theirs), 1)
        qi = ob["query_index"].to_numpy()
        ids = ob["id"].to_numpy()
        same_as_singles = all(ids[qi == i].tolist() == os_[i]["id"].to_pylist() for i in range(NQ))
        tq, tids = tb["query_index"].to_numpy(), tb["id"].to_numpy()
        overlap = sum(len(set(ids[qi == i]) & set(tids[tq == i])) for i in range(NQ)) / max(1, len(tids))
        rows.append((label, t_ob, t_os, t_tb, t_ts, same_as_singles, overlap))
        print(f"{label}: lancer batch {fmt(t_ob)}, lancer 100 singles {fmt(t_os)} "
              f"({t_os / t_ob:.2f}x the batch), pylance batch {fmt(t_tb)} ({t_tb / t_ob:.2f}x lancer's), "
              f"pylance 100 singles {fmt(t_ts)}; batch == singles: {same_as_singles}, "
              f"rows shared with pylance's batch {overlap:.3f}", flush=True)
    table = [
        f"### Batched search, 100 queries (issue 42) ({datetime.date.today()}, {N:,} x {DIM}, "
        f"IVF_PQ 256 partitions 16x8 built by pylance, k {K}; best of {args.iters}, exact once; "
        f"{machine()}; bench/batch_search.py)",
        "",
        "| search | lancer batch | lancer 100 singles | singles / batch | pylance batch | pylance batch / "
        "lancer batch | pylance 100 singles | lancer batch = its singles | rows shared with pylance |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, t_ob, t_os, t_tb, t_ts, same, overlap in rows:
        table.append(f"| {label} | {fmt(t_ob)} | {fmt(t_os)} | {t_os / t_ob:.2f}x | {fmt(t_tb)} | "
                     f"{t_tb / t_ob:.2f}x | {fmt(t_ts)} | {'yes' if same else 'NO'} | {overlap:.3f} |")
    text = "\n".join(table) + "\n"
    print(text)
    if not args.no_record:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a", encoding="utf-8") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
