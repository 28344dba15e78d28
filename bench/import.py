#!/usr/bin/env python3
"""Benchmark: importing a Parquet file into a new dataset, `lancer import` vs pylance
`write_dataset`, in one run.

    .venv/pylance-14/bin/python bench/import.py [--rows 950000] [--runs 3]

Generates (once, deterministically) a Parquet file of ROWS rows: int64 id, a string
category of 20 values, a float64, an 8-word text and a 128-d float32 vector. Then,
alternating the two and syncing before each run, times:

* Lancer: `lancer import data.parquet DS --data-storage-version 2.1` (the whole
  process: Parquet decoding, encoding, writing, commit);
* pylance: `lance.write_dataset(reader, DS, data_storage_version="2.1")` with a
  streaming Parquet reader (the same work: Parquet decoding, encoding, writing,
  commit), and, for reference, from the table already in memory.

Checks both datasets hold ROWS rows, prints best-of-RUNS seconds and the ratio
(pylance / Lancer) and appends the table to bench/RESULTS.md.
"""
import argparse
import datetime
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import lance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402

ROOT = file_read.ROOT
OUT = os.path.join(ROOT, "bench", "out", "import")


def make_parquet(path, rows):
    if os.path.exists(path):
        return
    r = np.random.default_rng(11)
    cats = np.array([f"category-{i:02d}" for i in range(20)])
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
                      "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi"])
    w = r.integers(0, len(words), (rows, 8))
    text = [" ".join(words[row]) for row in w]
    table = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "category": pa.array(cats[r.integers(0, 20, rows)]),
        "value": pa.array(r.standard_normal(rows)),
        "text": pa.array(text),
        "vector": pa.FixedSizeListArray.from_arrays(
            pa.array(r.standard_normal(rows * 128).astype(np.float32)), 128),
    })
    tmp = path + ".tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def lancer_binary():
    exe = os.path.join(ROOT, "target", "release", "lancer")
    if not os.path.exists(exe):
        subprocess.run(["cargo", "build", "--release", "-p", "lancer-cli"], cwd=ROOT, check=True)
    return exe


def run_lancer(exe, src, dst):
    t = time.perf_counter()
    subprocess.run([exe, "import", src, dst, "--data-storage-version", "2.1"],
                   check=True, capture_output=True)
    return time.perf_counter() - t


def run_pylance_stream(src, dst):
    t = time.perf_counter()
    f = pq.ParquetFile(src)
    reader = pa.RecordBatchReader.from_batches(f.schema_arrow, f.iter_batches())
    lance.write_dataset(reader, dst, data_storage_version="2.1")
    return time.perf_counter() - t


def run_pylance_read_table(src, dst):
    t = time.perf_counter()
    lance.write_dataset(pq.read_table(src), dst, data_storage_version="2.1")
    return time.perf_counter() - t


def run_pylance_table(table, dst):
    t = time.perf_counter()
    lance.write_dataset(table, dst, data_storage_version="2.1")
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=950_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--lancer", help="the lancer binary (default: target/release/lancer, built if missing)")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    src = os.path.join(OUT, f"data_{a.rows}.parquet")
    make_parquet(src, a.rows)
    exe = a.lancer or lancer_binary()
    table = pq.read_table(src)
    d_l, d_s, d_r, d_t = (os.path.join(OUT, n) for n in ("lancer.lance", "py_stream.lance", "py_read.lance", "py_table.lance"))
    t_l, t_s, t_r, t_t = [], [], [], []
    for _ in range(a.runs):
        for d, run, ts in ((d_l, lambda d: run_lancer(exe, src, d), t_l),
                           (d_s, lambda d: run_pylance_stream(src, d), t_s),
                           (d_r, lambda d: run_pylance_read_table(src, d), t_r),
                           (d_t, lambda d: run_pylance_table(table, d), t_t)):
            shutil.rmtree(d, ignore_errors=True)
            os.sync()
            ts.append(run(d))
    rows_l = lance.dataset(d_l).count_rows()
    rows_s = lance.dataset(d_s).count_rows()
    rows_r = lance.dataset(d_r).count_rows()
    rows_t = lance.dataset(d_t).count_rows()
    assert rows_l == rows_s == rows_r == rows_t == a.rows, (rows_l, rows_s, rows_r, rows_t, a.rows)
    bl, bs, br, bt = min(t_l), min(t_s), min(t_r), min(t_t)
    size = lambda d: sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(d) for f in fs)
    lines = [
        f"### Import of a Parquet file, {a.rows:,} rows (int64 id, 20-value category, float64, 8-word text, 128-d float32), Lance 2.1",
        f"{datetime.date.today()}, {file_read.machine()}, pylance {lance.__version__}, best of {a.runs} alternating runs with a sync before each; "
        f"all times: {', '.join(f'{x:.2f}' for x in t_l)} (Lancer), {', '.join(f'{x:.2f}' for x in t_s)} (pylance streamed), "
        f"{', '.join(f'{x:.2f}' for x in t_r)} (pylance read_table), {', '.join(f'{x:.2f}' for x in t_t)} (pylance in memory); rows checked: {rows_l:,}",
        "",
        "| writer | seconds | pylance / Lancer | dataset bytes |",
        "|---|---|---|---|",
        f"| `lancer import data.parquet` (whole process) | {bl:.3f} | 1.00x | {size(d_l):,} |",
        f"| pylance `write_dataset` of a streaming Parquet reader | {bs:.3f} | {bs / bl:.2f}x | {size(d_s):,} |",
        f"| pylance `write_dataset(pq.read_table(...))` (threaded Parquet decoding) | {br:.3f} | {br / bl:.2f}x | {size(d_r):,} |",
        f"| pylance `write_dataset` of the table in memory (no Parquet decoding) | {bt:.3f} | {bt / bl:.2f}x | {size(d_t):,} |",
    ]
    file_read.record(lines, a.no_record)


if __name__ == "__main__":
    sys.exit(main())
