#!/usr/bin/env python3
"""Writes the golden Lance data files used by lancer-format's tests.

Run with the python of one pinned pylance venv (see scripts/setup-python.sh):

    .venv/pylance-14/bin/python scripts/gen_golden_files.py tests/data/files

For every case below and every data storage version (2.0, 2.1, 2.2) it writes
  <out>/pylance-<major>/<case>.v<ver>.lance   the file, written by pylance
  <out>/pylance-<major>/<case>.v<ver>.arrow   what pylance reads back (Arrow IPC file)
  <out>/pylance-<major>/<case>.v<ver>.meta.txt  pylance's own dump of the file metadata
and an index.json listing what was written and which (case, version) pylance refused.
The data is deterministic (fixed seeds), so re-running reproduces the same values.
"""
import json
import os
import sys

import numpy as np
import pyarrow as pa
import lance
from lance.file import LanceFileReader, LanceFileWriter

N = 2500  # rows in most cases: enough for several mini-blocks per page


def rng(seed):
    return np.random.default_rng(seed)


def with_nulls(arr, seed, frac=0.2):
    """The same array with about `frac` of its top-level values null."""
    mask = rng(seed).random(len(arr)) < frac
    return pa.compute.if_else(pa.array(mask), pa.nulls(len(arr), arr.type), arr)


def all_null(arr):
    return pa.nulls(len(arr), arr.type)


def variants(name, arr, seed):
    """A column in three null shapes: none, some, all."""
    return {name: arr, name + "_n": with_nulls(arr, seed), name + "_an": all_null(arr)}


def meta_field(name, arr, meta):
    return pa.field(name, arr.type, True, meta), arr


