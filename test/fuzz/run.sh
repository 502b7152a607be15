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
# shellcheck source=../lib/cluster.sh
. "$HERE/../lib/cluster.sh"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cluster_start "$BINDIR" "$OUT" "restart_after_crash = on" "log_min_messages = log" \
  "log_min_error_statement = panic"
DATA=$CLUSTER_DATA
stop() { cluster_stop immediate; }
trap stop EXIT
set +e
python3 -u "$HERE/fuzz.py" --bindir "$BINDIR" --datadir "$DATA" --serverlog "$OUT/server.log" \
  --host "$CLUSTER_SOCK" --port "$CLUSTER_PORT" "$@" 2>&1 | tee "$OUT/fuzz.log"
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
