#!/usr/bin/env python3
"""Compares full-text answers over a Lancer-built INVERTED index with pylance's own.

    .venv/pylance-14/bin/python scripts/check_fts_build.py [--on-lancer-only] SPEC.json...

SPEC.json: {"pylance_dir": A, "lancer_dir": B, "indexes": [{"column", "params"}],
"queries": [{"query": spec, "options": opts}]} — query specs and options as
scripts/gen_golden_fts.py records them. A and B hold the same data: this script drops
every index of A and builds pylance's INVERTED indexes there with the given
create_scalar_index params (one worker); B holds Lancer's. Prints, per query, what pylance
answers over A ("pylance") and over B ("on_lancer"): ids and _score, or the error;
plus list_indices() of B. With --on-lancer-only, A is left alone and only "on_lancer"
is answered. Prints a JSON list, one object per SPEC (one process for many specs, as
starting pylance costs ~1 s).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lance  # noqa: E402
from gen_golden_fts import build_query  # noqa: E402


def answer(ds, spec, opts):
    try:
        kw = dict(columns=["id", "_score"], full_text_query=build_query(spec))
        for k in ("limit", "filter", "prefilter", "fast_search"):
            if k in opts:
                kw[k] = opts[k]
        t = ds.to_table(**kw)
        return {"ids": t["id"].to_pylist(), "scores": t["_score"].to_pylist()}
    except BaseException as e:  # noqa: BLE001 - pyo3 panics are BaseException
        if isinstance(e, KeyboardInterrupt):
            raise
        return {"error": f"{type(e).__name__}: {str(e)[:300]}"}


def check(path, on_lancer_only):
    spec = json.load(open(path))
    a = None
    if not on_lancer_only:
        a = lance.dataset(spec["pylance_dir"])
        for name in sorted({i["name"] for i in a.list_indices()}):
            a.drop_index(name)
        a = lance.dataset(spec["pylance_dir"])
        for ix in spec["indexes"]:
            kw = dict(ix["params"])
            kw.setdefault("num_workers", 1)
            a.create_scalar_index(ix["column"], "INVERTED", **kw)
            a = lance.dataset(spec["pylance_dir"])
    b = lance.dataset(spec["lancer_dir"])
    out = {"lancer_indices": sorted({i["name"] for i in b.list_indices()}),
           "answers": []}
    for q in spec["queries"]:
        seen = {"on_lancer": answer(b, q["query"], q["options"])}
        if a is not None:
            seen["pylance"] = answer(a, q["query"], q["options"])
        out["answers"].append(seen)
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    only = "--on-lancer-only" in args
    print(json.dumps([check(p, only) for p in args if p != "--on-lancer-only"]))
