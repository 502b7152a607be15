#!/usr/bin/env bash
# `make demo`: on a fresh Debian machine (as root) install what is missing, build and install
# gateann for PostgreSQL 15, start a throw-away cluster (temp dir, Unix socket only, own port),
# load 100,000 clustered 128-dim vectors, build a gateann index, run unfiltered and filtered
# queries, print rows, recall against exact search and gateann_last_scan(), then stop the
# cluster and remove everything.  Needs no argument.
#
# Environment: GATEANN_DEMO_PG_CONFIG (default: PG15's pg_config), GATEANN_DEMO_PORT (54329),
#              GATEANN_DEMO_KEEP=1 (keep the temp dir and server log; the server is stopped).
set -euo pipefail

# Started from make: drop the parent make's flags/variables (e.g. PG_CONFIG=...).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../../test/lib/common.sh
. "$ROOT/test/lib/common.sh"

PG_CONFIG=${GATEANN_DEMO_PG_CONFIG:-$PG15_CONFIG}
PORT=${GATEANN_DEMO_PORT:-54329}
SECONDS=0
step() { printf '\n######## [%4ds] %s\n' "$SECONDS" "$*"; }

step "1/6 prerequisites"
if is_root; then
  apt_install build-essential postgresql-15 postgresql-server-dev-15 liburing-dev
fi
[ -x "$PG_CONFIG" ] || die "$PG_CONFIG not found: apt-get install postgresql-15 postgresql-server-dev-15"
BINDIR=$("$PG_CONFIG" --bindir)
ensure_test_user
echo "$("$PG_CONFIG" --version); the server runs as user '$TEST_USER'"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gateann-demo.XXXXXX")
chmod 755 "$WORK"
cleanup() {
  if [ -f "$WORK/data/postmaster.pid" ]; then
    as_test_user "$BINDIR/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 ||
      stop_servers_under "$WORK"
  fi
  if [ -n "${GATEANN_DEMO_KEEP:-}" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

step "2/6 build and install gateann (copy of the tree in $WORK/src)"
# A private copy: never reuses objects built for another server, leaves the work tree clean.
copy_tree "$ROOT" "$WORK/src"
make -s -C "$WORK/src" -j"$(nproc 2>/dev/null || echo 2)" PG_CONFIG="$PG_CONFIG"
if is_root || [ -w "$("$PG_CONFIG" --pkglibdir)" ]; then
  make -s -C "$WORK/src" install PG_CONFIG="$PG_CONFIG"
elif command -v sudo >/dev/null 2>&1; then
  sudo make -s -C "$WORK/src" install PG_CONFIG="$PG_CONFIG"
else
  die "cannot write $("$PG_CONFIG" --pkglibdir): run as root (or install sudo)"
fi

step "3/6 throw-away cluster (port $PORT, socket in $WORK, no TCP)"
give_to_test_user "$WORK"
as_test_user "$BINDIR/initdb" -D "$WORK/data" -U postgres -A trust --no-locale -E UTF8 >"$WORK/initdb.log" 2>&1 ||
  { cat "$WORK/initdb.log"; die "initdb failed"; }
cat >>"$WORK/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$WORK'
port = $PORT
shared_buffers = '256MB'
jit = off
EOF
as_test_user "$BINDIR/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null ||
  { tail -n 30 "$WORK/server.log"; die "the server did not start"; }

PSQL=("$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORK" -p "$PORT" -U postgres -d postgres)
run_sql() {
  "${PSQL[@]}" -f "$HERE/$1" || { echo "--- server log (tail) ---"; tail -n 30 "$WORK/server.log"; die "$1 failed"; }
}

step "4/6 data: docs(id, tenant, category, price, embedding real[128]) x 100,000"
run_sql 01_data.sql
step "5/6 index: CREATE INDEX ... USING gateann"
run_sql 02_index.sql

step "6/6 queries"
run_sql 03_queries.sql

step "done: stopping the cluster and removing $WORK"
