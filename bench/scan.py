#!/usr/bin/env python3
"""Benchmark: full scan of a 1M-row dataset (int64, utf8, 768-d float32) in 8
fragments with deletions, Lancer vs pylance, in one run.

    .venv/pylance-14/bin/python bench/scan.py [--rows 1000000] [--iters 3]

Appends the table to bench/RESULTS.md.
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
import pyarrow.compute  # noqa: F401
import lance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402

OUT = os.path.join(file_read.ROOT, "bench", "out", "scan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"ds_{a.rows}")
    if not os.path.exists(path):
        src = os.path.join(file_read.OUT, f"bench_{a.rows}_v2.1.lance")
        file_read.make_file(src, a.rows, "2.1")
        from lance.file import LanceFileReader
        t = LanceFileReader(src).read_all().to_table()
        lance.write_dataset(t, path + ".tmp", max_rows_per_file=a.rows // 8, data_storage_version="2.1")
        del t
        lance.dataset(path + ".tmp").delete("id % 10 = 0")
        os.replace(path + ".tmp", path)
    times = []
    for _ in range(a.iters):
        t = time.perf_counter()
        n = lance.dataset(path).to_table().num_rows
        times.append(time.perf_counter() - t)
    res = json.loads(subprocess.run([file_read.lancer_binary(), "scan", path, str(a.iters)], capture_output=True, text=True, check=True).stdout)
    assert res["rows"] == n, (res["rows"], n)
    p, l = min(times), res["scan"]["best"]
    lines = [
        f"### Dataset full scan, {a.rows:,} rows in 8 fragments, 10% deleted (int64, utf8, 768-d float32)",
        f"{datetime.date.today()}, {file_read.machine()}, pylance {lance.__version__}, best of {a.iters}, page cache warm",
        "",
        "| pylance (s) | Lancer (s) | pylance / Lancer |",
        "|---|---|---|",
        f"| {p:.3f} | {l:.3f} | {p / l:.2f}x |",
    ]
    # Takes by row offset from an opened dataset (deleted rows skipped), same offsets
    # for both engines; the id sums must agree.
    ds = lance.dataset(path)
    rng = np.random.default_rng(7)
    files = []
    for k in (1, 100, 10_000):
        idx = np.sort(rng.choice(n, k, replace=False)).astype("<u8")
        f = os.path.join(OUT, f"take_{k}.bin")
        idx.tofile(f)
        files.append((k, idx, f))
    take_iters = max(a.iters, 5)
    res = json.loads(subprocess.run([file_read.lancer_binary(), "dataset-take", path, str(take_iters)] + [f for _, _, f in files], capture_output=True, text=True, check=True).stdout)
    lines += [
        "",
        f"Take by row offset from an opened dataset (id, text, vec), sorted offsets, best of {take_iters}:",
        "",
        "| rows | pylance (s) | Lancer (s) | pylance / Lancer |",
        "|---|---|---|---|",
    ]
    for k, idx, _ in files:
        times = []
        for _ in range(take_iters):
            t = time.perf_counter()
            got = ds.take(idx.tolist(), columns=["id", "text", "vec"])
            times.append(time.perf_counter() - t)
        r = res[f"take_{k}"]
        assert int(pa.compute.sum(got["id"]).as_py()) == r["id_sum"], (k, r["id_sum"])
        p, l = min(times), r["t"]["best"]
        lines.append(f"| {k:,} | {p:.5f} | {l:.5f} | {p / l:.2f}x |")
    file_read.record(lines, a.no_record)


if __name__ == "__main__":
    sys.exit(main())
