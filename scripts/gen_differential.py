#!/usr/bin/env python3
"""The pylance half of the differential test between pylance and Lancer.

    .venv/pylance-14/bin/python scripts/gen_differential.py OUTDIR [--seeds A-B | --seeds 3,17,42]
                                                           [--budget-seconds S]

For every seed (default 0-39; "A-B" is inclusive) it draws a random table shape, data and a
sequence of steps, runs them through pylance, and records pylance's outcome of every step and
its answer to every read of every version. A Rust test opens the datasets with Lancer and
compares every answer, replays the steps through Lancer's API (comparing outcomes and tables),
and asks pylance (scripts/check_differential.py) to read Lancer's replays.

Deterministic in the seed: the same seed with the same pylance gives the same schema, data,
steps and filters (file names and uuids differ). Drawing later steps reads the dataset pylance
wrote (its schema, its rows), so a different pylance may draw different later steps.
Runs unchanged under pylance 14, 12 and 11 (see FEATURE DETECTION below).
`--budget-seconds S`: no new seed is started once S seconds have passed (the current one
is always finished); prints how many seeds were done.

OUTPUT FORMAT (a contract with the Rust side)
=============================================
OUTDIR/index.json
    {"pylance": lance.__version__, "cases": ["case-3", ...], "seconds": <total, float>,
     "skipped_types": ["map@2.0", ...],   # type kinds pylance refused to write, "<kind>@<storage>"
     "storages": ["2.0", "2.1", "2.2"]}   # data_storage_versions this pylance accepted
OUTDIR/case-<seed>/
    ds/                      the dataset pylance wrote (every version kept)
    data/step-<i>.arrow      Arrow IPC *file* (pa.ipc.new_file) with the input table of step i
                             (create / append / merge_insert source; add_null_columns: an empty
                             file whose schema holds the new fields), exactly as handed to pylance
    expected/v<v>-scan.arrow, v<v>-f<k>.arrow, v<v>-t<k>.arrow   answers: IPC files, one batch;
                             a dictionary column gets one dictionary (pyarrow's
                             unify_dictionaries, or, when a chunk's dictionary holds a null as
                             pylance 11/12 return, decoded and re-encoded: an index to a null
                             dictionary value becomes a null index)
    case.json:
    {"seed": 17, "pylance": "14.0.2",
     "storage": "2.1",             # data_storage_version at create (from "2.0","2.1","2.2", only
                                   #   those this pylance accepts)
     "stable_row_ids": false,      # passed at create (enable_stable_row_ids, or
                                   #   enable_move_stable_row_ids on a pylance that only has that)
     "rowaddr": true,              # scans include _rowaddr (false if to_table lacks with_row_address)
     "seconds": 0.8,               # informational: time pylance took for the case
     "draw_error": {...},          # only when pylance could not read its own dataset to draw
                                   #   the next step: the history ends there
     "steps": [{<op fields>, "outcome": "ok" | {"error": "<exception class>", "message": "<first 300 chars>"},
                "version": <ds.version after the step (unchanged when it failed)>,
                # informational, not part of the replay:
                "rows": <rows in the step's data file (create/append/merge_insert)>,
                "variant": "<append/merge variant, when one was applied>"}, ...],
     "versions": [{"version": v,
                   "scan": "expected/v3-scan.arrow",   # lance.dataset(ds, version=v).to_table(
                                                       #   with_row_id=True, with_row_address=True)
                   "count": 120,                       # count_rows() (null + "count_error" if it raised)
                   "filters": [{"filter": "<sql>",
                                "rows": "expected/v3-f0.arrow" | null,  # to_table(filter=F, with_row_id=True)
                                                                        # count: count_rows(filter=F)
                                "count": 17 | null, "error": null | {"error": cls, "message": m}}
                               # "error" is to_table's; if only count_rows raised, "count" is null
                               # and "count_error" holds its error
                               , ...],
                   "takes": [{"indices": [0, 5, 119], "rows": "expected/v3-t0.arrow"}  # ds.take(indices):
                             # all columns, no row ids; 1-2 per version with rows, indices in
                             # range, mostly sorted, some unsorted, some with a repeat
                             # or "rows": null, "error": {...} when take raised
                             ]}, ...]}
    Every version 1..latest is listed. If lance.dataset(path, version=v) or its scan raises,
    the entry has "open_error" / "scan_error" {"error","message"} and "scan"/"count" null,
    no filters and no takes. If create fails there are no versions.

Steps (op fields; step 0 is always create; then 3-12 steps, appends/deletes/updates most often):
  {"op":"create","data":"data/step-0.arrow","max_rows_per_file":N}
        lance.write_dataset(t, ds, mode="create", max_rows_per_file=N,
                            data_storage_version=storage, enable_stable_row_ids=stable)
  {"op":"append","data":"data/step-i.arrow","max_rows_per_file":N}
        lance.write_dataset(t, ds, mode="append", max_rows_per_file=N)
  {"op":"delete","where":SQL}                           ds.delete(SQL)
  {"op":"update","where":SQL|null,"set":{"col":SQL}}    ds.update(set, where=SQL); ds.update(set) if null
  {"op":"merge_insert","on":["id"],"data":...,"update_all":b,"insert_all":b,
   "delete_by_source":false|true|SQL}
        b = ds.merge_insert(["id"]); when_matched_update_all() if update_all;
        when_not_matched_insert_all() if insert_all; when_not_matched_by_source_delete()
        if true / when_not_matched_by_source_delete(SQL) if a string; b.execute(t)
  {"op":"add_columns","columns":[["name",SQL], ...]}    ds.add_columns({name: SQL, ...}) (pairs: in order)
  {"op":"add_null_columns","schema":"data/step-i.arrow"} ds.add_columns(<that file's schema>)
  {"op":"drop_columns","columns":["a","s.b"]}           ds.drop_columns([...])
  {"op":"alter_columns","alterations":[{"path":"a","name":"a2"},{"path":"s.b","nullable":true},
                                       {"path":"c","data_type":"int64"}]}
        ds.alter_columns(*alterations) with data_type turned into the pyarrow type whose str()
        it is: int8..int64, uint8..uint64, float (float32), double, string, large_string
  {"op":"compact","target_rows_per_fragment":N,"materialize_deletions":b}
        ds.optimize.compact_files(target_rows_per_fragment=N, materialize_deletions=b)
  {"op":"create_scalar_index","column":C,"index_type":"BTREE"|"BITMAP"|"LABEL_LIST"|"ZONEMAP"|
   "BLOOMFILTER"|"NGRAM"}                               ds.create_scalar_index(C, index_type)
  {"op":"tag","name":"t<k>","target":V}                 ds.tags.create(name, V)
  Every step is attempted; whatever pylance raises (any exception class, including pyo3's
  PanicException) is recorded as the step's outcome, and the next step starts from the
  dataset's latest version.

Tables: `id` int64 non-nullable, unique, increasing across appends (merge_insert sources mix
existing and new ids; a few draw a duplicate id). 2-7 more columns drawn from the type kinds in
KINDS (null rate per column from {0, 0.1, 0.5, 1.0}, some constant columns, some non-nullable
fields). Append data is drawn from the dataset's current schema; 45% of appends try one of six
variants (~7.5% each; a variant the schema offers no chance for is dropped, e.g. no nullable
column to leave out): missing_nullable (a nullable column left out), reordered, null_in_non_nullable,
fsl_child_name (fixed_size_list/list child named "element" instead of "item" or vice versa),
large_string (a string column sent as large_string), wrong_type (one column of another type).
Merge sources: ~10% missing_nullable / reordered / duplicate_id.

Filters: per version, 4-10 drawn from that version's schema and rows with
random.Random("<seed>/v<v>"): comparisons both ways round, IN / NOT IN, BETWEEN, IS [NOT] NULL,
LIKE, NOT (...), AND / OR (with and without parentheses), struct paths, array_has_any /
array_has_all / array_contains / array_length for lists, bare booleans; literals taken from the
data, absent from it or at the type's edges, and ~15% of literals of a kind deliberately crossed
with the column type (pylance's refusal is then the expected answer). ~10% of filters, and ~40% of
delete / update `where`s, are simple predicates on id. About a fifth of filters are refused by
pylance 14 (mostly literals it will not convert to the column's type).

FEATURE DETECTION
=================
Detected once per run: the stable-row-id kwarg of write_dataset (enable_stable_row_ids, else
enable_move_stable_row_ids, else never drawn: stable_row_ids false); with_row_address on
to_table (else scans carry only _rowid and "rowaddr" is false); the storage versions accepted
(2.2 is drawn only if this pylance writes it); every type kind x storage version by writing a
3-row table (refused ones are never drawn for that storage: index.json "skipped_types"), and
whether a storage version takes null structs ("struct_nulls@<storage>" in skipped_types: structs
are then drawn without struct-level nulls); add_columns with a pyarrow schema (if refused,
add_null_columns is never drawn). An op or keyword that a pylance lacks at call time
(merge_insert, tags, compact, an index type) is attempted anyway and its error recorded as that
step's outcome. Measured: pylance 11, 12 and 14 have every op and keyword used here, and
with_row_address; all three skip map@2.0 and map@2.1; 12 and 14 refuse null structs on 2.0
(11 writes them, and reads them back as non-null structs); 11 and 12 panic on timestamps with
an offset time zone ("+05:30"), so timestamp_tz_offset is skipped there (named zones are
kept). The probe's panics print Rust backtraces on stderr; they are expected.
"""
import argparse
import datetime
import decimal
import inspect
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import lance

