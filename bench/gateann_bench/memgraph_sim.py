#!/usr/bin/env python3
"""OctopusANN's MemGraph against gateann's entry points (issue 33, item 7),
simulated on gateann's own graphs, exported with gateann_graph().

  bench/run.sh memgraph_sim [--shapes current_128,sentences_384] [--n 100000]
                            [--L 20,40,100] [--samples 0.0025,0.01] [--queries 200]

For each shape (bench/gateann_bench/shapes.py's rows and queries, its first metric) the
script builds a gateann index at its defaults in run.sh's throwaway server,
exports its graph, and walks it as bench/gateann_bench/scaleout_sim.py does (best-first,
a list of L by exact distance; its expansions are the records a scan
reads).  The arms differ only in where the walk starts:

  entries     the nearest SEEDS of the index's entry points (one per coarse
              PQ centroid, and the medoid) to the query -- what gateann's
              scan starts from (it ranks them by PQ distance)
  memgraph s  a gateann graph built on a random sample of the rows (share
              s; OctopusANN's MemGraph is a small Vamana graph), searched in
              memory from its own nearest SEEDS entry points with a list of
              MEM_L; the walk starts from the nearest SEEDS it found

Counted per query: the main walk's expansions (reads), recall@10 (tie-aware,
as bench/gateann_bench/shapes.py counts it), queries that found none of their 10; the
in-memory search's expansions (no reads), and each arm's memory: the entry
points' vectors, MemGraph its sample's vectors and lists and its entry points.

Writes results.json ("kind": "memgraph_sim") and summary.md into --out.
"""
from __future__ import annotations

import numpy as np

from . import shapes
from . import scaleout_sim
from .common import log

SEEDS = 4        # gateann's scan: SCAN_ENTRY_SEEDS entry points (and the medoid)
MEM_L = 32       # MemGraph's search list


def nearest(x: np.ndarray, rows: np.ndarray, q: np.ndarray, k: int, metric: str) -> np.ndarray:
    """The k of rows nearest q (exact)."""
    v = x[rows - 1]
    d = 1.0 - v @ q if metric == "cosine" else ((v - q) ** 2).sum(1)
    return rows[np.argsort(d)[:k]]


def sample_graph(conn, rows: np.ndarray, base: str, opclass: str,
                 share: float) -> scaleout_sim.Graph:
    """A gateann graph (Vamana, with its own entry points) over the sample rows:
    OctopusANN builds its MemGraph as a small graph of the same kind."""
    table = f"{base}_s{int(share * 10000)}"
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} AS SELECT * FROM {base} WHERE id = ANY(%s)",
                 (rows.tolist(),))
    scaleout_sim.build(conn, table, opclass)
    return scaleout_sim.Graph(conn, f"{table}_idx", table)


def run_shape(conn, name: str, a, res: dict) -> None:
    shape, metric, x, q, gt = scaleout_sim.shape_rows(name, a.n, a.queries)
    opclass = shapes.OPS[metric][1]
    base = f"mg_{name}"
    log(f"{name}: loading {a.n} x {shape.dim}")
    shapes.load_table(conn, base, x, {}, False)
    out = {"shape": name, "metric": metric, "n": a.n, "dim": shape.dim,
           "build_s": scaleout_sim.build(conn, base, opclass), "arms": []}
    g = scaleout_sim.Graph(conn, f"{base}_idx", base)
    out["entry_points"] = int(len(g.entries))
    rng = np.random.default_rng(20261129)
    mem = [("entries", None, len(g.entries) * shape.dim * 4)]
    for share in a.samples:
        rows = np.sort(rng.choice(np.arange(1, a.n + 1), int(a.n * share), replace=False))
        sg = sample_graph(conn, rows, base, opclass, share)
        degree = int(np.mean([len(v) for v in sg.lists.values()]))
        mem.append((f"memgraph {share:g}", sg,
                    len(rows) * (shape.dim * 4 + degree * 4) + len(sg.entries) * shape.dim * 4))
    for L in a.L:
        for arm, sg, nbytes in mem:
            walks, inmem = [], []
            for i in range(len(q)):
                if sg is None:
                    seeds = nearest(x, g.entries, q[i], SEEDS, metric)
                    inmem.append(0)
                else:
                    e, top = scaleout_sim.walk(sg, x, q[i], MEM_L, metric,
                                               nearest(x, sg.entries, q[i], SEEDS, metric))
                    seeds = np.array([r for _, r in top][:SEEDS], np.int64)
                    inmem.append(len(e))
                walks.append(scaleout_sim.walk(g, x, q[i], L, metric, seeds))
            s = scaleout_sim.summarize([[(0, e, t)] for e, t in walks], x, q, gt)
            row = {"arm": arm, "L": L, "recall": s["recall"], "zero": s["zero"],
                   "reads": s["reads"], "in_memory": round(float(np.mean(inmem)), 1),
                   "memory_bytes": int(nbytes)}
            out["arms"].append(row)
            log(f"  L {L} {arm}: {row}")
    res["shapes"].append(out)


def summary_md(res: dict) -> str:
    lines = ["| shape | L | arm | recall@10 | queries at 0 | reads | in-memory expansions | memory |",
             "|---|---|---|---|---|---|---|---|"]
    for sh in res["shapes"]:
        for r in sh["arms"]:
            lines.append(f"| {sh['shape']} | {r['L']} | {r['arm']} | {r['recall']:.3f} | {r['zero']} | "
                         f"{r['reads']:.1f} | {r['in_memory']:.1f} | {r['memory_bytes'] / 1024:.0f} KiB |")
    return "\n".join(lines) + "\n"


def main():
    ap = scaleout_sim.simulation_parser(__doc__, "python3 -m gateann_bench memgraph_sim",
                                        "current_128,sentences_384")
    ap.add_argument("--L", default="20,40,100")
    ap.add_argument("--samples", default="0.0025,0.01")
    a = ap.parse_args()
    a.L = [int(v) for v in a.L.split(",")]
    a.samples = [float(v) for v in a.samples.split(",")]
    scaleout_sim.run_simulation("memgraph_sim", a,
                                {"L": a.L, "samples": a.samples, "seeds": SEEDS, "mem_L": MEM_L},
                                run_shape, summary_md)


if __name__ == "__main__":
    main()
