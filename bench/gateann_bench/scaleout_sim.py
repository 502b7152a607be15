#!/usr/bin/env python3
"""One global graph spread over N servers (BatANN) against N graphs
(scatter-gather, and routed to the nearest m of N clusters): a simulation on
gateann's own graphs, exported with gateann_graph().

  bench/run.sh scaleout_sim [--shapes sentences_384,current_128] [--n 100000]
                            [--servers 2,4,8,16] [--L 100] [--queries 200]

For each shape (bench/gateann_bench/shapes.py's rows and queries, its first metric) the
script builds, in run.sh's throwaway server, gateann indexes at their
defaults on:

  global    every row: one graph.  Its nodes are spread over N servers by
            row id (hash) or by the nearest of N k-means centres of the
            vectors (k-means), and a query walks the one graph, handed from
            server to server (BatANN: the query's state travels to the
            server that holds the node to expand next)
  scatter   N tables of the rows with id % N = i, one graph each; a query
            walks every graph for its k and the k best are kept, with the
            list L and with L / N (at least k: each graph holds 1/N of the rows)
  routed    N tables of the rows nearest each k-means centre, one graph
            each; a query walks only the graphs of its m nearest centres
            (m = 1, 2, 4, ... N: the recall against fan-out curve)

and exports every graph (gateann_graph: lists, entry points).  The walk is
simulated here, the same for every arm: best-first from the entry points
nearest the query, a list of L candidates by exact distance, expanding the
best unexpanded one until none is left (gateann's scan orders its list by PQ
distance and reads records for exact ones; the simulation's reads are its
expansions).  Counted per query: expansions (reads) in total and on the
busiest server, hand-offs (consecutive expansions on different servers),
servers touched, recall@10 (tie-aware, as bench/gateann_bench/shapes.py counts it).

The throughput model prices a query from measured costs of one gateann
server on these rows (run.sh's server, the global index, one client, warm):
ms per query at several L fitted as a + b x reads (a: a query's fixed cost,
b: a read's).  Queries per second of N servers together (each server one
core): N x 1000 / (the query's ms summed over the servers it uses), with a
hand-off priced at a (a remote call that starts the walk's next leg on
another server, what PostgreSQL servers would pay) and, as BatANN's best
case, at nothing.  It leaves out the network's time and the coordinator's
merge (bench/run.sh shards measures those on this machine).

Writes results.json ("kind": "scaleout_sim") and summary.md into --out.
"""
from __future__ import annotations

import argparse
import heapq
import time
from pathlib import Path

import numpy as np

from . import shapes
from .common import connect, log, run_facts, write_json

K = shapes.K


# --------------------------------------------------------------------------
# graphs
# --------------------------------------------------------------------------
class Graph:
    """A gateann graph in row ids: lists (row id -> array of row ids) and the
    entry points."""

    def __init__(self, conn, index: str, table: str):
        rows = conn.execute(
            f"SELECT t.id, g.neighbors, g.entry_point, g.node FROM gateann_graph('{index}') g "
            f"JOIN {table} t ON t.ctid = g.heap_tid").fetchall()
        node_to_row = {r[3]: r[0] for r in rows}
        self.lists = {r[0]: np.fromiter((node_to_row[v] for v in r[1] if v in node_to_row),
                                        np.int64) for r in rows}
        self.entries = np.array([r[0] for r in rows if r[2]], np.int64)


def walk(g: Graph, x: np.ndarray, q: np.ndarray, L: int, metric: str,
         seeds: np.ndarray | None = None):
    """Best-first walk from seeds (row ids; default the L entry points
    nearest q): the expanded rows in order and the K nearest found."""
    def dist(ids):
        v = x[ids - 1]
        if metric == "cosine":
            return 1.0 - v @ q
        d = v - q
        return np.einsum("ij,ij->i", d, d)
    start = g.entries if seeds is None else np.asarray(seeds, np.int64)
    seen = set(int(e) for e in start)
    ed = dist(start)
    order = np.argsort(ed)[:L]
    cand = [(float(ed[i]), int(start[i])) for i in order]    # sorted list, at most L
    heapq.heapify(cand)
    best = []             # max-heap of the L best (negated), the list's bound
    for d, r in cand:
        heapq.heappush(best, (-d, r))
    expanded = []
    while cand:
        d, r = heapq.heappop(cand)
        if len(best) >= L and d > -best[0][0]:
            break
        expanded.append(r)
        nb = g.lists.get(r)
        if nb is None or len(nb) == 0:
            continue
        new = np.array([v for v in nb.tolist() if v not in seen], np.int64)
        if len(new) == 0:
            continue
        seen.update(new.tolist())
        nd = dist(new)
        for dv, v in zip(nd.tolist(), new.tolist()):
            if len(best) < L or dv < -best[0][0]:
                heapq.heappush(best, (-dv, v))
                if len(best) > L:
                    heapq.heappop(best)
                heapq.heappush(cand, (dv, v))
    top = sorted((-nd, r) for nd, r in best)[:K]
    return expanded, top


