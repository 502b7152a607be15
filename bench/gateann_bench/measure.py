"""One point of a sweep: recall@k, single-client latency, per-scan counters from
gateann_last_scan(), and QPS with pgbench at each client count."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time

import numpy as np

from .common import BENCH_DIR
from .engines import pgoptions, set_gucs
from .gen import DatasetSpec
from .groundtruth import recall


K = 10  # recall@K, the LIMIT of every query


LAST_SCAN_COLS = ["visited", "reads", "buffer_hits", "tunneled", "filter_checks",
                  "filter_false_positives", "exact_distances", "pq_distances", "returned",
                  "io_wait_us", "tunnel_us", "compute_us", "resident_hits", "page_cache_hits"]



# ---------------------------------------------------------------------------
# measurement
# ---------------------------------------------------------------------------
PGB_PATTERNS = {
    "tps": r"tps = ([\d.]+) \(without initial connection time\)",
    "latency_ms": r"latency average = ([\d.]+) ms",
    "transactions": r"number of transactions actually processed: (\d+)",
    "failed": r"number of failed transactions: (\d+)",
}


def run_pgbench(pgbench: str, script: str, variables: dict, clients: int, seconds: int,
                gucs: dict) -> dict:
    cmd = [pgbench, "-n", "-M", "simple", "-f", str(BENCH_DIR / "pgbench" / script),
           "-c", str(clients), "-j", str(clients), "-T", str(seconds)]
    for k, v in variables.items():
        cmd += ["-D", f"{k}={v}"]
    env = dict(os.environ, PGOPTIONS=pgoptions(gucs))
    shown = f"PGOPTIONS={shlex.quote(env['PGOPTIONS'])} " + " ".join(shlex.quote(c) for c in cmd)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    res: dict = {"cmd": shown}
    for k, pat in PGB_PATTERNS.items():
        m = re.search(pat, p.stdout)
        if m:
            res[k] = float(m.group(1))
    if p.returncode != 0 or "tps" not in res:
        res["error"] = (p.stderr.strip().splitlines() or ["pgbench failed"])[-1]
    return res


def measure(conn, engine, spec: DatasetSpec, wl, gt: dict, nq: int, point: dict,
            clients: list[int], seconds: int, pgbench: str, max_seconds: float = 60) -> dict:
    gucs = {**engine.gucs, **point}
    set_gucs(conn, gucs)
    table = getattr(engine, "table", "") or spec.table
    qtable = getattr(engine, "qtable", "") or spec.qtable
    column = getattr(engine, "column", "embedding")
    sql = wl.sql(table, qtable, column=column, k=K)
    params = gt["params"]
    plan = "\n".join(r[0] for r in conn.execute(
        "EXPLAIN (COSTS OFF) " + sql, wl.args(1, params[0])))
    for qi in range(min(10, nq)):                       # warm-up
        conn.execute(sql, wl.args(qi + 1, params[qi]), prepare=True).fetchall()
    lat, recs, stats = [], [], []
    t_pass = time.monotonic()
    for qi in range(nq):
        if time.monotonic() - t_pass > max_seconds:       # pathological point: stop early
            break
        args = wl.args(qi + 1, params[qi])
        t0 = time.perf_counter()
        rows = conn.execute(sql, args, prepare=True).fetchall()
        lat.append(time.perf_counter() - t0)
        r = recall([row[0] for row in rows], gt["ids"][qi], gt["nmatch"][qi], K)
        if r is not None:
            recs.append(r)
        s = engine.stats(conn)
        if s:
            stats.append(s)
    lat_ms = np.array(lat) * 1000
    row = {
        "dataset": spec.name, "n": spec.n, "dim": spec.dim, "workload": wl.name,
        "selectivity": round(float(gt["nmatch"][:nq].mean()) / spec.n, 5),
        "engine": engine.name, "settings": json.dumps(point, sort_keys=True),
        "L": point.get(getattr(engine, "l_key", "gateann.search_list_size")),
        "filter_mode": point.get("gateann.filter_mode"),
        "queries": len(lat), f"recall@{K}": round(float(np.mean(recs)), 4) if recs else None,
        "lat_mean_ms": round(float(lat_ms.mean()), 3),
        "lat_p50_ms": round(float(np.percentile(lat_ms, 50)), 3),
        "lat_p99_ms": round(float(np.percentile(lat_ms, 99)), 3),
        "plan_uses_index": ("gateann" in plan) if engine.name.startswith("gateann")
        else (engine.index in plan) if engine.name == "pgvector" else None,
    }
    if stats:
        for c in LAST_SCAN_COLS:
            vals = [s[c] for s in stats if s.get(c) is not None]
            row[f"{c}_per_q"] = round(float(np.mean(vals)), 2) if vals else None
        row["io_method"] = stats[-1].get("io_method")
        row["io_direct"] = stats[-1].get("io_direct")
        # share of the queries gate answered by pre-filtering (the rest: graph search)
        strategies = [s.get("strategy") for s in stats if s.get("strategy") is not None]
        if strategies:
            row["prefilter_share"] = round(strategies.count("prefilter") / len(strategies), 3)
    # where the index's page reads came from (SPEC §6: cold vs warm labelled)
    if engine.name.startswith("gateann") and stats:
        row["reads_from"] = ("device (O_DIRECT)" if row.get("io_direct")
                             else "shared buffers" if row.get("io_method") == "buffer"
                             else "OS page cache or device (buffered)")
    else:
        row["reads_from"] = "shared buffers or OS page cache"
    script, variables = wl.pgbench(table, qtable, nq=spec.nq, column=column, k=K)
    for c in clients:
        pb = run_pgbench(pgbench, script, variables, c, seconds, gucs)
        row[f"qps_c{c}"] = pb.get("tps")
        row[f"pgbench_lat_ms_c{c}"] = pb.get("latency_ms")
        if "error" in pb:
            row[f"pgbench_error_c{c}"] = pb["error"]
        row.setdefault("pgbench_cmd", pb["cmd"])
    row["plan"] = plan
    return row
