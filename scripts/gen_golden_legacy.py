#!/usr/bin/env python3
"""Writes golden LEGACY (data_storage_version="legacy", file format 0.1/0.2) Lance
datasets with pylance, and what pylance reads back from them.

    .venv/pylance-14/bin/python scripts/gen_golden_legacy.py tests/data/legacy

Layout, per pylance major version:
  <out>/pylance-<major>/<case>/                       the dataset (pylance wrote it)
  <out>/pylance-<major>/<case>.expected/v<N>.arrow     pylance's to_table(version=N)
  <out>/pylance-<major>/<case>.expected/files/<f>.arrow  what pylance reads of data
                                                      file <f> (its fragment at the
                                                      first version, no deletions)
  <out>/pylance-<major>/<case>.expected/index.json    versions, counts, file map
  <out>/pylance-<major>/refused.json                  types pylance's legacy writer
                                                      or reader refuses
Legacy files keep no null bitmaps: pylance reads nulls of fixed-width columns back as
the bytes stored (zeros), null lists and structs as empty / all-children, and empty
strings of nullable string columns as null. The .arrow files record exactly that.
Data is deterministic (fixed seeds); file names are random, so re-running rewrites them.
"""
import datetime
import decimal
import json
import os
import shutil
import sys

import numpy as np
import pyarrow as pa
import lance

ROWS_PER_GROUP = 32
MAJOR = int(lance.__version__.split(".")[0])
FILTER = "id % 3 = 0 AND id > 4"  # several batches (pages) per file


def nulls(r, n, p=0.15):
    return r.random(n) < p


def masked(values, mask):
    return [None if m else v for v, m in zip(values, mask)]


