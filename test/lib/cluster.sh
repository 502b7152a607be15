# A throw-away server for the harnesses that run outside pg_regress and TAP
# (test/fuzz/run.sh, test/client/run.sh).  Source it, then
#   cluster_start BINDIR OUTDIR [postgresql.conf line ...]
# initdb's OUTDIR/data and starts it with gateann preloaded, listening only on
# a unix socket in a directory of its own (its path stays short); sets
# CLUSTER_DATA, CLUSTER_SOCK and CLUSTER_PORT.  `cluster_stop [MODE]` stops it
# (pg_ctl's shutdown mode, default fast) and removes the socket directory.
# Must not run as root (the server refuses to).

cluster_start() {
  local out=$2
  CLUSTER_BINDIR=$1
  shift 2
  CLUSTER_DATA=$out/data
  CLUSTER_SOCK=$(mktemp -d "${TMPDIR:-/tmp}/gateann-cluster.XXXXXX")
  # a port nobody listens on: the socket lives in our own directory, so only the number
  # matters for the lock file; one from our pid keeps parallel runs apart
  CLUSTER_PORT=$((20000 + $$ % 20000))
  rm -rf "$CLUSTER_DATA"
  "$CLUSTER_BINDIR/initdb" -D "$CLUSTER_DATA" -A trust --no-locale --encoding=UTF8 \
    >"$out/initdb.log" 2>&1
  {
    printf '%s\n' "listen_addresses = ''" "unix_socket_directories = '$CLUSTER_SOCK'" \
      "port = $CLUSTER_PORT" "shared_preload_libraries = 'gateann'" "fsync = off" \
      "max_connections = 20" "shared_buffers = 64MB"
    if [ $# -gt 0 ]; then printf '%s\n' "$@"; fi
  } >>"$CLUSTER_DATA/postgresql.conf"
  "$CLUSTER_BINDIR/pg_ctl" -D "$CLUSTER_DATA" -l "$out/server.log" -w start >/dev/null
}

cluster_stop() {
  "$CLUSTER_BINDIR/pg_ctl" -D "$CLUSTER_DATA" -m "${1:-fast}" stop >/dev/null 2>&1 || true
  rm -rf "$CLUSTER_SOCK"
}
