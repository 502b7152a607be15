#!/usr/bin/env python3
"""Randomised checks of gateann against a sequential scan (test/fuzz/run.sh starts the server).

Standard library only; talks to the server through psql.  Phases:
  tables    generated tables (random dims, NULL and duplicate vectors, zero vectors, large
            finite values; filter columns int4, text, int4[], bool, float8, date, jsonb with NULLs),
            indexed with random options (refusals of invalid ones count as inputs)
  queries   random filtered ORDER BY ... LIMIT k queries through the index, in every filter
            mode, io_method, iterative_scan and tunnel_batch, under a shared-memory budget
            chosen per table (room for every store, some, or none), each checked row by row
            against the same WHERE run as a sequential scan: every row matches and is live,
            no duplicates, the distance is the exact one, distances in order (unless
            relaxed_order); fewer rows than match are counted and printed (recall)
  writes    inserts, updates, deletes and VACUUM, then queries again and gateann_verify
  churn     another session flips gateann.max_shared_memory between 1 MB and 1 GB and queries
            two ballast indexes, so the table's store is evicted and reloaded while rows are
            deleted, vacuumed and inserted into the freed slots (one transaction of many
            statements); after each round the whole index is enumerated (post mode,
            relaxed_order, no scan limit) and must return every row of the table (those
            without a distance last), and gateann_verify must find the stores and records agreeing (a
            node an insert left unreachable over short prefixes is counted, and must be
            returned after VACUUM)
  kills     kill -9 of a backend inside CREATE INDEX, INSERT or VACUUM, then recovery,
            gateann_verify and queries again
  damage    the server stopped, bytes of the index file overwritten (metapage fields, a random
            place, a whole block zeroed) or the file truncated, the server started: queries,
            gateann_verify and gateann_index_info may fail, but only with a data-corruption or
            I/O SQLSTATE (XX001, XX002, 58030), never a crash; REINDEX then repairs it
A crash (a backend lost to a signal other than our kill -9, found in the server log), a wrong
row or an unexpected ERROR fails the run.
The last line: "fuzz: N inputs, N queries, N kills, N damaged indexes, N crashes, N wrong rows,
N missing rows".
"""
import argparse
import json
import os
import struct
import random
import re
import subprocess
import sys
import threading
import time

CRASH = re.compile(r"server closed the connection unexpectedly|terminating connection because of crash")
FILTER_MODES = ["gate", "post", "early"]
IO_METHODS = ["auto", "io_uring", "pread", "buffer"]
ITERATIVE = ["strict_order", "relaxed_order", "off"]


