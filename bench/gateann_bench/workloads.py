"""Query workloads: a filter predicate, how its per-query values are drawn, the
same predicate as SQL (driver), as a numpy mask (ground truth) and as a pgbench
script with -D variables (QPS). Add a workload by adding an entry to WORKLOADS
(and, for a new predicate kind, a branch in each method and a pgbench script)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PRICE_MAX = 1000          # gen.py: price uniform in [0, PRICE_MAX)
TS_LO = 1577836800        # gen.py: ts uniform in [TS_LO, TS_HI) (unix seconds)
TS_HI = 1735689600
DAY = 86400


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str = "none"     # none | eq | eq_near | range | ts_range | tags_contains |
                           # tags_contains2 | tags_overlap | eq_and_range | eq_or_eq
                           # eq_near: column = the query's own nearest-centre label
                           #   (query table column near10, gen.query_near_labels)
    column: str = ""       # filter column
    nvals: int = 0         # eq: value uniform in 0..nvals-1 (queries spread evenly over classes)
    width: int = 0         # range: lo uniform in 0..PRICE_MAX-width, column in [lo, lo+width)
                           # ts_range: seconds; lo uniform in TS_LO..TS_HI-width
    ntags: int = 0         # tags: tag ids uniform in 0..ntags-1 (0 = most frequent tag)
    column2: str = ""      # eq_and_range: the range column; eq_or_eq: the second label
    nvals2: int = 0        # eq_or_eq: the second label uniform in 0..nvals2-1
    seed: int = 7

    def key(self) -> str:
        extra = f"-{self.column2}-{self.nvals2}" if self.column2 else ""
        return (f"{self.name}-{self.kind}-{self.column}-{self.nvals}-{self.width}-{self.ntags}"
                f"-{self.seed}{extra}")

    @property
    def nominal_selectivity(self) -> float | None:
        if self.kind == "none":
            return 1.0
        if self.kind == "range":
            return self.width / PRICE_MAX
        if self.kind == "ts_range":
            return self.width / (TS_HI - TS_LO)
        if self.kind in ("eq", "eq_near") and not self.column.startswith("zipf"):
            return 1.0 / self.nvals
        return None

    # ---- per-query filter values (deterministic) --------------------------
    def params(self, nq: int, ds=None) -> np.ndarray:
        rng = np.random.default_rng([self.seed, nq, len(self.name)])
        if self.kind == "eq_near":
            from .gen import query_near_labels
            return query_near_labels(ds)[:nq, None].astype(np.int64)
        if self.kind == "none":
            return np.zeros((nq, 0), np.int64)
        if self.kind == "eq":
            return rng.integers(0, self.nvals, (nq, 1))
        if self.kind == "range":
            return rng.integers(0, PRICE_MAX - self.width + 1, (nq, 1))
        if self.kind == "ts_range":
            return rng.integers(TS_LO, TS_HI - self.width + 1, (nq, 1))
        if self.kind == "tags_contains":
            return rng.integers(0, self.ntags, (nq, 1))
        if self.kind == "tags_overlap":
            return rng.integers(0, self.ntags, (nq, 2))
        if self.kind == "tags_contains2":       # two different tags
            t1 = rng.integers(0, self.ntags, nq)
            t2 = (t1 + rng.integers(1, self.ntags, nq)) % self.ntags
            return np.stack([t1, t2], 1)
        if self.kind == "eq_and_range":
            return np.stack([rng.integers(0, self.nvals, nq),
                             rng.integers(0, PRICE_MAX - self.width + 1, nq)], 1)
        if self.kind == "eq_or_eq":
            return np.stack([rng.integers(0, self.nvals, nq), rng.integers(0, self.nvals2, nq)], 1)
        raise ValueError(self.kind)

    # ---- SQL (psycopg placeholders: %(qid)s, %(v0)s, ...) ------------------
    def where_sql(self) -> str:
        c = self.column
        return {
            "none": "",
            "eq": f"WHERE {c} = %(v0)s",
            "eq_near": f"WHERE {c} = %(v0)s",
            "range": f"WHERE {c} >= %(v0)s AND {c} < %(v0)s + {self.width}",
            "ts_range": f"WHERE {c} >= to_timestamp(%(v0)s) AND {c} < to_timestamp(%(v0)s + {self.width})",
            "tags_contains": f"WHERE {c} @> ARRAY[%(v0)s]::int4[]",
            "tags_overlap": f"WHERE {c} && ARRAY[%(v0)s, %(v1)s]::int4[]",
            "tags_contains2": f"WHERE {c} @> ARRAY[%(v0)s, %(v1)s]::int4[]",
            "eq_and_range": f"WHERE {c} = %(v0)s AND {self.column2} >= %(v1)s "
                            f"AND {self.column2} < %(v1)s + {self.width}",
            # across two columns: not an index condition, the executor filters
            "eq_or_eq": f"WHERE ({c} = %(v0)s OR {self.column2} = %(v1)s)",
        }[self.kind]

    def sql(self, table: str, qtable: str, column: str = "embedding", op: str = "<->",
            k: int = 10) -> str:
        return (f"SELECT id FROM {table} {self.where_sql()} ORDER BY {column} {op} "
                f"(SELECT embedding FROM {qtable} WHERE qid = %(qid)s) LIMIT {k}")

    @staticmethod
    def args(qid: int, row: np.ndarray) -> dict:
        d = {"qid": int(qid)}
        d.update({f"v{i}": int(v) for i, v in enumerate(row)})
        return d

    # ---- numpy mask for ground truth -------------------------------------
    def mask(self, ds, s: int, e: int, params: np.ndarray) -> np.ndarray | None:
        """bool (len(params), e-s): rows s..e-1 that match each query's filter."""
        if self.kind == "none":
            return None
        if self.kind == "ts_range":       # ts: unix microseconds
            col = np.asarray(ds.col(self.column)[s:e])
            lo = params[:, 0:1] * 1_000_000
            return (col[None, :] >= lo) & (col[None, :] < lo + self.width * 1_000_000)
        if self.kind in ("eq_and_range", "eq_or_eq"):
            a = np.asarray(ds.col(self.column)[s:e])[None, :] == params[:, 0:1]
            b = np.asarray(ds.col(self.column2)[s:e])[None, :]
            if self.kind == "eq_or_eq":
                return a | (b == params[:, 1:2])
            return a & (b >= params[:, 1:2]) & (b < params[:, 1:2] + self.width)
        if self.kind in ("eq", "eq_near", "range"):
            col = np.asarray(ds.col(self.column)[s:e])
            v = params[:, 0:1]
            if self.kind != "range":
                return col[None, :] == v
            return (col[None, :] >= v) & (col[None, :] < v + self.width)
        offs, vals = ds.tags()
        o = np.asarray(offs[s:e + 1])
        tv = np.asarray(vals[o[0]:o[-1]])
        row = np.repeat(np.arange(e - s), np.diff(o))
        every = self.kind == "tags_contains2"     # @> {t1, t2}: both tags; && : either
        out = np.full((len(params), e - s), every)
        for t in np.unique(params):
            has = np.zeros(e - s, bool)
            has[row[tv == t]] = True
            if self.kind == "tags_contains":
                out[params[:, 0] == t] |= has
            elif every:
                for j in range(params.shape[1]):
                    out[params[:, j] == t] &= has
            else:
                out[(params == t).any(1)] |= has
        return out

    # ---- pgbench ---------------------------------------------------------
    def pgbench(self, table: str, qtable: str, nq: int, column: str = "embedding",
                k: int = 10) -> tuple[str, dict]:
        """(script file name under bench/pgbench/, -D variables)."""
        v = {"table": table, "column": column, "qtable": qtable, "nq": nq, "k": k}
        if self.kind == "none":
            return "knn.sql", v
        v["fcolumn"] = self.column
        if self.kind == "eq":
            return "knn_eq.sql", v | {"nvals": self.nvals}
        if self.kind == "eq_near":
            return "knn_eq_query.sql", v | {"qcolumn": "near10"}
        if self.kind == "range":
            return "knn_range.sql", v | {"range_max": PRICE_MAX, "width": self.width}
        if self.kind == "ts_range":
            return "knn_ts_range.sql", v | {"ts_lo": TS_LO, "ts_hi": TS_HI, "width": self.width}
        if self.kind == "tags_contains":
            return "knn_tags_contains.sql", v | {"ntags": self.ntags}
        if self.kind == "tags_overlap":
            return "knn_tags_overlap.sql", v | {"ntags": self.ntags}
        if self.kind == "tags_contains2":
            return "knn_tags_contains2.sql", v | {"ntags": self.ntags}
        if self.kind == "eq_and_range":
            return "knn_eq_range.sql", v | {"nvals": self.nvals, "fcolumn2": self.column2,
                                            "range_max": PRICE_MAX, "width": self.width}
        if self.kind == "eq_or_eq":
            return "knn_eq_or.sql", v | {"nvals": self.nvals, "fcolumn2": self.column2,
                                         "nvals2": self.nvals2}
        raise ValueError(self.kind)