LanceDataset = sys.modules["lance.dataset"].LanceDataset

# ---------------------------------------------------------------- feature detection

WRITE_PARAMS = set(inspect.signature(lance.write_dataset).parameters)
if "enable_stable_row_ids" in WRITE_PARAMS:
    STABLE_KW = "enable_stable_row_ids"
elif "enable_move_stable_row_ids" in WRITE_PARAMS:
    STABLE_KW = "enable_move_stable_row_ids"
else:
    STABLE_KW = None
HAS_ROWADDR = "with_row_address" in set(inspect.signature(LanceDataset.to_table).parameters)
ALL_STORAGES = ["2.0", "2.1", "2.2"]

KINDS = [
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "bool", "string", "large_string", "binary",
    "large_binary", "fixed_size_binary", "date32", "date64", "timestamp", "timestamp_tz",
    "timestamp_tz_offset",
    "time32", "time64", "duration", "decimal128", "decimal256", "dictionary", "list_int32",
    "list_string", "large_list", "fixed_size_list", "struct", "nested_struct", "list_struct",
    "map", "null",
]
# Drawing weight per kind (the eight integer kinds share roughly the weight of three).
KIND_WEIGHT = {k: (0.4 if k.startswith(("int", "uint")) else 1.0) for k in KINDS}
TZS = ["UTC", "America/New_York"]  # named zones; offsets are their own kind (pylance 11/12 panic on them)
TZ_OFFSETS = ["+05:30", "-08:00"]
INDEX_TYPES = ["BTREE", "BITMAP", "LABEL_LIST", "ZONEMAP", "BLOOMFILTER", "NGRAM"]
ALTER_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float", "double", "string", "large_string"]


def type_from_str(s):
    return {"float": pa.float32(), "double": pa.float64(), "string": pa.string(),
            "large_string": pa.large_string()}.get(s) or getattr(pa, s)()


def make_type(kind, r):
    if kind.startswith(("int", "uint")):
        return getattr(pa, kind)()
    if kind in ("float16", "float32", "float64"):
        return getattr(pa, kind)()
    simple = {"bool": pa.bool_(), "string": pa.string(), "large_string": pa.large_string(),
              "binary": pa.binary(), "large_binary": pa.large_binary(),
              "date32": pa.date32(), "date64": pa.date64(), "null": pa.null(),
              "list_string": pa.list_(pa.string()), "map": pa.map_(pa.string(), pa.int32())}
    if kind in simple:
        return simple[kind]
    if kind == "fixed_size_binary":
        return pa.binary(r.choice([1, 2, 4, 16]))
    if kind == "timestamp":
        return pa.timestamp(r.choice(["s", "ms", "us", "ns"]))
    if kind == "timestamp_tz":
        return pa.timestamp(r.choice(["s", "ms", "us", "ns"]), r.choice(TZS))
    if kind == "timestamp_tz_offset":
        return pa.timestamp(r.choice(["s", "ms", "us", "ns"]), r.choice(TZ_OFFSETS))
    if kind == "time32":
        return pa.time32(r.choice(["s", "ms"]))
    if kind == "time64":
        return pa.time64(r.choice(["us", "ns"]))
    if kind == "duration":
        return pa.duration(r.choice(["s", "ms", "us", "ns"]))
    if kind == "decimal128":
        p = r.choice([r.randint(1, 9), r.randint(10, 18), r.randint(19, 38), 38])
        return pa.decimal128(p, r.randint(0, min(p, 10)))
    if kind == "decimal256":
        p = r.choice([r.randint(1, 38), r.randint(39, 76), 76])
        return pa.decimal256(p, r.randint(0, min(p, 12)))
    if kind == "dictionary":
        return pa.dictionary(r.choice([pa.int8(), pa.int16(), pa.int32()]), pa.string())
    if kind == "list_int32":
        return pa.list_(pa.field("item", pa.int32(), nullable=r.random() < 0.8))
    if kind == "large_list":
        return pa.large_list(r.choice([pa.int32(), pa.string(), pa.float64()]))
    if kind == "fixed_size_list":
        return pa.list_(pa.field("item", pa.float32(), nullable=r.random() < 0.7),
                        r.choice([1, 2, 3, 4, 8, 16]))
    if kind == "struct":
        return pa.struct([pa.field("a", pa.int32(), nullable=r.random() < 0.8),
                          pa.field("b", pa.string())])
    if kind == "nested_struct":
        return pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string()),
                          pa.field("t", pa.struct([pa.field("c", pa.int64()),
                                                   pa.field("d", pa.string())]))])
    if kind == "list_struct":
        return pa.list_(pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())]))
    raise ValueError(kind)


def err(e):
    return {"error": type(e).__name__, "message": str(e)[:300]}


def attempt(fn):
    """Runs a pylance call; returns ("ok", value) or (error dict, None). Catches pyo3 panics
    (PanicException derives from BaseException) but not Ctrl-C."""
    try:
        return "ok", fn()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - pylance's refusal is the answer
        return err(e), None


# ---------------------------------------------------------------- value generation

EPOCH = datetime.datetime(1970, 1, 1)
UNIT = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}
MIN_SEC, MAX_SEC = -62135596800, 253402300799  # 0001-01-01 00:00:00, 9999-12-31 23:59:59
DAY_MIN, DAY_MAX = -719162, 2932896
Y2020 = 1577836800
WORDS = ["", "a", "apple", "Apple", "banana", "ünïcödé", "日本語", "emoji 🙂", " padded ",
         "quote'd", "100%", "under_score", "line\nbreak", "kiwi", "mango", "grape7", "Zebra"]


def ts_range(unit):
    if unit == "ns":
        return -(2**63), 2**63 - 1
    f = UNIT[unit]
    return MIN_SEC * f, MAX_SEC * f + (f - 1)


def int_range(t):
    info = np.iinfo(t.to_pandas_dtype())
    return int(info.min), int(info.max)


def draw_ints(g, lo, hi, n, dtype):
    """n integers in [lo, hi]: a small range, a medium one, the whole range, or a mix with edges."""
    mode = int(g.integers(0, 4))
    if mode == 0:
        a, b = max(lo, -20), min(hi, 40)
    elif mode == 1:
        a, b = max(lo, -100000), min(hi, 100000)
    else:
        a, b = lo, hi
    vals = g.integers(a, b, size=n, dtype=dtype, endpoint=True)
    if mode == 3 and n:
        edges = np.array([x for x in (lo, lo + 1, -1, 0, 1, hi - 1, hi) if lo <= x <= hi], dtype=dtype)
        pick = g.random(n) < 0.3
        vals[pick] = edges[g.integers(0, len(edges), int(pick.sum()))]
    return vals


def pool_pick(g, pool, n, weights=None):
    idx = g.choice(len(pool), size=n, p=weights)
    return [pool[i] for i in idx]


def rand_token(g, lo=0, hi=10):
    k = int(g.integers(lo, hi + 1))
    return "".join(chr(c) for c in g.integers(97, 123, k))


