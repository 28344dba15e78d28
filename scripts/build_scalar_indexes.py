#!/usr/bin/env python3
"""Builds scalar indexes with pylance, for Lancer to read.

    .venv/pylance-14/bin/python scripts/build_scalar_indexes.py DATASET SPEC.json

SPEC.json: a JSON list of [column, kind, {parameters}] (kind: btree, bitmap, label_list,
zonemap, bloomfilter, ngram; parameters as pylance's IndexConfig takes them, e.g.
{"zone_size": 64}, {"rows_per_zone": 64}, {"number_of_items": 64}). Prints the indexes.
"""
import json
import sys

import lance
from lance.indices import IndexConfig


def main(path, spec_file):
    with open(spec_file, encoding="utf-8") as f:
        spec = json.load(f)
    ds = lance.dataset(path)
    for col, kind, params in spec:
        if params:
            ds.create_scalar_index(col, IndexConfig(index_type=kind, parameters=params))
        else:
            ds.create_scalar_index(col, kind.upper())
    ds = lance.dataset(path)
    print(json.dumps([{"name": i["name"], "type": i["type"]} for i in ds.list_indices()]))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
