"""Engines driver.py measures: exact (sequential scan), gateann, gateann_vector and
pgvector; each prepares its index, lists the points of its sweep and names its SQL."""

from __future__ import annotations

import itertools
import time

from .common import log
from .gen import DatasetSpec


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
