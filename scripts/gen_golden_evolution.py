#!/usr/bin/env python3
"""Golden data for data evolution and maintenance (issue #15), written by pylance.

    .venv/pylance-14/bin/python scripts/gen_golden_evolution.py OUTDIR [CASE ...]

Run with each pinned pylance venv; writes OUTDIR/<pylance version>/<case>-<storage>/ (the
datasets) and expected.json: per dataset and version, the table as pylance reads it (with
_rowid, _rowaddr and, with stable row ids, _row_created_at_version /
_row_last_updated_at_version), the transaction and manifest facts decoded from the bytes
on disk (schema field ids, fragments, data files' fields / column_indices / versions,
deletion files, row id and version sequences, indices), pylance's own read_transaction()
result, per-step errors and notes; plus a matrix of concurrent-commit outcomes.
docs/evolution-format.md describes what the files show. Data is deterministic; file
names, uuids and timestamps are not.
"""
import json
import os
import shutil
import struct
import sys
import time
import uuid as uuid_mod
from datetime import timedelta

import numpy as np
import pyarrow as pa
import lance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pbraw import fields as pb  # noqa: E402
from lance_manifest import index_metadata, packed, roaring32  # noqa: E402

OPS = {100: "Append", 101: "Delete", 102: "Overwrite", 103: "CreateIndex", 104: "Rewrite",
       105: "Merge", 106: "Restore", 107: "ReserveFragments", 108: "Update", 109: "Project",
       110: "UpdateConfig", 111: "DataReplacement", 112: "UpdateMemWalState", 113: "Clone",
       114: "UpdateBases", 115: "DataOverlay"}


# ---------------------------------------------------------------- protobuf decoding
def one(msg, num, default=None):
    """Last value of field `num` (proto3 semantics for a singular field)."""
    vals = [v for n, _, v in pb(msg) if n == num]
    return vals[-1] if vals else default


def many(msg, num):
    return [v for n, _, v in pb(msg) if n == num]


def ints(msg, num, signed=False):
    """A repeated integer field, packed or not; int32 negatives are 10-byte varints."""
    out = []
    for n, wt, v in pb(msg):
        if n == num:
            out.extend(packed(v) if wt == 2 else [v])
    return [x - (1 << 64) if signed and x >= 1 << 63 else x for x in out]


def text(v):
    return bytes(v).decode() if v is not None else None


def u64_array(b):
    """EncodedU64Array -> list of ints."""
    for n, _, v in pb(b):
        if n in (1, 2):  # u16 / u32 offsets from a base
            base, offs = one(v, 1, 0), one(v, 2, b"")
            w = 2 if n == 1 else 4
            return [base + x for x in struct.unpack(f"<{len(offs) // w}{'H' if w == 2 else 'I'}", offs)]
        if n == 3:
            vals = one(v, 2, b"")
            return list(struct.unpack(f"<{len(vals) // 8}Q", vals))
    return []


