#!/usr/bin/env python3
"""pylance's view of datasets Lancer evolved (crates/lancer/tests/evolve/).

    python check_evolution.py CASES.json WORKDIR

CASES.json: [{"path": DATASET, "versions": [{"version": N, "table": {"columns": [...],
"rows": [[...], ...]}, "rowids": [[id, _rowid], ...] or null}]}] — every version's expected
table, rows sorted by id (and, for datasets with stable row ids, each row's `_rowid`). Each
version is opened with this pylance and compared (column names, values, row ids). Then a copy of each
dataset under WORKDIR is changed by pylance — update of an int column, add_columns from
SQL, an append — and the result (as pylance reads it) is printed as JSON for Lancer to
compare: [{"path": COPY, "table": {...}}]. Mismatches go to stderr, exit status 1.
"""
import json
import math
import os
import shutil
import sys

import lance
import pyarrow as pa


def table_of(ds):
    t = ds.to_table()
    names = t.schema.names
    rows = [[r[n] for n in names] for r in t.to_pylist()]
    rows.sort(key=lambda r: r[0])
    return {"columns": names, "rows": rows}


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def main():
    cases = json.load(open(sys.argv[1]))
    work = sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    bad = 0
    out = []
    for case in cases:
        path = case["path"]
        for v in case["versions"]:
            ds = lance.dataset(path, version=v["version"])
            got = table_of(ds)
            want = v["table"]
            if v.get("rowids") is not None:
                t = ds.to_table(columns=["id"], with_row_id=True)
                ids = sorted(zip(t["id"].to_pylist(), t["_rowid"].to_pylist()))
                if [list(x) for x in ids] != v["rowids"]:
                    print(f"{path} v{v['version']}: row ids {ids[:5]} vs {v['rowids'][:5]}", file=sys.stderr)
                    bad += 1
            if got["columns"] != want["columns"]:
                print(f"{path} v{v['version']}: columns {got['columns']} != {want['columns']}", file=sys.stderr)
                bad += 1
                continue
            if len(got["rows"]) != len(want["rows"]) or not all(
                    all(same(x, y) for x, y in zip(g, w)) for g, w in zip(got["rows"], want["rows"])):
                print(f"{path} v{v['version']}: rows differ: {got['rows'][:3]} vs {want['rows'][:3]}",
                      file=sys.stderr)
                bad += 1
        # pylance goes on writing on a copy
        copy = os.path.join(work, os.path.basename(path))
        shutil.copytree(path, copy)
        ds = lance.dataset(copy)
        ints = [f.name for f in ds.schema if f.name != "id" and pa.types.is_int64(f.type)]
        if ints:
            ds.update({ints[0]: f"{ints[0]} + 100"}, where="id < 10")
        ds = lance.dataset(copy)
        ds.add_columns({"py_added": "id * 3"})
        ds = lance.dataset(copy)
        top = max((r[0] for r in table_of(ds)["rows"]), default=0) + 1
        arrays = []
        for f in ds.schema:
            if f.name in ("id", "py_added"):
                arrays.append(pa.array([top, top + 1], type=f.type))
            else:
                arrays.append(pa.nulls(2, type=f.type))
        lance.write_dataset(pa.Table.from_arrays(arrays, schema=ds.schema), copy, mode="append")
        out.append({"path": copy, "table": table_of(lance.dataset(copy))})
    print(json.dumps(out))
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
