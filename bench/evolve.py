#!/usr/bin/env python3
"""Data evolution benchmark: merge_insert, update, add_columns and compaction — Lancer vs
pylance 14 on the same data in one run.

    .venv/bench/bin/python bench/evolve.py [--rows 10000000] [--iters 3] [--no-record]

Data (written by pylance 14, fragments of 1M rows): `id` int64 0..rows, `x` float64,
`category` (20 strings). Each operation runs on a fresh copy per engine (the copy is
made and synced outside the timed part): pylance in-process, Lancer through the CLI
(whole process, peak RSS):

- merge_insert of 100,000 rows, half matching (`id` of every 2·rows/100,000-th row) and
  half new, upsert (`when_matched_update_all().when_not_matched_insert_all()` /
  `lancer merge --on id`), source from a Parquet file; again with a BTREE on `id`
  (built by pylance: pylance then always locates the matched rows through it, Lancer
  when that reads less than an eighth of the index), and 1,000-row upserts — keys
  spread over the table, or the table's last 500 ids and 500 new ones — with and
  without the index;
- update of 1% of the rows (`x = x + 1 WHERE id % 100 = 7`);
- add_columns with a SQL expression (`y = x * 2`) over every row;
- compaction of 1,000 fragments of 1,000 rows (pylance `optimize.compact_files()` /
  `lancer compact`), a separate dataset.

Each time is the best of `--iters` runs. Results are checked equal (row counts and sums
of `x`) and appended to bench/RESULTS.md.
"""
import argparse
import datetime
import os
import shutil
import subprocess
import sys
import time

import lance
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402
from run import run_cli  # noqa: E402

OUT = os.path.join(file_read.ROOT, "bench", "out", "evolve")


def table(lo, hi, rng):
    n = hi - lo
    return pa.table({
        "id": pa.array(np.arange(lo, hi, dtype=np.int64)),
        "x": pa.array(rng.random(n)),
        "category": pa.array([f"c{i % 20}" for i in range(lo, hi)]),
    })


def make(rows):
    path = os.path.join(OUT, f"base_{rows}")
    if os.path.exists(os.path.join(path, "_versions")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    rng = np.random.default_rng(9)

    def batches():
        for lo in range(0, rows, 500_000):
            yield from table(lo, min(rows, lo + 500_000), rng).to_batches()
    schema = table(0, 1, rng).schema
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), path,
                        max_rows_per_file=1 << 20, data_storage_version="2.1")
    return path


def make_small(frags, per):
    path = os.path.join(OUT, f"small_{frags}x{per}")
    if os.path.exists(os.path.join(path, "_versions")):
        return path
    rng = np.random.default_rng(4)
    for f in range(frags):
        lance.write_dataset(table(f * per, (f + 1) * per, rng), path, mode="append" if f else "create",
                            data_storage_version="2.1")
    return path


