#!/usr/bin/env bash
# Run the fuzz harness (test/fuzz/fuzz.py) against a throw-away server.
#   test/fuzz/run.sh BINDIR OUTDIR [fuzz.py arguments, e.g. --seconds 1800 --seed 7]
# BINDIR holds initdb, pg_ctl and psql of a server with gateann installed; OUTDIR receives the
# data directory, the server log and fuzz.log (the data directory is removed after a pass).
# Must not run as root (the server refuses to).  `make check-fuzz` and `make test` call it in
# a short mode; `bench/run.sh fuzz` in a long one.
set -euo pipefail
BINDIR=$1
OUT=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DATA=$OUT/data
SOCK=$(mktemp -d "${TMPDIR:-/tmp}/gateann-fuzz.XXXXXX")
rm -rf "$DATA"
"$BINDIR/initdb" -D "$DATA" -A trust --no-locale --encoding=UTF8 >"$OUT/initdb.log" 2>&1
# a port nobody listens on (the socket lives in our own directory, so only the number matters
# for the lock file; pick one from our pid to keep parallel runs apart)
PORT=$((20000 + $$ % 20000))
cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$SOCK'
port = $PORT
shared_preload_libraries = 'gateann'
fsync = off
max_connections = 20
shared_buffers = 64MB
restart_after_crash = on
log_min_messages = log
log_min_error_statement = panic
EOF
stop() {
  "$BINDIR/pg_ctl" -D "$DATA" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$SOCK"
}
trap stop EXIT
"$BINDIR/pg_ctl" -D "$DATA" -l "$OUT/server.log" -w start >/dev/null
set +e
python3 -u "$HERE/fuzz.py" --bindir "$BINDIR" --datadir "$DATA" --serverlog "$OUT/server.log" \
  --host "$SOCK" --port "$PORT" "$@" 2>&1 | tee "$OUT/fuzz.log"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  echo "fuzz failed; server log: $OUT/server.log (last lines below)"
  tail -n 40 "$OUT/server.log"
else
  stop
  rm -rf "$DATA"
fi
exit "$rc"
