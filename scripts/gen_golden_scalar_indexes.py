#!/usr/bin/env python3
"""Writes golden scalar-index datasets and pylance's filter answers for them.

    .venv/pylance-14/bin/python scripts/gen_golden_scalar_indexes.py DIR [CASE ...]

writes into DIR/pylance-<major version>. Run it once per pylance venv (11, 12, 14).
Format notes: docs/scalar-index-format.md. For every case it builds a small dataset
with one scalar index and records what pylance answers:

  <out>/<case>/          the dataset: 300 rows in 2 fragments, `id % 10 = 3` deleted
                         before the index is built, `id % 17 = 5` deleted after it,
                         then 40 rows appended and left unindexed (delta cases first
                         append 30 rows and index them as a delta segment; the
                         "merged" case folds them into one segment instead)
  <out>/<case>.json      the case description, the decoded manifest index entries
                         (IndexMetadata), a decoded summary of every file under
                         _indices/<uuid>/ (schema, metadata, global buffers, rows with
                         bitmaps / posting lists expanded to row addresses), pylance's
                         index statistics and, per filter: the ids and _rowid values
                         pylance returns, the ids of the same scan with
                         use_scalar_index=False, whether the plan has a
                         ScalarIndexQuery node, the verbose explain_plan text and the
                         indexed scan's rows_scanned (from analyze_plan: equal to the
                         answer size when the index answered exactly)
  <out>/index.json       pylance version, cases, status (ok / failed with the error
                         text) and every filter whose indexed answer differs from the
                         plain scan (pylance bugs, see the doc)

Every value is deterministic; the datasets are the same for every pylance version
(except for the files' format version), so answers can be compared across versions.
A failure in one case is recorded and the run continues. Runtime: ~3 s per version
(2 cores), ~2.3 MB of output.
"""
import datetime as dt
import hashlib
import json
import math
import os
import re
import shutil
import struct
import sys
import traceback
import uuid as uuid_mod

import pyarrow as pa
import lance
from lance.file import LanceFileReader

try:
    from lance.indices import IndexConfig
except ImportError:  # pragma: no cover - all pinned versions have it
    IndexConfig = None

N_ROWS = 300          # two fragments of 150
N_DELTA = 30          # rows appended and indexed as a delta segment (delta cases)
N_APPEND = 40         # rows appended last, left unindexed
ROWS_PER_FILE = 150


# ---------------------------------------------------------------- data

WORDS = ["apple", "Apple", "banana", "bandana", "cherry", "", "Äpfel", "apple pie",
         "zebra", "Straße", "日本", "a-b", "Zulu", "mango"]
TEXTS = ["Hello World", "hello there", "naïve café", "Straße und STRASSE", "a-b c",
         "日本語テキスト", "foo%bar", "The quick brown fox", "HELLO wörld", "x.y.z 42",
         "ﬁnance Ærø", "abcabc"]
LABELS = ["a", "b", "c", "d", "e"]


def value(typ, k):
    """Value of row `id = k` for a column of the given kind (deterministic)."""
    if typ == "int64":
        return None if k % 11 == 0 else (k * 7) % 53 - 5
    if typ == "float64":
        if k % 13 == 0:
            return None
        if k % 17 == 0:
            return float("nan")
        if k % 19 == 0:
            return -0.0
        if k % 37 == 1:
            return float("inf")
        if k % 41 == 2:
            return float("-inf")
        return ((k * 3) % 29) * 0.5 - 4.0
    if typ == "utf8":
        return None if k % 9 == 0 else WORDS[(k * 5) % len(WORDS)]
    if typ == "text":
        return None if k % 9 == 0 else f"{TEXTS[(k * 7) % len(TEXTS)]} #{k % 23}"
    if typ == "date32":
        return None if k % 14 == 0 else dt.date(2024, 1, 1) + dt.timedelta(days=(k * 5) % 60)
    if typ == "timestamp":
        return None if k % 15 == 0 else dt.datetime(2024, 1, 1) + dt.timedelta(hours=(k * 7) % 100)
    if typ == "bool":
        return None if k % 10 == 0 else k % 3 == 0
    if typ == "list_utf8":
        if k % 12 == 0:
            return None
        if k % 7 == 0:
            return []
        out = [LABELS[k % 5], LABELS[(k * 3) % 4]]
        if k % 29 == 0:
            out.append(None)
        return out
    if typ == "list_int64":
        if k % 12 == 0:
            return None
        if k % 7 == 0:
            return []
        return [k % 4, (k * 3) % 5 + 10]
    raise ValueError(typ)