def types_table(start, n, seed):
    r = np.random.default_rng(seed)
    ids = np.arange(start, start + n)
    cols = {"id": pa.array(ids, pa.int64())}
    for name, t, lo, hi in [
        ("i8", pa.int8(), -128, 128), ("i16", pa.int16(), -3000, 3000),
        ("i32", pa.int32(), -10**9, 10**9), ("i64", pa.int64(), -10**15, 10**15),
        ("u8", pa.uint8(), 0, 256), ("u16", pa.uint16(), 0, 65536),
        ("u32", pa.uint32(), 0, 2**32), ("u64", pa.uint64(), 0, 2**63),
    ]:
        v = [int(x) for x in r.integers(lo, hi, n, dtype=np.int64 if hi < 2**63 else np.uint64)]
        cols[name] = pa.array(masked(v, nulls(r, n)), t)
    f = r.standard_normal(n)
    f[::37] = np.nan
    cols["f16"] = pa.array(masked(list(f.astype(np.float16)), nulls(r, n)), pa.float16())
    cols["f32"] = pa.array(masked(list(f.astype(np.float32)), nulls(r, n)), pa.float32())
    cols["f64"] = pa.array(masked(list(f), nulls(r, n)), pa.float64())
    cols["flag"] = pa.array(masked([bool(x) for x in r.integers(0, 2, n)], nulls(r, n)), pa.bool_())
    words = ["", "a", "lance", "héllo wörld", "日本語", "x" * 40]
    s = [words[i % len(words)] + (str(i) if i % 5 else "") for i in ids]
    cols["s"] = pa.array(masked(s, nulls(r, n)), pa.utf8())
    cols["s_notnull"] = pa.array([words[i % len(words)] for i in ids], pa.utf8())
    cols["ls"] = pa.array(masked(s, nulls(r, n)), pa.large_utf8())
    if MAJOR >= 14:
        # pylance 11 and 12 lose the dictionary of a dictionary column written beside a
        # string_view column ("v1 dictionary field ... is missing dictionary metadata").
        cols["sv"] = pa.array(masked(s, nulls(r, n)), pa.string_view())
    b = [bytes(r.integers(0, 256, i % 9, dtype=np.uint8)) for i in ids]
    cols["bin"] = pa.array(masked(b, nulls(r, n)), pa.binary())
    cols["lbin"] = pa.array(masked(b, nulls(r, n)), pa.large_binary())
    cols["fsb"] = pa.array(masked([bytes(r.integers(0, 256, 4, dtype=np.uint8)) for _ in ids], nulls(r, n)), pa.binary(4))
    days = [int(x) for x in r.integers(-20000, 30000, n)]
    cols["d32"] = pa.array(masked(days, nulls(r, n)), pa.date32())
    cols["d64"] = pa.array(masked([d * 86400000 for d in days], nulls(r, n)), pa.date64())
    cols["t32s"] = pa.array(masked([int(x) for x in r.integers(0, 86400, n)], nulls(r, n)), pa.time32("s"))
    cols["t32ms"] = pa.array(masked([int(x) for x in r.integers(0, 86400000, n)], nulls(r, n)), pa.time32("ms"))
    cols["t64us"] = pa.array(masked([int(x) for x in r.integers(0, 86400 * 10**6, n)], nulls(r, n)), pa.time64("us"))
    cols["t64ns"] = pa.array(masked([int(x) for x in r.integers(0, 86400 * 10**9, n)], nulls(r, n)), pa.time64("ns"))
    ts = [int(x) for x in r.integers(-10**9, 2 * 10**9, n)]
    cols["ts_s"] = pa.array(masked(ts, nulls(r, n)), pa.timestamp("s"))
    cols["ts_ms_ny"] = pa.array(masked([t * 1000 for t in ts], nulls(r, n)), pa.timestamp("ms", tz="America/New_York"))
    cols["ts_us_utc"] = pa.array(masked([t * 10**6 for t in ts], nulls(r, n)), pa.timestamp("us", tz="UTC"))
    cols["ts_ns"] = pa.array(masked([t * 10**9 for t in ts], nulls(r, n)), pa.timestamp("ns"))
    for u in ["s", "ms", "us", "ns"]:
        cols[f"dur_{u}"] = pa.array(masked([int(x) for x in r.integers(-10**6, 10**6, n)], nulls(r, n)), pa.duration(u))
    cols["dec"] = pa.array(masked([decimal.Decimal(int(x)).scaleb(-4) for x in r.integers(-10**12, 10**12, n)], nulls(r, n)), pa.decimal128(20, 4))
    cols["dec256"] = pa.array(masked([decimal.Decimal(int(x)).scaleb(-2) for x in r.integers(-10**12, 10**12, n)], nulls(r, n)), pa.decimal256(40, 2))
    # An empty dictionary value reads back as null, and then no append matches the
    # dictionary any more (pylance compares the loaded dictionary): only in one_row.
    cats = ["red", "green", "blue", "" if seed == 3 else "cyan", "violet"]
    keys = [int(x) for x in r.integers(0, len(cats), n)]
    cols["dict"] = pa.DictionaryArray.from_arrays(pa.array(masked(keys, nulls(r, n)), pa.int32()), pa.array(cats))
    cols["dict8"] = pa.DictionaryArray.from_arrays(pa.array(keys, pa.int8()), pa.array(cats, pa.large_utf8()))
    cols["dict_int"] = pa.DictionaryArray.from_arrays(pa.array(keys, pa.uint16()), pa.array([10, 20, 30, -5, 7], pa.int64()))
    lists = [[int(x) for x in r.integers(-100, 100, i % 4)] for i in ids]
    cols["list_i32"] = pa.array(masked(lists, nulls(r, n)), pa.list_(pa.int32()))
    cols["llist_f64"] = pa.array(masked([[float(x) for x in l] for l in lists], nulls(r, n)), pa.large_list(pa.float64()))
    cols["list_str"] = pa.array(masked([[words[(i + j) % len(words)] if (i + j) % 7 else None for j in range(i % 3)] for i in ids], nulls(r, n)), pa.list_(pa.utf8()))
    cols["list_list"] = pa.array(masked([[l, [], l[:1]] if i % 3 else [] for i, l in zip(ids, lists)], nulls(r, n)), pa.list_(pa.list_(pa.int32())))
    vec = r.standard_normal(n * 16).astype(np.float32)
    vmask = nulls(r, n, 0.05)
    cols["vec"] = pa.FixedSizeListArray.from_arrays(pa.array(vec), 16, mask=pa.array(vmask))
    cols["fsl_i8"] = pa.FixedSizeListArray.from_arrays(pa.array(r.integers(-100, 100, n * 3).astype(np.int8)), 3)
    cols["fsl_bool"] = pa.FixedSizeListArray.from_arrays(pa.array([bool(x) for x in r.integers(0, 2, n * 5)]), 5)
    inner = pa.StructArray.from_arrays(
        [pa.array(masked(list(r.standard_normal(n)), nulls(r, n)), pa.float64()),
         pa.array(masked(lists, nulls(r, n)), pa.list_(pa.int64()))],
        names=["d", "e"], mask=pa.array(nulls(r, n)))
    cols["st"] = pa.StructArray.from_arrays(
        [pa.array(masked([int(x) for x in r.integers(0, 1000, n)], nulls(r, n)), pa.int32()),
         pa.array(masked(s, nulls(r, n)), pa.utf8()), inner],
        names=["a", "b", "c"], mask=pa.array(nulls(r, n)))
    items = pa.StructArray.from_arrays(
        [pa.array([int(x) for x in r.integers(0, 50, 3 * n)], pa.int32()),
         pa.array(masked([words[int(x)] for x in r.integers(0, len(words), 3 * n)], nulls(r, 3 * n)), pa.utf8())],
        names=["x", "y"])
    offs = np.concatenate([[0], np.cumsum([i % 4 for i in ids])]).astype(np.int32)
    cols["list_struct"] = pa.ListArray.from_arrays(pa.array(offs), items.slice(0, int(offs[-1])), mask=pa.array(nulls(r, n)))
    cols["nul"] = pa.nulls(n)
    return pa.table(cols)


