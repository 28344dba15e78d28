#!/usr/bin/env python3
"""Writes the filter suite's dataset and pylance's answers for every filter.

    .venv/pylance-14/bin/python scripts/gen_filter_suite.py tests/data/filter-suite

Reads the filters from tests/data/filters.sql (one per line, '#' comments) and writes
  <out>/pylance-<major>/filters/            the dataset (4 fragments, deleted rows)
  <out>/pylance-<major>/expected.json       per filter: the ids pylance returns, in
                                            order, or the error it raises
  <out>/pylance-<major>/full/<k>.arrow      all columns for the FULL filters, plus
                                            the same with limit/offset, with _rowid,
                                            and with computed columns
Lancer's crates/lancer/tests/filters.rs runs the same filters and compares.
"""
import datetime
import json
import os
import shutil
import sys

import numpy as np
import pyarrow as pa
import lance

HERE = os.path.dirname(os.path.abspath(__file__))
WORDS = ["apple", "kiwi", "banana", "ünïcödé", "", " padded ", "Apple", "grape7", "mango", "日本語"]
COLORS = ["red", "blue", "green"]
N = 2000


def table():
    r = np.random.default_rng(42)
    ids = np.arange(N)
    i32 = [None if i % 9 == 0 else int(v) for i, v in zip(ids, r.integers(-500, 500, N))]
    f32 = r.standard_normal(N).astype(np.float32)
    f32_list = [None if i % 13 == 0 else (float("nan") if i % 17 == 0 else float(v)) for i, v in zip(ids, f32)]
    f64 = r.standard_normal(N)
    f64_list = []
    for i, v in zip(ids, f64):
        if i % 101 == 0:
            f64_list.append(float("nan"))
        elif i % 211 == 0:
            f64_list.append(float("inf") if i % 2 else float("-inf"))
        else:
            f64_list.append(float(v))
    s = [None if i % 11 == 0 else WORDS[int(v)] for i, v in zip(ids, r.integers(0, len(WORDS), N))]
    ls = [WORDS[(i * 7) % len(WORDS)] for i in ids]
    b = [None if i % 5 == 0 else bool(v) for i, v in zip(ids, r.integers(0, 2, N))]
    base = datetime.date(2020, 1, 1)
    d = [None if i % 23 == 0 else base + datetime.timedelta(days=int(v)) for i, v in zip(ids, r.integers(0, 730, N))]
    t0 = datetime.datetime(2020, 1, 1)
    ts = [t0 + datetime.timedelta(seconds=int(v)) for v in r.integers(0, 730 * 86400, N)]
    tags = []
    for i in ids:
        if i % 19 == 0:
            tags.append(None)
        else:
            k = int(r.integers(0, 4))
            tags.append([COLORS[int(j)] for j in r.choice(3, size=k, replace=False)] if k <= 3 else [])
    nums = [None if i % 29 == 0 else [int(x) for x in r.integers(0, 10, int(r.integers(0, 5)))] for i in ids]
    langs = ["en", "fr", "de", None]
    meta = []
    for i in ids:
        if i % 31 == 0:
            meta.append(None)
        else:
            meta.append({"lang": langs[int(r.integers(0, 4))], "score": float(r.random())})
    vec = pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(N * 4).astype(np.float32)), 4)
    bins = [bytes([i % 4]) * (i % 3) for i in ids]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "i32": pa.array(i32, pa.int32()),
        "u8": pa.array((ids * 37) % 256, pa.uint8()),
        "f32": pa.array(f32_list, pa.float32()),
        "f64": pa.array(f64_list, pa.float64()),
        "s": pa.array(s, pa.utf8()),
        "ls": pa.array(ls, pa.large_utf8()),
        "b": pa.array(b, pa.bool_()),
        "d": pa.array(d, pa.date32()),
        "ts": pa.array(ts, pa.timestamp("us")),
        "tags": pa.array(tags, pa.list_(pa.utf8())),
        "nums": pa.array(nums, pa.list_(pa.int64())),
        "meta": pa.array(meta, pa.struct([("lang", pa.utf8()), ("score", pa.float64())])),
        "vec": vec,
        "bin": pa.array(bins, pa.binary()),
        "odd name": pa.array((ids * 13) % 2000, pa.int32()),
    })


# Filters whose full rows (every column) are compared, each also with limit/offset and
# with _rowid plus a nested projection.
FULL = [
    "id < 10",
    "s LIKE 'app%'",
    "i32 IS NULL",
    "meta.lang = 'en' AND id < 600",
    "array_has_any(tags, ['red']) AND id > 1400",
    "d > date '2021-10-01'",
    "f32 > 1.5",
    "b IS NOT TRUE AND id % 4 = 0",
]


# Computed columns (pylance's columns={name: expression}), compared on the FULL filters.
PROJECT = [["id", "id"], ["id2", "id * 2"], ["up", "upper(s)"], ["lang", "meta.lang"], ["half", "f64 / 2"], ["n", "array_length(tags)"]]


def filters():
    with open(os.path.join(HERE, "..", "tests", "data", "filters.sql"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    return [tuple(p.strip() for p in line.split("  ## ")) if "  ## " in line else (line, None) for line in lines]


def main(out):
    major = lance.__version__.split(".")[0]
    root = os.path.join(out, f"pylance-{major}")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "full"))
    path = os.path.join(root, "filters")
    lance.write_dataset(table(), path, max_rows_per_file=600)
    ds = lance.dataset(path)
    ds.delete("id % 10 = 3")
    ds.delete("id >= 1500 AND id < 1650")
    ds = lance.dataset(path)
    results = []
    for f, same_as in filters():
        try:
            ids = ds.to_table(columns=["id"], filter=f)["id"].to_pylist()
            if same_as == "REFUSE":  # Lancer refuses on purpose
                results.append({"filter": f, "error": "refused by Lancer on purpose", "pylance_rows": len(ids)})
            else:
                results.append({"filter": f, "ids": ids})
        except Exception as e:  # pylance refuses the filter
            error = str(e).splitlines()[0][:300]
            if same_as is None:
                results.append({"filter": f, "error": error})
            else:  # an extension: expect the equivalent filter's rows
                ids = ds.to_table(columns=["id"], filter=same_as)["id"].to_pylist()
                results.append({"filter": f, "ids": ids, "same_as": same_as, "pylance_error": error})
    full = []
    for k, f in enumerate(FULL):
        cases = [("", {}), ("-page", {"limit": 7, "offset": 3}), ("-ids", {"with_row_id": True, "columns": ["s", "meta.lang", "vec"]}),
                 ("-expr", {"columns": dict(PROJECT)})]
        for suffix, extra in cases:
            try:
                t = ds.to_table(filter=f, **extra)
            except Exception:
                continue
            name = f"{k}{suffix}"
            with pa.ipc.new_file(os.path.join(root, "full", f"{name}.arrow"), t.schema) as w:
                w.write_table(t)
            if suffix == "-expr":  # name/expression pairs, in order
                extra = {"project": PROJECT}
            full.append({"filter": f, "name": name, **{k2: v for k2, v in extra.items()}})
    with open(os.path.join(root, "expected.json"), "w", encoding="utf-8") as f:
        head = {"pylance": lance.__version__, "rows": ds.count_rows(), "full": full}
        body = ",\n".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in results)
        f.write(json.dumps(head, ensure_ascii=False)[:-1] + ',\n"filters": [\n' + body + "\n]}\n")
    errors = sum(1 for r in results if "error" in r)
    print(f"pylance {lance.__version__}: {len(results)} filters, {errors} refused")


if __name__ == "__main__":
    main(sys.argv[1])
