#!/usr/bin/env python3
"""Deterministic synthetic datasets for the gateann benchmarks.

Vectors: `clusters` centres drawn N(0, 1) in `dim` dimensions; every cluster has
its own random orthonormal basis of `intrinsic` directions; a point is
    centre + basis @ z  (z ~ N(0, s_c^2) in `intrinsic` dims, s_c per cluster)
         + isotropic N(0, noise^2) in all `dim` dims,
so the intrinsic dimension is controlled by `intrinsic` (and `noise`), unlike
uniform random data, where every point is about equally far from every other.
Cluster sizes are skewed (log-normal weights). Query vectors come from the same
distribution through a separate random stream (they are not dataset rows).

Filter columns (one random stream each, so adding one never changes another):
  label10, label100   uniform labels 0..9 / 0..99
  zipf10              Zipf(1.0) over 10 classes, class 0 most frequent (~34%)
  corr_aXX            10 labels correlated with the vector space (GateANN 5.4.6):
                      k-means (k=10) on the vectors; with probability alpha a row
                      gets the label of its nearest k-means centre (assignment
                      balanced so each label keeps ~10% of rows), otherwise a
                      uniform random label (XX = alpha*100; alpha=0 is random)
                      Queries get the label of their own nearest centre (the
                      same balanced assignment), in the query table's near10
                      column: GateANN 5.4.6's alpha=1 workload asks for it
  price               float8 uniform in [0, 1000)  (range predicates)
  ts                  timestamptz uniform in [2020-01-01, 2025-01-01)
  tags                int4[] multi-label: 1 + Zipf-like number of tags per row
                      (mean ~2.5, at most 16), tag ids Zipf(1.0) over 0..999
                      (tag 0 most frequent)

Row ids are 1..n (bigint), query ids 1..nq. Everything is cached as .npy under
bench/data/<dataset name>/ and loaded into PostgreSQL with binary COPY.

CLI:  python3 -m gateann_bench gen --n 100000 --dim 128 [--load]   (see --help)
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .common import DATA_DIR, connect, log, write_json

GEN_VERSION = 1          # bump when the generated data changes for the same spec
CHUNK = 65536            # rows per generation chunk (fixed: part of determinism)
PG_EPOCH_US = 946684800 * 1_000_000   # 2000-01-01 in unix microseconds
TS_LO = 1577836800       # 2020-01-01 (unix seconds)
TS_HI = 1735689600       # 2025-01-01
N_TAGS = 1000
MAX_TAGS_PER_ROW = 16


def _human(n: int) -> str:
    for div, suf in ((1_000_000, "m"), (1000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suf}"
    return str(n)


@dataclass(frozen=True)
class DatasetSpec:
    n: int = 100_000
    dim: int = 128
    intrinsic: int = 16          # dimension of each cluster's subspace
    clusters: int = 0            # 0: automatic, clamp(n / 1000, 16, 1024)
    noise: float = 0.1           # isotropic noise std per dimension
    nq: int = 1000               # query vectors generated
    seed: int = 42
    corr_alphas: tuple = (0.0, 0.25, 0.5, 0.75, 1.0)

    @property
    def n_clusters(self) -> int:
        return self.clusters or int(min(1024, max(16, self.n // 1000)))

    @property
    def name(self) -> str:
        return f"c{_human(self.n)}_d{self.dim}_i{self.intrinsic}_s{self.seed}"

    @property
    def table(self) -> str:
        return f"bench_{self.name}"

    @property
    def qtable(self) -> str:
        return f"bench_{self.name}_q"

    def key(self) -> dict:
        d = dataclasses.asdict(self)
        d["corr_alphas"] = list(self.corr_alphas)
        d["gen_version"] = GEN_VERSION
        return d

    def digest(self) -> str:
        return hashlib.sha1(json.dumps(self.key(), sort_keys=True).encode()).hexdigest()[:12]

    @property
    def dir(self) -> Path:
        return DATA_DIR / self.name

    def corr_columns(self) -> list[tuple[float, str]]:
        return [(a, f"corr_a{int(round(a * 100))}") for a in self.corr_alphas]


def _rng(spec: DatasetSpec, *stream: int) -> np.random.Generator:
    return np.random.default_rng([spec.seed, GEN_VERSION, *stream])


# --------------------------------------------------------------------------
# generation
# --------------------------------------------------------------------------
class _Model:
    """The mixture that vectors and queries are sampled from."""

    def __init__(self, spec: DatasetSpec):
        rng = _rng(spec, 1)
        k, d, D = spec.n_clusters, min(spec.intrinsic, spec.dim), spec.dim
        self.spec = spec
        self.centres = rng.standard_normal((k, D)).astype(np.float32)
        w = rng.lognormal(0.0, 0.5, k)
        self.weights = w / w.sum()
        # per cluster spread: points spread ~ centre distance so clusters overlap
        self.spread = rng.uniform(0.8, 1.6, k).astype(np.float32) * np.sqrt(D / d) * 0.5
        self.bases = np.empty((k, d, D), np.float32)
        for c in range(k):
            q, _ = np.linalg.qr(rng.standard_normal((D, d)))
            self.bases[c] = q.T

    def sample(self, rng: np.random.Generator, m: int) -> np.ndarray:
        spec = self.spec
        d = self.bases.shape[1]
        cl = rng.choice(len(self.weights), size=m, p=self.weights)
        z = rng.standard_normal((m, d)).astype(np.float32)
        out = self.centres[cl] + spec.noise * rng.standard_normal((m, spec.dim)).astype(np.float32)
        order = np.argsort(cl, kind="stable")
        cls, starts = np.unique(cl[order], return_index=True)
        ends = np.append(starts[1:], m)
        for c, s, e in zip(cls, starts, ends):
            idx = order[s:e]
            out[idx] += (z[idx] * self.spread[c]) @ self.bases[c]
        return out


def _kmeans(x: np.ndarray, k: int, rng: np.random.Generator, iters: int = 20) -> np.ndarray:
    cent = x[rng.choice(len(x), k, replace=False)].copy()
    for _ in range(iters):
        a = _nearest(x, cent)
        for j in range(k):
            members = x[a == j]
            if len(members):
                cent[j] = members.mean(0)
    return cent


def _nearest(x: np.ndarray, cent: np.ndarray, bias=None) -> np.ndarray:
    d = (cent * cent).sum(1)[None, :] - 2 * x @ cent.T
    if bias is not None:
        d -= bias[None, :]
    return d.argmin(1)


def _balance_bias(x: np.ndarray, cent: np.ndarray, iters: int = 300) -> np.ndarray:
    """Per-centre offsets so that biased nearest-centre assignment gives every
    centre ~ the same share of points (labels keep 1/k selectivity)."""
    k = len(cent)
    bias = np.zeros(k, np.float32)
    d = (cent * cent).sum(1)[None, :] - 2 * x @ cent.T
    step = float(np.median(np.abs(d - d.mean(1, keepdims=True)))) * 0.05
    for i in range(iters):
        share = np.bincount((d - bias).argmin(1), minlength=k) / len(x)
        bias += step * (1.0 / k - share) * k * (1 - i / iters)
    return bias


def _zipf_choice(rng, n_classes: int, size: int, a: float = 1.0) -> np.ndarray:
    p = 1.0 / np.arange(1, n_classes + 1) ** a
    return rng.choice(n_classes, size=size, p=p / p.sum()).astype(np.int32)


def generate(spec: DatasetSpec, force: bool = False) -> Path:
    """Generate (or reuse) the cached dataset; returns its directory."""
    out = spec.dir
    meta_path = out / "meta.json"
    if not force and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("digest") == spec.digest():
            return out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    n, D = spec.n, spec.dim
    model = _Model(spec)

    vec = np.lib.format.open_memmap(out / "vectors.npy", "w+", np.float32, (n, D))
    for ci, s in enumerate(range(0, n, CHUNK)):
        e = min(n, s + CHUNK)
        vec[s:e] = model.sample(_rng(spec, 2, ci), e - s)
    vec.flush()
    np.save(out / "queries.npy", model.sample(_rng(spec, 3), spec.nq))

    cols = {}
    cols["label10"] = _rng(spec, 10).integers(0, 10, n, dtype=np.int32)
    cols["label100"] = _rng(spec, 11).integers(0, 100, n, dtype=np.int32)
    cols["zipf10"] = _zipf_choice(_rng(spec, 12), 10, n)
    # vector-correlated labels
    rng = _rng(spec, 13)
    sample = np.asarray(vec[np.sort(rng.choice(n, min(n, 20000), replace=False))])
    cent = _kmeans(sample, 10, rng)
    bias = _balance_bias(sample, cent)
    nearest = np.empty(n, np.int32)
    for s in range(0, n, CHUNK * 4):
        nearest[s:s + CHUNK * 4] = _nearest(np.asarray(vec[s:s + CHUNK * 4]), cent, bias)
    u = rng.random(n)
    rand_label = rng.integers(0, 10, n, dtype=np.int32)
    for a, name in spec.corr_columns():
        cols[name] = np.where(u < a, nearest, rand_label).astype(np.int32)
    np.save(out / "kmeans10_centres.npy", cent)
    np.save(out / "kmeans10_bias.npy", bias)
    cols["price"] = _rng(spec, 14).uniform(0.0, 1000.0, n)
    cols["ts"] = _rng(spec, 15).integers(TS_LO * 1_000_000, TS_HI * 1_000_000, n, dtype=np.int64)
    # multi-label tags, CSR
    rng = _rng(spec, 16)
    counts = np.minimum(_zipf_choice(rng, MAX_TAGS_PER_ROW, n, a=1.5) + 1, MAX_TAGS_PER_ROW)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    raw = _zipf_choice(rng, N_TAGS, int(offsets[-1]))
    # distinct, sorted tags per row
    row = np.repeat(np.arange(n, dtype=np.int64), counts)
    order = np.lexsort((raw, row))
    row, raw = row[order], raw[order]
    keep = np.ones(len(raw), bool)
    keep[1:] = (row[1:] != row[:-1]) | (raw[1:] != raw[:-1])
    values = raw[keep]
    np.cumsum(np.bincount(row[keep], minlength=n), out=offsets[1:])
    cols["tags_offsets"] = offsets
    cols["tags_values"] = values
    for name, arr in cols.items():
        np.save(out / f"{name}.npy", arr)

    meta = {"spec": spec.key(), "digest": spec.digest(), "name": spec.name,
            "generate_seconds": round(time.monotonic() - t0, 2),
            "columns": column_types(spec)}
    write_json(meta_path, meta)
    log(f"generated {spec.name} ({n} x {D}) in {meta['generate_seconds']}s")
    return out


def column_types(spec: DatasetSpec) -> list[tuple[str, str]]:
    """Table columns in COPY order (embedding fixed-size, tags last)."""
    cols = [("id", "bigint"), ("label10", "int4"), ("label100", "int4"), ("zipf10", "int4")]
    cols += [(name, "int4") for _, name in spec.corr_columns()]
    cols += [("price", "float8"), ("ts", "timestamptz"), ("embedding", "real[]"),
             ("tags", "int4[]")]
    return cols


class Dataset:
    """Read access to a generated dataset (memory-mapped)."""

    def __init__(self, spec: DatasetSpec):
        self.spec = spec
        self.dir = generate(spec)
        self.vectors = np.load(self.dir / "vectors.npy", mmap_mode="r")
        self.queries = np.load(self.dir / "queries.npy")
        self._cols: dict[str, np.ndarray] = {}

    def col(self, name: str) -> np.ndarray:
        if name not in self._cols:
            self._cols[name] = np.load(self.dir / f"{name}.npy", mmap_mode="r")
        return self._cols[name]

    def tags(self) -> tuple[np.ndarray, np.ndarray]:
        return self.col("tags_offsets"), self.col("tags_values")


# --------------------------------------------------------------------------
# loading (binary COPY)
# --------------------------------------------------------------------------
_OID_FLOAT4, _OID_INT4 = 700, 23


def _fixed_dtype(spec: DatasetSpec) -> np.dtype:
    """Big-endian layout of one COPY BINARY row up to and including the tags
    array header; the variable part (tag elements) follows it."""
    f = [("nfields", ">i2"), ("id_len", ">i4"), ("id", ">i8")]
    ints = ["label10", "label100", "zipf10"] + [c for _, c in spec.corr_columns()]
    for c in ints:
        f += [(c + "_len", ">i4"), (c, ">i4")]
    f += [("price_len", ">i4"), ("price", ">f8"), ("ts_len", ">i4"), ("ts", ">i8")]
    f += [("emb_len", ">i4"), ("emb_ndim", ">i4"), ("emb_hasnull", ">i4"), ("emb_oid", ">i4"),
          ("emb_dim", ">i4"), ("emb_lb", ">i4"), ("emb", [("l", ">i4"), ("v", ">f4")], (spec.dim,))]
    f += [("tags_len", ">i4"), ("tags_ndim", ">i4"), ("tags_hasnull", ">i4"), ("tags_oid", ">i4"),
          ("tags_dim", ">i4"), ("tags_lb", ">i4")]
    return np.dtype(f)


def copy_chunks(ds: Dataset, rows_per_chunk: int = 50_000):
    """Yield COPY BINARY payload (header + rows + trailer) in chunks of bytes."""
    spec = ds.spec
    dt = _fixed_dtype(spec)
    ints = ["label10", "label100", "zipf10"] + [c for _, c in spec.corr_columns()]
    offs, vals = ds.tags()
    yield b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
    ncols = len(column_types(spec))
    for s in range(0, spec.n, rows_per_chunk):
        e = min(spec.n, s + rows_per_chunk)
        m = e - s
        r = np.zeros(m, dt)
        r["nfields"] = ncols
        r["id_len"], r["id"] = 8, np.arange(s + 1, e + 1)
        for c in ints:
            r[c + "_len"], r[c] = 4, ds.col(c)[s:e]
        r["price_len"], r["price"] = 8, ds.col("price")[s:e]
        r["ts_len"], r["ts"] = 8, ds.col("ts")[s:e] - PG_EPOCH_US
        r["emb_len"] = 20 + 8 * spec.dim
        r["emb_ndim"], r["emb_oid"], r["emb_dim"], r["emb_lb"] = 1, _OID_FLOAT4, spec.dim, 1
        r["emb"]["l"] = 4
        r["emb"]["v"] = ds.vectors[s:e]
        o = np.asarray(offs[s:e + 1])
        cnt = np.diff(o)
        r["tags_len"] = 20 + 8 * cnt
        r["tags_ndim"], r["tags_oid"], r["tags_dim"], r["tags_lb"] = 1, _OID_INT4, cnt, 1
        el = np.empty(int(o[-1] - o[0]), [("l", ">i4"), ("v", ">i4")])
        el["l"], el["v"] = 4, vals[o[0]:o[-1]]
        fixed = r.tobytes()
        elb = el.tobytes()
        rs = dt.itemsize
        eo = ((o - o[0]) * 8).tolist()
        fixed_mv, el_mv = memoryview(fixed), memoryview(elb)
        parts = []
        for i in range(m):
            parts.append(fixed_mv[i * rs:(i + 1) * rs])
            parts.append(el_mv[eo[i]:eo[i + 1]])
        yield b"".join(parts)
    yield struct.pack(">h", -1)


def table_is_loaded(conn, spec: DatasetSpec) -> bool:
    row = conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')",
                       (spec.table,)).fetchone()
    if not (row and row[0] and json.loads(row[0]).get("digest") == spec.digest()):
        return False
    # query tables loaded before they had near10 are loaded again
    return conn.execute("SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) "
                        "AND attname = 'near10'", (spec.qtable,)).fetchone() is not None


def query_near_labels(ds: "Dataset") -> np.ndarray:
    """Each query's nearest k-means centre (the balanced assignment the rows'
    corr_aXX labels come from): the label GateANN 5.4.6's queries ask for."""
    cent = np.load(ds.dir / "kmeans10_centres.npy")
    bias = np.load(ds.dir / "kmeans10_bias.npy")
    return _nearest(np.asarray(ds.queries, np.float32), cent, bias).astype(np.int32)