def _w(*a, **k) -> tuple[str, Workload]:
    w = Workload(*a, **k)
    return w.name, w


WORKLOADS: dict[str, Workload] = dict([
    _w("unfiltered"),
    _w("label10", "eq", "label10", nvals=10),            # uniform, s = 10%
    _w("label100", "eq", "label100", nvals=100),         # uniform, s = 1%
    _w("zipf10", "eq", "zipf10", nvals=10),              # Zipf, s = 3.4%..34%
    *[_w(f"corr_a{a}", "eq", f"corr_a{a}", nvals=10) for a in (0, 25, 50, 75, 100)],
    # labels = clusters, and the query asks for its own cluster's label (GateANN
    # 5.4.6); corr_a100 above asks for a uniform label, 9 times in 10 another
    # cluster's, whose rows lie beyond the query's own cluster
    _w("corr_a100_near", "eq_near", "corr_a100", nvals=10),
    *[_w(f"range{p}", "range", "price", width=p * PRICE_MAX // 100) for p in (1, 5, 10, 20, 50)],
    # a time window: 30 days (s = 1.6 %) and 90 days (4.9 %) of the 5 years
    *[_w(f"ts{d}d", "ts_range", "ts", width=d * DAY) for d in (30, 90)],
    _w("tags_contains", "tags_contains", "tags", ntags=10),   # tags @> {t}, t among top 10
    _w("tags_overlap", "tags_overlap", "tags", ntags=100),    # tags && {t1,t2}, top 100
    _w("tags_contains2", "tags_contains2", "tags", ntags=10),  # tags @> {t1,t2}, top 10
    # two indexed columns in one condition: label10 = a AND price in a 20 % range (s = 2 %)
    _w("label10_and_range20", "eq_and_range", "label10", nvals=10, width=200, column2="price"),
    # OR across columns: the planner cannot push it into the index (s = 10.9 %)
    _w("label10_or_label100", "eq_or_eq", "label10", nvals=10, column2="label100", nvals2=100),
])
