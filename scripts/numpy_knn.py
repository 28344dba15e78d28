#!/usr/bin/env python3
"""Independent exact k-NN with NumPy (the oracle for Lancer's search tests).

    <venv>/bin/python scripts/numpy_knn.py DATA.arrow COLUMN QUERY.json K METRIC [FILTER_MOD]

DATA.arrow holds the rows (with an `id` column); QUERY.json a list of floats. With
FILTER_MOD m only rows whose id % m == 0 are candidates. Prints {"ids": [...],
"distances": [...]}, nearest first (ties broken by row position), Lance's distances:
l2 = squared Euclidean, cosine = 1 - cos, dot = 1 - a.b, hamming = differing bits.
"""
import json
import sys

import numpy as np
import pyarrow as pa


def main(data, column, query, k, metric, mod=None):
    t = pa.ipc.open_file(data).read_all()
    col = t.column(column).combine_chunks()
    dim = col.type.list_size
    raw = col.flatten().to_numpy(zero_copy_only=False)
    ids = t.column("id").to_numpy()
    q = np.array(json.load(open(query)), dtype=np.float64)
    keep = np.ones(len(ids), dtype=bool)
    if mod:
        keep &= ids % int(mod) == 0
    if metric == "hamming":
        v = raw.astype(np.uint8).reshape(-1, dim)
        qb = q.astype(np.uint8)
        d = np.unpackbits(np.bitwise_xor(v, qb), axis=1).sum(axis=1).astype(np.float64)
    else:
        v = raw.astype(np.float64).reshape(-1, dim)
        if metric == "l2":
            d = ((v - q) ** 2).sum(axis=1)
        elif metric == "dot":
            d = 1.0 - v @ q
        elif metric == "cosine":
            d = 1.0 - (v @ q) / (np.linalg.norm(v, axis=1) * np.linalg.norm(q))
        else:
            raise SystemExit(f"unknown metric {metric}")
    pos = np.nonzero(keep)[0]
    order = pos[np.lexsort((pos, d[pos]))][: int(k)]
    print(json.dumps({"ids": ids[order].tolist(), "distances": d[order].tolist()}))


if __name__ == "__main__":
    main(*sys.argv[1:])
