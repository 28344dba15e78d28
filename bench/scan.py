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
    for k in (1, 100, 1_000, 10_000):
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
    # A 1%-selective filtered scan (all columns): Lancer reads the filter column first
    # and the others only for the matching rows.
    flt = "id % 100 = 7"
    times = []
    for _ in range(a.iters):
        t = time.perf_counter()
        m = lance.dataset(path).to_table(filter=flt).num_rows
        times.append(time.perf_counter() - t)
    res = json.loads(subprocess.run([file_read.lancer_binary(), "scan", path, str(a.iters), flt], capture_output=True, text=True, check=True).stdout)
    assert res["rows"] == m, (res["rows"], m)
    p, l = min(times), res["scan"]["best"]
    lines += [
        "",
        f"Filtered scan `{flt}` ({m:,} rows, all columns), best of {a.iters}:",
        "",
        "| pylance (s) | Lancer (s) | pylance / Lancer |",
        "|---|---|---|",
        f"| {p:.3f} | {l:.3f} | {p / l:.2f}x |",
    ]
    # Peak memory (max RSS from /usr/bin/time -v) of a full scan: streamed (batches
    # dropped as read) and materialized (to_table / every batch kept).
    py_stream = f"import lance\nn=0\nfor b in lance.dataset({path!r}).to_batches(): n+=b.num_rows\nprint(n)"
    py_table = f"import lance\nprint(lance.dataset({path!r}).to_table().num_rows)"
    runs = {
        "streamed": ([sys.executable, "-c", py_stream], [file_read.lancer_binary(), "stream", path]),
        "materialized": ([sys.executable, "-c", py_table], [file_read.lancer_binary(), "scan", path, "1"]),
    }
    lines += [
        "",
        "Peak memory of a full scan (max RSS, /usr/bin/time -v; Lancer maps data files and hands",
        "the mapped pages back every 32 MiB read):",
        "",
        "| scan | pylance (MiB) | Lancer (MiB) | Lancer / pylance |",
        "|---|---|---|---|",
    ]
    for label, (py_cmd, lancer_cmd) in runs.items():
        pm, lm = max_rss(py_cmd), max_rss(lancer_cmd)
        lines.append(f"| {label} | {pm:,.0f} | {lm:,.0f} | {lm / pm:.2f} |")
    file_read.record(lines, a.no_record)


def max_rss(cmd):
    """Max resident set size of `cmd` in MiB."""
    out = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, check=True)
    for line in out.stderr.splitlines():
        if "Maximum resident set size" in line:
            return int(line.split(":")[1]) / 1024
    raise RuntimeError(out.stderr)


if __name__ == "__main__":
    sys.exit(main())