def with_btree(base):
    # the same table with a BTREE on `id` built by pylance (merges then locate their
    # rows through it: pylance's indexed merge_insert, Lancer's too)
    path = base + "_btree"
    if os.path.exists(os.path.join(path, "_indices")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(base, path)
    lance.dataset(path).create_scalar_index("id", "BTREE")
    return path


def fresh(src, name):
    dst = os.path.join(OUT, name)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    os.sync()
    return dst


def check(path):
    t = lance.dataset(path).to_table(columns=["x"])
    return t.num_rows, round(float(pa.compute.sum(t["x"]).as_py() or 0), 3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--only", default="", help="run the operations whose name holds this text")
    a = ap.parse_args()
    exe = os.path.join(file_read.ROOT, "target", "release", "lancer")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "lancer-cli"], check=True, cwd=file_read.ROOT)
    os.makedirs(OUT, exist_ok=True)
    t = time.perf_counter()
    base = make(a.rows)
    small = make_small(1000, 1000)
    print(f"data: {a.rows:,} rows + 1,000 x 1,000 ({time.perf_counter() - t:.1f} s)", flush=True)
    # the merge source: 50k matching ids spread over the table, 50k new ones
    rng = np.random.default_rng(2)
    step = max(1, a.rows // 50_000)
    matched = np.arange(0, a.rows, step, dtype=np.int64)[:50_000]
    new = np.arange(a.rows, a.rows + 50_000, dtype=np.int64)
    ids = np.concatenate([matched, new])
    src = pa.table({"id": ids, "x": rng.random(len(ids)),
                    "category": pa.array([f"m{i % 7}" for i in range(len(ids))])})
    src_path = os.path.join(OUT, "merge_source.parquet")
    pq.write_table(src, src_path)
    # a small upsert: 500 matching ids, 500 new
    ids1k = np.concatenate([matched[::100][:500], new[:500]])
    src1k = pa.table({"id": ids1k, "x": rng.random(len(ids1k)),
                      "category": pa.array([f"s{i % 5}" for i in range(len(ids1k))])})
    src1k_path = os.path.join(OUT, "merge_source_1k.parquet")
    pq.write_table(src1k, src1k_path)
    indexed = with_btree(base)
    # recent keys: the last 500 ids of the table and 500 new ones (clustered keys)
    recent = np.concatenate([np.arange(a.rows - 500, a.rows, dtype=np.int64), new[:500]])
    src_recent = pa.table({"id": recent, "x": rng.random(len(recent)),
                           "category": pa.array([f"r{i % 5}" for i in range(len(recent))])})
    recent_path = os.path.join(OUT, "merge_source_recent.parquet")
    pq.write_table(src_recent, recent_path)
    res = []

    def op(name, py_fn, lan_args, source):
        if a.only not in name:
            return
        # best of --iters runs, each on a fresh copy (made and synced untimed)
        py, lan, rss = float("inf"), float("inf"), 0
        for _ in range(a.iters):
            py_ds = fresh(source, "py")
            t = time.perf_counter()
            py_fn(lance.dataset(py_ds))
            py = min(py, time.perf_counter() - t)
            lan_ds = fresh(source, "lancer")
            secs, _, r = run_cli(1, [exe, *[x.replace("{ds}", lan_ds) for x in lan_args]])
            lan, rss = min(lan, secs), max(rss, r)
        same = check(py_ds) == check(lan_ds)
        res.append((name, py, lan, rss, same, check(lan_ds)[0]))
        print(f"{name:<44} pylance {py:7.3f} s  lancer {lan:7.3f} s  {py / lan:5.2f}x  RSS {rss / 2**20:.0f} MiB"
              + ("" if same else "  RESULTS DIFFER"), flush=True)

    def upsert(name, table, path, dataset):
        # pylance's upsert and `lancer merge --on id` of the same Parquet source
        op(name, lambda d: d.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(table),
           ["merge", "{ds}", path, "--on", "id"], dataset)

    upsert("merge_insert 100k (50% match)", src, src_path, base)
    upsert("merge_insert 100k, BTREE on id", src, src_path, indexed)
    upsert("merge_insert 1k (50% match), BTREE on id", src1k, src1k_path, indexed)
    upsert("merge_insert 1k recent keys, BTREE on id", src_recent, recent_path, indexed)
    upsert("merge_insert 1k recent keys, no index", src_recent, recent_path, base)
    upsert("merge_insert 1k (50% match), no index", src1k, src1k_path, base)
    op("update 1% of rows", lambda d: d.update({"x": "x + 1"}, where="id % 100 = 7"),
       ["update", "{ds}", "--set", "x=x + 1", "--where", "id % 100 = 7"], base)
    op("add_columns y = x * 2", lambda d: d.add_columns({"y": "x * 2"}),
       ["add-column", "{ds}", "y=x * 2"], base)
    op("compact 1,000 x 1,000-row fragments", lambda d: d.optimize.compact_files(),
       ["compact", "{ds}"], small)
    for d in ("py", "lancer"):
        shutil.rmtree(os.path.join(OUT, d), ignore_errors=True)
    if a.no_record:
        return
    day = datetime.date.today().isoformat()
    lines = ["", f"## Data evolution — {day} — {a.rows:,} rows — {file_read.machine()}", "",
             f"`bench/evolve.py`: pylance 14 in-process, Lancer CLI (whole process); each on a fresh copy, best of {a.iters}.", "",
             "| operation | rows after | pylance s | Lancer s | pylance / Lancer | Lancer peak RSS MiB | same result |",
             "|---|---|---|---|---|---|---|"]
    for name, py, lan, rss, same, rows in res:
        lines.append(f"| {name} | {rows:,} | {py:.3f} | {lan:.3f} | {py / lan:.2f}x | {rss / 2**20:.0f} | "
                     f"{'yes' if same else 'NO'} |")
    with open(os.path.join(file_read.ROOT, "bench", "RESULTS.md"), "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
