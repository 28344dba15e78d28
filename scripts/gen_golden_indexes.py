#!/usr/bin/env python3
"""Writes golden IVF vector-index datasets and pylance's query answers for them.

    .venv/pylance-14/bin/python scripts/gen_golden_indexes.py DIR [CASE ...]

writes into DIR/pylance-<major version>. Run it once per pylance venv (11, 12, 14;
scripts/test.sh does). For every case it builds a small dataset with one vector index
and records what pylance answers:

  <out>/<case>/          the dataset (2 indexed fragments with deletions made before
                         and after the index was built, plus one unindexed fragment
                         appended afterwards; some cases carry a delta index segment)
  <out>/<case>.json      the case description, the decoded manifest index entries,
                         a summary of the index files, the query vectors and, for
                         every query and search setting, pylance's ids / _rowid /
                         _distance
  <out>/index.json       pylance version, the list of cases, their status (ok /
                         failed with the error text) and the search settings used

Search settings (see SETTINGS): exact (use_index=False, flat scan of every live row),
indexed searches with fixed nprobes (minimum = maximum) with and without refine, an
indexed search with minimum_nprobes < maximum_nprobes, and `fast_search` variants
that skip the unindexed fragment (so `_distance` is the index's own estimate; in the
normal path the unindexed fragment forces a re-ranking with exact distances).

Vectors are deterministic; index training (k-means init, RabitQ rotation signs) is
random inside pylance, so file bytes, partitions and approximate answers change from
run to run. Each case is independent: a failure (e.g. an index kind a pylance version
does not support) is recorded in index.json and the run continues.
"""
import json
import os
import shutil
import struct
import sys
import traceback
import uuid as uuid_mod

import numpy as np
import pyarrow as pa
import lance
from lance.file import LanceFileReader

N_ROWS = 1300          # rows in the two indexed fragments (650 each)
N_APPEND = 110         # rows in the unindexed fragment appended after indexing
NUM_PARTITIONS = 8
K = 10
N_CLUSTERS = 8

