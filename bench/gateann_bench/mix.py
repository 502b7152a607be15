"""Mixed-workload soak: inserts, updates, deletes, filtered queries, VACUUM,
REINDEX CONCURRENTLY and ALTER INDEX together for minutes, with kill -9 of a
writing backend now and then, then a check that nothing was lost.

  python3 -m gateann_bench mix --out results/x [--n 100000] [--minutes 5] [--clients 2]
                               [--maint-every 30] [--kill-every 0]

On a generated dataset of n rows (bench/gateann_bench/gen.py, loaded once):
  1. table m := the first 80% of the rows, CREATE INDEX (embedding, label10);
  2. pgbench for --minutes with --clients clients, weighted scripts:
       insert@5  a row with the vector and label of one of the other 20%
                 (taken round-robin, so vectors repeat once they are used up),
       update@2  a random id gets the vector of one of the other 20% (a new
                 index entry: the vector column changes),
       delete@3  a random id (a no-op when it is gone),
       query@10  10 nearest rows with label10 = a random label to a query
                 vector of the dataset;
     and, meanwhile, from another connection every --vacuum-every seconds,
     in turn: VACUUM m, REINDEX INDEX CONCURRENTLY m_idx, VACUUM m,
     ALTER INDEX m_idx SET (tunnel_neighbors = 16 | 32);
     with --kill-every N, pgbench runs in N-second segments and each ends
     with kill -9 of a backend running an INSERT or UPDATE (the server
     restarts all backends; the clients of that segment lose their
     connections, which is expected and counted apart from errors);
  3. VACUUM, gateann_verify (must be clean), live nodes against the table,
     and "lost rows": of a sample of rows (rows inserted during the run
     and older ones, --sample of each), those whose nearest row by the index
     is not at distance 0 (search list 100; inserted vectors repeat, so a
     row may find its twin).
pgbench must report no failed transaction outside the killed moments.  Writes summary.md and
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

from .common import base_table, connect, git_facts, index_facts, log, machine_facts, write_json
from .gen import DatasetSpec, load


MAINTENANCE = ["VACUUM m", "REINDEX INDEX CONCURRENTLY m_idx", "VACUUM m",
               "ALTER INDEX m_idx SET (tunnel_neighbors = {tn})"]

# what a client sees when the server restarts after a kill -9 (not a failure)
CRASH_NOISE = re.compile(r"server closed the connection unexpectedly|terminating connection because of "
                         r"crash of another server process|the database system is (in recovery mode|"
                         r"starting up|not yet accepting connections)|connection to server .* failed|"
                         r"server conn crashed|no connection to the server|consuming input failed|"
                         r"connection not open|perhaps the server was restarted|SSL SYSCALL error|"
                         r"the connection is lost|could not send data to server|client \d+ aborted")


def reconnect(deadline: float = 120.0):
    t0 = time.monotonic()
    while True:
        try:
            return connect()
        except Exception:
            if time.monotonic() - t0 > deadline:
                raise
            time.sleep(0.5)


def maintenance_loop(stop: threading.Event, every: float, done: list, errors: list,
                     kills_expected: bool) -> None:
    conn = reconnect()
    step = 0
    while not stop.wait(every):
        stmt = MAINTENANCE[step % len(MAINTENANCE)].format(tn=16 if (step // 4) % 2 == 0 else 32)
        step += 1
        t0 = time.monotonic()
        try:
            conn.execute(stmt)
            done.append((stmt.split(" (")[0], round(time.monotonic() - t0, 2)))
        except Exception as e:
            if kills_expected and (CRASH_NOISE.search(str(e)) or conn.closed):
                # a kill -9 restarted the server: not this statement's fault
                try:
                    conn.close()
                except Exception:
                    pass
                conn = reconnect()
                if stmt.startswith("REINDEX"):
                    # an interrupted REINDEX CONCURRENTLY leaves an invalid copy: drop it
                    for (name,) in conn.execute("""SELECT c.relname FROM pg_index i JOIN pg_class c
                            ON c.oid = i.indexrelid WHERE NOT i.indisvalid
                            AND i.indrelid = 'm'::regclass""").fetchall():
                        conn.execute(f'DROP INDEX CONCURRENTLY "{name}"')
                continue
            errors.append(f"{stmt}: {e}")
    conn.close()


def kill_writer() -> dict:
    """kill -9 a backend running an INSERT or UPDATE of m (any pgbench backend if none shows)."""
    conn = connect()
    pid, what = None, None
    t0 = time.monotonic()
    while time.monotonic() - t0 < 5 and pid is None:
        row = conn.execute("""SELECT pid, left(query, 30) FROM pg_stat_activity
            WHERE state = 'active' AND application_name = 'pgbench'
              AND (query LIKE 'INSERT INTO m %%' OR query LIKE 'UPDATE m %%')
            LIMIT 1""").fetchone()
        if row:
            pid, what = row
        else:
            time.sleep(0.01)
    if pid is None:
        row = conn.execute("""SELECT pid, left(query, 30) FROM pg_stat_activity
            WHERE application_name = 'pgbench' LIMIT 1""").fetchone()
        if row:
            pid, what = row
    conn.close()
    if pid is None:
        return {"killed": False}
    os.kill(pid, 9)
    # wait for the restart to begin (a connection refused), then for its end
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10:
        try:
            c = connect()
            c.execute("SELECT 1")
            c.close()
            time.sleep(0.05)
        except Exception:
            break
    reconnect().close()
    return {"killed": True, "pid": pid, "query": what}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--vacuum-every", type=float, default=30.0,
                    help="seconds between maintenance statements (VACUUM, REINDEX CONCURRENTLY, ALTER INDEX)")
    ap.add_argument("--kill-every", type=float, default=0.0,
                    help="kill -9 a writing backend every N seconds (0 = never)")
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
           "clients": a.clients, "vacuum_every_s": a.vacuum_every, "kill_every_s": a.kill_every}

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
        "update": (2, f"""\\set id random(1, {base - 1})