def all_null_table(n):
    cols = {"id": pa.array(range(n), pa.int64())}
    for name, t in [("i32", pa.int32()), ("f64", pa.float64()), ("flag", pa.bool_()),
                    ("s", pa.utf8()), ("lbin", pa.large_binary()), ("ts", pa.timestamp("us")),
                    ("dec", pa.decimal128(10, 2)), ("list", pa.list_(pa.int32())),
                    ("vec", pa.list_(pa.float32(), 4)),
                    ("st", pa.struct([("a", pa.int32()), ("b", pa.utf8())]))]:
        cols[name] = pa.nulls(n, t)
    cols["dict"] = pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), pa.array(["only"]))
    return pa.table(cols)


def simple_table(start, n, seed):
    r = np.random.default_rng(seed)
    ids = np.arange(start, start + n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"row-{i}" if i % 11 else "" for i in ids]),
        "score": pa.array(r.standard_normal(n)),
        "tags": pa.array([[f"t{j}" for j in range(i % 3)] for i in ids], pa.list_(pa.utf8())),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(n * 8).astype(np.float32)), 8),
    })


LEGACY = dict(data_storage_version="legacy", max_rows_per_group=ROWS_PER_GROUP)


def case_types(path):
    lance.write_dataset(types_table(0, 200, 1), path, max_rows_per_file=130, **LEGACY)
    lance.write_dataset(types_table(200, 70, 2), path, mode="append", max_rows_per_group=ROWS_PER_GROUP)
    lance.dataset(path).delete("id % 7 = 3 OR id = 201")


def case_all_null(path):
    lance.write_dataset(all_null_table(70), path, **LEGACY)


def case_one_row(path):
    lance.write_dataset(types_table(0, 1, 3), path, **LEGACY)


def case_history(path):
    lance.write_dataset(simple_table(0, 300, 4), path, max_rows_per_file=130, **LEGACY)
    lance.write_dataset(simple_table(300, 100, 5), path, mode="append", max_rows_per_group=ROWS_PER_GROUP)
    ds = lance.dataset(path)
    ds.delete("id % 5 = 0")
    lance.write_dataset(simple_table(400, 50, 6), path, mode="append", max_rows_per_group=ROWS_PER_GROUP)
    lance.dataset(path).delete("id >= 100 AND id < 170")


def case_add_columns(path):
    lance.write_dataset(simple_table(0, 200, 7), path, max_rows_per_file=100, **LEGACY)
    lance.dataset(path).add_columns({"double_id": "id * 2", "label": "concat('L', CAST(id AS string))"})
    lance.dataset(path).delete("id < 10")


CASES = {
    "types": case_types,
    "all_null": case_all_null,
    "one_row": case_one_row,
    "history": case_history,
    "add_columns": case_add_columns,
}


