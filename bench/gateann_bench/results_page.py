#!/usr/bin/env python3
"""Regenerate the tables of bench/RESULTS.md from benchmark run summaries.

    python3 bench/gateann_bench results_page             # rewrite the generated tables
    python3 bench/gateann_bench results_page --list      # which run every table row came from
    python3 bench/gateann_bench results_page --check     # exit 1 if RESULTS.md is out of date
    python3 bench/gateann_bench results_page --curated-only --check
                                                         # ... from what git holds (before a commit)
    python3 bench/gateann_bench results_page --curate bench/results/<run> [--note TEXT]
                                                         # keep a run's small summary in git

Standard library only; run it from anywhere.

Where the figures come from
---------------------------
* bench/results/curated/<run>.json: small summaries of chosen runs, committed
  in git (the only part of bench/results/ that is; see bench/.gitignore).
  `--curate DIR` writes one from a run directory, keeping only the fields the
  page uses; `--note` adds a line shown beside the run (conditions of the run,
  what code a working tree held, ...).  A curated summary wins over the run
  directory of the same name.
* bench/results/<run>/: what bench/run.sh writes (git-ignored).  A run
  directory without a curated summary is read too (unless --curated-only), so
  a new run shows on the page at once; the script names such runs on stderr,
  since nobody else can regenerate the page from them until they are curated.

The kind of a run comes from its contents (driver presets by their `preset`
field: quick, full, io, filter, filter_width, pgvector; shapes; writes; mix;
fuzz; by their `kind` field: memory, plans, build_memory, build_speed, shards,
scaleout_sim).  Its time is
results.json's `started`, else the YYYYMMDD-HHMMSS stamp of its directory
name, else the date git added it, else its mtime.

"The latest run of each kind": every table row (for the data-shape matrices,
every cell) is taken from the newest run that measured it.  A new run replaces
the rows it measured; rows it did not measure keep their older run.  Every row
names its run(s) and their git commit ("+" when the run recorded uncommitted
changes in the tree).

Tables go between markers in RESULTS.md; everything outside them is left alone:

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

NAME is one of TABLES below.  Curated summaries of runs that left no run
directory (fuzz runs made by hand) are written by hand in the same format,
with a "source" field saying where the figures come from.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/, above the package
REPO = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
CURATED = os.path.join(RESULTS, "curated")
PAGE = os.path.join(BENCH, "RESULTS.md")

DRIVER_PRESETS = {"quick", "full", "io", "filter", "filter_width", "pgvector", "smoke"}
DEFAULT_HNSW = ("", "m = 16, ef_construction = 64")

# ---------------------------------------------------------------------------
# reading runs


def _server(text):
    m = re.search(r"(\d+\.\d+)", text or "")
    return m.group(1) if m else None


def _stamp_from_name(name):
    m = re.search(r"(\d{8})-(\d{4,6})(?!\d)", name)
    if not m:
        return None
    d, t = m.group(1), m.group(2).ljust(6, "0")
    return f"{d[:4]}-{d[4:6]}-{d[6:]} {t[:2]}:{t[2:4]}:{t[4:]}"


def _git_added(path):
    try:
        out = subprocess.run(
            ["git", "-C", REPO, "log", "--diff-filter=A", "--format=%aI", "--", path],
            capture_output=True, text=True, check=False).stdout.split()
    except OSError:
        return None
    if not out:
        return None
    return out[-1][:19].replace("T", " ")


def _started(path, rj):
    s = (rj or {}).get("started")
    if s:
        return s.replace(" UTC", "")[:19]
    s = _stamp_from_name(os.path.basename(path))
    if s:
        return s
    for f in ("results.json", "summary.md"):
        p = os.path.join(path, f)
        if os.path.exists(p):
            return _git_added(p) or datetime.datetime.fromtimestamp(
                os.path.getmtime(p), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return "0000-00-00 00:00:00"


def _info(info):
    keep = ("pages", "pq_bytes", "neighbor_store_bytes", "filter_store_bytes",
            "tunnel_neighbors", "max_neighbors", "build_recall", "build_recall_list")
    return {k: info[k] for k in keep if info and info.get(k) is not None}


def _summarize_driver(rj):
    ds = {d["name"]: {"n": d["n"], "dim": d["dim"]} for d in rj.get("datasets", [])}
    indexes = []
    for i in rj.get("indexes", []):
        if i.get("engine") == "exact" or "build_seconds" not in i:
            continue
        indexes.append({"engine": i["engine"], "dataset": i["dataset"],
                        "columns": i.get("columns"), "options": i.get("options"),
                        "build_seconds": i.get("build_seconds"),
                        "index_bytes": i.get("index_bytes"),
                        "info": _info(i.get("index_info"))})
    points = []
    for p in rj.get("points", []):
        settings = json.loads(p.get("settings") or "{}")
        for k in ("gateann.search_list_size", "hnsw.ef_search", "gateann.filter_mode"):
            settings.pop(k, None)
        q = {"dataset": p["dataset"], "workload": p["workload"],
             "s": p.get("selectivity"), "engine": p["engine"], "L": p.get("L"),
             "mode": p.get("filter_mode"), "recall": p.get("recall@10"),
             "ms": p.get("lat_mean_ms"), "qps1": p.get("qps_c1"), "qps2": p.get("qps_c2"),
             "reads": p.get("reads_per_q"), "prefilter": p.get("prefilter_share")}
        if settings:
            q["extra"] = settings
        points.append({k: v for k, v in q.items() if v is not None})
    cfg = rj.get("config", {})
    return {"datasets": ds, "queries": cfg.get("queries"),
            "pgbench_seconds": cfg.get("pgbench_seconds"),
            "indexes": indexes, "points": points}


def _summarize_shapes(rj):
    o = rj.get("options", {})
    options = {k: o.get(k) for k in ("n", "nq", "nself", "L", "post_L", "workloads",
                                     "engines", "gateann_with", "pgvector_with", "clients")}
    facts = []
    for f in rj.get("facts", []):
        info = f.get("gateann_info") or {}
        g = {"shape": f["shape"], "metric": f["metric"], "n": f.get("n"), "dim": f.get("dim"),
             "gateann_build_s": f.get("gateann_build_s"), "hnsw_build_s": f.get("hnsw_build_s"),
             "vchordrq_build_s": f.get("vchordrq_build_s"),
             "gateann_jsonb_build_s": f.get("gateann_jsonb_build_s"),
             "gateann_expr_build_s": f.get("gateann_expr_build_s"),
             "self_top1": {e: f[k] for e, k in (("gate", "self_top1_gateann_gate"),
                                                 ("post", "self_top1_gateann_post"),
                                                 ("pgvector", "self_top1_pgvector"),
                                                 ("vchordrq", "self_top1_vchordrq")) if k in f},
             "info": _info(info)}
        facts.append({k: v for k, v in g.items() if v is not None})
    points = []
    # (a sweep over L keeps every point: the speed table picks from them)
    keep_L = {100, 400, 800} | (set(o.get("L") or []) if len(o.get("L") or []) >= 3 else set())
    for p in rj.get("points", []):
        if p.get("L") not in keep_L:
            continue
        q = {k: p.get(k) for k in ("shape", "metric", "workload", "engine", "L", "recall",
                                   "zero", "reads", "ms", "qps2")}
        points.append({k: v for k, v in q.items() if v is not None})
    return {"options": options, "facts": facts, "points": points}


def _summarize_writes(rj):
    steps = {}
    for name, s in rj.get("steps", {}).items():
        steps[name] = {k: s[k] for k in ("seconds", "rows", "clients", "rows_per_second",
                                         "nodes", "live_nodes", "deleted_nodes",
                                         "free_slots", "index_bytes") if k in s}
    recall = {}
    for key in ("churned", "fresh", "churned_reinsert", "fresh_reinsert"):
        if key in rj:
            recall[key] = [{"workload": r["workload"], "L": r["L"], "recall": r["recall"]}
                           for r in rj[key]]
    out = {"n": (rj.get("dataset") or {}).get("n"), "base_rows": rj.get("base_rows"),
           "inserted_rows": rj.get("inserted_rows"), "deleted_rows": rj.get("deleted_rows"),
           "steps": steps, "recall": recall}
    if "stores_shared" in rj:
        out["stores_shared"] = rj["stores_shared"]
    if "pgvector" in rj:
        pv = rj["pgvector"]
        out["pgvector"] = {"build_seconds": pv.get("build_seconds"),
                           "insert_c1": pv.get("insert_c1", {}).get("rows_per_second"),
                           "insert_c2": pv.get("insert_c2", {}).get("rows_per_second"),
                           "vacuum_seconds": pv.get("vacuum_seconds")}
    return out


def _summarize_mix(rj):
    pg = rj.get("pgbench", {})
    maint = rj.get("maintenance", {})
    kinds = {}
    longest_vacuum = 0.0
    for stmt, secs in maint.get("statements", []):
        k = stmt.split()[0]
        if stmt.startswith("REINDEX"):
            k = "REINDEX CONCURRENTLY" if "CONCURRENTLY" in stmt else "REINDEX"
        elif stmt.startswith("ALTER"):
            k = "ALTER INDEX"
        kinds[k] = kinds.get(k, 0) + 1
        if k == "VACUUM":
            longest_vacuum = max(longest_vacuum, secs)
    return {"n": (rj.get("dataset") or {}).get("n"), "base_rows": rj.get("base_rows"),
            "minutes": rj.get("minutes"), "clients": rj.get("clients"),
            "vacuum_every_s": rj.get("vacuum_every_s"), "kill_every_s": rj.get("kill_every_s"),
            "tps": {k: v.get("tps") for k, v in pg.get("per_script", {}).items()},
            "transactions": {k: v.get("transactions") for k, v in pg.get("per_script", {}).items()},
            "failed_transactions": pg.get("failed_transactions"),
            "pgbench_errors": pg.get("errors_in_stderr"),
            "lost_connections_at_kills": pg.get("lost_connections_at_kills"),
            "maintenance": kinds, "longest_vacuum_s": longest_vacuum,
            "maintenance_errors": len(maint.get("errors", [])),
            "kills": sum(1 for k in rj.get("kills", []) if k.get("killed")),
            "table_rows": rj.get("table_rows"),
            "live_nodes": (rj.get("after") or {}).get("live_nodes"),
            "verify_problems": len(rj.get("verify_problems") or []),
            "lost_rows": rj.get("lost_rows"), "ok": rj.get("ok")}


def _summarize_build_memory(rj):
    """bench/gateann_bench/build_memory.py: the two builds and their recall points."""
    st = rj.get("settings") or {}
    keep = ("mode", "maintenance_work_mem", "maintenance_work_mem_kb", "build_s", "partitioned",
            "partition_notice_rows", "partitions", "peak_memory_kb", "peak_line_mwm_kb",
            "vm_hwm_kb", "vm_rss_kb", "rss_anon_peak_kb", "index_bytes", "phases_s", "error")
    builds = [{k: b[k] for k in keep if b.get(k) is not None} for b in rj.get("builds", [])]
    points = [{k: p.get(k) for k in ("mode", "L", "search_list_size", "workload", "recall",
                                     "zero", "queries", "ms")} for p in rj.get("points", [])]
    return {"settings": {k: st.get(k) for k in ("shape", "n", "dim", "queries", "L", "filter",
                                                "in_memory_mwm", "partition_mwm",
                                                "shared_buffers",
                                                "max_parallel_maintenance_workers")},
            "builds": builds, "points": points, "errors": rj.get("errors") or []}


def _summarize_build_speed(rj):
    """bench/gateann_bench/build_speed.py: per shape and worker count, each engine's build
    seconds and recall points."""
    st = rj.get("settings") or {}
    return {"settings": {k: st.get(k) for k in ("n", "queries", "L", "workers", "engines",
                                                "gateann_with")},
            "builds": [{k: b.get(k) for k in ("shape", "metric", "dim", "workers", "build_s",
                                              "points", "gateann_info")}
                       for b in rj.get("builds", [])]}


def _summarize_shards(rj):
    """bench/gateann_bench/shards.py: per shard count and workload, each query form's recall,
    ms and rows received."""
    st = rj.get("settings") or {}
    return {"settings": {k: st.get(k) for k in ("shape", "n", "queries", "shards", "workloads",
                                                "fetch_size", "k")},
            "points": rj.get("points", []), "builds": rj.get("builds", [])}


def _summarize_fuzz(text):
    def num(pattern):
        m = re.search(pattern, text)
        return int(m.group(1)) if m else None
    seed = re.search(r"--seed[ =](\d+)", text)
    secs = re.search(r"--seconds[ =](\d+)", text)
    return {"seed": int(seed.group(1)) if seed else None,
            "fuzz_seconds": int(secs.group(1)) if secs else None,
            "tables": num(r"tables (\d+)"), "inputs": num(r"(\d+) inputs"),
            "queries": num(r"(\d+) queries,"), "kills": num(r"(\d+) kills"),
            "damaged": num(r"(\d+) damaged indexes"),
            "corruption_errors": num(r"corruption SQLSTATE: (\d+)"),
            "unexpected_errors": num(r"unexpected errors (\d+)"),
            "crashes": num(r"(\d+) crashes"), "wrong_rows": num(r"(\d+) wrong rows"),
            "missing_rows": num(r"(\d+) missing rows"),
            "short_strict": num(r"fewer rows than matched: (\d+)"),
            "short_relaxed": num(r"relaxed_order: (\d+)")}


def summarize(path):
    """The page's summary of one run directory, or None when the page has no
    use for it (an unknown kind)."""
    name = os.path.basename(os.path.normpath(path))
    rj = None
    rjp = os.path.join(path, "results.json")
    if os.path.exists(rjp):
        with open(rjp) as f:
            rj = json.load(f)
    smp = os.path.join(path, "summary.md")
    summary_md = open(smp).read() if os.path.exists(smp) else ""
    out = {"run": name, "started": _started(path, rj)}
    if rj is None:
        if "fuzz harness" not in summary_md:
            return None
        m = re.search(r"- git: ([0-9a-f]{7,40})", summary_md)
        cmd = re.search(r"`([^`]*)`", summary_md)
        out.update(kind="fuzz", commit=m.group(1) if m else None, dirty=None,
                   command=cmd.group(1) if cmd else None,
                   server=_server((re.search(r"- server: (.*)", summary_md) or [None, ""])[1]),
                   seconds=int((re.search(r"- seconds: (\d+)", summary_md) or [0, 0])[1]))
        out.update(_summarize_fuzz(summary_md))
        return out
    git = rj.get("git") or {}
    out.update(commit=git.get("commit"), dirty=git.get("dirty"), command=rj.get("command"),
               seconds=rj.get("seconds"))
    if rj.get("kind") == "build_memory":
        out.update(kind="build_memory", server=_server(rj.get("server")))
        out.update(_summarize_build_memory(rj))
    elif rj.get("kind") == "build_speed":
        out.update(kind="build_speed", server=_server(rj.get("server")))
        out.update(_summarize_build_speed(rj))
    elif rj.get("kind") in ("scaleout_sim", "memgraph_sim"):
        out.update(kind=rj["kind"], server=_server(rj.get("server_version")),
                   settings=rj.get("settings"), shapes=rj.get("shapes", []))
    elif rj.get("kind") == "shards":
        out.update(kind="shards", server=_server(rj.get("server_version")))
        out.update(_summarize_shards(rj))
    elif "preset" in rj and "points" in rj:
        out.update(kind=rj["preset"], server=_server((rj.get("postgres") or {}).get("version")))
        out.update(_summarize_driver(rj))
    elif "facts" in rj:
        out.update(kind="shapes", server=_server(rj.get("server")))
        out.update(_summarize_shapes(rj))
    elif "steps" in rj:
        out.update(kind="writes", server=_server(rj.get("server")))
        out.update(_summarize_writes(rj))
    elif "pgbench" in rj and "lost_rows" in rj:
        out.update(kind="mix", server=_server(rj.get("server")))
        out.update(_summarize_mix(rj))
    elif rj.get("kind") == "memory":
        out.update(kind="memory", memory=rj.get("memory"), points=rj.get("points"))
    elif rj.get("kind") == "plans":
        out.update(kind="plans", server=_server(rj.get("server")), settings=rj.get("settings"),
                   points=rj.get("points"))
    elif "missed_at_1000" in rj:
        out.update(kind="eviction", commit=rj.get("commit"), seconds=rj.get("seconds"),
                   command=(re.search(r"`([^`]*)`", summary_md) or [None, None])[1])
        out.update({k: rj.get(k) for k in ("rows", "rounds", "missed", "missed_at_1000",
                                           "rounds_with_misses", "budget_flips", "flip")},
                   verify_problems=len(rj.get("verify") or []))
    else:
        return None
    return out


def to_disk(s):
    """Points as rows under one list of field names (a third of the bytes)."""
    s = dict(s)
    pts = s.get("points")
    if pts and isinstance(pts[0], dict):
        fields = list(dict.fromkeys(k for p in pts for k in p))
        s["point_fields"] = fields
        s["points"] = [[p.get(k) for k in fields] for p in pts]
    return s


def from_disk(s):
    if "point_fields" in s:
        fields = s.pop("point_fields")
        s["points"] = [{k: v for k, v in zip(fields, row) if v is not None} for row in s["points"]]
    return s


def dump(obj):
    """JSON with one line per top-level key and per list element: small diffs."""
    obj = to_disk(obj)
    lines = ["{"]
    items = list(obj.items())
    for i, (k, v) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(v, list) and v and all(isinstance(x, (dict, list)) for x in v):
            lines.append(f" {json.dumps(k)}: [")
            for j, x in enumerate(v):
                sep = "," if j < len(v) - 1 else ""
                lines.append("  " + json.dumps(x, ensure_ascii=False) + sep)
            lines.append(" ]" + comma)
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def load_runs(curated_only=False):
    runs = {}
    if os.path.isdir(CURATED):
        for f in sorted(os.listdir(CURATED)):
            if f.endswith(".json"):
                with open(os.path.join(CURATED, f)) as fh:
                    r = from_disk(json.load(fh))
                r["_curated"] = True
                runs[r["run"]] = r
    raw = []
    if not curated_only and os.path.isdir(RESULTS):
        for name in sorted(os.listdir(RESULTS)):
            path = os.path.join(RESULTS, name)
            if (name == "curated" or name.startswith("latest-") or os.path.islink(path)
                    or not os.path.isdir(path) or name in runs):
                continue
            try:
                r = summarize(path)
            except (OSError, ValueError, KeyError, TypeError) as e:
                print(f"results_page: skipping {name}: {e}", file=sys.stderr)
                continue
            if r:
                r["_curated"] = False
                runs[name] = r
                raw.append(name)
    return runs, raw


# ---------------------------------------------------------------------------
# formatting


def newest_first(runs):
    return sorted(runs, key=lambda r: (r.get("started") or "", r["run"]), reverse=True)


def short(r):
    c = (r.get("commit") or "?")[:7]
    return c + ("+" if r.get("dirty") else "")


def ref(r):
    return f"`{r['run']}` {short(r)}"


def refs(rs):
    seen, out = set(), []
    for r in newest_first(rs):
        if r["run"] not in seen:
            seen.add(r["run"])
            out.append(ref(r))
    return ", ".join(out)


def f3(x):
    return "–" if x is None else f"{x:.3f}"


def fint(x):
    return "–" if x is None else f"{round(x):,}"


def fms(x):
    return "–" if x is None else (f"{x:.2f}" if x < 10 else f"{x:.1f}")


def mib(b):
    return "–" if b is None else f"{b / 2**20:,.0f}"


def mb(b):
    return "–" if b is None else f"{b / 1e6:,.1f}"


def rows_label(n):
    if n is None:
        return "?"
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}K"
    return f"{n:,}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


# Runs whose bullet render() has printed in full, and the first run with each
# note and source: a run's later bullets on the page say "as above", a repeated
# note or source names the run that printed it (one bullet per run per table
# still, each naming its run and commit).
_DESCRIBED = set()
_TEXTS = {}


def footnotes(used):
    out = []
    for r in newest_first({r["run"]: r for r in used}.values()):
        bits = [f"`{r['run']}`", short(r)]
        if r.get("server"):
            bits.append(f"PG {r['server']}")
        bits.append((r.get("started") or "")[:10])
        line = "- " + ", ".join(bits)
        if r["run"] in _DESCRIBED:
            out.append(line + ": as above.")
            continue
        _DESCRIBED.add(r["run"])
        if r.get("command"):
            line += f": `{r['command'].strip()}`"
        for key, full, again in (("note", ". {}", ". Note as for `{}`."),
                                 ("source", " (source: {})", " (source as for `{}`)")):
            text = r.get(key)
            if text:
                first = _TEXTS.setdefault((key, text), r["run"])
                line += (full if first == r["run"] else again).format(
                    text if first == r["run"] else first)
        out.append(line)
    return out


def not_measured(what):
    return [f"_No run yet: {what}._"]


# ---------------------------------------------------------------------------
# tables


def of_kind(runs, *kinds):
    return newest_first(r for r in runs.values() if r.get("kind") in kinds)


def _driver_points(r, dataset=None):
    for p in r.get("points", []):
        if dataset and p["dataset"] != dataset:
            continue
        yield p


def t_filter(runs):
    """1M filtered workloads, gate and post: the newest filter run per workload."""
    rows, used, seen = [], [], set()
    for r in of_kind(runs, "filter"):
        big = {name for name, d in r.get("datasets", {}).items() if d["n"] >= 1_000_000}
        for p in r.get("points", []):
            wl = p["workload"]
            if p["dataset"] not in big or wl in seen or p["engine"] != "gateann":
                continue
            seen.add(wl)
            pts = [q for q in r["points"] if q["workload"] == wl and q["engine"] == "gateann"
                   and "extra" not in q and q["dataset"] == p["dataset"]]

            def cell(mode, L):
                q = next((q for q in pts if q.get("L") == L and (q.get("mode") or "gate") == mode), None)
                if not q:
                    return "–"
                return f"{f3(q.get('recall'))} / {fint(q.get('qps1'))} / {fint(q.get('reads'))}"
            s = p.get("s")
            rows.append([(s if s is not None else 9, wl),
                         f"{wl} ({s * 100:.1f} %)" if s is not None else wl,
                         cell("gate", 20), cell("gate", 100), cell("gate", 400),
                         cell("post", 100), ref(r)])
            used.append(r)
    rows = [row[1:] for row in sorted(rows, key=lambda row: row[0])]
    if not rows:
        return not_measured("`bench/run.sh filter`")
    return table(["workload (selectivity)", "gate L = 20", "gate L = 100", "gate L = 400",
                  "post L = 100", "run"], rows) + [""] + footnotes(used)


SHAPE_ORDER = ["current_128", "sentences_384", "clusters_tight_128", "clusters_tight_384",
               "clusters_tight_960", "clusters_wide_384", "clusters_wide_960",
               "anisotropic_128", "duplicates_128", "lowdim_2", "lowdim_8",
               "gauss_128", "gauss_384", "gauss_960"]
WORKLOADS = ["none", "u1", "u5", "u10", "a1", "a5", "a10"]


def _shape_key(pair):
    shape, metric = pair
    return (SHAPE_ORDER.index(shape) if shape in SHAPE_ORDER else len(SHAPE_ORDER), shape, metric)


def _default_shapes(runs, n, need_pgvector=True):
    out = []
    for r in of_kind(runs, "shapes"):
        o = r.get("options", {})
        if o.get("n") != n or (o.get("gateann_with") or "") != "":
            continue
        if (o.get("pgvector_with") or "") not in DEFAULT_HNSW:
            continue
        if need_pgvector and "pgvector" not in (o.get("engines") or []):
            continue
        out.append(r)
    return out


def _pt(r, shape, metric, wl, engine, L):
    return next((p for p in r.get("points", []) if p["shape"] == shape and p["metric"] == metric
                 and p["workload"] == wl and p["engine"] == engine and p["L"] == L), None)


def _fact(r, shape, metric):
    return next((f for f in r.get("facts", []) if f["shape"] == shape and f["metric"] == metric), None)


def _matrix(runs, n):
    cand = _default_shapes(runs, n)
    pairs = sorted({(f["shape"], f["metric"]) for r in cand for f in r.get("facts", [])}, key=_shape_key)
    return cand, pairs


def t_matrix(runs, n):
    """Recall@10 at L = 100 by shape and filter: gate / post / pgvector; each
    cell from the newest default-option run with pgvector that measured it;
    then unfiltered at L = 400, self-queries, queries at recall 0 and the
    build of the newest run that measured the shape (the first run named)."""
    cand, pairs = _matrix(runs, n)
    rows, used = [], []
    for shape, metric in pairs:
        cells, rs, zeros = [], [], []
        for wl in WORKLOADS:
            for r in cand:
                g = _pt(r, shape, metric, wl, "gateann_gate", 100)
                if g:
                    v = _pt(r, shape, metric, wl, "pgvector", 100)
                    if wl == "none":
                        cells.append(f"{f3(g['recall'])} / {f3(v and v['recall'])}")
                    else:
                        p = _pt(r, shape, metric, wl, "gateann_post", 100)
                        cells.append(f"{f3(g['recall'])} / {f3(p and p['recall'])} / "
                                     f"{f3(v and v['recall'])}")
                    if g.get("zero"):
                        zeros.append(f"{wl} {g['zero'] * 100:.1f} %")
                    rs.append(r)
                    break
            else:
                cells.append("–")
        l400 = "–"
        for r in cand:
            g = _pt(r, shape, metric, "none", "gateann_gate", 400)
            if g:
                v = _pt(r, shape, metric, "none", "pgvector", 400)
                l400 = f"{f3(g['recall'])} / {f3(v and v['recall'])}"
                rs.append(r)
                break
        fr = next((r for r in cand if _fact(r, shape, metric)), None)
        f = (_fact(fr, shape, metric) or {}) if fr else {}
        st = f.get("self_top1", {})
        info = f.get("info", {})
        if fr:
            rs.append(fr)
        rows.append([shape, metric, cells[0], l400] + cells[1:]
                    + [f"{f3(st.get('gate'))} / {f3(st.get('pgvector'))}",
                       ", ".join(zeros) or "none",
                       f"{fms(f.get('gateann_build_s'))} / {fms(f.get('hnsw_build_s'))}",
                       f3(info.get("build_recall")), info.get("tunnel_neighbors", "–"), refs(rs)])
        used += rs
    if not rows:
        return not_measured(f"`bench/run.sh shapes --n {n}`")
    return table(["shape", "metric", "none", "none, L = 400"] + WORKLOADS[1:]
                 + ["self top-1: gate / pgvector", "gate: queries at recall 0",
                    "build s: gateann / HNSW (first run)", "build_recall", "tunnel prefix", "runs"],
                 rows) + [""] + footnotes(used)


SPEED_WORKLOADS = ["none", "u10", "u1", "a10", "c10", "c5"]
SPEED_RECALL = 0.95
# bench/gateann_bench/shapes.py times only the query from this commit on (before, its time
# included gateann's counter query, which pgvector has none of)
QUERY_ONLY_TIMING = "8c981ec"


def _timed_query_only(r):
    commit = (r.get("commit") or "").rstrip("+")
    if not commit:
        return False
    try:
        return subprocess.run(["git", "-C", REPO, "merge-base", "--is-ancestor",
                               QUERY_ONLY_TIMING, commit],
                              capture_output=True, check=False).returncode == 0
    except OSError:
        return False


def _is_ancestor(a, b):
    """Whether commit a is an ancestor of a different commit b (False when
    either is unknown or git cannot tell)."""
    a, b = (a or "").rstrip("+"), (b or "").rstrip("+")
    if not a or not b or a.startswith(b) or b.startswith(a):
        return False
    try:
        return subprocess.run(["git", "-C", REPO, "merge-base", "--is-ancestor", a, b],
                              capture_output=True, check=False).returncode == 0
    except OSError:
        return False


def _qps(p, clients):
    """A point's QPS: one client from its timed pass, more from its qpsN."""
    if clients == 1:
        return 1000.0 / p["ms"] if p.get("ms") else None
    return p.get(f"qps{clients}")


