#!/usr/bin/env python3
"""Memory budgets: reads per query and QPS when the index does not fit in RAM.

  bench/run.sh memory [--shape sentences_384] [--n 100000] [--L 50,100,200]
                      [--cache-shares 0,0.1,0.25,0.5] [--seconds 10]
                      [--workloads none,u10,u1] [--filter-modes gate,post]
                      [--read-lists 0,20]

One table of a shape of the data-shape matrix (bench/gateann_bench/shapes.py: the same rows,
queries and ground truth) with a gateann index on (embedding, u10, u1).  The
server is restarted for every memory budget with shared_buffers small enough
that the index is not read into them (it stays out of shared buffers unless a
quarter of them would hold its node pages) and gateann.record_cache_size a
share of the index's size; before each point the server is restarted (an
empty record cache) and the kernel's page cache emptied
(/proc/sys/vm/drop_caches, root), so a record that neither the record
cache nor shared buffers hold is read from the device with O_DIRECT.

For each budget, workload (none, u10 = 10 % of rows, u1 = 1 %) and L: a first
pass over the queries from a cold cache, then a second pass (the cache filled
by the first): recall@10, mean ms, device reads per query (pages), record
cache hits per query; then QPS with 1 and 2 clients for --seconds each
(processes running the same queries in a loop).  --read-lists runs each
point again with gateann.read_list_size at each value (0: the walk reads every
candidate it expands; n: a memory walk that reads the best n, then 2n, ...).  --fill-share s:
each point first runs the first s of the queries (filling the record cache),
then measures the others once (the "filled" pass, reported where the warm
pass is): a cache that holds records other queries read, not these.  The device's random 8 KiB
read rate at queue depth 1 is measured on the index file itself (O_DIRECT).

Writes results.json and summary.md into --out.  Needs the throwaway cluster
of bench/run.sh (it restarts it) and root for drop_caches.
"""
from __future__ import annotations

import argparse
import json
import mmap
import multiprocessing as mp
import os
import random
import subprocess
import time
from pathlib import Path

import numpy as np

from . import shapes
from .common import connect, git_facts, log, machine_facts, write_json

WORKLOADS = ["none", "u10", "u1"]


def pg_ctl(*args: str) -> None:
    bindir = subprocess.run([os.environ.get("PG_CONFIG", "pg_config"), "--bindir"],
                            capture_output=True, text=True, check=True).stdout.strip()
    cluster = os.environ["BENCH_CLUSTER_DIR"]
    # (-l: a postmaster writing to our pipes would keep them open)
    cmd = [f"{bindir}/pg_ctl", "-D", f"{cluster}/data", "-l", f"{cluster}/server.log", "-w", *args]
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    subprocess.run(cmd, check=True, capture_output=True)


def drop_page_cache() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return True
    except OSError:
        return False


def device_read_rate(path: str, seconds: float = 3.0) -> float:
    """Random 8 KiB O_DIRECT reads per second at queue depth 1 on the file."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        blocks = os.fstat(fd).st_size // 8192
        buf = mmap.mmap(-1, 8192)
        rng = random.Random(1)
        n, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < seconds:
            os.preadv(fd, [buf], rng.randrange(blocks) * 8192)
            n += 1
        return n / (time.monotonic() - t0)
    finally:
        os.close(fd)


def query_sql(table: str, metric: str, wl: str, v: np.ndarray, param) -> str:
    op = shapes.OPS[metric][0]
    where = "" if wl == "none" else f"WHERE {wl} = {int(param)}"
    return (f"SELECT id FROM {table} {where} ORDER BY embedding {op} "
            f"{shapes._lit(v, 'gateann')} LIMIT {shapes.K}")


def one_pass(conn, sqls: list[str]) -> tuple[list[list[int]], float, dict]:
    found, spent = [], 0.0
    sums = {"reads": 0, "cache_hits": 0, "page_cache_hits": 0, "page_hits": 0,
            "page_search_results": 0}
    for sql in sqls:
        t0 = time.monotonic()
        found.append([r[0] for r in conn.execute(sql).fetchall()])
        spent += time.monotonic() - t0
        st = conn.execute("SELECT reads, cache_hits, page_cache_hits, page_hits, "
                          "page_search_results FROM gateann_last_scan()").fetchone()
        for k, v in zip(sums, st):
            sums[k] += v
    n = max(1, len(sqls))
    return found, spent * 1000 / n, {k: round(v / n, 1) for k, v in sums.items()}


def settings(conn, L: int, mode: str, read_list: int, gucs: dict) -> None:
    """A point's settings; gucs: the varied gateann settings (page_search, ...)."""
    conn.execute("SET enable_seqscan = off")
    for name, value in gucs.items():
        conn.execute(f"SET gateann.{name} = {value}")
    conn.execute(f"SET gateann.search_list_size = {L}")
    conn.execute(f"SET gateann.filter_mode = {mode}")
    conn.execute(f"SET gateann.read_list_size = {read_list}")