def u64_segment(b):
    """U64Segment -> (kind, list of ints)."""
    for n, _, v in pb(b):
        start, end = one(v, 1, 0), one(v, 2, 0)
        if n == 1:
            return "range", list(range(start, end))
        if n == 2:
            holes = set(u64_array(one(v, 3, b"")))
            return "range_with_holes", [x for x in range(start, end) if x not in holes]
        if n == 3:
            bm = one(v, 3, b"")
            return "range_with_bitmap", [start + i for i in range(end - start) if bm[i // 8] >> (i % 8) & 1]
        if n in (4, 5):
            return ("sorted_array" if n == 4 else "array"), u64_array(v)
    return "empty", []


def row_ids(b):
    segs = [u64_segment(s) for s in many(b, 1)]
    return {"segments": [k for k, _ in segs], "row_ids": [x for _, vs in segs for x in vs]}


def version_runs(b):
    """RowDatasetVersionSequence -> per-row versions and the runs."""
    runs, per_row = [], []
    for r in many(b, 1):
        kind, span = u64_segment(one(r, 1, b""))
        ver = one(r, 2, 0)
        runs.append({"span": kind, "len": len(span), "version": ver})
        per_row.extend([ver] * len(span))
    return {"runs": runs, "versions": per_row}


def data_file(b):
    return {"path": text(one(b, 1, b"")), "fields": ints(b, 2, signed=True),
            "column_indices": ints(b, 3, signed=True), "file_major_version": one(b, 4, 0),
            "file_minor_version": one(b, 5, 0), "base_id": one(b, 7)}


def fragment(b):
    f = {"id": one(b, 1, 0), "physical_rows": one(b, 4, 0), "files": [data_file(x) for x in many(b, 2)]}
    d = one(b, 3)
    if d is not None:
        f["deletion_file"] = {"file_type": ["array", "bitmap"][one(d, 1, 0)], "read_version": one(d, 2, 0),
                              "id": one(d, 3, 0), "num_deleted_rows": one(d, 4, 0)}
    for num, key, dec in ((5, "row_ids", row_ids), (7, "last_updated_at_versions", version_runs),
                          (9, "created_at_versions", version_runs)):
        if one(b, num) is not None:
            f[key] = dec(one(b, num))
        if one(b, num + 1) is not None:
            f[key] = {"external": text(one(one(b, num + 1), 1, b""))}
    return f


def field(b):
    return {"name": text(one(b, 2, b"")), "id": ints(b, 3, True)[-1] if one(b, 3) is not None else 0,
            "parent_id": ints(b, 4, True)[-1] if one(b, 4) is not None else 0,
            "logical_type": text(one(b, 5, b"")), "nullable": bool(one(b, 6, 0))}


def treemap(b):
    """A serialized 64-bit RoaringTreemap -> sorted values."""
    n, = struct.unpack_from("<Q", b, 0)
    pos, out = 8, []
    for _ in range(n):
        hi, = struct.unpack_from("<I", b, pos)
        vals, used = roaring32(b, pos + 4)
        out += [(hi << 32) | v for v in vals]
        pos += 4 + used
    return out


def frag_reuse_details(b):
    """FragmentReuseIndexDetails (inline content only): versions and their rewrite groups."""
    inline = one(b, 1)
    if inline is None:
        return {"external": text(one(one(b, 2, b""), 1, b""))}
    digest = lambda d: {"id": one(d, 1, 0), "physical_rows": one(d, 2, 0), "num_deleted_rows": one(d, 3, 0)}  # noqa: E731
    return {"versions": [{"dataset_version": one(v, 1, 0), "groups": [
        {"changed_row_addrs": treemap(one(g, 1, b"")), "old_fragments": [digest(d) for d in many(g, 2)],
         "new_fragments": [digest(d) for d in many(g, 3)]} for g in many(v, 3)]} for v in many(inline, 1)],
        "other_field_numbers": sorted({n for n, _, _ in pb(inline)} - {1})}


def index(b):
    d = index_metadata(b)
    out = {k: d.get(k) for k in ("uuid", "name", "fields", "dataset_version", "fragment_ids",
                                 "index_details_type_url", "index_version")}
    if d.get("index_details_type_url", "").endswith("FragmentReuseIndexDetails"):
        out["frag_reuse"] = frag_reuse_details(bytes.fromhex(d["index_details_hex"]))
    return out


def uuid_of(b):
    return str(uuid_mod.UUID(bytes=bytes(one(b, 1, b"")))) if b is not None else None


def operation(num, b):
    """The fields of one transaction operation, by the numbers of protos/transaction.proto."""
    frags = lambda k: [fragment(x) for x in many(b, k)]  # noqa: E731
    if num == 100:
        return {"fragments": frags(1)}
    if num == 101:
        return {"updated_fragments": frags(1), "deleted_fragment_ids": ints(b, 2), "predicate": text(one(b, 3, b""))}
    if num == 102:
        return {"fragments": frags(1), "schema": [field(x) for x in many(b, 2)]}
    if num == 103:
        return {"new_indices": [index(x) for x in many(b, 1)], "removed_indices": [index(x) for x in many(b, 2)]}
    if num == 104:
        return {"old_fragments": frags(1), "new_fragments": frags(2),
                "groups": [{"old_fragments": [fragment(x) for x in many(g, 1)],
                            "new_fragments": [fragment(x) for x in many(g, 2)]} for g in many(b, 3)],
                "rewritten_indices": [{"old_id": uuid_of(one(r, 1)), "new_id": uuid_of(one(r, 2)),
                                       "new_index_details_type_url": text(one(one(r, 3, b""), 1, b"")),
                                       "new_index_version": one(r, 4, 0),
                                       "new_index_files": [text(one(x, 1, b"")) for x in many(r, 5)]}
                                      for r in many(b, 4)],
                "other_field_numbers": sorted({n for n, _, _ in pb(b)} - {1, 2, 3, 4})}
    if num == 105:
        return {"fragments": frags(1), "schema": [field(x) for x in many(b, 2)],
                "preserves_nullability": bool(one(b, 4, 0))}
    if num == 106:
        return {"version": one(b, 1, 0)}
    if num == 107:
        return {"num_fragments": one(b, 1, 0)}
    if num == 108:
        modes = {0: "REWRITE_ROWS", 1: "REWRITE_COLUMNS"}
        return {"removed_fragment_ids": ints(b, 1), "updated_fragments": frags(2), "new_fragments": frags(3),
                "fields_modified": ints(b, 4), "field5_present": one(b, 5) is not None,
                "fields_for_preserving_frag_bitmap": ints(b, 6), "update_mode": modes.get(one(b, 7, 0)),
                "inserted_rows_filter_present": one(b, 8) is not None,
                "updated_fragment_offset_bitmaps": {str(one(e, 1, 0)): roaring32(one(e, 2, b""))[0]
                                                    for e in many(b, 10)},
                "other_field_numbers": sorted({n for n, _, _ in pb(b)} - set(range(1, 9)) - {10})}
    if num == 109:
        return {"schema": [field(x) for x in many(b, 1)], "preserves_nullability": bool(one(b, 2, 0))}
    if num == 111:
        return {"replacements": [{"fragment_id": one(g, 1, 0), "new_file": data_file(one(g, 2, b""))}
                                 for g in many(b, 1)]}
    return {"field_numbers": sorted({n for n, _, _ in pb(b)})}


def transaction(b):
    t = {"read_version": one(b, 1, 0), "uuid": text(one(b, 2, b"")), "operation": None}
    props = {text(one(e, 1, b"")): text(one(e, 2, b"")) for e in many(b, 4)}
    if props:
        t["transaction_properties"] = props
    for n, _, v in pb(b):
        if n in OPS or n >= 100:
            t["operation"] = OPS.get(n, f"field {n}")
            t["op"] = operation(n, v)
    return t


def manifest_path(ds_path, version):
    vdir = os.path.join(ds_path, "_versions")
    for name in (f"{(1 << 64) - 1 - version:020d}.manifest", f"{version}.manifest"):
        if os.path.exists(os.path.join(vdir, name)):
            return os.path.join(vdir, name)
    return None


def manifest(ds_path, version):
    """Facts of one version's manifest, decoded from its bytes."""
    p = manifest_path(ds_path, version)
    if p is None:
        return None
    b = open(p, "rb").read()
    pos, = struct.unpack("<Q", b[-16:-8])
    n, = struct.unpack("<I", b[pos:pos + 4])
    m = b[pos + 4:pos + 4 + n]
    fmt = one(m, 15)
    out = {"version": one(m, 3, 0), "max_fragment_id": one(m, 11), "next_row_id": one(m, 14, 0),
           "reader_feature_flags": one(m, 9, 0), "writer_feature_flags": one(m, 10, 0),
           "data_format": text(one(fmt, 2, b"")) if fmt is not None else None,
           "schema": [field(x) for x in many(m, 1)],
           "fragments": [fragment(x) for x in many(m, 2)],
           "config": {text(one(e, 1, b"")): text(one(e, 2, b"")) for e in many(m, 16)},
           "transaction_file": text(one(m, 12, b"")) or None, "indices": []}
    sec = one(m, 6)
    if sec is not None:
        ln, = struct.unpack("<I", b[sec:sec + 4])
        out["indices"] = [index(x) for x in many(b[sec + 4:sec + 4 + ln], 1)]
    txn = None
    if out["transaction_file"]:
        tp = os.path.join(ds_path, "_transactions", out["transaction_file"])
        if os.path.exists(tp):
            txn = open(tp, "rb").read()
    elif one(m, 21) is not None:
        ts = one(m, 21)
        ln, = struct.unpack("<I", b[ts:ts + 4])
        txn = b[ts + 4:ts + 4 + ln]
        out["transaction_inline"] = True
    out["transaction"] = transaction(txn) if txn is not None else None
    return out


# ---------------------------------------------------------------- recording
def jsonable(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


def clean_error(e):
    """pylance's error text without the Rust source location it appends."""
    msg = str(e)
    cut = msg.rfind(", /")
    if cut > 0 and msg.rstrip().endswith(tuple("0123456789")) and ".rs:" in msg[cut:]:
        msg = msg[:cut]
    return {"type": type(e).__name__, "message": msg}


class Case:
    """One dataset: records every version it gains, and notes."""

    def __init__(self, root, name, storage, stable=False):
        self.name, self.storage, self.stable = name, storage, stable
        self.path = os.path.join(root, f"{name}-{storage}")
        shutil.rmtree(self.path, ignore_errors=True)
        self.versions, self.notes, self.steps = [], {}, []
        self.seen = 0

    def kw(self, **extra):
        kw = dict(data_storage_version=self.storage, **extra)
        if self.stable:
            kw["enable_stable_row_ids"] = True
        return kw

    def ds(self):
        return lance.dataset(self.path)

    def step(self, label, fn):
        """Runs fn(); records the versions it made (or the error it raised)."""
        try:
            out = fn()
        except Exception as e:  # recorded, the case goes on
            self.steps.append({"step": label, "error": clean_error(e)})
            return None
        self.record(label)
        if out is not None and not isinstance(out, lance.LanceDataset):
            self.notes[label] = jsonable(result_dict(out))
        return out

    def record(self, label):
        ds = self.ds()
        new = [v["version"] for v in ds.versions() if v["version"] > self.seen]
        self.steps.append({"step": label, "versions": new})
        for v in new:
            self.versions.append(self.version(v, label))
            self.seen = max(self.seen, v)

    def version(self, v, label):
        ds = lance.dataset(self.path, version=v)
        cols = ["_rowid", "_rowaddr"]
        if self.stable:
            cols += ["_row_created_at_version", "_row_last_updated_at_version"]
        try:
            t = ds.to_table(columns=ds.schema.names + cols)
        except Exception as e:  # a version pylance commits and then cannot read
            try:
                n = ds.count_rows()
            except Exception:  # noqa: BLE001
                n = None
            return {"version": v, "step": label, "table": None, "pylance_read_error": clean_error(e), "num_rows": n,
                    "arrow_schema": [f"{f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in ds.schema],
                    "manifest": manifest(self.path, v)}
        rec = {"version": v, "step": label, "num_rows": t.num_rows,
               "arrow_schema": [f"{f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in ds.schema],
               "table": {c: jsonable(t.column(c).to_pylist()) for c in t.column_names},
               "manifest": manifest(self.path, v)}
        try:
            rec["pylance_read_transaction"] = type(ds.read_transaction(v).operation).__name__
        except Exception as e:
            rec["pylance_read_transaction"] = {"error": clean_error(e)}
        return rec

    def result(self):
        return {"storage": self.storage, "stable_row_ids": self.stable, "path": os.path.basename(self.path),
                "steps": self.steps, "notes": self.notes, "versions": self.versions}


def result_dict(out):
    if isinstance(out, dict):
        return out
    names = [a for a in dir(out) if not a.startswith("_") and not callable(getattr(out, a))]
    return {a: getattr(out, a) for a in names} if names else str(out)


# ---------------------------------------------------------------- data
def base(n, seed=0, start=0):
    ids = np.arange(start, start + n)
    r = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "x": pa.array((ids * 3) % 17, pa.int32()),
        "name": pa.array([f"n{i}" for i in ids]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(n * 4).astype(np.float32)), 4),
    })


def create(c, t, rows_per_file, **extra):
    return lance.write_dataset(t, c.path, max_rows_per_file=rows_per_file, **c.kw(**extra))


# ---------------------------------------------------------------- cases
def case_add_columns(c):
    c.step("create", lambda: create(c, base(10), 4))
    c.step("delete id = 5", lambda: c.ds().delete("id = 5"))
    c.step("add_columns sql", lambda: c.ds().add_columns({"double_id": "id * 2", "x_plus": "x + 1"}))
    c.step("add_columns sql struct", lambda: c.ds().add_columns({"st": "named_struct('a', x, 'b', name)"}))
    c.step("add_columns all-null field", lambda: c.ds().add_columns(pa.field("maybe", pa.float64())))
    c.step("add_columns all-null schema", lambda: c.ds().add_columns(
        pa.schema([pa.field("s1", pa.string()), pa.field("s2", pa.int16())])))
    c.step("merge on id", lambda: c.ds().merge(
        pa.table({"id": pa.array([0, 2, 4, 6, 8, 42], pa.int64()), "joined": ["j0", "j2", "j4", "j6", "j8", "j42"]}), "id"))
    extra = base(3, seed=1, start=100).append_column("double_id", pa.array([200, 202, 204], pa.int64()))
    c.step("append after evolution", lambda: lance.write_dataset(
        extra.select(["id", "x", "name", "vec", "double_id"]), c.path, mode="append"))
    c.step("add_columns sql after append", lambda: c.ds().add_columns({"neg": "-id"}))


def case_drop_columns(c):
    c.step("create", lambda: create(c, base(12), 4))
    c.step("add_columns sql", lambda: c.ds().add_columns({"y": "id + 1000"}))
    c.step("drop x", lambda: c.ds().drop_columns(["x"]))
    c.step("drop y (whole data file)", lambda: c.ds().drop_columns(["y"]))
    c.step("drop all remaining (error)", lambda: c.ds().drop_columns(["id", "name", "vec"]))
    c.step("delete id < 2", lambda: c.ds().delete("id < 2"))
    c.step("compact_files", lambda: c.ds().optimize.compact_files())


def case_alter_columns(c):
    t = base(9).append_column("req", pa.array([f"r{i}" for i in range(9)]))
    c.step("create", lambda: create(c, t, 4))
    c.step("create_scalar_index x BTREE", lambda: c.ds().create_scalar_index("x", "BTREE"))
    c.step("rename name -> label", lambda: c.ds().alter_columns({"path": "name", "name": "label"}))
    c.step("nullable req false", lambda: c.ds().alter_columns({"path": "req", "nullable": False}))
    c.step("nullable req true", lambda: c.ds().alter_columns({"path": "req", "nullable": True}))
    c.step("cast x int32 -> int64", lambda: c.ds().alter_columns({"path": "x", "data_type": pa.int64()}))
    c.step("drop_index x_idx", lambda: c.ds().drop_index("x_idx"))
    c.step("cast x int32 -> int64 (no index)", lambda: c.ds().alter_columns({"path": "x", "data_type": pa.int64()}))
    c.step("rename + cast id", lambda: c.ds().alter_columns({"path": "id", "name": "key", "data_type": pa.int32()}))
    c.step("update label NULL where key = 0", lambda: c.ds().update({"label": "NULL"}, where="key = 0"))
    c.step("nullable label false with nulls (error)", lambda: c.ds().alter_columns({"path": "label", "nullable": False}))


def nested(n, start=0):
    ids = np.arange(start, start + n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([{"a": None if i % 4 == 3 else int(i * 7), "b": f"b{i}", "c": float(i) / 2} for i in ids],
                      pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.float32())])),
    })