def _best_qps(r, shape, metric, wl, engine, clients=1):
    """(QPS, L, recall) of the fastest point at recall >= SPEED_RECALL, or
    the best recall reached (None, None, recall), or None if not measured."""
    pts = [p for p in r.get("points", []) if p["shape"] == shape and p["metric"] == metric
           and p["workload"] == wl and p["engine"] == engine and _qps(p, clients)]
    if not pts:
        return None
    ok = [p for p in pts if p["recall"] >= SPEED_RECALL]
    if not ok:
        return (None, None, max(p["recall"] for p in pts))
    best = max(ok, key=lambda p: _qps(p, clients))
    return (_qps(best, clients), best["L"], best["recall"])


RIVALS = {"pgvector": ("pgvector", "ef_search"), "vchordrq": ("VectorChord", "probes for L")}


def t_speed(runs, n, clients=1, rival="pgvector"):
    """Best QPS (the query alone timed; one client, or `clients` at once) at
    recall@10 >= 0.95 by shape and workload, gateann gate against a rival
    (pgvector HNSW, or VectorChord) swept over the same L values in the same
    run: the newest default-option run with the rival that swept at least
    three values and timed the query alone (and, for more clients, measured
    them)."""
    name, knob = RIVALS[rival]
    cand = [r for r in _default_shapes(runs, n, need_pgvector=rival == "pgvector")
            if len(r.get("options", {}).get("L") or []) >= 3 and _timed_query_only(r)
            and any(p["engine"] == rival for p in r.get("points", []))
            and (clients == 1 or any(p.get(f"qps{clients}") for p in r.get("points", [])))]
    pairs = sorted({(f["shape"], f["metric"]) for r in cand for f in r.get("facts", [])},
                   key=_shape_key)
    rows, used = [], []
    for shape, metric in pairs:
        cells, rs = [], []
        for wl in SPEED_WORKLOADS:
            for r in cand:
                g = _best_qps(r, shape, metric, wl, "gateann_gate", clients)
                v = _best_qps(r, shape, metric, wl, rival, clients)
                if g is None or v is None:
                    continue

                def cell(b):
                    if b[0] is None:
                        return f"never (max {f3(b[2])})"
                    return f"{fint(b[0])} (L {b[1]}, {f3(b[2])})"
                ratio = "–"
                if g[0] is not None and v[0] is not None:
                    ratio = f"{g[0] / v[0]:.2f}"
                elif g[0] is not None:
                    ratio = "only gateann"
                cells.append(f"{cell(g)} / {cell(v)}" + (f" = {ratio}×" if ratio[0].isdigit() else
                                                        ": only gateann" if ratio != "–" else "")
                             + ("" if clients != 1 or rival != "pgvector" else _speed_more(
                                 r, shape, metric, wl)))
                rs.append(r)
                break
            else:
                cells.append("–")
        if rs:
            rows.append([shape, metric] + cells + [refs(rs)])
            used += rs
    if not rows:
        more = "" if clients == 1 else f" --clients 1,{clients}"
        return not_measured(f"`bench/run.sh shapes --n {n} --L 20,40,100,200 "
                            f"--engines gateann_gate,{rival}{more}`")
    more = ("" if clients != 1 or rival != "pgvector" else
            " Then, where the same run measured them, 2 clients: gateann's best QPS over "
            "pgvector HNSW's, 2 clients at once; VectorChord: over VectorChord's (vchordrq, "
            "lists ≈ √rows, probes swept with L), one client; only gateann (the rival's best "
            "recall): the rival never reached 0.95; never (gateann's best recall): gateann did "
            "not.")
    return (table(["shape", "metric"] + SPEED_WORKLOADS + ["run"], rows)
            + ["", f"Cells: gateann QPS (L, recall) / {name} QPS ({knob}, recall) = ratio, "
               f"{'one client' if clients == 1 else f'{clients} clients at once'}, at the "
               "fastest point with recall@10 ≥ 0.95; never: not reached at any value swept."
               + more]
            + [""] + footnotes(used))