def write_arrow(path, t):
    with pa.OSFile(path, "wb") as f:
        opts = pa.ipc.IpcWriteOptions(compression="zstd")
        with pa.ipc.new_file(f, t.schema, options=opts) as w:
            w.write_table(t)


def probe_refused(out):
    """Types pylance's legacy path refuses (on write or on read)."""
    probes = {
        "map<utf8,int32>": pa.array([[("a", 1)]], pa.map_(pa.utf8(), pa.int32())),
        "month_day_nano_interval": pa.array([(1, 2, 3)], pa.month_day_nano_interval()),
        "list_view<int32>": pa.array([[1]], pa.list_view(pa.int32())),
        "struct<> (no children)": pa.array([{}], pa.struct([])),
        "dictionary<int32, float64>": pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), pa.array([1.5])),
    }
    refused = {}
    tmp = os.path.join(out, "_probe")
    for name, arr in probes.items():
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            lance.write_dataset(pa.table({"c": arr}), tmp, data_storage_version="legacy")
        except Exception as e:  # noqa: BLE001 - recording the refusal is the point
            refused[name] = "write: " + str(e).split(",")[0][:200]
            continue
        try:
            lance.dataset(tmp).to_table()
            refused[name] = "accepted"
        except Exception as e:  # noqa: BLE001
            refused[name] = "read: " + str(e).split(",")[0][:200]
    shutil.rmtree(tmp, ignore_errors=True)
    # Kept: a file pylance writes but refuses to read (float dictionary values), so
    # Lancer's typed refusal of the same file is tested.
    keep = os.path.join(out, "refused_dict_float")
    shutil.rmtree(keep, ignore_errors=True)
    lance.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64()),
                                  "c": probes["dictionary<int32, float64>"].take([0, 0])}),
                        keep, data_storage_version="legacy")
    with open(os.path.join(out, "refused.json"), "w") as f:
        json.dump(refused, f, indent=1, sort_keys=True)


def main(out_root):
    major = lance.__version__.split(".")[0]
    out = os.path.join(out_root, f"pylance-{major}")
    os.makedirs(out, exist_ok=True)
    for name, make in CASES.items():
        path = os.path.join(out, name)
        exp = os.path.join(out, name + ".expected")
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(exp, ignore_errors=True)
        os.makedirs(os.path.join(exp, "files"))
        make(path)
        ds = lance.dataset(path)
        index = {"pylance": lance.__version__, "storage": ds.data_storage_version,
                 "versions": [], "files": {}}
        for v in ds.versions():
            n = v["version"]
            at = lance.dataset(path, version=n)
            t = at.to_table()
            write_arrow(os.path.join(exp, f"v{n}.arrow"), t)
            index["versions"].append({"version": n, "rows": t.num_rows, "count_rows": at.count_rows(),
                                      "filter": FILTER, "filter_ids": at.to_table(
                                          columns=["id"], filter=FILTER).column("id").to_pylist()})
            # Every data file, read through its fragment at the first version that has
            # it without deletions: the whole file as pylance reads it.
            for frag in at.get_fragments():
                if frag.metadata.deletion_file is not None:
                    continue
                cols = frag.to_table()
                for df in frag.metadata.files:
                    if df.path in index["files"]:
                        continue
                    field_names = [f.name for f in at.schema if any(
                        i in df.fields for i in _ids(at, f.name))]
                    stem = os.path.splitext(os.path.basename(df.path))[0]
                    write_arrow(os.path.join(exp, "files", stem + ".arrow"), cols.select(field_names))
                    index["files"][df.path] = {"expected": f"files/{stem}.arrow",
                                               "version": [df.file_major_version, df.file_minor_version],
                                               "rows": cols.num_rows}
        with open(os.path.join(exp, "index.json"), "w") as f:
            json.dump(index, f, indent=1, sort_keys=True)
    probe_refused(out)


def _ids(ds, name):
    """Field ids of a top-level field and its descendants (from the Lance schema)."""
    lance_schema = ds.lance_schema
    out = []

    def walk(f):
        out.append(f.id())
        for c in f.children():
            walk(c)
    for f in lance_schema.fields():
        if f.name() == name:
            walk(f)
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/legacy")