def case_alter_nested(c):
    """Nested fields renamed, made non-nullable, cast (a new field id in new data files
    beside the struct's old ones); then appends and deletes on the evolved struct."""
    c.step("create", lambda: create(c, nested(10), 4))
    c.step("rename s.b -> bb", lambda: c.ds().alter_columns({"path": "s.b", "name": "bb"}))
    c.step("nullable s.bb false", lambda: c.ds().alter_columns({"path": "s.bb", "nullable": False}))
    c.step("cast s.a int32 -> int64", lambda: c.ds().alter_columns({"path": "s.a", "data_type": pa.int64()}))
    c.step("cast s.c float32 -> float64", lambda: c.ds().alter_columns({"path": "s.c", "data_type": pa.float64()}))
    c.step("append after nested casts", lambda: lance.write_dataset(pa.Table.from_pylist(
        [{"id": 100 + i, "s": {"a": i, "bb": f"new{i}", "c": i / 4}} for i in range(3)],
        schema=c.ds().schema), c.path, mode="append"))
    c.step("delete id = 2", lambda: c.ds().delete("id = 2"))
    c.step("rename s -> t", lambda: c.ds().alter_columns({"path": "s", "name": "t"}))


def case_update(c):
    c.step("create", lambda: create(c, base(10), 4))
    c.step("create_scalar_index id BTREE", lambda: c.ds().create_scalar_index("id", "BTREE"))
    c.step("update x where", lambda: c.ds().update({"x": "x + 100"}, where="id >= 3 AND id < 6"))
    c.step("update no match", lambda: c.ds().update({"x": "0"}, where="id > 1000"))
    c.step("update id (indexed) where", lambda: c.ds().update({"id": "id + 1000"}, where="id = 9"))
    c.step("update all rows", lambda: c.ds().update({"name": "'all'"}))
    c.step("delete id = 0", lambda: c.ds().delete("id = 0"))
    c.notes["filter id = 1009"] = c.ds().to_table(filter="id = 1009", columns=["id", "x"]).to_pydict()


