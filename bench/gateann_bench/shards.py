#!/usr/bin/env python3
"""A table partitioned over shard servers through postgres_fdw: recall and
latency of the k nearest rows on the coordinator, in the query forms a user
can write, beside the shards' own latency and one server holding every row.

  bench/run.sh shards [--shape current_128] [--n 300000] [--shards 1,2,3]
                      [--workloads none,u10] [--queries 200] [--fetch-size 100]

The coordinator is run.sh's throwaway server; each shard a throwaway server of
its own (bench/cluster.sh, ports after the coordinator's, shared_buffers 1GB),
all on this machine.  The rows and queries are bench/gateann_bench/shapes.py's (its first
metric, its u10 label column: 10 values, one asked per query).  For each
number of shards N, shard i holds the rows with id % N = i and a gateann
index on (embedding, u10); the coordinator's table `items` is partitioned by
LIST (id % N), each partition a foreign table of one shard (server options
extensions 'gateann', async_capable 'true'), and ANALYZEd (postgres_fdw samples
the shards: without statistics it plans a foreign table as a few rows and
sorts them all locally).  Measured, one client, prepared statements with the
query vector bound as a parameter, k = 10:

  natural        SELECT id FROM items [WHERE u10 = $2] ORDER BY embedding <-> $1
                 LIMIT 10, with the servers' fetch_size (--fetch-size,
                 postgres_fdw's default 100): a Merge Append over the shards,
                 each sending rows in distance order fetch_size at a time
                 from a cursor, which the shard plans for cursor_tuple_fraction
                 (0.1) of the rows: unfiltered, a seq scan and a sort
  natural_fetchk the same with fetch_size = k on every server
  natural_tuned  the same with fetch_size = k and the servers' options
                 '-c cursor_tuple_fraction=0.001' (the shard plans the cursor
                 for its first rows: its gateann index)
  union          one branch per partition, SELECT ... ORDER BY ... LIMIT 10
                 each (postgres_fdw sends the LIMIT to the shard), UNION ALL,
                 ORDER BY distance + 0 LIMIT 10 (so the branches are an
                 Append, which runs foreign scans concurrently, not a Merge
                 Append, which reads them one after another)
  shard          the same query on each shard's own server directly; per
                 query the slowest shard's time (what concurrency can reach)

and, with N = 1, the same query on one server holding every row, which is the
recall a sharded answer is compared with.  Then, for N >= 2, the rows split
by vector cluster instead: gateann_kmeans over a sample on the coordinator
gives N centres, shard i holds the rows nearest centre i, the coordinator's
table is partitioned by LIST (cluster), and

  routed m       natural_tuned with "cluster IN (gateann_nearest_centroid($1,
                 $c, 1), ..., (..., m))": the partitions of the m nearest
                 clusters only (PostgreSQL prunes the others)  Rows received per query are the
coordinator's Foreign Scans' rows (EXPLAIN ANALYZE on 20 queries) rounded up
to whole fetches; bytes are those rows times their measured text width (id
and the vector: postgres_fdw sends the vector and computes the distance on
the coordinator).

Writes results.json ("kind": "shards") and summary.md into --out.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import time
from pathlib import Path

import numpy as np

from . import shapes
from .common import BENCH_DIR, connect, log, run_facts, write_json

K = shapes.K
FORMS = ("natural", "natural_fetchk", "natural_tuned", "union", "shard")
# the shards' cursor_tuple_fraction: PostgreSQL's default, and the tuned one
CURSOR_FRACTION = {False: "0.1", True: "0.001"}


def start_server(port: int) -> dict:
    """A throwaway server (bench/cluster.sh) at `port`: its libpq settings."""
    env = dict(os.environ, BENCH_PORT=str(port), BENCH_SHARED_BUFFERS="1GB")
    out = subprocess.run([str(BENCH_DIR / "cluster.sh"), "start"], env=env, check=True,
                         capture_output=True, text=True).stdout
    facts = {}
    for part in out.replace("export ", "").split():
        k, v = part.split("=", 1)
        facts[k] = v.strip("'")
    return facts


def stop_server(facts: dict) -> None:
    subprocess.run([str(BENCH_DIR / "cluster.sh"), "stop", facts["BENCH_CLUSTER_DIR"]],
                   check=False, capture_output=True)


def shard_conn(facts: dict):
    return connect(host=facts["PGHOST"], port=facts["PGPORT"], user="postgres",
                   dbname=facts["PGDATABASE"])


def load_shard(conn, x: np.ndarray, labels: np.ndarray, ids: np.ndarray, opclass: str) -> float:
    """Rows `ids` (1-based) into items (id, u10, embedding) and a gateann index; build s."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    conn.execute("DROP TABLE IF EXISTS items")
    conn.execute("CREATE TABLE items (id bigint PRIMARY KEY, u10 int4, embedding real[])")
    sub = x[ids - 1]
    cols = {"u10": labels[ids - 1]}
    with conn.cursor() as cur, cur.copy("COPY items FROM STDIN (FORMAT binary)") as cp:
        for chunk in shapes._copy_rows(sub, cols, ["u10"], ids):
            cp.write(chunk)
    conn.execute("VACUUM ANALYZE items")
    conn.execute("SET maintenance_work_mem = '2GB'")
    t0 = time.monotonic()
    conn.execute(f"CREATE INDEX items_idx ON items USING gateann (embedding {opclass}, u10)")
    return round(time.monotonic() - t0, 2)