def _speed_ratio(r, shape, metric, wl, rival, clients):
    """gateann's best QPS at recall@10 >= 0.95 over a rival's in run r, as
    text, or None when r did not measure both."""
    g = _best_qps(r, shape, metric, wl, "gateann_gate", clients)
    v = _best_qps(r, shape, metric, wl, rival, clients)
    if g is None or v is None:
        return None
    if g[0] is None:
        return f"never ({f3(g[2])})"
    if v[0] is None:
        return f"only gateann ({f3(v[2])})"
    return f"{g[0] / v[0]:.2f}×"


def _speed_more(r, shape, metric, wl):
    """What a speed cell's run also measured: gateann over pgvector HNSW with
    2 clients at once, and over VectorChord with one client."""
    out = ""
    for label, rival, clients in (("2 clients", "pgvector", 2), ("VectorChord", "vchordrq", 1)):
        x = _speed_ratio(r, shape, metric, wl, rival, clients)
        if x is not None:
            out += f"; {label}: {x}"
    return out


FILTER_FORMS = [("gateann_gate", "int column"), ("gateann_jsonb", "jsonb @>"),
                ("gateann_jsonkey", "->> on the jsonb column"),
                ("gateann_expr", "->> expression column"), ("gateann_post", "int column, post")]


def t_filter_forms(runs):
    """The same filter as an int filter column, a jsonb @> on a jsonb filter
    column, one key's ->> equality on that column and an ->> expression
    column (gate mode each), and the int column in post mode: best QPS at
    recall@10 >= 0.95 with its reads per query, from the newest shapes run
    that measured the jsonb engines and, if others, the newest that measured
    the ->> equality on the jsonb column and the newest that measured the
    expression column (the two ->> forms send the same SQL, so one run has
    one of them); each row from one run."""
    shapes_runs = newest_first(of_kind(runs, "shapes"))
    picked = []
    for engine in ("gateann_jsonb", "gateann_jsonkey", "gateann_expr"):
        r = next((r for r in shapes_runs
                  if any(p["engine"] == engine for p in r.get("points", []))), None)
        if r is not None and all(r is not x for x in picked):
            picked.append(r)
    if not picked:
        return not_measured("`bench/run.sh shapes --shapes sentences_384 --engines "
                            "gateann_gate,gateann_jsonb,gateann_expr,gateann_post`")
    rows = []
    for r in picked:
        for f in sorted(r.get("facts", []), key=lambda f: _shape_key((f["shape"], f["metric"]))):
            shape, metric = f["shape"], f["metric"]
            for wl in [w for w in SPEED_WORKLOADS if w != "none"
                       and any(p["workload"] == w and p["shape"] == shape for p in r["points"])]:
                cells = []
                for engine, _ in FILTER_FORMS:
                    b = _best_qps(r, shape, metric, wl, engine)
                    if b is None:
                        cells.append("–")
                    elif b[0] is None:
                        cells.append(f"never (max {f3(b[2])})")
                    else:
                        p = _pt(r, shape, metric, wl, engine, b[1])
                        cells.append(f"{fint(b[0])} (L {b[1]}, {f3(b[2])}, {fint(p.get('reads'))} reads)")
                rows.append([shape, wl] + cells + [f"`{r['run']}`"])
    kinds = (("gateann_build_s", "int columns"), ("gateann_jsonb_build_s", "jsonb"),
             ("gateann_expr_build_s", "expressions"))
    builds = "; ".join(f"`{r['run']}`: " + ", ".join(
        f"{f['shape']}: " + ", ".join(f"{label} {f[k]} s" for k, label in kinds if f.get(k))
        for f in r.get("facts", [])) for r in picked)
    return (table(["shape", "workload"] + [label for _, label in FILTER_FORMS] + ["run"], rows)
            + ["", "Cells: best QPS with one client at recall@10 ≥ 0.95 (L, recall, records "
               "read per query); the label of a row is an int column, or a key of one jsonb value "
               "per row ({\"u10\": 3, ...}) filtered with `meta @> '{\"u10\": 3}'`, with "
               "`(meta ->> 'u10') = '3'` through the index on the jsonb column (the path "
               "`$.\"u10\" == \"3\" || $.\"u10\" == 3`: a number's text) or through one on "
               f"those expressions; each row from one run. Builds: {builds}."]
            + [""] + footnotes(picked))

