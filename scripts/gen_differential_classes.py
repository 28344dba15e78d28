#!/usr/bin/env python3
"""Crafted differential cases: one per defect class of issue #39, written by pylance.

    .venv/pylance-14/bin/python scripts/gen_differential_classes.py OUTDIR

Runs after scripts/gen_differential.py into the same OUTDIR (one pylance version's) and
adds cases in exactly its format (see that script's docstring), named
case-class<k>-<storage>, to OUTDIR/index.json; crates/lancer/tests/differential.rs reads
them, replays them through Lancer's API and has pylance read the replay, like the random
ones. Each case is a fixed table and history with fixed filters (beside the drawn ones)
aimed at one class the outside differential test reported:

  1 timestamps with values at the edges of the range (0001-01-01, 9999-12-31) of every
    unit, with and without a time zone, against TIMESTAMP / DATE literals of other units;
    a delete and an update whose WHERE uses them
  2 decimal128(5,2) against whole numbers (`d > 0`, `d = -3`, IN, BETWEEN; `d > 1000`
    and fractions refused)
  3 decimal128(38,2) holding 36-digit values against fractions under NOT
  4 dictionary<int32|int8, string|large_string> against string literals (=, !=, <, IN),
    an update and a delete by them
  5 struct fields dropped (`s.a`, `s.c.d`), then an append of the narrower struct
  6 appends whose fixed_size_list item is named "element" (taken) and whose list item is
    (refused), a string_view column, a missing nullable column, columns reordered
  7 add_columns of CAST(id AS string), upper(s), concat(ls, 'x') then an append
  8 nullability of computed columns (id * 2, 'const', 42, c + 1), then appends of nulls
    into them (refused where pylance refuses) and of values (taken)
"""
import datetime
import decimal
import json
import os
import random
import shutil
import sys
import time

import numpy as np
import pyarrow as pa
import lance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_differential as gd  # noqa: E402

D = datetime.datetime
DEC = decimal.Decimal


class Crafted(gd.Case):
    """A case whose table, steps and extra filters are given, not drawn."""

    def __init__(self, name, root, storage, table, steps, filters):
        super().__init__(0, root, [storage], [], True)
        self.name = name
        self.storage = storage
        self.stable = False
        self.table = table
        self.script = steps
        self.fixed_filters = filters
        self.r = random.Random(name)

    def run(self):
        step = {"op": "create", "data": self.data_file(0, self.table),
                "max_rows_per_file": 3, "rows": self.table.num_rows}
        kw = {"mode": "create", "max_rows_per_file": 3,
              "data_storage_version": self.storage}
        outcome, _ = gd.attempt(lambda: lance.write_dataset(self.table, self.path, **kw))
        self.finish(step, outcome)
        if outcome != "ok":
            return
        for i, (op, args) in enumerate(self.script, start=1):
            ds = self.current()
            step, fn = self.crafted_step(i, ds, op, args)
            outcome, _ = gd.attempt(fn)
            self.finish(step, outcome)

    def crafted_step(self, i, ds, op, a):
        if op == "append":
            rel = self.data_file(i, a)
            return ({"op": "append", "data": rel, "max_rows_per_file": 2, "rows": a.num_rows},
                    lambda: lance.write_dataset(a, self.path, mode="append", max_rows_per_file=2))
        if op == "delete":
            return {"op": "delete", "where": a}, lambda: ds.delete(a)
        if op == "update":
            where, values = a
            return ({"op": "update", "where": where, "set": values},
                    lambda: ds.update(values, where=where))
        if op == "add_columns":
            return ({"op": "add_columns", "columns": [[k, v] for k, v in a.items()]},
                    lambda: ds.add_columns(a))
        if op == "drop_columns":
            return {"op": "drop_columns", "columns": a}, lambda: ds.drop_columns(a)
        raise ValueError(op)


def ts_table():
    edges = [D(1, 1, 1), D(9999, 12, 31, 23, 59, 59), D(2020, 1, 1, 0, 0, 0, 1),
             D(1969, 12, 31, 23, 59, 59, 999000), None, D(2020, 6, 1, 12)]
    cols = {"id": pa.array(range(len(edges)), pa.int64())}
    for unit in ["s", "ms", "us"]:
        cols[f"t_{unit}"] = pa.array(edges, pa.timestamp(unit))
        cols[f"tz_{unit}"] = pa.array(edges, pa.timestamp(unit, tz="UTC"))
    cols["t_ns"] = pa.array([0, 1, 2**62, -2**62, None, 10**18], pa.timestamp("ns"))
    cols["ny"] = pa.array(edges[2:] + edges[:2], pa.timestamp("us", tz="America/New_York"))
    cols["day"] = pa.array([-719162, 2932896, 18262, -1, None, 0], pa.date32())
    return pa.table(cols)