def src(ids, seed, label):
    t = base(len(ids), seed=seed)
    return t.set_column(0, "id", pa.array(ids, pa.int64())).set_column(2, "name", pa.array([f"{label}{i}" for i in ids]))


def case_merge_insert(c):
    c.step("create", lambda: create(c, base(10), 4))
    m = lambda: c.ds().merge_insert("id")  # noqa: E731
    c.step("upsert", lambda: m().when_matched_update_all().when_not_matched_insert_all().execute(src([1, 2, 20, 21], 5, "u")))
    c.step("insert-only", lambda: m().when_not_matched_insert_all().execute(src([2, 30], 6, "i")))
    c.step("conditional update", lambda: m().when_matched_update_all("source.x > target.x").execute(src([3, 4, 5, 6], 7, "c")))
    c.step("duplicate source keys (error)", lambda: m().when_matched_update_all().execute(src([7, 7], 8, "d")))
    part = pa.table({"id": pa.array([1, 8], pa.int64()), "x": pa.array([-1, -8], pa.int32())})
    c.step("partial columns rewrite_columns", lambda: m().write_mode("rewrite_columns").when_matched_update_all().execute(part))
    c.step("partial columns auto", lambda: m().when_matched_update_all().execute(
        pa.table({"id": pa.array([2, 9], pa.int64()), "name": ["p2", "p9"]})))
    c.step("delete-unmatched", lambda: m().when_matched_update_all().when_not_matched_insert_all()
           .when_not_matched_by_source_delete().execute(src([0, 1, 2, 40], 9, "s")))