def t_plans(runs):
    """The plan the planner chose by filter and table size, and its time over
    the fastest forced plan's, from the newest `bench/run.sh plans` run."""
    cand = of_kind(runs, "plans")
    if not cand:
        return not_measured("`bench/run.sh plans --sizes 1000,5000,20000,100000`")
    r = cand[0]
    sizes = sorted({p["rows"] for p in r["points"]})
    filters = list(dict.fromkeys(p["filter"] for p in r["points"]))
    short_plan = {"gateann": "gateann", "btree + sort": "btree", "seq scan + sort": "seq"}
    rows = []
    for f in filters:
        cells = []
        for n in sizes:
            p = next((q for q in r["points"] if q["rows"] == n and q["filter"] == f), None)
            if p is None:
                cells.append("–")
                continue
            best = min(p["ms"], key=p["ms"].get)
            cells.append(f"{short_plan[p['chosen']]} {p['chosen_over_best']:.2f}×"
                         + ("" if p["chosen"] == best else f" ({short_plan[best]} {p['ms'][best]:.2f} ms)"))
        sel = next(q["selectivity"] for q in r["points"] if q["filter"] == f)
        rows.append([f, f"{sel:.2%}" if sel else "–"] + cells)
    return (table(["filter", "matches"] + [rows_label(n) for n in sizes], rows)
            + ["", "Cells: the plan chosen for `WHERE <filter> ORDER BY v <-> q LIMIT 10` (gateann; "
               "btree: a btree on the filter column and a sort; seq: a sequential scan and a sort) "
               "and its time over the fastest of the three forced on the same queries (in brackets "
               "when another was fastest). x1 / x10 are not gateann index columns: the executor "
               "filters above the scan. Recall@10 of every chosen plan: "
               f"{f3(min(p.get('recall') or 0 for p in r['points']))} or more."]
            + [""] + footnotes([r]))


def t_shapes_1m(runs):
    """1M rows, each shape and workload: gate, post, pgvector in the same run."""
    rows, used, seen = [], [], set()
    big = [r for r in of_kind(runs, "shapes")
           if (r.get("options", {}).get("n") or 0) >= 1_000_000
           and (r["options"].get("gateann_with") or "") == ""
           and (r["options"].get("pgvector_with") or "") in DEFAULT_HNSW]
    keys = []
    for r in big:
        for p in r.get("points", []):
            k = (r["options"]["n"], p["shape"], p["metric"], p["workload"])
            if k in seen or p["engine"] != "gateann_gate":
                continue
            seen.add(k)
            keys.append((k, r))
    order = {w: i for i, w in enumerate(WORKLOADS)}
    keys.sort(key=lambda kr: (kr[0][0],) + _shape_key(kr[0][1:3]) + (order.get(kr[0][3], 99),))
    for (n, shape, metric, wl), r in keys:
        g1 = _pt(r, shape, metric, wl, "gateann_gate", 100)
        g4 = _pt(r, shape, metric, wl, "gateann_gate", 400)
        po = _pt(r, shape, metric, wl, "gateann_post", 100)
        v1 = _pt(r, shape, metric, wl, "pgvector", 100)
        v4 = _pt(r, shape, metric, wl, "pgvector", 400)

        def rr(p):
            return "–" if not p else f"{f3(p['recall'])} ({fint(p.get('reads'))})"

        def z(p):
            return "–" if not p or p.get("zero") is None else f"{p['zero'] * 100:.0f} %"
        rows.append([rows_label(n), shape, metric, wl, rr(g1), f3(g4 and g4["recall"]), rr(po),
                     f"{f3(v1 and v1['recall'])} / {f3(v4 and v4['recall'])}",
                     f"{z(g1)} / {z(v1)}",
                     f"{fms(g1 and g1.get('ms'))} / {fms(v1 and v1.get('ms'))}", ref(r)])
        used.append(r)
    if not rows:
        return not_measured("`bench/run.sh shapes --n 1000000`")
    return table(["rows", "shape", "metric", "workload", "gate L = 100 (reads)", "gate L = 400",
                  "post L = 100 (reads)", "pgvector ef 100 / 400", "queries at recall 0: gate / pgvector",
                  "mean ms: gate / pgvector", "run"], rows) + [""] + footnotes(used)


