#!/usr/bin/env python3
"""Writes the golden Lance 2.3 data files used by lancer-format's tests.

Run with the python of a pinned pylance venv (see scripts/setup-python.sh):

    .venv/pylance-14/bin/python scripts/gen_golden_v23.py tests/data/v23

For every case below it writes
  <out>/pylance-<major>/<case>.v2.3.lance   the file, written by pylance with version="2.3"
  <out>/pylance-<major>/<case>.v2.3.arrow   what pylance reads back (Arrow IPC file)
and an index.json listing the files. 2.3 exists only in pylance 14 (it warns that the
format is unstable); with an older pylance whose writer refuses version 2.3 the script
writes nothing but an index.json saying so ({"unsupported": "2.3 not supported", ...}),
so scripts/test.sh can run it with every pinned pylance. pylance 11 and 12 do accept
version="2.3", but write a pre-release 2.3 (pages in the 2.1 `PageLayout` grammar, other
level rules) that pylance 14 refuses to read; for them the script writes only
`prerelease.v2.3.lance` (no .arrow) and an index.json with "unsupported": "2.3 not
supported", and Lancer's tests check that Lancer refuses that file with a typed error,
as pylance 14 does. The data is deterministic (fixed seeds), so re-running reproduces
the same values.

Cases cover every type and shape: all integer widths, floats, bool, strings (short,
long > 256 bytes for full-zip values, all "", "" mixed with nulls, one repeated value),
binary, fixed-size binary, dates / timestamps / decimals, dictionaries, lists and large
lists (empty, null, cycling [], ["x"], ["x","x"]), list<list<>>, list<struct>, structs
with nulls, 128-d vectors, maps, the null type, all-null and constant columns, sorted
integers, several pages, and sparse structural pages (forced with the field metadata
lance-encoding:structural-encoding=sparse, and chosen by the writer for huge lists).
"""
import json
import os
import random
import sys

import numpy as np
import pyarrow as pa
import lance
from lance.file import LanceFileReader, LanceFileWriter

N = 3000
SPARSE = {"lance-encoding:structural-encoding": "sparse"}


def rng(seed):
    return np.random.default_rng(seed)


def with_nulls(arr, seed, frac=0.2):
    mask = rng(seed).random(len(arr)) < frac
    return pa.compute.if_else(pa.array(mask), pa.nulls(len(arr), arr.type), arr)


def table(cols, meta=None):
    fields = [pa.field(k, v.type, True, meta) for k, v in cols.items()]
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields))


def ints():
    r = rng(1)
    cols = {}
    for t in [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]:
        info = np.iinfo(t.to_pandas_dtype())
        cols[f"small_{t}"] = pa.array(r.integers(0, 100, N), t)
        cols[f"full_{t}"] = pa.array(r.integers(info.min, info.max, N, endpoint=True, dtype=t.to_pandas_dtype()), t)
        cols[f"null_{t}"] = with_nulls(pa.array(r.integers(0, 1000 % (info.max + 1), N), t), 2)
    cols["neg_int32"] = pa.array(r.integers(-1000, 1000, N), pa.int32())
    return table(cols)


