"""Writes benchmark (writes issue): insert throughput and recall after churn.

  python3 -m gateann_bench writes --out results/x [--n 1000000] [--dim 128] [--queries 100]

On a generated dataset of n rows (bench/gateann_bench/gen.py, loaded once):
  1. table w := the first 80% of the rows; CREATE INDEX (embedding, label10);
  2. insert 20% more rows (ids from the remaining 20%) with pgbench, first with
     1 client, then with 2: rows/s for each;
  3. delete 20% of the original rows (every 5th id) and VACUUM (which
     consolidates the graph around them and frees their slots);
  4. recall@10 (unfiltered and label10 = q) at several L on the churned index,
     against exact search on the table (sequential scans), and the same on a
     fresh build of the same rows (a copy of the table);
  5. insert the deleted rows again (2 clients): they take the freed slots;
  6. recall of the churned index again, and after a REINDEX;
  7. when the server has pgvector: the same base rows in a vector column with
     an HNSW index (m 16, ef_construction 64), the same rows inserted with 1
     and then 2 clients: pgvector's rows/s beside gateann's (step 2); then the
     same rows deleted and VACUUM timed (step 3).
Index size and node/deleted/free counts are recorded after every step.
Writes summary.md and results.json into --out.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import base_table, connect, git_facts, index_facts, log, machine_facts, write_json
from .gen import DatasetSpec, load

L_VALUES = [50, 100, 200]


def run_pgbench(pgbench: str, script: str, clients: int, transactions: int) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
        path = f.name
    os.chmod(path, 0o644)
    cmd = [pgbench, "-n", "-f", path, "-c", str(clients), "-j", str(clients),
           "-t", str(transactions)]
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    os.unlink(path)
    if out.returncode != 0:
        raise RuntimeError(f"pgbench failed: {out.stderr}")
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out.stdout)
    tps = float(m.group(1)) if m else clients * transactions / elapsed
    return {"clients": clients, "rows": clients * transactions, "seconds": round(elapsed, 2),
            "rows_per_second": round(tps, 1), "command": " ".join(cmd[:1] + cmd[2:3] + ["<script>"] + cmd[4:])}


def exact_results(conn, qtable: str, nq: int, tab: str = "w") -> dict:
    """Exact top-10 per query, unfiltered and label10 = qid % 10, by sequential scan."""
    conn.execute("SET enable_indexscan = off; SET enable_bitmapscan = off")
    res = {"unfiltered": [], "label10": []}
    for q in range(1, nq + 1):
        res["unfiltered"].append([r[0] for r in conn.execute(
            f"SELECT id FROM {tab} ORDER BY embedding <-> (SELECT embedding FROM {qtable} WHERE qid = %s) "
            "LIMIT 10", (q,))])
        res["label10"].append([r[0] for r in conn.execute(
            f"SELECT id FROM {tab} WHERE label10 = %s ORDER BY embedding <-> "
            f"(SELECT embedding FROM {qtable} WHERE qid = %s) LIMIT 10", (q % 10, q))])
    conn.execute("RESET enable_indexscan; RESET enable_bitmapscan")
    return res


def measure_recall(conn, qtable: str, nq: int, truth: dict, tab: str = "w") -> list[dict]:
    conn.execute("SET enable_seqscan = off")
    plan = "\n".join(r[0] for r in conn.execute(
        f"EXPLAIN SELECT id FROM {tab} ORDER BY embedding <-> (SELECT embedding FROM {qtable} "
        "WHERE qid = %s) LIMIT 10", (1,)))
    log(plan)
    if f"{tab}_idx" not in plan:
        raise RuntimeError(f"the planner does not use the gateann index:\n{plan}")
    points = []
    for L in L_VALUES:
        conn.execute(f"SET gateann.search_list_size = {L}")
        for wl in ("unfiltered", "label10"):
            hits = total = 0
            t0 = time.monotonic()
            for q in range(1, nq + 1):
                if wl == "unfiltered":
                    got = [r[0] for r in conn.execute(
                        f"SELECT id FROM {tab} ORDER BY embedding <-> (SELECT embedding FROM {qtable} "
                        "WHERE qid = %s) LIMIT 10", (q,))]
                else:
                    got = [r[0] for r in conn.execute(
                        f"SELECT id FROM {tab} WHERE label10 = %s ORDER BY embedding <-> "
                        f"(SELECT embedding FROM {qtable} WHERE qid = %s) LIMIT 10", (q % 10, q))]
                exact = truth[wl][q - 1]
                hits += len(set(got) & set(exact))
                total += len(exact)
            points.append({"L": L, "workload": wl, "recall": round(hits / total, 4),
                           "mean_ms": round((time.monotonic() - t0) * 1000 / nq, 2)})
            log(f"  L={L} {wl}: recall@10 {hits / total:.4f}")
    conn.execute("RESET gateann.search_list_size; RESET enable_seqscan")
    return points


def pgvector_inserts(conn, a, spec, base: int, one: int, two: int) -> dict:
    """Step 7: the base rows under pgvector's HNSW, then the rows gateann got in
    step 2 inserted the same way (1 client, then 2)."""
    log("pgvector: the same base rows, HNSW index, the same inserts")
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute("DROP TABLE IF EXISTS wv")
    conn.execute(f"CREATE TABLE wv AS SELECT id, label10, embedding::vector({a.dim}) AS embedding "
                 f"FROM {spec.table} WHERE id < %s", (base,))
    conn.execute("ALTER TABLE wv ADD PRIMARY KEY (id)")
    conn.execute("VACUUM ANALYZE wv")
    conn.execute("SET maintenance_work_mem = '4GB'")
    t0 = time.monotonic()
    conn.execute("CREATE INDEX wv_idx ON wv USING hnsw (embedding vector_l2_ops) "
                 "WITH (m = 16, ef_construction = 64)")
    out = {"build_seconds": round(time.monotonic() - t0, 1)}
    conn.execute("DROP SEQUENCE IF EXISTS wv_next")
    conn.execute(f"CREATE SEQUENCE wv_next START {base}")
    script = (f"INSERT INTO wv SELECT id, label10, embedding::vector FROM {spec.table} "
              "WHERE id = (SELECT nextval('wv_next'));\n")
    out["insert_c1"] = run_pgbench(a.pgbench, script, 1, one)
    log(f"  pgvector 1 client: {out['insert_c1']['rows_per_second']} rows/s")
    out["insert_c2"] = run_pgbench(a.pgbench, script, 2, two)
    log(f"  pgvector 2 clients: {out['insert_c2']['rows_per_second']} rows/s")
    conn.execute("DELETE FROM wv WHERE id < %s AND id %% 5 = 0", (base,))
    t0 = time.monotonic()
    conn.execute("VACUUM wv")
    out["vacuum_seconds"] = round(time.monotonic() - t0, 1)
    log(f"  pgvector: delete every 5th original row, VACUUM {out['vacuum_seconds']} s")
    conn.execute("DROP TABLE wv")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--pgbench", default=os.environ.get("PGBENCH", "pgbench"))
    ap.add_argument("--command", default=" ".join(sys.argv))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)

    spec = DatasetSpec(n=a.n, dim=a.dim)
    load(spec)
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    base = int(a.n * 0.8)
    grow = base // 5
    res = {"command": a.command, "machine": machine_facts(), "git": git_facts(),
           "server": conn.execute("SELECT version()").fetchone()[0],
           "dataset": spec.key(), "base_rows": base, "inserted_rows": grow,
           "deleted_rows": base // 5, "steps": {}}

    seconds = base_table(conn, spec.table, "w", base, "4GB")
    res["steps"]["build"] = {"seconds": seconds, **index_facts(conn, "w_idx")}
    conn.execute("SELECT gateann_prewarm('w_idx')")
    # without shared_preload_libraries every backend keeps a private copy of the stores
    res["shared_preload_libraries"] = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
    res["stores_shared"] = conn.execute(
        "SELECT shared FROM gateann_index_info('w_idx')").fetchone()[0]

    # inserts: ids base .. base+grow-1 taken from a sequence, 1/4 with 1 client, 3/4 with 2
    conn.execute("DROP SEQUENCE IF EXISTS w_next")
    conn.execute(f"CREATE SEQUENCE w_next START {base}")
    script = (f"INSERT INTO w SELECT id, label10, embedding FROM {spec.table} "
              "WHERE id = (SELECT nextval('w_next'));\n")
    one = grow // 4
    two = (grow - one) // 2
    log(f"inserting {one} rows with 1 client")
    res["steps"]["insert_c1"] = run_pgbench(a.pgbench, script, 1, one)
    log(f"  {res['steps']['insert_c1']['rows_per_second']} rows/s")
    log(f"inserting {2 * two} rows with 2 clients")
    res["steps"]["insert_c2"] = run_pgbench(a.pgbench, script, 2, two)
    log(f"  {res['steps']['insert_c2']['rows_per_second']} rows/s")
    res["steps"]["after_inserts"] = index_facts(conn, "w_idx")

    log("deleting every 5th original row, VACUUM")
    conn.execute("DELETE FROM w WHERE id < %s AND id %% 5 = 0", (base,))
    t0 = time.monotonic()
    conn.execute("VACUUM w")
    res["steps"]["vacuum"] = {"seconds": round(time.monotonic() - t0, 1), **index_facts(conn, "w_idx")}
    res["final_rows"] = conn.execute("SELECT count(*) FROM w").fetchone()[0]

    log(f"exact results for {a.queries} queries (sequential scans)")
    truth = exact_results(conn, spec.qtable, a.queries)
    log("recall of the churned index")
    res["churned"] = measure_recall(conn, spec.qtable, a.queries, truth)

    log("fresh build of the same rows (a copy of the table)")
    conn.execute("DROP TABLE IF EXISTS wf")
    conn.execute("CREATE TABLE wf AS SELECT * FROM w")
    conn.execute("VACUUM ANALYZE wf")
    t0 = time.monotonic()
    conn.execute("CREATE INDEX wf_idx ON wf USING gateann (embedding, label10)")
    res["steps"]["fresh"] = {"seconds": round(time.monotonic() - t0, 1), **index_facts(conn, "wf_idx")}
    conn.execute("SELECT gateann_prewarm('wf_idx')")
    res["fresh"] = measure_recall(conn, spec.qtable, a.queries, truth, tab="wf")
    conn.execute("DROP TABLE wf")

    # the deleted rows again: they take the freed slots
    deleted = res["deleted_rows"]
    conn.execute("DROP SEQUENCE IF EXISTS w_again")
    conn.execute("CREATE SEQUENCE w_again START 0 MINVALUE 0")
    script = (f"INSERT INTO w SELECT id, label10, embedding FROM {spec.table} "
              "WHERE id = (SELECT nextval('w_again') * 5);\n")
    log(f"inserting the {deleted} deleted rows again with 2 clients")
    res["steps"]["reinsert_c2"] = run_pgbench(a.pgbench, script, 2, deleted // 2)
    log(f"  {res['steps']['reinsert_c2']['rows_per_second']} rows/s")
    res["steps"]["after_reinsert"] = index_facts(conn, "w_idx")
    res["reinserted_rows_final"] = conn.execute("SELECT count(*) FROM w").fetchone()[0]
    log("exact results and recall after the reinsert, then after REINDEX")
    truth2 = exact_results(conn, spec.qtable, a.queries)
    res["churned_reinsert"] = measure_recall(conn, spec.qtable, a.queries, truth2)

    t0 = time.monotonic()
    conn.execute("REINDEX INDEX w_idx")
    res["steps"]["reindex"] = {"seconds": round(time.monotonic() - t0, 1), **index_facts(conn, "w_idx")}
    conn.execute("SELECT gateann_prewarm('w_idx')")
    res["fresh_reinsert"] = measure_recall(conn, spec.qtable, a.queries, truth2)

    if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
        res["pgvector"] = pgvector_inserts(conn, a, spec, base, one, two)

    write_json(a.out / "results.json", res)
    st = res["steps"]
    mib = lambda b: f"{b / 2**20:.0f} MiB"
    lines = [f"# gateann writes benchmark — {spec.name}", "",
             f"- command: `{a.command}`",
             f"- machine: {res['machine'].get('cpu_model', '?')}, {res['machine'].get('cores', '?')} cores, "
             f"{res['machine'].get('ram_gib', '?')} GiB RAM",
             f"- server: {res['server'].split(',')[0]}",
             f"- git: {res['git'].get('commit', '?')}",
             f"- shared_preload_libraries = '{res['shared_preload_libraries']}' "
             f"(stores {'shared' if res['stores_shared'] else 'private to each backend'})", "",
             "| step | rows/s or seconds | nodes | deleted | free slots | index size |",
             "|---|---|---|---|---|---|",
             f"| build on {base} rows | {st['build']['seconds']} s | {st['build']['nodes']} | 0 | 0 | {mib(st['build']['index_bytes'])} |",
             f"| insert {st['insert_c1']['rows']} rows, 1 client | {st['insert_c1']['rows_per_second']} rows/s | | | | |",
             f"| insert {st['insert_c2']['rows']} rows, 2 clients | {st['insert_c2']['rows_per_second']} rows/s | {st['after_inserts']['nodes']} | {st['after_inserts']['deleted_nodes']} | {st['after_inserts']['free_slots']} | {mib(st['after_inserts']['index_bytes'])} |",
             f"| delete {res['deleted_rows']} + VACUUM | {st['vacuum']['seconds']} s | {st['vacuum']['nodes']} | {st['vacuum']['deleted_nodes']} | {st['vacuum']['free_slots']} | {mib(st['vacuum']['index_bytes'])} |",
             f"| fresh build of those {res['final_rows']} rows | {st['fresh']['seconds']} s | {st['fresh']['nodes']} | 0 | 0 | {mib(st['fresh']['index_bytes'])} |",
             f"| insert the {st['reinsert_c2']['rows']} deleted rows again, 2 clients | {st['reinsert_c2']['rows_per_second']} rows/s | {st['after_reinsert']['nodes']} | {st['after_reinsert']['deleted_nodes']} | {st['after_reinsert']['free_slots']} | {mib(st['after_reinsert']['index_bytes'])} |",
             f"| REINDEX ({res['reinserted_rows_final']} rows) | {st['reindex']['seconds']} s | {st['reindex']['nodes']} | 0 | 0 | {mib(st['reindex']['index_bytes'])} |",
             "", "After the inserts, deletes and VACUUM, against a fresh build of the same rows:", "",
             "| workload | L | recall@10 churned | recall@10 fresh | difference | mean ms churned / fresh |",
             "|---|---|---|---|---|---|"]
    for c, f in zip(res["churned"], res["fresh"]):
        lines.append(f"| {c['workload']} | {c['L']} | {c['recall']:.4f} | {f['recall']:.4f} | "
                     f"{c['recall'] - f['recall']:+.4f} | {c['mean_ms']} / {f['mean_ms']} |")
    lines += ["", "After inserting the deleted rows again (into freed slots), against REINDEX:", "",
              "| workload | L | recall@10 churned | recall@10 fresh | difference | mean ms churned / fresh |",
              "|---|---|---|---|---|---|"]
    for c, f in zip(res["churned_reinsert"], res["fresh_reinsert"]):
        lines.append(f"| {c['workload']} | {c['L']} | {c['recall']:.4f} | {f['recall']:.4f} | "
                     f"{c['recall'] - f['recall']:+.4f} | {c['mean_ms']} / {f['mean_ms']} |")
    if "pgvector" in res:
        pv = res["pgvector"]
        lines += ["", "Inserts beside pgvector HNSW (m 16, ef_construction 64) on the same base rows, "
                  "the same rows inserted (step 2 for gateann):", "",
                  "| index | build s | rows/s, 1 client | rows/s, 2 clients | delete 20 % + VACUUM s |",
                  "|---|---|---|---|---|",
                  f"| gateann | {st['build']['seconds']} | {st['insert_c1']['rows_per_second']} | "
                  f"{st['insert_c2']['rows_per_second']} | {st['vacuum']['seconds']} |",
                  f"| pgvector HNSW | {pv['build_seconds']} | {pv['insert_c1']['rows_per_second']} | "
                  f"{pv['insert_c2']['rows_per_second']} | {pv.get('vacuum_seconds', '–')} |"]
    (a.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