TS_FILTERS = []
for col in ["t_s", "t_ms", "t_us", "tz_s", "tz_ms", "tz_us", "t_ns", "ny"]:
    TS_FILTERS += [
        f"{col} > TIMESTAMP '2000-01-01 00:00:00'",
        f"{col} = TIMESTAMP '0001-01-01 00:00:00'",
        f"{col} < TIMESTAMP(9) '2020-01-01 00:00:00.000001999'",
        f"{col} >= TIMESTAMP(0) '1969-12-31 23:59:59.5'",
        f"NOT ({col} <= TIMESTAMP(3) '9999-12-31 23:59:59.999')",
        f"{col} > DATE '2019-12-31'",
        f"{col} IN (TIMESTAMP '2020-01-01 00:00:00.000001', TIMESTAMP '0001-01-01 00:00:00')",
        f"{col} BETWEEN TIMESTAMP '0001-01-01 00:00:00' AND TIMESTAMP '2021-01-01 00:00:00'",
        f"TIMESTAMP '2000-01-01 00:00:00' < {col}",
    ]
TS_FILTERS += ["day > DATE '1970-01-01'", "day = DATE '0001-01-01'",
               "day < TIMESTAMP '2000-01-01 00:00:00'"]


def dec_table():
    return pa.table({
        "id": pa.array(range(5), pa.int64()),
        "d": pa.array([DEC("1.50"), DEC("-3.00"), DEC("0.00"), None, DEC("999.99")],
                      pa.decimal128(5, 2)),
        "big": pa.array([DEC("123456789012345678901234567890123456.79"), DEC("-0.79"), None,
                         DEC("1.00"), DEC("-999999999999999999999999999999999999.99")],
                        pa.decimal128(38, 2)),
    })


DEC_FILTERS = ["d > 0", "d = -3", "d IN (0, 1, -3)", "d BETWEEN 0 AND 2", "d > 1000",
               "d = 1.5", "NOT (d = 1.5)", "d > -1 + 2", "0 < d", "d > DECIMAL(5,2) '1.00'",
               "NOT (big = -0.79)", "NOT (big > 0.5)", "big > 1", "big = -0.79",
               "big < 0 OR big IS NULL"]


def dict_table():
    words = ["a", "b", None, "a", "zz", "b"]
    return pa.table({
        "id": pa.array(range(6), pa.int64()),
        "k": pa.array(words).dictionary_encode(),
        "k8": pa.array(words).dictionary_encode().cast(pa.dictionary(pa.int8(), pa.string())),
        "kl": pa.array(words, pa.large_string()).dictionary_encode(),
        "n": pa.array(range(6), pa.int32()),
    })


DICT_FILTERS = ["k = 'a'", "k != 'a'", "k < 'b'", "k IN ('a', 'zz')", "'b' = k",
                "k8 = 'b'", "k8 NOT IN ('a')", "kl > 'a'", "kl = 'zz' OR k8 IS NULL",
                "k LIKE 'z%'", "k = 1"]


def struct_table(storage):
    nulls = storage != "2.0"
    rows = [{"a": i, "b": f"s{i}", "c": {"d": i * 2, "e": i * 3}} for i in range(6)]
    if nulls:
        rows[4] = None
    return pa.table({
        "id": pa.array(range(6), pa.int64()),
        "s": pa.array(rows),
        "ls": pa.array([[{"p": 1, "q": "u"}], [], None, [{"p": 2, "q": None}], [], []]),
    })


def fsl_table():
    return pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "v": pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32(), 2)),
        "l": pa.array([[1], []], pa.list_(pa.int32())),
        "s": pa.array(["a", "b"]),
        "o": pa.array([1, 2], pa.int32()),
    })


def evo_table():
    return pa.table({
        "id": pa.array(range(4), pa.int64()),
        "s": pa.array(["a", "B", None, "dd"]),
        "ls": pa.array(["x", None, "y", ""], pa.large_string()),
        "c": pa.array([1, None, 3, 4], pa.int32()),
    }, schema=pa.schema([pa.field("id", pa.int64(), False), pa.field("s", pa.string()),
                         pa.field("ls", pa.large_string()), pa.field("c", pa.int32())]))


