#!/usr/bin/env python3
"""Benchmark: dataset open, count_rows and small-append commit latency with a long
history, Lancer vs pylance, in one run.

    .venv/pylance-14/bin/python bench/dataset.py [--versions 1000] [--iters 20]

Builds (once) a dataset of VERSIONS versions (one 10-row append each) with pylance,
then, on copies of it, times: opening the latest version, count_rows, and appending one
row (a full commit). Also times opening at 10 versions, to show that opening does not
slow down as history grows. Appends the table to bench/RESULTS.md.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

import pyarrow as pa
import lance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402

OUT = os.path.join(file_read.ROOT, "bench", "out", "dataset")


def build(path, versions):
    if os.path.exists(path):
        return
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    lance.write_dataset(pa.table({"id": pa.array(range(10), pa.int64())}), tmp)
    for i in range(1, versions):
        lance.write_dataset(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), tmp, mode="append")
    os.replace(tmp, path)


def best(xs):
    s = sorted(xs)
    return {"best": s[0], "median": s[len(s) // 2]}


def pylance(path, iters):
    t_open, t_count, t_append = [], [], []
    for _ in range(iters):
        t = time.perf_counter()
        ds = lance.dataset(path)
        t_open.append(time.perf_counter() - t)
        t = time.perf_counter()
        ds.count_rows()
        t_count.append(time.perf_counter() - t)
    for i in range(iters):
        row = pa.table({"id": pa.array([i], pa.int64())})
        t = time.perf_counter()
        lance.write_dataset(row, path, mode="append")
        t_append.append(time.perf_counter() - t)
    return {"open": best(t_open), "count_rows": best(t_count), "append": best(t_append)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--versions", type=int, default=1000)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    exe = file_read.lancer_binary()
    lines = [
        f"### Dataset open / count_rows / append commit",
        f"{datetime.date.today()}, {file_read.machine()}, pylance {lance.__version__}, best of {a.iters}, local disk",
        "",
        "| history | operation | pylance (s) | Lancer (s) | pylance / Lancer |",
        "|---|---|---|---|---|",
    ]
    for versions in (10, a.versions):
        src = os.path.join(OUT, f"hist_{versions}")
        build(src, versions)
        py_copy, l_copy = src + ".py", src + ".lancer"
        for c in (py_copy, l_copy):
            shutil.rmtree(c, ignore_errors=True)
            shutil.copytree(src, c)
        py = pylance(py_copy, a.iters)
        res = subprocess.run([exe, "dataset", l_copy, str(a.iters)], capture_output=True, text=True, check=True)
        lr = json.loads(res.stdout)
        for k in ("open", "count_rows", "append"):
            p, l = py[k]["best"], lr[k]["best"]
            lines.append(f"| {versions} versions | {k} | {p:.6f} | {l:.6f} | {p / l:.2f}x |")
    file_read.record(lines, a.no_record)


if __name__ == "__main__":
    sys.exit(main())
