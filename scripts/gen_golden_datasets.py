#!/usr/bin/env python3
"""Writes the golden Lance datasets used by lancer-table's tests.

    .venv/pylance-14/bin/python scripts/gen_golden_datasets.py tests/data/datasets

For each case it builds a dataset through a sequence of operations with pylance and,
after every version, records what pylance reads at that version:
  <out>/pylance-<major>/<case>/                  the dataset
  <out>/pylance-<major>/<case>.expected/v<N>.arrow  pylance's to_table(version=N)
  <out>/pylance-<major>/<case>.expected/index.json  versions, row counts, tags
Data is deterministic; dataset files carry random ids, so re-running rewrites them.
"""
import json
import os
import shutil
import sys

import numpy as np
import pyarrow as pa
import lance


def table(start, n, seed):
    r = np.random.default_rng(seed)
    ids = np.arange(start, start + n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"row-{i}" for i in ids]),
        "score": pa.array(r.standard_normal(n)),
        "tags": pa.array([[f"t{j}" for j in range(i % 3)] for i in ids], pa.list_(pa.utf8())),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(n * 8).astype(np.float32)), 8),
    })


def kw(version):
    return {} if version is None else {"data_storage_version": version}


def history(path, storage, v2_paths=True, stable=False):
    """create, append, delete, append, tag, overwrite, delete many."""
    opts = dict(kw(storage), enable_v2_manifest_paths=v2_paths)
    if stable:
        opts["enable_stable_row_ids"] = True
    ds = lance.write_dataset(table(0, 1000, 1), path, max_rows_per_file=400, **opts)
    ds = lance.write_dataset(table(1000, 500, 2), path, mode="append")
    ds.delete("id % 7 = 0")
    ds = lance.write_dataset(table(1500, 300, 3), path, mode="append")
    ds = lance.dataset(path)
    ds.tags.create("before_overwrite", ds.version)
    ds = lance.write_dataset(table(5000, 700, 4), path, mode="overwrite", max_rows_per_file=300)
    ds = lance.dataset(path)
    ds.delete("id % 3 != 0")
    return lance.dataset(path)


def add_columns(path, storage):
    ds = lance.write_dataset(table(0, 600, 5), path, max_rows_per_file=250, **kw(storage))
    ds.add_columns({"double_id": "id * 2"})
    ds = lance.dataset(path)
    ds.delete("id < 10")
    return lance.dataset(path)


def list_repeat(path, storage):
    """list<utf8> of empty lists and one repeated value ([], ["x"], ["x", "x"] cycling)
    beside int64 / utf8 / float64: create, append, append with nulls in another column,
    delete. (2.2 writes such lists as constant pages.)"""
    cyc = [[], ["x"], ["x", "x"]]

    def t(start, n, nulls):
        return pa.table({
            "id": pa.array(np.arange(start, start + n), pa.int64()),
            "l": pa.array([cyc[i % 3] for i in range(n)], pa.list_(pa.utf8())),
            "s": pa.array([None if nulls and i % 4 == 0 else f"s{i % 5}" for i in range(n)]),
            "f": pa.array(np.arange(n, dtype=np.float64)),
            "e": pa.array([""] * n),
        })
    lance.write_dataset(t(0, 700, False), path, max_rows_per_file=300, **kw(storage))
    lance.write_dataset(t(700, 300, False), path, mode="append", **kw(storage))
    lance.write_dataset(t(1000, 300, True), path, mode="append", **kw(storage))
    lance.dataset(path).delete("id % 11 = 0")
    return lance.dataset(path)


def evolve(path, storage):
    """Fields without data files and the steps after them: add_columns of all-null
    columns (a schema only), drop_columns, alter_columns (rename; cast int32 -> int64),
    merge() of a new column, append, delete."""
    ds = lance.write_dataset(table(0, 600, 6), path, max_rows_per_file=250, **kw(storage))
    ds.add_columns(pa.schema([pa.field("n_i32", pa.int32()), pa.field("n_s", pa.utf8())]))
    ds = lance.dataset(path)
    lance.write_dataset(table(600, 100, 7).append_column("n_i32", pa.array(np.arange(100), pa.int32()))
                        .append_column("n_s", pa.array([f"n{i}" for i in range(100)])), path, mode="append")
    ds = lance.dataset(path)
    ds.drop_columns(["score"])
    ds = lance.dataset(path)
    ds.alter_columns({"path": "n_i32", "name": "n_i32b"})
    ds = lance.dataset(path)
    try:
        ds.alter_columns({"path": "n_i32b", "data_type": pa.int64()})
    except Exception as e:  # some versions refuse casts of some storage versions
        print("alter cast refused:", e, file=sys.stderr)
    ds = lance.dataset(path)
    ds.merge(pa.table({"id": pa.array(np.arange(700), pa.int64()),
                       "m": pa.array(np.arange(700) * 3, pa.int64())}), "id")
    ds = lance.dataset(path)
    ds.delete("id % 5 = 0")
    return lance.dataset(path)


def mixed_versions(path):
    """Data files of several versions in one dataset (created 2.0, appended as 2.1 and
    2.2; pylance 12+ keeps each and sets reader flag 256)."""
    lance.write_dataset(table(0, 300, 8), path, data_storage_version="2.0")
    lance.write_dataset(table(300, 300, 9), path, mode="append", data_storage_version="2.1")
    lance.write_dataset(table(600, 300, 10), path, mode="append", data_storage_version="2.2")
    lance.dataset(path).delete("id % 4 = 1")
    return lance.dataset(path)


