#!/usr/bin/env python3
"""Checks that pylance uses the scalar indexes of a dataset (e.g. ones Lancer built) and
answers with them exactly as without them.

    .venv/pylance-14/bin/python scripts/check_scalar_index_use.py DATASET FILTERS.json

FILTERS.json: a JSON list of SQL filters. Prints one JSON object: pylance's version, the
indexes it lists (name, type), per filter whether its plan shows `ScalarIndexQuery`, and
every filter whose indexed answer differs from its plain (use_scalar_index=False) one.
Filters pylance refuses are counted, not compared.
"""
import json
import sys

import lance


def main(path, filters_file):
    with open(filters_file, encoding="utf-8") as f:
        filters = json.load(f)
    ds = lance.dataset(path)
    out = {"pylance": lance.__version__, "indices": [], "used": [], "differ": [], "refused": 0, "compared": 0}
    for i in ds.list_indices():
        out["indices"].append({"name": i["name"], "type": i["type"], "fields": i["fields"]})
    for flt in filters:
        try:
            plain = ds.to_table(columns=["id"], filter=flt, use_scalar_index=False)["id"].to_pylist()
            indexed = ds.to_table(columns=["id"], filter=flt)["id"].to_pylist()
            plan = ds.scanner(columns=["id"], filter=flt).explain_plan(verbose=True)
        except Exception:  # pylance refuses the filter either way
            out["refused"] += 1
            continue
        out["compared"] += 1
        if "ScalarIndexQuery" in plan:
            out["used"].append(flt)
        if sorted(plain) != sorted(indexed):
            out["differ"].append({"filter": flt, "plain": len(plain), "indexed": len(indexed)})
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