def draw_strings(g, n):
    mode = int(g.integers(0, 4))
    if mode == 0:  # low cardinality
        pool = WORDS[: int(g.integers(1, len(WORDS) + 1))]
        return pool_pick(g, pool, n)
    if mode == 1:  # unique-ish
        start = int(g.integers(0, 1000))
        return [f"s{start + i}" for i in range(n)]
    pool = WORDS + [rand_token(g) for _ in range(100)]
    if mode == 3:
        pool += ["x" * int(g.integers(200, 5000)), "é" * 300]
    return pool_pick(g, pool, n)


def draw_bytes(g, n, k=None):
    if k is not None:
        raw = g.integers(0, 256, n * k, dtype=np.uint8).tobytes()
        if g.random() < 0.5:  # low cardinality
            pool = [raw[i * k:(i + 1) * k] for i in range(min(n, 5))] or [b"\0" * k]
            return pool_pick(g, pool, n)
        return [raw[i * k:(i + 1) * k] for i in range(n)]
    pool = [b"", b"\x00", b"\x0a\x1b", b"\xff\xfe"] + [
        g.integers(0, 256, int(g.integers(0, 12)), dtype=np.uint8).tobytes() for _ in range(50)]
    if g.random() < 0.2:
        pool.append(g.integers(0, 256, 500, dtype=np.uint8).tobytes())
    return pool_pick(g, pool, n)


def draw_decimals(g, p, s, n):
    limit = 10**p - 1
    mode = int(g.integers(0, 3))
    out = []
    for _ in range(n):
        m = mode if mode < 2 else int(g.integers(0, 4))
        if m == 0:
            v = int(g.integers(-1000, 1001))
        elif m == 1:  # near the precision limit
            v = limit - int(g.integers(0, 100))
        elif m == 2:  # any number of digits
            v = int.from_bytes(g.bytes(32), "little") % (10 ** int(g.integers(1, p + 1)))
        else:
            v = [limit, -limit, 0, 1, -1][int(g.integers(0, 5))]
        v = max(-limit, min(limit, v))
        if g.random() < 0.5:
            v = -v
        out.append(decimal.Decimal(v).scaleb(-s, decimal.Context(prec=100)))
    return out


def draw_floats(g, n, t):
    scale = [1.0, 1000.0, 1e-3, 1e30][int(g.integers(0, 4))]
    if pa.types.is_float16(t):
        scale = min(scale, 1000.0)
    vals = g.standard_normal(n) * scale
    if g.random() < 0.5:
        vals = np.round(vals, 1)
    if g.random() < 0.6 and n:
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -3.0])
        pick = g.random(n) < 0.1
        vals[pick] = specials[g.integers(0, len(specials), int(pick.sum()))]
    return vals.astype(t.to_pandas_dtype())


def mask_arr(mask):
    return None if mask is None else pa.array(mask, pa.bool_())


# Per case: False when the case's storage version refuses null structs (pylance 12+ on 2.0).
GEN_OPTS = {"struct_nulls": True}


def gen_array(g, t, n, null_rate=0.0, const=False):
    """n values of arrow type t; nulls at about null_rate (0: none). const: one repeated value."""
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_struct(t) and not GEN_OPTS["struct_nulls"]:
        null_rate = 0.0
    mask = (g.random(n) < null_rate) if null_rate > 0 else None
    if const and n > 1:
        one = gen_array(g, t, 1)
        return one.take(pa.array(np.zeros(n, np.int64), mask=mask))
    return _values(g, t, n, mask)


def child_rate(g, field):
    return (0.1 if g.random() < 0.5 else 0.0) if field.nullable else 0.0


def _values(g, t, n, mask):
    m = mask
    if pa.types.is_integer(t):
        lo, hi = int_range(t)
        return pa.array(draw_ints(g, lo, hi, n, t.to_pandas_dtype()), t, mask=m)
    if pa.types.is_floating(t):
        return pa.array(draw_floats(g, n, t), t, mask=m)
    if pa.types.is_boolean(t):
        return pa.array(g.random(n) < g.random(), t, mask=m)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or _is(t, "is_string_view"):
        return pa.array(draw_strings(g, n), pa.string(), mask=m).cast(t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array(draw_bytes(g, n, t.byte_width), t, mask=m)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or _is(t, "is_binary_view"):
        return pa.array(draw_bytes(g, n), pa.binary(), mask=m).cast(t)
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        mode = int(g.integers(0, 3))
        if mode == 0:
            days = 18262 + g.integers(-2000, 2000, n)
        else:
            days = draw_ints(g, DAY_MIN, DAY_MAX, n, np.int64)
            if mode == 2 and n:
                pick = g.random(n) < 0.3
                days[pick] = np.array([DAY_MIN, DAY_MAX, 0, -1])[g.integers(0, 4, int(pick.sum()))]
        if pa.types.is_date32(t):
            return pa.array(days.astype(np.int32), pa.int32(), mask=m).view(t)
        return pa.array(days.astype(np.int64) * 86400000, pa.int64(), mask=m).view(t)
    if pa.types.is_timestamp(t):
        lo, hi = ts_range(t.unit)
        f = UNIT[t.unit]
        mode = int(g.integers(0, 3))
        if mode == 0:  # around 2020, with sub-second parts
            v = (Y2020 + g.integers(-3 * 10**7, 3 * 10**7, n)) * f + g.integers(0, f, n)
        else:
            v = draw_ints(g, lo, hi, n, np.int64)
            if mode == 2 and n:
                pick = g.random(n) < 0.4
                v[pick] = np.array([lo, hi, 0, -1, Y2020 * f], dtype=np.int64)[
                    g.integers(0, 5, int(pick.sum()))]
        return pa.array(v.astype(np.int64), pa.int64(), mask=m).view(t)
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        hi = 86400 * UNIT[t.unit] - 1
        v = g.integers(0, hi, n, endpoint=True)
        if n and g.random() < 0.5:
            pick = g.random(n) < 0.2
            v[pick] = np.array([0, hi])[g.integers(0, 2, int(pick.sum()))]
        it = pa.int32() if pa.types.is_time32(t) else pa.int64()
        return pa.array(v.astype(it.to_pandas_dtype()), it, mask=m).view(t)
    if pa.types.is_duration(t):
        v = draw_ints(g, -(2**63), 2**63 - 1, n, np.int64)
        return pa.array(v, pa.int64(), mask=m).view(t)
    if pa.types.is_decimal(t):
        return pa.array(draw_decimals(g, t.precision, t.scale, n), t, mask=m)
    if pa.types.is_dictionary(t):
        size = [1, 3, 20, 100][int(g.integers(0, 4))]
        pool = list(dict.fromkeys(WORDS + [f"v{i}" for i in range(size)]))[:size]
        idx = g.integers(0, len(pool), n)
        values = pa.array(pool, pa.string()).cast(t.value_type)
        return pa.DictionaryArray.from_arrays(pa.array(idx, t.index_type, mask=m), values)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        maxlen = [0, 1, 3, 6][int(g.integers(0, 4))]
        lens = g.integers(0, maxlen + 1, n)
        if m is not None:
            lens[m] = 0
        offsets = np.concatenate([[0], np.cumsum(lens)])
        child = gen_array(g, t.value_type, int(offsets[-1]), child_rate(g, t.value_field))
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        ot = pa.int32() if pa.types.is_list(t) else pa.int64()
        return cls.from_arrays(pa.array(offsets, ot), child, type=t, mask=mask_arr(m))
    if pa.types.is_fixed_size_list(t):
        child = gen_array(g, t.value_type, n * t.list_size, child_rate(g, t.value_field))
        return pa.FixedSizeListArray.from_arrays(child, type=t, mask=mask_arr(m))
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        kids = [gen_array(g, f.type, n, child_rate(g, f)) for f in fields]
        if m is None:
            return pa.StructArray.from_arrays(kids, fields=fields)
        return pa.StructArray.from_arrays(kids, fields=fields, mask=mask_arr(m))
    if pa.types.is_map(t):
        lens = g.integers(0, 4, n)
        if m is not None:
            lens[m] = 0
        offsets = np.concatenate([[0], np.cumsum(lens)])
        keys = pa.array([f"k{j}" for ln in lens for j in range(ln)], t.key_type)
        items = gen_array(g, t.item_type, int(offsets[-1]), child_rate(g, t.item_field))
        return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), keys, items, type=t,
                                       mask=mask_arr(m))
    # A type this generator does not know (pylance made it): nulls, or fail loudly.
    return pa.nulls(n, t)