# ---------------------------------------------------------------- cases
def case_ints():
    r = rng(1)
    cols = {}
    for t in [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]:
        info = np.iinfo(t.to_pandas_dtype())
        cols.update(variants(f"small_{t}", pa.array(r.integers(0, 100, N), t), 3))
        cols.update(variants(f"full_{t}", pa.array(r.integers(info.min, info.max, N, endpoint=True, dtype=t.to_pandas_dtype()), t), 4))
    cols["neg_int32"] = pa.array(r.integers(-1000, 1000, N), pa.int32())
    cols["sorted_int64"] = pa.array(np.cumsum(r.integers(0, 50, N)), pa.int64())
    cols["runs_int32"] = pa.array(np.repeat(r.integers(0, 1 << 20, N // 100 + 1), 100)[:N], pa.int32())
    cols["const_int64"] = pa.array(np.full(N, 123456789), pa.int64())
    cols["lowcard_int64"] = pa.array(r.choice([5, 1 << 40, -7], N), pa.int64())
    return pa.table(cols)


def case_floats():
    r = rng(2)
    cols = {}
    cols.update(variants("f16", pa.array(r.standard_normal(N).astype(np.float16), pa.float16()), 5))
    cols.update(variants("f32", pa.array(r.standard_normal(N).astype(np.float32)), 6))
    cols.update(variants("f64", pa.array(r.standard_normal(N)), 7))
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-300, 1.5])
    cols["f64_special"] = pa.array(r.choice(specials, N))
    cols["f32_smooth"] = pa.array(np.linspace(0, 100, N).astype(np.float32))
    return pa.table(cols)


def case_bool():
    r = rng(3)
    cols = {}
    cols.update(variants("b", pa.array(r.random(N) < 0.5), 8))
    cols["b_true"] = pa.array(np.ones(N, dtype=bool))
    cols["b_runs"] = pa.array(np.repeat(r.random(N // 50 + 1) < 0.5, 50)[:N])
    return pa.table(cols)


def case_temporal():
    r = rng(4)
    cols = {}
    base = r.integers(0, 20000, N)
    cols.update(variants("date32", pa.array(base, pa.int32()).cast(pa.date32()), 9))
    cols["date64"] = pa.array(base.astype(np.int64) * 86400000, pa.int64()).cast(pa.date64())
    cols["time32s"] = pa.array(r.integers(0, 86400, N), pa.int32()).cast(pa.time32("s"))
    cols["time32ms"] = pa.array(r.integers(0, 86400000, N), pa.int32()).cast(pa.time32("ms"))
    cols["time64us"] = pa.array(r.integers(0, 86400 * 10**6, N), pa.int64()).cast(pa.time64("us"))
    cols["time64ns"] = pa.array(r.integers(0, 86400 * 10**9, N), pa.int64()).cast(pa.time64("ns"))
    ts = r.integers(0, 2 * 10**9, N)
    for unit, mul in [("s", 1), ("ms", 1000), ("us", 10**6), ("ns", 10**9)]:
        cols[f"ts_{unit}"] = pa.array(ts * mul, pa.int64()).cast(pa.timestamp(unit))
        cols[f"ts_{unit}_utc"] = pa.array(ts * mul, pa.int64()).cast(pa.timestamp(unit, tz="UTC"))
    cols["ts_us_tz"] = pa.array(ts * 10**6, pa.int64()).cast(pa.timestamp("us", tz="America/New_York"))
    for unit in ["s", "ms", "us", "ns"]:
        cols[f"dur_{unit}"] = pa.array(r.integers(-10**6, 10**6, N), pa.int64()).cast(pa.duration(unit))
    return pa.table(cols)


def case_decimal():
    r = rng(5)
    import decimal
    vals = [decimal.Decimal(int(v)).scaleb(-2) for v in r.integers(-10**9, 10**9, N)]
    cols = {}
    cols.update(variants("d128", pa.array(vals, pa.decimal128(12, 2)), 10))
    cols["d256"] = pa.array(vals, pa.decimal256(40, 2))
    return pa.table(cols)


WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "ünïcødé", "日本語", ""]


def case_strings():
    r = rng(6)
    cols = {}
    rand = ["".join(r.choice(list("abcdefghijklmnopqrstuvwxyz0123456789"), r.integers(0, 20))) for _ in range(N)]
    cols.update(variants("utf8", pa.array(rand, pa.utf8()), 11))
    cols["large_utf8"] = pa.array(rand, pa.large_utf8())
    cols["binary"] = pa.array([s.encode() for s in rand], pa.binary())
    cols["large_binary"] = pa.array([s.encode() for s in rand], pa.large_binary())
    cols.update(variants("lowcard", pa.array(r.choice(WORDS, N), pa.utf8()), 12))
    text = [" ".join(r.choice(WORDS[:8], 12)) + f" row {i}" for i in range(N)]
    cols["text"] = pa.array(text, pa.utf8())
    cols["fsb"] = pa.array([bytes(r.integers(0, 256, 6, dtype=np.uint8)) for _ in range(N)], pa.binary(6))
    cols["const_str"] = pa.array(["same"] * N)
    cols["empty_str"] = pa.array([""] * N)
    return pa.table(cols)


def case_big_strings():
    r = rng(7)
    n = 120
    big = ["".join(r.choice(list("abc"), r.integers(200, 2000))) for _ in range(n)]
    cols = {}
    cols.update(variants("big", pa.array(big, pa.utf8()), 13))
    cols["big_binary"] = pa.array([bytes(r.integers(0, 256, r.integers(300, 1500), dtype=np.uint8)) for _ in range(n)], pa.large_binary())
    return pa.table(cols)


def case_vectors():
    r = rng(8)
    n = 150
    cols = {}
    v = r.standard_normal((n, 64)).astype(np.float32)
    cols.update(variants("vec_f32", pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), 64), 14))
    cols["vec_f16"] = pa.FixedSizeListArray.from_arrays(pa.array(v.ravel().astype(np.float16)), 64)
    cols["vec_f64"] = pa.FixedSizeListArray.from_arrays(pa.array(v.ravel().astype(np.float64)), 64)
    cols["vec_u8"] = pa.FixedSizeListArray.from_arrays(pa.array(r.integers(0, 256, n * 32, dtype=np.uint8)), 32)
    cols["vec_small"] = pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(n * 3).astype(np.float32)), 3)
    inner = pa.array(r.standard_normal(n * 4).astype(np.float32))
    inner = with_nulls(inner, 15, 0.3)
    cols["fsl_inner_nulls"] = pa.FixedSizeListArray.from_arrays(inner, 4)
    return pa.table(cols)


