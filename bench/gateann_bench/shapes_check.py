#!/usr/bin/env python3
"""The recall targets of the data-shape matrix, checked shape by shape.

Reads the results.json of one or more `bench/run.sh shapes` runs (a shape in a
later file replaces the same shape in an earlier one) and prints one markdown
row per shape and metric with the figures each target is judged on:

  default   gateann gate recall@10 at L = 100, unfiltered and the worst filter
            workload (target >= 0.95)
  best      the highest unfiltered recall at any L <= 400 (target >= 0.99)
  self      share of stored rows that find themselves first (target >= 0.99)
  gate-post the smallest gate minus post recall at L = 100 over the filter
            workloads (target >= -0.01)
  pgv-gate  the largest pgvector (ef_search = 100) minus gateann (L = 100)
            recall over all workloads (target <= 0.01)
  zero      the largest share of queries with recall 0 (gateann gate, L = 100)

With --matrix, also a table of recall@10 at L = 100 by workload: gateann gate /
gateann post / pgvector HNSW (ef_search = 100), and the share of queries at
recall 0 for gate when it is not 0.

--pgvector-from FILE[,FILE...] takes pgvector's points from earlier runs on the
same rows and queries (the generator is deterministic: same shape, n, nq and
SHAPES_VERSION) for shapes whose later run measured gateann alone; the output
says so.

Usage: python3 bench/gateann_bench shapes_check [--matrix] RESULTS.json [RESULTS.json ...]
"""
import json
import sys


def load(paths, pgvector_from=()):
    points, facts = {}, {}
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        shapes = dict.fromkeys((p["shape"], p["metric"]) for p in d["points"])
        for key in shapes:
            points[key] = [p for p in d["points"] if (p["shape"], p["metric"]) == key]
        for fa in d["facts"]:
            facts[(fa["shape"], fa["metric"])] = fa
    for path in pgvector_from:
        with open(path) as f:
            d = json.load(f)
        for p in d["points"]:
            key = (p["shape"], p["metric"])
            if p["engine"] == "pgvector" and key in points and not any(
                    q["engine"] == "pgvector" for q in points[key] if q.get("from") is None):
                points[key].append({**p, "from": path})
    return points, facts


def recall(pts, engine, workload, L):
    for p in pts:
        if p["engine"] == engine and p["workload"] == workload and p["L"] == L:
            return p["recall"], p["zero"]
    return None, None


def fmt(x, ok):
    if x is None:
        return "–"
    return f"{x:.3f}" if ok else f"**{x:.3f}**"


def matrix(points):
    wl = ["none", "u1", "u5", "u10", "a1", "a5", "a10"]
    print("| shape | metric | " + " | ".join(wl) + " |")
    print("|---|---|" + "---|" * len(wl))
    for key, pts in points.items():
        cells = []
        for w in wl:
            g, gz = recall(pts, "gateann_gate", w, 100)
            po, _ = recall(pts, "gateann_post", w, 100)
            pv, _ = recall(pts, "pgvector", w, 100)
            if g is None:
                cells.append("–")
                continue
            c = f"{g:.3f}"
            if po is not None:
                c += f" / {po:.3f}"
            if pv is not None:
                c += f" / {pv:.3f}"
            if gz:
                c += f" (zero {gz:.2f})"
            cells.append(c)
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    print()


def main():
    args = sys.argv[1:]
    pgv = []
    if "--pgvector-from" in args:
        i = args.index("--pgvector-from")
        pgv = args[i + 1].split(",")
        del args[i:i + 2]
        print(f"(pgvector figures from earlier runs on the same rows: {', '.join(pgv)})\n")
    if args and args[0] == "--matrix":
        args = args[1:]
        matrix(load(args, pgv)[0])
    points, facts = load(args, pgv)
    print("| shape | metric | default (none / worst filter) | best L ≤ 400 | self top-1 "
          "| gate − post (min) | pgvector − gateann (max) | zero (max) |")
    print("|---|---|---|---|---|---|---|---|")
    failed = 0
    for key in points:
        pts = points[key]
        workloads = sorted({p["workload"] for p in pts})
        filt = [w for w in workloads if w != "none"]
        d_none, _ = recall(pts, "gateann_gate", "none", 100)
        d_filt = [(recall(pts, "gateann_gate", w, 100)[0], w) for w in filt]
        d_filt = [x for x in d_filt if x[0] is not None]
        worst = min(d_filt) if d_filt else (None, "")
        best = max((p["recall"] for p in pts if p["engine"] == "gateann_gate"
                    and p["workload"] == "none" and p["L"] <= 400), default=None)
        self1 = facts.get(key, {}).get("self_top1_gateann_gate")
        gp = [recall(pts, "gateann_gate", w, 100)[0] - recall(pts, "gateann_post", w, 100)[0]
              for w in filt if recall(pts, "gateann_post", w, 100)[0] is not None
              and recall(pts, "gateann_gate", w, 100)[0] is not None]
        pg = [recall(pts, "pgvector", w, 100)[0] - recall(pts, "gateann_gate", w, 100)[0]
              for w in workloads if recall(pts, "pgvector", w, 100)[0] is not None
              and recall(pts, "gateann_gate", w, 100)[0] is not None]
        zero = max((p["zero"] for p in pts if p["engine"] == "gateann_gate" and p["L"] == 100),
                   default=None)
        oks = [d_none is None or d_none >= 0.95,
               worst[0] is None or worst[0] >= 0.95,
               best is None or best >= 0.99,
               self1 is None or self1 >= 0.99,
               not gp or min(gp) >= -0.01,
               not pg or max(pg) <= 0.01]
        failed += not all(oks)
        print(f"| {key[0]} | {key[1]} | {fmt(d_none, oks[0])} / {fmt(worst[0], oks[1])} {worst[1]} "
              f"| {fmt(best, oks[2])} | {fmt(self1, oks[3])} "
              f"| {fmt(min(gp) if gp else None, oks[4])} | {fmt(max(pg) if pg else None, oks[5])} "
              f"| {'–' if zero is None else f'{zero:.3f}'} |")
    print(f"\n{len(points) - failed} of {len(points)} shape/metric pairs meet every target "
          "(a figure in bold misses its target).")


if __name__ == "__main__":
    main()
