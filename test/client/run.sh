#!/usr/bin/env bash
# Client tests (test/client/README): Python client libraries against a throw-away server.
#   test/client/run.sh BINDIR WORKDIR [test module or test id ...]
# BINDIR holds initdb, pg_ctl and psql of a server with gateann installed; WORKDIR receives the
# venv (kept and reused: WORKDIR/venv), the data directory, the socket and the server log (the
# data directory is removed after a pass).  Must not run as root (the server refuses to).
# `make test` runs it per server version.  Exit status non-zero on any failure.
#   GATEANN_CLIENT_LANGCHAIN=0   no langchain-postgres test (not installed, skipped)
set -euo pipefail
BINDIR=$1
OUT=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DATA=$OUT/data
VENV=$OUT/venv
PY=$VENV/bin/python

# --- the venv -------------------------------------------------------------------------------
if [ ! -x "$PY" ]; then
  echo "creating venv $VENV"
  python3 -m venv "$VENV"
fi
pip() { "$PY" -m pip install -q --disable-pip-version-check "$@"; }
if ! "$PY" -c 'import psycopg, sqlalchemy, django, numpy' >/dev/null 2>&1; then
  echo "pip install psycopg[binary] sqlalchemy django numpy"
  pip "psycopg[binary]" sqlalchemy django numpy
fi
if [ "${GATEANN_CLIENT_LANGCHAIN:-1}" != 0 ] && ! "$PY" -c 'import langchain_postgres' >/dev/null 2>&1; then
  echo "pip install langchain-postgres (optional: its test is skipped without it)"
  timeout 180 "$PY" -m pip install -q --disable-pip-version-check langchain-postgres ||
    echo "could not install langchain-postgres"
fi

# --- the server -----------------------------------------------------------------------------
# shellcheck source=../lib/cluster.sh
. "$HERE/../lib/cluster.sh"
cluster_start "$BINDIR" "$OUT" "log_min_messages = warning"
SOCK=$CLUSTER_SOCK
PORT=$CLUSTER_PORT
stop() { cluster_stop fast; }
trap stop EXIT
echo "server: $("$BINDIR/postgres" --version), socket $SOCK, port $PORT"
"$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -d postgres -c 'CREATE EXTENSION gateann'

# --- the tests ------------------------------------------------------------------------------
set +e
(cd "$HERE" && PGHOST=$SOCK PGPORT=$PORT PGDATABASE=postgres PYTHONDONTWRITEBYTECODE=1 \
   "$PY" -u runtests.py "$@")
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  echo "client tests failed; server log: $OUT/server.log (last lines below)"
  tail -n 30 "$OUT/server.log"
else
  stop
  rm -rf "$DATA"
fi
exit "$rc"