# name, index_type, metric, dim, create_index kwargs, extra build steps
CASES = [
    ("ivf_flat_l2_d16", "IVF_FLAT", "l2", 16, {}, {}),
    ("ivf_flat_cosine_d16", "IVF_FLAT", "cosine", 16, {}, {}),
    ("ivf_flat_dot_d16", "IVF_FLAT", "dot", 16, {}, {}),
    ("ivf_pq8_l2_d16_file21", "IVF_PQ", "l2", 16, {"num_sub_vectors": 4, "num_bits": 8}, {"storage": "2.1"}),
    ("ivf_pq8_l2_d16", "IVF_PQ", "l2", 16, {"num_sub_vectors": 4, "num_bits": 8}, {}),
    ("ivf_pq8_cosine_d16", "IVF_PQ", "cosine", 16, {"num_sub_vectors": 8, "num_bits": 8}, {}),
    ("ivf_pq8_dot_d16", "IVF_PQ", "dot", 16, {"num_sub_vectors": 4, "num_bits": 8}, {}),
    ("ivf_pq4_l2_d32", "IVF_PQ", "l2", 32, {"num_sub_vectors": 8, "num_bits": 4}, {}),
    ("ivf_pq4_cosine_d16", "IVF_PQ", "cosine", 16, {"num_sub_vectors": 4, "num_bits": 4}, {}),
    ("ivf_pq4_dot_d16", "IVF_PQ", "dot", 16, {"num_sub_vectors": 4, "num_bits": 4}, {}),
    ("ivf_sq_l2_d16", "IVF_SQ", "l2", 16, {}, {}),
    ("ivf_sq_cosine_d16", "IVF_SQ", "cosine", 16, {}, {}),
    ("ivf_sq_dot_d16", "IVF_SQ", "dot", 16, {}, {}),
    ("ivf_rq1_l2_d16", "IVF_RQ", "l2", 16, {"num_bits": 1}, {}),
    ("ivf_rq1_dot_d16", "IVF_RQ", "dot", 16, {"num_bits": 1}, {}),
    ("ivf_rq3_cosine_d32", "IVF_RQ", "cosine", 32, {"num_bits": 3}, {}),
    ("ivf_rq5_l2_d32", "IVF_RQ", "l2", 32, {"num_bits": 5}, {}),
    ("ivf_rq5_dot_d16", "IVF_RQ", "dot", 16, {"num_bits": 5}, {}),
    ("ivf_rqdefault_l2_d16", "IVF_RQ", "l2", 16, {}, {}),
    # 24 is not a power of two: exercises the two-window fast rotation
    ("ivf_rq2_l2_d24", "IVF_RQ", "l2", 24, {"num_bits": 2}, {}),
    # delta segment: index, append, optimize_indices(num_indices_to_merge=0) -> two
    # segments with the same name; then the usual unindexed fragment is appended.
    ("ivf_pq8_l2_d16_delta", "IVF_PQ", "l2", 16, {"num_sub_vectors": 4, "num_bits": 8}, {"delta": True}),
    ("ivf_flat_cosine_d16_delta", "IVF_FLAT", "cosine", 16, {}, {"delta": True}),
    # stable row ids: the index holds row ids, not addresses; compaction after the
    # build moves every row to a new address (ids kept), so the two differ.
    ("ivf_pq8_l2_d16_stable", "IVF_PQ", "l2", 16, {"num_sub_vectors": 4, "num_bits": 8}, {"stable": True, "compact": True}),
    ("ivf_sq_cosine_d16_stable", "IVF_SQ", "cosine", 16, {}, {"stable": True, "compact": True}),
    # HNSW graphs per partition (issue 42): small m and ef_construction so the ~150-node
    # partitions make graphs with several levels and real walks.
    ("ivf_hnsw_sq_l2_d16", "IVF_HNSW_SQ", "l2", 16, {"m": 6, "ef_construction": 30}, {}),
    ("ivf_hnsw_sq_cosine_d16", "IVF_HNSW_SQ", "cosine", 16, {"m": 6, "ef_construction": 30}, {}),
    ("ivf_hnsw_sq_dot_d16", "IVF_HNSW_SQ", "dot", 16, {"m": 6, "ef_construction": 30}, {}),
    ("ivf_hnsw_flat_l2_d16", "IVF_HNSW_FLAT", "l2", 16, {"m": 6, "ef_construction": 30}, {}),
    ("ivf_hnsw_flat_cosine_d16", "IVF_HNSW_FLAT", "cosine", 16, {"m": 8}, {}),
    ("ivf_hnsw_flat_dot_d16", "IVF_HNSW_FLAT", "dot", 16, {"m": 6, "ef_construction": 30}, {}),
    ("ivf_hnsw_pq8_l2_d16", "IVF_HNSW_PQ", "l2", 16, {"num_sub_vectors": 4, "m": 6, "ef_construction": 30}, {}),
    ("ivf_hnsw_pq8_cosine_d16", "IVF_HNSW_PQ", "cosine", 16, {"num_sub_vectors": 8, "m": 6, "ef_construction": 30}, {}),
    ("ivf_hnsw_pq8_dot_d16", "IVF_HNSW_PQ", "dot", 16, {"num_sub_vectors": 4, "m": 6, "ef_construction": 30}, {}),
    ("ivf_hnsw_sq_l2_d16_delta", "IVF_HNSW_SQ", "l2", 16, {"m": 6, "ef_construction": 30}, {"delta": True}),
    ("ivf_hnsw_sq_l2_d16_stable", "IVF_HNSW_SQ", "l2", 16, {"m": 6, "ef_construction": 30}, {"stable": True, "compact": True}),
]

