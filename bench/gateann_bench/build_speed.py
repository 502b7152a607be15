#!/usr/bin/env python3
"""Build time beside pgvector HNSW (and VectorChord when the server has it),
serial and with one parallel worker, on the same rows in the same run, with
the recall each index gives afterwards.

  bench/run.sh build_speed [--n 100000] [--shapes current_128,gauss_128,...]
                           [--workers 0,1] [--L 20,40,100] [--queries 200]
                           [--gateann-with 'build_search_list_size = 100']

For each shape of the data-shape matrix (bench/gateann_bench/shapes.py: the same generated
rows and queries, its first metric) one table bs_<shape> (id bigint, embedding
real[]) and a copy as vector(d) for pgvector, loaded by binary COPY.  Then for
each value of --workers (max_parallel_maintenance_workers; 0 is a serial build)
and each engine, one after the other on a quiet server:

  gateann   CREATE INDEX ... USING gateann (embedding <opclass>) [WITH (...)]
  pgvector  CREATE INDEX ... USING hnsw (embedding <opclass>) (m = 16,
            ef_construction = 64: its defaults)
  vchordrq  lists = about sqrt(rows), when vchord is preloaded

timed by the client (the statement alone), at maintenance_work_mem = 4GB
(every build in memory).  After each build: recall@10 unfiltered, one client,
at each --L (gateann.search_list_size / hnsw.ef_search / vchordrq probes as
bench/gateann_bench/shapes.py sweeps them), counted as bench/gateann_bench/shapes.py counts it (a row is a
hit when its distance is at most the 10th true neighbour's), with the queries
at recall 0 and the mean ms per query.  gateann_index_info's build_recall and
tunnel prefix are kept.

Writes results.json ("kind": "build_speed") and summary.md into --out.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from . import shapes
from .common import connect, log, run_facts, write_json

K = shapes.K
DEFAULT_SHAPES = ("current_128,clusters_tight_128,clusters_wide_384,anisotropic_128,"
                  "duplicates_128,gauss_128")
ENGINES = ("gateann", "pgvector", "vchordrq")


def load(conn, table: str, x: np.ndarray, vector_copy: bool) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_v")
    with conn.transaction():
        conn.execute(f"CREATE TABLE {table} (id bigint, embedding real[])")
        with conn.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN (FORMAT binary, FREEZE)") as cp:
            for chunk in shapes._copy_rows(x, {}, []):
                cp.write(chunk)
    if vector_copy:
        conn.execute(f"CREATE TABLE {table}_v AS SELECT id, embedding::vector({x.shape[1]}) "
                     f"AS embedding FROM {table}")
        conn.execute(f"VACUUM ANALYZE {table}_v")
    conn.execute(f"VACUUM ANALYZE {table}")


def index_sql(engine: str, table: str, metric: str, n: int, gateann_with: str, dim: int) -> str:
    ops = shapes.OPS[metric]
    if engine == "gateann":
        w = f" WITH ({shapes._with_for(gateann_with, dim)})" if gateann_with else ""
        return f"CREATE INDEX {table}_idx ON {table} USING gateann (embedding {ops[1]}){w}"
    if engine == "pgvector":
        return (f"CREATE INDEX {table}_idx ON {table}_v USING hnsw (embedding {ops[2]}) "
                "WITH (m = 16, ef_construction = 64)")
    return (f"CREATE INDEX {table}_idx ON {table}_v USING vchordrq (embedding {ops[2]}) "
            f"WITH (options = $$\n[build.internal]\nlists = [{shapes.vchord_lists(n)}]\n$$)")


def measure(conn, engine: str, table: str, metric: str, x, q, gt, Ls, n) -> list:
    """recall@10 and ms per query at each L, unfiltered, one client."""
    eng = "gateann_gate" if engine == "gateann" else engine
    tbl = table if engine == "gateann" else table + "_v"
    op = shapes.OPS[metric][0]
    sqls = [f"SELECT id FROM {tbl} ORDER BY embedding {op} {shapes._lit(v, eng)} LIMIT {K}"
            for v in q]
    shapes.engine_settings(conn, eng, Ls[0], n)
    for s in sqls[:10]:
        conn.execute(s).fetchall()
    out = []
    for L in Ls:
        shapes.engine_settings(conn, eng, L, n)
        found, times = [], []
        for s in sqls:
            t0 = time.monotonic()
            found.append([r[0] for r in conn.execute(s).fetchall()])
            times.append(time.monotonic() - t0)
        rec = shapes.recall_of(found, x, q, gt, None)
        out.append({"L": L, "recall": round(float(np.nanmean(rec)), 4),
                    "zero": int((rec == 0).sum()), "ms": round(1000 * float(np.mean(times)), 3)})
    return out


def summary(r: dict) -> str:
    s = r["settings"]
    lines = [f"# Build time beside pgvector HNSW — `{r['command']}`", "",
             f"commit {r['git']['commit']}{' (dirty)' if r['git']['dirty'] else ''}, server "
             f"{r['server_version']}, {r['machine'].get('cores')} cores, {s['n']:,} rows per "
             f"shape, {s['queries']} queries; gateann options: {s['gateann_with'] or 'defaults'}.",
             "", "| shape | metric | workers | " + " | ".join(f"{e} s" for e in s["engines"])
             + " | gateann / HNSW | recall@10 at L = " + ", ".join(map(str, s["L"]))
             + ": " + " / ".join(s["engines"]) + " |",
             "|---|---|---|" + "---|" * len(s["engines"]) + "---|---|"]
    for b in r["builds"]:
        secs = [b["build_s"].get(e) for e in s["engines"]]
        g, h = b["build_s"].get("gateann"), b["build_s"].get("pgvector")
        ratio = f"{g / h:.2f}×" if g and h else "–"
        rec = "; ".join(" / ".join(
            f"{p['recall']:.3f}" for e in s["engines"]
            for p in b["points"].get(e, []) if p["L"] == L) for L in s["L"])
        lines.append(f"| {b['shape']} | {b['metric']} | {b['workers']} | "
                     + " | ".join("–" if v is None else f"{v:.1f}" for v in secs)
                     + f" | {ratio} | {rec} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="python3 -m gateann_bench build_speed")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--workers", default="0,1")
    ap.add_argument("--L", default="20,40,100")
    ap.add_argument("--engines", default="gateann,pgvector,vchordrq")
    ap.add_argument("--gateann-with", default="")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    engines = [e for e in a.engines.split(",") if e]
    if "pgvector" in engines or "vchordrq" in engines:
        if not shapes.has_pgvector(conn):
            log("pgvector is not installed here: gateann alone")
            engines = [e for e in engines if e == "gateann"]
        else:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    if "vchordrq" in engines:
        if shapes.has_vchord(conn):
            conn.execute("CREATE EXTENSION IF NOT EXISTS vchord")
        else:
            engines.remove("vchordrq")
    Ls = [int(v) for v in a.L.split(",") if v]
    workers = [int(v) for v in a.workers.split(",") if v]
    settings = {"n": a.n, "queries": a.queries, "shapes": a.shapes.split(","), "L": Ls,
                "workers": workers, "engines": engines, "gateann_with": a.gateann_with,
                "maintenance_work_mem": "4GB",
                **{g: conn.execute(f"SHOW {g}").fetchone()[0]
                   for g in ("shared_buffers", "max_worker_processes")}}
    results = {**run_facts(conn, "build_speed", a.command), "settings": settings, "builds": []}

    def save():
        results["seconds"] = round(time.monotonic() - t_start, 1)
        write_json(out / "results.json", results)
        (out / "summary.md").write_text(summary(results))

    for name in settings["shapes"]:
        shape = shapes.SHAPES[name]
        metric = shape.metrics[0]
        data = shapes.generate(shape, a.n, a.queries)
        x, q = data["vectors"], data["queries"]
        if metric == "cosine":
            x, q = shapes._normalize(x), shapes._normalize(q)
        table = f"bs_{name}"
        log(f"{name}/{metric}: loading {a.n} x {shape.dim}")
        load(conn, table, x, engines != ["gateann"])
        gt = shapes.ground_truth(x, q, None)
        for w in workers:
            b = {"shape": name, "metric": metric, "dim": shape.dim, "workers": w,
                 "build_s": {}, "points": {}}
            for e in engines:
                c = connect()
                c.execute("SET maintenance_work_mem = '4GB'")
                c.execute(f"SET max_parallel_maintenance_workers = {w}")
                t0 = time.monotonic()
                c.execute(index_sql(e, table, metric, a.n, a.gateann_with, shape.dim))
                b["build_s"][e] = round(time.monotonic() - t0, 2)
                if e == "gateann":
                    cur = c.execute(f"SELECT * FROM gateann_index_info('{table}_idx')")
                    info = dict(zip([d.name for d in cur.description], cur.fetchone()))
                    b["gateann_info"] = {k: info.get(k) for k in
                                         ("build_recall", "tunnel_neighbors", "max_neighbors")}
                b["points"][e] = measure(c, e, table, metric, x, q, gt, Ls, a.n)
                log(f"  {name} workers={w} {e}: {b['build_s'][e]} s, recall "
                    + ", ".join(f"L{p['L']} {p['recall']:.3f} ({p['zero']})"
                                for p in b["points"][e]))
                c.execute(f"DROP INDEX {table}_idx")
                c.close()
            results["builds"].append(b)
            save()
        conn.execute(f"DROP TABLE {table}, {table}_v" if engines != ["gateann"]
                     else f"DROP TABLE {table}")
    save()
    print(summary(results))
    log(f"done in {results['seconds']:.0f} s: {out / 'summary.md'}")


if __name__ == "__main__":
    main()
