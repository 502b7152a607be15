"""SQLAlchemy 2 ORM (psycopg 3 driver): an ARRAY(REAL) vector column, the index from
sqlalchemy.Index(..., postgresql_using='gateann'), ordering by a custom operator."""
import datetime
import unittest

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

    def run_form(self, label, make_stmt, pushed, not_pushed=()):
        """make_stmt(i): the select of query i."""
        s = self.session
        plan = common.parse_explain(s.execute(Explain(make_stmt(0))).scalar())
        cond = common.check_index_scan(self, plan, INDEX, pushed, not_pushed)
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
