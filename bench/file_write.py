#!/usr/bin/env python3
"""Benchmark: writing Lance data files, Lancer vs pylance, in one run.

    .venv/pylance-14/bin/python bench/file_write.py [--rows 200000] [--big-rows 1000000]

1. Size: for each column kind (ints, sorted ints, low-cardinality strings, text,
   floats, vectors, nested) both writers write the same ROWS rows, for Lance 2.1 and
   2.2; prints Lancer size / pylance size (target <= 1.05).
2. Throughput: both write the 1M-row int64 + utf8 + 768-d float32 table of
   bench/file_read.py (Lance 2.1); prints seconds and the ratio.
Appends both tables to bench/RESULTS.md with the date and machine.
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
from lance.file import LanceFileWriter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402  (shares the data generator and helpers)

ROOT = file_read.ROOT
OUT = os.path.join(ROOT, "bench", "out", "write")


def kinds(rows):
    r = np.random.default_rng(3)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    text = [" ".join(r.choice(words, 8)) + f" {i}" for i in range(rows)]
    offs = np.concatenate([[0], np.cumsum(r.integers(0, 5, rows))]).astype(np.int32)
    return {
        "ints": pa.table({"v": pa.array(r.integers(-(1 << 40), 1 << 40, rows))}),
        "small ints": pa.table({"v": pa.array(r.integers(0, 1000, rows), pa.int32())}),
        "sorted ints": pa.table({"v": pa.array(np.cumsum(r.integers(0, 100, rows)))}),
        "low-card strings": pa.table({"v": pa.array(r.choice(words, rows))}),
        "text": pa.table({"v": pa.array(text)}),
        "floats": pa.table({"v": pa.array(r.standard_normal(rows))}),
        "vectors 128-d": pa.table({"v": pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(rows * 128).astype(np.float32)), 128)}),
        "nested list<int>": pa.table({"v": pa.ListArray.from_arrays(pa.array(offs), pa.array(r.integers(0, 100, offs[-1]), pa.int32()))}),
        "nested struct": pa.table({"v": pa.StructArray.from_arrays([pa.array(r.integers(0, 50, rows), pa.int32()), pa.array(r.choice(words, rows))], names=["a", "b"])}),
    }


def write_arrow(path, table):
    with pa.OSFile(path, "wb") as f:
        with pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)


def pylance_write(path, table, version):
    t = time.perf_counter()
    with LanceFileWriter(path, version=version) as w:
        for b in table.to_batches(max_chunksize=50_000):
            w.write_batch(b)
    return time.perf_counter() - t


def lancer_write(exe, arrow_path, path, version):
    res = subprocess.run([exe, "write", arrow_path, path, version], capture_output=True, text=True, check=True)
    return json.loads(res.stdout)["write"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--big-rows", type=int, default=1_000_000)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    exe = file_read.lancer_binary()
    lines = [
        f"### File size, {a.rows:,} rows per column kind: Lancer / pylance",
        f"{datetime.date.today()}, {file_read.machine()}, pylance {lance.__version__}",
        "",
        "| column kind | 2.1 pylance bytes | 2.1 ratio | 2.2 pylance bytes | 2.2 ratio |",
        "|---|---|---|---|---|",
    ]
    for name, table in kinds(a.rows).items():
        ap_ = os.path.join(OUT, "in.arrow")
        write_arrow(ap_, table)
        cells = []
        for v in ["2.1", "2.2"]:
            pp, lp = os.path.join(OUT, f"py.{v}.lance"), os.path.join(OUT, f"lancer.{v}.lance")
            pylance_write(pp, table, v)
            lancer_write(exe, ap_, lp, v)
            ps, ls = os.path.getsize(pp), os.path.getsize(lp)
            cells += [f"{ps:,}", f"{ls / ps:.3f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    size_table = "\n".join(lines)
    print(size_table)

    big = os.path.join(OUT, "big.arrow")
    if not os.path.exists(big):
        src = os.path.join(file_read.OUT, f"bench_{a.big_rows}_v2.1.lance")
        file_read.make_file(src, a.big_rows, "2.1")
        from lance.file import LanceFileReader
        tab = LanceFileReader(src).read_all().to_table()
        write_arrow(big, tab)
        del tab
    tab = pa.ipc.open_file(big).read_all()
    # Alternate the writers and flush dirty pages before each run, so that neither
    # pays for the other's writeback.
    t_py, t_l = [], []
    for _ in range(3):
        for f in ("big.py.lance", "big.lancer.lance"):
            if os.path.exists(os.path.join(OUT, f)):
                os.remove(os.path.join(OUT, f))
        os.sync()
        t_py.append(pylance_write(os.path.join(OUT, "big.py.lance"), tab, "2.1"))
        os.sync()
        t_l.append(lancer_write(exe, big, os.path.join(OUT, "big.lancer.lance"), "2.1"))
    best_py, best_l = min(t_py), min(t_l)
    del tab
    ps = os.path.getsize(os.path.join(OUT, "big.py.lance"))
    ls = os.path.getsize(os.path.join(OUT, "big.lancer.lance"))
    thr = "\n".join([
        f"### File write, {a.big_rows:,} rows (int64, utf8, 768-d float32), Lance 2.1",
        f"{datetime.date.today()}, {file_read.machine()}, pylance {lance.__version__}, best of 3 alternating runs with a sync before each (input in memory; Lancer's time excludes reading the Arrow input)",
        "",
        "| | pylance | Lancer | pylance / Lancer |",
        "|---|---|---|---|",
        f"| seconds | {best_py:.3f} | {best_l:.3f} | {best_py / best_l:.2f}x |",
        f"| bytes | {ps:,} | {ls:,} | {ls / ps:.3f} (Lancer / pylance) |",
    ])
    print(thr)
    if not a.no_record:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write("\n" + size_table + "\n\n" + thr + "\n")


if __name__ == "__main__":
    sys.exit(main())