class Fuzz:
    def __init__(self, args):
        self.a = args
        self.rng = random.Random(args.seed)
        self.damage = None  # the damage of the index being queried, for a crash report
        self.counts = {"inputs": 0, "queries": 0, "kills": 0, "damaged": 0, "crashes": 0, "wrong": 0,
                       "errors": 0, "churn_rounds": 0, "missing": 0, "short_strict": 0, "short_relaxed": 0, "recall_sum": 0.0, "recall_n": 0}
        self.failures = []
        self.expect_crash = False
        self.psql_bin = os.path.join(args.bindir, "psql")
        self.log_pos = 0

    # ------------------------------------------------------------------ psql
    def psql(self, sql, check=True):
        """Run sql (a script) in one psql; returns (stdout, stderr, rc)."""
        p = subprocess.run([self.psql_bin, "-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=0",
                            "-v", "VERBOSITY=verbose",
                            "-h", self.a.host, "-p", str(self.a.port), "-d", "postgres"],
                           input=sql, capture_output=True, text=True)
        if CRASH.search(p.stderr) and not self.expect_crash:
            self.counts["crashes"] += 1
            damage = f"\n--- damaged index: {self.damage} ---" if self.damage else ""
            self.fail(f"server crash: {p.stderr.strip()[:500]}{damage}\n--- SQL ---\n{sql[:2000]}")
            self.wait_ready()
        if check and "ERROR" in p.stderr:
            self.counts["errors"] += 1
            self.fail(f"unexpected error: {p.stderr.strip()[:500]}\n--- SQL ---\n{sql[:2000]}")
        return p.stdout, p.stderr, p.returncode

    def wait_ready(self, timeout=120):
        t0 = time.time()
        while time.time() - t0 < timeout:
            p = subprocess.run([self.psql_bin, "-X", "-At", "-h", self.a.host, "-p", str(self.a.port),
                                "-d", "postgres", "-c", "SELECT 1"], capture_output=True, text=True)
            if p.stdout.strip() == "1":
                return
            time.sleep(0.3)
        raise SystemExit("server did not come back")

    def scan_server_log(self):
        """A backend that died of anything but our kill -9 is a crash, even if psql did not see it."""
        with open(self.a.serverlog, errors="replace") as f:
            f.seek(self.log_pos)
            text = f.read()
            self.log_pos = f.tell()
        for m in re.finditer(r"was terminated by signal (\d+)[^\n]*", text):
            if m.group(1) != "9":
                self.counts["crashes"] += 1
                self.fail(f"server log: {m.group(0)}")
        for m in re.finditer(r"(PANIC|TRAP|server process \(PID \d+\) exited with exit code [^01])[^\n]*", text):
            self.counts["crashes"] += 1
            self.fail(f"server log: {m.group(0)}")

    def fail(self, msg):
        self.failures.append(msg)
        print("FAILURE:", msg.splitlines()[0], file=sys.stderr)

    # ------------------------------------------------------------------ data
    def vec(self, dims, centers, large=True):
        """large=False: no vector of values beyond what a half holds (record_precision = half)"""
        r = self.rng.random()
        if r < 0.03:
            return "NULL"
        if r < 0.05:
            return "'{" + ",".join(["0"] * dims) + "}'"
        if r < 0.07:
            mag = 1e15 if large else 6e4
            return "'{" + ",".join(f"{self.rng.uniform(-mag, mag):.6g}" for _ in range(dims)) + "}'"
        c = self.rng.choice(centers)
        return "'{" + ",".join(f"{x + self.rng.gauss(0, 0.3):.5f}" for x in c) + "}'"

    def row(self, i, dims, centers, dup_pool, large=True):
        if dup_pool and self.rng.random() < 0.1:
            v = self.rng.choice(dup_pool)
        else:
            v = self.vec(dims, centers, large)
            if v != "NULL" and self.rng.random() < 0.05:
                dup_pool.append(v)
        a = "NULL" if self.rng.random() < 0.05 else str(self.rng.randrange(0, 20))
        b = "NULL" if self.rng.random() < 0.05 else "'" + self.rng.choice(
            ["alpha", "Beta", "gamma", "delta", "Épsilon", "zeta", "eta", "theta", "", "x" * 300]) + "'"
        tags = "NULL" if self.rng.random() < 0.05 else "'{" + ",".join(
            str(self.rng.randrange(0, 30)) for _ in range(self.rng.randrange(0, 5))) + "}'"
        flag = self.rng.choice(["true", "false", "NULL"])
        f = "NULL" if self.rng.random() < 0.05 else f"{self.rng.uniform(0, 100):.3f}"
        d = "NULL" if self.rng.random() < 0.05 else f"date '2020-01-01' + {self.rng.randrange(0, 365)}"
        m = "NULL" if self.rng.random() < 0.05 else self.jsonb(self.jdoc(2))
        return f"({i}, {v}, {a}, {b}, {tags}, {flag}, {f}, {d}, {m})"

    # jsonb documents: few keys and values, so that queries hit; numbers
    # as 1 and 1.0 (equal in jsonb), nested objects, arrays, top-level arrays
    # and raw scalars, and now and then a value too long for the index's copy
    def jscalar(self):
        r = self.rng
        return r.choice([r.randrange(0, 4), 1.0, 2.5, f"s{r.randrange(0, 4)}", True, False, None])

    def jdoc(self, depth):
        r = self.rng
        x = r.random()
        if x < 0.05:
            return [self.jscalar() for _ in range(r.randrange(0, 4))]
        if x < 0.08:
            return self.jscalar()
        doc = {}
        for _ in range(r.randrange(0, 5)):
            y = r.random()
            key = f"k{r.randrange(0, 6)}"
            if y < 0.6 or depth == 0:
                doc[key] = self.jscalar()
            elif y < 0.8:
                doc[key] = [self.jscalar() for _ in range(r.randrange(0, 4))]
            else:
                doc[key] = self.jdoc(depth - 1)
        if r.random() < 0.05:
            doc["long"] = "y" * 300
        return doc

    def jquery(self):
        # a small piece of a document: what a query asks a value to contain
        r = self.rng
        q = self.jdoc(1)
        if isinstance(q, dict):
            q.pop("long", None)
            q = dict(list(q.items())[:r.randrange(0, 3)])
        return q

    # jsonpath pieces for @@ and @?: accessor paths (lax and strict, nested,
    # array accessors) and literals of the documents' scalars
    def jpath(self):
        r = self.rng
        return "$" + "".join(r.choice([f".k{r.randrange(0, 7)}", f".k{r.randrange(0, 7)}",
                                       "[*]", "[0]"]) for _ in range(r.randrange(1, 4)))

    def jmode(self):
        return "strict " if self.rng.random() < 0.15 else ""

    def jliteral(self):
        v = self.jscalar()
        return json.dumps(v)

    @staticmethod
    def jsonb(value):
        return "'" + json.dumps(value).replace("'", "''") + "'::jsonb"

    def make_table(self, t):
        dims = self.rng.randrange(2, 25)
        n = self.rng.randrange(300, self.a.max_rows + 1)
        # one table in ten is built in partitions: more rows than
        # maintenance_work_mem holds in memory (build_merge.c): 1 MB, or what
        # the error then asks for to build in partitions
        partitions = self.rng.random() < 0.1
        if partitions:
            n = self.rng.randrange(3000, 5001)
        ncent = self.rng.randrange(1, 12)
        centers = [[self.rng.uniform(-3, 3) for _ in range(dims)] for _ in range(ncent)]
        dup_pool = []
        self.tables[t] = {"dims": dims, "centers": centers, "dup": dup_pool, "next": n + 1,
                          "metric": self.rng.choice(["<->", "<->", "<=>", "<#>"]),
                          "half": self.rng.random() < 0.25, "partitions": partitions}
        large = not self.tables[t]["half"]
        coll = f' COLLATE "{self.collation}"' if self.collation else ""
        rows = ",\n".join(self.row(i, dims, centers, dup_pool, large) for i in range(1, n + 1))
        ops = {"<->": "float4_l2_ops", "<=>": "float4_cosine_ops", "<#>": "float4_ip_ops"}
        opts = []
        if self.rng.random() < (0.3 if partitions else 0.7):
            r = self.rng.choice([4, 8, 16, 24, 32])
            opts.append(f"max_neighbors = {r}")
            opts.append(f"build_search_list_size = {self.rng.choice([r, r * 2, 64, 128])}")
        if self.rng.random() < 0.3:
            opts.append(f"alpha = {self.rng.choice([1.0, 1.2, 1.5, 2.0])}")
        if self.rng.random() < 0.3:
            opts.append(f"pq_subspaces = {self.rng.choice([0, 1, 2, dims, dims + 3])}")
        if self.rng.random() < 0.3:
            opts.append(f"tunnel_neighbors = {self.rng.choice([0, 1, 2, 4, 16, 32])}")
        if self.rng.random() < 0.2:
            opts.append(f"locality_order = {self.rng.choice(['on', 'off'])}")
        if self.tables[t]["half"]:
            opts.append("record_precision = half")
        with_ = f" WITH ({', '.join(opts)})" if opts else ""
        sql = f"""DROP TABLE IF EXISTS t{t};
CREATE TABLE t{t} (id int, v real[], a int, b text{coll}, tags int[], flag bool, f float8, d date, m jsonb);
INSERT INTO t{t} VALUES {rows};
SET maintenance_work_mem = '{"1MB" if partitions else "256MB"}';
CREATE INDEX t{t}_idx ON t{t} USING gateann (v {ops[self.tables[t]['metric']]}, a, b, tags, flag, f, d, m){with_};
"""
        self.counts["inputs"] += n + 1
        out, err, _ = self.psql(sql, check=False)
        least = re.search(r"needs more than maintenance_work_mem[^\n]*\n(?:.*\n)*?HINT:.*?at least (\d+) MB", err)
        if partitions and least:
            # too little even in partitions (or, past the rows that went to
            # partitions, the filter values): the hint's first figure must do
            _, err, _ = self.psql(f"SET maintenance_work_mem = '{least.group(1)}MB';\n"
                                  f"CREATE INDEX t{t}_idx ON t{t} USING gateann "
                                  f"(v {ops[self.tables[t]['metric']]}, a, b, tags, flag, f, d, m){with_};",
                                  check=False)
        if "building it in partitions" in err and "ERROR" not in err:
            self.counts["partition_builds"] = self.counts.get("partition_builds", 0) + 1
        if "ERROR" in err:
            expected = re.search(r"pq_subspaces \(\d+\) cannot exceed|must be at least|beyond the magnitude|"
                                 r"invalid value for|out of range|out of bounds|must not exceed|"
                                 r"tunnel_neighbors must be 0", err)
            if not expected:
                self.counts["errors"] += 1
                self.fail(f"CREATE INDEX failed: {err.strip()[:400]}\noptions: {with_}")
            # retry with defaults: the table still needs an index
            _, err2, _ = self.psql(f"CREATE INDEX t{t}_idx ON t{t} USING gateann "
                                   f"(v {ops[self.tables[t]['metric']]}, a, b, tags, flag, f, d, m);", check=False)
            if "ERROR" in err2 and "beyond the magnitude" in err2:
                # L2/IP refuse magnitudes over 1e16: our generator stays under 1e15, so no
                self.fail(f"magnitude refused: {err2.strip()[:300]}")
            elif "ERROR" in err2:
                self.fail(f"CREATE INDEX with defaults failed: {err2.strip()[:300]}")

    # --------------------------------------------------------------- queries
    def predicate(self):
        r = self.rng
        choices = [
            lambda: f"a = {r.randrange(0, 22)}",
            lambda: f"a IN ({', '.join(str(r.randrange(0, 22)) for _ in range(r.randrange(1, 4)))})",
            lambda: f"a = ANY('{{{','.join(str(r.randrange(0, 22)) for _ in range(r.randrange(1, 4)))}}}'::int[])",
            lambda: f"a < {r.randrange(0, 22)}",
            lambda: f"a >= {r.randrange(0, 22)}",
            lambda: f"a BETWEEN {r.randrange(0, 10)} AND {r.randrange(5, 22)}",
            lambda: "a IS NULL",
            lambda: "a IS NOT NULL",
            lambda: "v IS NOT NULL",
            lambda: "v IS NULL",
            lambda: f"b = '{r.choice(['alpha', 'Beta', 'gamma', 'Épsilon', '', 'nope'])}'",
            lambda: f"b < '{r.choice(['b', 'delta', 'M', 'z', 'É'])}'",
            lambda: "b IS NULL",
            lambda: f"tags @> '{{{r.randrange(0, 30)}}}'",
            lambda: f"tags && '{{{r.randrange(0, 30)},{r.randrange(0, 30)}}}'",
            lambda: f"tags <@ '{{{','.join(str(x) for x in r.sample(range(30), 12))}}}'",
            lambda: "flag",
            lambda: "flag = false",
            lambda: f"f > {r.uniform(0, 100):.2f}",
            lambda: f"d <= date '2020-01-01' + {r.randrange(0, 365)}",
            lambda: f"m @> {self.jsonb(self.jquery())}",
            lambda: f"m @> {self.jsonb(self.jquery())}",
            lambda: f"m ? 'k{r.randrange(0, 7)}'",
            lambda: f"m ? 's{r.randrange(0, 4)}'",
            lambda: f"m ?| '{{k{r.randrange(0, 7)},s{r.randrange(0, 4)}}}'",
            lambda: f"m ?& '{{{','.join(f'k{x}' for x in r.sample(range(7), r.randrange(0, 3)))}}}'",
            lambda: f"m @@ '{self.jmode()}{self.jpath()} == {self.jliteral()}'",
            lambda: f"m @@ '{self.jmode()}{self.jpath()} == {self.jliteral()} && {self.jpath()} == {self.jliteral()}'",
            lambda: f"m @@ '{self.jmode()}{self.jpath()} == {self.jliteral()} || {self.jpath()} > 1'",
            lambda: f"m @? '{self.jmode()}$ ? (@.k{r.randrange(0, 7)} == {self.jliteral()})'",
            lambda: f"m @? '{self.jmode()}{self.jpath()} ? (@ == {self.jliteral()})'",
            lambda: f"m @? '{self.jmode()}{self.jpath()}'",
        ]
        n = r.choice([0, 1, 1, 2, 2, 3])
        preds = [r.choice(choices)() for _ in range(n)]
        if n >= 2 and r.random() < 0.15:
            return f"({preds[0]} OR {preds[1]})" + "".join(f" AND {p}" for p in preds[2:])
        return " AND ".join(preds)

    def run_queries(self, t, count, damaged=None):
        info = self.tables[t]
        batch = []
        for qi in range(count):
            q = "'{" + ",".join(f"{x + self.rng.gauss(0, 0.5):.4f}" for x in self.rng.choice(info["centers"])) + "}'::real[]"
            r = self.rng.random()
            if r < 0.02:
                q = "(SELECT NULL::real[])"   # every distance NULL (a constant NULL is folded away)
            elif r < 0.04:
                q = "'{" + ",".join(["0"] * info["dims"]) + "}'::real[]"   # NaN under cosine
            where = self.predicate()
            k = self.rng.choice([1, 5, 10, 10, 30])
            batch.append({"q": q, "where": where, "k": k, "op": info["metric"],
                          "fm": self.rng.choice(FILTER_MODES), "io": self.rng.choice(IO_METHODS),
                          "it": self.rng.choice(ITERATIVE), "L": self.rng.choice([10, 40, 100, 200]),
                          "tb": self.rng.choice([1, 2, 4, 4, 8])})
        script = []
        for i, b in enumerate(batch):
            w = f"WHERE {b['where']}" if b["where"] else ""
            script.append(f"""\\echo @@IDX {i}
SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = on;
SET gateann.filter_mode = '{b['fm']}'; SET gateann.io_method = '{b['io']}';
SET gateann.iterative_scan = '{b['it']}'; SET gateann.search_list_size = {b['L']};
SET gateann.tunnel_batch = {b['tb']};
SELECT id, (v {b['op']} {b['q']})::float8 FROM t{t} {w} ORDER BY v {b['op']} {b['q']} LIMIT {b['k']};
\\echo @@SKIP {i}
SELECT skipped FROM gateann_last_scan();
\\echo @@SEQ {i}
SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT id, (v {b['op']} {b['q']})::float8 FROM t{t} {w};
RESET ALL;""")
        out, err, _ = self.psql("\n".join(script), check=False)
        if damaged:
            self.counts["queries"] += len(batch)
            self.damage_errors(err, f"queries on t{t}_idx ({damaged})")
            return
        if "ERROR" in err:
            self.counts["errors"] += 1
            self.fail(f"query error on t{t}: {err.strip()[:600]}")
        res, cur = {}, None
        for line in out.splitlines():
            m = re.match(r"@@(IDX|SKIP|SEQ) (\d+)$", line)
            if m:
                cur = (m.group(1), int(m.group(2)))
                res[cur] = []
            elif cur and cur[0] == "SKIP" and line:
                res[cur] = int(line)
            elif cur and line:
                idv, dist = line.split("|")
                res[cur].append((int(idv), float(dist) if dist else None))
        for i, b in enumerate(batch):
            self.counts["queries"] += 1
            self.check(t, b, res.get(("IDX", i), []), res.get(("SEQ", i), []),
                       res.get(("SKIP", i)))

    def check(self, t, b, got, seq, skipped=None):
        where = f"WHERE {b['where']}" if b["where"] else ""
        ctx = (f"t{t}: SET gateann.filter_mode = '{b['fm']}'; SET gateann.io_method = '{b['io']}'; "
               f"SET gateann.iterative_scan = '{b['it']}'; SET gateann.search_list_size = {b['L']}; "
               f"SET gateann.tunnel_batch = {b['tb']}; "
               f"SET enable_seqscan = off; SELECT id, v {b['op']} {b['q']} FROM t{t} {where} "
               f"ORDER BY v {b['op']} {b['q']} LIMIT {b['k']};")
        # every matching row, those without a distance too: a NULL vector (or a NULL
        # query) has a NULL distance, a zero vector (or query) under cosine a NaN one;
        # they come after every number, NaN before NULL (ORDER BY ... NULLS LAST)
        match = dict(seq)
        ids = [i for i, _ in got]
        problems = []
        if len(ids) != len(set(ids)):
            problems.append("duplicate rows")

        def same(a, b):
            return (a is None and b is None) or (a is not None and b is not None and
                                                 (a == b or (a != a and b != b)))

        def cls(d):
            return 2 if d is None else 1 if d != d else 0
        for i, d in got:
            if i not in match:
                problems.append(f"row {i} does not satisfy the WHERE")
            elif not same(d, match[i]):
                problems.append(f"row {i}: distance {d} != exact {match[i]}")
        dists = [d for _, d in got]
        if any(cls(dists[j]) > cls(dists[j + 1]) for j in range(len(dists) - 1)):
            problems.append(f"rows without a distance before rows with one: {dists}")
        finite = [d for d in dists if cls(d) == 0]
        # the executor orders rows by the operator's own distance (the index
        # returns a bound below it): no tolerance
        if b["it"] != "relaxed_order" and any(finite[j] > finite[j + 1]
                                             for j in range(len(finite) - 1)):
            problems.append(f"distances out of order: {dists}")
        expected = min(b["k"], len(match))
        if len(got) > expected:
            problems.append(f"{len(got)} rows, at most {expected} match")
        # relaxed_order streams until the walk has nothing left: fewer rows than match
        # means matches the walk never reached (recall, counted; not a wrong row)
        if b["it"] in ("relaxed_order", "strict_order") and len(got) < expected:
            self.counts["short_relaxed" if b["it"] == "relaxed_order" else "short_strict"] += 1
            # which rows were left out, and where they rank: the evidence for issue 17 item 4
            gotset = set(ids)
            order = sorted(match.items(), key=lambda kv: (cls(kv[1]), kv[1] if cls(kv[1]) == 0 else 0))
            missing = [(r, i, d) for r, (i, d) in enumerate(order[:expected]) if i not in gotset]
            print(f"note: {b['it']} returned {len(got)} of {expected} rows ({len(match)} match, "
                  f"skipped {skipped}); "
                  f"left out (rank, id, distance): {missing[:5]}\n  {ctx}")
        if problems:
            self.counts["wrong"] += 1
            self.fail("; ".join(problems[:5]) + "\n  " + ctx)
        ranked = sorted(d for d in match.values() if cls(d) == 0)[:b["k"]]
        if ranked:
            kth = ranked[-1]
            hits = sum(1 for _, d in got if cls(d) == 0 and d <= kth)
            self.counts["recall_sum"] += min(hits, len(ranked)) / len(ranked)
            self.counts["recall_n"] += 1

    # ---------------------------------------------------------------- writes
    def writes(self, t):
        info = self.tables[t]
        stmts = []
        for _ in range(self.rng.randrange(20, 80)):
            r = self.rng.random()
            if r < 0.5:
                i = info["next"]
                info["next"] += 1
                stmts.append(f"INSERT INTO t{t} VALUES "
                             f"{self.row(i, info['dims'], info['centers'], info['dup'], not info['half'])};")
            elif r < 0.75:
                stmts.append(f"UPDATE t{t} SET v = {self.vec(info['dims'], info['centers'], not info['half'])}, "
                             f"a = {self.rng.randrange(0, 20)} WHERE id = {self.rng.randrange(1, info['next'])};")
            else:
                lo = self.rng.randrange(1, info["next"])
                stmts.append(f"DELETE FROM t{t} WHERE id BETWEEN {lo} AND {lo + self.rng.randrange(0, 20)};")
        self.counts["inputs"] += len(stmts)
        self.psql("\n".join(stmts) + f"\nVACUUM t{t};\n", check=False)
        self.verify(t, "after writes and VACUUM")

    def verify(self, t, when):
        out, err, _ = self.psql(f"SELECT string_agg(p, '; ') FROM gateann_verify('t{t}_idx') p;", check=False)
        if out.strip() or "ERROR" in err:
            self.counts["errors"] += 1
            self.fail(f"gateann_verify('t{t}_idx') {when}: {out.strip()[:400]} {err.strip()[:300]}")

    # ----------------------------------------------------------------- churn
    def ballast(self):
        """Two tables whose index stores, loaded in turn, evict all others under a 1 MB budget."""
        if getattr(self, "ballast_made", False):
            return
        self.psql("""DROP TABLE IF EXISTS ballast1, ballast2;
CREATE TABLE ballast1 (id int, v real[]);
INSERT INTO ballast1 SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 32) WHERE i > 0)
  FROM generate_series(1, 4500) i;
CREATE INDEX ballast1_idx ON ballast1 USING gateann (v);
CREATE TABLE ballast2 (LIKE ballast1);
INSERT INTO ballast2 SELECT * FROM ballast1;
CREATE INDEX ballast2_idx ON ballast2 USING gateann (v);""")
        self.ballast_made = True

    def churner(self, stop, t, q):
        """Flip the budget; load the ballast stores (evicting t's) and t's again, in turn."""
        big = False
        op = self.tables[t]["metric"]
        while not stop.is_set():
            big = not big
            self.psql(f"""ALTER SYSTEM SET gateann.max_shared_memory = '{"1GB" if big else "1MB"}';
SELECT pg_reload_conf();
SET client_min_messages = warning; SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM ballast1 ORDER BY v <-> (SELECT v FROM ballast1 WHERE id = 1) LIMIT 3) q;
SELECT count(*) FROM (SELECT id FROM t{t} ORDER BY v {op} {q} LIMIT 3) q;
SELECT count(*) FROM (SELECT id FROM ballast2 ORDER BY v <-> (SELECT v FROM ballast2 WHERE id = 1) LIMIT 3) q;
SELECT count(*) FROM (SELECT id FROM t{t} ORDER BY v {op} {q} LIMIT 3) q;""",
                      check=False)
            stop.wait(self.rng_churn.uniform(0.02, 0.1))

    def churn_cycle(self, t):
        info = self.tables[t]
        self.ballast()
        stop = threading.Event()
        self.rng_churn = random.Random(self.rng.random())
        q = "'{" + ",".join(f"{x:.4f}" for x in self.rng.choice(info["centers"])) + "}'::real[]"
        th = threading.Thread(target=self.churner, args=(stop, t, q))
        th.start()
        try:
            for _ in range(self.a.churn_rounds):
                self.churn_round(t, info)
        finally:
            stop.set()
            th.join()
        self.psql("ALTER SYSTEM RESET gateann.max_shared_memory; SELECT pg_reload_conf();")

    def churn_round(self, t, info):
        lo = self.rng.randrange(1, info["next"])
        stmts = [f"DELETE FROM t{t} WHERE id % 13 = {self.rng.randrange(13)} AND id BETWEEN {lo} AND {lo + 400};",
                 f"VACUUM t{t};", "BEGIN;"]
        for _ in range(self.rng.randrange(20, 60)):
            i = info["next"]
            info["next"] += 1
            stmts.append(f"INSERT INTO t{t} VALUES "
                         f"{self.row(i, info['dims'], info['centers'], info['dup'], not info['half'])};")
            if self.rng.random() < 0.3:
                stmts.append("SELECT pg_sleep(0.03);")
        stmts.append("COMMIT;")
        self.counts["inputs"] += len(stmts)
        self.psql("SET client_min_messages = warning;\n" + "\n".join(stmts), check=False)
        self.counts["churn_rounds"] += 1
        missing = self.enumerate_missing(t, info)
        if missing is None:
            return
        problems = self.verify_problems(t)
        stores = [p for p in problems if "unreachable from the entry points" not in p]
        if stores or (missing and not problems):
            self.counts["missing"] += len(missing)
            self.fail(f"t{t}: the index does not return {len(missing)} rows (ids {sorted(missing)[:10]}) "
                      f"while its store was evicted and reloaded; gateann_verify: "
                      f"{'; '.join(problems[:5]) or 'nothing'}")
            return
        if problems:
            # inserts can leave nodes unreachable over short prefixes until VACUUM relinks
            # them (src/README, "Reachability"): after VACUUM every row must be returned
            self.counts["unreachable_after_inserts"] = self.counts.get("unreachable_after_inserts", 0) + len(problems)
            self.psql(f"VACUUM t{t};")
            missing = self.enumerate_missing(t, info)
            if missing:
                self.counts["missing"] += len(missing)
                self.fail(f"t{t}: after VACUUM the index still does not return {len(missing)} rows "
                          f"(ids {sorted(missing)[:10]})")
        self.verify(t, "after a round of budget churn")

    def enumerate_missing(self, t, info):
        """Rows of the table that the whole index, enumerated, does not return (None: error)."""
        q = "'{" + ",".join(f"{x:.4f}" for x in self.rng.choice(info["centers"])) + "}'::real[]"
        op = info["metric"]
        out, err, _ = self.psql(f"""SET client_min_messages = warning;
\\echo @@IDX
SET enable_seqscan = off; SET enable_bitmapscan = off; SET gateann.filter_mode = 'post';
SET gateann.iterative_scan = 'relaxed_order'; SET gateann.max_scan_tuples = 2147483647;
SET gateann.search_list_size = 200;
SELECT id FROM t{t} ORDER BY v {op} {q};
RESET ALL;
\\echo @@SEQ
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT id FROM t{t};
RESET ALL;""", check=False)
        if "ERROR" in err:
            self.counts["errors"] += 1
            self.fail(f"enumeration of t{t} failed: {err.strip()[:400]}")
            return None
        part, got, want = None, set(), set()
        for line in out.splitlines():
            if line in ("@@IDX", "@@SEQ"):
                part = line
            elif line.strip():
                (got if part == "@@IDX" else want).add(int(line))
        return want - got

    def verify_problems(self, t):
        out, err, _ = self.psql(f"SELECT p FROM gateann_verify('t{t}_idx') p;", check=False)
        if "ERROR" in err:
            self.counts["errors"] += 1
            self.fail(f"gateann_verify('t{t}_idx') failed: {err.strip()[:300]}")
        return [line for line in out.splitlines() if line.strip()]

    # ----------------------------------------------------------------- kills
    def kill_cycle(self, t):
        info = self.tables[t]
        what = self.rng.choice(["insert", "index", "vacuum"])
        if what == "insert":
            n0 = info["next"]
            info["next"] += 20000
            sql = (f"INSERT INTO t{t} SELECT g, (SELECT array_agg(random()::real) FROM generate_series(1, {info['dims']}) "
                   f"WHERE g > 0), g % 20, 'alpha', '{{1,2}}', true, 1.0, date '2020-02-02' "
                   f"FROM generate_series({n0}, {n0 + 19999}) g;")
        elif what == "index":
            sql = f"CREATE INDEX t{t}_idx2 ON t{t} USING gateann (v, a);"
        else:
            self.psql(f"DELETE FROM t{t} WHERE id % 7 = 0;", check=False)
            sql = f"VACUUM t{t};"
        self.expect_crash = True
        # the backend's pid comes first, so the kill lands inside the statement
        p = subprocess.Popen([self.psql_bin, "-X", "-q", "-At", "-h", self.a.host, "-p", str(self.a.port),
                              "-d", "postgres", "-c", "SELECT pg_backend_pid()", "-c", sql],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = p.stdout.readline().strip()
        if line.isdigit():
            time.sleep(self.rng.uniform(0.01, 0.25))
            if p.poll() is None:
                try:
                    os.kill(int(line), 9)
                    self.counts["kills"] += 1
                except ProcessLookupError:
                    pass
        p.communicate()
        time.sleep(0.5)
        self.wait_ready()
        self.expect_crash = False
        # inserts may leave nodes unreachable over short prefixes until VACUUM relinks them
        self.psql(f"DROP INDEX IF EXISTS t{t}_idx2; VACUUM t{t};", check=False)
        self.verify(t, f"after kill -9 in {what} and VACUUM")

    # ---------------------------------------------------------------- damage
    ALLOWED_DAMAGE_STATES = {"XX001", "XX002", "58030"}

    def damage_errors(self, err, what):
        """Errors on a damaged index must say so (data corrupted, index corrupted, I/O)."""
        for m in re.finditer(r"ERROR:  ([0-9A-Z]{5}): ([^\n]*)", err):
            self.counts["damage_errors"] = self.counts.get("damage_errors", 0) + 1
            if m.group(1) not in self.ALLOWED_DAMAGE_STATES:
                self.counts["errors"] += 1
                self.fail(f"{what}: SQLSTATE {m.group(1)} is not a corruption code: {m.group(2)[:300]}")

    def pg_ctl(self, *args):
        subprocess.run([os.path.join(self.a.bindir, "pg_ctl"), "-D", self.a.datadir, "-w",
                        "-l", self.a.serverlog] + list(args),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def damage_cycle(self, t):
        out, _, _ = self.psql(f"SELECT pg_relation_filepath('t{t}_idx'); CHECKPOINT;")
        path = os.path.join(self.a.datadir, out.strip())
        self.pg_ctl("stop", "-m", "fast")
        size = os.path.getsize(path)
        nblocks = size // 8192
        how = self.rng.choice(["meta", "meta", "random", "random", "zero_block", "truncate"])
        with open(path, "r+b") as f:
            if how == "meta" or nblocks < 2:
                # a 4-byte field of the metapage body: huge, negative-as-unsigned or small values
                off = 24 + 4 * self.rng.randrange(0, 60)
                val = self.rng.choice([0, 1, 2, 0x7fffffff, 0xffffffff, 0x10000, self.rng.randrange(0, 1 << 32)])
                f.seek(off)
                f.write(struct.pack("<I", val))
                desc = f"metapage offset {off} := {val}"
            elif how == "random":
                blk = self.rng.randrange(1, nblocks)
                off = blk * 8192 + self.rng.randrange(24, 8192 - 16)
                n = self.rng.randrange(1, 17)
                f.seek(off)
                f.write(bytes(self.rng.randrange(256) for _ in range(n)))
                desc = f"{n} random bytes at block {blk} offset {off % 8192}"
            elif how == "zero_block":
                blk = self.rng.randrange(1, nblocks)
                f.seek(blk * 8192)
                f.write(bytes(8192))
                desc = f"block {blk} zeroed"
            else:
                keep = self.rng.randrange(1, nblocks)
                f.truncate(keep * 8192)
                desc = f"truncated to {keep} of {nblocks} blocks"
        self.counts["damaged"] += 1
        self.pg_ctl("start")
        self.damage = f"t{t}_idx, {desc}"
        self.run_queries(t, max(4, self.a.queries // 8), damaged=desc)
        _, err, _ = self.psql(f"SELECT count(*) FROM gateann_verify('t{t}_idx'); "
                              f"SELECT count(*) FROM gateann_index_info('t{t}_idx');", check=False)
        self.damage_errors(err, f"gateann_verify/index_info on t{t}_idx ({desc})")
        # REINDEX rebuilds from the table: the index must be whole again
        self.psql(f"REINDEX INDEX t{t}_idx;")
        self.damage = None
        self.verify(t, f"after REINDEX of a damaged index ({desc})")
        self.scan_server_log()

    # ------------------------------------------------------------------ main
    def main(self):
        out, _, _ = self.psql("SELECT collname FROM pg_collation WHERE collname IN "
                              "('en-x-icu', 'en_US.utf8', 'C.utf8', 'und-x-icu') ORDER BY 1 LIMIT 1;",
                              check=False)
        self.collation = out.strip() or None
        self.psql("CREATE EXTENSION IF NOT EXISTS gateann;")
        deadline = time.time() + self.a.seconds
        self.tables = {}
        t = 0
        while True:
            nfail = len(self.failures)
            # the shared-memory budget: room for every store, for some, or for none (private
            # copies, evictions while other tables' stores are loaded)
            budget = self.rng.choice(["1MB", "2MB", "8MB", "1GB", "1GB"])
            self.psql(f"ALTER SYSTEM SET gateann.max_shared_memory = '{budget}'; "
                      "SELECT pg_reload_conf();")
            self.make_table(t)
            self.run_queries(t, self.a.queries)
            self.writes(t)
            self.run_queries(t, self.a.queries // 2)
            if self.a.churn_rounds > 0 and t % 2 == 1:
                self.churn_cycle(t)
            if t % 2 == 0:
                self.kill_cycle(t)
                self.run_queries(t, self.a.queries // 4)
            self.scan_server_log()
            for _ in range(self.a.damage):
                self.damage_cycle(t)
            self.run_queries(t, self.a.queries // 4)
            if not (self.a.keep_failing and len(self.failures) > nfail):
                self.psql(f"DROP TABLE t{t};", check=False)
            t += 1
            if t >= self.a.tables and time.time() > deadline:
                break
            if time.time() > deadline + 60:
                break
        c = self.counts
        mean = c["recall_sum"] / c["recall_n"] if c["recall_n"] else 0
        print(f"tables {t}, collation {self.collation}; mean recall@k {mean:.3f} over {c['recall_n']} "
              f"queries with matches (information, not a check); strict_order queries that returned "
              f"fewer rows than matched: {c['short_strict']}, relaxed_order: {c['short_relaxed']}; damaged index files {c['damaged']} "
              f"(errors with a corruption SQLSTATE: {c.get('damage_errors', 0)}); unexpected errors {c['errors']}; "
              f"builds in partitions {c.get('partition_builds', 0)}; "
              f"rounds of budget churn {c['churn_rounds']}, rows the index did not return in them {c['missing']} "
              f"(nodes unreachable over prefixes after inserts, until VACUUM: {c.get('unreachable_after_inserts', 0)})")
        for f in self.failures[:20]:
            print("----\n" + f)
        self.scan_server_log()
        print(f"fuzz: {c['inputs']} inputs, {c['queries']} queries, {c['kills']} kills, "
              f"{c['damaged']} damaged indexes, "
              f"{c['crashes']} crashes, {c['wrong']} wrong rows, {c['missing']} missing rows")
        return 1 if (c["crashes"] or c["wrong"] or c["errors"] or c["missing"]) else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True, help="initdb, pg_ctl and psql of the server")
    ap.add_argument("--datadir", required=True)
    ap.add_argument("--serverlog", required=True)
    ap.add_argument("--keep-failing", action="store_true",
                    help="keep the tables of failed checks (with --keep-server to look at them)")
    ap.add_argument("--damage", type=int, default=1, help="damaged-index cycles per table")
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--seconds", type=float, default=90)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--queries", type=int, default=120)
    ap.add_argument("--max-rows", type=int, default=1500)
    ap.add_argument("--churn-rounds", type=int, default=3,
                    help="rounds of writes under budget churn, every other table (0: none)")
    a = ap.parse_args()
    print(f"fuzz seed {a.seed}")
    sys.exit(Fuzz(a).main())
