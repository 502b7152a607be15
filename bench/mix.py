"""Mixed-workload soak (writes issue): inserts, deletes, filtered queries and
VACUUM together for minutes, then a check that nothing was lost.

  python mix.py --out results/x [--n 100000] [--minutes 5] [--clients 2]

On a generated dataset of n rows (bench/gen.py, loaded once):
  1. table m := the first 80% of the rows, CREATE INDEX (embedding, label10);
  2. pgbench for --minutes with --clients clients, weighted scripts:
       insert@5  a row with the vector and label of one of the other 20%
                 (taken round-robin, so vectors repeat once they are used up),
       delete@3  a random id (a no-op when it is gone),
       query@10  10 nearest rows with label10 = a random label to a query
                 vector of the dataset;
     and, meanwhile, VACUUM m every --vacuum-every seconds from another
     connection;
  3. VACUUM, gateann_verify (must be clean), live nodes against the table,
     and "lost rows": of a sample of rows (rows inserted during the run
     and older ones, --sample of each), those whose nearest row by the index
     is not at distance 0 (search list 100; inserted vectors repeat, so a
     row may find its twin).
pgbench must report no failed transaction.  Writes summary.md and
results.json into --out.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import base_table, connect, git_facts, index_facts, log, machine_facts, write_json
from gen import DatasetSpec, load


def vacuum_loop(stop: threading.Event, every: float, done: list, errors: list) -> None:
    conn = connect()
    while not stop.wait(every):
        t0 = time.monotonic()
        try:
            conn.execute("VACUUM m")
            done.append(round(time.monotonic() - t0, 2))
        except Exception as e:  # reported, and fails the run
            errors.append(str(e))
    conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--vacuum-every", type=float, default=30.0)
    ap.add_argument("--sample", type=int, default=3000)
    ap.add_argument("--pgbench", default=os.environ.get("PGBENCH", "pgbench"))
    ap.add_argument("--command", default=" ".join(sys.argv))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)

    spec = DatasetSpec(n=a.n, dim=a.dim)
    load(spec)
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    base = int(a.n * 0.8)
    res = {"command": a.command, "machine": machine_facts(), "git": git_facts(),
           "server": conn.execute("SELECT version()").fetchone()[0],
           "dataset": spec.key(), "base_rows": base, "minutes": a.minutes,
           "clients": a.clients, "vacuum_every_s": a.vacuum_every}

    res["build_seconds"] = base_table(conn, spec.table, "m", base, "1GB")
    res["before"] = index_facts(conn, "m_idx")
    conn.execute("DROP SEQUENCE IF EXISTS m_id")
    conn.execute("CREATE SEQUENCE m_id START 10000001")
    first_new = 10000001
    nspare = a.n - base
    nq = conn.execute(f"SELECT count(*) FROM {spec.qtable}").fetchone()[0]

    scripts = {
        "insert": (5, f"""\\set k random(0, {nspare - 1})
INSERT INTO m SELECT nextval('m_id'), label10, embedding FROM {spec.table} WHERE id = {base} + :k;
"""),
        "delete": (3, f"""\\set id random(1, {base - 1})
DELETE FROM m WHERE id = :id;
"""),
        "query": (10, f"""\\set q random(1, {nq})
\\set lab random(0, 9)
SET enable_seqscan = off;
SELECT id FROM m WHERE label10 = :lab
  ORDER BY embedding <-> (SELECT embedding FROM {spec.qtable} WHERE qid = :q) LIMIT 10;
