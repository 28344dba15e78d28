#!/usr/bin/env python3
"""Writes vector datasets of awkward *shapes* and what pylance's vector indexes do on them.

    .venv/pylance-14/bin/python scripts/gen_vector_shapes.py DIR

writes into DIR/pylance-<major version>:

  <shape>/data/              the dataset without an index (Lancer builds its own on a copy)
  <shape>/<kind>_<metric>/   a copy with the index pylance built (when it could)
  shapes.json                per shape: storage version, element type, dimension, rows,
                             live rows, query vectors; per index kind and metric: pylance's
                             build status (ok / the error's first line), the number of rows
                             it indexed, and per query its exact answer (use_index=False)
                             and its fully probed, refined answer (ids and _distance)

The shapes are the ones an index builder gets wrong: a partly-null vector column, an
all-null one, an empty dataset, an all-deleted one, one vector repeated on every row,
zero vectors (cosine), float16 and float64 elements, and a 256-d column in ten
pages of one file (data storage 2.0 and 2.1; l2 only). Vectors are deterministic; pylance's index
training is random, so the indexed answers are compared with the exact ones, not bytes.
Runtime ~10 s (2 cores).
"""
import json
import os
import shutil
import sys

import numpy as np
import pyarrow as pa
import lance

KINDS = [
    ("IVF_FLAT", {}),
    ("IVF_PQ", {"num_sub_vectors": 4}),
    ("IVF_SQ", {}),
    ("IVF_RQ", {}),
    # HNSW graphs per partition (issue 42)
    ("IVF_HNSW_SQ", {"m": 8, "ef_construction": 40}),
]
METRICS = ["l2", "cosine"]
K = 10


def vec_array(x, typ, dim, nulls=None):
    """A FixedSizeList<typ, dim> array of the rows of `x`, `nulls` marking null rows."""
    flat = pa.array(np.asarray(x, dtype=typ.to_pandas_dtype()).reshape(-1), type=typ)
    mask = pa.array(nulls, pa.bool_()) if nulls is not None else None
    return pa.FixedSizeListArray.from_arrays(flat, dim, mask=mask)


def shapes():
    """(name, dim, element type, storage version, vectors, null mask, delete filter,
    rows per file)."""
    rng = np.random.default_rng(20261201)
    d = 16
    out = []
    out.append(("partly_null", d, pa.float32(), "2.1", rng.normal(size=(500, d)),
                [i % 5 == 0 for i in range(500)], "id % 7 = 3", 200))
    out.append(("all_null", d, pa.float32(), "2.0", np.zeros((300, d)), [True] * 300, None, 200))
    out.append(("empty", d, pa.float32(), "2.1", np.zeros((0, d)), None, None, 200))
    out.append(("all_deleted", d, pa.float32(), "2.2", rng.normal(size=(300, d)), None, "id >= 0", 200))
    out.append(("repeated", d, pa.float32(), "2.0", np.tile(rng.normal(size=(1, d)), (400, 1)), None, None, 200))
    zeros = np.concatenate([np.zeros((100, d)), rng.normal(size=(300, d))])
    out.append(("zeros", d, pa.float32(), "2.1", zeros, None, "id % 11 = 0", 200))
    out.append(("float16", d, pa.float16(), "2.2", rng.normal(size=(500, d)), None, "id % 9 = 1", 200))
    out.append(("float64", d, pa.float64(), "2.1", rng.normal(size=(500, d)), None, None, 200))
    # 10,000 x 256 float32 in one file, written in 1,000-row batches: pylance makes one
    # page per batch, so the vector column has ten pages
    big = rng.normal(size=(10000, 256)) + np.repeat(rng.normal(size=(8, 256)) * 3, 1250, axis=0)
    out.append(("multipage_v20", 256, pa.float32(), "2.0", big, None, "id % 13 = 0", 10000))
    out.append(("multipage_v21", 256, pa.float32(), "2.1", big, None, "id % 13 = 0", 10000))
    return out


def write(path, dim, typ, storage, x, nulls, delete, per_file):
    n = len(x)
    t = pa.table({"id": pa.array(np.arange(n), pa.int64()),
                  "vec": vec_array(x, typ, dim, nulls)})
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=1000))
    ds = lance.write_dataset(reader, path, data_storage_version=storage,
                             max_rows_per_file=per_file)
    if delete:
        ds.delete(delete)
    return lance.dataset(path)


def answer(ds, q, metric, **extra):
    t = ds.to_table(columns=["id", "_distance"],
                    nearest={"column": "vec", "q": np.asarray(q, np.float32), "k": K,
                             "metric": metric, **extra})
    return {"ids": t.column("id").to_pylist(),
            "distances": [None if v != v else v for v in t.column("_distance").to_pylist()]}


def main(root):
    out = os.path.join(root, f"pylance-{lance.__version__.split('.')[0]}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    rng = np.random.default_rng(7)
    summary = {"pylance": lance.__version__, "k": K, "shapes": []}
    for name, dim, typ, storage, x, nulls, delete, per_file in shapes():
        base = os.path.join(out, name)
        data = os.path.join(base, "data")
        ds = write(data, dim, typ, storage, x, nulls, delete, per_file)
        queries = [np.ones(dim).tolist(), rng.normal(size=dim).tolist()]
        if len(x):
            queries.append([float(v) for v in np.asarray(x[len(x) // 2], np.float32)])
        shape = {"name": name, "dim": dim, "type": str(typ), "storage": storage,
                 "rows": len(x), "live_rows": ds.count_rows(), "queries": queries,
                 "builds": []}
        for kind, kw in KINDS:
            # the large shapes: l2 only (each index is built on a copy of the data)
            for metric in METRICS if dim <= 16 else METRICS[:1]:
                b = {"kind": kind, "metric": metric}
                dst = os.path.join(base, f"{kind.lower()}_{metric}")
                shutil.copytree(data, dst)
                try:
                    ix = lance.dataset(dst)
                    ix.create_index("vec", kind, metric=metric, num_partitions=4, **kw)
                    ix = lance.dataset(dst)
                    stats = ix.stats.index_stats(ix.list_indices()[0]["name"])
                    b["status"] = "ok"
                    b["indexed_rows"] = stats.get("num_indexed_rows")
                    b["answers"] = [{"exact": answer(ix, q, metric, use_index=False),
                                     "full": answer(ix, q, metric, nprobes=4, refine_factor=1000)}
                                    for q in queries]
                except Exception as e:  # noqa: BLE001 - recorded: the shape's outcome
                    b["status"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
                    shutil.rmtree(dst, ignore_errors=True)
                shape["builds"].append(b)
        summary["shapes"].append(shape)
    with open(os.path.join(out, "shapes.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
    os.environ.setdefault("LANCE_LOG", "error")
    main(sys.argv[1])