def t_degree(runs):
    """Runs with non-default index options (gateann's degree and build list,
    HNSW's m): every engine row of those runs, newest per (rows, shape,
    engine, options)."""
    rows, used, seen = [], [], set()
    for r in of_kind(runs, "shapes"):
        o = r.get("options", {})
        gw = o.get("gateann_with") or ""
        pw = o.get("pgvector_with") or ""
        if gw == "" and pw in DEFAULT_HNSW:
            continue
        for f in r.get("facts", []):
            for eng, opts, build in (("gateann", gw or "defaults", f.get("gateann_build_s")),
                                     ("pgvector", pw or "m = 16, ef_construction = 64",
                                      f.get("hnsw_build_s"))):
                if eng == "pgvector" and "pgvector" not in (o.get("engines") or []):
                    continue
                k = (o["n"], f["shape"], f["metric"], eng, opts)
                if k in seen:
                    continue
                seen.add(k)
                e = "gateann_gate" if eng == "gateann" else "pgvector"
                cells = []
                for L in (100, 400, 800):
                    p = _pt(r, f["shape"], f["metric"], "none", e, L)
                    cells.append(f3(p and p["recall"]))
                if eng == "gateann":
                    u = _pt(r, f["shape"], f["metric"], "u10", "gateann_gate", 100)
                    up = _pt(r, f["shape"], f["metric"], "u10", "gateann_post", 100)
                    u10 = f"{f3(u and u['recall'])} / {f3(up and up['recall'])}" if u else "–"
                    br = f3(f.get("info", {}).get("build_recall"))
                    st = f.get("self_top1", {}).get("gate")
                else:
                    u10, br, st = "–", "–", f.get("self_top1", {}).get("pgvector")
                rows.append([rows_label(o["n"]), f["shape"], f"{eng}: {opts}", fms(build)]
                            + cells + [u10, f3(st), br, ref(r)])
                used.append(r)
    rows.sort(key=lambda x: (x[1], x[0], x[2]))
    if not rows:
        return not_measured("`bench/run.sh shapes --gateann-with ...`")
    return table(["rows", "shape", "engine: options", "build s", "none L = 100", "L = 400", "L = 800",
                  "u10 gate / post, L = 100", "self top-1", "build_recall", "run"],
                 rows) + [""] + footnotes(used)


def _newest_writes(runs):
    """The newest writes run per data-set size and store sharing."""
    seen = set()
    for r in of_kind(runs, "writes"):
        key = (r.get("n"), r.get("stores_shared", True))
        if key not in seen:
            seen.add(key)
            yield r


def t_writes(runs):
    """Writes benchmark steps, newest run per data-set size and store sharing,
    and their recall (_writes_recall) in the same row."""
    rows, used = [], []
    rec_head, rec = _writes_recall(runs)
    for r in _newest_writes(runs):
        s = r.get("steps", {})

        def g(step, k):
            return s.get(step, {}).get(k)
        pv = r.get("pgvector")
        rows.append([f"{rows_label(r.get('n'))}: {r.get('base_rows'):,} built, "
                     f"+{r.get('inserted_rows'):,} / −{r.get('deleted_rows'):,}"
                     + ("" if r.get("stores_shared", True) else
                        ", no shared_preload_libraries (private stores)"),
                     fms(g("build", "seconds")) + (f" ({fms(pv['build_seconds'])})" if pv else ""),
                     f"{fint(g('insert_c1', 'rows_per_second'))} / {fint(g('insert_c2', 'rows_per_second'))}"
                     + (f" ({fint(pv['insert_c1'])} / {fint(pv['insert_c2'])})" if pv else ""),
                     f"{fms(g('vacuum', 'seconds'))}"
                     + (f" ({fms(pv['vacuum_seconds'])})" if pv and pv.get("vacuum_seconds") else "")
                     + f"; {fint(g('vacuum', 'free_slots'))} slots freed",
                     f"{fint(g('reinsert_c2', 'rows_per_second'))} ({fint(g('after_reinsert', 'free_slots'))} left)",
                     f"{mib(g('build', 'index_bytes'))} → {mib(g('after_inserts', 'index_bytes'))} → "
                     f"{mib(g('after_reinsert', 'index_bytes'))}",
                     f"{fms(g('fresh', 'seconds'))} / {fms(g('reindex', 'seconds'))}"]
                    + rec[r["run"]] + [ref(r)])
        used.append(r)
    if not rows:
        return not_measured("`bench/run.sh writes`")
    return (table(["data", "build s (pgvector HNSW)", "insert rows/s: 1 / 2 clients (pgvector HNSW)",
                   "delete 20 % + VACUUM s (pgvector HNSW)",
                   "re-insert rows/s, 2 clients (free slots)", "index MiB: built → +inserts → re-inserted",
                   "fresh build s / REINDEX s"] + rec_head + ["run"], rows)
            + ["", "Recall cells: after the churn / a fresh build (difference); after "
               "re-inserting / REINDEX (difference)."]
            + [""] + footnotes(used))


def _writes_recall(runs):
    """Recall after the churn and after re-inserting, for t_writes: the column
    names (a workload and L each) and every run's cells."""
    cand = list(_newest_writes(runs))
    cols = sorted({(x["workload"], x["L"]) for r in cand for x in r.get("recall", {}).get("churned", [])},
                  key=lambda c: (c[0] != "unfiltered", c[0], c[1]))
    cells = {}
    for r in cand:
        rc = r.get("recall", {})

        def get(key, wl, L):
            return next((x["recall"] for x in rc.get(key, []) if x["workload"] == wl and x["L"] == L), None)

        def pair(a, b):
            if a is None or b is None:
                return "–"
            return f"{a:.3f} / {b:.3f} ({a - b:+.3f})"
        cells[r["run"]] = [f"{pair(get('churned', wl, L), get('fresh', wl, L))}; "
                           f"{pair(get('churned_reinsert', wl, L), get('fresh_reinsert', wl, L))}"
                           for wl, L in cols]
    return [f"recall {wl}, L = {L}" for wl, L in cols], cells


def t_mix(runs):
    rows, used, seen = [], [], set()
    for r in of_kind(runs, "mix"):
        k = bool(r.get("kill_every_s"))
        if k in seen:
            continue
        seen.add(k)
        tps = r.get("tps", {})
        m = r.get("maintenance", {})
        lost = r.get("lost_rows") or {}
        rows.append([f"{r.get('minutes'):g} min, {r.get('clients')} clients"
                     + (f", kill -9 every {r['kill_every_s']:g} s" if k else ""),
                     " / ".join(fint(tps.get(x)) for x in ("insert", "update", "delete", "query")),
                     f"{m.get('VACUUM', 0)} / {m.get('REINDEX CONCURRENTLY', 0)} / {m.get('ALTER INDEX', 0)}"
                     f" (longest VACUUM {r.get('longest_vacuum_s', 0):.1f} s)",
                     f"{r.get('kills', 0)} ({r.get('lost_connections_at_kills') or 0} connections lost)",
                     f"{r.get('failed_transactions')} / {r.get('pgbench_errors')} / {r.get('maintenance_errors')}",
                     f"{fint(r.get('table_rows'))} / {fint(r.get('live_nodes'))}",
                     r.get("verify_problems"),
                     f"{lost.get('lost')} of {fint(lost.get('checked'))}",
                     "**OK**" if r.get("ok") else "**FAILED**", ref(r)])
        used.append(r)
    if not rows:
        return not_measured("`bench/run.sh mix`")
    return table(["soak", "tps: insert / update / delete / query", "VACUUM / REINDEX CONCURRENTLY / ALTER INDEX",
                  "kill -9 of a writer", "failed transactions / pgbench errors / maintenance errors",
                  "rows / live nodes after", "gateann_verify problems", "rows not found by their vector",
                  "result", "run"], rows) + [""] + footnotes(used)


def t_fuzz(runs):
    """The fuzz harness, newest run per PostgreSQL major version."""
    rows, used, seen = [], [], set()
    for r in of_kind(runs, "fuzz"):
        major = (r.get("server") or "?").split(".")[0]
        if major in seen:
            continue
        seen.add(major)
        secs = r.get("fuzz_seconds") or r.get("seconds")
        rows.append([f"PG {r.get('server')}", f"{fint(secs)} s, seed {r.get('seed')}",
                     fint(r.get("inputs")), fint(r.get("queries")), fint(r.get("kills")),
                     f"{fint(r.get('damaged'))} ({fint(r.get('corruption_errors'))})",
                     f"{r.get('crashes')} / {r.get('wrong_rows')} / {r.get('unexpected_errors')}",
                     f"{r.get('short_strict')} / {r.get('short_relaxed')}", ref(r)])
        used.append(r)
    rows.sort(key=lambda x: x[0])
    if not rows:
        return not_measured("`bench/run.sh fuzz`")
    return table(["server", "duration", "inputs", "queries checked against a seq scan", "kill -9",
                  "damaged index files (corruption errors)", "crashes / wrong rows / unexpected errors",
                  "short strict / relaxed_order scans", "run"], rows) + [""] + footnotes(used)