def coordinator_setup(conn, servers: list[dict], fetch_size: int, by_cluster: bool = False) -> None:
    """items partitioned by LIST (id % N), or by LIST (cluster) when the shards
    hold clusters; one foreign partition a shard, ANALYZEd."""
    n = len(servers)
    conn.execute("CREATE EXTENSION IF NOT EXISTS postgres_fdw")
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    conn.execute("DROP TABLE IF EXISTS items CASCADE")
    for i in range(1, 17):
        conn.execute(f"DROP SERVER IF EXISTS shard{i} CASCADE")
    if by_cluster:
        conn.execute("CREATE TABLE items (id bigint, u10 int4, embedding real[], cluster int) "
                     "PARTITION BY LIST (cluster)")
    else:
        conn.execute("CREATE TABLE items (id bigint, u10 int4, embedding real[]) "
                     "PARTITION BY LIST ((id % " + str(n) + "))")
    for i, s in enumerate(servers):
        conn.execute(f"CREATE SERVER shard{i + 1} FOREIGN DATA WRAPPER postgres_fdw OPTIONS "
                     f"(host '{s['PGHOST']}', port '{s['PGPORT']}', dbname '{s['PGDATABASE']}', "
                     f"extensions 'gateann', async_capable 'true', fetch_size '{fetch_size}', "
                     f"options '-c cursor_tuple_fraction={CURSOR_FRACTION[False]}')")
        conn.execute(f"CREATE USER MAPPING FOR CURRENT_USER SERVER shard{i + 1} "
                     "OPTIONS (user 'postgres')")
        conn.execute(f"CREATE FOREIGN TABLE items_{i + 1} PARTITION OF items FOR VALUES IN ({i}) "
                     f"SERVER shard{i + 1} OPTIONS (table_name 'items')")
    conn.execute("ANALYZE items")


def set_server_options(conn, nservers: int, fetch_size: int, tuned: bool) -> None:
    for i in range(1, nservers + 1):
        conn.execute(f"ALTER SERVER shard{i} OPTIONS (SET fetch_size '{fetch_size}', SET options "
                     f"'-c cursor_tuple_fraction={CURSOR_FRACTION[tuned]}')")
    conn.execute("SELECT postgres_fdw_disconnect_all()")


def statement(form: str, op: str, nparts: int, filtered: bool, table: str = "items") -> str:
    """The query vector is bound as the client sends a list (double precision[]) and
    used as it is, no cast: in a generic plan postgres_fdw cannot send a cast of
    a parameter to the shard, and then sends neither the ORDER BY nor the LIMIT
    (every row of every shard comes back; README, "Several servers")."""
    where = "WHERE u10 = %s" if filtered else ""
    if form != "union":
        return f"SELECT id FROM {table} {where} ORDER BY embedding {op} %s LIMIT {K}"
    branches = [f"(SELECT id, embedding {op} %s AS d FROM items_{i} {where} "
                f"ORDER BY embedding {op} %s LIMIT {K})" for i in range(1, nparts + 1)]
    return f"SELECT id FROM ({' UNION ALL '.join(branches)}) u ORDER BY d + 0 LIMIT {K}"


def params(form: str, nparts: int, v: list, label: int | None) -> tuple:
    if form != "union":
        return (v,) if label is None else (label, v)
    one = (v, v) if label is None else (v, label, v)
    return one * nparts


