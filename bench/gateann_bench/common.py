"""Small helpers shared by gen.py, groundtruth.py and driver.py."""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent  # bench/, above the package
REPO_DIR = BENCH_DIR.parent
DATA_DIR = Path(os.environ.get("BENCH_DATA_DIR", BENCH_DIR / "data"))

_T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def connect(autocommit: bool = True, **kw):
    """Connect with libpq defaults (PGHOST, PGPORT, PGDATABASE, PGUSER ...).

    No automatic server-side prepared statements: a plan cached while
    enable_indexscan = off (the exact baseline) would be reused, unplanned,
    after the setting changes, and silently measure a sequential scan."""
    import psycopg
    kw.setdefault("prepare_threshold", None)
    return psycopg.connect(autocommit=autocommit, **kw)


def sh(cmd: list[str] | str, **kw) -> str:
    """Run a command, return stdout ('' if it fails)."""
    try:
        return subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True,
                              text=True, timeout=30, **kw).stdout.strip()
    except Exception:
        return ""


def machine_facts(data_path: str | None = None) -> dict:
    """CPU, memory and disk of this machine (for every published figure)."""
    facts: dict = {"hostname": platform.node(), "kernel": platform.release(),
                   "cores": os.cpu_count()}
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        models = [l.split(":", 1)[1].strip() for l in cpuinfo.splitlines()
                  if l.startswith("model name")]
        facts["cpu_model"] = models[0] if models else platform.processor()
        flags = next((l for l in cpuinfo.splitlines() if l.startswith("flags")), "")
        facts["cpu_simd"] = " ".join(f for f in ("sse4_2", "avx", "avx2", "avx512f", "fma")
                                     if f" {f}" in flags)
    except OSError:
        pass
    try:
        mem = Path("/proc/meminfo").read_text().split("\n")[0]
        facts["ram_gib"] = round(int(mem.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    path = data_path or str(BENCH_DIR)
    du = shutil.disk_usage(path)
    facts["disk_path"] = path
    facts["disk_total_gib"] = round(du.total / 2**30, 1)
    facts["disk_free_gib"] = round(du.free / 2**30, 1)
    src = sh(["df", "--output=source,fstype", path]).splitlines()
    if len(src) > 1:
        facts["disk_device"], facts["disk_fstype"] = (src[1].split() + [""])[:2]
        dev = os.path.basename(facts["disk_device"])
        rot = Path(f"/sys/block/{dev}/queue/rotational")
        if rot.exists():
            facts["disk_rotational"] = rot.read_text().strip() == "1"
    facts["free_h"] = sh(["free", "-h"])
    try:   # other load on the machine makes timings noisy: record it
        facts["loadavg_at_start"] = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        pass
    return facts


def git_facts() -> dict:
    head = sh(["git", "-C", str(REPO_DIR), "rev-parse", "--verify", "-q", "HEAD"])
    dirty = sh(["git", "-C", str(REPO_DIR), "status", "--porcelain", "--untracked-files=no"])
    return {"commit": head or "(no commit yet)", "dirty": bool(dirty)}


def run_facts(conn, kind: str, command: str) -> dict:
    """The head of a run's results: what ran, when, on which code, machine and server."""
    return {"kind": kind, "command": command,
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "git": git_facts(), "machine": machine_facts(),
            "server": conn.execute("SELECT version()").fetchone()[0],
            "server_version": conn.execute("SHOW server_version").fetchone()[0]}


def write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=str))
    tmp.replace(path)


def index_facts(conn, name: str) -> dict:
    """Node counts and file size of gateann index `name`."""
    row = conn.execute(
        "SELECT nodes, live_nodes, deleted_nodes, free_slots, pg_relation_size(%s::regclass) "
        "FROM gateann_index_info(%s::regclass)", (name, name)).fetchone()
    return {"nodes": row[0], "live_nodes": row[1], "deleted_nodes": row[2],
            "free_slots": row[3], "index_bytes": row[4]}


def base_table(conn, source: str, table: str, base: int, maintenance_work_mem: str) -> float:
    """table := the rows of source with id < base (id, label10, embedding), with a
    primary key, analyzed; then CREATE INDEX <table>_idx USING gateann (embedding,
    label10).  Returns the seconds the index build took."""
    log(f"table {table}: first {base} rows of {source}")
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} AS SELECT id, label10, embedding FROM {source} "
                 "WHERE id < %s", (base,))
    conn.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")
    conn.execute(f"VACUUM ANALYZE {table}")
    conn.execute(f"SET maintenance_work_mem = '{maintenance_work_mem}'")
    t0 = time.monotonic()
    conn.execute(f"CREATE INDEX {table}_idx ON {table} USING gateann (embedding, label10)")
    return round(time.monotonic() - t0, 1)
