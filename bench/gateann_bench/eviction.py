#!/usr/bin/env python3
"""Rows inserted while the index's shared store is evicted and reloaded (issue 32's set-up).

A table s3 (4,000 x 13-d, index on (v, t, s)) and two ballast tables ev, ev2 (20,000 x 32-d
each, about 3 MB of stores each) under gateann.max_shared_memory = 4MB.  For --seconds:

  session A  every second: one KNN query on ev, then one on ev2 (s3's store is evicted and
             loaded again and again); with --flip the budget also flips between 4 MB and 1 GB
             (ALTER SYSTEM + pg_reload_conf())
  session W  in a loop: delete 60 random s3 rows, VACUUM s3 (frees slots), insert 60 new rows
             in one transaction (they take the freed slots), UPDATE s3 SET t = t + 1 for the
             rows with id % 97 = k
  session R  for each new row, in turn in a long-lived session and in a new one:
             SELECT id FROM s3 ORDER BY v <-> <the row's vector> LIMIT 1

A row not returned first counts as missed; each miss is tried again with
gateann.search_list_size = 1000: a row still missed then is one the index cannot return (the
store lost it), not a search that stopped short.  Writes summary.md and results.json to --out.
"""
import argparse
import json
import os
import random
import subprocess
import threading
import time

import psycopg

SETUP = """
CREATE EXTENSION IF NOT EXISTS gateann;
DROP TABLE IF EXISTS s3, ev, ev2;
SELECT setseed(0.3);
CREATE TABLE s3 (id int, v real[], t int, s text);
INSERT INTO s3 SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 13) WHERE i > 0),
  i % 7, 'x' || (i % 13) FROM generate_series(1, 4000) i;
CREATE INDEX s3_idx ON s3 USING gateann (v, t, s);
CREATE TABLE ev (id int, v real[]);
INSERT INTO ev SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 32) WHERE i > 0)
  FROM generate_series(1, 20000) i;
CREATE INDEX ev_idx ON ev USING gateann (v);
CREATE TABLE ev2 (LIKE ev);
INSERT INTO ev2 SELECT * FROM ev;
CREATE INDEX ev2_idx ON ev2 USING gateann (v);
"""


def connect(dsn):
    c = psycopg.connect(dsn, autocommit=True)
    c.execute("SET client_min_messages = warning")
    c.execute("SET enable_seqscan = off")
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", default="")
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--flip", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="")
    a = ap.parse_args()

    setup = connect(a.dsn)
    setup.execute(SETUP)
    setup.execute("ALTER SYSTEM SET gateann.max_shared_memory = '4MB'")
    setup.execute("SELECT pg_reload_conf()")
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    stop = time.time() + a.seconds
    lock = threading.Lock()
    rounds = []
    res = {"rows": 0, "missed": 0, "missed_at_1000": 0, "rounds": 0, "rounds_with_misses": 0,
           "missed_old_session": 0, "missed_new_session": 0, "budget_flips": 0, "errors": []}

    def session_a():
        c = connect(a.dsn)
        big = False
        while time.time() < stop:
            for t in ("ev", "ev2"):
                c.execute(f"SELECT id FROM {t} ORDER BY v <-> (SELECT v FROM {t} WHERE id = 1) LIMIT 3").fetchall()
            if a.flip:
                big = not big
                c.execute("ALTER SYSTEM SET gateann.max_shared_memory = '%s'" % ("1GB" if big else "4MB"))
                c.execute("SELECT pg_reload_conf()")
                res["budget_flips"] += 1
            time.sleep(1)

    def session_w():
        c = connect(a.dsn)
        rng = random.Random(1)
        nid, k = 1000000, 0
        while time.time() < stop:
            ids = [r[0] for r in c.execute("SELECT id FROM s3 ORDER BY random() LIMIT 60").fetchall()]
            c.execute("DELETE FROM s3 WHERE id = ANY(%s)", (ids,))
            c.execute("VACUUM s3")
            rows = []
            with c.transaction():
                for _ in range(60):
                    vec = [rng.random() for _ in range(13)]
                    c.execute("INSERT INTO s3 VALUES (%s, %s::real[], %s, %s)",
                              (nid, vec, nid % 7, "x%d" % (nid % 13)))
                    rows.append((nid, vec))
                    nid += 1
            c.execute("UPDATE s3 SET t = t + 1 WHERE id %% 97 = %s", (k,))
            k = (k + 1) % 97
            with lock:
                rounds.append(rows)

    def session_r():
        old = connect(a.dsn)
        done, turn = 0, 0
        while time.time() < stop or done < len(rounds):
            with lock:
                todo = rounds[done:]
            if not todo:
                time.sleep(0.05)
                continue
            for rows in todo:
                turn += 1
                use = old if turn % 2 else connect(a.dsn)
                missed = 0
                for nid, vec in rows:
                    r = use.execute("SELECT id FROM s3 ORDER BY v <-> %s::real[] LIMIT 1", (vec,)).fetchone()
                    if r is not None and r[0] == nid:
                        continue
                    if use.execute("SELECT 1 FROM s3 WHERE id = %s", (nid,)).fetchone() is None:
                        continue        # deleted by W since
                    missed += 1
                    use.execute("SET gateann.search_list_size = 1000")
                    r = use.execute("SELECT id FROM s3 ORDER BY v <-> %s::real[] LIMIT 1", (vec,)).fetchone()
                    use.execute("RESET gateann.search_list_size")
                    if r is None or r[0] != nid:
                        res["missed_at_1000"] += 1
                res["rows"] += len(rows)
                res["missed"] += missed
                res["rounds"] += 1
                res["rounds_with_misses"] += 1 if missed else 0
                res["missed_old_session" if use is old else "missed_new_session"] += missed
                if use is not old:
                    use.close()
                done += 1

    threads = [threading.Thread(target=f) for f in (session_a, session_w, session_r)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    res["seconds"] = round(time.time() - t0)
    setup.execute("ALTER SYSTEM RESET gateann.max_shared_memory")
    setup.execute("SELECT pg_reload_conf()")
    res["verify"] = [r[0] for r in setup.execute("SELECT * FROM gateann_verify('s3_idx')").fetchall()]
    res["flip"] = a.flip
    res["commit"] = commit

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(f"# store eviction under writes — `{a.command}`\n\n- git: {commit}\n")
        f.write(f"- {res['seconds']} s, budget {'flipping 4 MB / 1 GB' if a.flip else 'fixed at 4 MB'} "
                f"({res['budget_flips']} flips)\n")
        f.write(f"- new rows checked: {res['rows']} in {res['rounds']} rounds\n")
        f.write(f"- not returned first: {res['missed']} (long-lived session {res['missed_old_session']}, "
                f"new sessions {res['missed_new_session']}); rounds with a miss: {res['rounds_with_misses']}\n")
        f.write(f"- not returned at search_list_size = 1000 either: {res['missed_at_1000']}\n")
        f.write(f"- gateann_verify at the end: {len(res['verify'])} problems\n")
    print(open(os.path.join(a.out, "summary.md")).read())
    return 1 if res["missed_at_1000"] or res["verify"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
