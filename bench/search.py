#!/usr/bin/env python3
"""Benchmark: exact k=10 nearest-neighbour search over 100k x 768-d float32 vectors,
Lancer vs pylance (no index: use_index=False), in one run.

    .venv/pylance-14/bin/python bench/search.py [--rows 100000] [--iters 5]

Also reports the memory-bandwidth bound: vector bytes / measured memcpy rate (the
fastest an exact scan can be), and Lancer's time as a multiple of it. Results are
checked to be the same ids. Appends the table to bench/RESULTS.md.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import lance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402

OUT = os.path.join(file_read.ROOT, "bench", "out", "search")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"vec_{a.rows}")
    rng = np.random.default_rng(11)
    if not os.path.exists(path):
        vec = rng.standard_normal((a.rows, 768), dtype=np.float32)
        t = pa.table({"id": pa.array(np.arange(a.rows)), "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), 768)})
        lance.write_dataset(t, path)
    q = rng.standard_normal(768, dtype=np.float32)
    qf = os.path.join(OUT, "q.json")
    json.dump([float(x) for x in q], open(qf, "w"))
    ds = lance.dataset(path)
    times = []
    for _ in range(a.iters):
        t = time.perf_counter()
        r = ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10, "use_index": False, "metric": "l2"})
        times.append(time.perf_counter() - t)
    py_ids = r.column("id").to_pylist()
    exe = file_read.lancer_binary()
    res = json.loads(subprocess.run([exe, "search", path, "vec", qf, "10", str(a.iters)], capture_output=True, text=True, check=True).stdout)
    if res["ids"] != py_ids:
        print(f"WARNING: ids differ: pylance {py_ids} lancer {res['ids']}")
    p, l = min(times), res["search"]["best"]
    bound = res["vector_bytes"] / res["memcpy_bytes_per_s"]
    lines = [
        f"### Exact k=10 search, {a.rows:,} x 768-d float32 (l2, no index)",
        f"{datetime.date.today()}, {file_read.machine()}, pylance {lance.__version__}, best of {a.iters}; same ids: {res['ids'] == py_ids}",
        "",
        "| pylance (s) | Lancer (s) | pylance / Lancer | bandwidth bound (s) | Lancer / bound |",
        "|---|---|---|---|---|",
        f"| {p:.4f} | {l:.4f} | {p / l:.2f}x | {bound:.4f} | {l / bound:.2f} |",
    ]
    file_read.record(lines, a.no_record)


if __name__ == "__main__":
    sys.exit(main())