def t_eviction(runs):
    """Rows inserted into freed slots while the store budget evicts and reloads
    the index's store (bench/gateann_bench/eviction.py): the runs of the newest code, newest
    first (a run whose commit is an ancestor of another run's is left out, such
    as the one of the code before issue 32's fixes, made after them; it stays
    in bench/results/curated/)."""
    cand = of_kind(runs, "eviction")
    cand = [r for r in cand if not any(
        _is_ancestor(r.get("commit"), o.get("commit")) for o in cand if o is not r)]
    if not cand:
        return not_measured("`bench/run.sh eviction`")
    rows = [[f"{fint(r.get('seconds'))} s, "
             f"{'budget flipping 4 MB / 1 GB' if r.get('flip') else 'budget 4 MB'}"
             f" ({fint(r.get('budget_flips'))} flips)",
             fint(r.get("rows")), f"{fint(r.get('missed'))} ({fint(r.get('rounds_with_misses'))} "
             f"of {fint(r.get('rounds'))} rounds)", fint(r.get("missed_at_1000")),
             fint(r.get("verify_problems")), ref(r)] for r in cand]
    return (table(["run length", "new rows checked", "not returned first (rounds with a miss)",
                   "not returned at L = 1000 either", "gateann_verify problems", "run"], rows)
            + [""] + footnotes(cand))


def t_memory_modes(runs):
    """Gate against post on the device (bench/gateann_bench/memory.py --filter-modes gate,post),
    newest run only."""
    cand = [r for r in of_kind(runs, "memory")
            if any(p.get("mode") == "post" for p in r.get("points") or [])]
    if not cand:
        return not_measured("`bench/run.sh memory --filter-modes gate,post`")
    return memory_table(cand[0])


def t_memory_walk(runs):
    """A memory walk against reading as the walk goes (bench/gateann_bench/memory.py
    --read-lists 0,n), and the other techniques: runs that varied more than one
    setting, the newest of each shape and size."""
    cand = [r for r in of_kind(runs, "memory") if len(_varied(r)) > 1]
    if not cand:
        return not_measured("`bench/run.sh memory --read-lists 0,20 --page-search off,reuse`")
    return memory_tables_per_shape(cand)


def memory_tables_per_shape(cand):
    """memory_table of the newest run of each shape and size among cand; the
    ablations at one L side by side in one table."""
    out, seen, abl = [], set(), []
    for r in cand:
        f = r.get("memory") or {}
        if (f.get("shape"), f.get("n")) in seen:
            continue
        seen.add((f.get("shape"), f.get("n")))
        if len({p["L"] for p in r.get("points") or []}) == 1 and len(_varied(r)) > 1:
            abl.append(r)
        else:
            out += ([""] if out else []) + memory_table(r)
    if abl:
        out += ([""] if out else []) + ablation_table(abl)
    return out


# How an ablation row names a setting that is on
ABLATION_NAMES = {"read_list": "memory walk", "page_search": "page reuse",
                  "dynamic_width": "dynamic width"}


def ablation_table(rs):
    """Memory runs at one L that varied several settings: a row per
    combination of them, a column per run, record cache budget and workload."""
    def name(r):
        f = r.get("memory") or {}
        return f"{f.get('shape')}, {rows_label(f.get('n'))}"

    def on(varied, combo):
        return " + ".join(ABLATION_NAMES[k] + (f" ({v})" if k == "read_list" else "")
                          for k, v in zip(varied, combo) if v != ABLATION[k]) or "none"
    head, facts, colsets, names = [], [], [], []
    for r in rs:
        f = r.get("memory") or {}
        pts = r.get("points") or []
        varied = _varied(r)
        cols = list(dict.fromkeys((p["cache_mb"], p["cache_share"], p["workload"]) for p in pts))
        combos = list(dict.fromkeys(tuple(p.get(k, ABLATION[k]) for k in varied) for p in pts))
        combos.sort(key=lambda c: sum(v != ABLATION[k] for k, v in zip(varied, c)))
        for c in combos:
            if on(varied, c) not in names:
                names.append(on(varied, c))
        colsets.append((r, varied, cols))
        head += [(f"{name(r)}: " if len(rs) > 1 else "") + f"{wl}, cache {fint(mb)} MB ({share:.0%})"
                 for mb, share, wl in cols]
        L = pts[0]["L"] if pts else "–"
        facts.append(f"{name(r)}, L = {L}: index {mib(f.get('index_bytes'))} MiB, in-memory "
                     f"stores {mib(f.get('store_bytes'))} MiB, shared_buffers "
                     f"{f.get('shared_buffers')}; the device reads "
                     f"{fint(f.get('device_reads_per_s_qd1'))} random 8 KiB blocks/s at queue "
                     "depth 1")
    rows = []
    for nm in names:
        cells = []
        for r, varied, cols in colsets:
            pts = r.get("points") or []
            for mb, share, wl in cols:
                p = next((p for p in pts if (p["cache_mb"], p["cache_share"], p["workload"]) ==
                          (mb, share, wl) and on(varied, tuple(p.get(k, ABLATION[k])
                                                               for k in varied)) == nm), None)
                cells.append("–" if p is None else
                             f"{f3(p.get('recall_warm'))} / {p.get('reads_cold')} → "
                             f"{p.get('reads_warm')} / {fint(p.get('qps_1'))} / {fint(p.get('qps_2'))}")
        rows.append([nm] + cells + ([refs(rs)] if len(rs) > 1 else []))
    return (table(["techniques on"] + head + (["runs"] if len(rs) > 1 else []), rows)
            + ["", "; ".join(facts) + ". Cells: recall@10 / device reads per query, first pass → "
               "second pass (the same queries again) / QPS with 1 / 2 clients (looping over the "
               "same queries)."]
            + [""] + footnotes(rs))


# Settings a memory run may vary, with their value in runs that did not record them
ABLATION = {"read_list": 0, "page_search": "off", "dynamic_width": "off"}


def _varied(r):
    """The ABLATION settings a memory run compared (more than one value)."""
    pts = r.get("points") or []
    return [k for k, d in ABLATION.items() if len({p.get(k, d) for p in pts}) > 1]


def _ablation(r):
    return bool(_varied(r))


def memory_table(r):
    f = r.get("memory") or {}
    pts = r.get("points") or []
    Ls = sorted({p["L"] for p in pts})
    varied = _varied(r)
    paged = "page_search" in varied
    rows = []

    def setting(p):
        return tuple(p.get(k, d) for k, d in ABLATION.items())
    for budget in dict.fromkeys((p["cache_mb"], p["cache_share"]) for p in pts):
        for wl, mode, st in dict.fromkeys((p["workload"], p.get("mode", "gate"), setting(p))
                                          for p in pts):
            cells = []
            for L in Ls:
                p = next((p for p in pts if (p["cache_mb"], p["cache_share"]) == budget
                          and p["workload"] == wl and p.get("mode", "gate") == mode
                          and setting(p) == st and p["L"] == L), None)
                cells.append("–" if p is None else
                             f"{f3(p.get('recall_warm'))} / {p.get('reads_cold')} → "
                             f"{p.get('reads_warm')} / "
                             + (f"{p.get('page_hits_warm')} / " if paged else "")
                             + f"{fms(p.get('ms_warm'))} / "
                             f"{fint(p.get('qps_1'))} / {fint(p.get('qps_2'))}")
            if any(c != "–" for c in cells):
                vals = dict(zip(ABLATION, st))
                rows.append([f"{fint(budget[0])} MB ({budget[1]:.0%})",
                             (wl if mode == "gate" else f"{wl}, {mode}")
                             + (f", memory walk reading {vals['read_list']}"
                                if vals["read_list"] else "")
                             + "".join(f", {k} {vals[k]}" for k in varied
                                       if k != "read_list")] + cells)
    return (table(["record cache", "workload"] + [f"L = {L}" for L in Ls], rows)
            + ["", f"{f.get('shape')}, {rows_label(f.get('n'))}: index {mib(f.get('index_bytes'))} "
               f"MiB, in-memory stores {mib(f.get('store_bytes'))} MiB, shared_buffers "
               f"{f.get('shared_buffers')}; the device reads {fint(f.get('device_reads_per_s_qd1'))} "
               "random 8 KiB blocks/s at queue depth 1 (O_DIRECT); the kernel's page cache is "
               "emptied before each point. Cells: recall@10 / device reads per query, first pass → "
               "second pass (the same queries again) / "
               + ("records taken from pages read earlier in the scan (page_hits, second pass) / "
                  if paged else "")
               + "ms per query (second pass) / QPS with 1 / 2 "
               "clients (looping over the same queries)."]
            + [""] + footnotes([r]))


def _precision(r):
    m = re.search(r"record_precision\s*=\s*'?(\w+)", (r.get("memory") or {}).get("index_options") or "")
    return m.group(1) if m else None


def t_record_precision(runs):
    """Single against half-precision records on the device (bench/gateann_bench/memory.py
    --gateann-with 'record_precision = ...'): the newest run of each
    precision per shape and size, at each run's smallest L."""
    cand = [r for r in of_kind(runs, "memory") if _precision(r) and not _ablation(r)]
    if not cand:
        return not_measured("`bench/run.sh memory --gateann-with 'record_precision = half'`")
    groups = {}
    for r in cand:
        f = r.get("memory") or {}
        groups.setdefault((f.get("shape"), f.get("n")), {}).setdefault(_precision(r), r)
    out, used = [], []
    for (shape, n), by_prec in groups.items():
        chosen = [by_prec[k] for k in sorted(by_prec, key=lambda k: k != "single")]
        cols = list(dict.fromkeys((p["workload"], p["cache_share"])
                                  for r in chosen for p in r.get("points") or []))
        rows = []
        for r in chosen:
            f, pts = r.get("memory") or {}, r.get("points") or []
            L = min(p["L"] for p in pts)
            cells = []
            for wl, share in cols:
                p = next((p for p in pts if p["L"] == L and p["workload"] == wl
                          and p["cache_share"] == share), None)
                cells.append("–" if p is None else
                             f"{f3(p.get('recall_warm'))} / {p.get('reads_cold')} / "
                             f"{fint(p.get('qps_1'))} / {fint(p.get('qps_2'))}")
            rows.append([_precision(r), mib(f.get("index_bytes")), L] + cells)
            used.append(r)
        out += (([""] if out else [])
                + table(["records", "index MiB", "L"]
                        + [f"{wl}, cache {share:.0%} of the index" for wl, share in cols], rows)
                + ["", f"{shape}, {rows_label(n)}, shared_buffers "
                   f"{chosen[0]['memory'].get('shared_buffers')}, page cache emptied before each "
                   "point. Cells: recall@10 / device reads per query / QPS with 1 / 2 clients."])
    return out + [""] + footnotes(used)


