#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for the benchmarks.
#   eval "$(bench/cluster.sh start)"   -> prints export lines (PGHOST, PGPORT, ...,
#                                         BENCH_CLUSTER_DIR)
#   bench/cluster.sh stop DIR          -> stops it and removes DIR
# The data directory lives in a temp dir on disk (BENCH_TMPDIR, default /var/tmp,
# not tmpfs: the SSD path needs O_DIRECT). When run as root, initdb/pg_ctl run as
# the `postgres` system user (the server refuses to run as root). Connections go
# over a Unix socket in that temp dir; no TCP listener.
# Environment: PG_CONFIG (default /usr/bin/pg_config), BENCH_PORT (5499),
# BENCH_SHARED_BUFFERS (2GB), BENCH_PG_CONF (extra lines for postgresql.conf).
set -euo pipefail
PG_CONFIG=${PG_CONFIG:-/usr/bin/pg_config}
BINDIR=$("$PG_CONFIG" --bindir)
PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)

as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
start)
    port=${BENCH_PORT:-5499}
    dir=$(mktemp -d "${BENCH_TMPDIR:-/var/tmp}/gateann-bench.XXXXXX")
    chmod 755 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_pg "$BINDIR/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C \
        --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    preload=""
    [ -f "$PKGLIBDIR/gateann.so" ] && preload="gateann"
    # VectorChord, when installed beside it (bench/run.sh shapes --engines ...,vchordrq), must be preloaded
    [ -f "$PKGLIBDIR/vchord.so" ] && preload="${preload:+$preload,}vchord"
    cat >>"$dir/data/postgresql.conf" <<CONF
# --- gateann bench ---
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
shared_preload_libraries = '$preload'
shared_buffers = ${BENCH_SHARED_BUFFERS:-2GB}
maintenance_work_mem = '4GB'
max_parallel_maintenance_workers = 2
max_parallel_workers_per_gather = 0
jit = off
max_wal_size = '16GB'
checkpoint_timeout = '1h'
synchronous_commit = off
max_connections = 50
logging_collector = off
${BENCH_PG_CONF:-}
CONF
    as_pg "$BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >&2 \
        || { cat "$dir/server.log" >&2; exit 1; }
    "$BINDIR/createdb" -h "$dir" -p "$port" -U postgres bench
    echo "export PGHOST='$dir' PGPORT='$port' PGUSER=postgres PGDATABASE=bench BENCH_CLUSTER_DIR='$dir'"
    ;;
stop)
    dir=${2:?usage: cluster.sh stop DIR}
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_pg "$BINDIR/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    fi
    [ "${BENCH_KEEP_CLUSTER:-0}" = 1 ] || rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start | stop DIR" >&2; exit 2;;
esac
