#!/usr/bin/env python3
"""A table larger than maintenance_work_mem: does CREATE INDEX succeed, how
long does it take, how much memory does it use, and how good is the index
compared with the in-memory build of the same rows?

  bench/run.sh build_memory [--n 2000000] [--shape current_128] [--queries 200]
                            [--in-memory-mwm 4GB] [--partition-mwm 256MB] [--L 20,40,100]

One data set of the data-shape matrix (bench/gateann_bench/shapes.py; current_128 is
bench/gateann_bench/gen.py's generator: Gaussian clusters in 16-dimensional subspaces of 128
dimensions, generated in chunks, memory-mapped), loaded with binary COPY into
one table bm (id int, cat int = id % 10, v real[]); the query vectors come
from the same distribution and are not rows.  Exact top-10 ground truth with
numpy (float32 matrix products per row chunk, candidates re-ranked in
float64), unfiltered and with cat = 3.

Then CREATE INDEX bm_idx ON bm USING gateann (v, cat) twice, dropping the
index in between:
  in memory      maintenance_work_mem = --in-memory-mwm; fails if gateann says
                 it builds in partitions
  in partitions  maintenance_work_mem = --partition-mwm; fails unless gateann
                 says it builds in partitions (its NOTICE)
each on a new connection with client_min_messages = debug1 for the CREATE
INDEX alone: wall-clock seconds, pg_relation_size, the NOTICE's row count, the
DEBUG1 line "gateann build in partitions: K partitions, peak memory P kB of
maintenance_work_mem M kB" (the build's memory context peak, sampled per
partition) and the phase times ("gateann build phase X took Y s"); the
backend's VmHWM and VmRSS from /proc/<pid>/status right after the build (VmHWM
includes the shared memory, e.g. shared buffers, the backend touched), and its
private memory (RssAnon, with any parallel workers') sampled every 50 ms
during the build.

After each build (gateann_prewarm first, 10 untimed queries): recall@10 and
mean latency (one client, the statement alone timed) at the default
gateann.search_list_size and at each --L, unfiltered and WHERE cat = 3.
recall@10 as bench/gateann_bench/shapes.py counts it: a returned row is a hit when its
distance is no larger than the 10th true neighbour's (ties are hits); per
query min(hits, 10) / min(10, matching rows); `zero` counts the queries with
recall 0.

Writes results.json ("kind": "build_memory") and summary.md into --out, and
prints the tables.  Exit 1 when a build fails or does not take the mode asked.
"""
from __future__ import annotations

import argparse
import re
import struct
import sys
import threading
import time
from pathlib import Path

import numpy as np

from . import shapes
from .common import connect, log, run_facts, write_json

K = 10
EXTRA = 22             # candidates kept per query beyond K before the float64 re-rank
ROW_CHUNK = 131072
FILTER_CAT = 3
TABLE = "bm"
INDEX = "bm_idx"
MODES = (("in_memory", "in memory"), ("partitions", "in partitions"))

# the build's progress sub-phases (src/gateann.h, gateann_buildphasename)
PHASES = {2: "scanning table", 3: "training PQ codebook", 8: "ordering nodes by cluster",
          4: "encoding PQ codes", 5: "building graph", 6: "building graph (second pass)",
          11: "building graph (third pass)", 9: "assigning vectors to partitions",
          10: "building graph partitions", 7: "writing index pages"}
RE_NOTICE = re.compile(r'gateann index "[^"]*" does not fit in maintenance_work_mem after '
                       r'(\d+) rows: building it in partitions')
RE_PEAK = re.compile(r"gateann build in partitions: (\d+) partitions, peak memory (\d+) kB "
                     r"of maintenance_work_mem (\d+) kB")
RE_PARTS = re.compile(r"gateann build: (\d+) vectors in (\d+) partitions of at most (\d+), "
                      r"([\d.]+) partitions per vector")
