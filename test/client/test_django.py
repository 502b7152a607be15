"""Django ORM (settings in code, no project): ArrayField(FloatField()) — double precision[],
gateann's float8_l2_ops — a PostgresIndex subclass using gateann, ordering by a Func with <->."""
import unittest

import django
import psycopg

import common

INDEX = "docs_dj_gateann"
INDEX_LANG = "docs_dj_lang_gateann"  # (embedding, meta -> 'lang'): for meta__lang=
Doc = L2Distance = GateannIndex = None


def define():
    """The index class, the distance expression and the model (after django.setup())."""
    global Doc, L2Distance, GateannIndex
    from django.contrib.postgres.fields import ArrayField
    from django.contrib.postgres.indexes import PostgresIndex
    from django.db import models
    from django.db.models.fields.json import KeyTransform

    class GateannIndex(PostgresIndex):
        """models.Index that creates a gateann index: USING gateann [WITH (...)]."""
        suffix = "gateann"  # the access method

        def __init__(self, *expressions, max_neighbors=None, build_search_list_size=None, **kwargs):
            self.max_neighbors = max_neighbors
            self.build_search_list_size = build_search_list_size
            super().__init__(*expressions, **kwargs)

        def deconstruct(self):  # for migrations
            path, args, kwargs = super().deconstruct()
            for k in ("max_neighbors", "build_search_list_size"):
                if getattr(self, k) is not None:
                    kwargs[k] = getattr(self, k)
            return path, args, kwargs

        def get_with_params(self):
            return [f"{k} = {int(getattr(self, k))}" for k in ("max_neighbors", "build_search_list_size")
                    if getattr(self, k) is not None]

    class L2Distance(models.Func):
        """embedding <-> query: L2Distance("embedding", [0.1, ...]) in order_by() or annotate()."""
        function = ""
        arg_joiner = " <-> "
        output_field = models.FloatField()

        def __init__(self, expression, vector, **extra):
            if not hasattr(vector, "resolve_expression"):
                vector = models.Value(list(vector), output_field=ArrayField(models.FloatField()))
            super().__init__(expression, vector, **extra)

    class Doc(models.Model):
        id = models.BigIntegerField(primary_key=True)
        tenant = models.IntegerField()
        lang = models.TextField()
        tags = ArrayField(models.IntegerField())
        created = models.DateTimeField()
        embedding = ArrayField(models.FloatField())  # double precision[]
        meta = models.JSONField()  # jsonb

        class Meta:
            app_label = "test_django"
            db_table = "docs_dj"
            indexes = [GateannIndex(fields=["embedding", "tenant", "lang", "tags", "created", "meta"],
                                    name=INDEX, max_neighbors=32),
                       # a functional index: the jsonb value of one key as a filter column
                       # (a second gateann index on the column: the planner must still
                       # give the IN lists of the tests above to the first)
                       GateannIndex(models.F("embedding"), KeyTransform("lang", "meta"),
                                    name=INDEX_LANG, max_neighbors=32)]


def setUpModule():
    from django.conf import settings  # (not at module level: the test loader would touch it)
    if not settings.configured:
        db = {"ENGINE": "django.db.backends.postgresql", "NAME": common.DBNAME, "HOST": common.HOST,
              "PORT": str(common.PORT), "USER": common.USER or ""}
        settings.configure(
            DATABASES={"default": db,
                       # psycopg's server-side binding: parameters as $n, not literals in the SQL
                       "server_side": {**db, "OPTIONS": {"server_side_binding": True}}},
            # this module is the app of the model (no project or app directory)
            INSTALLED_APPS=["django.contrib.postgres", "test_django"],
            USE_TZ=True, TIME_ZONE="UTC", DEFAULT_AUTO_FIELD="django.db.models.BigAutoField")
        django.setup()
    define()
    from django.db import connection
    d = common.data()
    with connection.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS docs_dj")
    with connection.schema_editor() as editor:
        # as a migration would: the table (with the indexes of Meta.indexes) ...
        indexes = list(Doc._meta.indexes)
        Doc._meta.indexes = []
        editor.create_model(Doc)
    Doc.objects.bulk_create([Doc(id=r[0], tenant=r[1], lang=r[2], tags=r[3], created=r[4], embedding=r[5],
                                 meta=d.meta[j])
                             for j, r in enumerate(d.rows())], batch_size=2000)
    with connection.schema_editor() as editor:
        # ... and the indexes added to a table that has rows (AddIndex): gateann builds
        Doc._meta.indexes = indexes
        for index in indexes:
            editor.add_index(Doc, index)
    with connection.cursor() as cur:
        # the planner's estimate of meta -> 'tenant' = '6' (README, "Columns and conditions")
        cur.execute("CREATE STATISTICS docs_dj_meta_tenant ON (meta -> 'tenant') FROM docs_dj")
        cur.execute("ANALYZE docs_dj")