def _kib_mib(kb):
    if kb is None:
        return "–"
    return f"{kb / 1024:,.0f}" if kb >= 100 * 1024 else f"{kb / 1024:.1f}"


def t_build_memory(runs):
    """A table larger than maintenance_work_mem (bench/gateann_bench/build_memory.py): the
    same rows built in memory and in partitions, one row per run with both
    builds side by side; the newest run per (shape, rows, dims)."""
    seen, cand = set(), []
    for r in of_kind(runs, "build_memory"):
        st = r.get("settings") or {}
        key = (st.get("shape"), st.get("n"), st.get("dim"))
        if key not in seen and r.get("builds"):
            seen.add(key)
            cand.append(r)
    if not cand:
        return not_measured("`bench/run.sh build_memory`")
    low_L = min((L for r in cand for L in (r.get("settings") or {}).get("L") or []), default=None)
    rows = []
    cand.sort(key=lambda r: (-(r["settings"].get("n") or 0), r["settings"].get("dim") or 0,
                             r["settings"].get("shape") or ""))
    for r in cand:
        st = r["settings"]
        builds = {b["mode"]: b for b in r.get("builds", [])}
        mem, part = builds.get("in_memory") or {}, builds.get("partitions") or {}
        pts = {(p.get("mode"), str(p.get("L")), p.get("workload")): p for p in r.get("points", [])}

        def pair(L, wl):
            a, b = pts.get(("in_memory", str(L), wl)), pts.get(("partitions", str(L), wl))
            if not a and not b:
                return "–"
            return f"{f3(a and a.get('recall'))} → {f3(b and b.get('recall'))}"

        def both(key, fmt):
            return f"{fmt(mem.get(key))} / {fmt(part.get(key))}"
        state = ""
        for mode, b in (("in memory", mem), ("in partitions", part)):
            if b.get("error"):
                state += f" (**{mode} failed**: {b['error']})"
        if mem.get("partitioned"):
            state += " (**in memory went to partitions**)"
        if part and part.get("partitioned") is False:
            state += " (**did not partition**)"
        z = [pts.get(("partitions", "default", w)) for w in ("none", "cat3")]
        zeros = " / ".join("–" if p is None else str(p.get("zero")) for p in z)
        rows.append([f"{rows_label(st.get('n'))} × {st.get('dim')} {st.get('shape')}{state}",
                     f"{mem.get('maintenance_work_mem', '–')} / {part.get('maintenance_work_mem', '–')}",
                     both("build_s", fms), str(part.get("partitions", "–")),
                     _kib_mib(part.get("peak_memory_kb")),
                     pair("default", "none"), pair("default", "cat3"),
                     pair(low_L, "none"), pair(low_L, "cat3"), zeros, ref(r)])
    return (table(["rows × dims shape", "maintenance_work_mem", "build s", "partitions",
                   "peak MiB", "recall, default L", "`cat = 3`, default L",
                   f"recall, L = {low_L}", f"`cat = 3`, L = {low_L}", "at recall 0", "run"], rows)
            + ["", "Pairs: in memory / in partitions (recall: in memory → in partitions); recall@10 "
               "unfiltered and with `cat = 3` (10 % of the rows), one client, the same rows and "
               "queries for both builds. Peak: the build in partitions' memory context, which "
               "gateann reports at DEBUG1 (sampled per partition). At recall 0: queries of the "
               "build in partitions at the default L, unfiltered / `cat = 3`."]
            + [""] + footnotes(cand))


def t_build_speed(runs):
    """Build time beside pgvector HNSW (bench/gateann_bench/build_speed.py): one row per
    shape and row count, a figure per worker count in each cell, each from the
    newest run that has it."""
    seen, rows, used = set(), [], []
    for r in of_kind(runs, "build_speed"):
        if (r.get("settings") or {}).get("gateann_with"):
            continue            # the default build only
        n = (r.get("settings") or {}).get("n")
        for b in r.get("builds", []):
            key = (b.get("shape"), n, b.get("workers"))
            if key in seen or not b.get("build_s"):
                continue
            seen.add(key)
            rows.append((r, dict(b, n=n)))
            if r not in used:
                used.append(r)
    if not rows:
        return not_measured("`bench/run.sh build_speed`")
    order = {name: i for i, name in enumerate(
        "current_128 sentences_384 clusters_tight_128 clusters_wide_384 anisotropic_128 "
        "duplicates_128 gauss_128".split())}
    workers = sorted({b["workers"] for _, b in rows})
    groups = {}
    for r, b in rows:
        groups.setdefault((b["n"], b["shape"], b["metric"]), {})[b["workers"]] = (r, b)
    keys = sorted(groups, key=lambda k: (-(k[0] or 0), order.get(k[1], 99), k[1], k[2]))
    with_vc = any((b["build_s"] or {}).get("vchordrq") for _, b in rows)

    def fig(r, b, what):
        secs = b["build_s"]
        g, h, v = secs.get("gateann"), secs.get("pgvector"), secs.get("vchordrq")
        pts = {e: {p["L"]: p for p in b.get("points", {}).get(e, [])} for e in secs}

        def rec(e, L):
            p = pts.get(e, {}).get(L)
            return "–" if p is None else f3(p["recall"])

        def zero(e, L):
            p = pts.get(e, {}).get(L)
            return "–" if p is None else str(p["zero"])
        if what == "g":
            return fms(g)
        if what == "h":
            return fms(h)
        if what == "ratio":
            return f"**{g / h:.2f}×**" if g and h and g > h else (f"{g / h:.2f}×" if g and h else "–")
        if what == "v":
            return fms(v)
        if what in (40, 100):
            return f"{rec('gateann', what)} / {rec('pgvector', what)}"
        return f"{zero('gateann', 100)} / {zero('pgvector', 100)}"
    whats = ["g", "h", "ratio"] + (["v"] if with_vc else []) + [40, 100, "zero"]
    out = []
    for k in keys:
        g = groups[k]
        out.append([rows_label(k[0]), k[1], k[2]]
                   + ["; ".join(fig(*g[w], what) if w in g else "–" for w in workers)
                      for what in whats]
                   + [ref(g[workers[0]][0]) if len({g[w][0]["run"] for w in g}) == 1 and
                      workers[0] in g else
                      "; ".join(ref(g[w][0]) if w in g else "–" for w in workers)])
    each = "; ".join("serial" if w == 0 else f"{w} worker{'s' if w > 1 else ''} beside the leader"
                     for w in workers)
    return (table(["rows", "shape", "metric", "gateann s", "HNSW s", "gateann / HNSW"]
                  + (["VectorChord s"] if with_vc else [])
                  + ["recall L = 40: gateann / HNSW", "recall L = 100: gateann / HNSW",
                     "at recall 0, L = 100", "run"], out)
            + ["", f"Each cell and run: {each} (max_parallel_maintenance_workers "
               + "; ".join(str(w) for w in workers) + "). "
               "Build seconds timed by the client, one build at a time, "
               "maintenance_work_mem 4 GB; recall@10 unfiltered, one client, "
               + "/".join(sorted({str((r.get("settings") or {}).get("queries")) for r in used}))
               + " queries not among the rows (gateann.search_list_size / hnsw.ef_search = L; 40 is "
               "pgvector's default, 100 gateann's); a ratio above 1 in bold: gateann slower."]
            + [""] + footnotes(used))


def t_shards(runs):
    """Shards through postgres_fdw (bench/gateann_bench/shards.py): the newest run's rows;
    the rows split by cluster and routed, as columns of the same shard count
    and filter."""
    runs_ = of_kind(runs, "shards")
    if not runs_:
        return not_measured("`bench/run.sh shards`")
    r = runs_[0]
    st = r.get("settings") or {}
    out = []
    routed = {}
    for p in r.get("points", []):
        if p.get("split") == "cluster":
            forms = p.get("forms", {})
            routed[(p["shards"], p["workload"])] = {
                m: f"{f3(forms[f'routed{m}']['recall'])}, {forms[f'routed{m}']['ms_mean']:.2f} ms"
                for m in (1, 2, 4) if forms.get(f"routed{m}") is not None}
    ms = [m for m in (1, 2, 4) if any(m in v for v in routed.values())]
    for p in r.get("points", []):
        forms = p.get("forms", {})
        if p.get("split") == "cluster":
            continue

        def cell(f):
            v = forms.get(f)
            if not v:
                return "–"
            rec = f"{f3(v['recall'])}, " if "recall" in v else ""
            kb = f", {v['kb']:.0f} KB" if "kb" in v else ""
            return f"{rec}{v['ms_mean']:.2f} ms{kb}"
        one = p.get("single")
        rt = routed.pop((p["shards"], p["workload"]), {})
        out.append([str(p["shards"]), p["workload"],
                    f"{f3(one['recall'])}, {one['ms_mean']:.2f} ms" if one else "–",
                    cell("natural"), cell("natural_fetchk"), cell("natural_tuned"), cell("union"),
                    cell("shard")] + [rt.get(m, "–") for m in ms])
    for (n, wl), rt in routed.items():    # routed without a row split by id
        out.append([str(n), wl] + ["–"] * 6 + [rt.get(m, "–") for m in ms])
    return (table(["shards", "filter", "one server, all rows", "natural query", "fetch_size = 10",
                   "fetch_size = 10, cursor_tuple_fraction = 0.001", "UNION ALL, LIMIT per shard",
                   "slowest shard alone"] + [f"split by cluster, routed to m = {m}" for m in ms],
                  out)
            + ["", f"{st.get('shape')}, {rows_label(st.get('n'))} rows split by id over the "
               f"shards (each its own server on this machine, a gateann index on (embedding, "
               f"u10)), {st.get('queries')} queries, LIMIT {st.get('k')}, u10: one of 10 "
               "labels. Cells: recall@10 against the exact top 10 of all rows, mean ms per query "
               "on the coordinator (one client, prepared, the vector bound), KB received from "
               "the shards (rows fetched times their text width: id and the vector). Natural: "
               "the ORDER BY ... LIMIT query on the partitioned table at postgres_fdw's "
               f"fetch_size {st.get('fetch_size')}; slowest shard alone: per query, the slowest "
               "shard's own time for the same query on its server."
               + ("" if not ms else
                  " Split by cluster: the rows split by cluster instead (gateann_kmeans over a "
                  "sample; shard i holds the rows nearest centre i), the tuned natural query "
                  "routed to the nearest m clusters' shards with `cluster IN "
                  "(gateann_nearest_centroid(...), ...)`.")]
            + [""] + footnotes([r]))