def cases(storage):
    out = []
    out.append(("class1", ts_table(), [
        ("delete", "t_us < TIMESTAMP '1970-01-01 00:00:00'"),
        ("update", ("t_ns > TIMESTAMP '0001-01-01 00:00:00' OR tz_ms > TIMESTAMP(9) '2020-01-01 00:00:00'",
                    {"id": "id + 100"})),
    ], TS_FILTERS))
    out.append(("class2", dec_table(), [("delete", "d > 100"), ("update", ("d = -3", {"d": "d + 1"}))],
                DEC_FILTERS))
    out.append(("class4", dict_table(), [("update", ("k = 'a'", {"n": "n + 10"})),
                                         ("delete", "k8 != 'b'")], DICT_FILTERS))
    s_narrow = pa.table({"id": pa.array([10], pa.int64()),
                         "s": pa.array([{"b": "n", "c": {"e": 9}}])})
    out.append(("class5", struct_table(storage), [
        ("drop_columns", ["s.a"]), ("drop_columns", ["s.c.d"]), ("append", s_narrow),
        ("drop_columns", ["ls.item.p"]),
    ], ["s.b = 's1'", "s.c.e > 3", "s.a = 1", "s IS NULL"]))
    base = fsl_table()
    elem = pa.table({"id": pa.array([3], pa.int64()),
                     "v": pa.array([[5.0, 6.0]], pa.list_(pa.field("element", pa.float32()), 2)),
                     "l": pa.array([[7]], pa.list_(pa.int32())), "s": pa.array(["c"]),
                     "o": pa.array([3], pa.int32())})
    lelem = pa.table({"id": pa.array([4], pa.int64()), "v": base["v"].slice(0, 1),
                      "l": pa.array([[8]], pa.list_(pa.field("element", pa.int32()))),
                      "s": pa.array(["d"]), "o": pa.array([4], pa.int32())})
    view = pa.table({"id": pa.array([5], pa.int64()), "v": base["v"].slice(0, 1),
                     "l": pa.array([[9]], pa.list_(pa.int32())),
                     "s": pa.array(["e"], pa.string_view()), "o": pa.array([5], pa.int32())})
    missing = pa.table({"id": pa.array([6], pa.int64()), "v": base["v"].slice(0, 1),
                        "l": pa.array([[1]], pa.list_(pa.int32()))})
    reordered = pa.table({"o": pa.array([7], pa.int32()), "s": pa.array(["g"]),
                          "l": pa.array([[2]], pa.list_(pa.int32())), "v": base["v"].slice(0, 1),
                          "id": pa.array([7], pa.int64())})
    out.append(("class6", base, [("append", elem), ("append", lelem), ("append", view),
                                 ("append", missing), ("append", reordered)],
                ["s = 'e'", "o IS NULL"]))
    more = pa.table({"id": pa.array([9], pa.int64()), "s": pa.array(["q"]),
                     "ls": pa.array(["w"], pa.large_string()), "c": pa.array([2], pa.int32()),
                     "x": pa.array(["9"]), "u": pa.array(["Q"]), "cc": pa.array(["wx"])})
    out.append(("class7", evo_table(), [
        ("add_columns", {"x": "CAST(id AS string)", "u": "upper(s)", "cc": "concat(ls, 'x')"}),
        ("append", more),
    ], ["x = '2'", "u = 'B'", "cc = 'xx'"]))
    fits = pa.table({"id": pa.array([9], pa.int64()), "s": pa.array(["q"]),
                     "ls": pa.array(["w"], pa.large_string()), "c": pa.array([2], pa.int32()),
                     "i2": pa.array([18], pa.int64()), "k": pa.array(["const"]),
                     "n": pa.array([42], pa.int64()), "c1": pa.array([None], pa.int32())})
    nulls = fits.set_column(4, "i2", pa.array([None], pa.int64()))
    consts = fits.set_column(5, "k", pa.array([None], pa.string()))
    out.append(("class8", evo_table(), [
        ("add_columns", {"i2": "id * 2", "k": "'const'", "n": "42", "c1": "c + 1"}),
        ("append", nulls), ("append", consts), ("append", fits),
    ], ["i2 > 2", "c1 IS NULL"]))
    return out


def main():
    outdir = sys.argv[1]
    t0 = time.time()
    index_path = os.path.join(outdir, "index.json")
    index = json.load(open(index_path)) if os.path.exists(index_path) else {
        "pylance": lance.__version__, "cases": []}
    storages = index.get("storages") or ["2.0", "2.1", "2.2"]
    made = []
    for storage in storages:
        for name, table, steps, filters in cases(storage):
            cname = f"case-{name}-{storage}"
            root = os.path.join(outdir, cname)
            shutil.rmtree(root, ignore_errors=True)
            t1 = time.time()
            c = Crafted(cname, root, storage, table, steps, filters)
            c.run()
            c.write(t1)
            made.append(cname)
    index["cases"] = [c for c in index["cases"] if not c.startswith("case-class")] + made
    with open(index_path, "w") as f:
        json.dump(index, f, indent=1)
    print(f"gen_differential_classes: {len(made)} cases in {time.time() - t0:.1f} s "
          f"(pylance {lance.__version__})")


if __name__ == "__main__":
    np.random.seed(0)
    main()
