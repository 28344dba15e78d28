#!/usr/bin/env python3
"""Opens datasets whose vector index Lancer built, with pylance, and prints what it sees.

    .venv/pylance-14/bin/python scripts/check_vector_shapes.py LIST.json

LIST.json: a list of {"dir", "metric", "queries", "k"}. Prints a JSON list, one entry
per dataset: the index names and types pylance lists, the rows it says are indexed and,
per query (or "stats_error": pylance 11 / 12 cannot describe an index of
no rows, even pylance 14's own), its fully probed and refined answer ("full": ids and _distance) and its
one-probe answer ("np1": ids) — or "error" with the first line of what pylance raised.
One process for many datasets (scripts/gen_vector_shapes.py made them).
"""
import json
import os
import sys

import numpy as np
import lance


def main(list_path):
    out = []
    for item in json.load(open(list_path)):
        r = {"dir": item["dir"]}
        try:
            ds = lance.dataset(item["dir"])
            idx = ds.list_indices()
            r["indices"] = [{"name": i["name"], "type": i.get("type")} for i in idx]
            try:
                stats = ds.stats.index_stats(idx[0]["name"])
                r["indexed_rows"] = stats.get("num_indexed_rows")
            except Exception as e:  # noqa: BLE001 - pylance 11/12 on an index of no rows
                r["stats_error"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
            r["answers"] = []
            for q in item["queries"]:
                base = {"column": "vec", "q": np.asarray(q, np.float32), "k": item["k"]}
                full = ds.to_table(columns=["id", "_distance"],
                                   nearest={**base, "nprobes": 1 << 16, "refine_factor": 1000})
                np1 = ds.to_table(columns=["id"], nearest={**base, "nprobes": 1})
                r["answers"].append({
                    "full": {"ids": full.column("id").to_pylist(),
                             "distances": [None if v != v else v
                                           for v in full.column("_distance").to_pylist()]},
                    "np1": np1.column("id").to_pylist()})
        except Exception as e:  # noqa: BLE001 - reported to the test
            r["error"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
        out.append(r)
    print(json.dumps(out))


if __name__ == "__main__":
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
    main(sys.argv[1])
