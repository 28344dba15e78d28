#!/usr/bin/env python3
"""Datasets on S3 with request latency: Lancer and pylance 14 side by side (issue #16).

    .venv/bench/bin/python bench/s3.py [--rows N] [--latency-ms 20] [--iters 3]

Starts moto's S3 server (.venv/moto, installed by scripts/setup-python.sh) and, in front
of it, a proxy that holds every HTTP request for --latency-ms before passing it on and
counts the requests. pylance 14 writes one dataset there (16 fragments, 5% deleted, the
`issue` shape of bench/run: int64 id, 20-value category, float64, 8-word text, 128-d
float32 vector); then each operation runs through the proxy for both engines: open +
count_rows, take 100 and 1,000 random rows, a full scan, a filtered scan, an append
commit. pylance runs in this process (a fresh `lance.dataset` per run); Lancer is the
`lancer` CLI (release build), one process per run, its start-up time (measured on
`lancer --version`) reported beside. Best of --iters; the requests are those of the best
run. Prints a Markdown table (for bench/RESULTS.md).
"""
import argparse
import asyncio
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import lance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = {b"GET", b"PUT", b"HEAD", b"POST", b"DELETE"}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Proxy:
    """Holds each request `latency` seconds, counts requests."""

    def __init__(self, target_port, latency):
        self.target, self.latency, self.count = target_port, latency, 0
        self.trace = None  # a list: (seconds, request line, Range header) of each request
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self._run, daemon=True).start()
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port)).close()
                return
            except OSError:
                time.sleep(0.05)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._conn, "127.0.0.1", self.port))
        self.loop.run_forever()
        server.close()

    async def _conn(self, reader, writer):
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return

        async def c2s():
            while True:
                data = await reader.read(1 << 16)
                if not data:
                    break
                if data.split(b" ", 1)[0] in METHODS:
                    self.count += 1
                    if self.trace is not None:
                        head = data.split(b"\r\n")
                        rng = [h.split(b":", 1)[1].strip().decode() for h in head if h.lower().startswith(b"range:")]
                        self.trace.append((time.perf_counter(), head[0].decode(errors="replace")[:90], rng[0] if rng else ""))
                    await asyncio.sleep(self.latency)
                up_w.write(data)
                await up_w.drain()
            up_w.close()

        async def s2c():
            while True:
                data = await up_r.read(1 << 16)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
            writer.close()

        await asyncio.gather(c2s(), s2c(), return_exceptions=True)


def table(n, seed=0, start=0):
    r = np.random.default_rng(seed)
    ids = np.arange(start, start + n)
    words = np.array([f"w{i:03d}" for i in range(500)])
    text = [" ".join(words[r.integers(0, 500, 8)]) for _ in range(n)]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "category": pa.array([f"c{i % 20}" for i in ids]),
        "x": pa.array(r.standard_normal(n)),
        "text": pa.array(text),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(n * 128).astype(np.float32)), 128),
    })


def best(fn, iters, proxy):
    runs = []
    for _ in range(iters):
        proxy.count = 0
        t = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t, proxy.count))
    return min(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--latency-ms", type=float, default=20.0)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--trace", default="", help="an operation's name (e.g. 'full scan'): print both engines' "
                    "request timelines for it instead of the table")
    a = ap.parse_args()
    moto = os.path.join(ROOT, ".venv/moto/bin/moto_server")
    port = free_port()
    server = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/")
                break
            except OSError:
                time.sleep(0.1)
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/bench", method="PUT"))
        proxy = Proxy(port, a.latency_ms / 1000)
        env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1",
               "AWS_ENDPOINT": f"http://127.0.0.1:{proxy.port}", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{proxy.port}",
               "AWS_ALLOW_HTTP": "true"}
        os.environ.update(env)
        subprocess.run(["cargo", "build", "--release", "-p", "lancer-cli"], cwd=ROOT, check=True)
        exe = os.path.join(ROOT, "target", "release", "lancer")
        uri = "s3://bench/issue"
        t = table(a.rows)
        lat, proxy.latency = proxy.latency, 0
        ds = lance.write_dataset(t, uri, max_rows_per_file=(a.rows + 15) // 16, data_storage_version="2.1")
        ds.delete("id % 20 = 7")
        proxy.latency = lat
        live = ds.count_rows()
        rng = np.random.default_rng(1)
        take100 = sorted(rng.choice(live, 100, replace=False).tolist())
        take1000 = sorted(rng.choice(live, 1000, replace=False).tolist())
        small = table(1000, seed=2, start=10_000_000)
        tmp = tempfile.mkdtemp()
        small_path = os.path.join(tmp, "small.arrow")
        with ipc.new_file(small_path, small.schema) as w:
            w.write_table(small)
        flt = "category = 'c3' AND id % 7 = 0"

        def cli(*args):
            subprocess.run([exe, *args], check=True, stdout=subprocess.DEVNULL)

        start_up, _ = best(lambda: cli("--version"), a.iters, proxy)
        ops = [
            ("open + count_rows", lambda: lance.dataset(uri).count_rows(), lambda: cli("count", uri)),
            ("take 100 rows", lambda: lance.dataset(uri).take(take100),
             lambda: cli("take", uri, ",".join(map(str, take100)), "--format", "arrow-ipc")),
            ("take 1,000 rows", lambda: lance.dataset(uri).take(take1000),
             lambda: cli("take", uri, ",".join(map(str, take1000)), "--format", "arrow-ipc")),
            ("full scan", lambda: lance.dataset(uri).to_table(),
             lambda: cli("cat", uri, "--format", "arrow-ipc")),
            ("filtered scan", lambda: lance.dataset(uri).to_table(filter=flt),
             lambda: cli("cat", uri, "--filter", flt, "--format", "arrow-ipc")),
            ("append 1,000 rows (commit)", lambda: lance.write_dataset(small, uri, mode="append"),
             lambda: cli("import", small_path, uri, "--mode", "append")),
        ]
        cpu = platform.processor() or platform.machine()
        try:
            cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
        except (OSError, IndexError):
            pass
        print(f"## Object storage — {time.strftime('%Y-%m-%d')} — {a.rows:,} rows in 16 fragments (5% deleted), "
              f"moto S3 + {a.latency_ms:g} ms per request — {os.cpu_count()} cores, {cpu}\n")
        print(f"pylance {lance.__version__} in-process (a fresh `lance.dataset` per run); Lancer: the `lancer` CLI, "
              f"one process per run (start-up {start_up * 1000:.1f} ms included). Best of {a.iters}; requests "
              f"counted at the latency proxy.\n")
        print("| operation | pylance s | Lancer s | pylance / Lancer | pylance requests | Lancer requests |")
        print("|---|---|---|---|---|---|")
        if a.trace:
            for name, py_fn, lancer_fn in ops:
                if name != a.trace:
                    continue
                for who, fn in (("pylance", py_fn), ("lancer", lancer_fn)):
                    proxy.trace, t0 = [], time.perf_counter()
                    fn()
                    took, trace, proxy.trace = time.perf_counter() - t0, proxy.trace, None
                    print(f"{who}: {len(trace)} requests, {took * 1000:.0f} ms")
                    for t, line, rng in trace:
                        print(f"  {(t - t0) * 1000:7.1f} ms  {line}  {rng}")
            return
        for name, py_fn, lancer_fn in ops:
            pt, pr = best(py_fn, a.iters, proxy)
            lt, lr = best(lancer_fn, a.iters, proxy)
            print(f"| {name} | {pt:.3f} | {lt:.3f} | {pt / lt:.2f}x | {pr} | {lr} |")
            sys.stdout.flush()
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