def case_wide_vectors():
    r = rng(19)
    n = 40
    return pa.table({"vec_768": pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(n * 768).astype(np.float32)), 768)})


def rand_list(r, n, maxlen, typ, null_frac=0.1, empty_frac=0.1, item_null=0.1):
    offsets = [0]
    valid = []
    for _ in range(n):
        u = r.random()
        if u < null_frac:
            valid.append(False)
            offsets.append(offsets[-1])
        elif u < null_frac + empty_frac:
            valid.append(True)
            offsets.append(offsets[-1])
        else:
            valid.append(True)
            offsets.append(offsets[-1] + int(r.integers(1, maxlen + 1)))
    m = offsets[-1]
    items = pa.array(r.integers(0, 1000, m), typ) if pa.types.is_integer(typ) else pa.array([f"s{x}" for x in r.integers(0, 50, m)], typ)
    if item_null:
        items = with_nulls(items, int(r.integers(0, 1 << 30)), item_null)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, mask=pa.array([not v for v in valid]))


def case_lists():
    r = rng(9)
    n = 2000
    cols = {}
    cols["list_i32"] = rand_list(r, n, 5, pa.int32())
    cols["list_i32_nonull"] = rand_list(r, n, 5, pa.int32(), 0, 0, 0)
    cols["list_str"] = rand_list(r, n, 4, pa.utf8())
    cols["large_list_i64"] = rand_list(r, n, 3, pa.int64()).cast(pa.large_list(pa.int64()))
    cols["list_all_null"] = pa.nulls(n, pa.list_(pa.int32()))
    cols["list_all_empty"] = pa.array([[]] * n, pa.list_(pa.int32()))
    inner = rand_list(r, n * 3, 3, pa.int32())
    outer_off = np.arange(0, n * 3 + 1, 3)
    cols["list_list"] = pa.ListArray.from_arrays(pa.array(outer_off, pa.int32()), inner)
    cols["list_fsl"] = pa.ListArray.from_arrays(pa.array(np.arange(0, n * 2 + 1, 2), pa.int32()),
                                                pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(n * 2 * 2).astype(np.float32)), 2))
    return pa.table(cols)


def case_long_lists():
    """Lists longer than a mini-block: rows span chunks (repetition index partials)."""
    return pa.table({"list_long": pa.array([list(range((i * 37) % 5000)) for i in range(40)], pa.list_(pa.int16())),
                     "list_long_str": pa.array([[f"x{j}" for j in range((i * 53) % 3000)] if i % 7 else None for i in range(30)] + [[]] * 10, pa.list_(pa.utf8()))})


def case_structs():
    r = rng(10)
    n = 2000
    a = with_nulls(pa.array(r.integers(0, 100, n), pa.int32()), 16)
    b = with_nulls(pa.array([f"v{x}" for x in r.integers(0, 30, n)]), 17)
    inner = pa.StructArray.from_arrays([a, b], names=["a", "b"], mask=pa.array(r.random(n) < 0.1))
    cols = {}
    cols["st"] = inner
    cols["st_nonull"] = pa.StructArray.from_arrays([pa.array(r.integers(0, 9, n), pa.int64()), pa.array(r.random(n))], names=["x", "y"])
    cols["st_nested"] = pa.StructArray.from_arrays([inner, pa.array(r.integers(0, 5, n), pa.int8())], names=["inner", "k"], mask=pa.array(r.random(n) < 0.1))
    cols["st_list"] = pa.StructArray.from_arrays([rand_list(r, n, 4, pa.int32())], names=["l"], mask=pa.array(r.random(n) < 0.1))
    items = pa.StructArray.from_arrays([pa.array(r.integers(0, 10, n * 2), pa.int32()), rand_list(r, n * 2, 3, pa.int64())], names=["p", "q"], mask=pa.array(r.random(n * 2) < 0.1))
    cols["list_struct_list"] = pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * n + 1, 2), pa.int32()), items, mask=pa.array(r.random(n) < 0.1))
    return pa.table(cols)