def case_merge_insert_indexed(c):
    """Partial-schema update whose key has a scalar index: the 'auto' column-patch path."""
    c.step("create", lambda: create(c, base(12), 4))
    c.step("create_scalar_index id BTREE", lambda: c.ds().create_scalar_index("id", "BTREE"))
    c.step("partial columns auto (indexed key)", lambda: c.ds().merge_insert("id").when_matched_update_all().execute(
        pa.table({"id": pa.array([1, 2, 5], pa.int64()), "x": pa.array([-1, -2, -5], pa.int32())})))
    c.step("partial columns again", lambda: c.ds().merge_insert("id").when_matched_update_all().execute(
        pa.table({"id": pa.array([2, 3], pa.int64()), "x": pa.array([-20, -3], pa.int32())})))
    c.step("compact_files", lambda: c.ds().optimize.compact_files())


def case_compact(c):
    for k in range(6):
        c.step(f"write {k}", lambda k=k: lance.write_dataset(
            base(60, seed=k, start=60 * k), c.path, mode="create" if k == 0 else "append", **(c.kw() if k == 0 else {})))
    c.step("delete", lambda: c.ds().delete("id % 5 = 0 AND id < 120"))
    c.step("compact_files target 150", lambda: c.ds().optimize.compact_files(target_rows_per_fragment=150))
    c.step("compact_files again (no-op)", lambda: c.ds().optimize.compact_files(target_rows_per_fragment=150))
    c.step("append big", lambda: lance.write_dataset(base(400, seed=9, start=1000), c.path, mode="append"))
    c.step("delete 5% of big", lambda: c.ds().delete("id >= 1000 AND id < 1020"))
    c.step("compact_files target 300 (big: 5% < threshold)",
           lambda: c.ds().optimize.compact_files(target_rows_per_fragment=300))
    c.step("compact_files target 300 threshold 0.01", lambda: c.ds().optimize.compact_files(
        target_rows_per_fragment=300, materialize_deletions_threshold=0.01))


