#!/usr/bin/env python3
"""gateann benchmark driver.

For each dataset of a preset: generate (cached) and load it, compute exact
filtered ground truth (cached), then for each engine (`exact`: sequential scan
with the same SQL; `gateann`: the index, built here) and each workload, sweep
the engine's settings (GUCs such as gateann.search_list_size) and measure per
point: recall@k, single-client latency mean/p50/p99 (psycopg, prepared
statements), per-scan counters from gateann_last_scan(), and QPS with pgbench
(bench/pgbench/*.sql) at each client count. Writes to --out:
  points.csv, results.json, summary.md, *.png
Connection: libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE).

  python3 -m gateann_bench driver --preset quick --out results/x [--workloads label10,...]

Presets live in presets.py, engines in engines.py, a point's measurement in
measure.py, the output in report.py.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from .common import connect, git_facts, log, machine_facts, write_json
from .engines import ENGINES, ExactEngine, oneline
from .gen import Dataset, DatasetSpec, load
from .groundtruth import ground_truth
from .measure import K, measure
from .presets import PRESETS
from .report import plot, summary_md, write_csv
from .workloads import WORKLOADS


# ---------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="quick", choices=sorted(PRESETS))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pgbench", default=os.environ.get("PGBENCH", "pgbench"))
    ap.add_argument("--workloads", help="comma list overriding the preset's")
    ap.add_argument("--engines", help="comma list overriding the preset's engines "
                    "(exact,gateann,pgvector)")
    ap.add_argument("--queries", type=int, help="override the preset's query count")
    ap.add_argument("--datasets", help="comma list of NxDIM overriding the preset's, e.g. 1000000x128")
    ap.add_argument("--reuse-index", action="store_true", help="keep an existing index (no build)")
    ap.add_argument("--command", default=" ".join(sys.argv), help="command recorded in results")
    a = ap.parse_args()
    cfg = json.loads(json.dumps(PRESETS[a.preset]))
    if a.workloads:
        cfg["workloads"] = a.workloads.split(",")
    if a.queries:
        cfg["queries"] = a.queries
    if a.datasets:
        cfg["datasets"] = [{"n": int(n), "dim": int(d)} for n, d in
                           (x.lower().split("x") for x in a.datasets.split(","))]
    a.out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()

    conn = connect()
    warnings: list[str] = []
    pg_settings = {r[0]: r[1] for r in conn.execute(
        "SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name IN "
        "('shared_buffers', 'maintenance_work_mem', 'max_parallel_maintenance_workers', "
        "'max_parallel_workers_per_gather', 'shared_preload_libraries', 'jit', 'work_mem')")}
    data_dir = None
    try:
        data_dir = conn.execute("SHOW data_directory").fetchone()[0]
    except Exception:  # noqa: BLE001 - not superuser
        pass
    ext = conn.execute("SELECT coalesce((SELECT default_version FROM pg_available_extensions "
                       "WHERE name = 'gateann'), 'not installed')").fetchone()[0]
    results = {
        "preset": a.preset, "config": cfg, "command": a.command,
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": machine_facts(data_dir if data_dir and os.path.exists(data_dir) else None),
        "git": git_facts(),
        "postgres": {"version": conn.execute("SELECT version()").fetchone()[0],
                     "settings": pg_settings},
        "extension": ext, "datasets": [], "indexes": [], "points": [], "warnings": warnings,
    }

    def save():
        results["seconds"] = round(time.monotonic() - t_start, 1)
        write_json(a.out / "results.json", results)
        write_csv(a.out / "points.csv", results["points"])

    if ext != "not installed":
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
            results["extension"] = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'gateann'").fetchone()[0]
        except Exception as e:  # noqa: BLE001
            warnings.append(f"CREATE EXTENSION gateann failed: {oneline(e)}")
    engines = []
    for name in (a.engines.split(",") if a.engines else list(cfg["engines"])):
        ecfg = cfg["engines"].get(name, {})
        e = ExactEngine(ecfg, warnings) if name == "exact" else ENGINES[name](ecfg, warnings, a.reuse_index)
        if e.available(conn):
            engines.append(e)
        else:
            ext_name = ("vector (pgvector)" if name == "pgvector" else
                        "gateann_vector and vector" if name == "gateann_vector" else name)
            warnings.append(f"engine {name} not available (extension {ext_name} not installed): skipped")
    for dcfg in cfg["datasets"]:
        spec = DatasetSpec(**dcfg)
        ds = Dataset(spec)
        meta = json.loads((spec.dir / "meta.json").read_text())
        ld = load(spec, conn)
        results["datasets"].append({"name": spec.name, "n": spec.n, "dim": spec.dim,
                                    "spec": spec.key(), "generate_seconds": meta["generate_seconds"],
                                    "load": ld})
        nq = min(cfg["queries"], spec.nq)
        gts = {w: ground_truth(ds, WORKLOADS[w], nq, K) for w in cfg["workloads"]}
        for e in engines:
            try:
                results["indexes"].append(e.prepare(conn, spec))
            except Exception as ex:  # noqa: BLE001 - skip this engine, keep the others
                warnings.append(f"{e.name} skipped on {spec.name}: {oneline(ex)}")
                log(warnings[-1])
                continue
            save()
            enq = min(nq, e.cfg.get("queries", nq))
            clients = e.cfg.get("clients", cfg["clients"])
            secs = e.cfg.get("pgbench_seconds", cfg["pgbench_seconds"])
            if getattr(e, "fallback", False):
                enq, clients, secs = min(enq, 5), [1], 1
            # a run = workloads x sweep; several runs share one index (e.g. filter_mode on a few)
            plan = [(w, point) for run in (e.cfg.get("runs") or [{}])
                    for w in run.get("workloads", cfg["workloads"]) if w in cfg["workloads"]
                    for point in e.points(run.get("sweep"))]
            for w, point in plan:
                # a fresh session per point: no prepared plan or session state carries over
                with connect() as pconn:
                    row = measure(pconn, e, spec, WORKLOADS[w], gts[w], enq, point, clients, secs,
                                  a.pgbench, cfg.get("max_point_seconds", 60))
                results["points"].append(row)
                log(f"{spec.name} {w} {e.name} {point or ''}: recall {row[f'recall@{K}']} "
                    f"mean {row['lat_mean_ms']} ms p99 {row['lat_p99_ms']} ms "
                    + " ".join(f"QPS{c}={row.get(f'qps_c{c}')}" for c in clients)
                    + (f" reads/q {row.get('reads_per_q')}" if "reads_per_q" in row else ""))
                save()
            e.finish(conn, results["indexes"][-1])
            save()
    for r in results["points"]:
        if r["engine"] == "exact" and r.get(f"recall@{K}") is not None and r[f"recall@{K}"] < 0.999:
            warnings.append(f"exact scan recall {r[f'recall@{K}']} < 1 on {r['dataset']}/{r['workload']}: "
                            "SQL distance and numpy ground truth disagree")
        for k in list(r):
            if k.startswith("pgbench_error"):
                warnings.append(f"{r['dataset']}/{r['workload']}/{r['engine']} {r['settings']}: "
                                f"{k}: {r[k]}")
    save()
    plots = plot(results, a.out)
    (a.out / "summary.md").write_text(summary_md(results, plots))
    save()
    log(f"done in {results['seconds']}s: {a.out}/summary.md")


if __name__ == "__main__":
    main()
