#!/usr/bin/env python3
"""Writes text datasets of awkward *shapes* and what pylance's full-text indexes answer
on them.

    .venv/pylance-14/bin/python scripts/gen_fts_shapes.py DIR
    .venv/pylance-14/bin/python scripts/gen_fts_shapes.py --answer DATASET...   (a JSON list:
        per dataset, the answers of the queries below on its index, for Lancer-built
        indexes; one process for many datasets, as starting pylance costs ~1 s)

writes into DIR/pylance-<major version>:

  <shape>/data/     the dataset without an index (Lancer builds its own on a copy)
  <shape>/index/    a copy with the INVERTED index (positions) pylance built, if it could
  shapes.json       per shape: storage version, rows, live rows; pylance's build status
                    (ok / the error's first line) and, per query, its answer (ids and
                    _score, or the error)

The shapes are the ones a text indexer gets wrong: a partly-null column with deletions,
an all-null one, an empty dataset, all-empty strings, documents of stop words only (no
tokens), one document repeated on every row, long documents over several pages,
`large_string`, accents / CJK / emoji / digits, and an all-deleted dataset. Runtime ~10 s.
"""
import json
import os
import shutil
import sys

import lance
import numpy as np
import pyarrow as pa

try:
    from lance.query import MatchQuery, PhraseQuery
except ImportError:  # pragma: no cover - every pinned pylance has them
    MatchQuery = PhraseQuery = None

WORDS = ("quick brown fox jumps over the lazy dog runs running runner river apple "
         "connection search engine index query database lance format vector text").split()


def docs(rng, n, lo, hi):
    return [" ".join(rng.choice(WORDS, int(rng.integers(lo, hi)))) for _ in range(n)]


def shapes():
    """(name, storage, texts, text type, delete filter, rows per file)."""
    rng = np.random.default_rng(20261201)
    out = []
    partly = docs(rng, 500, 3, 20)
    out.append(("partly_null", "2.1", [None if i % 5 == 0 else t for i, t in enumerate(partly)],
                pa.string(), "id % 7 = 3", 200))
    out.append(("all_null", "2.0", [None] * 300, pa.string(), None, 200))
    out.append(("empty", "2.1", [], pa.string(), None, 200))
    out.append(("all_empty_strings", "2.1", [""] * 200, pa.string(), None, 200))
    out.append(("stop_words_only", "2.2", ["the a of and" if i % 2 else "to be or not" for i in range(200)],
                pa.string(), None, 200))
    out.append(("repeated", "2.2", ["the quick brown fox jumps over the lazy dog"] * 400, pa.string(),
                None, 200))
    out.append(("long_docs", "2.1", docs(rng, 30, 4000, 6000), pa.string(), None, 10))
    out.append(("large_string", "2.1", docs(rng, 300, 1, 12), pa.large_string(), "id < 20", 100))
    uni = ["Café déjà vu", "naïve résumé", "東京 タワー", "🦊 fox 🐶 dog", "12345 67.89", "ÅNGSTRÖM über",
           "Ελληνικά λέξεις", "русский текст", "", "fox-dog_river"]
    out.append(("unicode", "2.1", [uni[i % len(uni)] for i in range(300)], pa.string(), None, 200))
    out.append(("all_deleted", "2.1", docs(rng, 200, 2, 8), pa.string(), "id >= 0", 200))
    return out


QUERIES = [
    ({"type": "string", "query": "fox"}, {"limit": 10}),
    ({"type": "string", "query": "fox"}, {}),
    ({"type": "string", "query": "quick brown"}, {"limit": 10}),
    ({"type": "string", "query": "the"}, {"limit": 10}),
    ({"type": "string", "query": "café"}, {"limit": 10}),
    ({"type": "string", "query": "🦊"}, {"limit": 10}),
    ({"type": "match", "query": "fox dog", "operator": "AND"}, {"limit": 10}),
    ({"type": "match", "query": "foz", "fuzziness": 1}, {"limit": 10}),
    ({"type": "phrase", "query": "quick brown"}, {"limit": 10}),
    ({"type": "phrase", "query": "brown fox", "slop": 1}, {}),
    ({"type": "string", "query": "river"}, {"limit": 5, "filter": "id < 250", "prefilter": True}),
]


def build_query(spec):
    if spec["type"] == "string":
        return spec["query"]
    if spec["type"] == "match":
        kw = {k: spec[k] for k in ("fuzziness",) if k in spec}
        if "operator" in spec:
            from lance.query import FullTextOperator
            kw["operator"] = FullTextOperator[spec["operator"]]
        return MatchQuery(spec["query"], "text", **kw)
    return PhraseQuery(spec["query"], "text", slop=spec.get("slop", 0))


def answer(ds, spec, opts):
    try:
        kw = dict(columns=["id", "_score"], full_text_query=build_query(spec))
        kw.update(opts)
        t = ds.to_table(**kw)
        return {"ids": t["id"].to_pylist(), "scores": t["_score"].to_pylist()}
    except BaseException as e:  # noqa: BLE001 - recorded: the shape's outcome
        if isinstance(e, KeyboardInterrupt):
            raise
        return {"error": (str(e).splitlines() or [type(e).__name__])[0][:300]}


def write(path, storage, texts, typ, delete, per_file):
    t = pa.table({"id": pa.array(range(len(texts)), pa.int64()), "text": pa.array(texts, typ)})
    lance.write_dataset(t, path, data_storage_version=storage, max_rows_per_file=per_file)
    ds = lance.dataset(path)
    if delete:
        ds.delete(delete)
    return lance.dataset(path)


def main(root):
    out = os.path.join(root, f"pylance-{lance.__version__.split('.')[0]}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    summary = {"pylance": lance.__version__, "queries": [{"query": q, "options": o} for q, o in QUERIES],
               "shapes": []}
    for name, storage, texts, typ, delete, per_file in shapes():
        base = os.path.join(out, name)
        data = os.path.join(base, "data")
        ds = write(data, storage, texts, typ, delete, per_file)
        shape = {"name": name, "storage": storage, "rows": len(texts), "live_rows": ds.count_rows()}
        dst = os.path.join(base, "index")
        shutil.copytree(data, dst)
        try:
            ix = lance.dataset(dst)
            ix.create_scalar_index("text", "INVERTED", with_position=True)
            ix = lance.dataset(dst)
            shape["status"] = "ok"
            shape["answers"] = [answer(ix, q, o) for q, o in QUERIES]
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            shape["status"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
            shutil.rmtree(dst, ignore_errors=True)
        summary["shapes"].append(shape)
    with open(os.path.join(out, "shapes.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--answer":
        seen = []
        for path in sys.argv[2:]:
            ds = lance.dataset(path)
            seen.append({"indices": len(ds.list_indices()),
                         "answers": [answer(ds, q, o) for q, o in QUERIES]})
        print(json.dumps(seen))
    else:
        main(sys.argv[1])