class DjangoTest(unittest.TestCase):
    using = "default"

    def setUp(self):
        from django.db import connections
        self.conn = connections[self.using]
        with self.conn.cursor() as cur:
            cur.execute(f"SET gateann.search_list_size = {common.SEARCH_LIST_SIZE}")
        # Django's default psycopg cursors put the parameters into the SQL text (client-side
        # binding); server_side_binding sends them apart ($1, ...)
        client_side = issubclass(self.conn.connection.cursor_factory, psycopg.ClientCursor)
        self.assertEqual(client_side, self.using == "default")

    def set(self, *stmts):
        with self.conn.cursor() as cur:
            for s in stmts:
                cur.execute(s)

    def run_form(self, label, make_qs, pushed, not_pushed=(), index=INDEX, rechecked=()):
        """make_qs(i): the queryset of query i (ids, ordered by distance, first 10)."""
        cond = common.check_index_scan(self, common.parse_explain(make_qs(0).explain(format="json")),
                                       index, pushed, not_pushed, rechecked=rechecked)
        got = [list(make_qs(i)) for i in range(common.QUERIES)]
        self.set("SET enable_indexscan = off", "SET enable_bitmapscan = off")
        try:
            common.check_exact_plan(self, common.parse_explain(make_qs(0).explain(format="json")), index)
            exact = [list(make_qs(i)) for i in range(common.QUERIES)]
        finally:
            self.set("RESET enable_indexscan", "RESET enable_bitmapscan")
        mean, low = common.check_recall(self, label, got, exact)
        common.report(label, cond, mean, low)

    def qs(self):
        return Doc.objects.using(self.using)

    def nearest(self, qs, i):
        return qs.order_by(L2Distance("embedding", common.data().query_list(i))).values_list("id", flat=True)[:10]

    # ---------------------------------------------------------------------------------------
    def test_index(self):
        """GateannIndex in Meta.indexes made a gateann index on double precision[] (float8_l2_ops)"""
        with self.conn.cursor() as cur:
            cur.execute("SELECT pg_get_indexdef(%s::regclass), "
                        "(SELECT opcname FROM pg_index i JOIN pg_opclass o ON o.oid = i.indclass[0] "
                        " WHERE i.indexrelid = %s::regclass), "
                        "format_type(atttypid, atttypmod) FROM pg_attribute "
                        "WHERE attrelid = 'docs_dj'::regclass AND attname = 'embedding'", [INDEX, INDEX])
            indexdef, opclass, coltype = cur.fetchone()
        self.assertIn("USING gateann", indexdef)
        self.assertIn("max_neighbors='32'", indexdef)
        self.assertEqual(coltype, "double precision[]")
        self.assertEqual(opclass, "float8_l2_ops")
        common.note(f"{indexdef} (vector column {coltype}, {opclass})")

    def test_filter_equal(self):
        """.filter(tenant=t).order_by(L2Distance('embedding', list))"""
        d = common.data()
        self.run_form("filter(tenant=)", lambda i: self.nearest(self.qs().filter(tenant=d.q_tenant[i]), i), ["tenant"])

    def test_filter_in(self):
        """.filter(tenant__in=[...], lang__in=[...])"""
        d = common.data()
        self.run_form("filter(tenant__in=, lang__in=)",
                      lambda i: self.nearest(self.qs().filter(tenant__in=d.q_tenants[i], lang__in=["de", "fr"]), i),
                      ["tenant", "lang"])

    def test_filter_contains(self):
        """.filter(tags__contains=[t]) (@>) and tags__overlap (&&)"""
        d = common.data()
        self.run_form("filter(tags__contains=)",
                      lambda i: self.nearest(self.qs().filter(tags__contains=[d.q_tag[i]]), i), ["tags"])
        self.run_form("filter(tags__overlap=, tenant=)",
                      lambda i: self.nearest(self.qs().filter(tags__overlap=[d.q_tag[i], d.q_tag[i] % common.TAGS + 1],
                                                              tenant=d.q_tenant[i]), i), ["tags", "tenant"])

    def test_filter_range(self):
        """.filter(created__range=(a, b), lang=l)"""
        d = common.data()
        self.run_form("filter(created__range=, lang=)",
                      lambda i: self.nearest(self.qs().filter(created__range=d.date_range(i), lang=d.q_lang[i]), i),
                      ["created", "lang"])

    def test_json(self):
        """JSONField: .filter(meta__contains={...}) (@>), meta__has_key (?), meta__has_any_keys (?|)"""
        d = common.data()
        self.run_form("filter(meta__contains={lang})",
                      lambda i: self.nearest(self.qs().filter(meta__contains={"lang": d.q_lang[i]}), i), ["meta"])
        self.run_form("filter(meta__contains={tags: [t]}, tenant=)",
                      lambda i: self.nearest(self.qs().filter(meta__contains={"tags": [d.q_tag[i]]},
                                                              tenant__in=d.q_tenants[i]), i), ["meta", "tenant"])
        self.run_form("filter(meta__has_key='vip')",
                      lambda i: self.nearest(self.qs().filter(meta__has_key="vip"), i), ["meta"])
        self.run_form("filter(meta__has_any_keys=[...])",
                      lambda i: self.nearest(self.qs().filter(meta__has_any_keys=["vip", "nope"]), i), ["meta"])

    def test_json_key(self):
        """JSONField key equality .filter(meta__lang='de') through a functional GateannIndex on
        (embedding, KeyTransform('lang', 'meta')): meta -> 'lang' = '"de"'::jsonb"""
        d = common.data()
        self.run_form("filter(meta__lang=)", lambda i: self.nearest(self.qs().filter(meta__lang=d.q_lang[i]), i),
                      ["meta"], index=INDEX_LANG)

    def test_json_key_column(self):
        """JSONField key equality .filter(meta__tenant=t) with no functional index on that key:
        meta -> 'tenant' = '6'::jsonb reaches the index's jsonb column as meta @> '{"tenant": 6}'
        (lossy: the equality stays a Filter)"""
        d = common.data()
        self.run_form("filter(meta__tenant=)",
                      lambda i: self.nearest(self.qs().filter(meta__tenant=d.q_tenant[i]), i),
                      [], rechecked=["meta"])

    def test_annotate(self):
        """.annotate(distance=L2Distance(...)).filter(tenant=t).order_by('distance'): model objects"""
        d = common.data()
        objs = list(self.qs().annotate(distance=L2Distance("embedding", d.query_list(5)))
                    .filter(tenant=d.q_tenant[5]).order_by("distance")[:10])
        plan = common.parse_explain(self.qs().annotate(distance=L2Distance("embedding", d.query_list(5)))
                                    .filter(tenant=d.q_tenant[5]).order_by("distance")[:10].explain(format="json"))
        common.check_index_scan(self, plan, INDEX, ["tenant"])
        self.assertEqual(len(objs), 10)
        dists = [o.distance for o in objs]
        self.assertEqual(dists, sorted(dists))
        self.assertTrue(all(o.tenant == d.q_tenant[5] for o in objs))
        self.assertEqual(len(objs[0].embedding), common.DIMS)
        common.note(f"10 Doc objects with .distance {dists[0]:.3f}..{dists[-1]:.3f} ascending, via the index")


class DjangoServerSideBindingTest(DjangoTest):
    """The same with OPTIONS {'server_side_binding': True} (parameters sent apart from the SQL)."""
    using = "server_side"
    test_index = None  # (done once above)


if __name__ == "__main__":
    unittest.main(verbosity=2)