def _is(t, name):
    f = getattr(pa.types, name, None)
    return bool(f and f(t))


def draw_profile(r):
    return {"null_rate": r.choices([0.0, 0.1, 0.5, 1.0], [4, 4, 2, 1])[0], "const": r.random() < 0.08}


def gen_table(g, schema, ids, profiles, r):
    n = len(ids)
    arrays = []
    for f in schema:
        if f.name == "id" and pa.types.is_int64(f.type):
            arrays.append(pa.array(ids, pa.int64()))
            continue
        prof = profiles.setdefault(f.name, draw_profile(r))
        rate = prof["null_rate"] if f.nullable else 0.0
        arrays.append(gen_array(g, f.type, n, rate, prof["const"]))
    return pa.Table.from_arrays(arrays, schema=schema)


def draw_rows(r, create=False):
    k = r.choices(["zero", "one", "few", "hundreds", "thousands", "huge"],
                  [4, 8, 25, 40, 20, 1.5 if create else 0.5])[0]
    return {"zero": 0, "one": 1, "few": r.randint(2, 12), "hundreds": r.randint(50, 600),
            "thousands": r.randint(1000, 5000), "huge": r.randint(20000, 70000)}[k]


def draw_file_rows(r, n):
    """max_rows_per_file (or a compaction target) for n rows: small ones only while they
    make at most 64 files (thousands of fragments make every later read slow)."""
    return r.choice([c for c in (5, 50, 300, 1000, 1048576) if n <= 64 * c])


def new_ids(r, start, n):
    step = r.choice([1, 1, 1, 2, 7])
    return list(range(start, start + n * step, step))


# ---------------------------------------------------------------- IPC files


def has_dict(t):
    if pa.types.is_dictionary(t):
        return True
    return any(has_dict(t.field(i).type) for i in range(t.num_fields)) if t.num_fields else False


def flat_dict(col):
    """One dictionary array for a chunked dictionary column whose chunks pyarrow cannot
    unify (older pylance returns dictionaries holding a null): decoded and re-encoded, so
    an index to a null dictionary value becomes a null index."""
    vals = [c.dictionary_decode() for c in col.chunks]
    flat = pa.concat_arrays(vals) if vals else pa.array([], col.type.value_type)
    return flat.cast(col.type)


def write_ipc(path, table):
    """Arrow IPC file, one batch; dictionary columns get one dictionary."""
    if any(has_dict(f.type) for f in table.schema):
        try:
            table = table.unify_dictionaries()
        except pa.ArrowInvalid:
            for i, f in enumerate(table.schema):
                if pa.types.is_dictionary(f.type):
                    table = table.set_column(i, f, flat_dict(table.column(i)))
    table = table.combine_chunks()
    with pa.ipc.new_file(path, table.schema) as w:
        w.write_table(table)


# ---------------------------------------------------------------- literals and filters


# (category, pyarrow.types predicates), first match wins
TCATS = [("dict", ["is_dictionary"]), ("bool", ["is_boolean"]), ("int", ["is_integer"]),
         ("float", ["is_floating"]), ("decimal", ["is_decimal"]),
         ("str", ["is_string", "is_large_string", "is_string_view"]),
         ("fsb", ["is_fixed_size_binary"]),
         ("bin", ["is_binary", "is_large_binary", "is_binary_view"]),
         ("date", ["is_date"]), ("ts", ["is_timestamp"]), ("time", ["is_time"]),
         ("dur", ["is_duration"]), ("list", ["is_list", "is_large_list"]),
         ("fsl", ["is_fixed_size_list"]), ("struct", ["is_struct"]), ("map", ["is_map"]),
         ("null", ["is_null"])]


def tcat(t):
    """The kind of a type, as the literal and filter drawers group them."""
    for cat, preds in TCATS:
        if any(_is(t, p) for p in preds):
            return cat
    return "other"


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def fmt_date(days):
    d = datetime.date(1970, 1, 1) + datetime.timedelta(days=days)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def fmt_ts(v, unit, digits=None):
    """'YYYY-MM-DD HH:MM:SS[.f]' of v units after the epoch, with `digits` fraction digits
    (default: the unit's own), truncated."""
    f = UNIT[unit]
    sec, frac = divmod(v, f)
    dt = EPOCH + datetime.timedelta(seconds=sec)
    s = (f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d} "
         f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}")
    digits = DIGITS[unit] if digits is None else digits
    fs = (f"{frac:0{DIGITS[unit]}d}" if DIGITS[unit] else "").ljust(9, "0")[:digits]
    return s + ("." + fs if digits else "")


def fmt_time(v, unit):
    f = UNIT[unit]
    sec, frac = divmod(v, f)
    s = f"{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
    return s + (f".{frac:0{DIGITS[unit]}d}" if DIGITS[unit] else "")


def fmt_float(v):
    v = float(v)
    if math.isnan(v) or math.isinf(v):
        return None
    return repr(v)


def crossed_lit(r):
    """A literal of a deliberately arbitrary kind (crossed with whatever column it meets)."""
    return r.choice([
        str(r.randint(0, 100)), str(-r.randint(1, 1000)), "1.5", "-0.5", "1e3", "2.5e-3",
        "'abc'", "'5'", "'2020-01-01'", "TIMESTAMP '2020-01-01 00:00:00'",
        "TIMESTAMP(3) '2020-01-01 00:00:00.123'", "TIMESTAMP(9) '2020-01-01 00:00:00.123456789'",
        "DATE '2020-01-01'", "CAST('2020-01-01 00:00:00' AS TIMESTAMP)",
        "DECIMAL(5,2) '1.50'", "CAST('1.5' AS DECIMAL(5,2))", "true", "false", "NULL",
        "X'0a1b'", "9223372036854775807", "-9223372036854775808", "18446744073709551615",
    ])


def raw_values(arr, k, r):
    """Up to k non-null values sampled from arr, as Python values suited to lit()."""
    nn = arr.drop_null() if len(arr) else arr
    if len(nn) == 0 or k <= 0:
        return []
    sub = nn.take(pa.array([r.randrange(len(nn)) for _ in range(k)], pa.int64()))
    c = tcat(arr.type)
    if c == "dict":
        sub = sub.dictionary_decode()
    elif c in ("date", "ts", "time", "dur"):
        sub = sub.view(pa.int32() if arr.type.bit_width == 32 else pa.int64())
    return sub.to_pylist()


UNIT_NAME = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}
ARROW_NAME = {"Time32Type": "Time32", "Time64Type": "Time64"}


def lit(t, v, r):
    """A literal for value v (from raw_values) of a column of type t, in one of the natural
    spellings for that type; None when v has no literal (NaN, inf)."""
    c = tcat(t)
    if c == "int":
        return str(v)
    if c == "float":
        return fmt_float(v)
    if c == "decimal":
        s = format(v, "f")
        x = r.random()
        if x < 0.25:
            return f"DECIMAL({t.precision},{t.scale}) '{s}'"
        if x < 0.5:
            return f"CAST('{s}' AS DECIMAL({t.precision},{t.scale}))"
        return s
    if c in ("str", "dict"):
        return sql_str(v)
    if c in ("bin", "fsb"):
        return "X'" + v.hex() + "'"
    if c == "bool":
        return "true" if v else "false"
    if c == "date":
        days = v if pa.types.is_date32(t) else v // 86400000
        return f"'{fmt_date(days)}'" if r.random() < 0.08 else f"DATE '{fmt_date(days)}'"
    if c == "ts":
        digits = r.choice([None, None, None, 0, 3, 6, 9])
        s = fmt_ts(v, t.unit, digits)
        if t.tz and r.random() < 0.2:
            s += r.choice(["+00:00", "Z", "+05:30"])
        form = r.randrange(8)
        if form < 4:
            return f"TIMESTAMP '{s}'"
        if form < 6:
            p = r.choice([0, 3, 6, 9])
            return f"TIMESTAMP({p}) '{s}'"
        if form == 6:
            return f"CAST('{s}' AS TIMESTAMP)"
        return f"'{s}'"
    if c == "time":
        s = fmt_time(v, t.unit)
        x = r.random()
        if x < 0.45:
            return f"arrow_cast('{s}', '{ARROW_NAME[type(t).__name__]}({UNIT_NAME[t.unit]})')"
        if x < 0.75:
            return str(v)
        return f"TIME '{s}'" if x < 0.88 else f"'{s}'"
    if c == "dur":
        x = r.random()
        if x < 0.6:
            return f"arrow_cast({v}, 'Duration({UNIT_NAME[t.unit]})')"
        return str(v) if x < 0.85 else f"INTERVAL '{v} {UNIT_NAME[t.unit].lower()}s'"
    return None


