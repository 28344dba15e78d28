#!/usr/bin/env python3
"""The Python calls added in sessions 24-26, pylance 14 against `import lancer`, in one run.

    bench/python --calls [--rows N] [--iters N] [--no-record]

On a generated dataset (N rows, default 1,000,000: id, a 1,000-value int with 10% nulls,
a float, a 16-character string; 8 fragments, 5% deleted), each engine in a process of
its own: `to_table(order_by=[int, id])` whole and with `limit=100` (top-k), with a filter
and a projection; `update({float: float + 1}, where=...)` of 1% of the rows,
`merge_insert("id")` of 10,000 rows (half new), `add_columns({x: id * 2})` and
`optimize.compact_files()`; (sessions 25-26) `describe_indices()` and
`index_statistics()` of a BTREE pylance built, `stats.dataset_stats()` / `data_stats()`,
`versions()`, `maybe_sample` of 10,000 rows, a data file read whole and 1,000 rows taken
through `lance.file.LanceFileReader`; `update_config`, `delete` of 2%, `add_columns`
with a function over batches, `merge` of a 10,000-row column on `id`,
`optimize.optimize_indices()` after an append — the writes on fresh copies of the
dataset, timed alone.
Prints the best of `--iters` rounds and the ratios pylance / lancer, checks the answers
agree (sort keys in order; row counts and statistics), and appends the table to
bench/RESULTS.md.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute in the calls


def make(path, rows):
    import lance

    rng = np.random.default_rng(3)
    cat = rng.integers(0, 1000, rows)
    t = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "cat": pa.array(np.where(rng.random(rows) < 0.1, None, cat).tolist(), pa.int64()),
        "f": pa.array(rng.standard_normal(rows)),
        "s": pa.array([f"s{v:015d}" for v in rng.integers(0, 10**9, rows)]),
    })
    ds = lance.write_dataset(t, path, max_rows_per_file=rows // 8 + 1)
    ds.delete("id % 20 = 7")
    ds.create_scalar_index("cat", "BTREE", name="cat_idx")


def calls(lib):
    from lance.dataset import ColumnOrdering as PO

    order = [lib.ColumnOrdering("cat", True, False), "id"] if lib.__name__ == "lancer" else [PO("cat"), "id"]
    down = [lib.ColumnOrdering("f", False, True)] if lib.__name__ == "lancer" else [PO("f", False, True)]
    src_ids = np.arange(0, 20000, 2, dtype=np.int64)
    reads = [
        ("order_by [cat, id]", lambda d: d.to_table(order_by=order)),
        ("order_by [cat, id] limit 100", lambda d: d.to_table(order_by=order, limit=100)),
        ("order_by f desc, filter, 2 columns, limit 1000",
         lambda d: d.to_table(order_by=down, filter="cat < 100", columns=["id", "f"], limit=1000)),
    ]
    writes = [
        ("update 1% of rows", lambda d: d.update({"f": "f + 1"}, where="id % 100 = 1")),
        ("merge_insert 10,000 rows", lambda d: d.merge_insert("id").when_matched_update_all()
            .when_not_matched_insert_all().execute(pa.table({
                "id": pa.array(src_ids + np.where(np.arange(len(src_ids)) % 2 == 0, 0, 10**9)),
                "cat": pa.array(np.zeros(len(src_ids), dtype=np.int64)),
                "f": pa.array(np.ones(len(src_ids))),
                "s": pa.array(["m"] * len(src_ids))}))),
        ("add_columns id * 2", lambda d: d.add_columns({"x": "id * 2"})),
        ("compact_files", lambda d: d.optimize.compact_files()),
        ("update_config", lambda d: d.update_config({"owner": "bench"})),
        ("delete 2% of rows", lambda d: d.delete("id % 50 = 3")),
        ("add_columns(function over batches)", lambda d: d.add_columns(
            lambda b: pa.RecordBatch.from_arrays([pa.compute.multiply(b["f"], 2.0)], ["g"]),
            read_columns=["f"])),
        ("merge 10,000-row column on id", lambda d: d.merge(pa.table({
            "id": pa.array(src_ids), "extra": pa.array(np.ones(len(src_ids)))}), "id")),
        ("optimize_indices after an append", lambda d: (
            d.insert(pa.table({"id": pa.array(np.arange(10**9, 10**9 + 1000, dtype=np.int64)),
                               "cat": pa.array(np.ones(1000, dtype=np.int64)),
                               "f": pa.array(np.ones(1000)), "s": pa.array(["n"] * 1000)})),
            d.optimize.optimize_indices())[1]),
    ]
    if lib.__name__ == "lancer":
        file_ops, sampler = lib.file, lib.sampler
    else:
        import lance.file as file_ops
        import lance.sampler as sampler
    reads += [
        ("describe_indices()", lambda d: [(i.name, i.num_rows_indexed) for i in d.describe_indices()]),
        ("index_statistics(cat_idx)", lambda d: d.index_statistics("cat_idx")["num_indexed_rows"]),
        ("stats.dataset_stats()", lambda d: d.stats.dataset_stats()),
        ("stats.data_stats()", lambda d: [f.bytes_on_disk for f in d.stats.data_stats().fields]),
        ("versions()", lambda d: [v["version"] for v in d.versions()]),
        ("maybe_sample 10,000 rows", lambda d: sum(b.num_rows for b in
                                                   sampler.maybe_sample(d, 10000, ["id", "f"]))),
        ("file: read one data file whole", lambda d: file_ops.LanceFileReader(
            data_file(d)).read_all().to_table().num_rows),
        ("file: take 1,000 rows of a data file", lambda d: file_take(file_ops.LanceFileReader(data_file(d)))),
    ]
    return reads, writes


def file_take(reader):
    """1,000 rows spread over the file."""
    n = reader.metadata().num_rows if hasattr(reader, "metadata") else reader.num_rows()
    return reader.take_rows(list(range(0, n, max(1, n // 1000)))[:1000]).to_table().num_rows


def data_file(d):
    """The first fragment's data file (a path)."""
    f = d.get_fragments()[0].data_files()[0]
    return os.path.join(d.uri, "data", f.path)