def sorted_ints():
    r = rng(2)
    return table({
        "arange": pa.array(np.arange(N, dtype=np.int64)),
        "step3": pa.array(np.arange(N, dtype=np.int32) * 3 + 7),
        "cumsum": pa.array(np.cumsum(r.integers(0, 50, N)), pa.int64()),
        "runs": pa.array(np.repeat(r.integers(0, 1 << 20, N // 100 + 1), 100)[:N], pa.int32()),
        "const": pa.array(np.full(N, 42, np.int64)),
    })


def floats_bool():
    r = rng(3)
    return table({
        "f16": pa.array(r.random(N).astype(np.float16)),
        "f32": pa.array(r.random(N, dtype=np.float32)),
        "f64": pa.array(r.normal(size=N)),
        "f64_n": with_nulls(pa.array(r.normal(size=N)), 4),
        "b": pa.array(r.random(N) < 0.3),
        "b_n": with_nulls(pa.array(r.random(N) < 0.5), 5),
    })


def strings():
    r = rng(4)
    words = [f"w{i}_" + "ab" * (i % 7) for i in range(5000)]
    short = pa.array([words[i] for i in r.integers(0, 5000, N)])
    long = pa.array(["L" * 260 + str(i) * (i % 5) if i % 3 == 0 else "s" + str(i) for i in range(N)])
    return table({
        "short": short,
        "short_n": with_nulls(short, 6),
        "large": pa.array(short.to_pylist(), pa.large_utf8()),
        "lowcard": pa.array([f"cat{i % 7}" for i in range(N)]),
        "long": long,
        "long_n": with_nulls(long, 7),
        "empty": pa.array([""] * N),
        "empty_n": pa.array(["" if i % 3 else None for i in range(N)]),
        "same": pa.array(["same value"] * N),
        "bin": pa.array([bytes(r.integers(0, 256, i % 17, dtype=np.uint8)) for i in range(N)], pa.binary()),
        "fsb": pa.array([bytes([i % 256, 7, 9, i // 256 % 256]) for i in range(N)], pa.binary(4)),
    })


def temporal():
    r = rng(5)
    return table({
        "date32": pa.array(r.integers(0, 20000, N).astype(np.int32), pa.date32()),
        "date64": pa.array(r.integers(0, 2 ** 40, N), pa.date64()),
        "ts_us": with_nulls(pa.array(r.integers(0, 2 ** 50, N), pa.timestamp("us", tz="UTC")), 8),
        "ts_s": pa.array(r.integers(0, 2 ** 31, N), pa.timestamp("s")),
        "dec": pa.array([None if i % 11 == 0 else i * 1001 for i in range(N)], pa.decimal128(12, 3)),
        "dict": pa.array([f"k{i % 13}" for i in range(N)]).dictionary_encode(),
    })


def lists():
    r = rng(6)
    li = [None if i % 9 == 0 else list(map(int, r.integers(0, 1000, i % 5))) for i in range(N)]
    cyc = [[], ["x"], ["x", "x"]]
    return table({
        "list_int": pa.array(li, pa.list_(pa.int32())),
        "large_list_str": pa.array([None if v is None else [str(x) for x in v] for v in li], pa.large_list(pa.string())),
        "cycle": pa.array([cyc[i % 3] for i in range(N)], pa.list_(pa.string())),
        "empties": pa.array([[] if i % 4 else None for i in range(N)], pa.list_(pa.int64())),
        "nested": pa.array([None if i % 7 == 0 else [[j] * (j % 3) for j in range(i % 4)] for i in range(N)],
                           pa.list_(pa.list_(pa.int64()))),
        "list_struct": pa.array([None if i % 6 == 0 else [{"a": j, "b": None if j % 2 else f"s{j}"} for j in range(i % 3)]
                                 for i in range(N)], pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
        "map": pa.array([None if i % 8 == 0 else [(f"k{j}", j * i) for j in range(i % 3)] for i in range(N)],
                        pa.map_(pa.string(), pa.int64())),
    })


def structs():
    st = pa.struct([("x", pa.int32()), ("y", pa.string()), ("z", pa.struct([("q", pa.float64())]))])
    vals = [None if i % 7 == 0 else {"x": None if i % 5 == 0 else i, "y": f"y{i % 10}",
                                      "z": None if i % 3 == 0 else {"q": i / 2}} for i in range(N)]
    return table({"s": pa.array(vals, st),
                  "s_list": pa.array([None if i % 4 == 0 else {"l": [i] * (i % 3)} for i in range(N)],
                                     pa.struct([("l", pa.list_(pa.int32()))]))})


def vectors():
    r = rng(7)
    n = 80
    v = pa.FixedSizeListArray.from_arrays(pa.array(r.random(n * 128, dtype=np.float32)), 128)
    small = pa.FixedSizeListArray.from_arrays(pa.array(r.random(n * 4, dtype=np.float32)), 4)
    return table({"vec": v, "vec_n": with_nulls(v, 9), "small": with_nulls(small, 10)})


def nulls():
    return table({
        "null_type": pa.nulls(N),
        "all_null_int": pa.nulls(N, pa.int32()),
        "all_null_str": pa.nulls(N, pa.string()),
        "all_null_list": pa.nulls(N, pa.list_(pa.int32())),
        "const_int": pa.array([7] * N, pa.int32()),
        "const_str": pa.array(["constant"] * N),
        "const_f64": pa.array([1.5] * N),
    })


def many_pages():
    r = rng(8)
    n = 120_000
    return table({"small": pa.array(r.integers(0, 4, n), pa.int8()),
                  "l": pa.array([[i % 3] * (i % 3) if i % 1000 else None for i in range(n)], pa.list_(pa.int8()))})


def sparse():
    r = rng(9)
    li = [None if i % 5 == 0 else list(map(int, r.integers(0, 1000, i % 4))) for i in range(N)]
    cyc = [[], ["x"], ["x", "x"]]
    return table({
        "int_n": with_nulls(pa.array(r.integers(0, 1 << 30, N), pa.int64()), 11),
        "int": pa.array(r.integers(0, 100, N), pa.int32()),
        "str_n": with_nulls(pa.array([f"s{i % 100}" for i in range(N)]), 12),
        "str_hi": pa.array([f"str{i}" * (i % 4) for i in range(N)]),
        "long_n": with_nulls(pa.array(["z" * 300 + str(i) for i in range(N)]), 13),
        "list_int": pa.array(li, pa.list_(pa.int32())),
        "list_str": pa.array([None if v is None else [f"v{x % 50}" for x in v] for v in li], pa.list_(pa.string())),
        "cycle": pa.array([cyc[i % 3] for i in range(N)], pa.list_(pa.string())),
        "nested": pa.array([None if i % 7 == 0 else [[int(j)] * (j % 3) for j in range(i % 4)] for i in range(N)],
                           pa.list_(pa.list_(pa.int64()))),
        "list_struct": pa.array([None if i % 6 == 0 else [{"a": j, "b": None if j % 2 else f"s{j}"} for j in range(i % 3)]
                                 for i in range(N)], pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
        "struct_n": pa.array([None if i % 7 == 0 else {"x": None if i % 5 == 0 else i} for i in range(N)],
                             pa.struct([("x", pa.int32())])),
        "fsl_n": with_nulls(pa.FixedSizeListArray.from_arrays(pa.array(r.random(N * 2, dtype=np.float32)), 2), 14),
        "map": pa.array([None if i % 8 == 0 else [(f"k{j}", j * i) for j in range(i % 3)] for i in range(N)],
                        pa.map_(pa.string(), pa.int64())),
        "all_null": pa.nulls(N, pa.int32()),
        "const": pa.array([5] * N, pa.int16()),
        "large_list": pa.array([None if v is None else v for v in li], pa.large_list(pa.int16())),
    }, SPARSE)


def sparse_more():
    # Indexed values (sparse large binary), list validity stored as a set, lists of
    # nullable lists, struct<list>, RLE with bitpacked run values, long strings in lists.
    r = rng(20)
    n = 600
    return table({
        "dict": pa.array([f"k{i % 13}" if i % 6 else None for i in range(n)]).dictionary_encode(),
        "bool_n": with_nulls(pa.array(r.random(n) < 0.5), 1),
        "f16": with_nulls(pa.array(r.random(n).astype(np.float16)), 2),
        "bin": with_nulls(pa.array([bytes([i % 256]) * (i % 5) for i in range(n)], pa.binary()), 3),
        "lbin": with_nulls(pa.array([b"x" * (i % 150) * 2 for i in range(n)], pa.large_binary()), 4),
        "fsb": with_nulls(pa.array([bytes([i % 256, 1]) for i in range(n)], pa.binary(2)), 5),
        "vec": with_nulls(pa.FixedSizeListArray.from_arrays(pa.array(r.random(n * 16, dtype=np.float32)), 16), 6),
        "struct_list": pa.array([None if i % 4 == 0 else {"l": None if i % 3 == 0 else [i] * (i % 3), "v": i}
                                 for i in range(n)], pa.struct([("l", pa.list_(pa.int32())), ("v", pa.int64())])),
        "list_list_n": pa.array([None if i % 5 == 0 else [None if j % 2 else [j, None] for j in range(i % 4)]
                                 for i in range(n)], pa.list_(pa.list_(pa.int32()))),
        "list_long": pa.array([None if i % 5 == 0 else ["q" * 300 + str(j) for j in range(i % 3)] for i in range(n)],
                              pa.list_(pa.string())),
        "list_fsl": pa.array([None if i % 5 == 0 else [[float(i), 1.0]] * (i % 3) for i in range(n)],
                             pa.list_(pa.list_(pa.float32(), 2))),
        "ts": with_nulls(pa.array(r.integers(0, 2 ** 50, n), pa.timestamp("ns")), 7),
        "dec": with_nulls(pa.array([i * 7 for i in range(n)], pa.decimal128(20, 2)), 8),
        "all_empty": pa.array([[] for i in range(n)], pa.list_(pa.int32())),
        "null_or_empty": pa.array([[] if i % 2 else None for i in range(n)], pa.list_(pa.int32())),
        "all_null_list": pa.nulls(n, pa.list_(pa.string())),
        "const_str": pa.array(["c"] * n),
        "const_list": pa.array([[1, 2]] * n, pa.list_(pa.int32())),
    }, SPARSE)


def dense_more():
    n = 2000
    return table({
        "const_list": pa.array([[1, 2]] * n, pa.list_(pa.int32())),
        "const_n": pa.array([5 if i % 3 else None for i in range(n)], pa.int32()),
        "const_list_n": pa.array([[1] if i % 3 else None for i in range(n)], pa.list_(pa.int32())),
        "struct_const": pa.array([{"a": 1, "b": "x"}] * n, pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "all_empty": pa.array([[] for i in range(n)], pa.list_(pa.int32())),
        "list_long": pa.array([["w" * 300] * (i % 3) for i in range(n)], pa.list_(pa.string())),
        "lbin": with_nulls(pa.array([b"x" * (i % 400) for i in range(n)], pa.large_binary()), 4),
        "vec_list": pa.array([[[1.0] * 8] * (i % 3) for i in range(n)], pa.list_(pa.list_(pa.float32(), 8))),
        "sorted_u32": pa.array(np.arange(n, dtype=np.uint32) * 2),
        "mod_int8": pa.array(np.arange(n) % 100, pa.int8()),
    })


def sparse_indexed():
    # Many distinct long binary / string values on a sparse page: IndexedValues.
    n = 1200
    return table({"lbin": with_nulls(pa.array([b"x" * (i % 400) for i in range(n)], pa.large_binary()), 4),
                  "str": with_nulls(pa.array(["y" * (i % 400) for i in range(n)]), 5)}, SPARSE)


def sparse_zipped_nested():
    # Long strings under struct / list<struct> validity (zipped values without nulls),
    # struct<list<list<>>>, list<list<string>> with null inner lists; several pages.
    n = 600
    return table({
        "ls_long": pa.array([None if i % 5 == 0 else [{"a": None if j % 2 else "z" * 300 + str(i)} for j in range(i % 3)]
                             for i in range(n)], pa.list_(pa.struct([("a", pa.string())]))),
        "s_long": pa.array([None if i % 4 == 0 else {"a": None if i % 3 == 0 else "k" * 280 + str(i)} for i in range(n)],
                           pa.struct([("a", pa.string())])),
        "s_l": pa.array([None if i % 4 == 0 else {"l": None if i % 3 == 0 else [[i]] * (i % 3)} for i in range(n)],
                        pa.struct([("l", pa.list_(pa.list_(pa.int16())))])),
        "ll_str": pa.array([None if i % 6 == 0 else [None if j == 1 else [f"s{k}" for k in range(j)] for j in range(i % 4)]
                            for i in range(n)], pa.list_(pa.list_(pa.string()))),
    }, SPARSE)


# Random schemas and values (seeded): the seeds kept are those whose files exercised
# corners the hand-written cases missed (dictionary-coded sets with stored items,
# nullable fixed-size-list dictionary items, RLE over range values).
def rtype(r, depth):
    prims = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint32(), pa.float32(), pa.float64(), pa.bool_(),
             pa.string(), pa.large_string(), pa.binary(), pa.date32(), pa.timestamp("us")]
    k = r.random()
    if depth <= 0 or k < 0.45:
        return r.choice(prims)
    if k < 0.65:
        return pa.list_(rtype(r, depth - 1))
    if k < 0.72:
        return pa.large_list(rtype(r, depth - 1))
    if k < 0.9:
        return pa.struct([(f"f{i}", rtype(r, depth - 1)) for i in range(r.randint(1, 3))])
    if k < 0.95:
        return pa.list_(pa.float32(), r.choice([2, 8]))
    return pa.map_(pa.string(), rtype(r, depth - 1))

def rval(r, t, nullp, longp):
    if r.random() < nullp:
        return None
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [rval(r, t.value_type, nullp, longp) for _ in range(r.choice([0, 0, 1, 2, 3, 5]))]
    if pa.types.is_fixed_size_list(t):
        return [r.random() for _ in range(t.list_size)]
    if pa.types.is_struct(t):
        return {f.name: rval(r, f.type, nullp, longp) for f in t}
    if pa.types.is_map(t):
        return [(f"k{j}", rval(r, t.item_type, nullp, longp)) for j in range(r.choice([0, 1, 2]))]
    if pa.types.is_boolean(t):
        return r.random() < 0.5
    if pa.types.is_floating(t):
        return r.random()
    if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t):
        return r.randint(0, 100) if t != pa.uint32() else r.randint(0, 1000)
    s = ("L" * 300 if r.random() < longp else "") + str(r.randint(0, 30))
    return s.encode() if pa.types.is_binary(t) else s

def random_case(seed):
    r = random.Random(seed)
    n = r.choice([50, 300, 1500])
    cols, fields = [], []
    for c in range(4):
        t = rtype(r, 3)
        nullp = r.choice([0, 0.1, 0.5, 1.0])
        longp = r.choice([0, 0, 0.5, 1.0])
        const = r.random() < 0.15
        v0 = rval(r, t, nullp, longp)
        vals = [v0 if const else rval(r, t, nullp, longp) for _ in range(n)]
        meta = SPARSE if r.random() < 0.5 else None
        cols.append(pa.array(vals, t))
        fields.append(pa.field(f"c{c}", t, True, meta))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))



def fsl_struct():
    # Refused by Lancer (typed error): a fixed-size list of structs (sparse; pylance 14
    # reads its own dense form of this type back with twice the rows, so it is left out).
    n = 300
    v = [None if i % 5 == 0 else [{"x": i}, None] for i in range(n)]
    t = pa.list_(pa.struct([("x", pa.int32())]), 2)
    return pa.Table.from_arrays([pa.array(v, t)], schema=pa.schema([pa.field("sparse", t, True, SPARSE)]))


def sparse_small():
    t = sparse()
    keep = ["int_n", "str_n", "list_int", "nested", "list_struct", "all_null", "const"]
    return t.select(keep)


def sparse_auto():
    # Huge lists: one row's levels exceed the dense mini-block budget.
    rows = [[j % 7 for j in range(70_000)] if i % 2 else [] for i in range(4)]
    return table({"huge": pa.array(rows, pa.list_(pa.int8())),
                  "huge_str": pa.array([[f"{j % 10}" for j in range(40_000)] if i % 3 else None for i in range(4)],
                                       pa.list_(pa.string()))})


CASES = {
    "ints": (ints, {}),
    "sorted_ints": (sorted_ints, {}),
    "floats_bool": (floats_bool, {}),
    "strings": (strings, {}),
    "temporal": (temporal, {}),
    "lists": (lists, {}),
    "structs": (structs, {}),
    "vectors": (vectors, {}),
    "nulls": (nulls, {}),
    "many_pages": (many_pages, {"data_cache_bytes": 64 * 1024}),
    "sparse": (sparse, {}),
    "sparse_small_pages": (sparse_small, {"data_cache_bytes": 8 * 1024}),
    "sparse_auto": (sparse_auto, {}),
    "sparse_more": (sparse_more, {}),
    "dense_more": (dense_more, {}),
    "sparse_indexed": (sparse_indexed, {}),
    "sparse_zipped_nested": (sparse_zipped_nested, {"data_cache_bytes": 32 * 1024}),
    "random_11": (lambda: random_case(11), {}),
    "random_40": (lambda: random_case(40), {}),
    "random_89": (lambda: random_case(89), {}),
    "fsl_struct": (fsl_struct, {}),
}


def main(out_root, only=None):
    major = lance.__version__.split(".")[0]
    out = os.path.join(out_root, f"pylance-{major}")
    os.makedirs(out, exist_ok=True)
    index = {"pylance": lance.__version__, "pyarrow": pa.__version__, "version": "2.3", "files": []}
    if int(major) < 14:
        # No 2.3 as pylance 14 defines it: at most a pre-release file, for refusal tests.
        index["unsupported"] = "2.3 not supported"
        probe = os.path.join(out, "prerelease.v2.3.lance")
        try:
            t = pa.table({"a": pa.array([1, None, 3], pa.int32()),
                          "l": pa.array([[1], [], None], pa.list_(pa.int64()))})
            with LanceFileWriter(probe, t.schema, version="2.3") as w:
                w.write_batch(t)
            index["note"] = "the writer accepts 2.3 but writes a pre-release grammar pylance 14 cannot read"
        except Exception as e:
            index["error"] = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
            if os.path.exists(probe):
                os.remove(probe)
        with open(os.path.join(out, "index.json"), "w") as f:
            json.dump(index, f, indent=1)
        return
    for name, (make, opts) in CASES.items():
        if only and name not in only:
            continue
        t = make()
        stem = os.path.join(out, f"{name}.v2.3")
        with LanceFileWriter(stem + ".lance", t.schema, version="2.3", **opts) as w:
            for b in t.to_batches(max_chunksize=2_000 if opts else None):
                w.write_batch(b)
        got = LanceFileReader(stem + ".lance").read_all().to_table()
        opts_ipc = pa.ipc.IpcWriteOptions(compression="zstd")
        with pa.OSFile(stem + ".arrow", "wb") as f:
            with pa.ipc.new_file(f, got.schema, options=opts_ipc) as w:
                w.write_table(got)
        index["files"].append({"case": name, "version": "2.3", "rows": got.num_rows, "columns": got.schema.names})
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/v23", sys.argv[2:] or None)
