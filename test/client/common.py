"""Shared pieces of the client tests: connection settings, the data, plan and recall checks.

run.sh exports PGHOST (the socket directory), PGPORT and PGDATABASE of a throw-away server
with gateann created.  Every test loads the same rows (fixed seed) into a table of its own,
through its own client, and checks three things per query form:
  (a) EXPLAIN (FORMAT JSON) shows an Index Scan on the gateann index,
  (b) which filter columns are in its Index Cond (pushed into the scan),
  (c) recall@10 against the same query run with index scans off (exact: Sort over a Seq Scan),
      averaged over QUERIES queries, >= MIN_RECALL, and no query at 0.
"""
import datetime
import json
import os
import re

import numpy as np
import psycopg

# 20,000 rows: at 4,000 (and below about 12,000) the planner prefers a Sort over a Seq Scan
# (cost 177 against the index scan's startup cost of 513 at 4,000 rows with a 10 % filter)
ROWS = 20000
DIMS = 32
CLUSTERS = 16
QUERIES = 20
K = 10
SEED = 20240611
MIN_RECALL = 0.95
# gateann.search_list_size for the tests (the default is 100)
SEARCH_LIST_SIZE = int(os.environ.get("GATEANN_CLIENT_SEARCH_LIST_SIZE", "100"))

LANGS = ["en", "de", "fr", "es", "it"]
TAGS = 30  # tags are 1..TAGS
EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)

HOST = os.environ.get("PGHOST", "/tmp")
PORT = int(os.environ.get("PGPORT", "5432"))
DBNAME = os.environ.get("PGDATABASE", "postgres")
USER = os.environ.get("PGUSER") or None


def conninfo():
    s = f"host={HOST} port={PORT} dbname={DBNAME}"
    return s + (f" user={USER}" if USER else "")


def sqlalchemy_url(driver="psycopg"):
    # the socket directory goes in the query string: postgresql+psycopg:///db?host=/dir&port=N
    user = USER or ""
    return f"postgresql+{driver}://{user}@/{DBNAME}?host={HOST}&port={PORT}"


class Data:
    """ROWS clustered Gaussian vectors (float32) with metadata, and QUERIES query vectors."""

    def __init__(self, seed=SEED):
        rng = np.random.default_rng(seed)
        centers = rng.normal(0.0, 1.0, (CLUSTERS, DIMS))
        which = rng.integers(0, CLUSTERS, ROWS)
        self.vectors = (centers[which] + rng.normal(0.0, 0.35, (ROWS, DIMS))).astype(np.float32)
        self.ids = list(range(1, ROWS + 1))
        self.tenant = [int(x) for x in rng.integers(0, 10, ROWS)]
        self.lang = [LANGS[x] for x in rng.choice(len(LANGS), ROWS, p=[0.4, 0.2, 0.2, 0.1, 0.1])]
        self.tags = [sorted(int(t) for t in rng.choice(np.arange(1, TAGS + 1), rng.integers(1, 5), replace=False))
                     for _ in range(ROWS)]
        self.created = [EPOCH + datetime.timedelta(seconds=int(s)) for s in rng.integers(0, 365 * 86400, ROWS)]
        # jsonb metadata, as applications keep it: the row's language and tenant, a flag on
        # a tenth of the rows, a list of its first tags (drawn from the columns above, so the
        # rest of the stream is unchanged)
        self.meta = [dict({"lang": self.lang[i], "tenant": self.tenant[i], "tags": self.tags[i][:2]},
                          **({"vip": True} if self.tenant[i] == 3 else {}))
                     for i in range(ROWS)]
        qwhich = rng.integers(0, CLUSTERS, QUERIES)
        self.queries = (centers[qwhich] + rng.normal(0.0, 0.35, (QUERIES, DIMS))).astype(np.float32)
        # a filter value per query, so that every query filters differently
        self.q_tenant = [int(x) for x in rng.integers(0, 10, QUERIES)]
        self.q_tenants = [sorted(int(t) for t in rng.choice(10, 3, replace=False)) for _ in range(QUERIES)]
        self.q_tag = [int(x) for x in rng.integers(1, TAGS + 1, QUERIES)]
        self.q_lang = [LANGS[int(x)] for x in rng.integers(0, 3, QUERIES)]
        self.q_month = [int(x) for x in rng.integers(1, 10, QUERIES)]

    def rows(self):
        """(id, tenant, lang, tags, created, embedding as a list of Python floats) per row."""
        for i in range(ROWS):
            yield (self.ids[i], self.tenant[i], self.lang[i], self.tags[i], self.created[i],
                   self.vectors[i].tolist())

    def query_list(self, i):
        return self.queries[i].tolist()

    def date_range(self, i):
        """[start, end) of three months from month q_month[i] of 2024."""
        m = self.q_month[i]
        start = EPOCH.replace(month=m)
        end = EPOCH.replace(month=m + 3)
        return start, end