def edge_lits(t, r):
    """Literals at the type's edges or absent from typical data."""
    c = tcat(t)
    if c == "int":
        lo, hi = int_range(t)
        return [str(lo), str(hi), str(hi - 1), "0", "-1", "1000000"]
    if c == "float":
        return ["0.0", "-0.0", "1e308", "-1e308", "3.4028235e38", "1e-45", "100.5"]
    if c == "decimal":
        lim = "9" * (t.precision - t.scale) + ("." + "9" * t.scale if t.scale else "")
        return [lim, "-" + lim, "0", "-3", "1.5", "0.01"]
    if c in ("str", "dict"):
        return ["''", "'zzz'", "'not-there'", "'Apple'", "'a'"]
    if c in ("bin", "fsb"):
        return ["X''", "X'00'", "X'ffff'", "X'0a1b'"]
    if c == "bool":
        return ["true", "false"]
    if c == "date":
        return ["DATE '0001-01-01'", "DATE '9999-12-31'", "DATE '1970-01-01'", "DATE '2020-02-29'"]
    if c == "ts":
        lo, hi = ts_range(t.unit)
        return [f"TIMESTAMP '{fmt_ts(lo, t.unit)}'", f"TIMESTAMP '{fmt_ts(hi, t.unit)}'",
                "TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP '0001-01-01 00:00:00'",
                "TIMESTAMP '9999-12-31 23:59:59.999999'", "TIMESTAMP '2262-04-11 23:47:16.854775807'",
                "TIMESTAMP '1677-09-21 00:12:43.145224192'"]
    if c == "time":
        return ["TIME '00:00:00'", "TIME '23:59:59.999999'", "'12:00:00'"]
    if c == "dur":
        return ["0", "-1", "9223372036854775807"]
    return ["NULL"]


class Ctx:
    """What filters are drawn from: the columns (with struct children as paths) of a table."""

    def __init__(self, table):
        self.table = table
        self.cols = []  # (path, type, array)
        for i, f in enumerate(table.schema):
            if f.name.startswith("_row"):
                continue
            if not table.num_rows:
                arr = pa.array([], f.type)
            elif pa.types.is_dictionary(f.type):
                arr = flat_dict(table.column(i))
            else:
                arr = table.column(i).combine_chunks()
            self._add(f.name, f.type, arr)

    def _add(self, path, t, arr):
        self.cols.append((path, t, arr))
        if pa.types.is_struct(t):
            for j in range(t.num_fields):
                self._add(f"{path}.{t.field(j).name}", t.field(j).type, arr.field(j))


def scalar_lits(r, t, arr, k):
    """k literals for column type t: mostly from its data, some absent/edge, ~25% crossed."""
    vals = raw_values(arr, k * 2, r)
    out = []
    for i in range(k):
        x = r.random()
        lv = None
        if x < 0.15:
            lv = crossed_lit(r)
        elif x < 0.3 or not vals:
            lv = r.choice(edge_lits(t, r))
        else:
            lv = lit(t, vals[i % len(vals)], r)
        if lv is None:
            lv = r.choice(edge_lits(t, r))
        out.append(lv)
    return out


OPS = ["=", "!=", "<", "<=", ">", ">=", "<>"]
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def atom(r, path, t, arr):
    c = tcat(t)
    x = r.random()
    if c in ("struct", "map", "null", "other") or x < 0.08:
        return f"{path} IS {r.choice(['', 'NOT '])}NULL"
    if c == "bool" and x < 0.45:
        return r.choice([path, f"NOT {path}", f"{path} = true", f"{path} = false",
                         f"{path} IS TRUE", f"{path} != true"])
    if c in ("list", "fsl"):
        ct = t.value_type
        kids = raw_values(arr.flatten(), 3, r) if len(arr) else []
        ls = [lit(ct, v, r) for v in kids]
        ls = [v for v in ls if v is not None] or [r.choice(edge_lits(ct, r))]
        if r.random() < 0.15:
            ls = [crossed_lit(r)]
        y = r.random()
        if c == "fsl" and y < 0.6:
            return r.choice([f"array_length({path}) = {t.list_size}", f"{path}[1] > {ls[0]}",
                             f"{path} IS NULL", f"array_contains({path}, {ls[0]})"])
        if y < 0.3:
            return f"array_has_any({path}, [{', '.join(ls)}])"
        if y < 0.45:
            return f"array_has_all({path}, [{', '.join(ls[:2])}])"
        if y < 0.7:
            return f"array_contains({path}, {ls[0]})"
        if y < 0.85:
            return f"array_length({path}) {r.choice(OPS)} {r.randint(0, 3)}"
        return f"{path} IS {r.choice(['', 'NOT '])}NULL"
    if c in ("str", "dict") and x < 0.3:
        vals = [v for v in raw_values(arr, 2, r) if isinstance(v, str)]
        v = vals[0] if vals else r.choice(WORDS)
        y = r.random()
        if y < 0.4:
            pat = v[: r.randint(0, min(3, len(v)))] + "%"
        elif y < 0.7:
            i = r.randint(0, len(v))
            pat = "%" + v[i:i + r.randint(1, 3)] + "%"
        elif y < 0.85:
            pat = v
        else:
            pat = "_" + v[1:] if v else "_"
        neg = "NOT " if r.random() < 0.2 else ""
        kw = "ILIKE" if r.random() < 0.1 else "LIKE"
        return f"{path} {neg}{kw} {sql_str(pat)}"
    y = r.random()
    if y < 0.5:
        (L,) = scalar_lits(r, t, arr, 1)
        return f"{path} {r.choice(OPS)} {L}"
    if y < 0.62:
        (L,) = scalar_lits(r, t, arr, 1)
        op = r.choice(OPS)
        return f"{L} {op} {path}"
    if y < 0.77:
        ls = scalar_lits(r, t, arr, r.randint(1, 4))
        return f"{path} {'NOT ' if r.random() < 0.35 else ''}IN ({', '.join(ls)})"
    if y < 0.9:
        a, b = scalar_lits(r, t, arr, 2)
        if r.random() < 0.7 and tcat(t) in ("int", "float"):
            try:
                if float(a) > float(b):
                    a, b = b, a
            except ValueError:
                pass
        return f"{path} {'NOT ' if r.random() < 0.15 else ''}BETWEEN {a} AND {b}"
    return f"{path} IS {r.choice(['', 'NOT '])}NULL"


def draw_filter(r, ctx, depth=0):
    x = r.random()
    if depth < 2 and x < 0.14:
        a, b = draw_filter(r, ctx, depth + 1), draw_filter(r, ctx, depth + 1)
        return f"({a}) AND ({b})" if r.random() < 0.7 else f"{a} AND {b}"
    if depth < 2 and x < 0.26:
        a, b = draw_filter(r, ctx, depth + 1), draw_filter(r, ctx, depth + 1)
        return f"({a}) OR ({b})" if r.random() < 0.7 else f"{a} OR {b}"
    if depth < 2 and x < 0.34:
        return f"NOT ({draw_filter(r, ctx, depth + 1)})"
    if not ctx.cols:
        return r.choice(["true", "false", "1 = 1"])
    path, t, arr = r.choice(ctx.cols)
    return atom(r, path, t, arr)


def id_predicate(r, ids):
    if not ids:
        return r.choice(["id > 0", "id < 0", "true"])
    a, b = sorted(r.sample(ids, 2) if len(ids) > 1 else ids * 2)
    return r.choice([
        f"id < {a}", f"id >= {b}", f"id BETWEEN {a} AND {b}", f"id % {r.randint(2, 7)} = 0",
        f"id IN ({', '.join(str(v) for v in r.sample(ids, min(len(ids), r.randint(1, 5))))})",
        f"id = {r.choice(ids)}", f"id > {max(ids)}", "id >= 0",
    ])


# ---------------------------------------------------------------- step drawing


