# shellcheck shell=bash
# Helpers shared by test/run-tests.sh and bench/demo/demo.sh.  Source it; needs bash.

log()  { printf '==> %s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
die()  { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

PG15_CONFIG=${PG15_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}

# apt_install PKG...: install the Debian packages that are missing (needs root).
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  is_root || die "missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
  log "apt-get install ${missing[*]}"
  if [ -z "${GATEANN_APT_UPDATED:-}" ]; then
    apt-get update -qq
    GATEANN_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
}

# The PostgreSQL server refuses to run as root.  When we are root, servers, pg_regress and TAP
# tests run as TEST_USER (the Debian `postgres` user, or a dedicated one we create); otherwise
# everything runs as the current user.
TEST_USER=${GATEANN_TEST_USER:-postgres}
# AS_TEST_USER: command prefix doing the same as as_test_user (for use under timeout etc.).
AS_TEST_USER=()
ensure_test_user() {
  if ! is_root; then
    TEST_USER=$(id -un)
    return 0
  fi
  if ! id -u "$TEST_USER" >/dev/null 2>&1; then
    TEST_USER=gateann
    if ! id -u "$TEST_USER" >/dev/null 2>&1; then
      log "creating system user $TEST_USER to run PostgreSQL"
      useradd --system --create-home --home-dir /var/lib/gateann --shell /bin/bash "$TEST_USER"
    fi
  fi
  AS_TEST_USER=(runuser -u "$TEST_USER" --)
}

# as_test_user CMD...: run CMD as TEST_USER (keeps the environment except HOME/USER/SHELL).
# From / : the current directory may be one TEST_USER cannot enter.  Use absolute paths.
as_test_user() {
  if is_root; then
    (cd / && runuser -u "$TEST_USER" -- "$@")
  else
    "$@"
  fi
}

# give_to_test_user PATH...: make paths owned by TEST_USER (no-op unless root).
give_to_test_user() {
  is_root || return 0
  chown -R "$TEST_USER:" "$@"
}

# copy_tree SRC DST: copy the source tree without VCS data and build byproducts, so that a
# build for one server never reuses another's object files and the copy can be handed to the
# unprivileged user even if SRC lives in a directory it cannot enter.
copy_tree() {
  local src=$1 dst=$2
  mkdir -p "$dst"
  tar -C "$src" \
      --exclude=./.git --exclude=./build --exclude=./tmp_check --exclude=./results \
      --exclude=./output_iso --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
      --exclude=./bench/results --exclude=./test/unit/obj \
      -cf - . | tar -C "$dst" -xf -
}

# stop_servers_under DIR: immediate-stop any postmaster whose data directory is under DIR
# (left behind by a killed test).  Only touches servers whose postmaster.pid lives there.
stop_servers_under() {
  local dir=$1 pidfile pid
  [ -d "$dir" ] || return 0
  while IFS= read -r pidfile; do
    pid=$(head -n 1 "$pidfile" 2>/dev/null || true)
    case $pid in ''|*[!0-9]*) continue ;; esac
    if kill -0 "$pid" 2>/dev/null; then
      warn "stopping leftover postmaster $pid ($(dirname "$pidfile"))"
      kill -QUIT "$pid" 2>/dev/null || true
    fi
  done < <(find "$dir" -name postmaster.pid 2>/dev/null)
}