def case_structs_nonull():
    """Struct columns without struct-level nulls (2.0 cannot store struct validity)."""
    r = rng(11)
    n = 2000
    cols = {}
    cols["st"] = pa.StructArray.from_arrays([with_nulls(pa.array(r.integers(0, 100, n), pa.int32()), 18), pa.array([f"v{x}" for x in r.integers(0, 30, n)])], names=["a", "b"])
    cols["st_list"] = pa.StructArray.from_arrays([rand_list(r, n, 4, pa.int32())], names=["l"])
    return pa.table(cols)


def case_maps():
    r = rng(12)
    n = 1500
    keys, vals, offs = [], [], [0]
    valid = []
    for i in range(n):
        k = int(r.integers(0, 4))
        keys += [f"k{j}" for j in range(k)]
        vals += list(r.integers(0, 100, k))
        offs.append(offs[-1] + k)
        valid.append(r.random() > 0.1)
    m = pa.MapArray.from_arrays(pa.array(offs, pa.int32()), pa.array(keys), pa.array(vals, pa.int64()), mask=pa.array([not v for v in valid]))
    return pa.table({"m": m, "id": pa.array(np.arange(n))})


def case_fsl_structs():
    """Fixed-size lists of structs (pylance 14 writes them at 2.2 only): null rows, null
    structs and null leaves under a string and an int child; and a non-null one. One
    column per file: pylance 14 reads such a column only alone ("cannot read columns of
    differing lengths together" beside any other column of the file; inside a struct
    "its children have differing lengths")."""
    r = rng(14)
    n = N
    dim = 3
    a = pa.array(r.integers(0, 1000, n * dim), pa.int32(), mask=r.random(n * dim) < 0.1)
    b = pa.array([f"s{int(x)}" for x in r.integers(0, 50, n * dim)], mask=r.random(n * dim) < 0.1)
    items = pa.StructArray.from_arrays([a, b], names=["a", "b"], mask=pa.array(r.random(n * dim) < 0.1))
    fs = pa.FixedSizeListArray.from_arrays(items, dim, mask=pa.array(r.random(n) < 0.15))
    x = pa.array(r.standard_normal(n * 2))
    fs_nn = pa.FixedSizeListArray.from_arrays(pa.StructArray.from_arrays([x], names=["x"]), 2)
    return pa.table({"fs": fs}), pa.table({"fs_nn": fs_nn})


def case_dictionary_type():
    r = rng(13)
    idx = pa.array(r.integers(0, 4, N), pa.int32())
    d = pa.DictionaryArray.from_arrays(idx, pa.array(["red", "green", "blue", "cyan"]))
    return pa.table({"dict": d, "dict_n": with_nulls(d, 19)})


