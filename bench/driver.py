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

  python driver.py --preset quick --out results/x [--workloads label10,...]
"""
from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from common import BENCH_DIR, connect, git_facts, log, machine_facts, write_json
from gen import Dataset, DatasetSpec, load
from groundtruth import ground_truth, recall
from workloads import WORKLOADS

K = 10

# ---------------------------------------------------------------------------
# presets
# ---------------------------------------------------------------------------
ALL_FILTER_COLUMNS = ["label10", "label100", "zipf10", "corr_a0", "corr_a50", "corr_a100",
                      "price", "ts", "tags"]

# The index of the `filter` preset; `filter_width` searches the same one
# (--reuse-index), so both must name the same columns and options.
FILTER_INDEX = {
    "index_columns": ["embedding", "label10", "label100", "zipf10",
                      "corr_a0", "corr_a100", "price", "tags"],
    "index_options": {"max_neighbors": 64, "build_search_list_size": 128, "alpha": 1.2},
}

PRESETS: dict[str, dict] = {
    # make bench-quick: <= 5 minutes including the build of the extension
    "quick": {
        "datasets": [{"n": 100_000, "dim": 128}],
        "workloads": ["unfiltered", "label10"],
        "queries": 200,
        "clients": [1, 2],
        "pgbench_seconds": 3,
        "engines": {
            "exact": {"queries": 30, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                "index_columns": ["embedding", "label10"],
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "sweep": {"gateann.search_list_size": [20, 40, 100, 200, 400]},
            },
        },
    },
    # make bench: see README.md for the expected duration
    "full": {
        "datasets": [{"n": 100_000, "dim": 128}, {"n": 1_000_000, "dim": 128}],
        "workloads": ["unfiltered", "label10", "label100", "zipf10",
                      "corr_a0", "corr_a50", "corr_a100", "corr_a100_near",
                      "range1", "range10", "ts30d", "tags_contains", "tags_contains2",
                      "label10_and_range20", "label10_or_label100"],
        "queries": 500,
        "clients": [1, 2],
        "pgbench_seconds": 5,
        "max_point_seconds": 60,
        "engines": {
            "exact": {"queries": 30, "clients": [1, 2], "pgbench_seconds": 5},
            "gateann": {
                "index_columns": ["embedding"] + ALL_FILTER_COLUMNS,
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "runs": [
                    # every workload, default filter mode (gate)
                    {"sweep": {"gateann.search_list_size": [10, 20, 50, 100, 200, 400, 600]}},
                    # the paper's baselines in the same engine on a few workloads; skipped
                    # (with a note) while gateann.filter_mode does not exist
                    {"workloads": ["label10", "label100", "corr_a0", "corr_a100", "range1"],
                     "sweep": {"gateann.filter_mode": ["post", "early"],
                               "gateann.search_list_size": [20, 100, 200, 400]}},
                ],
            },
        },
    },
    # the SSD read path (engine issue): 1M x 128 at L = 100, synchronous
    # buffer-manager reads vs io_uring with 1, 4, 16 reads in flight, and pread
    "io": {
        "datasets": [{"n": 1_000_000, "dim": 128}],
        "workloads": ["unfiltered"],
        "queries": 200,
        "clients": [1, 2],
        "pgbench_seconds": 10,
        "engines": {
            "exact": {"queries": 10, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                "index_columns": ["embedding"],
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "runs": [
                    {"sweep": {"gateann.io_method": ["buffer"],
                               "gateann.search_list_size": [100]}},
                    {"sweep": {"gateann.io_method": ["io_uring"],
                               "gateann.io_width": [1, 4, 16],
                               "gateann.search_list_size": [100]}},
                    {"sweep": {"gateann.io_method": ["pread"],
                               "gateann.search_list_size": [100]}},
                ],
            },
        },
    },
    # filtered search (filtering issue): 1M x 128, the filter pushed into the
    # index; gate across workloads, and the post baseline on the same index
    # for the selectivity sweep (reads per query vs s, recall at equal L)
    "filter": {
        "datasets": [{"n": 1_000_000, "dim": 128}],
        "workloads": ["label10", "label100", "zipf10", "corr_a0", "corr_a100",
                      "corr_a100_near", "range5", "range10", "range20", "range50",
                      "tags_contains", "tags_contains2", "label10_and_range20",
                      "label10_or_label100"],
        "queries": 100,
        "clients": [1, 2],
        "pgbench_seconds": 3,
        "max_point_seconds": 60,
        "engines": {
            "exact": {"queries": 10, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                **FILTER_INDEX,
                "runs": [
                    {"sweep": {"gateann.filter_mode": ["gate"],
                               "gateann.search_list_size": [20, 50, 100, 200, 400]}},
                    {"workloads": ["label10", "range5", "range10", "range20", "tags_contains2",
                                   "label10_and_range20", "label10_or_label100"],
                     "sweep": {"gateann.filter_mode": ["post"],
                               "gateann.search_list_size": [20, 50, 100, 200, 400]}},
                    # gate without pre-filtering, where the default pre-filters (s <= 2 %)
                    {"workloads": ["label100", "corr_a100", "tags_contains2",
                                   "label10_and_range20"],
                     "sweep": {"gateann.prefilter_selectivity": [0],
                               "gateann.search_list_size": [20, 50, 100, 200, 400]}},
                ],
            },
        },
    },
    # reads in flight (gateann.io_width) for gate and post at s = 10 %: recall,
    # reads and QPS per W, so that each mode is compared at its best W; and
    # gate's tunnel batch (gateann.tunnel_batch, 1 = GateANN's one at a time)
    "filter_width": {
        "datasets": [{"n": 1_000_000, "dim": 128}],
        "workloads": ["label10"],
        "queries": 100,
        "clients": [1, 2],
        "pgbench_seconds": 5,
        "max_point_seconds": 60,
        "engines": {
            "exact": {"queries": 10, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                **FILTER_INDEX,
                "runs": [
                    {"sweep": {"gateann.filter_mode": ["gate", "post"],
                               "gateann.io_width": [8, 16, 32, 64],
                               "gateann.search_list_size": [150, 200]}},
                    {"sweep": {"gateann.tunnel_batch": [1, 2, 4, 8],
                               "gateann.io_width": [16, 32],
                               "gateann.search_list_size": [150, 200]}},
                ],
            },
        },
    },
    # gateann vs pgvector HNSW with iterative scan (hnsw.iterative_scan = relaxed_order),
    # both on the same rows, filters and query vectors; needs a server with pgvector
    # (e.g. the PG18 wheel: PG_CONFIG=build/pg18-venv/.../pginstall/bin/pg_config)
    "pgvector": {
        "datasets": [{"n": 100_000, "dim": 128}],
        "workloads": ["unfiltered", "label10", "label100", "range10"],
        "queries": 100,
        "clients": [1, 2],
        "pgbench_seconds": 3,
        "engines": {
            "exact": {"queries": 20, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                "index_columns": ["embedding", "label10", "label100", "price"],
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "sweep": {"gateann.search_list_size": [20, 50, 100, 200, 400]},
            },
            # the same index through gateann_vector's opclass on pgvector's column
            "gateann_vector": {
                "index_columns": ["embedding", "label10", "label100", "price"],
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "sweep": {"gateann.search_list_size": [20, 50, 100, 200, 400]},
            },
            "pgvector": {
                # pgvector's defaults
                "index_options": {"m": 16, "ef_construction": 64},
                "gucs": {"hnsw.iterative_scan": "relaxed_order"},
                "sweep": {"hnsw.ef_search": [20, 40, 100, 200, 400]},
            },
        },
    },
    # a smoke test of the harness itself (seconds)
    "smoke": {
        "datasets": [{"n": 10_000, "dim": 32, "intrinsic": 8, "nq": 200}],
        "workloads": ["unfiltered", "label10", "range10", "tags_overlap"],
        "queries": 20,
        "clients": [1, 2],
        "pgbench_seconds": 1,
        "engines": {
            "exact": {"queries": 20, "clients": [1, 2], "pgbench_seconds": 1},
            "gateann": {
                "index_columns": ["embedding", "label10"],
                "index_options": {"max_neighbors": 32, "build_search_list_size": 64},
                "sweep": {"gateann.search_list_size": [20, 100]},
            },
        },
    },
}

LAST_SCAN_COLS = ["visited", "reads", "buffer_hits", "tunneled", "filter_checks",
                  "filter_false_positives", "exact_distances", "pq_distances", "returned",
                  "io_wait_us", "tunnel_us", "compute_us"]


def oneline(e) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else repr(e)


def set_gucs(conn, gucs: dict) -> None:
    for k, v in gucs.items():
        conn.execute("SELECT set_config(%s, %s, false)", (k, str(v)))


def pgoptions(gucs: dict) -> str:
    return " ".join(f"-c {k}={str(v).replace(' ', chr(92) + ' ')}" for k, v in gucs.items())


# ---------------------------------------------------------------------------
# engines
# ---------------------------------------------------------------------------
class ExactEngine:
    """Sequential scan + sort: the exact baseline, and a check that the SQL
    path agrees with the numpy ground truth."""
    name = "exact"

    def __init__(self, cfg: dict, warnings: list):
        self.cfg, self.warnings = cfg, warnings
        self.gucs = {"enable_indexscan": "off", "enable_bitmapscan": "off"}
        self.fallback = False

    def available(self, conn) -> bool:
        return True

    def prepare(self, conn, spec: DatasetSpec) -> dict:
        # resolved through the search path, as the benchmark queries will be
        has = conn.execute("SELECT to_regoperator('<->(real[],real[])') IS NOT NULL").fetchone()[0]
        if not has:
            # gateann not installed: a slow SQL stand-in for L2 so the harness runs
            self.fallback = True
            conn.execute("CREATE SCHEMA IF NOT EXISTS bench_fallback")
            conn.execute("""CREATE OR REPLACE FUNCTION bench_fallback.l2(a real[], b real[])
                RETURNS float8 LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
                $$ SELECT sqrt(sum((x::float8 - y) * (x::float8 - y))) FROM unnest(a, b) u(x, y) $$""")
            if not conn.execute("SELECT count(*) FROM pg_operator o JOIN pg_namespace n "
                                "ON n.oid = o.oprnamespace WHERE nspname = 'bench_fallback'"
                                ).fetchone()[0]:
                conn.execute("CREATE OPERATOR bench_fallback.<-> (LEFTARG = real[], "
                             "RIGHTARG = real[], FUNCTION = bench_fallback.l2)")
            self.gucs["search_path"] = "public,bench_fallback"
            self.warnings.append("exact engine uses a slow SQL stand-in for <-> "
                                 "(gateann not installed): its timings are not meaningful")
        return {"engine": "exact", "dataset": spec.name, "sql_fallback_operator": self.fallback}

    def points(self, sweep_cfg: dict | None = None) -> list[dict]:
        return [{}]

    def stats(self, conn) -> dict | None:
        return None

    def finish(self, conn, facts: dict) -> None:
        pass


class GateannEngine:
    name = "gateann"

    def __init__(self, cfg: dict, warnings: list, reuse_index: bool = False):
        self.cfg, self.warnings, self.reuse = cfg, warnings, reuse_index
        self.gucs = {"enable_seqscan": "off", "enable_bitmapscan": "off"} \
            if cfg.get("force_index", True) else {}
        # tunnel_us / compute_us of gateann_last_scan() are timed only when asked
        self.gucs["gateann.track_timing"] = "on"
        self.stats_ok = True
        self.available_gucs: set[str] = set()
        self.index = ""
        self.table = self.qtable = ""      # "": the dataset's own tables
        self.column = "embedding"

    def target(self, conn, spec: DatasetSpec) -> tuple[str, list[str]]:
        """The table the index goes on and its columns."""
        return spec.table, self.cfg.get("index_columns", ["embedding"])

    def available(self, conn) -> bool:
        return bool(conn.execute("SELECT count(*) FROM pg_available_extensions "
                                 "WHERE name = 'gateann'").fetchone()[0])

    def prepare(self, conn, spec: DatasetSpec) -> dict:
        conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
        if not conn.execute("SELECT count(*) FROM pg_am WHERE amname = 'gateann'").fetchone()[0]:
            raise RuntimeError("extension gateann has no access method gateann (yet)")
        table, cols = self.target(conn, spec)
        self.index = f"{table}_gateann"
        opts = self.cfg.get("index_options", {})
        facts = {"engine": self.name, "dataset": spec.name, "index": self.index,
                 "table": table, "columns": cols, "options": opts}
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (self.index,)).fetchone()[0]
        if exists and self.reuse:
            facts["build_seconds"] = None
            facts["reused"] = True
        else:
            conn.execute(f"DROP INDEX IF EXISTS {self.index}")
            conn.execute("SET maintenance_work_mem = '%s'" % self.cfg.get("maintenance_work_mem", "4GB"))
            with_ = ", ".join(f"{k} = {v}" for k, v in opts.items())
            # if the extension refuses some filter column (type not supported yet), retry smaller
            attempts = [c for i, c in enumerate([cols, cols[:2], cols[:1]]) if c not in [cols, cols[:2]][:i]]
            for c in attempts:
                ddl = (f"CREATE INDEX {self.index} ON {table} USING gateann "
                       f"({', '.join(c)})" + (f" WITH ({with_})" if with_ else ""))
                log(f"building: {ddl}")
                t0 = time.monotonic()
                try:
                    conn.execute(ddl)
                except Exception as e:  # noqa: BLE001 - record and fall back
                    msg = f"index build failed ({ddl}): {oneline(e)}"
                    self.warnings.append(msg)
                    log(msg)
                    continue
                facts.update(build_seconds=round(time.monotonic() - t0, 2), ddl=ddl, columns=c)
                break
            else:
                raise RuntimeError("could not build a gateann index")
            conn.execute("RESET maintenance_work_mem")
            log(f"built {self.index} in {facts['build_seconds']}s")
        facts["index_bytes"] = conn.execute("SELECT pg_relation_size(%s)", (self.index,)).fetchone()[0]
        facts["table_bytes"] = conn.execute("SELECT pg_relation_size(%s)", (table,)).fetchone()[0]
        for label, q in (("prewarm_bytes", "SELECT gateann_prewarm(%s::regclass)"),
                         ("index_info", "SELECT row_to_json(i) FROM gateann_index_info(%s::regclass) i")):
            try:
                t0 = time.monotonic()
                facts[label] = conn.execute(q, (self.index,)).fetchone()[0]
                if label == "prewarm_bytes":
                    # the cold start: stores loaded from the index's pages
                    facts["prewarm_seconds"] = round(time.monotonic() - t0, 2)
            except Exception as e:  # noqa: BLE001
                self.warnings.append(f"{q.split('(')[0]}: {oneline(e)}")
        self.available_gucs = {r[0] for r in conn.execute(
            "SELECT name FROM pg_settings WHERE name LIKE 'gateann.%'")}
        facts["gucs"] = sorted(self.available_gucs)
        return facts

    def points(self, sweep_cfg: dict | None = None) -> list[dict]:
        """Cartesian product of the sweep. A run that sweeps a GUC the server does
        not have (yet) is skipped with a note (its points would repeat the default
        run); without gateann.search_list_size itself there is one default point."""
        sweep = {}
        for k, vals in (sweep_cfg if sweep_cfg is not None else self.cfg.get("sweep", {})).items():
            if k in self.available_gucs:
                sweep[k] = vals
                continue
            note = f"GUC {k} does not exist (yet): runs sweeping it skipped"
            if note not in self.warnings:
                self.warnings.append(note)
            if k != "gateann.search_list_size":
                return []
        # search list size innermost so curves come out contiguous
        keys = sorted(sweep, key=lambda k: k == "gateann.search_list_size")
        return [dict(zip(keys, combo)) for combo in itertools.product(*(sweep[k] for k in keys))] or [{}]

    def finish(self, conn, facts: dict) -> None:
        """After the measurements: the in-memory stores are loaded now."""
        try:
            facts["index_info_after"] = conn.execute(
                "SELECT row_to_json(i) FROM gateann_index_info(%s::regclass) i", (self.index,)).fetchone()[0]
        except Exception as e:  # noqa: BLE001
            self.warnings.append(f"gateann_index_info: {oneline(e)}")

    def stats(self, conn) -> dict | None:
        if not self.stats_ok:
            return None
        try:
            row = conn.execute("SELECT row_to_json(s) FROM gateann_last_scan() s").fetchone()
            return row[0] if row else None
        except Exception as e:  # noqa: BLE001
            self.stats_ok = False
            self.warnings.append(f"gateann_last_scan(): {oneline(e)}")
            return None


class GateannVectorEngine(GateannEngine):
    """gateann through the gateann_vector extension's opclass on pgvector's
    `vector` column: the same copy of the data the pgvector engine searches
    (`<table>_v`, `embedding_v`), the preset's filter columns after it."""
    name = "gateann_vector"

    def available(self, conn) -> bool:
        return conn.execute("SELECT count(*) FROM pg_available_extensions "
                            "WHERE name IN ('gateann', 'gateann_vector', 'vector')").fetchone()[0] == 3

    def target(self, conn, spec: DatasetSpec) -> tuple[str, list[str]]:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE EXTENSION IF NOT EXISTS gateann_vector")
        except Exception as e:  # noqa: BLE001
            raise RuntimeError(f"CREATE EXTENSION gateann_vector failed: {oneline(e)}") from None
        vt = ensure_vector_tables(conn, spec)
        self.table, self.qtable, self.column = vt["table"], vt["qtable"], "embedding_v"
        drop_other_indexes(conn, self.table, f"{self.table}_gateann")
        cols = self.cfg.get("index_columns", ["embedding"])
        return self.table, ["embedding_v"] + [c for c in cols if c != "embedding"]


