"""langchain-postgres PGVector (jsonb metadata, use_jsonb=True) over its own tables, with a
gateann index on (embedding, cmetadata).  Each metadata condition reaches the server as
jsonb_path_match(cmetadata, '$.field <op> $value', '{"value": ...}'); gateann's planner hook
adds cmetadata @@ '$.field <op> <value>' as an index condition, and the call stays a Filter
(it is checked again on the rows the index returns).  Skipped when langchain-postgres is not
installed or the server has no pgvector."""
import time
import unittest
import uuid

import psycopg

import common

COLLECTION = "gateann_pgvector"
INDEX = "langchain_pg_embedding_gateann"
store = None
captured = []  # (statement, parameters) of the searches, as the driver received them


def lc_id(i):
    return str(uuid.UUID(int=i))


def setUpModule():
    global store
    common.langchain_server()
    try:
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_postgres.vectorstores import DistanceStrategy, PGVector
        from sqlalchemy import event
    except ImportError as e:
        raise unittest.SkipTest(f"langchain-postgres (PGVector) not installed ({e})")

    store = PGVector(embeddings=DeterministicFakeEmbedding(size=common.DIMS), collection_name=COLLECTION,
                     connection=common.sqlalchemy_url("psycopg"), use_jsonb=True,
                     distance_strategy=DistanceStrategy.EUCLIDEAN, pre_delete_collection=True)
    d = common.data()
    t0 = time.time()
    for lo in range(0, common.ROWS, 2000):  # one INSERT a batch: 5 parameters a row
        rows = range(lo, min(lo + 2000, common.ROWS))
        store.add_embeddings([f"doc {d.ids[i]}" for i in rows], [d.vectors[i].tolist() for i in rows],
                             metadatas=[{"tenant": d.tenant[i], "lang": d.lang[i]} for i in rows],
                             ids=[lc_id(d.ids[i]) for i in rows])
    common.note(f"{common.ROWS} rows through PGVector.add_embeddings ({time.time() - t0:.1f} s)")
    with psycopg.connect(common.conninfo(), autocommit=True) as conn:
        conn.execute(f"DROP INDEX IF EXISTS {INDEX}")
        conn.execute(f"CREATE INDEX {INDEX} ON langchain_pg_embedding "
                     "USING gateann (embedding vector_l2_ops, cmetadata)")
        conn.execute("ANALYZE langchain_pg_embedding")

    @event.listens_for(store._engine, "before_cursor_execute")
    def capture(conn, cursor, statement, parameters, context, executemany):
        if "ORDER BY" in statement and "langchain_pg_embedding" in statement:
            captured.append((statement, parameters))


class LangchainPGVectorTest(unittest.TestCase):
    def run_form(self, label, make_filter, conditions):
        """conditions: how many jsonb_path_match calls the filter makes, each expected in the
        Index Cond as cmetadata @@ and in a Filter as the call"""
        d = common.data()

        def check_plan(plan):
            scan = [n for n in common.plan_nodes(plan) if n.get("Index Name") == INDEX]
            self.assertTrue(scan, f"no scan of {INDEX}: {common.describe(plan)}")
            cond = scan[0].get("Index Cond", "")
            filters = " ".join(n.get("Filter", "") for n in common.plan_nodes(plan))
            self.assertEqual(cond.count("cmetadata @@"), conditions,
                             f"Index Cond {cond!r} (Filter {filters!r})")
            self.assertEqual(filters.count("jsonb_path_match"), conditions,
                             f"the calls stay a Filter: {filters!r}")
            return cond or "(none)"

        got, exact, cond = common.captured_searches(
            self, lambda i: [doc.id for doc in store.similarity_search_by_vector(
                d.query_list(i), k=10, filter=make_filter(i))],
            captured, INDEX, check_plan)
        mean, low = common.check_recall(self, label, got, exact)
        common.report(label, cond, mean, low)

    def test_unfiltered(self):
        """similarity_search_by_vector(list, k=10)"""
        self.run_form("PGVector, no filter", lambda i: None, 0)

    def test_eq(self):
        """filter={'tenant': t}: jsonb_path_match(cmetadata, '$.tenant == $value', ...)"""
        d = common.data()
        self.run_form("PGVector {'tenant': t}", lambda i: {"tenant": d.q_tenant[i]}, 1)

    def test_and(self):
        """filter={'$and': [{'tenant': {'$gte': a}}, {'tenant': {'$lt': b}}, {'lang': {'$eq': l}}]}"""
        d = common.data()
        self.run_form("PGVector {'$and': [tenant $gte, tenant $lt, lang $eq]}",
                      lambda i: {"$and": [{"tenant": {"$gte": d.q_tenant[i] // 2}},
                                          {"tenant": {"$lt": d.q_tenant[i] // 2 + 3}},
                                          {"lang": {"$eq": d.q_lang[i]}}]},
                      3)


if __name__ == "__main__":
    unittest.main(verbosity=2)
