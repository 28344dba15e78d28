#!/usr/bin/env python3
"""Lancer on Ray against lance-ray (pylance underneath) and Ray Data's own reader, on
one local Ray cluster and the same data, in one run.

    .venv/py/bin/python bench/ray_bench.py [--rows 2000000] [--blocks 8] [--dim 32] [--no-record]
                                           [--reads-only]

Runs in the test venv (.venv/py: Ray 2.60, pylance 14) after `maturin develop --release`
of the `lancer` package (the script builds it unless `--no-build`) and installs lance-ray
0.5.0 there if it is missing. Measures, on a 2-CPU local cluster:

- write: a Ray Dataset of `--rows` rows (id, a float, a short string, a `--dim`-d float32
  vector) in `--blocks` blocks written by `lancer.ray.write_lancer` and by
  `lance_ray.write_lance` (rows / s, each into an empty directory);
- read: the dataset pylance wrote, read in full (`materialize()`) by
  `lancer.ray.read_lancer`, `lance_ray.read_lance` and `ray.data.read_lance`, and with a
  projection and filter pushed down;
- index build: IVF_PQ on the vector column by `lancer.ray.create_index` with 1 and 2
  workers, `lance_ray.create_index` with 2, and pylance's single-process `create_index`.

`--reads-only` writes the dataset with pylance (a fragment per block) and runs only the
reads (larger `--rows` show the rates once Ray's fixed costs per read are amortized).
Each timing is the best of `--iters` runs. Appends a table to bench/RESULTS.md.
"""

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import file_read  # noqa: E402


def ensure(a):
    try:
        import lance_ray  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "lance-ray==0.5.0"], check=True)
    if not a.no_build:
        env = dict(os.environ, VIRTUAL_ENV=os.path.dirname(os.path.dirname(sys.executable)),
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
        subprocess.run(["maturin", "develop", "--release", "--quiet"], cwd=os.path.join(ROOT, "python"),
                       env=env, check=True)


def table(lo, hi, dim):
    rng = np.random.default_rng(lo)
    n = hi - lo
    ids = np.arange(lo, hi)
    v = (rng.normal(size=(n, dim)) + (ids % 16)[:, None]).astype(np.float32)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "x": pa.array(ids * 0.5),
        "name": pa.array([f"n{i % 100000}" for i in ids]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), dim),
    })