_DATA = None


def data():
    global _DATA
    if _DATA is None:
        _DATA = Data()
    return _DATA


# ------------------------------------------------------------------------------- plans

def plan_nodes(plan):
    """Every node of a plan (the "Plan" object of EXPLAIN (FORMAT JSON)), depth first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def parse_explain(result):
    """The top "Plan" of EXPLAIN (FORMAT JSON) output, as a client returns it: a JSON string,
    rows of one string, or already decoded (psycopg decodes json)."""
    if isinstance(result, (list, tuple)) and result and isinstance(result[0], (list, tuple)):
        result = result[0][0]
    if isinstance(result, (str, bytes)):
        result = json.loads(result)
    if isinstance(result, list):
        result = result[0]
    return result["Plan"]


def describe(plan):
    return " -> ".join(f"{n['Node Type']}" + (f" on {n['Index Name']}" if "Index Name" in n else "")
                       for n in plan_nodes(plan))


def mentions(expr, column):
    return re.search(r"(?<![\w.])(\w+\.)?" + re.escape(column) + r"\b", expr or "") is not None


def check_index_scan(tc, plan, index, pushed, not_pushed=(), order_column="embedding", rechecked=()):
    """Assert (a) an Index Scan on `index` ordered by order_column, (b) every column of
    `pushed` in its Index Cond and none in a Filter above or in the scan; columns of
    `not_pushed` must not be in the Index Cond (they are expected in a Filter); columns of
    `rechecked` in the Index Cond and in a Filter too (a lossy index condition: the executor
    checks the query's own on the rows the index returns).  Returns the Index Cond."""
    scans = [n for n in plan_nodes(plan) if n.get("Index Name") == index]
    tc.assertTrue(scans, f"no scan of {index} in the plan: {describe(plan)}")
    scan = scans[0]
    tc.assertEqual(scan["Node Type"], "Index Scan", f"plan: {describe(plan)}")
    order = scan.get("Order By", "")
    order = " ".join(order) if isinstance(order, list) else order
    tc.assertTrue(mentions(order, order_column), f"the scan is not ordered by {order_column}: {order!r}")
    cond = scan.get("Index Cond", "")
    filters = " ".join(n.get("Filter", "") for n in plan_nodes(plan))
    for col in pushed:
        tc.assertTrue(mentions(cond, col), f"{col} not in Index Cond {cond!r} (Filter {filters!r})")
        tc.assertFalse(mentions(filters, col), f"{col} also in a Filter {filters!r}")
    for col in rechecked:
        tc.assertTrue(mentions(cond, col), f"{col} not in Index Cond {cond!r} (Filter {filters!r})")
        tc.assertTrue(mentions(filters, col), f"{col} not rechecked in a Filter {filters!r}")
    for col in not_pushed:
        tc.assertFalse(mentions(cond, col), f"{col} unexpectedly in Index Cond {cond!r}")
        tc.assertTrue(mentions(filters, col), f"{col} neither in Index Cond nor in a Filter: {describe(plan)}")
    # how the query vector reached the server: '{...}'::double precision[], ARRAY[...], $1 ...
    m = re.search(r"<[-#=]>\s*(.*?)\)?$", order)
    qtype = m.group(1) if m else order
    qtype = re.sub(r"'\{[^}]*\}'", "'{...}'", qtype)
    qtype = re.sub(r"'\[[^\]]*\]'", "'[...]'", qtype)
    qtype = re.sub(r"ARRAY\[[^\]]*\]", "ARRAY[...]", qtype)
    return f"{cond or '(none)'}; Order By ... <-> {qtype}"


def check_exact_plan(tc, plan, index):
    """The ground truth must not come from the index."""
    tc.assertFalse(any(n.get("Index Name") == index for n in plan_nodes(plan)),
                   f"the exact query used {index}: {describe(plan)}")


# ------------------------------------------------------------------------------- recall

def check_recall(tc, label, results, exacts, k=K):
    """results, exacts: lists (one per query) of ids.  Asserts the mean recall@k >= MIN_RECALL
    and no query at 0; returns (mean, min)."""
    tc.assertEqual(len(results), len(exacts))
    recalls = []
    for i, (got, want) in enumerate(zip(results, exacts)):
        want = list(want)[:k]
        tc.assertTrue(want, f"{label}: query {i} has no matching rows (bad test data)")
        tc.assertEqual(len(set(got)), len(got), f"{label}: query {i} returned duplicates {got}")
        tc.assertLessEqual(len(got), k)
        recalls.append(len(set(got) & set(want)) / len(want))
    mean, low = sum(recalls) / len(recalls), min(recalls)
    tc.assertGreaterEqual(mean, MIN_RECALL, f"{label}: mean recall@{k} {mean:.3f} (per query {recalls})")
    tc.assertGreater(low, 0.0, f"{label}: a query found none of its nearest rows (per query {recalls})")
    return mean, low


def report(label, plan_cond, mean, low, n=QUERIES):
    print(f"    {label}: Index Scan, Index Cond {plan_cond}; "
          f"recall@{K} mean {mean:.3f}, min {low:.2f} over {n} queries", flush=True)


def note(text):
    print(f"    {text}", flush=True)


# ------------------------------------------------------------------------------- captured searches

def captured_searches(tc, search, captured, index, check_plan):
    """A vector store's searches: search(i) runs query i through the client, which must send
    one statement, captured into `captured` as (statement, parameters).  Then the same
    statements again with psycopg: check_plan(plan) on EXPLAIN of the first (returns what the
    report shows of its Index Cond), and the exact answer of each with index scans off.
    Returns (ids per query from the client, exact ids per query, check_plan's result)."""
    got = []
    for i in range(QUERIES):
        captured.clear()
        got.append(search(i))
        tc.assertEqual(len(captured), 1, captured)
    exact = []
    cond = None
    with psycopg.connect(conninfo(), autocommit=True) as conn:
        conn.execute(f"SET gateann.search_list_size = {SEARCH_LIST_SIZE}")
        for i in range(QUERIES):
            captured.clear()
            search(i)
            statement, params = captured[0]
            if i == 0:
                cond = check_plan(parse_explain(
                    conn.execute("EXPLAIN (FORMAT JSON) " + statement, params).fetchall()))
            conn.execute("SET enable_indexscan = off")
            if i == 0:
                check_exact_plan(tc, parse_explain(
                    conn.execute("EXPLAIN (FORMAT JSON) " + statement, params).fetchall()), index)
            exact.append([str(r[0]) for r in conn.execute(statement, params).fetchall()])
            conn.execute("RESET enable_indexscan")
    return got, exact, cond


def langchain_server():
    """Skip a langchain test module unless GATEANN_CLIENT_LANGCHAIN allows it and the server has
    pgvector and gateann_vector; then create gateann_vector (with pgvector)."""
    import unittest
    if os.environ.get("GATEANN_CLIENT_LANGCHAIN", "1") == "0":
        raise unittest.SkipTest("GATEANN_CLIENT_LANGCHAIN=0")
    with psycopg.connect(conninfo(), autocommit=True) as conn:
        have = {r[0] for r in conn.execute(
            "SELECT name FROM pg_available_extensions WHERE name IN ('vector', 'gateann_vector')")}
        if have != {"vector", "gateann_vector"}:
            raise unittest.SkipTest(f"the server lacks pgvector or gateann_vector (has {sorted(have)})")
        conn.execute("CREATE EXTENSION IF NOT EXISTS gateann_vector CASCADE")
