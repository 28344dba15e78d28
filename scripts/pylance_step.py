#!/usr/bin/env python3
"""One pylance step of the mixed-writer test.

    <venv>/bin/python scripts/pylance_step.py DATASET append START N
    <venv>/bin/python scripts/pylance_step.py DATASET delete ID
    <venv>/bin/python scripts/pylance_step.py DATASET verify

append: appends rows with ids START..START+N; delete: deletes the row with that id;
branch NAME START N: creates a branch and appends to it; index: creates a BTREE index on id; check-index ID: prints the index names and the
rows matching id = ID (through the index); verify: prints {"<version>": [count_rows, sum of ids], ...} for every version, read
with to_table() (so every version is fully decoded by pylance).
"""
import json
import sys

import pyarrow as pa
import lance


def main(path, op, *args):
    if op == "append":
        start, n = int(args[0]), int(args[1])
        ds = lance.dataset(path)
        schema = ds.schema
        t = pa.table({"id": pa.array(range(start, start + n), pa.int64())}, schema=schema)
        lance.write_dataset(t, path, mode="append")
    elif op == "delete":
        lance.dataset(path).delete(f"id = {int(args[0])}")
    elif op == "branch":
        # Create branch NAME from the latest version and append rows START..START+N to it;
        # prints the branch's ids as pylance reads them.
        name, start, n = args[0], int(args[1]), int(args[2])
        b = lance.dataset(path).create_branch(name)
        t = pa.table({"id": pa.array(range(start, start + n), pa.int64())}, schema=b.schema)
        lance.write_dataset(t, b.uri, mode="append")
        ids = lance.dataset(b.uri).to_table().column("id").to_pylist()
        print(json.dumps({"uri": b.uri, "ids": ids}))
    elif op == "index":
        lance.dataset(path).create_scalar_index("id", "BTREE")
    elif op == "check-index":
        ds = lance.dataset(path)
        names = [i["name"] for i in ds.list_indices()]
        n = ds.to_table(filter=f"id = {int(args[0])}").num_rows
        print(json.dumps({"indices": names, "hits": n, "rows": ds.count_rows()}))
    elif op == "verify":
        out = {}
        for v in lance.dataset(path).versions():
            t = lance.dataset(path, version=v["version"]).to_table()
            out[str(v["version"])] = [t.num_rows, int(pa.compute.sum(t.column("id")).as_py() or 0)]
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
