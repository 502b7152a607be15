"""Benchmark presets of driver.py: datasets, workloads, engines and their sweeps."""

from __future__ import annotations


# ---------------------------------------------------------------------------
# presets
# ---------------------------------------------------------------------------
ALL_FILTER_COLUMNS = ["label10", "label100", "zipf10", "corr_a0", "corr_a50", "corr_a100",
                      "price", "ts", "tags"]

# The index of the `filter` preset; `filter_width` searches the same one
# (--reuse-index), so both must name the same columns and options.
FILTER_INDEX = {
    "index_columns": ["embedding", "label10", "label100", "zipf10",
                      "corr_a0", "corr_a100", "price", "tags"],
    "index_options": {"max_neighbors": 64, "build_search_list_size": 128, "alpha": 1.2},
}

PRESETS: dict[str, dict] = {
    # make bench-quick: <= 5 minutes including the build of the extension
    "quick": {
        "datasets": [{"n": 100_000, "dim": 128}],
        "workloads": ["unfiltered", "label10"],
        "queries": 200,
        "clients": [1, 2],
        "pgbench_seconds": 3,
        "engines": {
            "exact": {"queries": 30, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                "index_columns": ["embedding", "label10"],
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "sweep": {"gateann.search_list_size": [20, 40, 100, 200, 400]},
            },
        },
    },
    # make bench: see README.md for the expected duration
    "full": {
        "datasets": [{"n": 100_000, "dim": 128}, {"n": 1_000_000, "dim": 128}],
        "workloads": ["unfiltered", "label10", "label100", "zipf10",
                      "corr_a0", "corr_a50", "corr_a100", "corr_a100_near",
                      "range1", "range10", "ts30d", "tags_contains", "tags_contains2",
                      "label10_and_range20", "label10_or_label100"],
        "queries": 500,
        "clients": [1, 2],
        "pgbench_seconds": 5,
        "max_point_seconds": 60,
        "engines": {
            "exact": {"queries": 30, "clients": [1, 2], "pgbench_seconds": 5},
            "gateann": {
                "index_columns": ["embedding"] + ALL_FILTER_COLUMNS,
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "runs": [
                    # every workload, default filter mode (gate)
                    {"sweep": {"gateann.search_list_size": [10, 20, 50, 100, 200, 400, 600]}},
                    # the paper's baselines in the same engine on a few workloads; skipped
                    # (with a note) while gateann.filter_mode does not exist
                    {"workloads": ["label10", "label100", "corr_a0", "corr_a100", "range1"],
                     "sweep": {"gateann.filter_mode": ["post", "early"],
                               "gateann.search_list_size": [20, 100, 200, 400]}},
                ],
            },
        },
    },
    # the SSD read path (engine issue): 1M x 128 at L = 100, synchronous
    # buffer-manager reads vs io_uring with 1, 4, 16 reads in flight, and pread
    "io": {
        "datasets": [{"n": 1_000_000, "dim": 128}],
        "workloads": ["unfiltered"],
        "queries": 200,
        "clients": [1, 2],
        "pgbench_seconds": 10,
        "engines": {
            "exact": {"queries": 10, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                "index_columns": ["embedding"],
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "runs": [
                    {"sweep": {"gateann.io_method": ["buffer"],
                               "gateann.search_list_size": [100]}},
                    {"sweep": {"gateann.io_method": ["io_uring"],
                               "gateann.io_width": [1, 4, 16],
                               "gateann.search_list_size": [100]}},
                    {"sweep": {"gateann.io_method": ["pread"],
                               "gateann.search_list_size": [100]}},
                ],
            },
        },
    },
    # filtered search (filtering issue): 1M x 128, the filter pushed into the
    # index; gate across workloads, and the post baseline on the same index
    # for the selectivity sweep (reads per query vs s, recall at equal L)
    "filter": {
        "datasets": [{"n": 1_000_000, "dim": 128}],
        "workloads": ["label10", "label100", "zipf10", "corr_a0", "corr_a100",
                      "corr_a100_near", "range5", "range10", "range20", "range50",
                      "tags_contains", "tags_contains2", "label10_and_range20",
                      "label10_or_label100"],
        "queries": 100,
        "clients": [1, 2],
        "pgbench_seconds": 3,
        "max_point_seconds": 60,
        "engines": {
            "exact": {"queries": 10, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                **FILTER_INDEX,
                "runs": [
                    {"sweep": {"gateann.filter_mode": ["gate"],
                               "gateann.search_list_size": [20, 50, 100, 200, 400]}},
                    {"workloads": ["label10", "range5", "range10", "range20", "tags_contains2",
                                   "label10_and_range20", "label10_or_label100"],
                     "sweep": {"gateann.filter_mode": ["post"],
                               "gateann.search_list_size": [20, 50, 100, 200, 400]}},
                    # gate without pre-filtering, where the default pre-filters (s <= 2 %)
                    {"workloads": ["label100", "corr_a100", "tags_contains2",
                                   "label10_and_range20"],
                     "sweep": {"gateann.prefilter_selectivity": [0],
                               "gateann.search_list_size": [20, 50, 100, 200, 400]}},
                ],
            },
        },
    },
    # reads in flight (gateann.io_width) for gate and post at s = 10 %: recall,
    # reads and QPS per W, so that each mode is compared at its best W; and
    # gate's tunnel batch (gateann.tunnel_batch, 1 = GateANN's one at a time)
    "filter_width": {
        "datasets": [{"n": 1_000_000, "dim": 128}],
        "workloads": ["label10"],
        "queries": 100,
        "clients": [1, 2],
        "pgbench_seconds": 5,
        "max_point_seconds": 60,
        "engines": {
            "exact": {"queries": 10, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                **FILTER_INDEX,
                "runs": [
                    {"sweep": {"gateann.filter_mode": ["gate", "post"],
                               "gateann.io_width": [8, 16, 32, 64],
                               "gateann.search_list_size": [150, 200]}},
                    {"sweep": {"gateann.tunnel_batch": [1, 2, 4, 8],
                               "gateann.io_width": [16, 32],
                               "gateann.search_list_size": [150, 200]}},
                ],
            },
        },
    },
    # gateann vs pgvector HNSW with iterative scan (hnsw.iterative_scan = relaxed_order),
    # both on the same rows, filters and query vectors; needs a server with pgvector
    # (e.g. the PG18 wheel: PG_CONFIG=build/pg18-venv/.../pginstall/bin/pg_config)
    "pgvector": {
        "datasets": [{"n": 100_000, "dim": 128}],
        "workloads": ["unfiltered", "label10", "label100", "range10"],
        "queries": 100,
        "clients": [1, 2],
        "pgbench_seconds": 3,
        "engines": {
            "exact": {"queries": 20, "clients": [1], "pgbench_seconds": 3},
            "gateann": {
                "index_columns": ["embedding", "label10", "label100", "price"],
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "sweep": {"gateann.search_list_size": [20, 50, 100, 200, 400]},
            },
            # the same index through gateann_vector's opclass on pgvector's column
            "gateann_vector": {
                "index_columns": ["embedding", "label10", "label100", "price"],
                "index_options": {"max_neighbors": 64, "build_search_list_size": 128,
                                  "alpha": 1.2},
                "sweep": {"gateann.search_list_size": [20, 50, 100, 200, 400]},
            },
            "pgvector": {
                # pgvector's defaults
                "index_options": {"m": 16, "ef_construction": 64},
                "gucs": {"hnsw.iterative_scan": "relaxed_order"},
                "sweep": {"hnsw.ef_search": [20, 40, 100, 200, 400]},
            },
        },
    },
    # a smoke test of the harness itself (seconds)
    "smoke": {
        "datasets": [{"n": 10_000, "dim": 32, "intrinsic": 8, "nq": 200}],
        "workloads": ["unfiltered", "label10", "range10", "tags_overlap"],
        "queries": 20,
        "clients": [1, 2],
        "pgbench_seconds": 1,
        "engines": {
            "exact": {"queries": 20, "clients": [1, 2], "pgbench_seconds": 1},
            "gateann": {
                "index_columns": ["embedding", "label10"],
                "index_options": {"max_neighbors": 32, "build_search_list_size": 64},
                "sweep": {"gateann.search_list_size": [20, 100]},
            },
        },
    },
}