OP_WEIGHTS = {"append": 5, "delete": 4, "update": 4, "merge_insert": 2.5, "add_columns": 1.5,
              "add_null_columns": 0.8, "drop_columns": 1.2, "alter_columns": 1.5, "compact": 1.2,
              "create_scalar_index": 1.2, "tag": 0.8}
APPEND_VARIANTS = ["missing_nullable", "reordered", "null_in_non_nullable", "fsl_child_name",
                   "large_string", "wrong_type"]


def set_exprs(r, path, t, others):
    c = tcat(t)
    if c == "int":
        opts = [f"{path} + 1", f"{path} * 2", "0", "-1", "NULL", "'7'", "1.5", f"{path} - {path}"]
    elif c == "float":
        opts = [f"{path} * 1.5", "0.0", "-0.0", "NULL", "1e10", f"{path} + 1", "'x'"]
    elif c == "decimal":
        opts = [f"{path} + 1", "0", "NULL", "1.5", f"{path} * 2", "-3"]
    elif c == "str":
        opts = [f"upper({path})", "'updated'", f"concat({path}, '!')", "''", "NULL", "42"]
    elif c == "dict":
        opts = ["'updated'", "NULL", path, "'a'", "7"]
    elif c == "bool":
        opts = [f"NOT {path}", "true", "false", "NULL", "1"]
    elif c == "date":
        opts = ["DATE '2000-01-01'", "'2001-02-03'", "NULL", path, "DATE '9999-12-31'"]
    elif c == "ts":
        opts = ["TIMESTAMP '2000-01-01 00:00:00'", "NULL", path, "'2001-02-03 04:05:06'",
                "TIMESTAMP '2000-01-01 00:00:00.123456789'"]
    else:
        opts = ["NULL", path]
    opts += [o for o in others if o != path][:1]
    return r.choice(opts)


def top_fields(schema):
    return [f for f in schema if f.name != "id"]


def nested_paths(schema):
    out = []

    def walk(prefix, t):
        for j in range(t.num_fields):
            f = t.field(j)
            p = f"{prefix}.{f.name}"
            out.append((p, f))
            if pa.types.is_struct(f.type):
                walk(p, f.type)

    for f in schema:
        if pa.types.is_struct(f.type):
            walk(f.name, f.type)
    return out


def swap_fsl_child(t):
    name = "item" if t.value_field.name != "item" else "element"
    vf = t.value_field.with_name(name)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(vf, t.list_size)
    return pa.large_list(vf) if pa.types.is_large_list(t) else pa.list_(vf)


def relabel(arr, t):
    """The same values under type t (only the list child's name differs)."""
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_fixed_size_list(t):
        return pa.FixedSizeListArray.from_arrays(arr.values, type=t, mask=mask)
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    return cls.from_arrays(arr.offsets, arr.values, type=t, mask=mask)


def apply_variant(r, g, table, variant):
    """Bends a table that fits the schema into one of the deliberate misfits; returns the new
    table and the variant actually applied (None when the schema offers no chance)."""
    fields = list(table.schema)
    others = [i for i, f in enumerate(fields) if f.name != "id"]
    if variant == "missing_nullable":
        cands = [i for i in others if fields[i].nullable]
        if cands:
            return table.remove_column(r.choice(cands)), variant
    elif variant == "reordered":
        if len(fields) > 1:
            order = list(range(len(fields)))
            while order == list(range(len(fields))):
                r.shuffle(order)
            return table.select(order), variant
    elif variant == "null_in_non_nullable":
        cands = [i for i in others if not fields[i].nullable] or [
            i for i, f in enumerate(fields) if f.name == "id"]
        if cands and table.num_rows:
            i = r.choice(cands)
            f = fields[i]
            col = table.column(i).combine_chunks()
            mask = g.random(table.num_rows) < 0.3
            mask[0] = True
            newcol = col.take(pa.array(np.arange(len(col)), mask=mask))
            nf = f.with_nullable(r.random() < 0.5)
            return table.set_column(i, nf, newcol), variant
    elif variant == "fsl_child_name":
        cands = [i for i in others if tcat(fields[i].type) in ("fsl",)] or [
            i for i in others if tcat(fields[i].type) == "list"]
        if cands:
            i = r.choice(cands)
            nt = swap_fsl_child(fields[i].type)
            col = relabel(table.column(i).combine_chunks(), nt)
            return table.set_column(i, fields[i].with_type(nt), col), variant
    elif variant == "large_string":
        cands = [i for i in others if pa.types.is_string(fields[i].type)]
        if cands:
            i = r.choice(cands)
            return table.set_column(i, fields[i].with_type(pa.large_string()),
                                    table.column(i).cast(pa.large_string())), variant
    elif variant == "wrong_type":
        if others:
            i = r.choice(others)
            f = fields[i]
            n = table.num_rows
            c = tcat(f.type)
            if c == "int" and r.random() < 0.5:
                nt = pa.int64() if not pa.types.is_int64(f.type) else pa.int32()
                col = pa.array(g.integers(0, 100, n), nt)
            elif c in ("str", "dict"):
                nt, col = pa.int64(), pa.array(g.integers(0, 100, n), pa.int64())
            else:
                nt, col = pa.string(), pa.array([f"w{j}" for j in range(n)], pa.string())
            return table.set_column(i, pa.field(f.name, nt, f.nullable), col), variant
    return table, None


def fitting_index_columns(schema, itype):
    out = []
    for p, t in [(f.name, f.type) for f in schema] + [(p, f.type) for p, f in nested_paths(schema)]:
        c = tcat(t)
        ok = {
            "BTREE": c in ("int", "float", "str", "date", "ts", "bool", "decimal", "bin"),
            "BITMAP": c in ("int", "str", "bool", "dict"),
            "LABEL_LIST": c == "list" and tcat(t.value_type) in ("int", "str"),
            "ZONEMAP": c in ("int", "float", "date", "ts"),
            "BLOOMFILTER": c in ("int", "str", "float"),
            "NGRAM": c == "str",
        }[itype]
        if ok:
            out.append(p)
    return out