def load(spec: DatasetSpec, conn=None, force: bool = False) -> dict:
    """Create and fill <table> and <qtable> unless already loaded with this spec.
    Returns timing facts."""
    ds = Dataset(spec)
    own = conn is None
    conn = conn or connect()
    try:
        if not force and table_is_loaded(conn, spec):
            log(f"table {spec.table} already loaded")
            size = conn.execute("SELECT pg_total_relation_size(%s)", (spec.table,)).fetchone()[0]
            return {"reused": True, "table_bytes": size}
        t0 = time.monotonic()
        cols = ", ".join(f"{n} {t}" for n, t in column_types(spec))
        conn.autocommit = False
        with conn.transaction():
            conn.execute(f"DROP TABLE IF EXISTS {spec.table} CASCADE")
            conn.execute(f"DROP TABLE IF EXISTS {spec.qtable} CASCADE")
            conn.execute(f"CREATE TABLE {spec.table} ({cols})")
            # FREEZE: table created in this transaction, rows are visible to all
            with conn.cursor() as cur, cur.copy(
                    f"COPY {spec.table} FROM STDIN (FORMAT binary, FREEZE)") as cp:
                for chunk in copy_chunks(ds):
                    cp.write(chunk)
            t_copy = time.monotonic() - t0
            conn.execute(f"ALTER TABLE {spec.table} ADD PRIMARY KEY (id)")
            conn.execute(f"CREATE TABLE {spec.qtable} "
                         "(qid int PRIMARY KEY, embedding real[], near10 int4)")
            near = query_near_labels(ds)
            with conn.cursor() as cur, cur.copy(f"COPY {spec.qtable} FROM STDIN") as cp:
                for i, q in enumerate(ds.queries):
                    cp.write_row((i + 1, q.tolist(), int(near[i])))
            meta = {"digest": spec.digest(), "spec": spec.key(), "loaded_at": time.time()}
            conn.execute(f"COMMENT ON TABLE {spec.table} IS {_lit(json.dumps(meta))}")
        conn.autocommit = True
        t1 = time.monotonic()
        conn.execute(f"VACUUM (ANALYZE) {spec.table}")
        conn.execute(f"VACUUM (ANALYZE) {spec.qtable}")
        t2 = time.monotonic()
        size = conn.execute("SELECT pg_total_relation_size(%s)", (spec.table,)).fetchone()[0]
        res = {"reused": False, "copy_seconds": round(t_copy, 2),
               "load_seconds": round(t1 - t0, 2), "vacuum_analyze_seconds": round(t2 - t1, 2),
               "table_bytes": size}
        log(f"loaded {spec.table}: COPY {t_copy:.1f}s, total {t1 - t0:.1f}s "
            f"(+ vacuum analyze {t2 - t1:.1f}s), {size / 2**20:.0f} MiB")
        return res
    finally:
        if own:
            conn.close()


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in dataclasses.fields(DatasetSpec):
        if f.name == "corr_alphas":
            continue
        ap.add_argument("--" + f.name, type=type(f.default), default=f.default)
    ap.add_argument("--force", action="store_true", help="regenerate / reload")
    ap.add_argument("--load", action="store_true", help="load into PostgreSQL (libpq env vars)")
    a = ap.parse_args()
    spec = DatasetSpec(**{f.name: getattr(a, f.name) for f in dataclasses.fields(DatasetSpec)
                          if f.name != "corr_alphas"})
    generate(spec, force=a.force)
    print(json.dumps(json.loads((spec.dir / "meta.json").read_text()), indent=1))
    if a.load:
        print(json.dumps(load(spec, force=a.force)))


if __name__ == "__main__":
    main()
