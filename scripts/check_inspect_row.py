#!/usr/bin/env python3
"""Checks `lancer inspect --row N` against pylance's own file metadata.

    <venv>/bin/python scripts/check_inspect_row.py LANCER_BIN FILE.lance ROW [ROW ...]
    <venv>/bin/python scripts/check_inspect_row.py LANCER_BIN DIR
        (every .lance file in DIR, rows first / middle / last)

For every field of the row walk, each byte range Lancer reports reading must lie inside
a buffer that pylance's LanceFileReader.metadata() lists for one of the (column, page)
pairs the walk names (page buffers, or the column's own buffers such as dictionaries),
and some buffer of the field must be read. Blob fields store their
values in the data region outside any listed buffer: their value reads must lie in that
region (before the column metadata). Prints a JSON summary;
exits 1 on the first mismatch.
"""
import json
import os
import subprocess
import sys

from lance.file import LanceFileReader


class Mismatch(Exception):
    pass


def check(lancer, path, rows):
    """Returns the number of byte ranges checked; raises Mismatch."""
    meta = LanceFileReader(path).metadata()
    blobs = {f.name for f in meta.schema if (f.metadata or {}).get(b"lance-encoding:blob") == b"true"}
    if rows is None:
        n = meta.num_rows
        rows = sorted({0, n // 2, max(n - 1, 0)}) if n else []
    checked = 0
    for row in rows:
        out = subprocess.run([lancer, "inspect", "--json", "--row", str(row), path],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise Mismatch(f"{path} row {row}: lancer failed: {out.stderr.strip()}")
        for f in json.loads(out.stdout)["row"]["fields"]:
            spans = []  # (column, page, start, end)
            for c in f["columns"]:
                col = meta.columns[c["column"]]
                bufs = list(col.pages[c["page"]].buffers) + list(col.column_buffers)
                spans += [(c["column"], c["page"], b.position, b.position + b.size) for b in bufs]
            touched = set()
            for start, length in f["bytes_read"]:
                end = start + length
                owners = [(c, p) for c, p, s, e in spans if s <= start and end <= e]
                if not owners and f["field"] in blobs and end <= meta.num_data_bytes:
                    checked += 1
                    continue
                if not owners:
                    names = [(c["column"], c["page"]) for c in f["columns"]]
                    raise Mismatch(f"{path} row {row} field {f['field']}: range {start}..{end} "
                                   f"is in no buffer pylance lists for (column, page) {names}")
                touched.update(owners)
                checked += 1
            # (An empty or null list reads no item bytes, so not every column is read.)
            if any(s < e for _, _, s, e in spans) and not touched and f["field"] not in blobs:
                raise Mismatch(f"{path} row {row} field {f['field']}: nothing read")
    return checked


def main(lancer, target, rows):
    paths = [target] if target.endswith(".lance") else sorted(
        os.path.join(target, f) for f in os.listdir(target) if f.endswith(".lance"))
    total = 0
    try:
        for p in paths:
            total += check(lancer, p, rows)
    except Mismatch as e:
        print(e)
        return 1
    print(json.dumps({"files": len(paths), "ranges_checked": total}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], [int(r) for r in sys.argv[3:]] or None))