"""),
    }
    paths = []
    cmd = [a.pgbench, "-n", "-c", str(a.clients), "-j", str(a.clients),
           "-T", str(int(a.minutes * 60))]
    for name, (weight, text) in scripts.items():
        with tempfile.NamedTemporaryFile("w", suffix=f"_{name}.sql", delete=False) as f:
            f.write(text)
        os.chmod(f.name, 0o644)
        paths.append(f.name)
        cmd += ["-f", f"{f.name}@{weight}"]

    stop = threading.Event()
    vacuums: list = []
    vacuum_errors: list = []
    th = threading.Thread(target=vacuum_loop, args=(stop, a.vacuum_every, vacuums, vacuum_errors))
    log(f"pgbench mix for {a.minutes} min, {a.clients} clients, VACUUM every {a.vacuum_every}s")
    th.start()
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    stop.set()
    th.join()
    for p in paths:
        os.unlink(p)
    (a.out / "pgbench.log").write_text(out.stdout + "\n--- stderr ---\n" + out.stderr)
    per_script = {}
    for m in re.finditer(r"SQL script \d+: \S+_(insert|delete|query)\.sql\n"
                         r" - weight: \d+ \([^)]*\)\n - (\d+) transactions \([^)]*tps = ([0-9.]+)\)",
                         out.stdout):
        per_script[m.group(1)] = {"transactions": int(m.group(2)), "tps": float(m.group(3))}
    failed = re.search(r"number of failed transactions: (\d+)", out.stdout)
    res["pgbench"] = {"exit_code": out.returncode, "seconds": round(elapsed, 1),
                      "failed_transactions": int(failed.group(1)) if failed else None,
                      "errors_in_stderr": len(re.findall(r"ERROR|FATAL|PANIC", out.stderr)),
                      "per_script": per_script}
    res["vacuums"] = {"count": len(vacuums), "seconds": vacuums, "errors": vacuum_errors}
    log(f"  pgbench exit {out.returncode}, per script {per_script}, {len(vacuums)} VACUUMs")

    log("final VACUUM, gateann_verify, lost rows")
    res["during"] = index_facts(conn, "m_idx")
    t0 = time.monotonic()
    conn.execute("VACUUM m")
    res["final_vacuum_seconds"] = round(time.monotonic() - t0, 1)
    res["after"] = index_facts(conn, "m_idx")
    res["table_rows"] = conn.execute("SELECT count(*) FROM m").fetchone()[0]
    res["verify_problems"] = [r[0] for r in conn.execute("SELECT * FROM gateann_verify('m_idx')")]
    res["inserted"] = conn.execute("SELECT count(*) FROM m WHERE id >= %s", (first_new,)).fetchone()[0]
    conn.execute("SET enable_seqscan = off; SET gateann.search_list_size = 100")
    t0 = time.monotonic()
    lost = conn.execute(f"""
        SELECT count(*) FILTER (WHERE (SELECT o.embedding <-> s.embedding FROM m o
                                       ORDER BY o.embedding <-> s.embedding LIMIT 1) > 0),
               count(*)
          FROM ((SELECT embedding FROM m WHERE id >= %s ORDER BY hashint4(id::int) LIMIT %s)
                UNION ALL
                (SELECT embedding FROM m WHERE id < %s ORDER BY hashint4(id::int) LIMIT %s)) s""",
                        (first_new, a.sample, first_new, a.sample)).fetchone()
    res["lost_rows"] = {"lost": lost[0], "checked": lost[1],
                        "seconds": round(time.monotonic() - t0, 1)}
    ok = (out.returncode == 0 and res["pgbench"]["failed_transactions"] in (0, None)
          and res["pgbench"]["errors_in_stderr"] == 0 and not vacuum_errors
          and not res["verify_problems"] and lost[0] == 0
          and res["after"]["live_nodes"] == res["table_rows"])
    res["ok"] = ok
    write_json(a.out / "results.json", res)

    lines = [f"# gateann mixed-workload soak — {spec.name}", "",
             f"- command: `{a.command}`",
             f"- machine: {res['machine'].get('cpu_model', '?')}, {res['machine'].get('cores', '?')} cores, "
             f"{res['machine'].get('ram_gib', '?')} GiB RAM",
             f"- server: {res['server']}",
             f"- git: {res['git'].get('commit', '?')}{' (working tree changed)' if res['git'].get('dirty') else ''}", "",
             f"Table of {base} rows, index built in {res['build_seconds']} s; pgbench "
             f"{res['pgbench']['seconds']} s with {a.clients} clients; VACUUM every "
             f"{a.vacuum_every} s from another connection ({len(vacuums)} ran, longest "
             f"{max(vacuums) if vacuums else 0} s).", "",
             "| script | transactions | tps |", "|---|---|---|"]
    for name in ("insert", "delete", "query"):
        p = per_script.get(name, {})
        lines.append(f"| {name} | {p.get('transactions', '?')} | {p.get('tps', '?')} |")
    lines += ["", "| | nodes | live nodes | deleted | free slots | index size |", "|---|---|---|---|---|---|"]
    for step in ("before", "during", "after"):
        f = res[step]
        lines.append(f"| {step} | {f['nodes']} | {f['live_nodes']} | {f['deleted_nodes']} | "
                     f"{f['free_slots']} | {f['index_bytes'] // (1024 * 1024)} MiB |")
    lines += ["",
              f"- pgbench exit code {out.returncode}, failed transactions "
              f"{res['pgbench']['failed_transactions']}, ERROR/FATAL/PANIC lines in its stderr "
              f"{res['pgbench']['errors_in_stderr']}; VACUUM errors {len(vacuum_errors)}",
              f"- table rows after: {res['table_rows']} ({res['inserted']} inserted during the run); "
              f"live index nodes {res['after']['live_nodes']}",
              f"- gateann_verify: {len(res['verify_problems'])} problems",
              f"- lost rows: {lost[0]} of {lost[1]} checked ({a.sample} of the inserted rows and "
              f"{a.sample} older ones, or all there are)",
              f"- **{'OK' if ok else 'FAILED'}**"]
    (a.out / "summary.md").write_text("\n".join(lines) + "\n")
    log("\n".join(lines))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