def _client(sqls: list[str], L: int, mode: str, read_list: int, gucs: dict, seconds: float,
            out) -> None:
    conn = connect()
    settings(conn, L, mode, read_list, gucs)
    n, t0, i = 0, time.monotonic(), 0
    while time.monotonic() - t0 < seconds:
        conn.execute(sqls[i % len(sqls)]).fetchall()
        n, i = n + 1, i + 1
    out.put(n / (time.monotonic() - t0))


def qps(sqls: list[str], L: int, mode: str, read_list: int, gucs: dict, clients: int,
        seconds: float) -> float:
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_client,
                         args=(sqls[c::clients] or sqls, L, mode, read_list, gucs, seconds,
                               out))
             for c in range(clients)]
    for p in procs:
        p.start()
    rates = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return round(sum(rates), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="python3 -m gateann_bench memory")
    ap.add_argument("--shape", default="sentences_384")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--nq", type=int, default=200)
    ap.add_argument("--L", default="50,100,200")
    ap.add_argument("--cache-shares", default="0,0.1,0.25,0.5",
                    help="gateann.record_cache_size as shares of the index's size")
    ap.add_argument("--shared-buffers", default="64MB")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--clients", default="1,2")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--filter-modes", default="gate",
                    help="gateann.filter_mode values for the filtered workloads (gate,post)")
    ap.add_argument("--page-search", default="auto",
                    help="gateann.page_search values (auto,on,off)")
    ap.add_argument("--dynamic-width", default="on",
                    help="gateann.dynamic_width values (on,off)")
    ap.add_argument("--fill-share", type=float, default=0.0,
                    help="> 0: each point first runs this share of the queries (filling the "
                         "record cache), then measures the others (the 'filled' pass) instead "
                         "of a cold and a warm pass over all")
    ap.add_argument("--gateann-with", default="",
                    help="index options, e.g. 'record_precision = half'")
    ap.add_argument("--read-lists", default="0",
                    help="gateann.read_list_size values (0: read as the walk goes)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    Ls = [int(x) for x in a.L.split(",")]
    clients = [int(x) for x in a.clients.split(",")]

    shape = shapes.SHAPES[a.shape]
    metric = shape.metrics[0]
    data = shapes.generate(shape, a.n, a.nq)
    x, q = data["vectors"], data["queries"]
    if metric == "cosine":
        x, q = shapes._normalize(x), shapes._normalize(q)
    cols, params = shapes.labels_and_params(x, q, shapes._stream_id(shape.name))
    cols = {c: cols[c] for c in ("u10", "u1")}
    table = f"mem_{shape.name}"
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    log(f"{shape.name}: loading {a.n} x {shape.dim}")
    shapes.load_table(conn, table, x, cols, False)
    conn.execute("SET maintenance_work_mem = '2GB'")
    t0 = time.monotonic()
    conn.execute(f"CREATE INDEX {table}_idx ON {table} USING gateann "
                 f"(embedding {shapes.OPS[metric][1]}, u10, u1)"
                 + (f" WITH ({a.gateann_with})" if a.gateann_with else ""))
    build_s = round(time.monotonic() - t0, 1)
    conn.execute("CHECKPOINT")
    index_bytes = conn.execute(f"SELECT pg_relation_size('{table}_idx')").fetchone()[0]
    info_names = [d.name for d in conn.execute(
        f"SELECT * FROM gateann_index_info('{table}_idx')").description]
    info = dict(zip(info_names, conn.execute(
        f"SELECT * FROM gateann_index_info('{table}_idx')").fetchone()))
    store_bytes = info["pq_bytes"] + info["neighbor_store_bytes"] + info["filter_store_bytes"]
    path = os.path.join(os.environ["BENCH_CLUSTER_DIR"], "data", conn.execute(
        f"SELECT pg_relation_filepath('{table}_idx')").fetchone()[0])
    conn.close()

    masks = {wl: (None if wl == "none" else cols[wl][None, :] == params[wl][:, None])
             for wl in WORKLOADS}
    gts = {wl: shapes.ground_truth(x, q, masks[wl]) for wl in WORKLOADS}
    sqls = {wl: [query_sql(table, metric, wl, v, None if wl == "none" else params[wl][i])
                 for i, v in enumerate(q)] for wl in WORKLOADS}

    dropped = drop_page_cache()
    iops = round(device_read_rate(path), 0)
    log(f"index {index_bytes >> 20} MiB, stores {store_bytes >> 20} MiB, "
        f"device {iops:.0f} reads/s at QD1, page cache dropped: {dropped}")

    points = []
    for share in [float(s) for s in a.cache_shares.split(",")]:
        cache_mb = int(index_bytes * share) >> 20
        conn = connect()
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{a.shared_buffers}'")
        conn.execute(f"ALTER SYSTEM SET gateann.record_cache_size = '{cache_mb}MB'")
        conn.close()
        points_wanted = [(wl, mode, rl, pages, dyn, L) for wl in a.workloads.split(",")
                         for mode in (["gate"] if wl == "none" else a.filter_modes.split(","))
                         for rl in ([0] if mode != "gate" else
                                    [int(v) for v in a.read_lists.split(",")])
                         for pages in a.page_search.split(",")
                         for dyn in a.dynamic_width.split(",")
                         for L in Ls]
        for wl, mode, rl, pages, dyn, L in points_wanted:
            gucs = {"page_search": pages, "dynamic_width": dyn}
            # every point starts from an empty record cache and page cache
            pg_ctl("restart", "-m", "fast")
            conn = connect()
            conn.execute(f"SELECT gateann_prewarm('{table}_idx')")
            settings(conn, L, mode, rl, gucs)
            drop_page_cache()
            passes = {}
            # (fill: the first share of the queries fill the cache; the rest are measured)
            k = int(len(q) * a.fill_share)
            runs_ = ([("cold", slice(None)), ("warm", slice(None))] if k == 0 else
                     [("fill", slice(0, k)), ("filled", slice(k, None))])
            for name, part in runs_:
                found, ms, c = one_pass(conn, sqls[wl][part])
                rec = shapes.recall_of(found, x, q[part],
                                       {g: v[part] for g, v in gts[wl].items()},
                                       None if masks[wl] is None else masks[wl][part])
                ok = ~np.isnan(rec)
                passes[name] = {"recall": round(float(rec[ok].mean()), 4), "ms": round(ms, 2),
                                **c}
            if k:
                # (the log line and the tables read a cold and a warm pass)
                passes["cold"], passes["warm"] = passes["fill"], passes["filled"]
            pt = {"cache_share": share, "cache_mb": cache_mb, "workload": wl, "mode": mode,
                  "read_list": rl, "page_search": pages, "dynamic_width": dyn,
                  "fill_share": a.fill_share, "L": L,
                  **{f"{k}_{p}": v for p, d in passes.items() for k, v in d.items()}}
            for cl in clients:
                pt[f"qps_{cl}"] = qps(sqls[wl][k:], L, mode, rl, gucs, cl, a.seconds)
            points.append(pt)
            log(f"cache {cache_mb:5} MB {wl:4} {mode:4} read {rl:3} pages {pages:3} "
                f"dynamic width {dyn:3} L={L:3}: "
                f"recall {pt['recall_warm']:.3f} "
                f"reads {pt['reads_cold']:.1f}/{pt['reads_warm']:.1f} "
                f"page hits {pt['page_hits_cold']:.1f} "
                f"hits {pt['cache_hits_warm']:.1f} {pt['ms_warm']:.2f} ms "
                + " ".join(f"qps{cl} {pt[f'qps_{cl}']}" for cl in clients))
            conn.close()
    conn = connect()
    conn.execute("ALTER SYSTEM RESET shared_buffers")
    conn.execute("ALTER SYSTEM RESET gateann.record_cache_size")
    conn.close()
    pg_ctl("restart", "-m", "fast")

    facts = {"shape": shape.name, "metric": metric, "n": a.n, "dim": shape.dim,
             "queries": a.nq, "build_s": build_s, "index_bytes": index_bytes,
             "store_bytes": store_bytes, "shared_buffers": a.shared_buffers,
             "device_reads_per_s_qd1": iops, "page_cache_dropped": dropped,
             "seconds_per_qps_point": a.seconds, "index_options": a.gateann_with}
    results = {"kind": "memory", "command": a.command, "memory": facts, "points": points,
               "machine": machine_facts(), "git": git_facts()}
    write_json(out / "results.json", results)
    (out / "summary.md").write_text(summary_md(results))
    log(f"wrote {out / 'summary.md'}")


def summary_md(r: dict) -> str:
    f = r["memory"]
    lines = [f"# Memory budgets: {f['shape']} ({f['n']} x {f['dim']}, {f['metric']})", "",
             f"`{r['command']}`", "",
             f"Index {f['index_bytes'] >> 20} MiB, in-memory stores {f['store_bytes'] >> 20} MiB, "
             f"shared_buffers {f['shared_buffers']}; the device reads "
             f"{f['device_reads_per_s_qd1']:.0f} random 8 KiB blocks/s at queue depth 1 "
             f"(O_DIRECT); page cache dropped before each point: {f['page_cache_dropped']}.", "",
             "The second pass repeats the first's queries, and the QPS clients loop over them: "
             "a cache that holds their records serves every read.", "",
             "| record cache | workload | filter mode | page search | L | recall@10 "
             "| device reads/q cold → warm | cache hits/q | page hits/q | ms/q warm | QPS 1 "
             "| QPS 2 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in r["points"]:
        share = f"{p['cache_mb']} MB ({p['cache_share']:.0%})"
        lines.append(f"| {share} | {p['workload']} | {p.get('mode', 'gate')} | "
                     f"{p.get('page_search', 'off')} | {p['L']} | "
                     f"{p['recall_warm']:.3f} | "
                     f"{p['reads_cold']:.1f} → {p['reads_warm']:.1f} | {p['cache_hits_warm']:.1f} | "
                     f"{p.get('page_hits_warm', 0):.1f} | "
                     f"{p['ms_warm']:.2f} | {p.get('qps_1', '')} | {p.get('qps_2', '')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