def blob_values(start, n):
    """Payloads of every shape a blob column holds: null, empty, and lengths that fall
    under, between and over the small thresholds `blob_v2` sets (inline in the data
    file, packed into a shared sidecar, a dedicated sidecar each)."""
    out = []
    for i in range(start, start + n):
        m = i % 6
        if m == 0:
            out.append(None)
        elif m == 1:
            out.append(b"")
        elif m in (2, 3):
            out.append(bytes([i % 251]) * (i * 37 % 200 + 1))
        elif m == 4:
            out.append(bytes([i % 251]) * (300 + i * 11 % 600))
        else:
            out.append(bytes([i % 251]) * (1100 + i * 13 % 400))
    return out


def blob_v2(path):
    """A blob v2 column (file format 2.2): payloads inline, in a packed sidecar and in
    dedicated sidecars, nulls and empties, several fragments, deletions, an append."""
    from lance import blob_array, blob_field
    schema = pa.schema([pa.field("id", pa.int64()),
                        blob_field("b", inline_size_threshold=256, dedicated_size_threshold=1024)])

    def t(start, n):
        return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                         "b": blob_array(blob_values(start, n))}, schema=schema)
    lance.write_dataset(t(0, 60), path, data_storage_version="2.2", max_rows_per_file=25)
    lance.dataset(path).delete("id % 7 = 3")
    lance.write_dataset(t(60, 20), path, mode="append")
    return lance.dataset(path)


def blob_legacy(path, version="2.1"):
    """A legacy blob column (`lance-encoding:blob` on large_binary, file format 2.0 or
    2.1)."""
    field = pa.field("b", pa.large_binary(), True, {"lance-encoding:blob": "true"})
    schema = pa.schema([pa.field("id", pa.int64()), field])
    t = pa.table({"id": pa.array(range(40), pa.int64()), "b": pa.array(blob_values(0, 40), pa.large_binary())},
                 schema=schema)
    lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=15)
    lance.dataset(path).delete("id % 5 = 2")
    return lance.dataset(path)


# Cases whose blob columns pylance's default scan returns as descriptors: what they
# hold is compared as bytes (`blob_handling="all_binary"`, how Lancer's Dataset reads
# them), and the default scan's descriptions are kept beside (`v<N>.described.arrow`,
# what Lancer's `with_blob_descriptions` and Python's default scan return).
BLOB_CASES = {"blob_v2", "blob_legacy", "blob_legacy_2_0"}

CASES = {
    "history": lambda p: history(p, None),
    "history_v1_paths": lambda p: history(p, None, v2_paths=False),
    "history_2_0": lambda p: history(p, "2.0"),
    "history_2_1": lambda p: history(p, "2.1"),
    "stable_row_ids": lambda p: history(p, None, stable=True),
    "add_columns": lambda p: add_columns(p, None),
    "list_repeat_2_0": lambda p: list_repeat(p, "2.0"),
    "list_repeat_2_1": lambda p: list_repeat(p, "2.1"),
    "list_repeat_2_2": lambda p: list_repeat(p, "2.2"),
    "evolve_2_0": lambda p: evolve(p, "2.0"),
    "evolve_2_1": lambda p: evolve(p, "2.1"),
    "evolve_2_2": lambda p: evolve(p, "2.2"),
    "mixed_versions": mixed_versions,
    "blob_v2": blob_v2,
    "blob_legacy": blob_legacy,
    "blob_legacy_2_0": lambda p: blob_legacy(p, "2.0"),
}


def main(out_root, only=None):
    major = lance.__version__.split(".")[0]
    out = os.path.join(out_root, f"pylance-{major}")
    os.makedirs(out, exist_ok=True)
    for name, make in CASES.items():
        if only and name not in only:
            continue
        path = os.path.join(out, name)
        exp = os.path.join(out, name + ".expected")
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(exp, ignore_errors=True)
        os.makedirs(exp)
        ds = make(path)
        index = {"pylance": lance.__version__, "versions": [], "tags": {}}
        for v in ds.versions():
            n = v["version"]
            if name in BLOB_CASES:
                t = lance.dataset(path, version=n).scanner(blob_handling="all_binary").to_table()
            else:
                t = lance.dataset(path, version=n).to_table()
            with pa.OSFile(os.path.join(exp, f"v{n}.arrow"), "wb") as f:
                with pa.ipc.new_file(f, t.schema) as w:
                    w.write_table(t)
            if name in BLOB_CASES:
                d = lance.dataset(path, version=n).to_table()
                with pa.OSFile(os.path.join(exp, f"v{n}.described.arrow"), "wb") as f:
                    with pa.ipc.new_file(f, d.schema) as w:
                        w.write_table(d)
            entry = {"version": n, "rows": t.num_rows,
                     "count_rows": lance.dataset(path, version=n).count_rows()}
            if name == "stable_row_ids":
                rid = lance.dataset(path, version=n).to_table(columns=["id"], with_row_id=True)
                entry["row_ids"] = rid.column("_rowid").to_pylist()
            index["versions"].append(entry)
        for tag, info in ds.tags.list().items():
            index["tags"][tag] = info["version"]
        with open(os.path.join(exp, "index.json"), "w") as f:
            json.dump(index, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/datasets", sys.argv[2:] or None)