def best(f, iters):
    out = []
    for _ in range(iters):
        t = time.perf_counter()
        r = f()
        out.append(time.perf_counter() - t)
    return min(out), r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--reads-only", action="store_true")
    a = ap.parse_args()
    ensure(a)
    import lance
    import lance_ray
    import ray

    import lancer
    import lancer.ray as lray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    step = a.rows // a.blocks
    work = tempfile.mkdtemp(prefix="ray-bench-")
    rows = []

    def fresh(name):
        p = os.path.join(work, name)
        shutil.rmtree(p, ignore_errors=True)
        return p

    # --- write
    if a.reads_only:
        uri = fresh("w_lance_ray")
        for i in range(a.blocks):
            lance.write_dataset(table(i * step, a.rows if i == a.blocks - 1 else (i + 1) * step, a.dim), uri,
                                mode="append" if i else "create", max_rows_per_file=a.rows)
        reads(a, uri, rows, lray, lance_ray, ray)
        ray.shutdown()
        shutil.rmtree(work, ignore_errors=True)
        return record(a, rows, {}, ray, lance)
    src = ray.data.from_arrow([table(i * step, a.rows if i == a.blocks - 1 else (i + 1) * step, a.dim)
                               for i in range(a.blocks)]).materialize()
    t_lan, _ = best(lambda: lray.write_lancer(src, fresh("w_lancer")), a.iters)
    t_lr, _ = best(lambda: lance_ray.write_lance(src, fresh("w_lance_ray"), min_rows_per_file=step), a.iters)
    assert lancer.dataset(os.path.join(work, "w_lancer")).count_rows() == a.rows
    assert lance.dataset(os.path.join(work, "w_lance_ray")).count_rows() == a.rows
    rows.append(("write (rows/s)", a.rows / t_lr, None, a.rows / t_lan))
    print(f"write: lance-ray {a.rows / t_lr:,.0f} rows/s, lancer {a.rows / t_lan:,.0f} rows/s", flush=True)

    # --- read (pylance's files)
    uri = os.path.join(work, "w_lance_ray")
    reads(a, uri, rows, lray, lance_ray, ray)

    # --- IVF_PQ builds (seconds)
    sub = max(1, a.dim // 8)
    builds = {}
    for workers in (1, 2):
        p = fresh(f"i_lancer_{workers}")
        shutil.copytree(uri, p)
        builds[f"lancer.ray {workers} worker(s)"] = best(
            lambda: lray.create_index(p, "vec", "IVF_PQ", num_partitions=64, num_sub_vectors=sub,
                                      num_workers=workers), 1)[0]
    p = fresh("i_lance_ray")
    shutil.copytree(uri, p)
    builds["lance-ray 2 workers"] = best(
        lambda: lance_ray.create_index(p, "vec", "IVF_PQ", num_partitions=64, num_sub_vectors=sub,
                                       num_workers=2), 1)[0]
    p = fresh("i_pylance")
    shutil.copytree(uri, p)
    builds["pylance create_index (1 process)"] = best(
        lambda: lance.dataset(p).create_index("vec", "IVF_PQ", num_partitions=64, num_sub_vectors=sub), 1)[0]
    for k, v in builds.items():
        print(f"IVF_PQ build, {k}: {v:.2f} s", flush=True)
    ray.shutdown()
    shutil.rmtree(work, ignore_errors=True)
    record(a, rows, builds, ray, lance)


def reads(a, uri, rows, lray, lance_ray, ray):
    """Pylance's dataset at ``uri`` read by the three readers, in full and with a
    projection and filter; rows/s appended to ``rows``."""
    for label, cols, flt in (("read all", None, None), ("read id,x where x < 1e5", ["id", "x"], "x < 100000")):
        t_lan, n1 = best(lambda: lray.read_lancer(uri, columns=cols, filter=flt).materialize().count(), a.iters)
        t_lr, n2 = best(lambda: lance_ray.read_lance(uri, columns=cols, filter=flt).materialize().count(), a.iters)
        t_rd, n3 = best(lambda: ray.data.read_lance(uri, columns=cols, filter=flt).materialize().count(), a.iters)
        assert n1 == n2 == n3, (n1, n2, n3)
        rows.append((f"{label} (rows/s)", n2 / t_lr, n3 / t_rd, n1 / t_lan))
        print(f"{label}: lance-ray {n2 / t_lr:,.0f}, ray.data.read_lance {n3 / t_rd:,.0f}, "
              f"lancer {n1 / t_lan:,.0f} rows/s", flush=True)


def record(a, rows, builds, ray, lance):
    """Appends the run's tables to bench/RESULTS.md."""
    lines = [f"### Ray: lancer.ray vs lance-ray 0.5.0 and Ray Data's read_lance, {a.rows:,} rows "
             f"(id, x, name, {a.dim}-d vec) in {a.blocks} blocks",
             f"{datetime.date.today()}, {file_read.machine()}, "
             f"Ray {ray.__version__}, pylance {lance.__version__}; local cluster of 2 CPUs; best of {a.iters}", "",
             "| step | lance-ray | ray.data (read_lance) | lancer.ray | lancer / lance-ray |", "|---|---|---|---|---|"]
    for label, lr_v, rd_v, lan_v in rows:
        rd = "—" if rd_v is None else f"{rd_v:,.0f}"
        lines.append(f"| {label} | {lr_v:,.0f} | {rd} | {lan_v:,.0f} | {lan_v / lr_v:.2f}x |")
    if builds:
        lines += ["", "| IVF_PQ build (64 partitions) | seconds |", "|---|---|"]
        lines += [f"| {k} | {v:.2f} |" for k, v in builds.items()]
    file_read.record(lines, a.no_record)


if __name__ == "__main__":
    main()
