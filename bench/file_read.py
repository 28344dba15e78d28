#!/usr/bin/env python3
"""Benchmark: reading one Lance data file, Lancer vs pylance, in one run.

    .venv/pylance-14/bin/python bench/file_read.py [--rows 1000000] [--version 2.1] [--iters 5]

Writes (once) a file of ROWS rows with an int64 column, a utf8 column and a 768-d
float32 vector column with pylance, then times on that same file:
  * opening the file,
  * a full decode of every column,
  * taking 1, 100 and 10,000 random rows (all columns), on a fresh reader each time.
pylance runs in this process; Lancer runs `target/release/lancer-bench` (built here if
missing). Prints best-of-N seconds and the ratio pylance / Lancer (> 1: Lancer faster),
and appends the table to bench/RESULTS.md with the date and machine.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import lance
from lance.file import LanceFileReader, LanceFileWriter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")
WORDS = np.array(["lance", "arrow", "vector", "column", "random", "access", "table", "index", "search", "fragment"])


def make_file(path, rows, version):
    if os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rng = np.random.default_rng(42)
    batch = 50_000
    tmp = path + ".tmp"
    with LanceFileWriter(tmp, version=version) as w:
        for start in range(0, rows, batch):
            n = min(batch, rows - start)
            ids = np.arange(start, start + n, dtype=np.int64)
            words = rng.choice(WORDS, size=(n, 4))
            text = [" ".join(r) + f" #{i}" for i, r in zip(ids, words)]
            vec = rng.standard_normal((n, 768), dtype=np.float32)
            w.write_batch(pa.table({
                "id": pa.array(ids),
                "text": pa.array(text, pa.utf8()),
                "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), 768),
            }))
    os.replace(tmp, path)


def best(times):
    s = sorted(times)
    return {"best": s[0], "median": s[len(s) // 2]}


def bench_pylance(path, iters, index_sets):
    out = {}
    t_open, t_full = [], []
    for _ in range(iters):
        t = time.perf_counter()
        r = LanceFileReader(path)
        t_open.append(time.perf_counter() - t)
        t = time.perf_counter()
        tab = r.read_all(batch_size=8192).to_table()
        t_full.append(time.perf_counter() - t)
        rows = tab.num_rows
        del tab
    out["open"] = best(t_open)
    out["full_decode"] = best(t_full)
    out["rows"] = rows
    for idx in index_sets:
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            r = LanceFileReader(path)
            tab = r.take_rows(idx.tolist()).to_table()
            times.append(time.perf_counter() - t)
            assert tab.num_rows == len(idx)
        out[f"take_{len(idx)}"] = best(times)
    return out


def lancer_binary():
    exe = os.path.join(ROOT, "target", "release", "lancer-bench")
    if not os.path.exists(exe):
        subprocess.run(["cargo", "build", "--release", "-p", "lancer-bench"], cwd=ROOT, check=True)
    return exe


def release_binaries():
    """The directory of `lancer` and `lancer-bench`: LANCER_BENCH_BIN when set (already
    built binaries, e.g. a profiling build, used as they are), otherwise the release
    build brought up to date. Returns (directory, whether it came from LANCER_BENCH_BIN)."""
    bins = os.environ.get("LANCER_BENCH_BIN")
    if bins:
        return bins, True
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "lancer-cli", "-p", "lancer-bench"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release"), False


def record(lines, no_record):
    """Prints a result table and, unless `no_record`, appends it to bench/RESULTS.md."""
    table = "\n".join(lines)
    print(table)
    if not no_record:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write("\n" + table + "\n")


def machine():
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model or platform.processor()}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--version", default="2.1")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    path = os.path.join(OUT, f"bench_{a.rows}_v{a.version}.lance")
    make_file(path, a.rows, a.version)
    rng = np.random.default_rng(7)
    index_sets = [np.sort(rng.choice(a.rows, size=k, replace=False)).astype(np.uint64) for k in (1, 100, 10_000)]
    idx_files = []
    for idx in index_sets:
        f = os.path.join(OUT, f"idx_{len(idx)}.bin")
        idx.astype("<u8").tofile(f)
        idx_files.append(f)

    py = bench_pylance(path, a.iters, index_sets)
    exe = lancer_binary()
    res = subprocess.run([exe, "file-read", path, str(a.iters)] + idx_files, capture_output=True, text=True, check=True)
    lr = json.loads(res.stdout)

    size = os.path.getsize(path)
    lines = [
        f"### File read, {a.rows:,} rows (int64, utf8, 768-d float32), Lance {a.version}, {size / 1e9:.2f} GB",
        f"{datetime.date.today()}, {machine()}, pylance {lance.__version__}, best of {a.iters}, page cache warm",
        "",
        "| operation | pylance (s) | Lancer (s) | pylance / Lancer |",
        "|---|---|---|---|",
    ]
    for k in ["open", "full_decode", "take_1", "take_100", "take_10000"]:
        p, l = py[k]["best"], lr[k]["best"]
        lines.append(f"| {k} | {p:.6f} | {l:.6f} | {p / l:.2f}x |")
    record(lines, a.no_record)


if __name__ == "__main__":
    sys.exit(main())