class Case:
    def __init__(self, seed, root, storages, skipped, null_cols_ok):
        # skipped: "<kind>@<storage>" never drawn; "struct_nulls@<storage>": structs
        # there are drawn without struct-level nulls.
        self.seed = seed
        self.root = root
        self.path = os.path.join(root, "ds")
        self.r = random.Random(seed)
        self.g = np.random.default_rng(seed)
        self.storages = storages
        self.skipped = skipped
        self.null_cols_ok = null_cols_ok
        self.profiles = {}
        self.next_id = 0
        self.counter = 0
        self.tags = 0
        self.steps = []
        self.draw_error = None
        os.makedirs(os.path.join(root, "data"))
        os.makedirs(os.path.join(root, "expected"))

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def data_file(self, i, table):
        rel = f"data/step-{i}.arrow"
        write_ipc(os.path.join(self.root, rel), table)
        return rel

    def current(self):
        ok, ds = attempt(lambda: lance.dataset(self.path))
        return ds if ok == "ok" else None

    def cur_ids(self, ds):
        if ds is None or "id" not in ds.schema.names:
            return []
        return ds.to_table(columns=["id"]).column("id").to_pylist()

    # --------------------------------------------------------- run
    def run(self):
        r = self.r
        self.storage = r.choice(self.storages)
        self.stable = STABLE_KW is not None and r.random() < 0.25
        GEN_OPTS["struct_nulls"] = f"struct_nulls@{self.storage}" not in self.skipped
        ok_kinds = [k for k in KINDS if f"{k}@{self.storage}" not in self.skipped]
        fields = [pa.field("id", pa.int64(), nullable=False)]
        for k in range(r.randint(2, 7)):
            kind = r.choices(ok_kinds, [KIND_WEIGHT[x] for x in ok_kinds])[0]
            t = make_type(kind, r)
            nullable = pa.types.is_null(t) or r.random() > 0.15
            fields.append(pa.field(f"c{k}", t, nullable))
            self.profiles[f"c{k}"] = draw_profile(r)
        schema = pa.schema(fields)
        n = draw_rows(r, create=True)
        ids = new_ids(r, self.next_id, n)
        self.next_id = (ids[-1] + 1) if ids else self.next_id
        table = gen_table(self.g, schema, ids, self.profiles, r)
        mrpf = draw_file_rows(r, n)
        step = {"op": "create", "data": self.data_file(0, table), "max_rows_per_file": mrpf,
                "rows": n}
        kw = {"mode": "create", "max_rows_per_file": mrpf, "data_storage_version": self.storage}
        if STABLE_KW:
            kw[STABLE_KW] = self.stable
        outcome, _ = attempt(lambda: lance.write_dataset(table, self.path, **kw))
        self.finish(step, outcome)
        if outcome != "ok":
            return
        for i in range(1, r.randint(3, 12) + 1):
            ds = self.current()
            ops = list(OP_WEIGHTS)
            weights = [OP_WEIGHTS[o] if (o != "add_null_columns" or self.null_cols_ok) else 0 for o in ops]
            op = r.choices(ops, weights)[0]
            try:
                step, fn = getattr(self, "draw_" + op)(i, ds)
            except Exception as e:  # noqa: BLE001 - pylance cannot read its own dataset
                # (pylance 11 on some dictionary<int8> pages): the history ends here; the
                # versions are still read (and their errors recorded) below
                self.draw_error = {"error": type(e).__name__, "message": str(e)[:300]}
                break
            outcome, _ = attempt(fn)
            self.finish(step, outcome)

    def finish(self, step, outcome):
        ds = self.current()
        step["outcome"] = outcome
        step["version"] = ds.version if ds is not None else None
        self.steps.append(step)

    # --------------------------------------------------------- op drawers
    def draw_append(self, i, ds):
        r = self.r
        n = draw_rows(r)
        ids = new_ids(r, self.next_id, n)
        self.next_id = (ids[-1] + 1) if ids else self.next_id
        table = gen_table(self.g, ds.schema, ids, self.profiles, r)
        variant = None
        if r.random() < 0.45:
            table, variant = apply_variant(r, self.g, table, r.choice(APPEND_VARIANTS))
        mrpf = draw_file_rows(r, n)
        step = {"op": "append", "data": self.data_file(i, table), "max_rows_per_file": mrpf,
                "rows": n}
        if variant:
            step["variant"] = variant
        return step, lambda: lance.write_dataset(table, self.path, mode="append",
                                                 max_rows_per_file=mrpf)

    def where(self, ds):
        r = self.r
        if r.random() < 0.4:
            return id_predicate(r, self.cur_ids(ds))
        return draw_filter(r, Ctx(ds.to_table()))

    def draw_delete(self, i, ds):
        w = self.where(ds)
        return {"op": "delete", "where": w}, lambda: ds.delete(w)

    def draw_update(self, i, ds):
        r = self.r
        w = None if r.random() < 0.15 else self.where(ds)
        fields = top_fields(ds.schema)
        names = [f.name for f in fields]
        sets = {}
        if fields:
            for f in r.sample(fields, min(len(fields), r.choice([1, 1, 2]))):
                sets[f.name] = set_exprs(r, f.name, f.type, names)
        if r.random() < 0.05 or not sets:
            sets["nope"] = "1"
        return ({"op": "update", "where": w, "set": sets},
                lambda: ds.update(sets, where=w) if w is not None else ds.update(sets))

    def draw_merge_insert(self, i, ds):
        r = self.r
        have = self.cur_ids(ds)
        k_old = r.randint(0, min(len(have), r.choice([1, 5, 50, 300])))
        k_new = r.choice([0, 1, r.randint(2, 10), r.randint(10, 400)])
        ids = r.sample(have, k_old) + new_ids(r, self.next_id, k_new)
        if k_new:
            self.next_id = max(ids) + 1
        variant = None
        if ids and r.random() < 0.04:
            ids.append(r.choice(ids))
            variant = "duplicate_id"
        if r.random() < 0.5:
            ids.sort()
        table = gen_table(self.g, ds.schema, ids, self.profiles, r)
        if variant is None and r.random() < 0.1:
            table, variant = apply_variant(r, self.g, table, r.choice(["missing_nullable", "reordered"]))
        upd, ins = r.random() < 0.75, r.random() < 0.75
        x = r.random()
        dbs = False if x < 0.7 else (True if x < 0.8 else id_predicate(r, have))
        step = {"op": "merge_insert", "on": ["id"], "data": self.data_file(i, table),
                "update_all": upd, "insert_all": ins, "delete_by_source": dbs, "rows": len(ids)}
        if variant:
            step["variant"] = variant

        def run():
            b = ds.merge_insert(["id"])
            if upd:
                b = b.when_matched_update_all()
            if ins:
                b = b.when_not_matched_insert_all()
            if dbs is True:
                b = b.when_not_matched_by_source_delete()
            elif dbs:
                b = b.when_not_matched_by_source_delete(dbs)
            return b.execute(table)

        return step, run

    def draw_add_columns(self, i, ds):
        r = self.r
        schema = ds.schema
        exprs = ["id * 2", "'const'", "42", "CAST(id AS string)", "id > 5", "1.5", "NULL",
                 "CAST(NULL AS int)", "id % 3 = 0", "-id", "CAST(id AS double) / 3"]
        for f in top_fields(schema):
            c = tcat(f.type)
            if c in ("int", "float", "decimal"):
                exprs += [f"{f.name} + 1", f"{f.name} * 2"]
            elif c == "str":
                exprs += [f"upper({f.name})", f"concat({f.name}, 'x')"]
            elif c == "bool":
                exprs.append(f"NOT {f.name}")
            exprs.append(f.name)
        for p, f in nested_paths(schema):
            if tcat(f.type) == "int":
                exprs.append(f"{p} * 2")
        cols = {}
        for _ in range(r.choice([1, 1, 2])):
            name = self.fresh("x")
            if r.random() < 0.05 and top_fields(schema):
                name = r.choice(top_fields(schema)).name
            cols[name] = r.choice(exprs)
        return ({"op": "add_columns", "columns": [[k, v] for k, v in cols.items()]},
                lambda: ds.add_columns(cols))

    def draw_add_null_columns(self, i, ds):
        r = self.r
        types = [pa.int32(), pa.int64(), pa.float64(), pa.string(), pa.bool_(), pa.date32(),
                 pa.timestamp("us"), pa.list_(pa.int32()), pa.large_string(), pa.binary(),
                 pa.decimal128(10, 2), pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())])]
        fields = [pa.field(self.fresh("n"), r.choice(types), nullable=True)
                  for _ in range(r.choice([1, 1, 2]))]
        schema = pa.schema(fields)
        rel = self.data_file(i, schema.empty_table())
        return {"op": "add_null_columns", "schema": rel}, lambda: ds.add_columns(schema)

    def draw_drop_columns(self, i, ds):
        r = self.r
        cands = [f.name for f in top_fields(ds.schema)] + [p for p, _ in nested_paths(ds.schema)]
        cols = r.sample(cands, min(len(cands), r.choice([1, 1, 2]))) if cands else []
        if r.random() < 0.05 or not cols:
            cols.append("nope")
        return {"op": "drop_columns", "columns": cols}, lambda: ds.drop_columns(cols)

    def draw_alter_columns(self, i, ds):
        r = self.r
        schema = ds.schema
        tops = top_fields(schema)
        paths = [(f.name, f) for f in tops] + nested_paths(schema)
        alts = []
        used = set()
        for _ in range(r.choice([1, 1, 2])):
            if not paths:
                break
            kind = r.choice(["name", "name", "nullable", "data_type", "data_type"])
            if kind == "data_type":
                simple = [(f.name, f) for f in tops if tcat(f.type) in ("int", "float", "str")]
                if not simple:
                    kind = "name"
                else:
                    p, f = r.choice(simple)
            if kind != "data_type":
                p, f = r.choice(paths)
            if p in used:
                continue
            used.add(p)
            if kind == "name":
                new = self.fresh("r") if r.random() > 0.08 else r.choice([x.name for x in tops] + ["id"])
                alts.append({"path": p, "name": new})
            elif kind == "nullable":
                alts.append({"path": p, "nullable": r.random() < 0.8})
            else:
                widen = {"int8": "int16", "int16": "int32", "int32": "int64", "uint8": "uint16",
                         "uint16": "uint32", "uint32": "uint64", "float": "double",
                         "string": "large_string", "halffloat": "float"}
                cur = str(f.type)
                target = widen.get(cur) if r.random() < 0.5 else None
                alts.append({"path": p, "data_type": target or r.choice(ALTER_TYPES)})
        if not alts or r.random() < 0.03:
            alts.append({"path": "nope", "name": "nope2"})

        def run():
            conv = []
            for a in alts:
                a2 = dict(a)
                if "data_type" in a2:
                    a2["data_type"] = type_from_str(a2["data_type"])
                conv.append(a2)
            return ds.alter_columns(*conv)

        step = {"op": "alter_columns", "alterations": alts}
        return step, self._track_renames(alts, run)

    def _track_renames(self, alts, fn):
        def run():
            out = fn()
            for a in alts:
                if "name" in a and a["path"] in self.profiles:
                    self.profiles[a["name"]] = self.profiles.pop(a["path"])
            return out
        return run

    def draw_compact(self, i, ds):
        r = self.r
        n = r.choice([c for c in (10, 100, 1000, 1048576) if ds.count_rows() <= 64 * c])
        mat = r.random() < 0.5
        step = {"op": "compact", "target_rows_per_fragment": n, "materialize_deletions": mat}
        return step, lambda: ds.optimize.compact_files(target_rows_per_fragment=n,
                                                        materialize_deletions=mat)

    def draw_create_scalar_index(self, i, ds):
        r = self.r
        itype = r.choice(INDEX_TYPES)
        fit = fitting_index_columns(ds.schema, itype)
        if fit and r.random() < 0.85:
            col = r.choice(fit)
        else:
            col = r.choice([f.name for f in ds.schema])
        step = {"op": "create_scalar_index", "column": col, "index_type": itype}
        return step, lambda: ds.create_scalar_index(col, itype)

    def draw_tag(self, i, ds):
        r = self.r
        if self.tags and r.random() < 0.1:
            name = f"t{r.randint(1, self.tags)}"
        else:
            self.tags += 1
            name = f"t{self.tags}"
        v = r.randint(1, ds.version) if r.random() < 0.92 else ds.version + r.randint(1, 5)
        return {"op": "tag", "name": name, "target": v}, lambda: ds.tags.create(name, v)

    # --------------------------------------------------------- answers
    def answers(self):
        versions = []
        latest = self.current()
        if latest is None:
            return versions
        for v in range(1, latest.version + 1):
            versions.append(self.version_answers(v))
        return versions

    def version_answers(self, v):
        r = random.Random(f"{self.seed}/v{v}")
        ent = {"version": v, "scan": None, "count": None, "filters": [], "takes": []}
        ok, ds = attempt(lambda: lance.dataset(self.path, version=v))
        if ok != "ok":
            ent["open_error"] = ok
            return ent
        kw = {"with_row_id": True}
        if HAS_ROWADDR:
            kw["with_row_address"] = True
        ok, scan = attempt(lambda: ds.to_table(**kw))
        if ok != "ok":
            ent["scan_error"] = ok
            return ent
        rel = f"expected/v{v}-scan.arrow"
        write_ipc(os.path.join(self.root, rel), scan)
        ent["scan"] = rel
        ok, cnt = attempt(ds.count_rows)
        ent["count"] = cnt if ok == "ok" else None
        if ok != "ok":
            ent["count_error"] = ok
        ctx = Ctx(scan)
        ids = ctx.table.column("id").to_pylist() if "id" in scan.schema.names else []
        drawn = [draw_filter(r, ctx) if r.random() > 0.1 else id_predicate(r, ids)
                 for _ in range(r.randint(4, 10))]
        # crafted cases (gen_differential_classes.py) add filters of their own
        for k, f in enumerate(drawn + list(getattr(self, "fixed_filters", []))):
            fe = {"filter": f, "rows": None, "count": None, "error": None}
            ok, rows = attempt(lambda: ds.to_table(filter=f, with_row_id=True))
            if ok == "ok":
                rel = f"expected/v{v}-f{k}.arrow"
                write_ipc(os.path.join(self.root, rel), rows)
                fe["rows"] = rel
            else:
                fe["error"] = ok
            ok, c = attempt(lambda: ds.count_rows(filter=f))
            if ok == "ok":
                fe["count"] = c
            elif fe["error"] is None:
                fe["count_error"] = ok
            ent["filters"].append(fe)
        n = scan.num_rows
        if n > 0:
            for k in range(r.randint(1, 2)):
                m = r.randint(1, min(n, 12))
                idx = r.sample(range(n), m)
                x = r.random()
                if x < 0.7:
                    idx.sort()
                elif x < 0.8:
                    idx.append(idx[0])
                te = {"indices": idx, "rows": None}
                ok, rows = attempt(lambda: ds.take(idx))
                if ok == "ok":
                    rel = f"expected/v{v}-t{k}.arrow"
                    write_ipc(os.path.join(self.root, rel), rows)
                    te["rows"] = rel
                else:
                    te["error"] = ok
                ent["takes"].append(te)
        return ent

    def write(self, started):
        doc = {"seed": self.seed, "pylance": lance.__version__, "storage": self.storage,
               "stable_row_ids": self.stable, "rowaddr": HAS_ROWADDR, "steps": self.steps,
               "versions": self.answers()}
        doc["seconds"] = round(time.time() - started, 3)
        if self.draw_error:
            doc["draw_error"] = self.draw_error
        with open(os.path.join(self.root, "case.json"), "w") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)


