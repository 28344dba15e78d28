#!/usr/bin/env python3
"""The Python package against pylance and against Lancer's own Rust API, in one run.

    bench/python [--iters N] [--repeat N] [--only SHAPE,...] [--no-record]

On bench/run's generated shapes (written by pylance 14; made here if missing), each
dataset opened once per engine: `to_table()` (full scan), `to_table(filter=...)`,
`take` of 1 / 100 / 10,000 rows (all columns), and an exact k=10 `nearest` returning
`id` and `_distance` — through `import lance` (pylance 14), `import lancer` (this
package, release build) and `lancer-bench api` (the same calls through the Rust API,
in-process); each engine runs in a Python process of its own (`--child`), so one's
threads and memory traffic do not fall into the other's timings, and the Rust and
lancer processes alternate `--repeat` times (the VM's speed drifts between runs). Prints
the ratios pylance / lancer and lancer(Python) / Rust (the wrapper's overhead; of the
best rounds and of the medians) and appends the table to bench/RESULTS.md.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402
import run as runbench  # noqa: E402


SHAPES = ["issue", "wide_768"]


def shape_ops(name, path):
    """The timed calls on shape `name` (data under `path`): (label, key, f(dataset))."""
    spec = runbench.SHAPES[name]
    vec = spec["search"]
    q = np.array(json.load(open(os.path.join(path, f"q_{vec}.json"))), dtype=np.float32)
    ops = [
        ("to_table()", "scan", lambda d: d.to_table()),
        (f"to_table(filter=\"{spec['filter']}\")", "filtered", lambda d: d.to_table(filter=spec["filter"])),
    ]
    for n, f in idx_files(path):
        idx = np.fromfile(f, dtype="<u8").astype(np.int64)
        ops.append((f"take {n:,} rows", f"take_{n}", lambda d, idx=idx: d.take(idx)))
    ops.append(("nearest k=10 (exact)", "nearest",
                lambda d: d.to_table(nearest={"column": vec, "q": q, "k": 10, "use_index": False}, columns=["id"])))
    return ops


def version(dist):
    from importlib.metadata import version as v

    return v(dist)


def idx_files(path):
    out = []
    for n in (1, 100, 10_000):
        f = os.path.join(path, f"idx_{n}.bin")
        if n == 1 and not os.path.exists(f):
            np.fromfile(os.path.join(path, "idx_100.bin"), dtype="<u8")[37:38].tofile(f)
        out.append((n, f))
    return out


def child(engine, name, path, iters, out_dir):
    """One engine's calls in a process of its own (`--child`): the other engine's
    threads, allocations and cache traffic cannot touch its timings (pylance's take of
    10,000 rows runs for ~20 s just before). Prints the seconds per call (JSON) and
    writes each call's result to OUT_DIR/KEY.arrow for the parent to compare."""
    import pyarrow as pa

    lib = __import__("lance" if engine == "pylance" else "lancer")
    d = lib.dataset(os.path.join(path, "ds"))
    times = {}
    for _label, key, f in shape_ops(name, path):
        t, r = runbench.per_call(iters, lambda: f(d))
        times[key] = t
        with pa.OSFile(os.path.join(out_dir, f"{key}.arrow"), "wb") as sink:
            with pa.ipc.new_file(sink, r.schema) as w:
                w.write_table(r)
        # Freed before the next call's rounds, as `lancer-bench api` frees each result:
        # kept, the full scan's table (614 MB on wide_768) lived through the filtered
        # scan and was freed just before the takes' rounds.
        del r
    print(json.dumps(times))


