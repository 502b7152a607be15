"""langchain-postgres PGVectorStore over a table with a gateann index (pgvector's vector type
through gateann_vector's vector_l2_ops).  Skipped when langchain-postgres is not installed or
the server has no pgvector."""
import time
import unittest
import uuid

import psycopg

import common

TABLE = "docs_lc"
INDEX = "docs_lc_gateann"
LC_ROWS = 1000  # rows added through the vector store (one INSERT each); the rest by COPY
engine = store = None
captured = []  # (statement, parameters) of the searches, as the driver received them


def lc_id(i):
    return str(uuid.UUID(int=i))


def setUpModule():
    global engine, store
    common.langchain_server()
    try:
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_postgres import Column, PGEngine, PGVectorStore
        from langchain_postgres.v2.indexes import DistanceStrategy, QueryOptions
        from sqlalchemy import event
    except ImportError as e:
        raise unittest.SkipTest(f"langchain-postgres not installed ({e})")
    with psycopg.connect(common.conninfo(), autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")

    class GateannQueryOptions(QueryOptions):
        """SET LOCAL gateann.search_list_size before each search (as HNSWQueryOptions does ef_search)."""
        def __init__(self, search_list_size=100):
            self.search_list_size = search_list_size

        def to_parameter(self):
            return [f"gateann.search_list_size = {self.search_list_size}"]

        def to_string(self):
            return self.to_parameter()[0]

    engine = PGEngine.from_connection_string(common.sqlalchemy_url("psycopg"))
    # the vector store's own table: langchain_id uuid, content text, embedding vector(32), the
    # metadata columns, langchain_metadata json
    engine.init_vectorstore_table(TABLE, common.DIMS, metadata_columns=[Column("tenant", "INTEGER"),
                                                                        Column("lang", "TEXT")])
    d = common.data()
    rows = list(d.rows())
    with psycopg.connect(common.conninfo(), autocommit=True) as conn:
        with conn.cursor().copy(f"COPY {TABLE} (langchain_id, content, embedding, tenant, lang) FROM STDIN") as cp:
            for r in rows[LC_ROWS:]:
                cp.write_row((lc_id(r[0]), f"doc {r[0]}", "[" + ",".join(map(repr, r[5])) + "]", r[1], r[2]))
        conn.execute(f"CREATE INDEX {INDEX} ON {TABLE} USING gateann (embedding vector_l2_ops, tenant, lang)")
    store = PGVectorStore.create_sync(engine, DeterministicFakeEmbedding(size=common.DIMS), TABLE,
                                      metadata_columns=["tenant", "lang"],
                                      distance_strategy=DistanceStrategy.EUCLIDEAN,
                                      index_query_options=GateannQueryOptions(common.SEARCH_LIST_SIZE))
    t0 = time.time()
    store.add_embeddings([f"doc {r[0]}" for r in rows[:LC_ROWS]], [r[5] for r in rows[:LC_ROWS]],
                         metadatas=[{"tenant": r[1], "lang": r[2]} for r in rows[:LC_ROWS]],
                         ids=[lc_id(r[0]) for r in rows[:LC_ROWS]])
    common.note(f"{LC_ROWS} rows through PGVectorStore.add_embeddings into the indexed table "
                f"({time.time() - t0:.1f} s), {len(rows) - LC_ROWS} by COPY before CREATE INDEX")
    with psycopg.connect(common.conninfo(), autocommit=True) as conn:
        conn.execute(f"ANALYZE {TABLE}")

    @event.listens_for(engine._pool.sync_engine, "before_cursor_execute")
    def capture(conn, cursor, statement, parameters, context, executemany):
        if "ORDER BY" in statement and TABLE in statement:
            captured.append((statement, parameters))


def tearDownModule():
    if engine is not None:
        engine._run_as_sync(engine.close())


class LangchainTest(unittest.TestCase):
    def run_form(self, label, make_filter, pushed, not_pushed=()):
        d = common.data()
        got, exact, cond = common.captured_searches(
            self, lambda i: [doc.id for doc in store.similarity_search_by_vector(
                d.query_list(i), k=10, filter=make_filter(i))],
            captured, INDEX, lambda plan: common.check_index_scan(self, plan, INDEX, pushed, not_pushed))
        mean, low = common.check_recall(self, label, got, exact)
        common.report(label, cond, mean, low)

    def test_unfiltered(self):
        """similarity_search_by_vector(list, k=10)"""
        self.run_form("no filter", lambda i: None, [])

    def test_eq(self):
        """filter={'tenant': t}"""
        d = common.data()
        self.run_form("filter {'tenant': t}", lambda i: {"tenant": d.q_tenant[i]}, ["tenant"])

    def test_in_and(self):
        """filter={'tenant': {'$in': [...]}, 'lang': {'$in': [...]}}"""
        d = common.data()
        self.run_form("filter {'tenant': {'$in'}, 'lang': {'$in'}}",
                      lambda i: {"tenant": {"$in": d.q_tenants[i]}, "lang": {"$in": ["de", "fr"]}},
                      ["tenant", "lang"])

    def test_range(self):
        """filter={'$and': [{'tenant': {'$gte': a}}, {'tenant': {'$lt': b}}, {'lang': l}]}"""
        d = common.data()
        self.run_form("filter {'$and': [tenant $gte, tenant $lt, lang]}",
                      lambda i: {"$and": [{"tenant": {"$gte": d.q_tenant[i] // 2}},
                                          {"tenant": {"$lt": d.q_tenant[i] // 2 + 3}}, {"lang": d.q_lang[i]}]},
                      ["tenant", "lang"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