# (label, nearest-dict extras, scanner kwargs)
SETTINGS = [
    ("exact", {"use_index": False}, {}),
    ("np1", {"nprobes": 1}, {}),
    ("np3", {"nprobes": 3}, {}),
    ("np8", {"nprobes": 8}, {}),
    ("np1_rf2", {"nprobes": 1, "refine_factor": 2}, {}),
    ("np3_rf1", {"nprobes": 3, "refine_factor": 1}, {}),
    ("np8_rf3", {"nprobes": 8, "refine_factor": 3}, {}),
    ("min2_max5", {"minimum_nprobes": 2, "maximum_nprobes": 5}, {}),
    ("fast_np1", {"nprobes": 1}, {"fast_search": True}),
    ("fast_np3", {"nprobes": 3}, {"fast_search": True}),
    ("fast_np8", {"nprobes": 8}, {"fast_search": True}),
    ("fast_np8_rf2", {"nprobes": 8, "refine_factor": 2}, {"fast_search": True}),
    # HNSW beam widths (other kinds ignore ef); ef below k x refine_factor is an error
    ("np3_ef10", {"nprobes": 3, "ef": 10}, {}),
    ("fast_np8_ef40", {"nprobes": 8, "ef": 40}, {"fast_search": True}),
    ("np2_ef12_rf2", {"nprobes": 2, "ef": 12, "refine_factor": 2}, {}),
]


# ---------------------------------------------------------------- data

def vectors(dim, n, seed):
    """Clustered float32 vectors (deterministic). Cluster centres are shared for a
    given dim so appended rows and queries come from the same distribution."""
    centres = np.random.default_rng(1000 + dim).standard_normal((N_CLUSTERS, dim)).astype(np.float32) * 4
    r = np.random.default_rng(seed)
    lab = r.integers(0, N_CLUSTERS, n)
    return (centres[lab] + r.standard_normal((n, dim)).astype(np.float32)).astype(np.float32)


def table(start, x):
    n, dim = x.shape
    return pa.table({
        "id": pa.array(np.arange(start, start + n), pa.int64()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), dim),
    })


def queries(dim, base, appended):
    r = np.random.default_rng(77 + dim)
    qs = [
        base[5] + np.float32(0.05),                       # near an indexed row
        base[1234].copy(),                                # equal to an indexed row (id 1234)
        appended[7] + np.float32(0.02),                   # near an appended row
        base[13] + np.float32(0.05),                      # row 13 is deleted before indexing
        vectors(dim, 1, 4242)[0],                         # fresh point of the distribution
        r.standard_normal(dim).astype(np.float32) * 6,    # far from the clusters
    ]
    return [np.asarray(q, dtype=np.float32) for q in qs]


# ---------------------------------------------------------------- manifest decoding

# Protobuf wire decoding and the manifest's index section, shared with the other
# generators (this script's directory is on sys.path when it runs).
from pbraw import fields as _fields, varint as _varint  # noqa: E402,F401
from lance_manifest import manifest_indices as _manifest_indices, packed as _packed  # noqa: E402


METRICS = {0: "l2", 1: "cosine", 2: "dot", 3: "hamming"}


def _vector_details(b):
    """VectorIndexDetails; field numbers as observed in pylance output (see
    docs/vector-index-format.md)."""
    d = {}
    for num, wt, v in _fields(b):
        if num == 1:
            d["metric_type"] = METRICS.get(v, v)
        elif num == 2:
            d["target_partition_size"] = v
        elif num in (3, 4, 5, 6, 8) and wt == 2:
            name = {3: "hnsw", 4: "pq", 5: "sq", 6: "rq", 8: "flat"}[num]
            d[name] = {f"field_{n}": (x if w == 0 else x.hex()) for n, w, x in _fields(v)}
        elif num == 9:
            kv = {n: x.decode() for n, _, x in _fields(v)}
            d.setdefault("runtime_hints", {})[kv.get(1, "")] = kv.get(2, "")
        else:
            d[f"field_{num}"] = v if wt == 0 else v.hex()
    if "runtime_hints" in d:
        d["runtime_hints"] = dict(sorted(d["runtime_hints"].items()))
    return d


# ---------------------------------------------------------------- index files