RE_PHASE = re.compile(r"gateann build phase (\d+) took ([\d.]+) s")


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------
def dataset(shape_name: str, n: int, nq: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, queries), float32; rows memory-mapped for current_128."""
    shape = shapes.SHAPES[shape_name]
    if shape.kind == "current":
        # what shapes.generate does for it, without its in-memory copy
        from .gen import Dataset, DatasetSpec
        ds = Dataset(DatasetSpec(n=n, dim=shape.dim, nq=max(nq, 1000)))
        return ds.vectors, np.asarray(ds.queries[:nq], np.float32)
    data = shapes.generate(shape, n, nq)
    return data["vectors"], data["queries"]


def copy_rows(x: np.ndarray):
    """COPY BINARY payload of (id int4, cat int4, v real[]): id 1..n, cat id % 10."""
    n, d = x.shape
    dt = np.dtype([("nf", ">i2"), ("idl", ">i4"), ("id", ">i4"), ("catl", ">i4"), ("cat", ">i4"),
                   ("el", ">i4"), ("nd", ">i4"), ("hn", ">i4"), ("oid", ">i4"),
                   ("dim", ">i4"), ("lb", ">i4"), ("v", [("l", ">i4"), ("f", ">f4")], (d,))])
    yield b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
    for s in range(0, n, 20000):
        e = min(n, s + 20000)
        r = np.zeros(e - s, dt)
        ids = np.arange(s + 1, e + 1)
        r["nf"], r["idl"], r["id"], r["catl"], r["cat"] = 3, 4, ids, 4, ids % 10
        r["el"], r["nd"], r["oid"], r["dim"], r["lb"] = 20 + 8 * d, 1, 700, d, 1
        r["v"]["l"], r["v"]["f"] = 4, x[s:e]
        yield r.tobytes()
    yield struct.pack(">h", -1)


def load(conn, x: np.ndarray) -> dict:
    t0 = time.monotonic()
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    with conn.transaction():
        conn.execute(f"CREATE TABLE {TABLE} (id int, cat int, v real[])")
        with conn.cursor() as cur, cur.copy(f"COPY {TABLE} FROM STDIN (FORMAT binary, FREEZE)") as cp:
            for chunk in copy_rows(x):
                cp.write(chunk)
    t1 = time.monotonic()
    conn.execute(f"VACUUM ANALYZE {TABLE}")
    size = conn.execute(f"SELECT pg_table_size('{TABLE}')").fetchone()[0]
    log(f"loaded {len(x)} rows: COPY {t1 - t0:.1f} s, VACUUM ANALYZE {time.monotonic() - t1:.1f} s, "
        f"{size / 2**20:.0f} MiB")
    return {"copy_s": round(t1 - t0, 1), "vacuum_analyze_s": round(time.monotonic() - t1, 1),
            "table_bytes": size}


# --------------------------------------------------------------------------
# ground truth and recall
# --------------------------------------------------------------------------
def ground_truth(x: np.ndarray, q: np.ndarray) -> dict:
    """Per filter ("none", "cat3"): true top-K ids (1-based), the K-th
    neighbour's distance and the matching row count, per query."""
    n, nq, kk = len(x), len(q), K + EXTRA
    Q = np.ascontiguousarray(q, np.float32)
    qq = (Q.astype(np.float64) ** 2).sum(1).astype(np.float32)
    best = {f: (np.full((nq, kk), np.inf, np.float32), np.full((nq, kk), -1, np.int64))
            for f in ("none", "cat3")}
    for s in range(0, n, ROW_CHUNK):
        e = min(n, s + ROW_CHUNK)
        X = np.asarray(x[s:e], np.float32)
        d = (X * X).sum(1)[None, :] - 2.0 * (Q @ X.T) + qq[:, None]
        rows = np.arange(s, e)
        for f, cols in (("none", None), ("cat3", np.nonzero((rows + 1) % 10 == FILTER_CAT)[0])):
            dd = d if cols is None else d[:, cols]
            idx = rows if cols is None else rows[cols]
            if dd.shape[1] == 0:
                continue
            take = min(kk, dd.shape[1])
            part = np.argpartition(dd, take - 1, axis=1)[:, :take]
            bd, bi = best[f]
            cd = np.concatenate([bd, np.take_along_axis(dd, part, 1)], 1)
            ci = np.concatenate([bi, idx[part]], 1)
            keep = np.argpartition(cd, kk - 1, axis=1)[:, :kk]
            best[f] = (np.take_along_axis(cd, keep, 1), np.take_along_axis(ci, keep, 1))
    out = {}
    for f, (bd, bi) in best.items():
        ids = np.full((nq, K), -1, np.int64)
        kth = np.full(nq, np.inf)
        for i in range(nq):
            cand = np.sort(bi[i][np.isfinite(bd[i])])
            if len(cand) == 0:
                continue
            diff = np.asarray(x[cand], np.float64) - Q[i].astype(np.float64)
            ex = np.sqrt((diff * diff).sum(1))
            o = np.argsort(ex, kind="stable")[:K]
            ids[i, :len(o)] = cand[o] + 1
            kth[i] = ex[o[-1]]
        matching = n if f == "none" else len(range(FILTER_CAT, n + 1, 10))
        out[f] = {"ids": ids, "kth": kth, "nmatch": np.full(nq, matching, np.int64)}
    return out


