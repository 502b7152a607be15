"""The benchmark suite's one entry point: python3 -m gateann_bench NAME [ARGS].

NAME is a module of this package with a main() (a benchmark, a generator or
a tool, run with the arguments its main() takes: NAME --help), or a preset of
driver.py (quick, full, smoke, ...: the same as `driver --preset NAME ARGS`).
bench/run.sh runs the benchmarks through it in a throwaway cluster; the tools
(results_page, shapes_check, report, gen, ...) are run directly:

    python3 bench/gateann_bench results_page --curated-only --check
"""
import importlib
import os
import sys

if not __package__:
    # run as `python3 bench/gateann_bench ...`: import the package from bench/
    # (and not its modules as top-level ones from bench/gateann_bench/)
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMMANDS = {
    "build_memory": "a table larger than maintenance_work_mem, built in memory and in partitions",
    "build_speed": "build time beside pgvector HNSW on the shape matrix",
    "driver": "the preset driver (--preset quick|full|smoke|io|filter|filter_width|pgvector)",
    "embed": "sentence embeddings (all-MiniLM-L6-v2 in numpy), cached under bench/data",
    "eviction": "rows inserted while the store budget evicts and reloads the index's store",
    "gen": "the deterministic dataset generator (--load: into the server)",
    "groundtruth": "exact filtered top-k of a generated dataset",
    "memgraph_sim": "OctopusANN's MemGraph against the entry points, simulated",
    "memory": "an index larger than memory: device reads, record cache, QPS",
    "mix": "the mixed-workload soak",
    "plans": "the planner's choices against forced plans",
    "report": "plots and summary.md of a driver run's results.json",
    "results_page": "regenerate / check bench/RESULTS.md, curate a run",
    "scaleout_sim": "one global graph over N servers against N graphs, simulated",
    "shapes": "recall and latency on the data-shape matrix beside pgvector HNSW",
    "shapes_check": "the recall targets of a shapes run, shape by shape",
    "shards": "shard servers behind postgres_fdw",
    "writes": "inserts, deletes and VACUUM, recall after the churn",
}


def usage(out) -> None:
    from gateann_bench.presets import PRESETS
    print(__doc__, file=out)
    for name, what in COMMANDS.items():
        print(f"  {name:<14}{what}", file=out)
    print("  presets of driver:", ", ".join(PRESETS), file=out)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        usage(sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, args = argv[0], argv[1:]
    if name not in COMMANDS:
        from gateann_bench.presets import PRESETS
        if name not in PRESETS:
            print(f"gateann_bench: unknown command {name!r}", file=sys.stderr)
            usage(sys.stderr)
            return 2
        name, args = "driver", ["--preset", name, *args]
    # the module's main() reads sys.argv as it did when run as bench/NAME.py
    sys.argv = [f"python3 -m gateann_bench {name}", *args]
    return importlib.import_module(f"gateann_bench.{name}").main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