ARROW_TYPES = {
    "int64": pa.int64(), "float64": pa.float64(), "utf8": pa.string(), "text": pa.string(),
    "date32": pa.date32(), "timestamp": pa.timestamp("us"), "bool": pa.bool_(),
    "list_utf8": pa.list_(pa.string()), "list_int64": pa.list_(pa.int64()),
}


def table(typ, start, n):
    ks = range(start, start + n)
    return pa.table({
        "id": pa.array(ks, pa.int64()),
        "v": pa.array([value(typ, k) for k in ks], ARROW_TYPES[typ]),
    })


# ---------------------------------------------------------------- filters (column `v`)

FILTERS = {
    "int64": ["v = 7", "v != 7", "NOT (v = 7)", "v < 0", "v >= 40", "v BETWEEN 10 AND 20",
              "v IN (1, 3, 99)", "v IS NULL", "v IS NOT NULL", "v = 7 OR v = 8",
              "v > 10 AND v < 15", "v = 7 AND id > 100", "v = 7 OR id < 3", "v = -1000",
              "v > 47"],
    "float64": ["v = 0.0", "v = -0.0", "v > 1.5", "v < 0", "v >= 0", "v = 'NaN'::double",
                "v > 1e308", "v = CAST('inf' AS DOUBLE)", "v = CAST('-inf' AS DOUBLE)",
                "v IN (1.5, 2.5)", "v IS NULL", "v IS NOT NULL", "isnan(v)",
                "v BETWEEN -1 AND 1", "v != 1.5"],
    "utf8": ["v = 'apple'", "v = 'Apple'", "v > 'm'", "v < 'b'", "v IN ('banana', 'zebra', 'nope')",
             "v IS NULL", "v IS NOT NULL", "v = ''", "v != 'apple'", "v = 'Äpfel'",
             "v LIKE 'ap%'", "starts_with(v, 'ban')", "v LIKE '%an%'", "v LIKE 'a_ple'",
             "v BETWEEN 'a' AND 'c'"],
    "date32": ["v = DATE '2024-01-06'", "v > DATE '2024-02-15'", "v < DATE '2024-01-03'",
               "v BETWEEN DATE '2024-01-10' AND DATE '2024-01-20'",
               "v IN (DATE '2024-01-01', DATE '2024-02-29')", "v IS NULL", "v IS NOT NULL",
               "v != DATE '2024-01-06'"],
    "timestamp": ["v = TIMESTAMP '2024-01-01 07:00:00'", "v > TIMESTAMP '2024-01-04 12:00:00'",
                  "v < TIMESTAMP '2024-01-01 05:00:00'",
                  "v BETWEEN TIMESTAMP '2024-01-02 00:00:00' AND TIMESTAMP '2024-01-02 06:00:00'",
                  "v IS NULL", "v IS NOT NULL", "v != TIMESTAMP '2024-01-01 07:00:00'"],
    "bool": ["v = true", "v = false", "v", "NOT v", "v IS NULL", "v IS NOT NULL", "v != true",
             "v IS TRUE", "v IS NOT FALSE"],
    "list_utf8": ["array_has_any(v, ['a', 'b'])", "array_has_all(v, ['a', 'b'])",
                  "array_has_all(v, ['a'])", "array_contains(v, 'c')", "array_has(v, 'e')",
                  "array_has_any(v, ['zz'])", "NOT array_has_any(v, ['a'])", "v IS NULL",
                  "v IS NOT NULL", "array_length(v) = 0"],
    "list_int64": ["array_has_any(v, [1, 12])", "array_has_all(v, [1, 12])", "array_contains(v, 3)",
                   "array_has(v, 14)", "NOT array_has_any(v, [0])", "v IS NULL"],
    "text": ["contains(v, 'ell')", "contains(v, 'Hello')", "contains(v, 'hello')",
             "contains(v, 'a-b')", "contains(v, 'ab')", "contains(v, 'xyz')",
             "contains(v, 'Straße')", "contains(v, 'STRASSE')", "contains(v, 'naïve')",
             "contains(v, '日本語')", "contains(v, 'finance')", "contains(v, 'wörld #1')",
             "v LIKE '%orl%'", "v LIKE 'Hel%'", "v LIKE '%fox #%'", "v LIKE '%o%b%'",
             "regexp_like(v, 'w.rld')", "regexp_like(v, 'World|quick')", "v IS NULL",
             "v = 'abcabc #5'"],
}


# ---------------------------------------------------------------- cases

def cfg(kind, params):
    return IndexConfig(index_type=kind.lower(), parameters=params)