# --------------------------------------------------------------------------
# the builds
# --------------------------------------------------------------------------
def proc_status(pid: int) -> dict:
    """VmHWM, VmRSS, RssAnon, RssShmem of a process in kB ({} if unreadable)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
                out[k] = int(v.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


class Sampler(threading.Thread):
    """Private memory (RssAnon) of the building backend and of its parallel
    workers (pg_stat_activity.leader_pid), every 50 ms, until stopped."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop = pid, threading.Event()
        self.peak_leader_kb = self.peak_total_kb = 0
        self.max_workers = 0
        self.samples = 0

    def run(self):
        workers: list[int] = []
        last_lookup = 0.0
        try:
            mon = connect()
        except Exception:
            mon = None
        while not self.stop.is_set():
            if mon is not None and time.monotonic() - last_lookup > 0.25:
                try:
                    workers = [r[0] for r in mon.execute(
                        "SELECT pid FROM pg_stat_activity WHERE leader_pid = %s "
                        "AND pid <> leader_pid", (self.pid,))]
                except Exception:
                    workers = []
                last_lookup = time.monotonic()
                self.max_workers = max(self.max_workers, len(workers))
            leader = proc_status(self.pid).get("RssAnon", 0)
            total = leader + sum(proc_status(w).get("RssAnon", 0) for w in workers)
            self.peak_leader_kb = max(self.peak_leader_kb, leader)
            self.peak_total_kb = max(self.peak_total_kb, total)
            self.samples += 1
            self.stop.wait(0.05)
        if mon is not None:
            mon.close()


