#!/usr/bin/env python3
"""What one commit costs as a dataset's fragment count grows: the inputs of
docs/scaling.md's estimate for 1,000 workers.

    .venv/py/bin/python bench/commit_scaling.py [--fragments 10,100,1000,10000] [--s3 1000] [--no-record]

For each count F: F fragments of 10 rows are written uncommitted
(`lancer.fragment.write_fragments`, one file each) and committed in one `Append` (the
two-phase driver's commit of F workers' fragments); then one more single-fragment append
is committed on top (what any later writer pays on a dataset of F fragments). Reports the
seconds of each commit, the manifest's bytes (per fragment) and, with `--s3 N` (the test
S3 server in AWS_* / LANCER_S3_BUCKET, as scripts/test.sh sets them), the same on S3 for
counts up to N. Run with the release build of the package (`maturin develop --release`).
Appends a table to bench/RESULTS.md.
"""

import argparse
import datetime
import os
import sys
import shutil
import tempfile
import time
import uuid

import pyarrow as pa

import lancer
from lancer.fragment import write_fragments

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import file_read  # noqa: E402


def table(n, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "x": [float(i) for i in range(n)]})


def one(uri, frags):
    lancer.write_dataset(table(10), uri)
    fr = write_fragments(table(10 * frags, 10), uri, max_rows_per_file=10, mode="append")
    assert len(fr) == frags
    v = lancer.dataset(uri).version
    t = time.perf_counter()
    lancer.LanceDataset.commit(uri, lancer.LanceOperation.Append(fr), read_version=v)
    big = time.perf_counter() - t
    one_more = write_fragments(table(10, 10 * frags + 10), uri, mode="append")
    v = lancer.dataset(uri).version
    t = time.perf_counter()
    lancer.LanceDataset.commit(uri, lancer.LanceOperation.Append(one_more), read_version=v)
    small = time.perf_counter() - t
    t = time.perf_counter()
    ds = lancer.dataset(uri)
    opened = time.perf_counter() - t
    assert len(ds.get_fragments()) == frags + 2
    return big, small, opened


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fragments", default="10,100,1000,10000")
    ap.add_argument("--s3", type=int, default=0, help="also on the S3 test server, counts up to this")
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    rows = []
    work = tempfile.mkdtemp(prefix="commit-scaling-")
    for f in [int(x) for x in a.fragments.split(",")]:
        uri = os.path.join(work, f"d{f}")
        big, small, opened = one(uri, f)
        vdir = os.path.join(uri, "_versions")
        newest = max((os.path.join(vdir, n) for n in os.listdir(vdir) if n.endswith(".manifest")),
                     key=os.path.getmtime)
        size = os.path.getsize(newest)
        rows.append(("local", f, big, small, opened, size))
        print(f"local, {f} fragments: commit of all {big:.3f} s, next append {small:.3f} s, open {opened:.3f} s, "
              f"manifest {size:,} bytes ({size / (f + 2):.0f} per fragment)", flush=True)
        shutil.rmtree(uri)
        if a.s3 and f <= a.s3 and os.environ.get("LANCER_S3_BUCKET"):
            s3 = f"s3://{os.environ['LANCER_S3_BUCKET']}/commit-scaling-{uuid.uuid4().hex}"
            big, small, opened = one(s3, f)
            rows.append(("S3 (moto)", f, big, small, opened, None))
            print(f"S3, {f} fragments: commit of all {big:.3f} s, next append {small:.3f} s, open {opened:.3f} s",
                  flush=True)
    shutil.rmtree(work, ignore_errors=True)
    lines = ["### Commit cost against fragment count (inputs of docs/scaling.md)",
             f"{datetime.date.today()}, {file_read.machine()}, lancer (Python, release); "
             "F fragments of 10 rows committed in one Append, then one more append on top", "",
             "| store | fragments | commit of all (s) | next append (s) | open (s) | manifest bytes | bytes per fragment |",
             "|---|---|---|---|---|---|---|"]
    for store, f, big, small, opened, size in rows:
        per = "—" if size is None else f"{size / (f + 2):.0f}"
        lines.append(f"| {store} | {f:,} | {big:.3f} | {small:.3f} | {opened:.3f} | "
                     f"{'—' if size is None else f'{size:,}'} | {per} |")
    file_read.record(lines, a.no_record)


if __name__ == "__main__":
    main()
