"""driver.py's output: points.csv, plots and summary.md of a results.json."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from .engines import L_KEYS
from .measure import K


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
        files.append(save_figure(plt, fig, f"{ds}: recall vs QPS", out / f"recall_qps_{ds}.png"))
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
            files.append(save_figure(plt, fig, f"{ds}: per-query cost vs L",
                                     out / f"cost_vs_L_{ds}.png"))
    return files


def save_figure(plt, fig, title: str, path) -> str:
    """Title, lay out, write and close a figure; returns its file name."""
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


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


def main() -> None:
    """Draw a run's plots again from its results.json (plots are not kept in git)."""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("run", type=Path, nargs="+", help="a results directory (holds results.json)")
    a = ap.parse_args()
    for run in a.run:
        results = json.loads((run / "results.json").read_text())
        if results.get("points") and "preset" in results:
            print(run, plot(results, run))
        else:
            print(run, "not a driver.py run: nothing to plot")


if __name__ == "__main__":
    main()
