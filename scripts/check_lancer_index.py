#!/usr/bin/env python3
"""Reads an index Lancer built, with pylance, and prints what pylance sees as JSON.

    .venv/pylance-14/bin/python scripts/check_lancer_index.py DATASET QUERIES.json K NPROBES [FILTER]
    .venv/pylance-14/bin/python scripts/check_lancer_index.py --many LIST.json

QUERIES.json is a list of query vectors. Prints {"indices": list_indices(),
"plan": the query plan of an indexed search, "results": [...]} where each result has
pylance's ids for the indexed search with every partition probed and a refine factor
large enough to re-rank every candidate ("full"), the index alone with one probe
("np1"), and the exact answer ("exact", use_index=False, the index's metric); with FILTER also the one-probe
search with that SQL prefilter ("pre_np1").

With --many, LIST.json is a list of {"dir", "queries" (a path), "k", "nprobes",
"filter"} and the output a JSON list, one object per entry: one process for many
datasets, as starting pylance costs ~1 s.
"""
import json
import sys

import numpy as np
import lance


def sees(path, queries_path, k, nprobes, flt=None):
    ds = lance.dataset(path)
    idx = ds.list_indices()
    metric = None
    try:
        stats = ds.stats.index_stats(idx[0]["name"])
        metric = stats.get("indices", [{}])[0].get("metric_type") or stats.get("metric_type")
    except Exception as e:  # noqa: BLE001
        stats = {"error": str(e)}
    def plain(v):
        if isinstance(v, (str, int, float, bool, type(None), list, dict)):
            return v
        try:
            return sorted(int(x) for x in v)
        except TypeError:
            return str(v)

    out = {"indices": [{k2: plain(v) for k2, v in i.items() if k2 != "uuid"} for i in idx],
           "metric": metric, "results": [],
           "unindexed_rows": stats.get("num_unindexed_rows") if isinstance(stats, dict) else None,
           "segments": stats.get("num_segments", stats.get("num_indices")) if isinstance(stats, dict) else None}
    queries = json.load(open(queries_path))
    col = ds.schema.field(idx[0]["fields"][0]).name if isinstance(idx[0]["fields"][0], int) else idx[0]["fields"][0]
    for q in queries:
        q = np.array(q, dtype=np.float32)
        r = {}
        base = {"column": col, "q": q, "k": k}
        full = ds.to_table(columns=["id", "_distance"], nearest={**base, "nprobes": nprobes, "refine_factor": 1000})
        r["full"] = full.column("id").to_pylist()
        r["full_distances"] = full.column("_distance").to_pylist()
        np1 = ds.to_table(columns=["id", "_distance"], nearest={**base, "nprobes": 1})
        r["np1"] = np1.column("id").to_pylist()
        if flt:
            pre = ds.to_table(columns=["id", "_distance"], nearest={**base, "nprobes": 1}, filter=flt, prefilter=True)
            r["pre_np1"] = pre.column("id").to_pylist()
        if metric:
            ex = ds.to_table(columns=["id", "_distance"], nearest={**base, "use_index": False, "metric": metric})
            r["exact"] = ex.column("id").to_pylist()
        out["results"].append(r)
    out["plan"] = ds.scanner(columns=["id"], nearest={"column": col, "q": np.array(queries[0], dtype=np.float32), "k": k}).explain_plan()
    return out


if __name__ == "__main__":
    if sys.argv[1] == "--many":
        items = json.load(open(sys.argv[2]))
        print(json.dumps([sees(i["dir"], i["queries"], int(i["k"]), int(i["nprobes"]), i.get("filter"))
                          for i in items], default=str))
    else:
        print(json.dumps(sees(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                              sys.argv[5] if len(sys.argv) > 5 else None), default=str))