def drop_other_indexes(conn, table: str, keep: str) -> None:
    """The gateann_vector and pgvector engines search the same `<table>_v`:
    before one measures, no index on it but its own and the primary key, or
    the planner could answer its queries with the other engine's index."""
    for (name,) in conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = to_regclass(%s) AND NOT i.indisprimary AND c.relname <> %s",
            (table, keep)).fetchall():
        conn.execute(f"DROP INDEX IF EXISTS {name}")


def ensure_vector_tables(conn, spec: DatasetSpec) -> dict:
    """pgvector copies of the dataset: <table>_v (every column of <table> except
    the real[] embedding, plus embedding_v vector(dim) = embedding::vector) and
    <qtable>_v (qid, embedding vector(dim), near10), so the pgbench scripts run unchanged
    with -D column=embedding_v -D qtable=<qtable>_v (vector <-> vector; a real[]
    query vector would resolve to gateann's real[] operator through pgvector's
    implicit vector -> real[] cast). A separate table rather than a new column
    of <table>: an UPDATE there would insert 100K+ entries into the gateann index
    and leave the other engines a wider, bloated table in later runs. Reused
    while its comment matches the source table's (same data)."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    vt, vq = f"{spec.table}_v", f"{spec.qtable}_v"
    src_comment = conn.execute("SELECT obj_description(%s::regclass, 'pg_class')",
                               (spec.table,)).fetchone()[0]
    have = conn.execute("SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
                        (vt, vq)).fetchone()[0]
    if have and conn.execute("SELECT obj_description(%s::regclass, 'pg_class')",
                             (vt,)).fetchone()[0] == src_comment:
        log(f"table {vt} already loaded")
        return {"table": vt, "qtable": vq, "reused": True}
    cols = [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attname <> 'embedding' ORDER BY attnum", (spec.table,))]
    t0 = time.monotonic()
    conn.execute(f"DROP TABLE IF EXISTS {vt}, {vq} CASCADE")
    conn.execute(f"CREATE TABLE {vt} AS SELECT {', '.join(cols)}, "
                 f"embedding::vector({spec.dim}) AS embedding_v FROM {spec.table} ORDER BY id")
    conn.execute(f"ALTER TABLE {vt} ADD PRIMARY KEY (id)")
    conn.execute(f"CREATE TABLE {vq} AS SELECT qid, embedding::vector({spec.dim}) AS embedding, "
                 f"near10 FROM {spec.qtable} ORDER BY qid")
    conn.execute(f"ALTER TABLE {vq} ADD PRIMARY KEY (qid)")
    conn.execute(f"COMMENT ON TABLE {vt} IS {_sqlstr(src_comment or '')}")
    conn.execute(f"VACUUM (ANALYZE) {vt}")
    conn.execute(f"VACUUM (ANALYZE) {vq}")
    secs = round(time.monotonic() - t0, 2)
    log(f"created {vt} / {vq} (vector copies) in {secs}s")
    return {"table": vt, "qtable": vq, "reused": False, "create_seconds": secs}


def _sqlstr(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class PgvectorEngine:
    """pgvector HNSW (iterative scan) on a vector copy of the data: the same rows,
    filters and query vectors; hnsw.ef_search swept (reported in the L column)."""
    name = "pgvector"
    l_key = "hnsw.ef_search"

    def __init__(self, cfg: dict, warnings: list, reuse_index: bool = False):
        self.cfg, self.warnings, self.reuse = cfg, warnings, reuse_index
        self.gucs = {"enable_seqscan": "off", "enable_bitmapscan": "off",
                     **cfg.get("gucs", {"hnsw.iterative_scan": "relaxed_order"})}
        self.column = "embedding_v"
        self.table = self.qtable = self.index = ""

    def available(self, conn) -> bool:
        return bool(conn.execute("SELECT count(*) FROM pg_available_extensions "
                                 "WHERE name = 'vector'").fetchone()[0])

    def prepare(self, conn, spec: DatasetSpec) -> dict:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception as e:  # noqa: BLE001
            raise RuntimeError(f"CREATE EXTENSION vector failed: {oneline(e)}") from None
        vt = ensure_vector_tables(conn, spec)
        self.table, self.qtable = vt["table"], vt["qtable"]
        self.index = f"{self.table}_hnsw"
        drop_other_indexes(conn, self.table, self.index)
        opts = self.cfg.get("index_options", {"m": 16, "ef_construction": 64})
        with_ = ", ".join(f"{k} = {v}" for k, v in opts.items())
        ddl = (f"CREATE INDEX {self.index} ON {self.table} USING hnsw "
               f"({self.column} {self.cfg.get('opclass', 'vector_l2_ops')})"
               + (f" WITH ({with_})" if with_ else ""))
        facts = {"engine": self.name, "dataset": spec.name, "index": self.index, "table": self.table,
                 "vector_tables": vt, "options": opts, "ddl": ddl,
                 "extension": conn.execute("SELECT extversion FROM pg_extension "
                                           "WHERE extname = 'vector'").fetchone()[0]}
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (self.index,)).fetchone()[0]
        if exists and self.reuse and vt["reused"]:
            facts.update(build_seconds=None, reused=True)
        else:
            conn.execute(f"DROP INDEX IF EXISTS {self.index}")
            conn.execute("SET maintenance_work_mem = '%s'" % self.cfg.get("maintenance_work_mem", "4GB"))
            log(f"building: {ddl}")
            t0 = time.monotonic()
            conn.execute(ddl)
            facts["build_seconds"] = round(time.monotonic() - t0, 2)
            conn.execute("RESET maintenance_work_mem")
            log(f"built {self.index} in {facts['build_seconds']}s")
        facts["index_bytes"] = conn.execute("SELECT pg_relation_size(%s)", (self.index,)).fetchone()[0]
        facts["table_bytes"] = conn.execute("SELECT pg_relation_size(%s)", (self.table,)).fetchone()[0]
        try:  # load the graph into shared buffers, as gateann_prewarm does for gateann
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            facts["prewarm_blocks"] = conn.execute("SELECT pg_prewarm(%s::regclass)",
                                                   (self.index,)).fetchone()[0]
        except Exception as e:  # noqa: BLE001
            self.warnings.append(f"pg_prewarm of {self.index}: {oneline(e)} (its pages enter "
                                 "shared buffers through the warm-up queries instead)")
        facts["gucs"] = sorted(r[0] for r in conn.execute(
            "SELECT name FROM pg_settings WHERE name LIKE 'hnsw.%'"))
        return facts

    def points(self, sweep_cfg: dict | None = None) -> list[dict]:
        sweep = sweep_cfg if sweep_cfg is not None else self.cfg.get("sweep", {})
        keys = sorted(sweep, key=lambda k: k == self.l_key)
        return [dict(zip(keys, combo)) for combo in itertools.product(*(sweep[k] for k in keys))] or [{}]

    def stats(self, conn) -> dict | None:
        return None

    def finish(self, conn, facts: dict) -> None:
        facts["index_bytes_after"] = conn.execute("SELECT pg_relation_size(%s)",
                                                  (self.index,)).fetchone()[0]


ENGINES = {"exact": ExactEngine, "gateann": GateannEngine,
           "gateann_vector": GateannVectorEngine, "pgvector": PgvectorEngine}
L_KEYS = ("gateann.search_list_size", "hnsw.ef_search")


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


# ---------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------
def write_csv(path: Path, rows: list[dict]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys and k != "plan"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def series_label(r: dict, clients: int | None = None) -> str:
    s = json.loads(r["settings"])
    for lk in L_KEYS:
        s.pop(lk, None)
    extra = ",".join(f"{k.split('.')[-1]}={v}" for k, v in s.items())
    lab = r["engine"] + (f" {extra}" if extra else "")
    return lab + (f" ({clients} client{'s' * (clients > 1)})" if clients else "")


def plot(results: dict, out: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    rows = results["points"]
    rk = f"recall@{K}"
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        drows = [r for r in rows if r["dataset"] == ds]
        wls = list(dict.fromkeys(r["workload"] for r in drows))
        clients = sorted({int(k[5:]) for r in drows for k in r if k.startswith("qps_c")})
        # recall vs QPS, one panel per workload
        ncol = min(3, len(wls))
        nrow = (len(wls) + ncol - 1) // ncol
        fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 4 * nrow), squeeze=False)
        for ax, wl in zip(axes.flat, wls):
            wrows = [r for r in drows if r["workload"] == wl]
            for c in clients:
                groups: dict[str, list] = {}
                for r in wrows:
                    if r.get(f"qps_c{c}") and r.get(rk) is not None:
                        groups.setdefault(series_label(r, c), []).append(r)
                for lab, g in groups.items():
                    g.sort(key=lambda r: r["L"] or 0)
                    exact = g[0]["engine"] == "exact"
                    ax.plot([r[rk] for r in g], [r[f"qps_c{c}"] for r in g], marker="s" if exact else "o",
                            label=lab, markersize=4,
                            linestyle="none" if exact else ("--" if c > 1 else "-"))
            sel = wrows[0]["selectivity"]
            ax.set_title(f"{wl} (s={sel:.1%})")
            ax.set_xlabel(rk)
            ax.set_ylabel("QPS (pgbench)")
            ax.set_yscale("log")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(wls):]:
            ax.axis("off")
        fig.suptitle(f"{ds}: recall vs QPS")
        fig.tight_layout()
        f = f"recall_qps_{ds}.png"
        fig.savefig(out / f, dpi=110)
        plt.close(fig)
        files.append(f)
        # counters vs L (gateann)
        grows = [r for r in drows if r["engine"] == "gateann" and r.get("L") is not None]
        metrics = [m for m in ("reads_per_q", "buffer_hits_per_q", "tunneled_per_q", "visited_per_q")
                   if any(r.get(m) is not None for r in grows)]
        if grows:
            panels = metrics + ["lat_mean_ms"]
            ncol = min(3, len(panels))
            nrow = (len(panels) + ncol - 1) // ncol
            fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 4 * nrow), squeeze=False)
            for ax in list(axes.flat)[len(panels):]:
                ax.axis("off")
            for ax, m in zip(axes.flat, panels):
                groups = {}
                for r in grows:
                    groups.setdefault(f"{r['workload']} {series_label(r)}", []).append(r)
                for lab, g in groups.items():
                    g.sort(key=lambda r: r["L"])
                    ax.plot([r["L"] for r in g], [r.get(m) for r in g], "o-", label=lab, markersize=3)
                ax.set_xlabel("gateann.search_list_size (L)")
                ax.set_ylabel(m.replace("_per_q", " per query").replace("lat_mean_ms", "mean latency (ms)"))
                ax.grid(True, alpha=0.3)
                ax.legend(fontsize=7)
            fig.suptitle(f"{ds}: per-query cost vs L")
            fig.tight_layout()
            f = f"cost_vs_L_{ds}.png"
            fig.savefig(out / f, dpi=110)
            plt.close(fig)
            files.append(f)
    return files


def fmt(v, spec: str = "") -> str:
    if v is None or v == "":
        return "–"
    if isinstance(v, float) and spec:
        return format(v, spec)
    return str(v)


def _reads_from(results: dict) -> dict[str, set]:
    out: dict[str, set] = {}
    for r in results["points"]:
        if r.get("reads_from"):
            out.setdefault(r["engine"], set()).add(r["reads_from"])
    return out


def summary_md(results: dict, plots: list[str]) -> str:
    m, pg, g = results["machine"], results["postgres"], results["git"]
    L = [f"# gateann benchmark — preset `{results['preset']}`", "",
         f"- command: `{results['command']}`",
         f"- started {results['started']}, took {results.get('seconds', 0) / 60:.1f} min",
         f"- git commit: `{g['commit']}`" + (" (uncommitted changes)" if g["dirty"] else ""),
         f"- machine: {m.get('cores')} cores ({m.get('cpu_model', '?')}; {m.get('cpu_simd', '')}), "
         f"{m.get('ram_gib')} GiB RAM, disk {m.get('disk_device', '?')} ({m.get('disk_fstype', '')}"
         f"{', rotational' if m.get('disk_rotational') else ', non-rotational' if 'disk_rotational' in m else ''}), "
         f"{m.get('disk_free_gib')} of {m.get('disk_total_gib')} GiB free; "
         f"load average at start {' '.join(m.get('loadavg_at_start', []))}",
         f"- PostgreSQL: {pg['version']}",
         "- server settings: " + ", ".join(f"{k}={v}" for k, v in pg["settings"].items()),
         f"- gateann extension: {results['extension']}",
         f"- k = {K}; latency: one client (psycopg, prepared), QPS: pgbench -M simple "
         f"(clients {results['config']['clients']}); index scans forced for gateann "
         f"(enable_seqscan=off), exact = seq scan + sort with the same SQL"
         + ("; pgvector = HNSW on a vector copy of the table (`<table>_v`, same rows and "
            "query vectors), index forced likewise, `hnsw.ef_search` in the L column, "
            "`hnsw.iterative_scan = relaxed_order`"
            if any(i["engine"] == "pgvector" for i in results["indexes"]) else ""),
         "- cache state: warm. gateann's in-memory stores are loaded once per index "
         "(`gateann_prewarm`, its time is the cold start in the index table) and each point "
         "runs 10 warm-up queries first; where each point's index reads came from is in "
         "points.csv `reads_from`: "
         + (", ".join(f"{e}: {', '.join(sorted(v))}" for e, v in _reads_from(results).items())
            or "no points"),
         ""]
    if results["warnings"]:
        L += ["**Notes/warnings:**", ""] + [f"- {w}" for w in results["warnings"]] + [""]
    L += ["## Datasets", "", "| dataset | rows | dims | generate s | load (COPY) s | table MiB |",
          "|---|---|---|---|---|---|"]
    for d in results["datasets"]:
        ld = d["load"]
        L.append(f"| {d['name']} | {d['n']} | {d['dim']} | {fmt(d.get('generate_seconds'))} | "
                 f"{'reused' if ld.get('reused') else fmt(ld.get('copy_seconds'))} | "
                 f"{fmt(ld.get('table_bytes') and round(ld['table_bytes'] / 2**20))} |")
    idx = [i for i in results["indexes"] if i["engine"].startswith("gateann")]
    if idx:
        L += ["", "## Indexes", "", "Store sizes from `gateann_index_info` after the measurements.", "",
              "| dataset | build s | index MiB | cold start (store load) s | PQ bytes "
              "| neighbor store bytes | filter store bytes | loaded/shared | DDL |",
              "|---|---|---|---|---|---|---|---|---|"]
        for i in idx:
            info = i.get("index_info_after") or i.get("index_info") or {}
            L.append(f"| {i['dataset']} | {fmt(i.get('build_seconds'))} | "
                     f"{round(i['index_bytes'] / 2**20, 1)} | {fmt(i.get('prewarm_seconds'))} | "
                     f"{fmt(info.get('pq_bytes'))} | "
                     f"{fmt(info.get('neighbor_store_bytes'))} | {fmt(info.get('filter_store_bytes'))} | "
                     f"{fmt(info.get('loaded'))}/{fmt(info.get('shared'))} | `{i.get('ddl', '')}` |")
    pidx = [i for i in results["indexes"] if i["engine"] == "pgvector"]
    if pidx:
        L += ["", "## pgvector indexes", "",
              "| dataset | pgvector | build s | index MiB | table MiB | DDL |", "|---|---|---|---|---|---|"]
        for i in pidx:
            L.append(f"| {i['dataset']} | {i.get('extension')} | {fmt(i.get('build_seconds'))} | "
                     f"{round(i['index_bytes'] / 2**20, 1)} | {round(i['table_bytes'] / 2**20, 1)} | "
                     f"`{i.get('ddl', '')}` |")
    if pidx and idx:
        L += ["", "## Memory footprint", "",
              "gateann keeps PQ codes, the neighbor store and the filter store in memory "
              "(`gateann_index_info` after the measurements; the full-precision vectors are "
              "read from the index on SSD); pgvector's HNSW graph is read through shared "
              "buffers, so its working set is the whole index (`pg_relation_size`).", "",
              "| dataset | engine | index MiB (on disk) | in-memory MiB | detail |",
              "|---|---|---|---|---|"]
        for i in idx + pidx:
            if i["engine"].startswith("gateann"):
                info = i.get("index_info_after") or i.get("index_info") or {}
                parts = [info.get(k) for k in ("pq_bytes", "neighbor_store_bytes", "filter_store_bytes")]
                mem = sum(p for p in parts if isinstance(p, (int, float)))
                detail = (f"PQ {fmt(parts[0])} + neighbors {fmt(parts[1])} + filters {fmt(parts[2])} B")
            else:
                mem = i.get("index_bytes_after") or i["index_bytes"]
                detail = "whole HNSW index in shared buffers"
            L.append(f"| {i['dataset']} | {i['engine']} | {round(i['index_bytes'] / 2**20, 1)} | "
                     f"{round(mem / 2**20, 1)} | {detail} |")
    clients = results["config"]["clients"]
    rk = f"recall@{K}"
    for ds in dict.fromkeys(r["dataset"] for r in results["points"]):
        L += ["", f"## {ds}", ""]
        for wl in dict.fromkeys(r["workload"] for r in results["points"] if r["dataset"] == ds):
            rows = [r for r in results["points"] if r["dataset"] == ds and r["workload"] == wl]
            L += [f"### {wl} (selectivity {rows[0]['selectivity']:.2%})", "",
                  "| engine | settings | L | " + rk + " | mean ms | p99 ms | "
                  + " | ".join(f"QPS {c}c" for c in clients)
                  + " | reads/q | tunneled/q | visited/q |",
                  "|---|---|---|---|---|---|" + "---|" * len(clients) + "---|---|---|"]
            for r in rows:
                s = json.loads(r["settings"])
                for lk in L_KEYS:
                    s.pop(lk, None)
                L.append(f"| {r['engine']} | {','.join(f'{k}={v}' for k, v in s.items()) or '–'} | "
                         f"{fmt(r.get('L'))} | {fmt(r.get(rk), '.3f')} | {fmt(r['lat_mean_ms'], '.2f')} | "
                         f"{fmt(r['lat_p99_ms'], '.2f')} | "
                         + " | ".join(fmt(r.get(f"qps_c{c}"), '.1f') for c in clients)
                         + f" | {fmt(r.get('reads_per_q'), '.1f')} | {fmt(r.get('tunneled_per_q'), '.1f')}"
                         f" | {fmt(r.get('visited_per_q'), '.1f')} |")
            unused = [r for r in rows if r.get("plan_uses_index") is False]
            if unused:
                L.append(f"\n*{len(unused)} point(s) did not use the engine's index in EXPLAIN.*")
            L.append("")
    if plots:
        L += ["## Plots", ""] + [f"![{p}]({p})" for p in plots]
    ex = next((r.get("pgbench_cmd") for r in results["points"][::-1] if r.get("pgbench_cmd")
               and r["engine"] == "gateann"), None) or next(
        (r.get("pgbench_cmd") for r in results["points"] if r.get("pgbench_cmd")), None)
    if ex:
        L += ["", "Example pgbench command of this run:", "", "```", ex, "```"]
    return "\n".join(L) + "\n"


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