def _ivf_message(b):
    d = {"offsets": [], "lengths": []}
    for num, wt, v in _fields(b):
        if num == 2:
            d["offsets"].extend(_packed(v) if wt == 2 else [v])
        elif num == 3:
            d["lengths"].extend(_packed(v) if wt == 2 else [v])
        elif num == 4:
            t = {n: x for n, _, x in _fields(v)}
            shape = []
            for n, w, x in _fields(v):
                if n == 2:
                    shape.extend(_packed(x) if w == 2 else [x])
            d["centroids_tensor"] = {"data_type": t.get(1, 0), "shape": shape, "data_bytes": len(t.get(3, b""))}
        elif num == 5:
            d["loss"] = struct.unpack("<d", v)[0]
    return d


def file_summary(path):
    r = LanceFileReader(path)
    md = r.metadata()
    s = {
        "file_version": f"{md.major_version}.{md.minor_version}",
        "num_rows": md.num_rows,
        "num_global_buffers": len(md.global_buffers),
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in md.schema],
        "schema_metadata": {k.decode(): v.decode() for k, v in sorted((md.schema.metadata or {}).items())},
    }
    if b"lance:ivf" in (md.schema.metadata or {}):
        s["ivf"] = _ivf_message(bytes(r.read_global_buffer(int(md.schema.metadata[b"lance:ivf"]))))
    return s


# ---------------------------------------------------------------- queries

def run_query(ds, q, metric, extra, scan_kw):
    nearest = {"column": "vec", "q": q, "k": K, "metric": metric}
    nearest.update(extra)
    t = ds.scanner(columns=["id"], nearest=nearest, with_row_id=True, **scan_kw).to_table()
    return {
        "ids": t["id"].to_pylist(),
        "rowids": t["_rowid"].to_pylist(),
        "distances": [float(x) for x in t["_distance"].to_numpy()],
    }


def build_case(out, name, kind, metric, dim, params, extra):
    path = os.path.join(out, name)
    shutil.rmtree(path, ignore_errors=True)
    base = vectors(dim, N_ROWS, 11)
    appended = vectors(dim, N_APPEND, 12)
    steps = []
    kw = {"max_rows_per_file": N_ROWS // 2}
    if extra.get("storage"):
        kw["data_storage_version"] = extra["storage"]
    if extra.get("stable"):
        kw["enable_stable_row_ids"] = True
    ds = lance.write_dataset(table(0, base), path, **kw)
    steps.append(f"write {N_ROWS} rows (ids 0..{N_ROWS - 1}) as 2 fragments" + (f", storage {extra['storage']}" if extra.get("storage") else "")
                 + (", stable row ids" if extra.get("stable") else ""))
    ds.delete("id % 10 = 3")
    steps.append("delete id % 10 = 3 (before indexing)")
    ds.create_index("vec", kind, metric=metric, num_partitions=NUM_PARTITIONS, **params)
    steps.append(f"create_index(vec, {kind}, metric={metric}, num_partitions={NUM_PARTITIONS}, {params})")
    ds = lance.dataset(path)
    ds.delete("id % 17 = 5")
    steps.append("delete id % 17 = 5 (after indexing; the index still holds these rows)")
    if extra.get("compact"):
        ds.optimize.compact_files(target_rows_per_fragment=N_ROWS)
        ds = lance.dataset(path)
        steps.append("compact_files: the two fragments rewritten as one (new addresses, same row ids)")
    start = N_ROWS
    if extra.get("delta"):
        more = vectors(dim, 120, 13)
        ds = lance.write_dataset(table(start, more), path, mode="append")
        ds.optimize.optimize_indices(num_indices_to_merge=0)
        steps.append(f"append 120 rows (ids {start}..{start + 119}); optimize_indices(num_indices_to_merge=0) -> delta segment")
        start += 120
        ds = lance.dataset(path)
    ds = lance.write_dataset(table(start, appended), path, mode="append")
    steps.append(f"append {N_APPEND} rows (ids {start}..{start + N_APPEND - 1}), left unindexed")
    ds = lance.dataset(path)

    version, indices = _manifest_indices(path, lambda url, b: _vector_details(b) if url.endswith("VectorIndexDetails") else None)
    files = {}
    for im in indices:
        d = os.path.join(path, "_indices", im["uuid"])
        for fn in sorted(os.listdir(d)):
            files[f"{im['uuid']}/{fn}"] = file_summary(os.path.join(d, fn)) if fn.endswith(".idx") else {"size": os.path.getsize(os.path.join(d, fn))}

    qs = queries(dim, base, appended)
    answers = []
    for qi, q in enumerate(qs):
        per = {}
        for label, nearest_extra, scan_kw in SETTINGS:
            try:
                per[label] = run_query(ds, q, metric, nearest_extra, scan_kw)
            except BaseException as e:  # noqa: BLE001 - pyo3 panics are BaseException
                if isinstance(e, KeyboardInterrupt):
                    raise
                per[label] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        answers.append({"query": [float(x) for x in q], "results": per})

    return {
        "name": name,
        "index_type": kind,
        "metric": metric,
        "dim": dim,
        "create_index_params": dict(params, num_partitions=NUM_PARTITIONS),
        "steps": steps,
        "dataset_version": version,
        "row_count": ds.count_rows(),
        "fragments": [{"id": f.fragment_id, "physical_rows": f.physical_rows, "rows": f.count_rows()} for f in ds.get_fragments()],
        "list_indices": [{k: (sorted(v) if k == "fragment_ids" else v) for k, v in ix.items() if k in ("name", "type", "uuid", "fields", "version", "fragment_ids")} for ix in ds.list_indices()],
        "manifest_indices": indices,
        "index_files": files,
        "k": K,
        "queries": answers,
    }


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    try:
        return sorted(int(x) for x in o)  # pyroaring / lance Bitmap
    except TypeError:
        return str(o)


def dir_size(p):
    return sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(p) for f in fs)


