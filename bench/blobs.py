#!/usr/bin/env python3
"""Blob v2 columns: Lancer against pylance 14 on the same blobs, in one run (issue 44).

    .venv/py/bin/python bench/blobs.py [--blobs 1000] [--s3-blobs 200] [--no-build] [--no-record]

Runs in the test venv (.venv/py: pylance 14) after `maturin develop --release` of the
`lancer` package (the script builds it unless `--no-build`). Payload sizes are drawn
log-uniformly between 100 KiB and 8 MiB (seeded), so the column holds packed and
dedicated blobs as pylance's defaults place them (64 KiB inline, 4 MiB dedicated).
Measures, locally and on moto's S3 server (started here, `--s3-blobs` blobs):

- write: `write_dataset` of the blob column (MB/s), each engine into an empty place;
- random ranges: for 300 random rows, `take_blobs([row])` then one 64 KiB
  `read_range` at a random offset — per-read latency p50 / p99, bytes and requests
  (Lancer's session counters; pylance has none exposed);
- whole values: `read_blobs` of 100 random rows (MB/s).

Both engines read the dataset pylance wrote (the same bytes). Appends a table to
bench/RESULTS.md.
"""

import argparse
import datetime
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import file_read  # noqa: E402

KB = 1024


def build():
    env = dict(os.environ, VIRTUAL_ENV=os.path.dirname(os.path.dirname(sys.executable)),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    subprocess.run(["maturin", "develop", "--release", "--quiet"], cwd=os.path.join(ROOT, "python"),
                   env=env, check=True)


def payloads(n, seed=7):
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(np.log(100 * KB), np.log(8 * KB * KB), size=n)).astype(np.int64)
    block = rng.integers(0, 256, size=8 * KB * KB + 1, dtype=np.uint8).tobytes()
    return [block[k % 997: k % 997 + int(s)] for k, s in enumerate(sizes)]


def moto():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    log = open(os.path.join(tempfile.gettempdir(), "bench-blobs-moto.log"), "w")
    proc = subprocess.Popen([os.path.join(ROOT, ".venv", "moto", "bin", "moto_server"), "-H", "127.0.0.1",
                             "-p", str(port)], stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/")
            break
        except OSError:
            time.sleep(0.2)
    urllib.request.urlopen(urllib.request.Request(url + "/bench", method="PUT"))
    opts = {"access_key_id": "bench", "secret_access_key": "bench", "region": "us-east-1",
            "endpoint": url, "allow_http": "true", "aws_endpoint": url}
    return proc, opts


def run_case(where, uri_of, blobs, storage_options, lines):
    import lance
    import lancer

    vals = payloads(blobs)
    total = sum(len(v) for v in vals)
    res = {}
    for name, mod in (("pylance", lance), ("lancer", lancer)):
        t = pa.table({"id": pa.array(range(blobs), pa.int64()), "b": mod.blob_array(vals)},
                     schema=pa.schema([pa.field("id", pa.int64()), mod.blob_field("b")]))
        uri = uri_of(name)
        start = time.perf_counter()
        mod.write_dataset(t, uri, data_storage_version="2.2", storage_options=storage_options)
        res[(name, "write")] = total / (time.perf_counter() - start) / 1e6
    uri = uri_of("pylance")
    rng = np.random.default_rng(11)
    rows = rng.integers(0, blobs, size=300)
    sizes = [len(vals[r]) for r in rows]
    offsets = [int(rng.integers(0, s - 64 * KB)) for s in sizes]
    picks = rng.choice(blobs, size=min(100, blobs), replace=False).tolist()
    picked = sum(len(vals[r]) for r in picks)
    counters = {}
    for name, mod in (("pylance", lance), ("lancer", lancer)):
        ds = mod.dataset(uri, storage_options=storage_options)
        lat = []
        before = ds.io_stats_incremental() if name == "lancer" and hasattr(ds, "io_stats_incremental") else None
        for r, o in zip(rows, offsets):
            start = time.perf_counter()
            f = ds.take_blobs("b", indices=[int(r)])[0]
            got = f.read_range(o, 64 * KB)
            lat.append(time.perf_counter() - start)
            assert got == vals[r][o:o + 64 * KB]
        if before is not None:
            st = ds.io_stats_incremental()
            counters[name] = (getattr(st, "read_bytes", None), getattr(st, "read_iops", None))
        lat_ms = np.array(lat) * 1e3
        res[(name, "p50")] = float(np.percentile(lat_ms, 50))
        res[(name, "p99")] = float(np.percentile(lat_ms, 99))
        start = time.perf_counter()
        got = ds.read_blobs("b", indices=picks)
        res[(name, "whole")] = picked / (time.perf_counter() - start) / 1e6
        assert [g[1] for g in got] == [vals[r] for r in picks]
    ratio = lambda k, higher=True: (res[("lancer", k)] / res[("pylance", k)]) if higher else \
        (res[("pylance", k)] / res[("lancer", k)])  # noqa: E731
    lines += [
        f"| {where}, {blobs} blobs ({total / 1e9:.2f} GB) | write MB/s | {res[('pylance', 'write')]:.0f} | "
        f"{res[('lancer', 'write')]:.0f} | **{ratio('write'):.2f}x** |",
        f"| | take_blobs + 64 KiB read_range, p50 ms | {res[('pylance', 'p50')]:.2f} | {res[('lancer', 'p50')]:.2f} | "
        f"**{ratio('p50', False):.2f}x** |",
        f"| | ... p99 ms | {res[('pylance', 'p99')]:.2f} | {res[('lancer', 'p99')]:.2f} | **{ratio('p99', False):.2f}x** |",
        f"| | read_blobs of {len(picks)} rows ({picked / 1e6:.0f} MB), MB/s | {res[('pylance', 'whole')]:.0f} | "
        f"{res[('lancer', 'whole')]:.0f} | **{ratio('whole'):.2f}x** |",
    ]
    if counters.get("lancer") and counters["lancer"][0] is not None:
        b, n = counters["lancer"]
        lines.append(f"| | Lancer's 300 range reads: {n} requests, {b / 1e6:.1f} MB read "
                     f"({300 * 64 * KB / 1e6:.1f} MB asked) | | | |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blobs", type=int, default=1000)
    ap.add_argument("--s3-blobs", type=int, default=200)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    if not a.no_build:
        build()
    import lance

    lines = [
        "",
        f"### Blob v2 columns (bench/blobs.py, {datetime.date.today()}, {file_read.machine()}, "
        f"pylance {lance.__version__})",
        "",
        "| data | measure | pylance 14 | Lancer | Lancer vs pylance |",
        "|---|---|---|---|---|",
    ]
    tmp = tempfile.mkdtemp(prefix="bench-blobs-")
    try:
        run_case("local", lambda n: os.path.join(tmp, f"{n}.lance"), a.blobs, None, lines)
        shutil.rmtree(tmp, ignore_errors=True)
        if a.s3_blobs:
            proc, opts = moto()
            try:
                stamp = int(time.time())
                run_case("S3 (moto)", lambda n: f"s3://bench/{n}-{stamp}", a.s3_blobs, opts, lines)
            finally:
                proc.terminate()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    file_read.record(lines, a.no_record)


if __name__ == "__main__":
    main()