def build(mode: str, mwm: str) -> dict:
    """CREATE INDEX on a new connection at maintenance_work_mem = mwm."""
    conn = connect()
    notices: list[tuple[str, str]] = []
    conn.add_notice_handler(lambda d: notices.append((d.severity or "", d.message_primary or "")))
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    before = proc_status(pid)
    conn.execute(f"SET maintenance_work_mem = '{mwm}'")
    mwm_kb = int(conn.execute("SELECT setting FROM pg_settings WHERE name = 'maintenance_work_mem'"
                              ).fetchone()[0])
    conn.execute("SET client_min_messages = debug1")
    sampler = Sampler(pid)
    sampler.start()
    error = None
    t0 = time.monotonic()
    try:
        conn.execute(f"CREATE INDEX {INDEX} ON {TABLE} USING gateann (v, cat)")
    except Exception as e:     # recorded, then the run fails
        error = f"{type(e).__name__}: {str(e).strip()}"
    seconds = time.monotonic() - t0
    sampler.stop.set()
    sampler.join()
    after = proc_status(pid)
    conn.execute("RESET client_min_messages")
    res = {"mode": mode, "maintenance_work_mem": mwm, "maintenance_work_mem_kb": mwm_kb,
           "build_s": round(seconds, 2), "backend_pid": pid,
           "proc_before_kb": before, "proc_after_kb": after,
           "vm_hwm_kb": after.get("VmHWM"), "vm_rss_kb": after.get("VmRSS"),
           "rss_anon_peak_kb": sampler.peak_leader_kb or None,
           "rss_anon_peak_with_workers_kb": sampler.peak_total_kb or None,
           "parallel_workers_seen": sampler.max_workers, "rss_samples": sampler.samples,
           "messages": [f"{sev}: {msg}" for sev, msg in notices if "gateann" in msg],
           "other_messages": sum(1 for _, msg in notices if "gateann" not in msg)}
    if error:
        res["error"] = error
    phases: dict[str, float] = {}
    for sev, msg in notices:
        if m := RE_NOTICE.search(msg):
            res["partition_notice_rows"] = int(m.group(1))
        if m := RE_PEAK.search(msg):
            res["partitions"] = int(m.group(1))
            res["peak_memory_kb"] = int(m.group(2))
            res["peak_line_mwm_kb"] = int(m.group(3))
        if m := RE_PARTS.search(msg):
            res["partition_layout"] = {"vectors": int(m.group(1)), "partitions": int(m.group(2)),
                                       "at_most": int(m.group(3)),
                                       "partitions_per_vector": float(m.group(4))}
        if m := RE_PHASE.search(msg):
            name = PHASES.get(int(m.group(1)), f"phase {m.group(1)}")
            phases[name] = round(phases.get(name, 0.0) + float(m.group(2)), 3)
    res["phases_s"] = phases
    res["partitioned"] = "partition_notice_rows" in res
    if error is None:
        res["index_bytes"] = conn.execute(f"SELECT pg_relation_size('{INDEX}')").fetchone()[0]
        cur = conn.execute(f"SELECT * FROM gateann_index_info('{INDEX}')")
        res["index_info"] = dict(zip([d.name for d in cur.description], cur.fetchone()))
    conn.close()
    return res


# --------------------------------------------------------------------------
# the queries
# --------------------------------------------------------------------------
def measure(x: np.ndarray, q: np.ndarray, gts: dict, Ls: list, mode: str) -> tuple[list, dict]:
    conn = connect()
    t0 = time.monotonic()
    conn.execute(f"SELECT gateann_prewarm('{INDEX}')")
    facts = {"prewarm_s": round(time.monotonic() - t0, 2)}
    cat_mask = (np.arange(1, len(x) + 1) % 10) == FILTER_CAT
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    lits = [shapes._lit(v, "gateann") for v in q]
    sqls = {"none": [f"SELECT id FROM {TABLE} ORDER BY v <-> {v} LIMIT {K}" for v in lits],
            "cat3": [f"SELECT id FROM {TABLE} WHERE cat = {FILTER_CAT} ORDER BY v <-> {v} "
                     f"LIMIT {K}" for v in lits]}
    facts["plan_uses_index"] = {}
    for wl, st in sqls.items():
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + st[0]))
        facts["plan_uses_index"][wl] = INDEX in plan
        if INDEX not in plan:
            log(f"WARNING: {wl} does not use {INDEX}:\n{plan}")
    for sql in sqls["none"][:10]:
        conn.execute(sql).fetchall()
    points = []
    for L in ["default"] + Ls:
        if L == "default":
            conn.execute("RESET gateann.search_list_size")
        else:
            conn.execute(f"SET gateann.search_list_size = {int(L)}")
        actual = int(conn.execute("SHOW gateann.search_list_size").fetchone()[0])
        for wl, st in sqls.items():
            found, times = [], []
            for sql in st:
                t1 = time.monotonic()
                rows = conn.execute(sql).fetchall()
                times.append(time.monotonic() - t1)
                found.append([r[0] for r in rows])
            # the filter's mask: one array of n rows, the same for every query
            mask = [cat_mask] * len(q) if wl != "none" else None
            rec = shapes.recall_of(found, x, q, gts[wl], mask)
            ok = ~np.isnan(rec)
            pt = {"mode": mode, "L": L, "search_list_size": actual, "workload": wl,
                  "recall": round(float(rec[ok].mean()), 4),
                  "zero": int((rec[ok] == 0).sum()), "queries": int(ok.sum()),
                  "ms": round(float(np.mean(times)) * 1000, 3),
                  "p99_ms": round(float(np.percentile(times, 99)) * 1000, 3)}
            points.append(pt)
            log(f"  {mode:10} L={str(L):7} {wl:4}: recall {pt['recall']:.4f} zero {pt['zero']} "
                f"{pt['ms']:.2f} ms")
    conn.close()
    return points, facts


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------
def _kb_mib(kb):
    if kb is None:
        return "–"
    return f"{kb / 1024:,.0f}" if kb >= 100 * 1024 else f"{kb / 1024:.1f}"


