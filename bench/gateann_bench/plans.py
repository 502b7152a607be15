#!/usr/bin/env python3
"""Which plan the planner chooses for a filtered nearest-neighbour query, and
whether it is the fastest one.

One table per size (--sizes, rows of bench/gateann_bench/gen.py's 128-dimension data) with
filter columns of selectivity 0.01 %, 0.1 %, 1 %, 10 % and 50 % (s0001 ...
s50: value = row % (1 / selectivity)), each with a btree index, and a gateann
index over the vector and those columns; two more columns of 1 % and 10 %
(x1, x10) have btree indexes but are not in the gateann index, so a filter on
them is the executor's (above a gateann scan, or a btree scan and a sort).

For each filter (and none), over --queries query vectors and filter values,
`SELECT id FROM t WHERE <filter> ORDER BY v <-> q LIMIT 10`:
  chosen    the plan the planner picks (gateann, btree + sort, seq scan + sort)
  forced    the same query with each plan forced (the other indexes dropped in
            a transaction that is rolled back; seq scan: index scans off)
  ms        mean time per query of each plan, the statement alone timed,
            after one untimed pass
  recall    recall@10 of the chosen plan against the sequential scan's rows

CLI: python3 -m gateann_bench plans --out DIR [--sizes 5000,100000] [--queries 50]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .common import connect, git_facts, log, machine_facts, write_json

FILTERS = [("none", None, 0), ("s0001", "s0001", 0.0001), ("s001", "s001", 0.001),
           ("s01", "s01", 0.01), ("s1", "s1", 0.1), ("s5", "s5", 0.5),
           ("x1 (executor)", "x1", 0.01), ("x10 (executor)", "x10", 0.1)]
PUSHED = ["s0001", "s001", "s01", "s1", "s5"]
EXECUTOR = ["x1", "x10"]
K = 10


def load(conn, table: str, n: int) -> np.ndarray:
    from .shapes import SHAPES, generate
    data = generate(SHAPES["current_128"], n, 200)
    x = data["vectors"]
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    cols = ", ".join(f"{c} int" for c in PUSHED + EXECUTOR)
    conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, {cols}, v real[])")
    mods = {"s0001": 10000, "s001": 1000, "s01": 100, "s1": 10, "s5": 2, "x1": 100, "x10": 10}
    with conn.cursor() as cur, cur.copy(f"COPY {table} (id, {', '.join(mods)}, v) FROM STDIN") as cp:
        for i in range(n):
            # x1 / x10 are shuffled apart from s01 / s1 (another stride)
            vals = [(i if not c.startswith("x") else i * 7 + 3) % m for c, m in mods.items()]
            cp.write_row([i + 1] + vals + ["{" + ",".join(f"{f:.6g}" for f in x[i]) + "}"])
    for c in mods:
        conn.execute(f"CREATE INDEX {table}_{c} ON {table} ({c})")
    conn.execute("SET maintenance_work_mem = '2GB'")
    conn.execute(f"CREATE INDEX {table}_gateann ON {table} USING gateann (v, {', '.join(PUSHED)})")
    conn.execute(f"VACUUM ANALYZE {table}")
    return data["queries"]


def plan_of(conn, sql: str, table: str) -> str:
    text = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql).fetchall())
    if f"{table}_gateann" in text:
        return "gateann"
    if "Index Scan" in text or "Bitmap" in text:
        return "btree + sort"
    return "seq scan + sort"


def plan_cost(conn, sql: str) -> float:
    return conn.execute("EXPLAIN (FORMAT JSON) " + sql).fetchone()[0][0]["Plan"]["Total Cost"]


def timed(conn, statements: list[str]) -> tuple[float, list[list[int]]]:
    for sql in statements[:5]:
        conn.execute(sql).fetchall()
    spent, found = 0.0, []
    for sql in statements:
        t0 = time.monotonic()
        rows = conn.execute(sql).fetchall()
        spent += time.monotonic() - t0
        found.append([r[0] for r in rows])
    return spent * 1000 / len(statements), found


def forced(conn, table: str, plan: str, statements: list[str]):
    """(ms, rows) of the statements with `plan` forced, or None if it cannot be."""
    conn.execute("BEGIN")
    try:
        if plan == "seq scan + sort":
            conn.execute("SET LOCAL enable_indexscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
        else:
            drop = [f"{table}_gateann"] if plan == "btree + sort" else \
                   [f"{table}_{c}" for c in PUSHED + EXECUTOR]
            for idx in drop:
                conn.execute(f"DROP INDEX {idx}")
            conn.execute("SET LOCAL enable_seqscan = off")
        if plan_of(conn, statements[0], table) != plan:
            return None
        return timed(conn, statements) + (plan_cost(conn, statements[0]),)
    finally:
        conn.execute("ROLLBACK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="")
    ap.add_argument("--sizes", default="5000,100000")
    ap.add_argument("--queries", type=int, default=50)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    results = {"kind": "plans", "command": a.command, "git": git_facts(), "machine": machine_facts(),
               "server": conn.execute("SELECT version()").fetchone()[0],
               "settings": {s: conn.execute(f"SHOW {s}").fetchone()[0]
                            for s in ("effective_cache_size", "random_page_cost",
                                      "gateann.search_list_size", "gateann.prefilter_selectivity")},
               "points": []}
    rng = np.random.default_rng(7)
    t0 = time.monotonic()
    for n in [int(s) for s in a.sizes.split(",")]:
        table = f"plans_{n}"
        log(f"loading {n} rows")
        q = load(conn, table, n)
        for label, col, sel in FILTERS:
            stmts = []
            for i in range(a.queries):
                vec = "'{" + ",".join(f"{f:.6g}" for f in q[i % len(q)]) + "}'"
                where = ""
                if col:
                    where = f"WHERE {col} = {int(rng.integers(0, round(1 / sel)))}"
                stmts.append(f"SELECT id FROM {table} {where} ORDER BY v <-> {vec} LIMIT {K}")
            chosen = plan_of(conn, stmts[0], table)
            pt = {"rows": n, "filter": label, "selectivity": sel, "chosen": chosen, "ms": {}}
            exact = None
            for plan in ("gateann", "btree + sort", "seq scan + sort"):
                if plan == "btree + sort" and not col:
                    continue
                r = forced(conn, table, plan, stmts)
                if r is None:
                    continue
                pt["ms"][plan] = round(r[0], 3)
                pt.setdefault("cost", {})[plan] = round(r[2], 1)
                if plan == "seq scan + sort":
                    exact = r[1]
            ms_chosen, found = timed(conn, stmts)
            pt["ms_chosen"] = round(ms_chosen, 3)
            if exact:
                hits = [len(set(f) & set(e)) / max(1, min(K, len(e))) for f, e in zip(found, exact) if e]
                pt["recall"] = round(float(np.mean(hits)), 4) if hits else None
            best = min(pt["ms"].values())
            pt["chosen_over_best"] = round(pt["ms"].get(chosen, ms_chosen) / best, 2)
            results["points"].append(pt)
            log(f"{n:>7} {label:15} chosen {chosen:16} " +
                " ".join(f"{k} {v:.2f} ms ({pt['cost'][k]:.0f})" for k, v in pt["ms"].items()) +
                f"  ratio {pt['chosen_over_best']:.2f} recall {pt.get('recall')}")
        conn.execute(f"DROP TABLE {table}")
    results["seconds"] = round(time.monotonic() - t0, 1)
    write_json(out / "results.json", results)
    lines = [f"# plans — `{a.command}`", "", f"- git: {results['git']['commit']}", "",
             "| rows | filter | chosen | chosen / best | recall | " +
             " | ".join(["gateann ms", "btree + sort ms", "seq scan + sort ms"]) + " |",
             "|---|---|---|---|---|---|---|---|"]
    for p in results["points"]:
        lines.append(f"| {p['rows']} | {p['filter']} | {p['chosen']} | {p['chosen_over_best']} | "
                     f"{p.get('recall')} | " + " | ".join(str(p['ms'].get(k, '–')) for k in
                                                         ("gateann", "btree + sort", "seq scan + sort"))
                     + " |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    log(f"done: {out / 'summary.md'}")
    print(json.dumps(results["settings"]))


if __name__ == "__main__":
    main()
