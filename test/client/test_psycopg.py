"""psycopg 3: query vectors as a list and as a numpy array, prepared statements, generic plans,
= ANY(%s) with a list, tags @> ..."""
import unittest

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.numeric import Int4

import common
import numpy_adapter

TABLE = "docs_pg"
INDEX = "docs_pg_gateann"


def setUpModule():
    d = common.data()
    with psycopg.connect(common.conninfo(), autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.execute(f"""CREATE TABLE {TABLE} (id bigint PRIMARY KEY, tenant int, lang text,
                         tags int[], created timestamptz, embedding real[])""")
        with conn.cursor().copy(f"COPY {TABLE} (id, tenant, lang, tags, created, embedding) FROM STDIN") as cp:
            for row in d.rows():
                cp.write_row(row)
        conn.execute(f"CREATE INDEX {INDEX} ON {TABLE} USING gateann (embedding, tenant, lang, tags, created)")
        conn.execute(f"ANALYZE {TABLE}")


class PsycopgTest(unittest.TestCase):
    def setUp(self):
        self.conn = psycopg.connect(common.conninfo(), autocommit=True)
        self.conn.execute(f"SET gateann.search_list_size = {common.SEARCH_LIST_SIZE}")

    def tearDown(self):
        self.conn.close()

    def explain(self, query, params, **kw):
        rows = self.conn.execute("EXPLAIN (FORMAT JSON) " + query, params, **kw).fetchall()
        return common.parse_explain(rows)

    def ids(self, query, params, **kw):
        return [r[0] for r in self.conn.execute(query, params, **kw).fetchall()]

    def exact(self, query, params_list):
        """The same query per parameter set with index scans off: Sort over a Seq Scan."""
        self.conn.execute("SET enable_indexscan = off")
        self.conn.execute("SET enable_bitmapscan = off")
        try:
            common.check_exact_plan(self, self.explain(query, params_list[0]), INDEX)
            return [self.ids(query, p) for p in params_list]
        finally:
            self.conn.execute("RESET enable_indexscan")
            self.conn.execute("RESET enable_bitmapscan")

    def run_form(self, label, query, params_list, pushed, not_pushed=(), **kw):
        cond = common.check_index_scan(self, self.explain(query, params_list[0], **kw), INDEX,
                                       pushed, not_pushed)
        got = [self.ids(query, p, **kw) for p in params_list]
        mean, low = common.check_recall(self, label, got, self.exact(query, params_list))
        common.report(label, cond, mean, low)

    # ---------------------------------------------------------------------------------------
    def test_list_query_vector(self):
        """a Python list of floats, no cast (sent as double precision[]), WHERE tenant = %s"""
        d = common.data()
        q = f"SELECT id FROM {TABLE} WHERE tenant = %s ORDER BY embedding <-> %s LIMIT 10"
        self.run_form("list vector, tenant = %s", q,
                      [(d.q_tenant[i], d.query_list(i)) for i in range(common.QUERIES)], ["tenant"])

    def test_unfiltered(self):
        """no filter at all: the index still orders"""
        d = common.data()
        q = f"SELECT id FROM {TABLE} ORDER BY embedding <-> %s LIMIT 10"
        self.run_form("list vector, no filter", q, [(d.query_list(i),) for i in range(common.QUERIES)], [])

    def test_numpy_query_vector(self):
        """a numpy float32 array through numpy_adapter; text = and a timestamptz range"""
        numpy_adapter.register(self.conn)
        d = common.data()
        self.assertIsInstance(d.queries[0], np.ndarray)
        q = (f"SELECT id FROM {TABLE} WHERE lang = %s AND created >= %s AND created < %s "
             f"ORDER BY embedding <-> %s LIMIT 10")
        params = [(d.q_lang[i], *d.date_range(i), d.queries[i]) for i in range(common.QUERIES)]
        self.run_form("numpy vector, lang = %s AND created range", q, params, ["lang", "created"])
        # the same distances as a list would give (the dumper loses nothing)
        a = self.conn.execute(f"SELECT embedding <-> %s FROM {TABLE} WHERE id = 1", (d.queries[0],)).fetchone()
        b = self.conn.execute(f"SELECT embedding <-> %s FROM {TABLE} WHERE id = 1", (d.query_list(0),)).fetchone()
        self.assertEqual(a, b)

    def test_any_list(self):
        """tenant = ANY(%s) with a list of ints (sent as smallint[]), lang = ANY(%s) with strs"""
        d = common.data()
        q = f"SELECT id FROM {TABLE} WHERE tenant = ANY(%s) ORDER BY embedding <-> %s LIMIT 10"
        self.run_form("tenant = ANY(%s) with a list", q,
                      [(d.q_tenants[i], d.query_list(i)) for i in range(common.QUERIES)], ["tenant"])
        q = (f"SELECT id FROM {TABLE} WHERE lang = ANY(%s) AND tenant IN (%s, %s) "
             f"ORDER BY embedding <-> %s LIMIT 10")
        self.run_form("lang = ANY(%s) with a list of str, tenant IN (%s, %s)", q,
                      [(["de", "fr"], *d.q_tenants[i][:2], d.query_list(i)) for i in range(common.QUERIES)],
                      ["lang", "tenant"])

    def test_tags_contains(self):
        """tags @> / && with a list: a list of Python ints is sent as smallint[], and there is no
        integer[] @> smallint[] operator, so the parameter needs a cast or Int4 elements"""
        d = common.data()
        q = f"SELECT id FROM {TABLE} WHERE tags @> %s::int[] ORDER BY embedding <-> %s LIMIT 10"
        self.run_form("tags @> %s::int[]", q,
                      [([d.q_tag[i]], d.query_list(i)) for i in range(common.QUERIES)], ["tags"])
        q = f"SELECT id FROM {TABLE} WHERE tags && %s AND tenant = %s ORDER BY embedding <-> %s LIMIT 10"
        self.run_form("tags && [Int4(..), ...] AND tenant = %s", q,
                      [([Int4(d.q_tag[i]), Int4(d.q_tag[i] % common.TAGS + 1)], d.q_tenant[i], d.query_list(i))
                       for i in range(common.QUERIES)], ["tags", "tenant"])
        try:
            self.conn.execute(f"SELECT id FROM {TABLE} WHERE tags @> %s ORDER BY embedding <-> %s LIMIT 10",
                              ([7], d.query_list(0)))
            common.note("tags @> %s with [7] (no cast): works")
        except psycopg.errors.UndefinedFunction as e:
            common.note(f"tags @> %s with [7] (no cast) fails: {str(e).splitlines()[0]}")

    def test_prepared_generic_plan(self):
        """prepare=True under plan_cache_mode = force_generic_plan: the filters stay in the Index
        Cond of the generic plan ($n parameters)"""
        d = common.data()
        self.conn.execute("SET plan_cache_mode = force_generic_plan")
        q = (f"SELECT id FROM {TABLE} WHERE tenant = ANY(%s) AND lang = %s AND created < %s "
             f"ORDER BY embedding <-> %s LIMIT %s")
        params = [(d.q_tenants[i], d.q_lang[i], d.date_range(i)[1], d.query_list(i), 10)
                  for i in range(common.QUERIES)]
        got = [self.ids(q, p, prepare=True) for p in params]
        # the server-side statement psycopg prepared, and the plans it ran
        names = self.conn.execute(
            "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE %s", (f"%FROM {TABLE} WHERE tenant = ANY($1)%",)).fetchall()
        self.assertEqual(len(names), 1, names)
        name, generic, custom = names[0]
        self.assertEqual((generic, custom), (common.QUERIES, 0))
        plan = common.parse_explain(self.conn.execute(
            sql.SQL("EXPLAIN (FORMAT JSON) EXECUTE {}({})").format(
                sql.Identifier(name), sql.SQL(", ").join(map(sql.Literal, params[0])))).fetchall())
        cond = common.check_index_scan(self, plan, INDEX, ["tenant", "lang", "created"])
        self.assertIn("$1", cond.split(";")[0], "not the generic plan")
        self.conn.execute("RESET plan_cache_mode")
        mean, low = common.check_recall(self, "prepared, generic plan", got, self.exact(q, params))
        common.report(f"prepare=True, generic plan ({name}: {generic} generic executions)", cond, mean, low)

    def test_prepared_custom_plan(self):
        """prepare=True with the default plan_cache_mode (custom plans first, then perhaps generic)"""
        d = common.data()
        q = f"SELECT id FROM {TABLE} WHERE tenant = %s AND tags && %s::int[] ORDER BY embedding <-> %s LIMIT 10"
        params = [(d.q_tenant[i], [d.q_tag[i], d.q_tag[i] % common.TAGS + 1, (d.q_tag[i] + 7) % common.TAGS + 1],
                   d.query_list(i)) for i in range(common.QUERIES)]
        got = [self.ids(q, p, prepare=True) for p in params]
        cond = common.check_index_scan(self, self.explain(q, params[0]), INDEX, ["tenant", "tags"])
        mean, low = common.check_recall(self, "prepared", got, self.exact(q, params))
        common.report("prepare=True, plan_cache_mode auto, tenant = %s AND tags && %s::int[]", cond, mean, low)


if __name__ == "__main__":
    unittest.main(verbosity=2)