def case_field_metadata():
    r = rng(14)
    fields, arrays = [], []
    f = pa.array(r.standard_normal(N).astype(np.float32))
    for name, arr, meta in [
        ("zstd_f32", f, {"lance-encoding:compression": "zstd"}),
        ("lz4_i64", pa.array(r.integers(0, 1 << 40, N)), {"lance-encoding:compression": "lz4"}),
        ("bss_f32", f, {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"}),
        ("bss_f64", pa.array(r.standard_normal(N)), {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"}),
        ("zstd_str", pa.array([f"value-{x}" for x in r.integers(0, 10**6, N)]), {"lance-encoding:compression": "zstd"}),
        ("rle_i32", pa.array(np.repeat(r.integers(0, 100, N // 10 + 1), 10)[:N], pa.int32()), {"lance-encoding:rle-threshold": "0.9"}),
        ("fullzip_i32", pa.array(r.integers(0, 100, N), pa.int32()), {"lance-encoding:structural-encoding": "fullzip"}),
        ("fullzip_str", pa.array([f"s{x}" for x in r.integers(0, 100, N)]), {"lance-encoding:structural-encoding": "fullzip"}),
        ("nodict_str", pa.array(r.choice(WORDS, N)), {"lance-encoding:dict-divisor": "100000"}),
        ("user_meta", pa.array(np.arange(N)), {"owner": "lancer", "note": "kept"}),
    ]:
        fields.append(pa.field(name, arr.type, True, meta))
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata={"table": "meta"}))


def case_packed():
    r = rng(15)
    n = 2000
    st = pa.StructArray.from_arrays([pa.array(r.integers(0, 100, n), pa.int32()), pa.array(r.random(n).astype(np.float32)), pa.array(r.integers(0, 9, n), pa.int64())], names=["a", "b", "c"])
    fields = [pa.field("packed", st.type, True, {"lance-encoding:packed": "true"})]
    return pa.Table.from_arrays([st], schema=pa.schema(fields))


def case_packed_var():
    r = rng(20)
    n = 2000
    vst = pa.StructArray.from_arrays([pa.array(r.integers(0, 100, n), pa.int32()), pa.array([f"x{i}" for i in r.integers(0, 1000, n)])], names=["id", "name"])
    fields = [pa.field("packed_var", vst.type, True, {"lance-encoding:packed": "true"})]
    return pa.Table.from_arrays([vst], schema=pa.schema(fields))


def case_blob():
    r = rng(16)
    n = 20
    vals = [bytes(r.integers(0, 4, int(r.integers(0, 40_000)), dtype=np.uint8)) for _ in range(n)]
    vals[3] = None
    vals[4] = b""
    arr = pa.array(vals, pa.large_binary())
    field = pa.field("blob", pa.large_binary(), True, {"lance-encoding:blob": "true"})
    return pa.Table.from_arrays([arr, pa.array(np.arange(n))], schema=pa.schema([field, pa.field("id", pa.int64())]))


def case_bfloat16():
    from lance.arrow import bfloat16_array
    r = rng(17)
    vals = [float(x) for x in r.standard_normal(500)]
    vals[7] = None
    return pa.table({"bf16": bfloat16_array(vals)})


def case_many_pages():
    r = rng(18)
    n = 8000
    return pa.table({
        "i": pa.array(r.integers(0, 1 << 30, n), pa.int64()),
        "s": pa.array([f"row-{i}-{x}" for i, x in enumerate(r.integers(0, 1000, n))]),
        "l": rand_list(r, n, 4, pa.int32()),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(n * 8).astype(np.float32)), 8),
    })


# ------------------------------------------------ shapes (the outside check's classes)
def shape_columns(n, long=True):
    """Every type pylance writes drawn in degenerate shapes: empty values, all null,
    one repeated value, empty-or-null, mostly empty with a few values, cycling lists
    ([], ["x"], ["x", "x"]), over every offset width (32- and 64-bit) and dictionaries."""
    cols = {}
    few = lambda v, dflt: [v if i % 97 == 3 else dflt for i in range(n)]
    for name, typ, one, other in [
        ("utf8", pa.utf8(), "x", "abc"),
        ("large_utf8", pa.large_utf8(), "x", "abc"),
        ("binary", pa.binary(), b"x", b"abc"),
        ("large_binary", pa.large_binary(), b"x", b"abc"),
    ]:
        empty = one[:0]
        cols[f"{name}_empty"] = pa.array([empty] * n, typ)
        cols[f"{name}_empty_or_null"] = pa.array([None if i % 3 == 0 else empty for i in range(n)], typ)
        cols[f"{name}_mostly_empty"] = pa.array(few(other, empty), typ)
        cols[f"{name}_one_value"] = pa.array([other] * n, typ)
        cols[f"{name}_one_value_or_null"] = pa.array([None if i % 4 == 0 else other for i in range(n)], typ)
        cols[f"{name}_all_null"] = pa.nulls(n, typ)
        if long:  # wide enough for the full-zip / out-of-line scalar paths
            cols[f"{name}_long_one_value"] = pa.array([other * 100] * n, typ)
    cols["utf8_empty_nonnull"] = pa.array([""] * n, pa.utf8())
    for name, typ in [("list_utf8", pa.list_(pa.utf8())), ("large_list_utf8", pa.large_list(pa.utf8())),
                      ("list_i32", pa.list_(pa.int32())), ("large_list_i64", pa.large_list(pa.int64()))]:
        v = "x" if "utf8" in name else 7
        cyc = [[], [v], [v, v]]
        cols[f"{name}_cycle"] = pa.array([cyc[i % 3] for i in range(n)], typ)
        cols[f"{name}_cycle_null"] = pa.array([None if i % 5 == 4 else cyc[i % 3] for i in range(n)], typ)
        cols[f"{name}_one_value"] = pa.array([[v]] * n, typ)
        cols[f"{name}_one_value_or_null"] = pa.array([None if i % 3 == 0 else [v] for i in range(n)], typ)
        cols[f"{name}_empty"] = pa.array([[]] * n, typ)
        cols[f"{name}_empty_or_null"] = pa.array([None if i % 2 else [] for i in range(n)], typ)
        cols[f"{name}_item_null"] = pa.array([[None]] * n, typ)
        cols[f"{name}_all_null"] = pa.nulls(n, typ)
    cols["list_utf8_of_empty"] = pa.array([["", ""]] * n, pa.list_(pa.utf8()))
    for name, typ, v in [("i32", pa.int32(), 5), ("f64", pa.float64(), 1.5), ("bool", pa.bool_(), True), ("i8", pa.int8(), -1)]:
        cols[f"{name}_one_value"] = pa.array([v] * n, typ)
        cols[f"{name}_one_value_or_null"] = pa.array([None if i % 3 == 0 else v for i in range(n)], typ)
        cols[f"{name}_all_null"] = pa.nulls(n, typ)
    cols["fsl_one_value"] = pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0] * n, pa.float32()), 2)
    st_one = pa.StructArray.from_arrays([pa.array(["x"] * n), pa.array([1] * n, pa.int32())], names=["s", "i"])
    cols["struct_one_value"] = st_one
    cols["struct_empty_str"] = pa.StructArray.from_arrays([pa.array([""] * n), pa.array([None] * n, pa.int32())], names=["s", "i"])
    for name, vt in [("dict_utf8", pa.utf8()), ("dict_large_utf8", pa.large_utf8())]:
        base = pa.array([f"v{i % 7}" for i in range(n)], vt).dictionary_encode()
        cols[f"{name}"] = base
        cols[f"{name}_null"] = pa.array([None if i % 5 == 0 else f"v{i % 7}" for i in range(n)], vt).dictionary_encode()
        cols[f"{name}_one_value"] = pa.array(["same"] * n, vt).dictionary_encode()
        cols[f"{name}_empty"] = pa.array([""] * n, vt).dictionary_encode()
        cols[f"{name}_all_null"] = pa.array([None] * n, vt).dictionary_encode()
        cols[f"{name}_distinct"] = pa.array([f"value-{i}" for i in range(n)], vt).dictionary_encode()
    cols["dict_u8_utf8"] = pa.array([f"v{i % 7}" for i in range(n)]).dictionary_encode().cast(pa.dictionary(pa.uint8(), pa.utf8()))
    cols["dict_i64"] = pa.array([i % 9 for i in range(n)], pa.int64()).dictionary_encode()
    return cols


def case_shapes():
    return pa.table(shape_columns(1500))


def case_shapes_pages():
    """The shapes again, split over several pages per column."""
    return pa.table(shape_columns(4000, long=False))


def case_null_type():
    n = N
    return pa.table({
        "null": pa.nulls(n, pa.null()),
        "null_b": pa.nulls(n, pa.null()),
        "utf8_all_null": pa.nulls(n, pa.utf8()),
        "id": pa.array(np.arange(n)),
        "list_null": pa.array([[None] * (i % 3) for i in range(n)], pa.list_(pa.null())),
        "struct_null": pa.StructArray.from_arrays([pa.nulls(n, pa.null()), pa.array(np.arange(n), pa.int32())], names=["z", "i"]),
    })


def case_empty_file():
    return pa.table({"i": pa.array([], pa.int64()), "s": pa.array([], pa.utf8()),
                     "l": pa.array([], pa.list_(pa.utf8())), "ls": pa.array([], pa.large_utf8())})


CASES = {
    "ints": (case_ints, {}),
    "floats": (case_floats, {}),
    "bool": (case_bool, {}),
    "temporal": (case_temporal, {}),
    "decimal": (case_decimal, {}),
    "strings": (case_strings, {}),
    "big_strings": (case_big_strings, {}),
    "vectors": (case_vectors, {}),
    "lists": (case_lists, {}),
    "structs": (case_structs, {}),
    "structs_nonull": (case_structs_nonull, {}),
    "maps": (case_maps, {}),
    "fsl_structs": (lambda: case_fsl_structs()[0], {}),
    "fsl_structs_nn": (lambda: case_fsl_structs()[1], {}),
    "dictionary_type": (case_dictionary_type, {}),
    "field_metadata": (case_field_metadata, {}),
    "packed": (case_packed, {}),
    "packed_var": (case_packed_var, {}),
    "wide_vectors": (case_wide_vectors, {}),
    "long_lists": (case_long_lists, {}),
    "blob": (case_blob, {}),
    "bfloat16": (case_bfloat16, {}),
    "many_pages": (case_many_pages, {"max_page_bytes": 32 * 1024}),
    "shapes": (case_shapes, {}),
    "shapes_pages": (case_shapes_pages, {"max_page_bytes": 4 * 1024}),
    "null_type": (case_null_type, {}),
    "empty_file": (case_empty_file, {}),
}

VERSIONS = ["2.0", "2.1", "2.2"]


def round_trip(path, table, ver, opts):
    with LanceFileWriter(path, schema=table.schema, version=ver, **opts) as w:
        w.write_batch(table)
    LanceFileReader(path).read_all().to_table()


def column_error(stem, table, col, ver, opts):
    try:
        round_trip(stem + ".col.lance", table.select([col]), ver, opts)
        return None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # pyo3 panics are BaseExceptions (pylance 11 / 12 on some types)
        return str(e).splitlines()[0][:300]
    finally:
        if os.path.exists(stem + ".col.lance"):
            os.remove(stem + ".col.lance")


def column_round_trips(stem, table, col, ver, opts):
    return column_error(stem, table, col, ver, opts) is None


def main(out_root, only=None):
    major = lance.__version__.split(".")[0]
    out = os.path.join(out_root, f"pylance-{major}")
    os.makedirs(out, exist_ok=True)
    index = {"pylance": lance.__version__, "pyarrow": pa.__version__, "files": [], "refused": []}
    for name, (make, opts) in CASES.items():
        if only and name not in only:
            continue
        table = make()
        for ver in VERSIONS:
            stem = os.path.join(out, f"{name}.v{ver}")
            try:
                tbl = table
                try:
                    round_trip(stem + ".lance", tbl, ver, opts)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except BaseException:
                    # Keep the columns this pylance writes and reads back alone; name
                    # the others (one bad column must not drop a whole case).
                    bad = [c for c in tbl.schema.names if not column_round_trips(stem, tbl, c, ver, opts)]
                    if bad and len(bad) < len(tbl.schema.names):
                        for c in bad:
                            index["refused"].append({"case": name, "version": ver, "column": c, "error": column_error(stem, tbl, c, ver, opts)})
                        tbl = tbl.drop_columns(bad)
                with LanceFileWriter(stem + ".lance", schema=tbl.schema, version=ver, **opts) as w:
                    w.write_batch(tbl)
                reader = LanceFileReader(stem + ".lance")
                got = reader.read_all().to_table()
                # Arrow IPC files take one dictionary per column: several pages may
                # each carry their own, so merge them into one.
                got = got.combine_chunks() if any(c.num_chunks > 1 for c in got.columns) else got
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:  # pylance refuses (or panics on) some (type, version) pairs
                for ext in (".lance", ".arrow", ".meta.txt"):
                    if os.path.exists(stem + ext):
                        os.remove(stem + ext)
                index["refused"].append({"case": name, "version": ver, "error": str(e).splitlines()[0][:300]})
                continue
            opts_ipc = pa.ipc.IpcWriteOptions(compression="zstd")
            with pa.OSFile(stem + ".arrow", "wb") as f:
                with pa.ipc.new_file(f, got.schema, options=opts_ipc) as w:
                    w.write_table(got)
            with open(stem + ".meta.txt", "w") as f:
                f.write(str(reader.metadata()))
            index["files"].append({"case": name, "version": ver, "rows": got.num_rows,
                                   "columns": got.schema.names})
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/files", sys.argv[2:] or None)
