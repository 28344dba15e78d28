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
# The same filters in DuckDB's JSON functions (the anchor: a table of `id` and the
# documents as JSON text in DuckDB's own storage); the rows are checked equal to pylance's.
DUCKDB = {
    "json_get_int(doc, 'id') > 990000": "CAST(json_extract(doc, '$.id') AS BIGINT) > 990000",
    "json_get_string(doc, 'name') = 'n123'": "json_extract_string(doc, '$.name') = 'n123'",
    "json_get_float(doc, 'score') < 0.001": "CAST(json_extract(doc, '$.score') AS DOUBLE) < 0.001",
    "json_extract(doc, '$.nested.k') = '7'": "json_extract(doc, '$.nested.k')::VARCHAR = '7'",
    "json_exists(doc, '$.nested.flag')": "json_exists(doc, '$.nested.flag')",
    "json_array_contains(doc, '$.tags', 't7')":
        "list_contains(json_extract_string(doc, '$.tags[*]'), 't7')",
    "json_array_length(doc, '$.tags') = 3": "json_array_length(doc, '$.tags') = 3",
    "json_extract(doc, '$.nested.flag') = 'true' AND id % 10 = 1":
        "json_extract(doc, '$.nested.flag')::VARCHAR = 'true' AND id % 10 = 1",
    "json_get_int(doc, 'id') = 123458": "CAST(json_extract(doc, '$.id') AS BIGINT) = 123458",
    "json_get_int(doc, 'id') BETWEEN 5000 AND 5100":
        "CAST(json_extract(doc, '$.id') AS BIGINT) BETWEEN 5000 AND 5100",
    "json_get_int(doc, 'k39') > 990": "CAST(json_extract(doc, '$.k39') AS BIGINT) > 990",
    "json_get_string(doc, 's10') = 'v5'": "json_extract_string(doc, '$.s10') = 'v5'",
    "json_extract(doc, '$.a.b.c.d.e') = '3'": "json_extract(doc, '$.a.b.c.d.e')::VARCHAR = '3'",
    "json_get_int(json_get(json_get(doc, 'a'), 'b'), 'n') = 17":
        "CAST(json_extract(doc, '$.a.b.n') AS BIGINT) = 17",
}
# A second shape: wide documents (40 keys: 20 integers, 20 strings) and deep ones (a key
# five objects down); the filters reach late keys and deep paths.
WIDE_SCANS = [
    "json_get_int(doc, 'k39') > 990",
    "json_get_string(doc, 's10') = 'v5'",
    "json_extract(doc, '$.a.b.c.d.e') = '3'",
    "json_get_int(json_get(json_get(doc, 'a'), 'b'), 'n') = 17",
]


def wide_docs(rows, seed=5):
    rng = np.random.default_rng(seed)
    ints = rng.integers(0, 1000, (rows, 20))
    strs = rng.integers(0, 50, (rows, 20))
    deep = rng.integers(0, 10, rows)
    out = []
    for i in range(rows):
        if i % 50 == 7:
            out.append(None)
            continue
        d = {f"k{20 + j}": int(ints[i, j]) for j in range(20)}
        d.update({f"s{j}": f"v{strs[i, j]}" for j in range(20)})
        d["a"] = {"b": {"c": {"d": {"e": int(deep[i])}}, "n": i % 100}}
        out.append(json.dumps(d))
    return out


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


