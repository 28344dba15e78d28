#!/usr/bin/env python3
"""Interop check: pylance reads datasets Lancer wrote, at every version, and can go on
writing to them.

    <venv>/bin/python scripts/check_lancer_dataset.py DATASET EXPECTED_DIR

EXPECTED_DIR/index.json lists the versions (and tags); EXPECTED_DIR/v<N>.arrow holds the
rows each version must contain. Every version must read identically in pylance,
count_rows must agree, and tags must resolve. Then pylance appends 100 rows to a copy of
the dataset, deletes some, and checks its own result; the copy is left as
DATASET.pylance-<major> for Lancer to read back. Exits 1 on any failure.
"""
import json
import os
import shutil
import sys

import pyarrow as pa
import lance


def same(a, b):
    return a.equals(b) or a.to_pylist() == b.to_pylist()


def main(path, exp):
    index = json.load(open(os.path.join(exp, "index.json")))
    failures = []
    for v in index["versions"]:
        n = v["version"]
        want = pa.ipc.open_file(os.path.join(exp, f"v{n}.arrow")).read_all()
        try:
            ds = lance.dataset(path, version=n)
            got = ds.to_table()
        except Exception as e:
            failures.append(f"v{n}: pylance cannot open it: {str(e).splitlines()[0][:300]}")
            continue
        if ds.count_rows() != want.num_rows:
            failures.append(f"v{n}: count_rows {ds.count_rows()} != {want.num_rows}")
        for col in want.schema.names:
            if not same(got.column(col).combine_chunks(), want.column(col).combine_chunks()):
                failures.append(f"v{n}: column {col} differs")
    for tag, v in index.get("tags", {}).items():
        try:
            if lance.dataset(path, version=tag).version != v:
                failures.append(f"tag {tag} does not resolve to {v}")
        except Exception as e:
            failures.append(f"tag {tag}: {str(e).splitlines()[0][:200]}")
    # pylance goes on writing to a copy.
    major = lance.__version__.split(".")[0]
    copy = f"{path}.pylance-{major}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(path, copy)
    try:
        ds = lance.dataset(copy)
        before = ds.count_rows()
        extra = ds.to_table().slice(0, 100)
        ds = lance.write_dataset(extra, copy, mode="append")
        if "id" in ds.schema.names:
            ds.delete("id < 0")
        ds = lance.dataset(copy)
        if ds.count_rows() != before + extra.num_rows:
            failures.append(f"pylance append: {ds.count_rows()} rows, expected {before + extra.num_rows}")
        with open(copy + ".expected.json", "w") as f:
            json.dump({"version": ds.version, "rows": ds.count_rows()}, f)
        want = ds.to_table()
        with pa.OSFile(copy + ".expected.arrow", "wb") as f:
            with pa.ipc.new_file(f, want.schema) as w:
                w.write_table(want)
    except Exception as e:
        failures.append(f"pylance could not write to the dataset: {str(e).splitlines()[0][:300]}")
    for f in failures:
        print(f)
    print(f"pylance {lance.__version__}: {len(index['versions'])} versions of {os.path.basename(path)} checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
