#!/usr/bin/env python3
"""JSON columns: filters over a `lance.json` column, Lancer against pylance 14 on the
same dataset, in one run (issue 44: "JSON filters ≥ pylance's").

    .venv/py/bin/python bench/json_filters.py [--rows 1000000] [--iters 5] [--no-build] [--no-record]

Runs in the test venv (.venv/py: pylance 14) after `maturin develop --release` of the
`lancer` package (built here unless `--no-build`). The dataset is written once by
pylance 14 (8 fragments, 3% of rows deleted): `id` int64 and `doc`, Arrow's JSON type
holding objects of several shapes — `{"id", "name", "score", "tags": [..],
"nested": {"k", "flag"}}`, some without `nested` or `tags`, some with a key of their
own, one row in 50 null. Each filter (`to_table(columns=["id"],
filter=...)`) is timed in both engines on that dataset: scans of every JSON function
shape (typed getters, `json_extract` JSONPath, `json_exists`, `json_array_contains`,
`json_array_length`, nested `json_get`), then the typed accessors again with a JSON
path index (`index_type="json"`, BTREE target) pylance built, which both engines use.
Best of `--iters` (first run shown too); the rows are checked equal (sorted ids); the
table is appended to bench/RESULTS.md.
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import time

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import file_read  # noqa: E402
from blobs import build  # noqa: E402  (maturin develop --release of the package)

OUT = os.path.join(ROOT, "bench", "out", "json")

SCANS = [
    "json_get_int(doc, 'id') > 990000",
    "json_get_string(doc, 'name') = 'n123'",
    "json_get_float(doc, 'score') < 0.001",
    "json_extract(doc, '$.nested.k') = '7'",
    "json_exists(doc, '$.nested.flag')",
    "json_array_contains(doc, '$.tags', 't7')",
    "json_array_length(doc, '$.tags') = 3",
    "json_extract(doc, '$.nested.flag') = 'true' AND id % 10 = 1",
]
INDEXED = [
    "json_get_int(doc, 'id') = 123458",
    "json_get_int(doc, 'id') BETWEEN 5000 AND 5100",
]


def docs(rows, seed=3):
    rng = np.random.default_rng(seed)
    score = rng.random(rows)
    ntags = rng.integers(0, 5, rows)
    tag = rng.integers(0, 40, (rows, 4))
    k = rng.integers(0, 20, rows)
    out = []
    for i in range(rows):
        if i % 50 == 7:
            out.append(None)
            continue
        d = {"id": i, "name": f"n{i % 1000}", "score": float(score[i])}
        if i % 7:
            d["tags"] = [f"t{t}" for t in tag[i, :ntags[i]]]
        if i % 3:
            d["nested"] = {"k": int(k[i]), "flag": bool(i % 2)}
        if i % 97 == 5:
            d["note"] = "a string where other rows have none"
        out.append(json.dumps(d))
    return out


def make(rows):
    import lance
    path = os.path.join(OUT, f"base_{rows}")
    if os.path.exists(os.path.join(path, "done")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    t = pa.table({"id": pa.array(np.arange(rows), pa.int64()),
                  "doc": pa.array(docs(rows), pa.json_(pa.utf8()))})
    lance.write_dataset(t, path, max_rows_per_file=rows // 8 + 1)
    lance.dataset(path).delete("id % 33 = 4")
    open(os.path.join(path, "done"), "w").close()
    return path


def timed(ds, sql, iters):
    times, ids = [], None
    for _ in range(iters):
        t0 = time.perf_counter()
        t = ds.to_table(columns=["id"], filter=sql)
        times.append(time.perf_counter() - t0)
        ids = t
    return min(times), times[0], sorted(ids["id"].to_pylist())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    if not a.no_build:
        build()
    import lance
    import lancer
    os.makedirs(OUT, exist_ok=True)
    base = make(a.rows)
    path = os.path.join(OUT, "run")
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(base, path)
    rows = []

    def measure(label, sqls, theirs, ours):
        for sql in sqls:
            p_best, p_first, p_ids = timed(theirs, sql, a.iters)
            l_best, l_first, l_ids = timed(ours, sql, a.iters)
            assert p_ids == l_ids, (sql, len(p_ids), len(l_ids))
            rows.append((label, sql, len(p_ids), p_best, p_first, l_best, l_first))
            print(f"{label:8} {sql:58} {len(p_ids):>8}  pylance {p_best * 1e3:9.2f} ms  "
                  f"lancer {l_best * 1e3:9.2f} ms  {p_best / l_best:6.2f}x", flush=True)

    measure("scan", SCANS, lance.dataset(path), lancer.dataset(path))
    from lance.indices import IndexConfig
    lance.dataset(path).create_scalar_index(
        "doc", IndexConfig(index_type="json", parameters={"path": "id", "target_index_type": "btree"}))
    measure("index", INDEXED, lance.dataset(path), lancer.dataset(path))
    if a.no_record:
        return
    lines = [f"\n### JSON filters (bench/json_filters.py, {datetime.date.today()}, {file_read.machine()}, "
             f"pylance {lance.__version__})\n",
             f"{a.rows:,} rows written by pylance 14 (8 fragments, 3% deleted), a `lance.json` column of "
             "objects of several shapes; `to_table(columns=['id'], filter=...)` in-process, each engine "
             f"on the same dataset, best of {a.iters} (first run in brackets), rows checked equal. "
             "`index`: a JSON path index (path `id`, BTREE target) pylance built, used by both.\n",
             "| filter | rows | pylance ms | Lancer ms | pylance / Lancer |",
             "|---|---|---|---|---|"]
    for label, sql, n, pb, pf, lb, lf in rows:
        lines.append(f"| {label}: `{sql}` | {n:,} | {pb * 1e3:.2f} ({pf * 1e3:.2f}) | "
                     f"{lb * 1e3:.2f} ({lf * 1e3:.2f}) | **{pb / lb:.2f}x** |")
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
