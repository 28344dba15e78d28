#!/usr/bin/env python3
"""One run of every side-by-side benchmark on generated data of several shapes.

    bench/run [--quick] [--iters N] [--only SHAPE,...] [--no-record]

Each shape is a dataset written by pylance (cached under bench/out/run/, keyed by its
parameters), plus a Parquet copy of its live rows. Every operation runs in each engine
`--iters` times and the best time counts:

- pylance 14 in-process (dataset opened once; `to_table`, `count_rows`, `take`,
  `nearest` with `use_index=False`, `write_dataset` from the Parquet file);
- Lancer through the `lancer` CLI, the whole process timed (open included; rows as
  Arrow IPC to /dev/null) — what a user of the CLI waits for; takes through
  `lancer-bench takes` in-process on an opened handle, as a loader holds it;
- DuckDB 2.0 over the Parquet copy (scans, filters, counts: `.to_arrow_table()` for rows).

It checks that the engines agree (row counts, search ids, take id sums) and prints one
table of ratios (other engine time / Lancer time: above 1 means Lancer is faster), with
Lancer's peak RSS per CLI run. For exact search it also measures, in-process, the time
against the memory-bandwidth bound (vector bytes of every physical row / memcpy rate)
and the peak heap during the search against one batch of vectors per scan thread.
The table is appended to bench/RESULTS.md with the date and machine.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402

ROOT = file_read.ROOT
OUT = os.path.join(ROOT, "bench", "out", "run")
WORDS = [f"w{i:03d}" for i in range(1000)]

# name -> rows, fragments, fraction deleted (ids divisible by `del_mod`), columns,
# operations. Filters are SQL both engines accept.
SHAPES = {
    "issue": dict(
        about="950k rows in 16 fragments, 5% deleted: int64 id, 20-value category, float64, 8-word text, 128-d f32",
        rows=950_000, frags=16, del_mod=20, cols=["id", "category", "x", "text", "vec128"],
        filter="category = 'c3' AND id % 7 = 0", search="vec128", prefilter="category = 'c3'",
        take_cols="id,category,x,text,vec128", imports=True),
    "many_frags_narrow": dict(
        about="2M rows in 200 fragments, 10% deleted: int64 id, float64, int32, bool",
        rows=2_000_000, frags=200, del_mod=10, cols=["id", "x", "n", "flag"],
        filter="x > 0.9 AND flag", take_cols="id,x,n,flag", imports=True),
    "wide_768": dict(
        about="200k rows in 4 fragments, 10% deleted: int64 id, 1 KB text, 768-d f32",
        rows=200_000, frags=4, del_mod=10, cols=["id", "long", "vec768"],
        filter="long LIKE 'w00%'", search="vec768", prefilter="id % 3 = 0",
        take_cols="id,long,vec768", imports=False),
    "strings": dict(
        about="500k rows in 8 fragments, no deletions: int64 id, 8 / 64 / 1,000-char strings",
        rows=500_000, frags=8, del_mod=0, cols=["id", "short", "mid", "long"],
        filter="short LIKE 'w01%' OR mid LIKE '%w999%'", take_cols="id,short,mid,long",
        imports=True),
}


def column(name, ids, rng):
    n = len(ids)
    if name == "id":
        return pa.array(ids, pa.int64())
    if name == "category":
        return pa.array([f"c{i}" for i in rng.integers(0, 20, n)], pa.string())
    if name == "x":
        return pa.array(rng.random(n))
    if name == "n":
        return pa.array(rng.integers(-1000, 1000, n, dtype=np.int32))
    if name == "flag":
        return pa.array(rng.random(n) < 0.3)
    if name.startswith("vec"):
        d = int(name[3:])
        return pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * d, dtype=np.float32)), d)
    words = {"text": 8, "short": 2, "mid": 16, "long": 250}[name]
    w = rng.integers(0, len(WORDS), (n, words))
    sep = "" if name == "short" else " "
    return pa.array([sep.join(WORDS[j] for j in row) for row in w], pa.string())


def make_shape(name, spec, scale):
    rows = max(1000, int(spec["rows"] * scale))
    path = os.path.join(OUT, f"{name}_{rows}")
    if os.path.exists(path + "/done"):
        return path, rows
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    rng = np.random.default_rng(7)
    per = -(-rows // spec["frags"])
    ds_path = os.path.join(path, "ds")

    def batches():
        for start in range(0, rows, per):
            ids = np.arange(start, min(rows, start + per))
            yield pa.record_batch([column(c, ids, rng) for c in spec["cols"]], names=spec["cols"])

    first = next(batches())
    schema = first.schema
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), ds_path,
                        max_rows_per_file=per, max_rows_per_group=per, data_storage_version="2.1")
    ds = lance.dataset(ds_path)
    if spec["del_mod"]:
        ds.delete(f"id % {spec['del_mod']} = 0")
        ds = lance.dataset(ds_path)
    with pq.ParquetWriter(os.path.join(path, "live.parquet"), schema) as w:
        for b in ds.to_batches(batch_size=65536):
            w.write_batch(b)
    q = np.random.default_rng(3)
    for c in spec["cols"]:
        if c.startswith("vec"):
            d = int(c[3:])
            json.dump([float(v) for v in q.standard_normal(d, dtype=np.float32)], open(os.path.join(path, f"q_{c}.json"), "w"))
    live = ds.count_rows()
    for n in (100, 10_000):
        idx = np.sort(q.choice(live, size=min(n, live), replace=False)).astype("<u8")
        idx.tofile(os.path.join(path, f"idx_{n}.bin"))
    open(path + "/done", "w").write("ok")
    return path, rows


def per_call(iters, f):
    """Seconds per call of `f` over `iters` rounds, best and median ({"best", "median"}),
    a round repeating calls shorter than ~50 ms (1 to 10,000 of them, as `lancer-bench
    api`), and one more result."""
    t = time.perf_counter()
    f()
    reps = max(1, min(10_000, int(0.05 / max(time.perf_counter() - t, 1e-7))))
    rounds = []
    for _ in range(iters):
        t = time.perf_counter()
        for _ in range(reps):
            # each result dropped before the next call, as the Rust side's are: a kept
            # one would make every call allocate (and fault in) fresh memory
            f()
        rounds.append((time.perf_counter() - t) / reps)
    rounds.sort()
    return {"best": rounds[0], "median": rounds[len(rounds) // 2]}, f()


def best_of(iters, f):
    times, out = [], None
    for _ in range(iters):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


# Runs argv[1:] and reports its wall time and peak RSS on stderr's last line. A separate
# small interpreter launches the command: on Linux a process inherits the peak RSS of
# the image it was exec'd from, so forking it from this (large) process would report
# this process's peak instead of the command's.
LAUNCH = r"""
import json, os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:])
_, status, ru = os.wait4(p.pid, 0)
secs = time.perf_counter() - t
sys.stderr.write("\n" + json.dumps({"secs": secs, "rss": ru.ru_maxrss * 1024, "code": os.waitstatus_to_exitcode(status)}) + "\n")
"""


def run_cli(iters, args, stdout=subprocess.DEVNULL):
    """Best wall time of `iters` runs of the command, the last run's stdout and the
    largest peak RSS (bytes), as measured by the launcher."""
    times, rss, out = [], 0, b""
    for _ in range(iters):
        p = subprocess.run([sys.executable, "-c", LAUNCH, *args], stdout=stdout, stderr=subprocess.PIPE)
        err = p.stderr.decode(errors="replace")
        m = json.loads(err.rstrip().splitlines()[-1])
        if m["code"] != 0:
            raise RuntimeError(f"{' '.join(args)} exited {m['code']}: {err[-2000:]}")
        times.append(m["secs"])
        rss, out = max(rss, m["rss"]), p.stdout or b""
    return min(times), out, rss


def bench_shape(name, spec, path, rows, iters, exe, bench_exe):
    ds_path = os.path.join(path, "ds")
    parquet = os.path.join(path, "live.parquet")
    ds = lance.dataset(ds_path)
    duck = duckdb.connect()
    duck.execute("SET threads TO %d" % os.cpu_count())
    src = f"read_parquet('{parquet}')"
    res = []

    def add(op, how, py, lan, duck_t=None, rss=None, same=True, note=""):
        res.append(dict(shape=name, op=op, how=how, pylance=py, lancer=lan, duckdb=duck_t, rss=rss, same=same, note=note))
        print(f"  {op:<28} pylance {py:8.4f}  lancer {lan:8.4f}  {py / lan:6.2f}x"
              + (f"  duckdb {duck_t:8.4f} {duck_t / lan:6.2f}x" if duck_t else "")
              + ("" if same else "  RESULTS DIFFER") + (f"  {note}" if note else ""), flush=True)

    # full scan
    py_t, tab = best_of(iters, lambda: ds.to_table())
    n_live = tab.num_rows
    del tab
    lan_t, _, rss = run_cli(iters, [exe, "cat", ds_path, "--format", "arrow-ipc"])
    cnt = json.loads(subprocess.run([exe, "count", ds_path, "--json"], capture_output=True, check=True).stdout)
    d_t, dn = best_of(iters, lambda: duck.sql(f"SELECT * FROM {src}").to_arrow_table().num_rows)
    add("full scan", "cli", py_t, lan_t, d_t, rss, same=(cnt.get("rows", cnt.get("count")) == n_live == dn))

    # filtered scan and count
    f = spec["filter"]
    py_t, tab = best_of(iters, lambda: ds.to_table(filter=f))
    py_n = tab.num_rows
    lan_t, _, rss = run_cli(iters, [exe, "cat", ds_path, "--filter", f, "--format", "arrow-ipc"])
    d_t, dn = best_of(iters, lambda: duck.sql(f"SELECT * FROM {src} WHERE {f}").to_arrow_table().num_rows)
    add("filtered scan", "cli", py_t, lan_t, d_t, rss, same=(py_n == dn), note=f"`{f}`, {py_n:,} rows")
    py_t, py_c = best_of(iters, lambda: ds.count_rows(filter=f))
    lan_t, out, rss = run_cli(iters, [exe, "count", ds_path, "--filter", f, "--json"], stdout=subprocess.PIPE)
    lan_c = json.loads(out)
    lan_c = lan_c.get("rows", lan_c.get("count"))
    d_t, dc = best_of(iters, lambda: duck.execute(f"SELECT count(*) FROM {src} WHERE {f}").fetchone()[0])
    add("count with filter", "cli", py_t, lan_t, d_t, rss, same=(py_c == lan_c == dc))

    # takes (in-process, handle opened once)
    cols = spec["take_cols"].split(",")
    idx_files = [os.path.join(path, f"idx_{n}.bin") for n in (100, 10_000)]
    lt = json.loads(subprocess.run([bench_exe, "takes", ds_path, str(iters), spec["take_cols"], *idx_files],
                                   capture_output=True, check=True).stdout)
    for fidx in idx_files:
        idx = np.fromfile(fidx, dtype="<u8").astype(np.int64)
        py_t, tab = best_of(iters, lambda: ds.take(idx, columns=cols))
        r = lt[f"take_{len(idx)}"]
        add(f"take {len(idx):,} rows", "in-process", py_t, r["t"]["best"],
            same=(int(np.sum(tab.column("id").to_numpy())) == r["id_sum"]))

    # exact search
    if spec.get("search"):
        c = spec["search"]
        qf = os.path.join(path, f"q_{c}.json")
        q = np.array(json.load(open(qf)), dtype=np.float32)
        qs = ",".join(repr(float(v)) for v in q)
        for label, filt in (("exact k=10", None), ("exact k=10, prefilter", spec["prefilter"])):
            kw = dict(nearest={"column": c, "q": q, "k": 10, "use_index": False, "metric": "l2"}, columns=["id", "_distance"])
            if filt:
                kw.update(filter=filt, prefilter=True)
            py_t, tab = best_of(iters, lambda: ds.to_table(**kw))
            args = [exe, "search", ds_path, "--column", c, "--query", qs, "-k", "10", "--columns", "id", "--json"]
            if filt:
                args += ["--filter", filt]
            lan_t, out, rss = run_cli(iters, args, stdout=subprocess.PIPE)
            lan_ids = [json.loads(line)["id"] for line in out.decode().splitlines() if line.strip()]
            py_ids = tab.column("id").to_pylist()
            add(label, "cli", py_t, lan_t, rss=rss, same=(lan_ids == py_ids), note=f"`{filt}`" if filt else "")
            m = json.loads(subprocess.run([bench_exe, "search-mem", ds_path, c, qf, "10", *([filt] if filt else [])],
                                          capture_output=True, check=True).stdout)
            bound = m["vector_bytes"] / m["memcpy_bytes_per_s"]
            pc_bound = m["vector_bytes"] / m["page_cache_bytes_per_s"]
            batch = m["batch_rows"] * m["dim"] * 4
            res[-1]["search"] = dict(seconds=m["seconds"], bound=bound, pc_bound=pc_bound, rss=m["vm_hwm"], peak_heap=m["peak_heap"],
                                     batch_bytes=batch, threads=m["threads"], same_in_process=(m["ids"] == py_ids))

    # writes from Parquet
    if spec.get("imports"):
        out_py, out_lan = os.path.join(path, "w_py"), os.path.join(path, "w_lan")

        # Each write starts from an empty target with no dirty pages left behind by the
        # previous one (removal and writeback outside the timed part, for both sides).
        def fresh(p):
            shutil.rmtree(p, ignore_errors=True)
            os.sync()

        def py_write():
            r = pq.ParquetFile(parquet)
            lance.write_dataset(pa.RecordBatchReader.from_batches(r.schema_arrow, r.iter_batches(batch_size=65536)),
                                out_py, data_storage_version="2.1")

        py_times = []
        for _ in range(iters):
            fresh(out_py)
            t = time.perf_counter()
            py_write()
            py_times.append(time.perf_counter() - t)
        py_t = min(py_times)
        times = []
        for _ in range(iters):
            fresh(out_lan)
            t, _, rss = run_cli(1, [exe, "import", parquet, out_lan, "--data-storage-version", "2.1"])
            times.append(t)
        lan_n = lance.dataset(out_lan).count_rows()
        size = lambda p: sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(p) for f in fs)  # noqa: E731
        add("import Parquet", "cli", py_t, min(times), rss=rss, same=(lan_n == n_live),
            note=f"bytes Lancer/pylance {size(out_lan) / size(out_py):.3f}")
        shutil.rmtree(out_py, ignore_errors=True)
        shutil.rmtree(out_lan, ignore_errors=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="shapes at a tenth of their rows")
    ap.add_argument("--only", default="", help="comma-separated shape names")
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    subprocess.run(["cargo", "build", "--release", "-p", "lancer-cli", "-p", "lancer-bench"], cwd=ROOT, check=True)
    exe = os.path.join(ROOT, "target", "release", "lancer")
    bench_exe = os.path.join(ROOT, "target", "release", "lancer-bench")
    shapes = [s for s in SHAPES if not a.only or s in a.only.split(",")]
    results = []
    for name in shapes:
        spec = SHAPES[name]
        t = time.perf_counter()
        path, rows = make_shape(name, spec, 0.1 if a.quick else 1.0)
        print(f"{name}: {spec['about']} (rows {rows:,}; data ready in {time.perf_counter() - t:.0f} s)", flush=True)
        results += bench_shape(name, spec, path, rows, a.iters, exe, bench_exe)

    lines = [f"### bench/run: every path on {len(shapes)} shapes{' (--quick: a tenth of the rows)' if a.quick else ''}",
             f"{datetime.date.today()}, {file_read.machine()}, pylance {lance.__version__}, duckdb {duckdb.__version__}, "
             f"best of {a.iters}, page cache warm. Lancer: `lancer` CLI whole process (rows as Arrow IPC to /dev/null) "
             "except takes (in-process, opened handle, like pylance's). Ratios: other / Lancer.", ""]
    for name in shapes:
        lines.append(f"- **{name}**: {SHAPES[name]['about']}")
    lines += ["", "| shape | operation | pylance (s) | Lancer (s) | pylance / Lancer | DuckDB / Lancer | Lancer peak RSS | same results | note |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        duck_r = f"{r['duckdb'] / r['lancer']:.2f}x" if r["duckdb"] else ""
        rss = f"{r['rss'] / 2**20:,.0f} MiB" if r["rss"] else ""
        lines.append(f"| {r['shape']} | {r['op']} | {r['pylance']:.4f} | {r['lancer']:.4f} | {r['pylance'] / r['lancer']:.2f}x "
                     f"| {duck_r} | {rss} | {'yes' if r['same'] else '**no**'} | {r['note']} |")
    searches = [r for r in results if "search" in r]
    if searches:
        lines += ["", "Exact search in-process (`lancer-bench search-mem`, best of 3 on one opened dataset, peak heap the highest of the 3): time against two bounds for reading the "
                  "vector bytes of all physical rows — a one-thread memcpy of resident memory, and a one-thread read of the "
                  "data files from the page cache into a reused buffer — and the peak heap during the search against one "
                  "batch of vectors per scan thread; the process's peak RSS (VmHWM) for scale.", "",
                  "| shape | search | Lancer (s) | memcpy bound (s) | Lancer / memcpy bound | page-cache bound (s) | Lancer / page-cache bound "
                  "| peak heap | batch x threads | heap / (batch x threads) | process peak RSS | same ids |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in searches:
            s = r["search"]
            bt = s["batch_bytes"] * s["threads"]
            lines.append(f"| {r['shape']} | {r['op']} | {s['seconds']:.4f} | {s['bound']:.4f} | {s['seconds'] / s['bound']:.2f} "
                         f"| {s['pc_bound']:.4f} | {s['seconds'] / s['pc_bound']:.2f} "
                         f"| {s['peak_heap'] / 2**20:.1f} MiB | {bt / 2**20:.1f} MiB | {s['peak_heap'] / bt:.2f} "
                         f"| {s['rss'] / 2**20:.0f} MiB | {'yes' if s['same_in_process'] else '**no**'} |")
    file_read.record(lines, a.no_record)
    worst = min(r["pylance"] / r["lancer"] for r in results)
    bad = [r for r in results if not r["same"]]
    print(f"\nworst pylance / Lancer ratio: {worst:.2f}x; result mismatches: {len(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