# ---------------------------------------------------------------- probing and main


def probe(tmp):
    """Storage versions and type kinds this pylance writes, and add_columns(schema)."""
    storages = []
    for sv in ALL_STORAGES:
        ok, _ = attempt(lambda: lance.write_dataset(
            pa.table({"id": pa.array([1], pa.int64())}), os.path.join(tmp, "s" + sv),
            data_storage_version=sv))
        if ok == "ok":
            storages.append(sv)
    skipped = []
    g = np.random.default_rng(0)
    st = pa.struct([pa.field("a", pa.int32())])
    for sv in storages:
        tbl = pa.table({"c": pa.StructArray.from_arrays([pa.array([1, 2], pa.int32())], fields=list(st),
                                                        mask=pa.array([False, True]))})
        ok, _ = attempt(lambda: lance.write_dataset(tbl, os.path.join(tmp, f"sn-{sv}"),
                                                    data_storage_version=sv))
        if ok != "ok":
            skipped.append(f"struct_nulls@{sv}")
    for kind in KINDS:
        t = make_type(kind, random.Random(0))
        for sv in storages:
            GEN_OPTS["struct_nulls"] = f"struct_nulls@{sv}" not in skipped
            tbl = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "c": gen_array(g, t, 3, 0.3)})
            ok, _ = attempt(lambda: lance.write_dataset(tbl, os.path.join(tmp, f"k-{kind}-{sv}"),
                                                        data_storage_version=sv))
            if ok != "ok":
                skipped.append(f"{kind}@{sv}")
    p = os.path.join(tmp, "nullcols")
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), p)
    ok, _ = attempt(lambda: lance.dataset(p).add_columns(pa.schema([pa.field("z", pa.int32())])))
    return storages, skipped, ok == "ok"


def parse_seeds(s):
    out = []
    for part in s.split(","):
        part = part.strip()
        if "-" in part[1:]:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return list(dict.fromkeys(out))  # each seed once, in the order given


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--seeds", default="0-39")
    ap.add_argument("--budget-seconds", type=float, default=None)
    a = ap.parse_args()
    t0 = time.time()
    os.makedirs(a.outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gen-diff-probe-")
    try:
        storages, skipped, null_cols_ok = probe(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    seeds = parse_seeds(a.seeds)
    done = []
    for seed in seeds:
        if a.budget_seconds is not None and time.time() - t0 > a.budget_seconds:
            break
        root = os.path.join(a.outdir, f"case-{seed}")
        shutil.rmtree(root, ignore_errors=True)
        t1 = time.time()
        case = Case(seed, root, storages, skipped, null_cols_ok)
        case.run()
        case.write(t1)
        done.append(f"case-{seed}")
    secs = round(time.time() - t0, 3)
    with open(os.path.join(a.outdir, "index.json"), "w") as f:
        json.dump({"pylance": lance.__version__, "cases": done, "seconds": secs,
                   "skipped_types": skipped, "storages": storages}, f, indent=1)
    print(f"gen_differential: {len(done)} of {len(seeds)} seeds done in {secs:.1f} s "
          f"(pylance {lance.__version__})")


if __name__ == "__main__":
    main()