def main(out):
    os.makedirs(out, exist_ok=True)
    only = set(sys.argv[2:])
    summary = {
        "pylance_version": lance.__version__,
        "pyarrow_version": pa.__version__,
        "rows": N_ROWS, "appended_rows": N_APPEND, "num_partitions": NUM_PARTITIONS, "k": K,
        "settings": [{"label": label, "nearest": n, "scanner": s} for label, n, s in SETTINGS],
        "cases": [],
    }
    for name, kind, metric, dim, params, extra in CASES:
        if only and name not in only:
            continue
        entry = {"name": name, "index_type": kind, "metric": metric, "dim": dim, "params": params, "extra": extra}
        try:
            case = build_case(out, name, kind, metric, dim, params, extra)
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(case, f, separators=(",", ":"), default=_json_default)
            errors = sorted({label for a in case["queries"] for label, r in a["results"].items() if "error" in r})
            parts = sorted({f["ivf"]["centroids_tensor"]["shape"][0] for k, f in case["index_files"].items()
                            if k.endswith("index.idx") and "centroids_tensor" in f.get("ivf", {})})
            entry.update(status="ok", query_errors=errors, bytes=dir_size(os.path.join(out, name)),
                         index_segments=len(case["manifest_indices"]), num_partitions_built=parts)
            print(f"{name}: ok ({entry['bytes']} bytes){' query errors: ' + ','.join(errors) if errors else ''}")
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            shutil.rmtree(os.path.join(out, name), ignore_errors=True)
            entry.update(status="failed", error=f"{type(e).__name__}: {str(e)[:500]}",
                         traceback=traceback.format_exc(limit=3)[-1500:])
            print(f"{name}: FAILED {entry['error'][:200]}")
        summary["cases"].append(entry)
    index_path = os.path.join(out, "index.json")
    if only and os.path.exists(index_path):
        # partial run: keep the other cases' entries
        with open(index_path) as f:
            previous = json.load(f)
        done = {c["name"] for c in summary["cases"]}
        summary["cases"] = [c for c in previous.get("cases", []) if c["name"] not in done] + summary["cases"]
        order = [c[0] for c in CASES]
        summary["cases"].sort(key=lambda c: order.index(c["name"]) if c["name"] in order else len(order))
    with open(index_path, "w") as f:
        json.dump(summary, f, indent=1, default=_json_default)
    print(f"total {dir_size(out)} bytes in {out}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(os.path.join(sys.argv[1], "pylance-" + lance.__version__.split(".")[0]))
