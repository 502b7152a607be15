"""SQLAlchemy 2 ORM (psycopg 3 driver): an ARRAY(REAL) vector column, the index from
sqlalchemy.Index(..., postgresql_using='gateann'), ordering by a custom operator."""
import datetime
import re
import unittest

from psycopg import sql as psql

from sqlalchemy import BigInteger, DateTime, Float, Index, Integer, String, create_engine, select, text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REAL, array
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.sql.expression import ClauseElement, Executable

import common

INDEX = "docs_sa_gateann"


class Base(DeclarativeBase):
    pass


class Doc(Base):
    __tablename__ = "docs_sa"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    tenant: Mapped[int] = mapped_column(Integer)
    lang: Mapped[str] = mapped_column(String)
    tags: Mapped[list[int]] = mapped_column(ARRAY(Integer))
    created: Mapped[datetime.datetime] = mapped_column(DateTime(timezone=True))
    embedding: Mapped[list[float]] = mapped_column(ARRAY(REAL))
    meta: Mapped[dict] = mapped_column(JSONB)
    __table_args__ = (
        Index(INDEX, "embedding", "tenant", "lang", "tags", "created", "meta", postgresql_using="gateann"),
    )


def l2(query):
    """Doc.embedding <-> query, as an ORDER BY expression (the query: a list of floats)."""
    return Doc.embedding.op("<->", return_type=Float)(query)


class Explain(Executable, ClauseElement):
    """EXPLAIN (FORMAT JSON) <statement>, executed through the session with its binds."""
    inherit_cache = False

    def __init__(self, stmt):
        self.stmt = stmt


@compiles(Explain, "postgresql")
def _compile_explain(element, compiler, **kw):
    return "EXPLAIN (FORMAT JSON) " + compiler.process(element.stmt, **kw)


engine = None


def setUpModule():
    global engine
    engine = create_engine(common.sqlalchemy_url("psycopg"))
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)  # the table and the gateann index (built on the empty table)
    d = common.data()
    with Session(engine) as s:
        # the index exists before the rows: every row goes through gateann's insert path
        s.execute(Doc.__table__.insert(), [
            dict(id=r[0], tenant=r[1], lang=r[2], tags=r[3], created=r[4], embedding=r[5], meta=d.meta[j])
            for j, r in enumerate(d.rows())])
        s.commit()
    with engine.connect() as c:
        # without statistics on a key's expression the planner puts meta ->> 'lang' = 'en' at
        # 0.5 % of the rows (it is 40 %), and LIMIT 10 of an ordered scan then looks like half
        # the table's cost: README, "Columns and conditions", says to create these
        c.execute(text("CREATE STATISTICS docs_sa_meta_lang ON (meta ->> 'lang'), (meta -> 'lang') "
                       "FROM docs_sa"))
        c.execute(text("ANALYZE docs_sa"))
        c.commit()


def tearDownModule():
    engine.dispose()