# name, column kind, index type, create kwargs / IndexConfig params, extra
CASES = [
    ("btree_int64", "int64", "BTREE", {}, {}),
    ("btree_int64_pages16", "int64", "BTREE", {"zone_size": 16}, {}),
    ("btree_float64", "float64", "BTREE", {}, {}),
    ("btree_utf8", "utf8", "BTREE", {}, {}),
    ("btree_utf8_file21", "utf8", "BTREE", {}, {"storage": "2.1"}),
    ("btree_date32", "date32", "BTREE", {}, {}),
    ("btree_timestamp", "timestamp", "BTREE", {}, {}),
    ("btree_bool", "bool", "BTREE", {}, {}),
    ("btree_int64_stable_row_ids", "int64", "BTREE", {}, {"stable": True}),
    ("btree_int64_delta", "int64", "BTREE", {"zone_size": 64}, {"delta": True}),
    ("btree_int64_merged", "int64", "BTREE", {}, {"merge": True}),
    ("bitmap_int64", "int64", "BITMAP", {}, {}),
    ("bitmap_float64", "float64", "BITMAP", {}, {}),
    ("bitmap_utf8", "utf8", "BITMAP", {}, {}),
    ("bitmap_date32", "date32", "BITMAP", {}, {}),
    ("bitmap_timestamp", "timestamp", "BITMAP", {}, {}),
    ("bitmap_bool", "bool", "BITMAP", {}, {}),
    ("bitmap_utf8_delta", "utf8", "BITMAP", {}, {"delta": True}),
    ("label_list_utf8", "list_utf8", "LABEL_LIST", {}, {}),
    ("label_list_int64", "list_int64", "LABEL_LIST", {}, {}),
    ("label_list_utf8_delta", "list_utf8", "LABEL_LIST", {}, {"delta": True}),
    ("zonemap_int64", "int64", "ZONEMAP", {"rows_per_zone": 32}, {}),
    ("zonemap_int64_default", "int64", "ZONEMAP", {}, {}),
    ("zonemap_float64", "float64", "ZONEMAP", {"rows_per_zone": 32}, {}),
    ("zonemap_utf8", "utf8", "ZONEMAP", {"rows_per_zone": 32}, {}),
    ("zonemap_date32", "date32", "ZONEMAP", {"rows_per_zone": 32}, {}),
    ("zonemap_timestamp", "timestamp", "ZONEMAP", {"rows_per_zone": 32}, {}),
    ("zonemap_bool", "bool", "ZONEMAP", {"rows_per_zone": 32}, {}),
    ("zonemap_int64_delta", "int64", "ZONEMAP", {"rows_per_zone": 32}, {"delta": True}),
    ("bloomfilter_int64", "int64", "BLOOMFILTER", {"number_of_items": 32, "probability": 0.01}, {}),
    ("bloomfilter_int64_default", "int64", "BLOOMFILTER", {}, {}),
    ("bloomfilter_float64", "float64", "BLOOMFILTER", {"number_of_items": 32, "probability": 0.01}, {}),
    ("bloomfilter_utf8", "utf8", "BLOOMFILTER", {"number_of_items": 32, "probability": 0.05}, {}),
    ("bloomfilter_date32", "date32", "BLOOMFILTER", {"number_of_items": 32, "probability": 0.01}, {}),
    ("bloomfilter_timestamp", "timestamp", "BLOOMFILTER", {"number_of_items": 32, "probability": 0.01}, {}),
    ("ngram_text", "text", "NGRAM", {}, {}),
    ("ngram_text_delta", "text", "NGRAM", {}, {"delta": True}),
]


# ---------------------------------------------------------------- protobuf / manifest

# Protobuf wire decoding and the manifest's index section, shared with the other
# generators (this script's directory is on sys.path when it runs).
from pbraw import fields as _fields, varint as _varint  # noqa: E402,F401
from lance_manifest import fragment_bitmap, manifest_indices as _manifest_indices, packed as _packed, roaring32  # noqa: E402,F401


def row_addr_tree_map(b):
    """RowAddrTreeMap: u32 count, then per fragment u32 id, u32 length, roaring (length
    0 = the whole fragment). -> sorted u64 row addresses (or ("full", frag) markers)."""
    n, = struct.unpack_from("<I", b, 0)
    pos, out = 4, []
    for _ in range(n):
        frag, size = struct.unpack_from("<II", b, pos)
        pos += 8
        if size == 0:
            out.append(f"full:{frag}")
            continue
        vals, used = roaring32(b, pos)
        if used != size:
            raise ValueError(f"roaring length {used} != {size}")
        pos += size
        out.extend((frag << 32) | v for v in vals)
    if pos != len(b):
        raise ValueError("trailing bytes in RowAddrTreeMap")
    return out


