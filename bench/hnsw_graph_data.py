#!/usr/bin/env python3
"""Vectors for `crates/lancer-index/examples/hnsw_recall.rs` (issue 42's graph-quality
harness): bench/index.py's clustered draws (the same seed and order) as raw float32 files,
and with ``--pylance`` pylance's own one-partition IVF_HNSW_FLAT index over them.

    python bench/hnsw_graph_data.py ROWS DIM OUT_DIR [--pylance]
    HNSW_DATA=OUT_DIR cargo run --release -p lancer-index --example hnsw_recall -- ROWS DIM
    HNSW_DATA=OUT_DIR HNSW_PYLANCE=OUT_DIR/ds/_indices/<uuid> ... (pylance's graph)
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from index import draw  # noqa: E402


def main():
    rows, dim, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.makedirs(out, exist_ok=True)
    vec, queries = draw(rows, dim, 200)
    vec.astype(np.float32).tofile(os.path.join(out, f"v{rows}_{dim}.f32"))
    queries.astype(np.float32).tofile(os.path.join(out, f"q{rows}_{dim}.f32"))
    if "--pylance" in sys.argv:
        import lance
        import pyarrow as pa

        t = pa.table({"id": pa.array(np.arange(rows)),
                      "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), dim)})
        ds = lance.write_dataset(t, os.path.join(out, "ds"), mode="overwrite")
        t0 = time.time()
        ds.create_index("vec", "IVF_HNSW_FLAT", num_partitions=1, m=20, ef_construction=150)
        print(f"pylance build {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