def make(rows, shape):
    import lance
    path = os.path.join(OUT, f"{shape}_{rows}")
    if os.path.exists(os.path.join(path, "done")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    gen = docs if shape == "mixed" else wide_docs
    t = pa.table({"id": pa.array(np.arange(rows), pa.int64()),
                  "doc": pa.array(gen(rows), pa.json_(pa.utf8()))})
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


def duck_table(path):
    """A DuckDB connection holding the dataset's rows (`id`, `doc` as JSON text)."""
    import duckdb
    import lance
    t = lance.dataset(path).to_table()
    t = pa.table({"id": t["id"], "doc": t["doc"].cast(pa.utf8())})
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    con.register("src", t)
    con.execute("CREATE TABLE docs AS SELECT id, doc::JSON AS doc FROM src")
    con.unregister("src")
    return con


def duck_timed(con, sql, iters):
    times, ids = [], None
    for _ in range(iters):
        t0 = time.perf_counter()
        ids = con.sql(f"SELECT id FROM docs WHERE {sql}").to_arrow_table()
        times.append(time.perf_counter() - t0)
    return min(times), times[0], sorted(ids["id"].to_pylist())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--shapes", default="mixed,wide", help="mixed and / or wide documents")
    a = ap.parse_args()
    if not a.no_build:
        build()
    import lance
    import lancer
    os.makedirs(OUT, exist_ok=True)
    rows = []

    def measure(label, sqls, theirs, ours, duck):
        for sql in sqls:
            p_best, p_first, p_ids = timed(theirs, sql, a.iters)
            l_best, l_first, l_ids = timed(ours, sql, a.iters)
            d_best, d_first, d_ids = duck_timed(duck, DUCKDB[sql], a.iters)
            assert p_ids == l_ids, (sql, len(p_ids), len(l_ids))
            assert p_ids == d_ids, ("duckdb", sql, len(p_ids), len(d_ids))
            rows.append((label, sql, len(p_ids), p_best, p_first, l_best, l_first, d_best, d_first))
            print(f"{label:12} {sql:58} {len(p_ids):>8}  pylance {p_best * 1e3:9.2f} ms  "
                  f"duckdb {d_best * 1e3:9.2f} ms  lancer {l_best * 1e3:9.2f} ms  "
                  f"{p_best / l_best:6.2f}x / {d_best / l_best:6.2f}x", flush=True)

    for shape in a.shapes.split(","):
        base = make(a.rows, shape)
        path = os.path.join(OUT, "run")
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(base, path)
        duck = duck_table(path)
        scans = SCANS if shape == "mixed" else WIDE_SCANS
        measure(f"{shape} scan", scans, lance.dataset(path), lancer.dataset(path), duck)
        if shape == "mixed":
            from lance.indices import IndexConfig
            lance.dataset(path).create_scalar_index(
                "doc", IndexConfig(index_type="json", parameters={"path": "id", "target_index_type": "btree"}))
            measure("mixed index", INDEXED, lance.dataset(path), lancer.dataset(path), duck)
        duck.close()
    if a.no_record:
        return
    lines = [f"\n### JSON filters (bench/json_filters.py, {datetime.date.today()}, {file_read.machine()}, "
             f"pylance {lance.__version__})\n",
             f"{a.rows:,} rows per shape written by pylance 14 (8 fragments, 3% deleted), a `lance.json` "
             "column: `mixed` objects of several shapes (some keys missing, arrays, nested objects), "
             "`wide` objects of 40 keys and a key five objects deep; `to_table(columns=['id'], filter=...)` "
             "in-process, each engine on the same dataset, best of "
             f"{a.iters} (first run in brackets), rows checked equal across the three. `index`: a JSON path "
             "index (path `id`, BTREE target) pylance built, used by both Lance engines. DuckDB: the same "
             "rows in a DuckDB table (`doc` as its JSON type), the filter in its JSON functions, 2 threads.\n",
             "| filter | rows | pylance ms | DuckDB ms | Lancer ms | pylance / Lancer | DuckDB / Lancer |",
             "|---|---|---|---|---|---|---|"]
    for label, sql, n, pb, pf, lb, lf, db, df in rows:
        lines.append(f"| {label}: `{sql}` | {n:,} | {pb * 1e3:.2f} ({pf * 1e3:.2f}) | "
                     f"{db * 1e3:.2f} ({df * 1e3:.2f}) | "
                     f"{lb * 1e3:.2f} ({lf * 1e3:.2f}) | **{pb / lb:.2f}x** | **{db / lb:.2f}x** |")
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