def t_scaleout_sim(runs):
    """One global graph over N servers against N graphs (bench/gateann_bench/scaleout_sim.py):
    the newest run, per shape and N."""
    runs_ = of_kind(runs, "scaleout_sim")
    if not runs_:
        return not_measured("`bench/run.sh scaleout_sim`")
    r = runs_[0]
    out = []
    for sh in r.get("shapes", []):
        arms = sh.get("arms", [])
        one = next((a for a in arms if a["arm"] == "one server"), None)
        if one:
            out.append([sh["shape"], "1", f"{f3(one['recall'])}, {one['reads']:.0f} reads",
                        "–", "–", "–", "–", f"{one['qps_model']:,.0f}", "–"])
        for n in sorted({a["servers_total"] for a in arms if a["servers_total"] > 1}):
            of_n = [a for a in arms if a["servers_total"] == n]
            get = {a["arm"]: a for a in of_n}
            hsh, km, sg, sgn = (get.get("global graph, hash"), get.get("global graph, k-means"),
                                get.get("scatter-gather"), get.get("scatter-gather, L / N"))
            routed = [a for a in of_n if a["arm"].startswith("routed")]
            good = next((a for a in sorted(routed, key=lambda a: a["m"]) if a["recall"] >= 0.95),
                        None)

            def glob(a):
                return "–" if a is None else (f"{a['handoffs']:.0f} hand-offs, busiest "
                                              f"{a['busiest']:.0f} reads")
            out.append([sh["shape"], str(n),
                        "–" if sg is None else f"{f3(sg['recall'])}, {sg['reads']:.0f} reads"
                        + ("" if sgn is None else f"; L {sgn['list']}: {f3(sgn['recall'])}, "
                           f"{sgn['reads']:.0f} reads"),
                        glob(hsh), glob(km),
                        "–" if good is None else
                        f"m = {good['m']}: {f3(good['recall'])}, {good['reads']:.0f} reads",
                        " / ".join(f"{f3(a['recall'])}" for a in sorted(routed, key=lambda a: a["m"])),
                        "–" if sg is None else f"{sg['qps_model']:,.0f}"
                        + ("" if sgn is None else f" (L {sgn['list']}: {sgn['qps_model']:,.0f})"),
                        " / ".join("–" if a is None else
                                   f"{a['qps_model']:,.0f} ({a['qps_model_free']:,.0f})"
                                   for a in (hsh, km))
                        + ("" if good is None else f" / routed {good['qps_model']:,.0f}")])
    st = r.get("settings") or {}
    return (table(["shape", "servers", "scatter-gather: recall, reads", "global graph, rows by id",
                   "global graph, rows by k-means", "routed to the nearest m of N",
                   "routed recall, m = 1 / 2 / 4 ...", "modelled QPS, scatter-gather",
                   "modelled QPS: global by id / by k-means (hand-offs free) / routed"], out)
            + ["", f"{rows_label(st.get('n'))} rows a shape, {st.get('queries')} queries, "
               f"L = {st.get('L')}, gateann's graphs at their defaults (exported with "
               "gateann_graph); the walk simulated the same way for every arm (best-first by "
               "exact distance; reads: its expansions). Global graph: one graph, its nodes on N "
               "servers by row id or by the nearest k-means centre, a hand-off each time the "
               "walk's next node is on another server (BatANN); scatter-gather: N graphs of "
               "the rows split by id, each walked for its 10 with the list L and with L / N; routed: N graphs of k-means "
               "clusters, the nearest m walked (the smallest m reaching recall 0.95 shown). "
               "Modelled QPS of the N servers (one core each): N x 1000 / the ms a query costs "
               "over all servers, from one server's measured cost (fixed ms per query and per "
               "read, fitted over L = 20 to 200, warm), a hand-off priced as a query's fixed "
               "cost (in brackets: free, BatANN's best case)."]
            + [""] + footnotes([r]))


def t_memgraph_sim(runs):
    """OctopusANN's MemGraph against the entry points (bench/gateann_bench/memgraph_sim.py):
    the newest run, a row per shape and L, a column per start."""
    runs_ = of_kind(runs, "memgraph_sim")
    if not runs_:
        return not_measured("`bench/run.sh memgraph_sim`")
    r = runs_[0]
    arms = []
    for sh in r.get("shapes", []):
        for a in sh.get("arms", []):
            if a["arm"] not in arms:
                arms.append(a["arm"])
    out = []
    for sh in r.get("shapes", []):
        for L in sorted({a["L"] for a in sh.get("arms", [])}):
            cells = []
            for arm in arms:
                a = next((a for a in sh["arms"] if a["arm"] == arm and a["L"] == L), None)
                cells.append("–" if a is None else
                             f"{f3(a['recall'])} / {a['reads']:.1f} / {a['in_memory']:.0f} / "
                             f"{a['memory_bytes'] / 1024:,.0f} KiB")
            out.append([f"{sh['shape']}, {rows_label(sh.get('n'))}", str(L)] + cells)
    st = r.get("settings") or {}
    return (table(["shape", "L"] + arms, out)
            + ["", "Cells: recall@10 / reads a query / in-memory expansions / memory. "
               f"{st.get('queries')} queries a shape; the walk simulated on gateann's graph "
               "(exported with gateann_graph), best-first by exact distance, its expansions "
               f"counted as reads; entries: the {st.get('seeds')} entry points nearest the query; "
               "memgraph s: a gateann graph on a random share s of the rows, searched in memory "
               f"(list {st.get('mem_L')}) from its own entry points, its {st.get('seeds')} "
               "nearest found as the start."]
            + [""] + footnotes([r]))


TABLES = {
    "memgraph_sim": t_memgraph_sim,
    "scaleout_sim": t_scaleout_sim,
    "shards": t_shards,
    "record_precision": t_record_precision,
    "filter_1m": t_filter,
    "shapes_1m": t_shapes_1m,
    "matrix_100k": lambda runs: t_matrix(runs, 100000),
    "speed_100k": lambda runs: t_speed(runs, 100000),
    "filter_forms": t_filter_forms,
    "plans": t_plans,
    "writes": t_writes,
    "mix": t_mix,
    "fuzz": t_fuzz,
    "eviction": t_eviction,
    "memory_modes": t_memory_modes,
    "memory_walk": t_memory_walk,
    "build_memory": t_build_memory,
    "build_speed": t_build_speed,
}

MARKER = re.compile(r"(<!-- generated: (\w+) -->\n)(.*?)(<!-- end generated -->)", re.S)


def render(page, runs):
    names = []
    _DESCRIBED.clear()
    _TEXTS.clear()

    def sub(m):
        name = m.group(2)
        if name not in TABLES:
            raise SystemExit(f"results_page: unknown table '{name}' in {PAGE}")
        names.append(name)
        body = "\n".join(TABLES[name](runs)).rstrip("\n")
        # a table's caption runs straight into the bullets of its runs
        body = re.sub(r"^((?![|-]).+)\n\n(?=- `)", r"\1\n", body, flags=re.M)
        return f"{m.group(1)}{body}\n{m.group(4)}"
    out = MARKER.sub(sub, page)
    for name in TABLES:
        if name not in names:
            print(f"results_page: table '{name}' has no marker in RESULTS.md", file=sys.stderr)
    return out


def used_runs(text):
    return sorted(set(re.findall(r"`([A-Za-z_]+-[^`\s]+)` [0-9a-f?]{1,7}\+?", text)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--curate", nargs="+", metavar="RUN_DIR",
                    help="write bench/results/curated/<run>.json from these run directories")
    ap.add_argument("--note", help="with --curate: a line shown beside the run on the page")
    ap.add_argument("--curated-only", action="store_true",
                    help="ignore run directories without a curated summary")
    ap.add_argument("--check", action="store_true", help="exit 1 if RESULTS.md would change")
    ap.add_argument("--list", action="store_true", help="print the runs each table uses")
    a = ap.parse_args()

    if a.curate:
        os.makedirs(CURATED, exist_ok=True)
        for d in a.curate:
            s = summarize(d)
            if s is None:
                raise SystemExit(f"results_page: {d}: not a run the page knows how to read")
            dest = os.path.join(CURATED, s["run"] + ".json")
            old = {}
            if os.path.exists(dest):
                with open(dest) as f:
                    old = json.load(f)
            note = a.note if a.note is not None else old.get("note")
            if note:
                s["note"] = note
            head = ("run", "kind", "started", "commit", "dirty", "command", "server",
                    "seconds", "note", "source")
            s = {**{k: s[k] for k in head if k in s}, **{k: v for k, v in s.items() if k not in head}}
            with open(dest, "w") as f:
                f.write(dump(s))
            print(f"wrote {os.path.relpath(dest, REPO)} ({os.path.getsize(dest):,} bytes)")

    runs, raw = load_runs(a.curated_only)
    with open(PAGE) as f:
        page = f.read()
    new = render(page, runs)
    on_page = used_runs(new)
    if a.list:
        for m in MARKER.finditer(new):
            print(f"{m.group(2)}: {', '.join(used_runs(m.group(3))) or '(none)'}")
    uncurated = [r for r in raw if r in on_page]
    if uncurated:
        print("results_page: on the page but not curated (run --curate on them before committing): "
              + ", ".join(uncurated), file=sys.stderr)
    if a.check:
        if new != page:
            print("results_page: bench/RESULTS.md is out of date", file=sys.stderr)
            return 1
        return 0
    if new != page:
        with open(PAGE, "w") as f:
            f.write(new)
        print(f"updated {os.path.relpath(PAGE, REPO)}")
    else:
        print(f"{os.path.relpath(PAGE, REPO)} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
