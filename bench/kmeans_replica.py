#!/usr/bin/env python3
"""Replica (numpy) of the IVF k-means training loop on bench/index.py's 200k x 768 data, to
see how the empty-cluster rule shapes the partitions (ROWS=, DIM= in the environment
for another shape: 1000000 and 128 for the 1M x 128 data): rows scanned per query and recall@10
at 1 / 2 / 4 probes, largest partition, empty clusters.

    .venv/bench/bin/python bench/kmeans_replica.py ITERS,BF,SPLIT [...]

ITERS: iteration cap (the loss tolerance 1e-4 stops it earlier); BF: the reference's
balance factor (0: off); SPLIT: 0 = leave empty clusters, 1 = an empty cluster takes half
of the largest (Lancer's rule since session 19), 2 = the largest drawn by size (the
reference's / FAISS's draw). PP=1 in the environment seeds with k-means++ instead of random
rows; SEED=n draws the init with seed n (default 5); TOL=x the loss tolerance (default
1e-4; 0 runs ITERS iterations, as FAISS runs its 25). Session 19 numbers: `50,0,0` scanned 2,686 / 9,259 / 20,980, `50,0,1` 2,107 / 6,395 /
14,572, `50,0,2` 2,297 / 6,981 / 16,211 (recall at 1 probe 0.997 in all). The init seed
matters as much: with seeds 1 / 2 / 3 (`default_rng(5)` in `train`) the split rule scans
15,771 / 22,160 / 25,010 rows at 4 probes, leaving clusters empty 22,119 / 31,230 / 51,358.
"""
import os
import sys
import time

import numpy as np
rows, dim, k = int(os.environ.get('ROWS', '200000')), int(os.environ.get('DIM', '768')), 256
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from index import draw  # noqa: E402

vec, queries = draw(rows, dim, 200)
vn = (vec**2).sum(1)
def assign(x, c, xn=None, bias=None):
    if xn is None: xn = (x**2).sum(1)
    d = xn[:, None] - 2 * x @ c.T + (c**2).sum(1)[None, :]
    if bias is not None: d = d + bias[None, :]
    a = d.argmin(1)
    return a, d[np.arange(len(x)), a]
s = np.random.default_rng(1).choice(rows, k * 256, replace=False)
X = vec[s]; Xn = vn[s]
def pickbig(sizes, r):
    n = sizes.sum(); j = 0
    while True:
        p = (sizes[j] - 1) / (n - len(sizes))
        if r.random() < p: return j
        j = (j + 1) % len(sizes)
sp_mode = 0
PP = os.environ.get('PP') == '1'
TOL = float(os.environ.get('TOL', '1e-4'))
def train(iters, bf=0.0, split=False):
    r = np.random.default_rng(int(os.environ.get('SEED', '5')))
    if PP:
        idx = [r.integers(len(X))]; dmin = ((X - X[idx[0]])**2).sum(1)
        for _ in range(k - 1):
            p = dmin / dmin.sum(); j = r.choice(len(X), p=p); idx.append(j)
            dmin = np.minimum(dmin, ((X - X[j])**2).sum(1))
        c = X[idx].copy()
    else:
        c = X[r.choice(len(X), k, replace=False)].copy()
    sizes = np.zeros(k); last = None; adj = 0.0
    for it in range(iters):
        # reference: penalty balance_factor * size, balance_factor adjusted per iteration
        eff = min(bf, adj) if it > 0 else 0.0
        bias = eff * sizes if eff > 0 else None
        a, d = assign(X, c, Xn, bias)
        sizes = np.bincount(a, minlength=k).astype(float)
        big = sizes.argmax(); dm = d[a == big]
        adj = (dm.max() - dm.mean()) / len(X)
        loss = d.sum()
        for j in range(k):
            if sizes[j] > 0: c[j] = X[a == j].mean(0)
        if split:
            for j in np.where(sizes == 0)[0]:
                big = pickbig(sizes, r) if sp_mode == 2 else sizes.argmax(); c[j] = c[big] * (1 + 1/1024); c[big] *= (1 - 1/1024); sizes[j] = sizes[big]/2; sizes[big] -= sizes[j]
        if last is not None and abs(last - loss) <= TOL * last: break
        last = loss
    return c, it + 1
def refine(c, rounds):
    """Merge-and-split moves after training (SWAP=n): the two closest centroids (likely
    one natural cluster cut in two) become one, and the freed centroid starts at the
    row farthest from its centroid in the partition of largest squared error; three
    Lloyd iterations, kept if the loss fell, else the moves stop."""
    a, d = assign(X, c, Xn); loss = d.sum(); done = 0
    for _ in range(rounds):
        cc = (c**2).sum(1); D = cc[:, None] - 2 * c @ c.T + cc[None, :]; np.fill_diagonal(D, np.inf)
        i, j = np.unravel_index(D.argmin(), D.shape)
        sse = np.bincount(a, weights=d, minlength=k); big = sse.argmax()
        c2 = c.copy(); ni, nj = (a == i).sum(), (a == j).sum()
        c2[i] = (c[i] * ni + c[j] * nj) / max(ni + nj, 1)
        members = np.where(a == big)[0]; c2[j] = X[members[d[members].argmax()]]
        for _ in range(3):
            a2, _ = assign(X, c2, Xn)
            for t in range(k):
                m = a2 == t
                if m.any(): c2[t] = X[m].mean(0)
        a2, d2 = assign(X, c2, Xn)
        if d2.sum() < loss:
            c, a, d, loss = c2, a2, d2, d2.sum(); done += 1
        else:
            break
    return c, done
def evaluate(c, name, its):
    a, _ = assign(vec, c, vn)
    sz = np.bincount(a, minlength=k)
    qd = (queries**2).sum(1)[:, None] - 2 * queries @ c.T + (c**2).sum(1)[None, :]
    order = np.argsort(qd, 1)
    out = []
    for npb in (1, 2, 4):
        scanned = 0; rec = 0
        for qi, q in enumerate(queries):
            parts = order[qi, :npb]
            mask = np.isin(a, parts); scanned += mask.sum()
            idx = np.where(mask)[0]
            dd = vn[idx] - 2 * vec[idx] @ q
            got = set(idx[np.argsort(dd)[:10]].tolist())
            tru = np.argsort(vn - 2 * vec @ q)[:10]
            rec += len(got & set(tru.tolist())) / 10
        out.append(f"np{npb}: scanned {scanned/200:.0f} recall {rec/200:.3f}")
    print(f"{name} iters={its} max={sz.max()} empty={(sz==0).sum()} sum_s2/N={(sz.astype(float)**2).sum()/rows:.0f} | " + " | ".join(out), flush=True)
for cfg in sys.argv[1:]:
    it, bf, sp = cfg.split(","); sp_mode = int(sp)
    t = time.time(); c, its = train(int(it), float(bf), sp != "0")
    evaluate(c, f"iters<={it} bf={bf} split={sp} ({time.time()-t:.0f}s)", its)
    if int(os.environ.get('SWAP', '0')):
        t = time.time(); c, done = refine(c, int(os.environ['SWAP']))
        evaluate(c, f"  + {done} merge/split moves ({time.time()-t:.0f}s)", its)