class SQLAlchemyTest(unittest.TestCase):
    def setUp(self):
        self.session = Session(engine)
        self.session.execute(text(f"SET gateann.search_list_size = {common.SEARCH_LIST_SIZE}"))

    def tearDown(self):
        self.session.close()

    def run_form(self, label, make_stmt, pushed, not_pushed=(), rechecked=()):
        """make_stmt(i): the select of query i."""
        s = self.session
        plan = common.parse_explain(s.execute(Explain(make_stmt(0))).scalar())
        cond = common.check_index_scan(self, plan, INDEX, pushed, not_pushed, rechecked=rechecked)
        got = [s.scalars(make_stmt(i)).all() for i in range(common.QUERIES)]
        s.execute(text("SET enable_indexscan = off"))
        s.execute(text("SET enable_bitmapscan = off"))
        common.check_exact_plan(self, common.parse_explain(s.execute(Explain(make_stmt(0))).scalar()), INDEX)
        exact = [s.scalars(make_stmt(i)).all() for i in range(common.QUERIES)]
        s.execute(text("RESET enable_indexscan"))
        s.execute(text("RESET enable_bitmapscan"))
        mean, low = common.check_recall(self, label, got, exact)
        common.report(label, cond, mean, low)

    def test_index_created(self):
        """sqlalchemy.Index(..., postgresql_using='gateann') made a gateann index"""
        am = self.session.execute(text(
            "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam WHERE c.relname = :n"),
            {"n": INDEX}).scalar()
        self.assertEqual(am, "gateann")
        common.note(f"{INDEX}: {am}")

    def test_equal(self):
        """Doc.tenant == t, order_by(Doc.embedding.op('<->', return_type=Float)(list))"""
        d = common.data()
        self.run_form("tenant ==", lambda i: select(Doc.id).where(Doc.tenant == d.q_tenant[i])
                      .order_by(l2(d.query_list(i))).limit(10), ["tenant"])

    def test_in(self):
        """Doc.tenant.in_([...]) and Doc.lang.in_([...])"""
        d = common.data()
        self.run_form("tenant.in_(), lang.in_()",
                      lambda i: select(Doc.id).where(Doc.tenant.in_(d.q_tenants[i]), Doc.lang.in_(["de", "fr"]))
                      .order_by(l2(d.query_list(i))).limit(10), ["tenant", "lang"])

    def test_contains(self):
        """Doc.tags.contains([t]) (@>) and Doc.tags.overlap([...]) (&&)"""
        d = common.data()
        self.run_form("tags.contains()", lambda i: select(Doc.id).where(Doc.tags.contains([d.q_tag[i]]))
                      .order_by(l2(d.query_list(i))).limit(10), ["tags"])
        self.run_form("tags.overlap(), tenant ==",
                      lambda i: select(Doc.id).where(Doc.tags.overlap([d.q_tag[i], d.q_tag[i] % common.TAGS + 1]),
                                                     Doc.tenant == d.q_tenant[i])
                      .order_by(l2(d.query_list(i))).limit(10), ["tags", "tenant"])

    def test_range(self):
        """Doc.created.between(a, b), Doc.lang == l"""
        d = common.data()
        self.run_form("created.between(), lang ==",
                      lambda i: select(Doc.id).where(Doc.created.between(*d.date_range(i)), Doc.lang == d.q_lang[i])
                      .order_by(l2(d.query_list(i))).limit(10), ["created", "lang"])

    def test_jsonb(self):
        """JSONB: Doc.meta.contains({...}) (@>), Doc.meta.has_key() (?), has_all(array([...])) (?&),
        path_match() (@@), path_exists() (@?)"""
        d = common.data()
        self.run_form("meta.contains({lang})",
                      lambda i: select(Doc.id).where(Doc.meta.contains({"lang": d.q_lang[i]}))
                      .order_by(l2(d.query_list(i))).limit(10), ["meta"])
        self.run_form("meta.has_key('vip'), tags.contains()",
                      lambda i: select(Doc.id).where(Doc.meta.has_key("vip"), Doc.tags.contains([d.q_tag[i]]))
                      .order_by(l2(d.query_list(i))).limit(10), ["meta", "tags"])
        self.run_form("meta.path_match('$.lang == ...') (@@)",
                      lambda i: select(Doc.id).where(Doc.meta.path_match(f'$.lang == "{d.q_lang[i]}"'))
                      .order_by(l2(d.query_list(i))).limit(10), ["meta"])
        self.run_form("meta.path_exists('$ ? (@.lang == ...)') (@?)",
                      lambda i: select(Doc.id).where(Doc.meta.path_exists(f'$ ? (@.lang == "{d.q_lang[i]}")'))
                      .order_by(l2(d.query_list(i))).limit(10), ["meta"])
        # (a plain list would be bound as jsonb: jsonb ?& jsonb does not exist)
        self.run_form("meta.has_all(array([...]))",
                      lambda i: select(Doc.id).where(Doc.meta.has_all(array(["vip", "lang"])))
                      .order_by(l2(d.query_list(i))).limit(10), ["meta"])

    def test_jsonb_key(self):
        """JSONB key equality on the jsonb column itself: Doc.meta['lang'].astext == l renders
        meta ->> %(key)s = %(value)s, .in_([...]) meta ->> %(key)s IN (...); the index takes the
        jsonb column's condition, lossy: the equality stays a Filter.  (Doc.meta['lang'] alone renders jsonb subscripting, meta[$1],
        which also indexes arrays by position: not pushed)"""
        d = common.data()
        self.run_form("meta['lang'].astext ==",
                      lambda i: select(Doc.id).where(Doc.meta["lang"].astext == d.q_lang[i])
                      .order_by(l2(d.query_list(i))).limit(10), [], rechecked=["meta"])
        self.run_form("meta['lang'].astext.in_([...])",
                      lambda i: select(Doc.id).where(Doc.meta["lang"].astext.in_([d.q_lang[i], "it"]))
                      .order_by(l2(d.query_list(i))).limit(10), [], rechecked=["meta"])

    def test_jsonb_key_generic_plan(self):
        """Doc.meta['lang'].astext == l with psycopg preparing the statement under plan_cache_mode
        = force_generic_plan: the key is a parameter ($1) of the plan, which no expression column
        (meta ->> 'lang') can match; the jsonb column's condition is written when the scan starts"""
        d = common.data()
        s = self.session

        def stmt(i):
            return (select(Doc.id).where(Doc.meta["lang"].astext == d.q_lang[i])
                    .order_by(l2(d.query_list(i))).limit(10))
        raw = s.connection().connection.driver_connection
        s.execute(text("SET plan_cache_mode = force_generic_plan"))
        threshold = raw.prepare_threshold
        raw.prepare_threshold = 0  # prepared on its first execution
        try:
            got = [s.scalars(stmt(i)).all() for i in range(common.QUERIES)]
        finally:
            raw.prepare_threshold = threshold
        names = s.execute(text("SELECT name, generic_plans, custom_plans FROM pg_prepared_statements "
                               "WHERE statement LIKE '%meta ->> $1%'")).all()
        self.assertEqual(len(names), 1, names)
        name, generic, custom = names[0]
        self.assertEqual((generic, custom), (common.QUERIES, 0))
        # the plan it ran: EXPLAIN EXECUTE with query 0's parameters, in the order psycopg
        # numbered them (as they first appear in the SQL SQLAlchemy wrote)
        compiled = stmt(0).compile(dialect=engine.dialect)
        order = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", str(compiled))))
        args = psql.SQL(", ").join(psql.Literal(compiled.params[k]) for k in order)
        plan = common.parse_explain(raw.execute(psql.SQL("EXPLAIN (FORMAT JSON) EXECUTE {}({})").format(
            psql.Identifier(name), args)).fetchall())
        cond = common.check_index_scan(self, plan, INDEX, [], rechecked=["meta"])
        self.assertIn("$1", cond.split(";")[0], "not the generic plan")
        s.execute(text("RESET plan_cache_mode"))
        s.execute(text("SET enable_indexscan = off"))
        exact = [s.scalars(stmt(i)).all() for i in range(common.QUERIES)]
        s.execute(text("RESET enable_indexscan"))
        mean, low = common.check_recall(self, "meta['lang'].astext ==, generic plan", got, exact)
        common.report(f"meta['lang'].astext ==, generic plan ({generic} generic executions)", cond, mean, low)

    def test_not_pushed(self):
        """an OR across columns stays a Filter above the scan (which keeps streaming rows)"""
        d = common.data()
        self.run_form("tenant == OR lang == (not pushed)",
                      lambda i: select(Doc.id).where((Doc.tenant == d.q_tenant[i]) | (Doc.lang == "it"))
                      .order_by(l2(d.query_list(i))).limit(10), [], ["tenant", "lang"])

    def test_orm_objects(self):
        """select(Doc) returning ORM objects, ordered by the distance, with the distance as a column"""
        d = common.data()
        q = d.query_list(3)
        rows = self.session.execute(select(Doc, l2(q).label("dist")).where(Doc.tenant == d.q_tenant[3])
                                    .order_by(l2(q)).limit(10)).all()
        self.assertEqual(len(rows), 10)
        dists = [r.dist for r in rows]
        self.assertEqual(dists, sorted(dists))
        self.assertTrue(all(r.Doc.tenant == d.q_tenant[3] for r in rows))
        self.assertIsInstance(rows[0].Doc.embedding, list)
        self.assertEqual(len(rows[0].Doc.embedding), common.DIMS)
        common.note(f"10 Doc objects of tenant {d.q_tenant[3]}, distances {dists[0]:.3f}..{dists[-1]:.3f} ascending")


if __name__ == "__main__":
    unittest.main(verbosity=2)