def timed(conn, sql: str, args_of, nq: int):
    """The statement for queries 0 .. nq-1 (args_of(j): its parameters), each
    once after 20 to warm up, prepared: ids per query, ms per query."""
    for j in range(min(20, nq)):
        conn.execute(sql, args_of(j), prepare=True).fetchall()
    found, times = [], []
    for j in range(nq):
        t0 = time.monotonic()
        rows = conn.execute(sql, args_of(j), prepare=True).fetchall()
        times.append(time.monotonic() - t0)
        found.append([r[0] for r in rows])
    return found, np.array(times) * 1000


def run(conn, sql: str, q: np.ndarray, labels, form: str, nparts: int):
    """Every query of a form (params) once: ids per query, ms per query."""
    vecs = [[float(f) for f in v] for v in q]
    lab = [None] * len(q) if labels is None else [int(v) for v in labels]
    return timed(conn, sql, lambda j: params(form, nparts, vecs[j], lab[j]), len(q))


def fetched_rows(conn, sql: str, q: np.ndarray, labels, form: str, nparts: int,
                 fetch_size: int) -> float:
    """Rows the coordinator receives per query (20 queries, EXPLAIN ANALYZE)."""
    vecs = [[float(f) for f in v] for v in q[:20]]
    total = 0.0
    for j, v in enumerate(vecs):
        lab = None if labels is None else int(labels[j])
        plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql,
                            params(form, nparts, v, lab)).fetchone()[0]
        plan = plan[0]["Plan"] if isinstance(plan, list) else json.loads(plan)[0]["Plan"]
        stack = [plan]
        while stack:
            p = stack.pop()
            stack.extend(p.get("Plans", []))
            if p["Node Type"] == "Foreign Scan":
                rows = p["Actual Rows"]
                # a LIMIT sent to the shard: exactly the rows; else whole fetches
                total += rows if form == "union" else \
                    math.ceil((rows + 1) / fetch_size) * fetch_size
    return total / len(vecs)