def _bytes_mib(b):
    return "–" if b is None else f"{b / 2**20:,.1f}"


def tables(r: dict) -> str:
    s = r["settings"]
    builds = {b["mode"]: b for b in r["builds"]}
    lines = [f"# Build over maintenance_work_mem: {s['shape']}, {s['n']:,} × {s['dim']} — "
             f"`{r['command']}`", "",
             f"commit {r['git']['commit']}{' (dirty)' if r['git']['dirty'] else ''}, "
             f"server {r['server_version']}, {r['machine'].get('cores')} cores; "
             f"{s['queries']} queries (not rows), filter cat = {FILTER_CAT} (10 % of the rows), "
             f"shared_buffers {s['shared_buffers']}, max_parallel_maintenance_workers "
             f"{s['max_parallel_maintenance_workers']}.", "",
             "| mode | maintenance_work_mem | build s | partitions | peak memory MiB (DEBUG1, "
             "of maintenance_work_mem) | backend VmHWM / VmRSS MiB | backend private peak MiB "
             "(+ workers) | index MiB | NOTICE after rows |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key, label in MODES:
        b = builds.get(key)
        if b is None:
            continue
        peak = ("–" if b.get("peak_memory_kb") is None else
                f"{_kb_mib(b['peak_memory_kb'])} of {_kb_mib(b['peak_line_mwm_kb'])}")
        lines.append(
            f"| {label} | {b['maintenance_work_mem']} | {b['build_s']:.1f} | "
            f"{b.get('partitions', '–')} | {peak} | {_kb_mib(b.get('vm_hwm_kb'))} / "
            f"{_kb_mib(b.get('vm_rss_kb'))} | {_kb_mib(b.get('rss_anon_peak_kb'))} "
            f"({_kb_mib(b.get('rss_anon_peak_with_workers_kb'))}) | "
            f"{_bytes_mib(b.get('index_bytes'))} | "
            f"{b.get('partition_notice_rows', '–')} |")
    lines += ["", "VmHWM (the backend's peak resident set) includes the shared memory it touched "
              "(shared buffers read by the heap scan); private peak: RssAnon sampled every 50 ms "
              "(in brackets with the parallel workers'). Phase seconds:", ""]
    names = list(dict.fromkeys(n for b in r["builds"] for n in b.get("phases_s", {})))
    lines += ["| mode | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for key, label in MODES:
        if key in builds:
            ph = builds[key].get("phases_s", {})
            lines.append(f"| {label} | " + " | ".join(f"{ph[n]:.2f}" if n in ph else "–"
                                                       for n in names) + " |")
    lines += ["", "recall@10 (queries at recall 0) and mean ms per query, one client:", "",
              "| L | filter | in memory | in partitions | difference (partitions − in memory) "
              "| ms in memory / in partitions |", "|---|---|---|---|---|---|"]
    pts = {(p["mode"], str(p["L"]), p["workload"]): p for p in r["points"]}
    for L in ["default"] + [str(x) for x in s["L"]]:
        for wl, wlabel in (("none", "none"), ("cat3", f"cat = {FILTER_CAT}")):
            a, b = pts.get(("in_memory", L, wl)), pts.get(("partitions", L, wl))
            if not a and not b:
                continue
            lab = f"default ({(a or b)['search_list_size']})" if L == "default" else L

            def cell(p):
                return "–" if p is None else f"{p['recall']:.4f} ({p['zero']})"
            diff = "–" if not (a and b) else f"{b['recall'] - a['recall']:+.4f}"
            lines.append(f"| {lab} | {wlabel} | {cell(a)} | {cell(b)} | {diff} | "
                         f"{a['ms'] if a else '–'} / {b['ms'] if b else '–'} |")
    if r.get("errors"):
        lines += ["", "**FAILED**: " + "; ".join(r["errors"])]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="python3 -m gateann_bench build_memory")
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--shape", default="current_128",
                    help="a shape of bench/gateann_bench/shapes.py (distance: L2)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--in-memory-mwm", default="4GB")
    ap.add_argument("--partition-mwm", default="256MB")
    ap.add_argument("--L", default="20,40,100", help="gateann.search_list_size values "
                    "(the default is measured too)")
    ap.add_argument("--keep", action="store_true", help="keep the table at the end")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    Ls = [int(v) for v in a.L.split(",") if v]
    t_start = time.monotonic()

    x, q = dataset(a.shape, a.n, a.queries)
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    gucs = ("shared_buffers", "max_parallel_maintenance_workers", "maintenance_work_mem",
            "gateann.search_list_size", "gateann.filter_mode")
    settings = {"shape": a.shape, "n": a.n, "dim": int(x.shape[1]), "queries": a.queries,
                "L": Ls, "in_memory_mwm": a.in_memory_mwm, "partition_mwm": a.partition_mwm,
                "filter": f"cat = {FILTER_CAT}", "distance": "l2",
                **{g: conn.execute(f"SHOW {g}").fetchone()[0] for g in gucs}}
    results = {**run_facts(conn, "build_memory", a.command),
               "settings": settings, "builds": [], "points": [], "errors": [],
               "notes": ["vm_hwm_kb is the backend's peak resident set: it includes the shared "
                         "memory (shared buffers) the backend touched, not only its private "
                         "memory; rss_anon_peak_kb is its private memory, sampled every 50 ms",
                         "peak_memory_kb is the DEBUG1 line's peak of the build's memory "
                         "context, sampled per partition (builds in partitions only)"]}
    log(f"{a.shape}: loading {a.n} x {x.shape[1]}")
    results["load"] = load(conn, x)
    conn.close()
    t0 = time.monotonic()
    gts = ground_truth(x, q)
    results["ground_truth_s"] = round(time.monotonic() - t0, 1)
    log(f"ground truth: {results['ground_truth_s']} s")

    def save():
        results["seconds"] = round(time.monotonic() - t_start, 1)
        write_json(out / "results.json", results)
        (out / "summary.md").write_text(tables(results))

    for mode, label in MODES:
        mwm = a.in_memory_mwm if mode == "in_memory" else a.partition_mwm
        log(f"CREATE INDEX {label}, maintenance_work_mem = {mwm}")
        b = build(mode, mwm)
        results["builds"].append(b)
        log(f"  {b['build_s']} s, partitions {b.get('partitions', '–')}, peak "
            f"{b.get('peak_memory_kb', '–')} kB, VmHWM {b.get('vm_hwm_kb')} kB"
            + (f", ERROR {b['error']}" if "error" in b else ""))
        for m in b["messages"]:
            log(f"  {m}")
        if "error" in b:
            results["errors"].append(f"the build {label} failed: {b['error']}")
        elif mode == "in_memory" and b["partitioned"]:
            results["errors"].append(
                f"the build at maintenance_work_mem = {mwm} went to partitions (after "
                f"{b['partition_notice_rows']} rows): raise --in-memory-mwm")
        elif mode == "partitions" and not b["partitioned"]:
            results["errors"].append(
                f"the build at maintenance_work_mem = {mwm} did not go to partitions (no "
                "'building it in partitions' NOTICE): lower --partition-mwm")
        if results["errors"]:
            save()
            print(tables(results))
            print("build_memory: FAILED: " + "; ".join(results["errors"]), file=sys.stderr)
            sys.exit(1)
        points, facts = measure(x, q, gts, Ls, mode)
        b.update(facts)
        results["points"] += points
        c = connect()
        c.execute(f"DROP INDEX {INDEX}")
        c.close()
        save()
    if not a.keep:
        c = connect()
        c.execute(f"DROP TABLE {TABLE}")
        c.close()
    save()
    print(tables(results))
    log(f"done in {results['seconds']:.0f} s: {out / 'summary.md'}")


if __name__ == "__main__":
    main()
