#!/usr/bin/env python3
"""Full-text search benchmark: INVERTED index build time and size, query latency (p50 /
p99) — Lancer vs pylance 14 vs tantivy — on the same documents in one run.

    .venv/bench/bin/python bench/fts.py [--docs 1000000] [--iters 30] [--no-record]

Data (written by pylance 14, 10 fragments): `id` int64, `text`: 80-120 words drawn from
a 50,000-word vocabulary with Zipf-like frequencies (s = 1.1). Each engine indexes with
positions (phrase queries): pylance `create_scalar_index(text, INVERTED,
with_position=True)` in-process; Lancer `lancer index create --type inverted
--with-position` (whole process, peak RSS); tantivy (the PyPI package, Rust underneath)
with its English stemming analyzer, positions, 2 threads. Queries, top 10: a common and a
rare term, 3 terms OR, 2 terms AND, a phrase, and 3 terms OR with a prefilter `id <
docs / 10`. Latency in-process: pylance `to_table(full_text_query=…, limit=10)`,
Lancer `lancer-bench fts` (one opened dataset), tantivy `searcher.search(…, 10)` (no
filter). Lancer's top-10 scores must equal pylance's (f32); results are appended to
bench/RESULTS.md.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

import lance
import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import file_read  # noqa: E402
from run import run_cli  # noqa: E402

OUT = os.path.join(file_read.ROOT, "bench", "out", "fts")
VOCAB = 50_000


def vocabulary():
    rng = np.random.default_rng(3)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    out = set()
    while len(out) < VOCAB:
        k = int(rng.integers(3, 10))
        out.add("".join(rng.choice(letters, k)))
    return sorted(out)


def make(docs):
    path = os.path.join(OUT, f"base_{docs}")
    vocab = vocabulary()
    if os.path.exists(os.path.join(path, "_versions")):
        return path, vocab
    shutil.rmtree(path, ignore_errors=True)
    rng = np.random.default_rng(11)
    ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
    p = ranks ** -1.1
    p /= p.sum()
    words = np.array(vocab, dtype=object)
    order = rng.permutation(VOCAB)  # which word gets which frequency rank
    per_file = docs // 10

    def batches():
        for start in range(0, docs, 50_000):
            n = min(50_000, docs - start)
            lens = rng.integers(80, 121, n)
            idx = rng.choice(VOCAB, int(lens.sum()), p=p)
            toks = words[order[idx]]
            texts, at = [], 0
            for ln in lens:
                texts.append(" ".join(toks[at:at + ln]))
                at += ln
            yield pa.record_batch([pa.array(np.arange(start, start + n, dtype=np.int64)), pa.array(texts)],
                                  names=["id", "text"])

    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), path, max_rows_per_file=per_file)
    return path, vocab


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def pct(times, q):
    s = sorted(times)
    return s[round((len(s) - 1) * q)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    exe = os.path.join(file_read.ROOT, "target", "release", "lancer")
    bench_exe = os.path.join(file_read.ROOT, "target", "release", "lancer-bench")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "lancer-cli", "-p", "lancer-bench"], check=True,
                   cwd=file_read.ROOT)
    t = time.perf_counter()
    base, vocab = make(a.docs)
    print(f"data: {a.docs:,} documents ({time.perf_counter() - t:.1f} s)", flush=True)
    py_ds, lan_ds = os.path.join(OUT, "py"), os.path.join(OUT, "lancer")
    for d in (py_ds, lan_ds):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base, d)
    os.sync()

    t = time.perf_counter()
    lance.dataset(py_ds).create_scalar_index("text", "INVERTED", with_position=True)
    py_build = time.perf_counter() - t
    lan_build, _, lan_rss = run_cli(1, [exe, "index", "create", lan_ds, "--column", "text", "--type", "inverted",
                                        "--with-position"])
    py_bytes, lan_bytes = dir_bytes(os.path.join(py_ds, "_indices")), dir_bytes(os.path.join(lan_ds, "_indices"))

    import tantivy
    tv_dir = os.path.join(OUT, "tantivy")
    shutil.rmtree(tv_dir, ignore_errors=True)
    os.makedirs(tv_dir)
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=True, indexed=True, fast=True)
    sb.add_text_field("text", stored=False, tokenizer_name="en_stem", index_option="position")
    schema = sb.build()
    texts = lance.dataset(base).to_table(columns=["id", "text"])
    t = time.perf_counter()
    index = tantivy.Index(schema, path=tv_dir)
    w = index.writer(heap_size=512_000_000, num_threads=2)
    for i, s in zip(texts["id"].to_pylist(), texts["text"].to_pylist()):
        w.add_document(tantivy.Document(id=i, text=s))
    w.commit()
    w.wait_merging_threads()
    tv_build = time.perf_counter() - t
    tv_bytes = dir_bytes(tv_dir)
    del texts
    index.reload()
    searcher = index.searcher()
    print(f"build: pylance {py_build:.1f} s ({py_bytes / 1e6:.0f} MB), Lancer {lan_build:.1f} s "
          f"({lan_bytes / 1e6:.0f} MB, peak RSS {lan_rss / 2**20:.0f} MiB), tantivy {tv_build:.1f} s "
          f"({tv_bytes / 1e6:.0f} MB)", flush=True)

    # query words by frequency rank (the data's permutation is re-derived)
    rng = np.random.default_rng(11)
    order = rng.permutation(VOCAB)
    common, mid, rare = vocab[order[3]], vocab[order[60]], vocab[order[20_000]]
    first_doc = lance.dataset(base).take([7], columns=["text"])["text"][0].as_py().split()
    phrase = " ".join(first_doc[10:12])
    cut = a.docs // 10
    queries = [
        dict(name="1 term (common)", text=common, kind="match"),
        dict(name="1 term (rare)", text=rare, kind="match"),
        dict(name="3 terms OR", text=f"{common} {mid} {rare}", kind="match"),
        dict(name="2 terms AND", text=f"{common} {mid}", kind="and"),
        dict(name="phrase", text=phrase, kind="phrase"),
        dict(name="3 terms OR, prefilter", text=f"{common} {mid} {rare}", kind="match", filter=f"id < {cut}"),
    ]
    for q in queries:
        q["limit"] = 10
    from lance.query import MatchQuery, PhraseQuery

    def py_query(q):
        if q["kind"] == "phrase":
            return PhraseQuery(q["text"], "text")
        if q["kind"] == "and":
            from lance.query import FullTextOperator
            return MatchQuery(q["text"], "text", operator=FullTextOperator.AND)
        return MatchQuery(q["text"], "text")

    ds = lance.dataset(py_ds)
    py = {}
    for q in queries:
        kw = dict(full_text_query=py_query(q), limit=10, columns=["id", "_score"])
        if "filter" in q:
            kw.update(filter=q["filter"], prefilter=True)
        times = []
        for _ in range(a.iters + 1):
            t = time.perf_counter()
            r = ds.to_table(**kw)
            times.append(time.perf_counter() - t)
        py[q["name"]] = dict(first=times[0], p50=pct(times[1:], 0.5), p99=pct(times[1:], 0.99),
                             ids=r["id"].to_pylist(), scores=r["_score"].to_pylist())

    qfile = os.path.join(OUT, "queries.json")
    json.dump(queries, open(qfile, "w"))
    out = subprocess.run([bench_exe, "fts", lan_ds, str(a.iters), qfile], check=True, capture_output=True,
                         text=True).stdout
    lan = {r["name"]: r for r in map(json.loads, out.splitlines())}

    tv = {}
    for q in queries:
        if "filter" in q:
            continue
        if q["kind"] == "phrase":
            text = f'"{q["text"]}"'
        elif q["kind"] == "and":
            text = " AND ".join(q["text"].split())
        else:
            text = q["text"]
        tq = index.parse_query(text, ["text"])
        times = []
        for _ in range(a.iters + 1):
            t = time.perf_counter()
            hits = searcher.search(tq, 10).hits
            times.append(time.perf_counter() - t)
        tv[q["name"]] = dict(p50=pct(times[1:], 0.5), p99=pct(times[1:], 0.99), rows=len(hits))

    rows = []
    for q in queries:
        p, l = py[q["name"]], lan[q["name"]]
        same = [round(s, 6) for s in p["scores"]] == [round(s, 6) for s in l["scores"]]
        t_ = tv.get(q["name"])
        rows.append((q, p, l, t_, same))
        tvs = f"tantivy p50 {t_['p50'] * 1e3:7.2f} ms" if t_ else "tantivy   n/a"
        print(f"{q['name']:22s} pylance p50 {p['p50'] * 1e3:7.2f} ms p99 {p['p99'] * 1e3:7.2f} | "
              f"lancer p50 {l['p50'] * 1e3:7.2f} ms p99 {l['p99'] * 1e3:7.2f} | {tvs} | "
              f"pylance/lancer {p['p50'] / l['p50']:5.2f}x {'' if same else 'SCORES DIFFER'}", flush=True)

    if a.no_record:
        return
    host = os.uname().nodename
    lines = [f"\n## Full-text search — {datetime.date.today()} — {a.docs:,} documents (80-120 words) — {host}, "
             f"{os.cpu_count()} cores\n",
             "`bench/fts.py`: pylance 14 in-process, Lancer in-process (`lancer-bench fts`), tantivy 0.27 (PyPI) "
             "in-process; all index with positions. Top 10 per query.\n",
             "| build | pylance | Lancer (whole process) | tantivy (2 threads) | Lancer / pylance time |",
             "|---|---|---|---|---|",
             f"| time s | {py_build:.1f} | {lan_build:.1f} | {tv_build:.1f} | {lan_build / py_build:.2f} |",
             f"| size MB | {py_bytes / 1e6:.0f} | {lan_bytes / 1e6:.0f} | {tv_bytes / 1e6:.0f} | |",
             f"| peak RSS MiB | | {lan_rss / 2**20:.0f} | | |",
             "",
             "| query | pylance p50 / p99 ms | Lancer p50 / p99 ms | tantivy p50 / p99 ms | pylance / Lancer (p50) | "
             "Lancer / tantivy (p50) | same top-10 scores |",
             "|---|---|---|---|---|---|---|"]
    for q, p, l, t_, same in rows:
        tvs = f"{t_['p50'] * 1e3:.2f} / {t_['p99'] * 1e3:.2f}" if t_ else "n/a"
        ratio = f"{l['p50'] / t_['p50']:.1f}x" if t_ else ""
        lines.append(f"| {q['name']} | {p['p50'] * 1e3:.2f} / {p['p99'] * 1e3:.2f} | {l['p50'] * 1e3:.2f} / "
                     f"{l['p99'] * 1e3:.2f} | {tvs} | {p['p50'] / l['p50']:.2f}x | {ratio} | {'yes' if same else 'NO'} |")
    with open(os.path.join(file_read.ROOT, "bench", "RESULTS.md"), "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
