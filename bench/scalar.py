#!/usr/bin/env python3
"""Scalar index benchmark: build time, index size and filter latency, Lancer vs pylance,
with and without the indexes, on the same dataset in one run.

    .venv/bench/bin/python bench/scalar.py [--rows 10000000] [--iters 7] [--no-record]

Data (written by pylance 14, 10 fragments): `id` int64 (a random permutation), `category`
(100 strings), `tags` list<utf8> (0-3 of 200 labels), `text` (3 words of a 5,000-word
vocabulary), `ts` int64 rising with the row (some noise). Indexes, one per column, built
by each engine on its own copy: BTREE on id, BITMAP on category, LABEL_LIST on tags,
NGRAM on text, ZONEMAP on ts, BLOOMFILTER on a copy of id (`id2`). Build: pylance
`create_scalar_index` in-process vs Lancer in-process (`lancer-bench scalar-build`: open,
build, commit, on a third copy of the dataset) and `lancer index create` (whole process,
peak RSS; the index the filters below use).
Filters (column `id` returned): pylance `to_table` in-process with its index and with
`use_scalar_index=False`; Lancer in-process (`lancer-bench filter`, one opened dataset;
the scan's batches collected, not concatenated, as `to_table` returns them) with its
index and without. Best of `--iters` (full scans: best of 2), first run shown
too. Results are checked equal (row counts) and appended to bench/RESULTS.md.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

import lance
import numpy as np
import pyarrow as pa
from lance.indices import IndexConfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402
from run import run_cli  # noqa: E402

OUT = os.path.join(file_read.ROOT, "bench", "out", "scalar")
INDEXES = [("id", "BTREE"), ("category", "BITMAP"), ("tags", "LABEL_LIST"), ("text", "NGRAM"), ("ts", "ZONEMAP"), ("id2", "BLOOMFILTER")]


def words(rng, n):
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    out = set()
    while len(out) < n:
        k = int(rng.integers(5, 9))
        out.add("".join(rng.choice(letters, k)))
    return sorted(out)


def make(rows):
    path = os.path.join(OUT, f"base_{rows}")
    rng = np.random.default_rng(5)
    vocab = words(rng, 5000)
    if os.path.exists(path + "/done"):
        return path, vocab
    shutil.rmtree(path, ignore_errors=True)
    perm = rng.permutation(rows).astype(np.int64)
    per = rows // 10

    def batches():
        for start in range(0, rows, 500_000):
            n = min(500_000, rows - start)
            ids = perm[start:start + n]
            cat = pa.array([f"cat_{v:02d}" for v in rng.integers(0, 100, n)])
            k = rng.integers(0, 4, n)
            offs = np.concatenate([[0], np.cumsum(k)]).astype(np.int32)
            labels = pa.array([f"t{v:03d}" for v in rng.integers(0, 200, int(offs[-1]))])
            tags = pa.ListArray.from_arrays(pa.array(offs), labels)
            w = rng.integers(0, len(vocab), (n, 3))
            text = pa.array([f"{vocab[a]} {vocab[b]} {vocab[c]}" for a, b, c in w])
            ts = (np.arange(start, start + n, dtype=np.int64) * 10 + rng.integers(0, 50, n)).astype(np.int64)
            yield pa.record_batch([pa.array(ids), cat, tags, text, pa.array(ts), pa.array(ids)],
                                  names=["id", "category", "tags", "text", "ts", "id2"])

    first = next(batches())
    reader = pa.RecordBatchReader.from_batches(first.schema, batches())
    lance.write_dataset(reader, path + "/ds", max_rows_per_file=per)
    open(path + "/done", "w").write("ok")
    return path, vocab


def index_bytes(ds_path, name):
    ds = lance.dataset(ds_path)
    total = 0
    for i in ds.list_indices():
        if i["name"] != name:
            continue
        for u in [i["uuid"]] if "uuid" in i else []:
            d = os.path.join(ds_path, "_indices", u)
            total += sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    return total


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    bins, prebuilt = file_read.release_binaries()
    exe = os.path.join(bins, "lancer")
    bench_exe = os.path.join(bins, "lancer-bench")
    base, vocab = make(a.rows)
    py_ds, lan_ds, inproc_ds = os.path.join(OUT, "py"), os.path.join(OUT, "lancer"), os.path.join(OUT, "lancer-inproc")
    for d in (py_ds, lan_ds, inproc_ds):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base + "/ds", d)
    os.sync()

    builds = []
    for col, kind in INDEXES:
        before = dir_bytes(os.path.join(py_ds, "_indices")) if os.path.exists(os.path.join(py_ds, "_indices")) else 0
        t = time.perf_counter()
        lance.dataset(py_ds).create_scalar_index(col, kind)
        py_t = time.perf_counter() - t
        py_b = dir_bytes(os.path.join(py_ds, "_indices")) - before
        before = dir_bytes(os.path.join(lan_ds, "_indices")) if os.path.exists(os.path.join(lan_ds, "_indices")) else 0
        lan_t, _, rss = run_cli(1, [exe, "index", "create", lan_ds, "--column", col, "--type", kind.lower()])
        lan_b = dir_bytes(os.path.join(lan_ds, "_indices")) - before
        out = subprocess.run([bench_exe, "scalar-build", inproc_ds, col, kind], check=True, capture_output=True, text=True).stdout
        inproc_t = json.loads(out)["seconds"]
        builds.append(dict(col=col, kind=kind, py=py_t, lan=lan_t, inproc=inproc_t, rss=rss, py_bytes=py_b, lan_bytes=lan_b))
        print(f"build {kind:12s} {col:9s} pylance {py_t:7.2f}s  lancer {lan_t:7.2f}s  ({py_t / lan_t:5.2f}x)  "
              f"in-process {inproc_t:7.2f}s ({py_t / inproc_t:5.2f}x)  "
              f"size {py_b / 1e6:7.1f} / {lan_b / 1e6:7.1f} MB  rss {rss / 2**20:6.0f} MiB", flush=True)

    rng = np.random.default_rng(9)
    probe_id = int(rng.integers(0, a.rows))
    word = vocab[1234]
    sub = word[1:5]
    t0 = (a.rows // 3) * 10
    filters = [
        ("BTREE point", f"id = {probe_id}"),
        ("BTREE range", f"id BETWEEN {probe_id} AND {probe_id + 99}"),
        ("BITMAP", "category = 'cat_42'"),
        ("LABEL_LIST", "array_has_any(tags, ['t007'])"),
        ("NGRAM", f"text LIKE '%{sub}%'"),
        ("ZONEMAP range", f"ts BETWEEN {t0} AND {t0 + 999}"),
        ("BLOOMFILTER point", f"id2 = {probe_id}"),
    ]
    ds = lance.dataset(py_ds)
    py = {}
    for label, f in filters:
        times = []
        n = 0
        for _ in range(a.iters):
            t = time.perf_counter()
            n = ds.to_table(columns=["id"], filter=f).num_rows
            times.append(time.perf_counter() - t)
        plan = ds.scanner(columns=["id"], filter=f).explain_plan(verbose=True)
        scan = []
        for _ in range(2):
            t = time.perf_counter()
            m = ds.to_table(columns=["id"], filter=f, use_scalar_index=False).num_rows
            scan.append(time.perf_counter() - t)
        counts = []
        for _ in range(a.iters):
            t = time.perf_counter()
            counted = ds.count_rows(filter=f)
            counts.append(time.perf_counter() - t)
        py[f] = dict(first=times[0], best=min(times), rows=n, scan=min(scan), scan_rows=m, used="ScalarIndexQuery" in plan,
                     count=min(counts), counted=counted)
    # For scale: the returned column read whole (a filter true on every row, timed
    # without an index). An answer of 1% of the rows touches every page of `id`.
    whole = "id >= 0"
    out = subprocess.run([bench_exe, "filter", lan_ds, str(a.iters), "2", *[f for _, f in filters], whole],
                         check=True, capture_output=True, text=True).stdout
    lan = {r["filter"]: r for r in map(json.loads, out.splitlines())}
    floor = lan[whole]["scan"]
    print(f"reading `id` whole (no index, `{whole}`): {floor * 1e3:.1f} ms", flush=True)
    rows = []
    for label, f in filters:
        p, l = py[f], lan[f]
        same = p["rows"] == l["rows"] == p["scan_rows"] == l["scan_rows"] == p["counted"] == l["counted"]
        rows.append((label, f, p, l, same))
        print(f"{label:18s} rows {l['rows']:7d}  pylance idx {p['best'] * 1e3:8.2f} ms (used {p['used']}) "
              f"scan {p['scan'] * 1e3:8.1f} ms | lancer idx {l['best'] * 1e3:8.2f} ms (first {l['first'] * 1e3:7.2f}) "
              f"scan {l['scan'] * 1e3:8.1f} ms | pylance/lancer {p['best'] / l['best']:6.1f}x  "
              f"lancer scan/idx {l['scan'] / l['best']:7.1f}x | count pylance {p['count'] * 1e3:.2f} ms "
              f"lancer {l['count_best'] * 1e3:.3f} ms, no index {l['count_scan'] * 1e3:.1f} ms "
              f"{'' if same else 'ROWS DIFFER'}", flush=True)

    if a.no_record:
        return
    host = os.uname().nodename
    lines = [f"\n## Scalar indexes — {datetime.date.today()} — {a.rows:,} rows — {host}, {os.cpu_count()} cores\n",
             "`bench/scalar.py`: pylance 14 in-process vs Lancer in-process (`lancer-bench filter`) on the same "
             "dataset; each engine builds its own indexes (Lancer in-process with `lancer-bench scalar-build`, "
             "and through the CLI, whole process)"
             + (f"; Lancer binaries from {bins}" if prebuilt else "") + ".\n",
             "| index | column | build pylance s | build Lancer in-process s | pylance / Lancer in-process | "
             "build Lancer CLI s | pylance / Lancer CLI | size pylance MB | size Lancer MB | Lancer CLI peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for b in builds:
        lines.append(f"| {b['kind']} | {b['col']} | {b['py']:.2f} | {b['inproc']:.2f} | {b['py'] / b['inproc']:.2f}x | "
                     f"{b['lan']:.2f} | {b['py'] / b['lan']:.2f}x | "
                     f"{b['py_bytes'] / 1e6:.1f} | {b['lan_bytes'] / 1e6:.1f} | {b['rss'] / 2**20:.0f} |")
    lines += ["", "| filter | rows | pylance with index ms | Lancer with index ms (first) | pylance / Lancer | "
              "pylance full scan ms | Lancer full scan ms | Lancer scan / Lancer index | pylance scan / Lancer index | same rows |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for label, f, p, l, same in rows:
        lines.append(f"| {label}: `{f}` | {l['rows']} | {p['best'] * 1e3:.2f} | {l['best'] * 1e3:.2f} ({l['first'] * 1e3:.1f}) | "
                     f"{p['best'] / l['best']:.1f}x | {p['scan'] * 1e3:.0f} | {l['scan'] * 1e3:.0f} | "
                     f"{l['scan'] / l['best']:.0f}x | {p['scan'] / l['best']:.0f}x | {'yes' if same else 'NO'} |")
    lines += ["", "Counting the rows a filter keeps (`count_rows(filter=...)`; Lancer answers exact indexes "
              "without reading data):", "",
              "| filter | rows | pylance count ms | Lancer count with index ms | pylance / Lancer | "
              "Lancer count without index ms | Lancer without / with index |", "|---|---|---|---|---|---|---|"]
    for label, f, p, l, same in rows:
        lines.append(f"| {label} | {l['counted']} | {p['count'] * 1e3:.2f} | {l['count_best'] * 1e3:.3f} | "
                     f"{p['count'] / l['count_best']:.1f}x | {l['count_scan'] * 1e3:.0f} | "
                     f"{l['count_scan'] / l['count_best']:.0f}x |")
    lines += ["", f"For scale: reading the returned column `id` whole without an index (`{whole}`, Lancer): "
              f"{floor * 1e3:.1f} ms; the answers of over 0.1% of the rows took "
              + ", ".join(f"{label} {l['best'] / floor:.2f}x" for label, f, p, l, same in rows
                          if l["rows"] * 1000 >= a.rows) + " of it."]
    with open(os.path.join(file_read.ROOT, "bench", "RESULTS.md"), "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