def bench_shape(name, path, iters, bench_exe, repeat):
    import tempfile

    import pyarrow as pa

    spec = runbench.SHAPES[name]
    ds_path = os.path.join(path, "ds")
    vec = spec["search"]

    def rust_once():
        out = json.loads(subprocess.run([bench_exe, "api", ds_path, str(iters), spec["filter"], vec,
                                         os.path.join(path, f"q_{vec}.json"), *[f for _, f in idx_files(path)]],
                                        capture_output=True, text=True, check=True).stdout)
        return {k: v["t"] for k, v in out.items()}, {k: v["rows"] for k, v in out.items()}

    def child_once(engine, tmp):
        out = os.path.join(tmp, engine)
        os.makedirs(out, exist_ok=True)
        times = json.loads(subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", engine, "--shape", name, "--path", path,
             "--iters", str(iters), "--out", out], capture_output=True, text=True, check=True).stdout)
        return times, {key: pa.ipc.open_file(os.path.join(out, f"{key}.arrow")).read_all()
                       for _, key, _ in shape_ops(name, path)}

    def merge(runs):
        # best: the least of the runs' bests; median: the middle of their medians
        return {k: {"best": min(r[k]["best"] for r in runs),
                    "median": sorted(r[k]["median"] for r in runs)[len(runs) // 2]} for k in runs[0]}

    # The Rust API process and lancer's Python process alternate `repeat` times: this
    # VM's speed drifts by 10-20% over minutes, and one run of each, minutes apart, read
    # that drift as wrapper overhead. pylance runs once (its 10,000-row take alone takes
    # minutes).
    rust_runs, lancer_runs, rust_rows, res = [], [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            r, rust_rows = rust_once()
            rust_runs.append(r)
            lt, res["lancer"] = child_once("lancer", tmp)
            lancer_runs.append(lt)
        py, res["pylance"] = child_once("pylance", tmp)
    rust = merge(rust_runs)
    t = {"lancer": merge(lancer_runs), "pylance": merge([py])}
    rows = []
    for label, key, _ in shape_ops(name, path):
        t_py, t_lan = t["pylance"][key]["best"], t["lancer"][key]["best"]
        med_ratio = t["lancer"][key]["median"] / rust[key]["median"]
        r_py, r_lan = res["pylance"][key], res["lancer"][key]
        same = r_py.num_rows == r_lan.num_rows
        if key == "nearest":
            same = same and r_py["id"].to_pylist() == r_lan["id"].to_pylist()
        elif key.startswith("take"):
            same = same and r_py.equals(r_lan)
        else:
            same = same and r_py.num_rows == rust_rows[key]
        t_rust = rust[key]["best"]
        rows.append(dict(shape=name, op=label, pylance=t_py, lancer=t_lan, rust=t_rust, med_ratio=med_ratio, same=same))
        print(f"  {label:44s} pylance {t_py:10.6f}  lancer {t_lan:10.6f} {t_py / t_lan:7.2f}x  rust {t_rust:10.6f}  "
              f"python/rust {t_lan / t_rust:5.2f} (medians {med_ratio:5.2f})  {'same' if same else 'DIFFERENT'}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3,
                    help="Rust API and lancer processes alternate this many times; best per call")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--child", choices=["lancer", "pylance"], help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.shape, a.path, a.iters, a.out)
    root = file_read.ROOT
    subprocess.run(["cargo", "build", "--release", "-p", "lancer-bench"], cwd=root, check=True)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(root, "target")
    bench_exe = os.path.join(target, "release", "lancer-bench")
    shapes = [s for s in SHAPES if not a.only or s in a.only.split(",")]
    results = []
    for name in shapes:
        path, _ = runbench.make_shape(name, runbench.SHAPES[name], 1.0)
        print(f"{name}: {runbench.SHAPES[name]['about']}", flush=True)
        results += bench_shape(name, path, a.iters, bench_exe, max(1, a.repeat))
    lines = ["### Python package: `import lancer` vs `import lance` vs the Rust API",
             f"{datetime.date.today()}, {file_read.machine()}, pylance {version('pylance')}, lancer {version('lancer')} "
             f"(release build), best of {a.iters} rounds (calls under 50 ms repeated within a round, time per call; the medians' ratio beside), each engine in a process of its own, each dataset opened once per engine, page cache warm; "
             f"the Rust API's and lancer's processes alternate {max(1, a.repeat)} times, best per call. "
             "Rust = `lancer-bench api`, the same calls in-process.", "",
             "| shape | call | pylance (s) | lancer (s) | pylance / lancer | Rust API (s) | lancer / Rust | lancer / Rust, medians | same result |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['shape']} | {r['op']} | {r['pylance']:.6f} | {r['lancer']:.6f} | {r['pylance'] / r['lancer']:.2f}x "
                     f"| {r['rust']:.6f} | {r['lancer'] / r['rust']:.2f} | {r['med_ratio']:.2f} | {'yes' if r['same'] else '**no**'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.no_record:
        with open(os.path.join(root, "bench", "RESULTS.md"), "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