# --------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------
def build(conn, table: str, opclass: str) -> float:
    conn.execute("SET maintenance_work_mem = '4GB'")
    conn.execute("SET max_parallel_maintenance_workers = 0")
    t0 = time.monotonic()
    conn.execute(f"CREATE INDEX {table}_idx ON {table} USING gateann (embedding {opclass})")
    return round(time.monotonic() - t0, 2)


def part_graphs(conn, base: str, opclass: str, name: str, build_s: dict,
                conds: list[str]) -> list[Graph]:
    """One table and gateann graph per condition on the rows of `base`."""
    graphs = []
    for i, cond in enumerate(conds):
        t = f"{base}_p{i}"
        conn.execute(f"DROP TABLE IF EXISTS {t}")
        conn.execute(f"CREATE TABLE {t} AS SELECT id, embedding FROM {base} WHERE {cond}")
        build_s[f"{name}_{i}"] = build(conn, t, opclass)
        graphs.append(Graph(conn, f"{t}_idx", t))
        conn.execute(f"DROP TABLE {t}")
    return graphs


def kmeans_labels(x: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sample = x[rng.choice(len(x), min(len(x), 20000), replace=False)]
    cent = shapes._kmeans(sample, n, rng)
    lab = np.concatenate([np.argmin(shapes._sqdist(x[s:s + 20000], cent), axis=1)
                          for s in range(0, len(x), 20000)]).astype(np.int32)
    return lab, cent


def measure_costs(conn, table: str, op: str, q: np.ndarray) -> dict:
    """ms per query and reads at several L on one server: a + b x reads."""
    pts = []
    sqls = [f"SELECT id FROM {table} ORDER BY embedding {op} {shapes._lit(v, 'gateann')} LIMIT {K}"
            for v in q]
    for s in sqls[:20]:
        conn.execute(s).fetchall()
    for L in (20, 50, 100, 200):
        conn.execute(f"SET gateann.search_list_size = {L}")
        t, reads = 0.0, 0
        for s in sqls:
            t0 = time.monotonic()
            conn.execute(s).fetchall()
            t += time.monotonic() - t0
            reads += conn.execute("SELECT reads + buffer_hits + resident_hits + page_cache_hits "
                                  "+ cache_hits FROM gateann_last_scan()").fetchone()[0]
        pts.append({"L": L, "ms": 1000 * t / len(sqls), "reads": reads / len(sqls)})
    conn.execute("RESET gateann.search_list_size")
    b, a = np.polyfit([p["reads"] for p in pts], [p["ms"] for p in pts], 1)
    return {"points": pts, "fixed_ms": round(float(a), 4), "read_ms": round(float(b), 5)}


def summarize(walks: list, x, q, gt, owner=None) -> dict:
    """Means over queries of one arm's walks (each: list of (server, expanded, top))."""
    rec, reads, busiest, handoffs, touched = [], [], [], [], []
    for qi, legs in enumerate(walks):
        found = sorted((d, r) for _, _, top in legs for d, r in top)
        ids = [r for _, r in found][:K]
        rec.append(shapes.recall_of([ids], x, q[qi:qi + 1],
                                    {"kth": gt["kth"][qi:qi + 1],
                                     "nmatch": gt["nmatch"][qi:qi + 1]}, None)[0])
        per = {}
        h = 0
        for server, expanded, _ in legs:
            if owner is not None:         # one global walk: count hand-offs
                own = owner[np.asarray(expanded, np.int64) - 1]
                h += int((own[1:] != own[:-1]).sum())
                for s in own.tolist():
                    per[s] = per.get(s, 0) + 1
            else:
                per[server] = per.get(server, 0) + len(expanded)
        reads.append(sum(per.values()))
        busiest.append(max(per.values()))
        handoffs.append(h)
        touched.append(len(per))
    return {"recall": round(float(np.mean(rec)), 4), "zero": int(sum(r == 0 for r in rec)),
            "reads": round(float(np.mean(reads)), 1), "busiest": round(float(np.mean(busiest)), 1),
            "handoffs": round(float(np.mean(handoffs)), 2),
            "servers": round(float(np.mean(touched)), 2)}


def model_qps(arm: dict, n: int, costs: dict, handoff_free: bool = False) -> float:
    """Queries/s of n servers, each one core: every server's per-query work
    (a fixed cost on each server a query uses, or per leg of a handed-off
    walk, plus its reads) summed, over n cores.  handoff_free: a hand-off
    costs nothing (BatANN's best case: the walk's state moves over a fast
    network and only reads cost)."""
    a, b = costs["fixed_ms"], costs["read_ms"]
    if arm.get("handoffs") is None:
        legs = arm["servers"]
    else:
        legs = 1 if handoff_free else 1 + arm["handoffs"]
    return round(n * 1000.0 / (legs * a + arm["reads"] * b), 0)


def shape_rows(name: str, n: int, queries: int):
    """A shape of bench/gateann_bench/shapes.py for a simulation: the shape, its first
    metric, its rows and queries (single precision, unit length for cosine)
    and their ground truth."""
    shape = shapes.SHAPES[name]
    metric = shape.metrics[0]
    data = shapes.generate(shape, n, queries)
    x, q = data["vectors"], data["queries"]
    if metric == "cosine":
        x, q = shapes._normalize(x), shapes._normalize(q)
    x, q = x.astype(np.float32), q.astype(np.float32)
    return shape, metric, x, q, shapes.ground_truth(x, q, None)


def run_shape(conn, name: str, a, res: dict) -> None:
    shape, metric, x, q, gt = shape_rows(name, a.n, a.queries)
    op, opclass = shapes.OPS[metric][0], shapes.OPS[metric][1]
    servers = [int(v) for v in a.servers.split(",") if v]
    ids = np.arange(1, a.n + 1)
    kmeans = {n: kmeans_labels(x, n, 20261129 + n) for n in servers}
    cols = {f"k{n}": kmeans[n][0] for n in servers}
    base = f"so_{name}"
    log(f"{name}: loading {a.n} x {shape.dim}")
    shapes.load_table(conn, base, x, cols, False)
    out = {"shape": name, "metric": metric, "n": a.n, "L": a.L, "build_s": {}, "arms": []}
    out["build_s"]["global"] = build(conn, base, opclass)
    out["costs"] = measure_costs(conn, base, op, q)
    log(f"  costs: {out['costs']['fixed_ms']:.3f} ms + {out['costs']['read_ms']:.4f} ms/read")
    g = Graph(conn, f"{base}_idx", base)
    walks = [walk(g, x, q[i], a.L, metric) for i in range(len(q))]
    one = summarize([[(0, e, t)] for e, t in walks], x, q, gt)
    one["handoffs"] = 0.0
    out["arms"].append({"arm": "one server", "servers_total": 1, **one,
                        "qps_model": model_qps(one, 1, out["costs"]),
                        "qps_model_free": model_qps(one, 1, out["costs"], True)})
    log(f"  one server: {one}")
    for n in servers:
        for own_name, owner in (("hash", (ids % n).astype(np.int32)), ("k-means", kmeans[n][0])):
            s = summarize([[(0, e, t)] for e, t in walks], x, q, gt, owner)
            arm = {"arm": f"global graph, {own_name}", "servers_total": n, **s}
            arm["qps_model"] = model_qps(arm, n, out["costs"])
            arm["qps_model_free"] = model_qps(arm, n, out["costs"], True)
            out["arms"].append(arm)
            log(f"  {n} servers {arm['arm']}: {s}")
        # scatter-gather: id % n
        graphs = part_graphs(conn, base, opclass, f"scatter{n}", out["build_s"],
                             [f"id % {n} = {i}" for i in range(n)])
        # (each graph holds 1/n of the rows: a shorter list may do, L / n but at least k)
        for name_, Ls in (("scatter-gather", a.L), ("scatter-gather, L / N", max(K, a.L // n))):
            legs = [[(i, *walk(graphs[i], x, q[j], Ls, metric)) for i in range(n)]
                    for j in range(len(q))]
            s = summarize(legs, x, q, gt)
            arm = {"arm": name_, "servers_total": n, "list": Ls, **s, "handoffs": None}
            arm["qps_model"] = model_qps(arm, n, out["costs"])
            out["arms"].append(arm)
            log(f"  {n} servers {name_}: {s}")
        # routed: k-means clusters, the m nearest
        graphs = part_graphs(conn, base, opclass, f"routed{n}", out["build_s"],
                             [f"k{n} = {i}" for i in range(n)])
        cent = kmeans[n][1]
        near = np.argsort(shapes._sqdist(q, cent), axis=1)
        full = [[(i, *walk(graphs[i], x, q[j], a.L, metric)) for i in near[j]]
                for j in range(len(q))]
        m = 1
        while m <= n:
            s = summarize([legs_[:m] for legs_ in full], x, q, gt)
            arm = {"arm": f"routed, m = {m}", "servers_total": n, "m": m, **s, "handoffs": None}
            arm["qps_model"] = model_qps(arm, n, out["costs"])
            out["arms"].append(arm)
            log(f"  {n} servers routed m={m}: {s}")
            m *= 2
        res["shapes"] = [r for r in res["shapes"] if r["shape"] != name] + [out]
    conn.execute(f"DROP TABLE {base}")


def summary_md(res: dict) -> str:
    lines = [f"# One global graph against N graphs — `{res['command']}`", "",
             f"commit {res['git']['commit']}{' (dirty)' if res['git']['dirty'] else ''}, server "
             f"{res['server_version']}, {res['machine'].get('cores')} cores.", ""]
    for sh in res["shapes"]:
        c = sh["costs"]
        lines += [f"## {sh['shape']} ({sh['metric']}), {sh['n']:,} rows, L = {sh['L']}", "",
                  f"One server measured: {c['fixed_ms']:.3f} ms + {c['read_ms']:.4f} ms per read "
                  "(fit over L = " + ", ".join(str(p["L"]) for p in c["points"]) + ").", "",
                  "| servers | arm | recall@10 | at 0 | reads | busiest server | hand-offs | "
                  "servers used | modelled QPS | modelled QPS, hand-offs free |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in sh["arms"]:
            h = "–" if r.get("handoffs") is None else f"{r['handoffs']:.1f}"
            lines.append(f"| {r['servers_total']} | {r['arm']} | {r['recall']:.3f} | {r['zero']} | "
                         f"{r['reads']:.0f} | {r['busiest']:.0f} | {h} | {r['servers']:.1f} | "
                         f"{r['qps_model']:,.0f} | "
                         + (f"{r['qps_model_free']:,.0f} |" if "qps_model_free" in r else "– |"))
        lines.append("")
    return "\n".join(lines)


def simulation_parser(doc: str, script: str, shapes_default: str) -> argparse.ArgumentParser:
    """The arguments every simulation takes (and run.sh passes: --out,
    --command); the caller adds its own."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default=script)
    ap.add_argument("--shapes", default=shapes_default)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    return ap


def run_simulation(kind: str, a, settings: dict, run_shape, summary_md) -> None:
    """run_shape(conn, name, a, res) for each shape of a.shapes, results.json
    and summary.md in a.out rewritten after each (a run cut short keeps what
    it measured)."""
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    res = {**run_facts(conn, kind, a.command),
           "settings": {"shapes": a.shapes.split(","), "n": a.n, "queries": a.queries,
                        **settings}, "shapes": []}
    for name in res["settings"]["shapes"]:
        run_shape(conn, name, a, res)
        res["seconds"] = round(time.monotonic() - t_start, 1)
        write_json(out / "results.json", res)
        (out / "summary.md").write_text(summary_md(res))
    print(summary_md(res))
    log(f"done in {res['seconds']:.0f} s: {out / 'summary.md'}")


def main():
    ap = simulation_parser(__doc__, "python3 -m gateann_bench scaleout_sim",
                           "sentences_384,current_128")
    ap.add_argument("--servers", default="2,4,8,16")
    ap.add_argument("--L", type=int, default=100)
    a = ap.parse_args()
    run_simulation("scaleout_sim", a, {"servers": a.servers, "L": a.L}, run_shape, summary_md)


if __name__ == "__main__":
    main()
