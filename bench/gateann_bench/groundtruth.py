#!/usr/bin/env python3
"""Exact (filtered) k-NN ground truth with numpy, batched, cached on disk.

L2: d(x, q)^2 = |x|^2 - 2 x.q + |q|^2 computed in float32 as one matrix multiply
per (row chunk x query batch); filtered-out rows get +inf; every query keeps its
best k+EXTRA candidates, which are re-ranked at the end with exact float64
distances (so float32 rounding cannot reorder the true top k).

Cache: bench/data/<dataset>/gt/<workload key>_nq<nq>_k<k>.npz with
  ids     (nq, k) int64, 1-based row ids, -1 where fewer than k rows match
  dists   (nq, k) float64 L2 distances
  nmatch  (nq,)   number of rows matching each query's filter
  params  the workload's per-query filter values (checked on reuse)

CLI:  python3 -m gateann_bench groundtruth --n 100000 --dim 128 --workload label10 --nq 200
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from .common import log
from .gen import Dataset, DatasetSpec
from .workloads import WORKLOADS, Workload

EXTRA = 22
ROW_CHUNK = 131072
Q_BATCH = 256


def compute(ds: Dataset, wl: Workload, nq: int, k: int = 10) -> dict:
    params = wl.params(nq, ds)
    Q = np.ascontiguousarray(ds.queries[:nq], np.float32)
    qq = (Q.astype(np.float64) ** 2).sum(1).astype(np.float32)
    kk = k + EXTRA
    best_d = np.full((nq, kk), np.inf, np.float32)
    best_i = np.full((nq, kk), -1, np.int64)
    nmatch = np.zeros(nq, np.int64)
    n = ds.spec.n
    for s in range(0, n, ROW_CHUNK):
        e = min(n, s + ROW_CHUNK)
        X = np.asarray(ds.vectors[s:e], np.float32)
        xx = (X * X).sum(1)
        for b in range(0, nq, Q_BATCH):
            bq = slice(b, min(nq, b + Q_BATCH))
            d = xx[None, :] - 2.0 * (Q[bq] @ X.T) + qq[bq, None]
            m = wl.mask(ds, s, e, params[bq])
            if m is not None:
                d[~m] = np.inf
                nmatch[bq] += m.sum(1)
            else:
                nmatch[bq] += e - s
            take = min(kk, e - s)
            part = np.argpartition(d, take - 1, axis=1)[:, :take]
            cd = np.concatenate([best_d[bq], np.take_along_axis(d, part, 1)], 1)
            ci = np.concatenate([best_i[bq], part + s], 1)
            keep = np.argpartition(cd, kk - 1, axis=1)[:, :kk]
            best_d[bq] = np.take_along_axis(cd, keep, 1)
            best_i[bq] = np.take_along_axis(ci, keep, 1)
    # exact re-rank in float64
    ids = np.full((nq, k), -1, np.int64)
    dists = np.full((nq, k), np.inf)
    for qi in range(nq):
        cand = best_i[qi][np.isfinite(best_d[qi])]
        if len(cand) == 0:
            continue
        cand = np.sort(cand)
        diff = np.asarray(ds.vectors[cand], np.float64) - Q[qi].astype(np.float64)
        ex = np.sqrt((diff * diff).sum(1))
        o = np.argsort(ex, kind="stable")[:k]
        ids[qi, :len(o)] = cand[o] + 1
        dists[qi, :len(o)] = ex[o]
    return {"ids": ids, "dists": dists, "nmatch": nmatch, "params": params}


def ground_truth(ds: Dataset, wl: Workload, nq: int, k: int = 10) -> dict:
    path = ds.dir / "gt" / f"{wl.key()}_nq{nq}_k{k}.npz"
    if path.exists():
        z = dict(np.load(path))
        if np.array_equal(z["params"], wl.params(nq, ds)):
            return z
    t0 = time.monotonic()
    gt = compute(ds, wl, nq, k)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **gt)
    log(f"ground truth {ds.spec.name}/{wl.name}: {nq} queries in {time.monotonic() - t0:.1f}s")
    return gt


def recall(found: list[int], gt_ids: np.ndarray, nmatch: int, k: int = 10) -> float | None:
    """|found ∩ true top-k| / min(k, matching rows); None if nothing matches."""
    want = min(k, int(nmatch))
    if want == 0:
        return None
    truth = set(int(i) for i in gt_ids[:want])
    return len(truth.intersection(found[:k])) / want


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--intrinsic", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--workload", default="unfiltered", choices=sorted(WORKLOADS))
    ap.add_argument("--nq", type=int, default=1000)
    ap.add_argument("--k", type=int, default=10)
    a = ap.parse_args()
    ds = Dataset(DatasetSpec(n=a.n, dim=a.dim, intrinsic=a.intrinsic, seed=a.seed))
    gt = ground_truth(ds, WORKLOADS[a.workload], a.nq, a.k)
    print("first query:", gt["ids"][0].tolist(), "matching rows:", int(gt["nmatch"][0]))
    print("mean selectivity:", float(gt["nmatch"].mean() / a.n))


if __name__ == "__main__":
    main()