def indexed_compaction(c, vector, defer=False):
    c.step("create", lambda: create(c, base(400, seed=3), 100))
    c.step("create_scalar_index id BTREE", lambda: c.ds().create_scalar_index("id", "BTREE"))
    if vector:
        c.step("create_index vec IVF_PQ", lambda: c.ds().create_index(
            "vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2, sample_rate=32))
    c.step("append unindexed", lambda: lance.write_dataset(base(100, seed=4, start=400), c.path, mode="append"))
    c.step("delete", lambda: c.ds().delete("id % 10 = 0"))
    c.step("compact_files", lambda: c.ds().optimize.compact_files(defer_index_remap=defer))
    ds = c.ds()
    c.notes["index_stats"] = {i["name"]: {k: ds.stats.index_stats(i["name"]).get(k) for k in
                                          ("num_indexed_fragments", "num_unindexed_fragments", "num_indexed_rows")}
                              for i in ds.list_indices()}
    c.notes["filter id = 55"] = ds.to_table(filter="id = 55", columns=["id", "x"]).to_pydict()
    if defer:
        c.step("optimize_indices after defer", lambda: c.ds().optimize.optimize_indices())


def files(path):
    out = []
    for d, _, fs in os.walk(path):
        out += [os.path.relpath(os.path.join(d, f), path) for f in fs]
    return sorted(out)


def case_cleanup(c):
    c.step("create", lambda: create(c, base(8), 4))
    c.step("delete", lambda: c.ds().delete("id = 1"))
    c.step("overwrite", lambda: lance.write_dataset(base(5, seed=2, start=50), c.path, mode="overwrite"))
    c.step("tag v2", lambda: c.ds().tags.create("keep", 2))
    c.step("append", lambda: lance.write_dataset(base(3, seed=3, start=90), c.path, mode="append"))
    stray = os.path.join(c.path, "data", "stray-unreferenced.lance")
    open(stray, "wb").write(b"not a lance file")
    c.notes["files_before"] = files(c.path)
    time.sleep(0.05)
    c.step("cleanup older_than=0 (tagged, error)", lambda: c.ds().cleanup_old_versions(older_than=timedelta(0)))
    c.step("cleanup older_than=0 ignore tags", lambda: c.ds().cleanup_old_versions(
        older_than=timedelta(0), error_if_tagged_old_versions=False))
    c.notes["versions_after_cleanup"] = [v["version"] for v in c.ds().versions()]
    c.notes["files_after_cleanup"] = files(c.path)
    c.ds().tags.delete("keep")
    c.step("cleanup older_than=0 untagged", lambda: c.ds().cleanup_old_versions(older_than=timedelta(0)))
    c.notes["versions_after_untagged_cleanup"] = [v["version"] for v in c.ds().versions()]
    c.notes["files_after_untagged_cleanup"] = files(c.path)
    c.step("cleanup delete_unverified", lambda: c.ds().cleanup_old_versions(
        older_than=timedelta(0), delete_unverified=True, error_if_tagged_old_versions=False))
    c.notes["files_after_delete_unverified"] = files(c.path)


def case_restore(c):
    c.step("create", lambda: create(c, base(6), 3))
    c.step("add_columns", lambda: c.ds().add_columns({"y": "id * 10"}))
    c.step("append", lambda: lance.write_dataset(
        base(2, seed=2, start=6).append_column("y", pa.array([60, 70], pa.int64())), c.path, mode="append"))
    c.step("delete", lambda: c.ds().delete("id = 2"))
    c.step("restore v1", lambda: lance.dataset(c.path, version=1).restore())
    c.step("append after restore", lambda: lance.write_dataset(base(2, seed=1, start=10), c.path, mode="append"))


# ---------------------------------------------------------------- concurrent commits
def conflict_ops(root):
    """Operations run either first (on the latest version) or second, from a handle opened
    before the first committed (so the second commits with a stale read_version)."""
    def append(d):
        frags = lance.fragment.write_fragments(base(2, seed=7, start=50), root)
        return lance.LanceDataset.commit(root, lance.LanceOperation.Append(frags), read_version=d.version)

    def upsert(d, k, new):
        return d.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().conflict_retries(0) \
            .execute(src([k, new], 3, "m"))
    return {
        "append": append,
        "delete id=1": lambda d: d.delete("id = 1", conflict_retries=0),
        "delete id=2 (same fragment)": lambda d: d.delete("id = 2", conflict_retries=0),
        "delete id=17 (other fragment)": lambda d: d.delete("id = 17", conflict_retries=0),
        "update id=1": lambda d: d.update({"x": "x + 100"}, where="id = 1", conflict_retries=0),
        "update id=2": lambda d: d.update({"x": "x + 100"}, where="id = 2", conflict_retries=0),
        "merge_insert id=1": lambda d: upsert(d, 1, 100),
        "merge_insert id=2": lambda d: upsert(d, 2, 101),
        "add_columns": lambda d: d.add_columns({f"c{time.monotonic_ns() % 10**9}": "id * 7"}),
        "drop_columns name": lambda d: d.drop_columns(["name"]),
        "rename x": lambda d: d.alter_columns({"path": "x", "name": f"x{time.monotonic_ns() % 10**9}"}),
        "name not null": lambda d: d.alter_columns({"path": "name", "nullable": False}),
        "compact_files": lambda d: d.optimize.compact_files(),
        "compact_files defer_index_remap": lambda d: d.optimize.compact_files(defer_index_remap=True),
        "create_scalar_index id": lambda d: d.create_scalar_index("id", "BTREE"),
        "create_scalar_index x": lambda d: d.create_scalar_index("x", "BTREE"),
        "restore v1": "restore",
    }


def conflict_matrix(root):
    """For each pair (first, second): what the second commit does after the first committed."""
    path, out = os.path.join(root, "conflicts-2.1"), {}
    ops = conflict_ops(path)
    for first, f1 in ops.items():
        for second, f2 in ops.items():
            shutil.rmtree(path, ignore_errors=True)
            lance.write_dataset(base(20), path, max_rows_per_file=5, data_storage_version="2.1")
            stale, v1 = lance.dataset(path), lance.dataset(path, version=1)
            (v1.restore() if f1 == "restore" else f1(lance.dataset(path)))
            after_first = lance.dataset(path).version
            try:
                v1.restore() if f2 == "restore" else f2(stale)
            except Exception as e:
                out[f"{first} | {second}"] = {"error": clean_error(e)}
                continue
            ds = lance.dataset(path)
            t = manifest(path, ds.version)["transaction"]
            out[f"{first} | {second}"] = {"committed": t["operation"], "read_version": t["read_version"],
                                          "first_version": after_first, "version": ds.version,
                                          "rows": ds.count_rows()} if ds.version > after_first else {"committed": None}
    shutil.rmtree(path, ignore_errors=True)
    return out


CASES = [
    ("add_columns", case_add_columns, False), ("drop_columns", case_drop_columns, False),
    ("alter_columns", case_alter_columns, False), ("alter_nested", case_alter_nested, False),
    ("update", case_update, False),
    ("update_stable", case_update, True), ("merge_insert", case_merge_insert, False),
    ("merge_insert_stable", case_merge_insert, True), ("merge_insert_indexed", case_merge_insert_indexed, False),
    ("compact", case_compact, False), ("compact_stable", case_compact, True),
    ("compact_btree", lambda c: indexed_compaction(c, False), False),
    ("compact_btree_stable", lambda c: indexed_compaction(c, False), True),
    ("compact_ivfpq", lambda c: indexed_compaction(c, True), False),
    ("compact_defer", lambda c: indexed_compaction(c, False, defer=True), False),
    ("cleanup", case_cleanup, False), ("restore", case_restore, False),
]
STORAGES = ["2.0", "2.1", "2.2"]


def main(out_root, only=()):
    out = os.path.join(out_root, lance.__version__)
    os.makedirs(out, exist_ok=True)
    result = {"pylance": lance.__version__, "pyarrow": pa.__version__, "datasets": {}, "skipped": {}}
    for name, fn, stable in CASES:
        if only and name not in only:
            continue
        for storage in STORAGES:
            c = Case(out, name, storage, stable)
            try:
                fn(c)
            except Exception as e:  # a case that cannot run at all on this pylance
                result["skipped"][f"{name}-{storage}"] = clean_error(e)
                continue
            result["datasets"][f"{name}-{storage}"] = c.result()
            print(f"{name}-{storage}: {len(c.versions)} versions, "
                  f"{sum('error' in s for s in c.steps)} recorded errors", file=sys.stderr)
    if not only or "conflicts" in only:
        result["conflicts"] = conflict_matrix(out)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(result, f, sort_keys=True, separators=(",", ":"))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], set(sys.argv[2:]))