def child(engine, path, iters, out):
    import lance
    import lancer

    lib = lancer if engine == "lancer" else lance
    reads, writes = calls(lib)
    times, answers = {}, {}
    ds = lib.dataset(path)
    for label, f in reads:
        best = None
        for _ in range(iters):
            t0 = time.perf_counter()
            r = f(ds)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        times[label] = best
        if isinstance(r, pa.Table):
            keys = [c for c in ("cat", "f") if c in r.column_names]
            answers[label] = {"rows": r.num_rows, "keys": [r[k].to_pylist() for k in keys]}
        elif label.startswith("maybe_sample"):
            answers[label] = {"rows": r}
        else:
            answers[label] = {"value": r}
    for label, f in writes:
        best = None
        for _ in range(iters):
            copy = os.path.join(out, "copy")
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(path, copy)
            d = lib.dataset(copy)
            t0 = time.perf_counter()
            r = f(d)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
            answers[label] = {"rows": lib.dataset(copy).count_rows(),
                              "stats": r if isinstance(r, dict) and "owner" not in r else None,
                              "columns": lib.dataset(copy).schema.names}
        times[label] = best
    json.dump({"times": times, "answers": answers}, open(os.path.join(out, "result.json"), "w"))


def fmt(seconds):
    """A call's time, readable at any scale."""
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--child")
    ap.add_argument("--path")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.path, a.iters, a.out)
        return
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", f"calls2-{a.rows}")
    path = os.path.join(root, "ds")
    if not os.path.exists(path):
        os.makedirs(root, exist_ok=True)
        make(path, a.rows)
    res = {}
    for engine in ("pylance", "lancer"):
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--child", engine, "--path", path,
                            "--iters", str(a.iters), "--out", out], check=True)
            res[engine] = json.load(open(os.path.join(out, "result.json")))
    lines = ["", f"### Python calls of sessions 24-26 ({datetime.date.today()}, {a.rows:,} rows, 8 fragments, "
             f"5% deleted; best of {a.iters}; bench/python --calls)", "",
             "| call | pylance | lancer | pylance / lancer | same answer |", "|---|---|---|---|---|"]
    for label in res["pylance"]["times"]:
        tp, tl = res["pylance"]["times"][label], res["lancer"]["times"][label]
        same = res["pylance"]["answers"][label] == res["lancer"]["answers"][label]
        if not same and "order_by" in label:
            # the sort keys must agree; which tied row comes first may not
            same = res["pylance"]["answers"][label]["keys"] == res["lancer"]["answers"][label]["keys"]
        print(f"{label:48s} pylance {fmt(tp):>10s}  lancer {fmt(tl):>10s}  {tp / tl:6.2f}x  "
              f"{'same' if same else 'DIFFERENT'}")
        lines.append(f"| {label} | {fmt(tp)} | {fmt(tl)} | {tp / tl:.2f}x | {'yes' if same else 'NO'} |")
    if not a.no_record:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md"), "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
