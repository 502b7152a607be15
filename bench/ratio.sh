#!/usr/bin/env bash
# Gate vs post QPS at one L, with long pgbench windows repeated and
# interleaved (gate, post, gate, post, ...), so that a noisy machine shows
# as spread between repetitions rather than as a bias.  Runs against the
# server of PGHOST/PGPORT/PGUSER/PGDATABASE, on a table bench/gateann_bench/driver.py
# loaded and indexed (e.g. after `BENCH_USE_EXISTING=1 bench/run.sh filter`).
#   bench/ratio.sh TABLE FCOLUMN NVALS L [SECONDS=15] [REPS=3] > out.csv
# PGBENCH_PROTOCOL=simple (default: parse and plan every query, as the
# driver's points) or prepared (plan once per connection, as applications
# with prepared statements do).  GATE_OPTS / POST_OPTS: more -c settings for
# one mode only (e.g. each mode at its best gateann.io_width, from the
# filter_width preset).  The run's settings go to stderr.
# Prints: rep,mode,clients,tps,latency_ms
set -euo pipefail
table=$1 fcolumn=$2 nvals=$3 L=$4 seconds=${5:-15} reps=${6:-3}
PG_CONFIG=${PG_CONFIG:-/usr/bin/pg_config}
pgbench="$("$PG_CONFIG" --bindir)/pgbench"
protocol=${PGBENCH_PROTOCOL:-simple}
# knn_eq.sql with the identifiers written in: with -M prepared, pgbench
# would turn every :variable, table names included, into a parameter
script=$(mktemp)
trap 'rm -f "$script"' EXIT
sed -e "s/:qtable\b/${table}_q/g" -e "s/:table\b/$table/g" -e "s/:column\b/embedding/g" \
    -e "s/:fcolumn\b/$fcolumn/g" -e "s/:k\b/10/g" \
    "$(cd "$(dirname "$0")" && pwd)/pgbench/knn_eq.sql" >"$script"
echo "L=$L protocol=$protocol GATE_OPTS='${GATE_OPTS:-}' POST_OPTS='${POST_OPTS:-}'" \
    "/dev/shm: $(grep ' /dev/shm ' /proc/mounts | tail -1 | cut -d' ' -f4)" >&2
# run_pgbench MODE CLIENTS SECONDS: pgbench's output
run_pgbench() {
    local extra
    extra=$([ "$1" = gate ] && echo "${GATE_OPTS:-}" || echo "${POST_OPTS:-}")
    PGOPTIONS="-c gateann.search_list_size=$L -c gateann.filter_mode=$1 -c enable_seqscan=off -c enable_bitmapscan=off $extra" \
        "$pgbench" -n -M "$protocol" -f "$script" -c "$2" -j "$2" -T "$3" \
        -D nq=1000 -D nvals="$nvals" 2>&1
}
# an untimed window per mode first: after a restart the heap's pages are
# not in shared buffers yet, and the first window would pay for that
for mode in gate post; do
    out=$(run_pgbench "$mode" 1 5) || { echo "$out" >&2; exit 1; }
done
echo "rep,mode,clients,tps,latency_ms"
for rep in $(seq 1 "$reps"); do
    for mode in gate post; do
        for c in 1 2; do
            out=$(run_pgbench "$mode" "$c" "$seconds") || { echo "$out" >&2; exit 1; }
            tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
            lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
            echo "$rep,$mode,$c,$tps,$lat"
        done
    done
done