def cluster_split(conn, x: np.ndarray, n: int) -> tuple[list, np.ndarray]:
    """gateann_kmeans's n centres of a sample of x (on the coordinator) and
    every row's nearest centre."""
    sample = x[::max(1, len(x) // 20000)]
    conn.execute("DROP TABLE IF EXISTS centre_sample")
    conn.execute("CREATE TABLE centre_sample (id bigint, embedding real[])")
    with conn.cursor() as cur, cur.copy("COPY centre_sample FROM STDIN (FORMAT binary)") as cp:
        for chunk in shapes._copy_rows(sample, {}, []):
            cp.write(chunk)
    centres = conn.execute(f"SELECT gateann_kmeans(embedding, {n}) FROM centre_sample").fetchone()[0]
    conn.execute("DROP TABLE centre_sample")
    c = np.asarray(centres, np.float32)
    cluster = np.concatenate([np.argmin(shapes._sqdist(x[s:s + 20000], c), axis=1)
                              for s in range(0, len(x), 20000)])
    return centres, cluster


def measure_routed(conn, sconns, servers, n, x, q, label, qlabel, gts, a, op, opclass, res):
    """The rows split by cluster over n shards; the natural query (tuned
    servers) routed to the nearest m clusters' partitions, m = 1, 2, 4 .. n."""
    centres, cluster = cluster_split(conn, x, n)
    ids = np.arange(1, a.n + 1)
    build_s = []
    for i in range(n):
        log(f"{n} shards by cluster: loading shard {i + 1}, {int((cluster == i).sum())} rows")
        build_s.append(load_shard(sconns[i], x, label, ids[cluster == i], opclass))
        sconns[i].execute(f"ALTER TABLE items ADD COLUMN cluster int NOT NULL DEFAULT {i}")
        # (without statistics on cluster the shard guesses the routing filter keeps 1 % of
        # its rows, and its plan for the cursor is not its gateann index's: 2x the time)
        sconns[i].execute("ANALYZE items")
    res["builds"].append({"shards": n, "split": "cluster", "build_s": build_s})
    coordinator_setup(conn, servers[:n], a.fetch_size, by_cluster=True)
    set_server_options(conn, n, K, True)
    vecs = [[float(f) for f in v] for v in q]
    # the centres as the text of a real[], made once: a client keeps them so
    # (adapting a nested list anew for every query costs the client ~1 ms)
    centres_text = "{" + ",".join("{" + ",".join(repr(float(f)) for f in row) + "}"
                                  for row in centres) + "}"
    for wl, (gt, mask) in gts.items():
        pt = {"shards": n, "workload": wl, "split": "cluster", "forms": {}}
        m = 1
        while m <= n:
            # (named parameters: one $n each, however often the statement names it;
            # postgres_fdw sends every parameter to every shard)
            route = ", ".join(f"gateann_nearest_centroid(%(v)s::real[], %(c)s::real[], {r})"
                              for r in range(1, m + 1))
            where = ("u10 = %(lab)s AND " if wl != "none" else "") + f"cluster IN ({route})"
            sql = (f"SELECT id FROM items WHERE {where} ORDER BY embedding {op} %(v)s "
                   f"LIMIT {K}")

            def args(j):
                return {"v": vecs[j], "c": centres_text,
                        **({"lab": int(qlabel[j])} if wl != "none" else {})}
            found, ms = timed(conn, sql, args, len(q))
            pt["forms"][f"routed{m}"] = {**recall(found, x, q, gt, mask),
                                         "ms_mean": round(float(ms.mean()), 3),
                                         "ms_p95": round(float(np.percentile(ms, 95)), 3)}
            log(f"  {n} shards by cluster {wl} routed m={m}: "
                f"recall {pt['forms'][f'routed{m}']['recall']:.3f} {ms.mean():.2f} ms")
            m *= 2
        res["points"].append(pt)


def recall(found, x, q, gt, mask) -> dict:
    r = shapes.recall_of(found, x, q, gt, mask)
    return {"recall": round(float(np.nanmean(r)), 4), "zero": int((r == 0).sum())}


def summary(res: dict) -> str:
    s = res["settings"]
    lines = [f"# Shards through postgres_fdw — `{res['command']}`", "",
             f"commit {res['git']['commit']}{' (dirty)' if res['git']['dirty'] else ''}, server "
             f"{res['server_version']}, {res['machine'].get('cores')} cores; {s['shape']}, "
             f"{s['n']:,} rows, {s['queries']} queries, k = {K}, gateann defaults; "
             f"servers' fetch_size {s['fetch_size']}.", "",
             "| shards | workload | one server | natural | natural, fetch_size = k | "
             "natural, fetch_size = k, cursor_tuple_fraction 0.001 | union | slowest shard alone "
             "| rows (KB) received: natural / fetch k / tuned / union |",
             "|---|---|---|---|---|---|---|---|---|"]
    for p in [p for p in res["points"] if p.get("split") != "cluster"]:
        def cell(f):
            v = p["forms"].get(f)
            if not v:
                return "–"
            rec = f"{v['recall']:.3f}, " if "recall" in v else ""
            return f"{rec}{v['ms_mean']:.2f} ms (p95 {v['ms_p95']:.2f})"
        one = p.get("single")
        one_s = f"{one['recall']:.3f}, {one['ms_mean']:.2f} ms" if one else "–"
        rows = " / ".join(f"{p['forms'][f]['rows']:.0f} ({p['forms'][f]['kb']:.0f})"
                          for f in ("natural", "natural_fetchk", "natural_tuned", "union"))
        lines.append(f"| {p['shards']} | {p['workload']} | {one_s} | {cell('natural')} | "
                     f"{cell('natural_fetchk')} | {cell('natural_tuned')} | {cell('union')} | "
                     f"{cell('shard')} | {rows} |")
    routed = [p for p in res["points"] if p.get("split") == "cluster"]
    if routed:
        lines += ["", "Rows split by cluster (gateann_kmeans), the natural query with fetch_size = "
                  "k and cursor_tuple_fraction 0.001, routed to the nearest m clusters' shards:", "",
                  "| shards | workload | m = 1 | m = 2 | m = 4 | m = 8 |", "|---|---|---|---|---|---|"]
        for p in routed:
            cells = []
            for m in (1, 2, 4, 8):
                v = p["forms"].get(f"routed{m}")
                cells.append("–" if v is None else f"{v['recall']:.3f}, {v['ms_mean']:.2f} ms")
            lines.append(f"| {p['shards']} | {p['workload']} | " + " | ".join(cells) + " |")
    lines += ["", "Build s per shard: " + "; ".join(
        f"{b['shards']} shards{' by cluster' if b.get('split') else ''}: "
        + ", ".join(f"{t:.1f}" for t in b["build_s"])
        for b in res["builds"])]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="python3 -m gateann_bench shards")
    ap.add_argument("--shape", default="current_128")
    ap.add_argument("--n", type=int, default=300_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--shards", default="1,2,3")
    ap.add_argument("--workloads", default="none,u10")
    ap.add_argument("--fetch-size", type=int, default=100)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    conn = connect()
    if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'postgres_fdw'"
                    ).fetchone() is None:
        raise SystemExit("postgres_fdw is not installed for this server")
    shape = shapes.SHAPES[a.shape]
    metric = shape.metrics[0]
    op, opclass = shapes.OPS[metric][0], shapes.OPS[metric][1]
    data = shapes.generate(shape, a.n, a.queries)
    x, q = data["vectors"], data["queries"]
    if metric == "cosine":
        x, q = shapes._normalize(x), shapes._normalize(q)
    cols, qparams = shapes.labels_and_params(x, q, shapes._stream_id(shape.name))
    label, qlabel = cols["u10"], qparams["u10"]
    workloads = [w for w in a.workloads.split(",") if w]
    gts = {"none": (shapes.ground_truth(x, q, None), None)}
    if "u10" in workloads:
        mask = label[None, :] == qlabel[:, None]
        gts["u10"] = (shapes.ground_truth(x, q, mask), mask)
    nshards = [int(v) for v in a.shards.split(",") if v]
    base_port = int(os.environ.get("PGPORT", "5499"))
    res = {**run_facts(conn, "shards", a.command),
           "settings": {"shape": a.shape, "metric": metric, "n": a.n, "queries": a.queries,
                        "shards": nshards, "workloads": workloads, "fetch_size": a.fetch_size,
                        "k": K},
           "points": [], "builds": []}

    def save():
        res["seconds"] = round(time.monotonic() - t_start, 1)
        write_json(out / "results.json", res)
        (out / "summary.md").write_text(summary(res))

    servers = []
    try:
        for i in range(max(nshards)):
            servers.append(start_server(base_port + 1 + i))
        sconns = [shard_conn(s) for s in servers]
        for n in nshards:
            ids_of = [np.arange(1, a.n + 1)[np.arange(1, a.n + 1) % n == i] for i in range(n)]
            build_s = []
            for i in range(n):
                log(f"{n} shards: loading shard {i + 1}, {len(ids_of[i])} rows")
                build_s.append(load_shard(sconns[i], x, label, ids_of[i], opclass))
            res["builds"].append({"shards": n, "build_s": build_s})
            coordinator_setup(conn, servers[:n], a.fetch_size)
            text_width = conn.execute(
                "SELECT avg(length(id::text) + length(embedding::text)) FROM items_1 LIMIT 1000"
            ).fetchone()[0]
            for wl in workloads:
                gt, mask = gts[wl]
                labs = None if wl == "none" else qlabel
                pt = {"shards": n, "workload": wl, "forms": {}}
                for form in ("natural", "natural_fetchk", "natural_tuned", "union"):
                    fetch = K if form in ("natural_fetchk", "natural_tuned") else a.fetch_size
                    set_server_options(conn, n, fetch, form == "natural_tuned")
                    sql = statement("union" if form == "union" else "natural", op, n, wl != "none")
                    found, ms = run(conn, sql, q, labs, "union" if form == "union" else "natural", n)
                    f = {**recall(found, x, q, gt, mask), "ms_mean": round(float(ms.mean()), 3),
                         "ms_p95": round(float(np.percentile(ms, 95)), 3)}
                    f["rows"] = round(fetched_rows(
                        conn, sql, q, labs, "union" if form == "union" else "natural", n,
                        fetch), 1)
                    f["kb"] = round(f["rows"] * float(text_width) / 1024, 1)
                    pt["forms"][form] = f
                    log(f"  {n} shards {wl} {form}: recall {f['recall']:.3f} "
                        f"{f['ms_mean']:.2f} ms, {f['rows']:.0f} rows")
                # each shard alone, the same queries: per query the slowest
                sql = statement("natural", op, 1, wl != "none")
                per = [run(sc, sql, q, labs, "natural", 1)[1] for sc in sconns[:n]]
                slow = np.max(np.vstack(per), axis=0)
                pt["forms"]["shard"] = {"ms_mean": round(float(slow.mean()), 3),
                                        "ms_p95": round(float(np.percentile(slow, 95)), 3)}
                if n == 1:
                    found, ms = run(sconns[0], sql, q, labs, "natural", 1)
                    pt["single"] = {**recall(found, x, q, gt, mask),
                                    "ms_mean": round(float(ms.mean()), 3)}
                res["points"].append(pt)
                save()
            if n >= 2:
                measure_routed(conn, sconns, servers, n, x, q, label, qlabel, gts, a, op,
                               opclass, res)
                save()
    finally:
        for s in servers:
            stop_server(s)
    save()
    print(summary(res))
    log(f"done in {res['seconds']:.0f} s: {out / 'summary.md'}")


if __name__ == "__main__":
    main()