def roaring_treemap(b):
    """roaring-rs RoaringTreemap: u64 count, then per high word u32 key + roaring."""
    n, = struct.unpack_from("<Q", b, 0)
    pos, out = 8, []
    for _ in range(n):
        hi, = struct.unpack_from("<I", b, pos)
        vals, used = roaring32(b, pos + 4)
        pos += 4 + used
        out.extend((hi << 32) | v for v in vals)
    if pos != len(b):
        raise ValueError("trailing bytes in RoaringTreemap")
    return out


def _details(type_url, b):
    d = {}
    if type_url.endswith("ZoneMapIndexDetails"):
        names = {1: "rows_per_zone", 2: "use_seeds", 3: "has_null_bitmap"}
        for num, wt, v in _fields(b):
            d[names.get(num, f"field_{num}")] = (bool(v) if num in (2, 3) else v) if wt == 0 else v.hex()
    else:
        for num, wt, v in _fields(b):
            d[f"field_{num}"] = v if wt == 0 else v.hex()
    return d


# ---------------------------------------------------------------- index files

def jv(v):
    """JSON-safe rendering of a value read from an index file."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0 and math.copysign(1, v) < 0:
            return "-0.0"
        return v
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, list):
        return [jv(x) for x in v]
    return str(v)


def _blob(b):
    if len(b) <= 256:
        return b.hex()
    return {"len": len(b), "sha256": hashlib.sha256(b).hexdigest(),
            "bits_set": sum(bin(x).count("1") for x in b)}


def file_summary(path):
    r = LanceFileReader(path)
    md = r.metadata()
    meta = {k.decode(): v.decode() for k, v in sorted((md.schema.metadata or {}).items())}
    s = {
        "file_version": f"{md.major_version}.{md.minor_version}",
        "num_rows": md.num_rows,
        "num_global_buffers": len(md.global_buffers),
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable,
                    "metadata": {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}}
                   for f in md.schema],
        "schema_metadata": meta,
    }
    t = r.read_all().to_table()
    cols = {}
    for name in t.column_names:
        vals = t[name].to_pylist()
        if name == "bitmaps":
            cols[name] = [None if x is None else row_addr_tree_map(x) for x in vals]
        elif name == "posting_list":
            cols[name] = [roaring_treemap(x) for x in vals]
        elif name == "bloom_filter_data":
            cols[name] = [_blob(x) for x in vals]
        else:
            cols[name] = [jv(x) for x in vals]
    s["columns"] = cols
    gb = {}
    for gi in range(1, len(md.global_buffers)):
        b = bytes(r.read_global_buffer(gi))
        try:
            gb[str(gi)] = {"row_addr_tree_map": row_addr_tree_map(b), "len": len(b)}
        except Exception:  # noqa: BLE001 - not a RowAddrTreeMap
            gb[str(gi)] = {"len": len(b), "head_hex": b[:64].hex()}
    s["global_buffers"] = gb
    return s


# ---------------------------------------------------------------- queries

_ROWS_SCANNED = re.compile(r"rows_scanned=(\d+)")


def run_filter(ds, f):
    try:
        sc = ds.scanner(filter=f, columns=["id"], with_row_id=True)
        t = sc.to_table()
        pairs = sorted(zip(t["id"].to_pylist(), t["_rowid"].to_pylist()))
        plan = ds.scanner(filter=f, columns=["id"], with_row_id=True).explain_plan(True)
        plain = sorted(ds.scanner(filter=f, columns=["id"], use_scalar_index=False).to_table()["id"].to_pylist())
        out = {
            "filter": f,
            "ids": [p[0] for p in pairs],
            "rowids": [p[1] for p in pairs],
            "ids_no_index": plain,
            "matches_no_index": [p[0] for p in pairs] == plain,
            "index_used": "ScalarIndexQuery" in plan or "MaterializeIndex" in plan,
            "explain_plan": plan,
        }
        try:
            an = ds.scanner(filter=f, columns=["id"], with_row_id=True).analyze_plan()
            m = _ROWS_SCANNED.search(an)
            out["rows_scanned"] = int(m.group(1)) if m else None
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            out["rows_scanned"] = None
        return out
    except BaseException as e:  # noqa: BLE001 - pyo3 panics are BaseException
        if isinstance(e, KeyboardInterrupt):
            raise
        return {"filter": f, "error": f"{type(e).__name__}: {str(e)[:300]}"}


def build_case(out, name, typ, kind, params, extra):
    path = os.path.join(out, name)
    shutil.rmtree(path, ignore_errors=True)
    steps = []
    kw = {"max_rows_per_file": ROWS_PER_FILE}
    if extra.get("storage"):
        kw["data_storage_version"] = extra["storage"]
    if extra.get("stable"):
        kw["enable_stable_row_ids"] = True
    ds = lance.write_dataset(table(typ, 0, N_ROWS), path, **kw)
    steps.append(f"write {N_ROWS} rows (ids 0..{N_ROWS - 1}) as 2 fragments"
                 + (f", storage {extra['storage']}" if extra.get("storage") else "")
                 + (", stable row ids" if extra.get("stable") else ""))
    ds.delete("id % 10 = 3")
    steps.append("delete id % 10 = 3 (before indexing)")
    if params:
        ds.create_scalar_index("v", cfg(kind, params))
    else:
        ds.create_scalar_index("v", index_type=kind)
    steps.append(f"create_scalar_index(v, {kind}{', ' + json.dumps(params) if params else ''})")
    ds = lance.dataset(path)
    ds.delete("id % 17 = 5")
    steps.append("delete id % 17 = 5 (after indexing)")
    start = N_ROWS
    if extra.get("delta") or extra.get("merge"):
        ds = lance.write_dataset(table(typ, start, N_DELTA), path, mode="append")
        if extra.get("delta"):
            ds.optimize.optimize_indices(num_indices_to_merge=0)
            how = "optimize_indices(num_indices_to_merge=0) -> delta segment"
        else:
            ds.optimize.optimize_indices()
            how = "optimize_indices() -> one merged segment"
        steps.append(f"append {N_DELTA} rows (ids {start}..{start + N_DELTA - 1}); {how}")
        start += N_DELTA
        ds = lance.dataset(path)
    ds = lance.write_dataset(table(typ, start, N_APPEND), path, mode="append")
    steps.append(f"append {N_APPEND} rows (ids {start}..{start + N_APPEND - 1}), left unindexed")
    ds = lance.dataset(path)

    version, indices = _manifest_indices(path, _details)
    files = {}
    for im in indices:
        d = os.path.join(path, "_indices", im["uuid"])
        for fn in sorted(os.listdir(d)):
            p = os.path.join(d, fn)
            files[f"{im['uuid']}/{fn}"] = file_summary(p) if fn.endswith(".lance") else {"size": os.path.getsize(p)}
    try:
        stats = ds.stats.index_stats("v_idx")
        stats.pop("updated_at_timestamp_ms", None)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        stats = {"error": str(e)[:300]}

    return {
        "name": name,
        "column_type": typ,
        "arrow_type": str(ARROW_TYPES[typ]),
        "index_type": kind,
        "params": params,
        "extra": extra,
        "steps": steps,
        "dataset_version": version,
        "data_storage_version": ds.data_storage_version,
        "row_count": ds.count_rows(),
        "fragments": [{"id": f.fragment_id, "physical_rows": f.physical_rows, "rows": f.count_rows()}
                      for f in ds.get_fragments()],
        "manifest_indices": indices,
        "index_files": files,
        "index_stats": stats,
        "filters": [run_filter(ds, f) for f in FILTERS[typ]],
    }


def _json_default(o):
    try:
        return sorted(int(x) for x in o)  # sets / lance Bitmap
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
        "rows": N_ROWS, "delta_rows": N_DELTA, "appended_rows": N_APPEND,
        "rows_per_file": ROWS_PER_FILE,
        "cases": [],
    }
    for name, typ, kind, params, extra in CASES:
        if only and name not in only:
            continue
        entry = {"name": name, "column_type": typ, "index_type": kind, "params": params, "extra": extra}
        try:
            case = build_case(out, name, typ, kind, params, extra)
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(case, f, indent=1, default=_json_default)
            fl = case["filters"]
            entry.update(
                status="ok",
                bytes=dir_size(os.path.join(out, name)),
                index_segments=len(case["manifest_indices"]),
                filters=len(fl),
                index_used=sum(1 for r in fl if r.get("index_used")),
                errors=[r["filter"] for r in fl if "error" in r],
                differs_from_plain_scan=[r["filter"] for r in fl if "error" not in r and not r["matches_no_index"]],
            )
            note = f" DIFFERS: {entry['differs_from_plain_scan']}" if entry["differs_from_plain_scan"] else ""
            print(f"{name}: ok ({entry['index_used']}/{entry['filters']} filters use the index){note}")
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
