#!/usr/bin/env python3
"""Interop check: pylance reads files Lancer wrote, with identical values.

    <venv>/bin/python scripts/check_lancer_files.py DIR

DIR holds NAME.lance files written by Lancer and NAME.arrow files with the values
they must contain. For each pair, pylance's LanceFileReader reads the whole file and
a few random rows (take_rows); every column must equal the expected one exactly.
Prints one line per failure and exits 1 if there is any.
"""
import os
import sys
import tempfile

import pyarrow as pa
import lance
from lance.file import LanceFileReader, LanceFileWriter


def same(a, b):
    """Exact equality, with NaN equal to NaN (Arrow's equals says otherwise)."""
    if a.equals(b):
        return True
    if len(a) != len(b) or a.type != b.type:
        return False

    def norm(x):
        if isinstance(x, float) and x != x:
            return "NaN"
        if isinstance(x, list):
            return [norm(y) for y in x]
        if isinstance(x, dict):
            return {k: norm(v) for k, v in x.items()}
        if isinstance(x, tuple):
            return tuple(norm(y) for y in x)
        return x

    return norm(a.to_pylist()) == norm(b.to_pylist())


def combined(col):
    """One array of a column's chunks; dictionary chunks are decoded to their values
    first (pyarrow cannot unify dictionaries holding a null item, which pylance's 2.0
    reader returns as its own files hold them). The field's type is checked apart."""
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.combine_chunks()


def own_round_trip(table, name):
    """None when this pylance reads back its own file of `table`, else its error."""
    ver = "2.0" if ".v2.0" in name else "2.1" if ".v2.1" in name else "2.2"
    path = os.path.join(tempfile.mkdtemp(), "own.lance")
    try:
        with LanceFileWriter(path, table.schema, version=ver) as w:
            w.write_batch(table)
        LanceFileReader(path).read_all().to_table()
        return None
    except BaseException as e:
        return str(e).splitlines()[0][:200]


def main(d):
    known = []
    failures = []
    checked = 0
    for name in sorted(os.listdir(d)):
        if not name.endswith(".lance"):
            continue
        stem = os.path.join(d, name[: -len(".lance")])
        want = pa.ipc.open_file(stem + ".arrow").read_all()
        try:
            r = LanceFileReader(stem + ".lance")
            got = r.read_all().to_table()
        except BaseException as e:  # report, do not stop (pylance panics are BaseExceptions)
            if own_round_trip(want, name) is None:
                failures.append(f"{name}: pylance {lance.__version__} cannot read it: {str(e).splitlines()[0][:300]}")
                continue
            # pylance cannot read its own file of the same data either: a bug of this
            # pylance version. Check the file column by column instead, and accept
            # only the columns it cannot round-trip itself.
            cols = []
            for c in want.schema.names:
                try:
                    cols.append(LanceFileReader(stem + ".lance", columns=[c]).read_all().to_table().column(0))
                except BaseException as ce:
                    own = own_round_trip(want.select([c]), name)
                    if own is None:
                        failures.append(f"{name}: pylance {lance.__version__} cannot read column {c}: {str(ce).splitlines()[0][:300]}")
                    else:
                        known.append(f"{name}: column {c}: pylance {lance.__version__} cannot read it, nor its own file of it ({own})")
                    want = want.drop_columns([c])
            got = pa.table(cols, schema=want.schema) if cols else want.slice(0, 0)
            if not cols:
                continue
        checked += 1
        for f in want.schema:
            g = got.schema.field(f.name)
            if (g.metadata or {}) != (f.metadata or {}) or g.nullable != f.nullable or g.type != f.type:
                failures.append(f"{name}: field {f.name} is {g} {g.metadata}, want {f} {f.metadata}")
        if (got.schema.metadata or {}) != (want.schema.metadata or {}):
            failures.append(f"{name}: schema metadata {got.schema.metadata}, want {want.schema.metadata}")
        for col in want.schema.names:
            w = combined(want.column(col))
            g = combined(got.column(col))
            if not same(w, g):
                n = next((i for i in range(len(w)) if not same(w.slice(i, 1), g.slice(i, 1))), -1)
                failures.append(f"{name}: column {col} differs at row {n}: got {g[n] if n >= 0 else '?'}, want {w[n] if n >= 0 else '?'}")
        n = want.num_rows
        if n > 2:
            idx = sorted({0, n // 3, n - 1})
            try:
                t = LanceFileReader(stem + ".lance", columns=want.schema.names).take_rows(idx).to_table()
                for col in want.schema.names:
                    if not same(combined(t.column(col)), combined(want.column(col).take(pa.array(idx)))):
                        failures.append(f"{name}: take_rows {idx} column {col} differs")
            except BaseException as e:
                failures.append(f"{name}: take_rows failed: {str(e).splitlines()[0][:300]}")
    for f in known:
        print("known pylance bug:", f)
    for f in failures:
        print(f)
    print(f"pylance {lance.__version__}: {checked} Lancer-written files read, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