\\set k random(0, {nspare - 1})
UPDATE m SET embedding = (SELECT embedding FROM {spec.table} WHERE id = {base} + :k) WHERE id = :id;
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
    scriptargs = []
    for name, (weight, text) in scripts.items():
        with tempfile.NamedTemporaryFile("w", suffix=f"_{name}.sql", delete=False) as f:
            f.write(text)
        os.chmod(f.name, 0o644)
        paths.append(f.name)
        scriptargs += ["-f", f"{f.name}@{weight}"]

    total = a.minutes * 60
    seg = a.kill_every if a.kill_every > 0 else total
    stop = threading.Event()
    maint: list = []
    maint_errors: list = []
    kills: list = []
    th = threading.Thread(target=maintenance_loop, args=(stop, a.vacuum_every, maint, maint_errors, a.kill_every > 0))
    log(f"pgbench mix for {a.minutes} min, {a.clients} clients, maintenance every {a.vacuum_every}s"
        + (f", kill -9 of a writer every {a.kill_every}s" if a.kill_every > 0 else ""))
    th.start()
    t0 = time.monotonic()
    per_script = {k: {"transactions": 0} for k in scripts}
    failed_total, errors_total, crash_lines, exit_codes = 0, 0, 0, []
    logs = []
    while time.monotonic() - t0 < total - 1:
        left = total - (time.monotonic() - t0)
        length = int(max(1, min(seg, left)))
        cmd = [a.pgbench, "-n", "-c", str(a.clients), "-j", str(a.clients), "-T", str(length)] + scriptargs
        killing = a.kill_every > 0 and left > seg
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if killing:
            time.sleep(max(0.5, length - 2))
            kills.append(kill_writer())
        out, err = proc.communicate()
        logs.append(out + "\n--- stderr ---\n" + err)
        exit_codes.append(proc.returncode)
        for m in re.finditer(r"SQL script \d+: \S+_(insert|update|delete|query)\.sql\n"
                             r" - weight: \d+ \([^)]*\)\n - (\d+) transactions", out):
            per_script[m.group(1)]["transactions"] += int(m.group(2))
        failed = re.search(r"number of failed transactions: (\d+)", out)
        bad = [ln for ln in err.splitlines() if re.search(r"ERROR|FATAL|PANIC", ln)]
        noise = [ln for ln in err.splitlines() if CRASH_NOISE.search(ln)]
        if killing and kills[-1].get("killed"):
            crash_lines += len(noise)
            bad = [ln for ln in bad if not CRASH_NOISE.search(ln)]
        else:
            failed_total += int(failed.group(1)) if failed else 0
            if proc.returncode != 0:
                bad.append(f"pgbench exit code {proc.returncode}")
        errors_total += len(bad)
    elapsed = time.monotonic() - t0
    stop.set()
    th.join()
    for p in paths:
        os.unlink(p)
    (a.out / "pgbench.log").write_text("\n=== segment ===\n".join(logs))
    for v in per_script.values():
        v["tps"] = round(v["transactions"] / elapsed, 1)
    res["pgbench"] = {"exit_codes": exit_codes, "seconds": round(elapsed, 1),
                      "failed_transactions": failed_total,
                      "errors_in_stderr": errors_total,
                      "lost_connections_at_kills": crash_lines,
                      "per_script": per_script}
    res["maintenance"] = {"count": len(maint), "statements": maint, "errors": maint_errors}
    res["kills"] = kills
    vacuums = [t for (what, t) in maint if what == "VACUUM m"]
    vacuum_errors = maint_errors
    log(f"  per script {per_script}, {len(maint)} maintenance statements, "
        f"{sum(1 for k in kills if k.get('killed'))} kills, {errors_total} errors")

    log("final VACUUM, gateann_verify, lost rows")
    if a.kill_every > 0:
        conn = reconnect()  # the kills restarted the server
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
    ok = (res["pgbench"]["failed_transactions"] == 0
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
             f"{res['pgbench']['seconds']} s with {a.clients} clients; a maintenance statement every "
             f"{a.vacuum_every} s from another connection ({len(maint)} ran: "
             + ", ".join(f"{sum(1 for (w, _) in maint if w == k)} {k}" for k in
                         ("VACUUM m", "REINDEX INDEX CONCURRENTLY m_idx", "ALTER INDEX m_idx SET"))
             + f"; longest VACUUM {max(vacuums) if vacuums else 0} s); "
             f"{sum(1 for k in kills if k.get('killed'))} kill -9 of a writing backend.", "",
             "| script | transactions | tps |", "|---|---|---|"]
    for name in ("insert", "update", "delete", "query"):
        p = per_script.get(name, {})
        lines.append(f"| {name} | {p.get('transactions', '?')} | {p.get('tps', '?')} |")
    lines += ["", "| | nodes | live nodes | deleted | free slots | index size |", "|---|---|---|---|---|---|"]
    for step in ("before", "during", "after"):
        f = res[step]
        lines.append(f"| {step} | {f['nodes']} | {f['live_nodes']} | {f['deleted_nodes']} | "
                     f"{f['free_slots']} | {f['index_bytes'] // (1024 * 1024)} MiB |")
    lines += ["",
              f"- pgbench failed transactions {res['pgbench']['failed_transactions']}, "
              f"ERROR/FATAL/PANIC lines in its stderr {res['pgbench']['errors_in_stderr']} "
              f"(connections lost at the kills, not counted: {crash_lines}); "
              f"maintenance errors {len(vacuum_errors)}",
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
