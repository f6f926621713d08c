#!/usr/bin/env bash
# A throwaway PostgreSQL 15 for the database test suite.
#
#   bash scripts/ci-postgres.sh start      prints DATABASE_URL=... and DECKHAND_CI_POSTGRES_DIR=...
#   . scripts/ci-postgres.sh start         the same, exported into the calling shell
#   bash scripts/ci-postgres.sh stop [DIR] stops the server and deletes DIR (default: $DECKHAND_CI_POSTGRES_DIR)
#
# Uses the machine's binaries in /usr/lib/postgresql/15/bin and installs Debian's postgresql-15
# with apt-get only when they are absent. The server runs as the `postgres` user (initdb refuses
# root) in a temporary directory, on a free port on 127.0.0.1, with trust authentication and
# durability switched off: it holds nothing worth keeping and must be fast.

# Sourced: run this script in a child bash and export what it prints, so the caller's shell
# options (set -e and friends) are neither needed nor changed.
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then
  __deckhand_ci_postgres_output="$(bash "${BASH_SOURCE[0]}" "$@")" || return $?
  while IFS= read -r __deckhand_ci_postgres_line; do
    [[ "$__deckhand_ci_postgres_line" == *=* ]] && export "$__deckhand_ci_postgres_line"
  done <<<"$__deckhand_ci_postgres_output"
  unset __deckhand_ci_postgres_output __deckhand_ci_postgres_line
  return 0
fi

set -euo pipefail

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
DATABASE_NAME="deckhand"

log() { echo "ci-postgres: $*" >&2; }

# Root's tools live in the sbin directories, which a minimal PATH (a CI runner's, cron's) lacks.
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
export PATH

# Runs a command as the postgres user; when we already are that user (or cannot switch), as is.
as_postgres() {
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

ensure_binaries() {
  if [[ -x "$PG_BIN/postgres" && -x "$PG_BIN/initdb" && -x "$PG_BIN/pg_ctl" ]]; then return; fi
  if [[ "$(id -u)" != 0 ]]; then
    log "no PostgreSQL 15 in $PG_BIN, and installing postgresql-15 needs root"
    exit 1
  fi
  log "installing postgresql-15 with apt-get"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >&2
}

ensure_user() {
  if [[ "$(id -u)" != 0 ]] || id postgres >/dev/null 2>&1; then return; fi
  useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
}

port_is_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start() {
  ensure_binaries
  ensure_user
  local dir
  dir="$(mktemp -d "${TMPDIR:-/tmp}/deckhand-ci-postgres.XXXXXX")"
  chmod 700 "$dir"
  [[ "$(id -u)" == 0 ]] && chown postgres: "$dir"
  as_postgres "$PG_BIN/initdb" --pgdata="$dir/data" --username=postgres --auth=trust \
    --encoding=UTF8 --no-locale --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
  local attempt port=""
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 40000))
    port_is_free "$port" || continue
    if as_postgres "$PG_BIN/pg_ctl" --pgdata="$dir/data" --log="$dir/server.log" --wait \
      --timeout=60 --options="-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off \
      -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >/dev/null; then
      break
    fi
    log "port $port was taken (attempt $attempt); trying another"
    port=""
  done
  if [[ -z "$port" ]]; then
    cat "$dir/server.log" >&2 || true
    exit 1
  fi
  local waited=0
  until "$PG_BIN/pg_isready" --host=127.0.0.1 --port="$port" --quiet; do
    if ((waited >= 300)); then
      log "server did not become ready"
      cat "$dir/server.log" >&2
      exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  "$PG_BIN/createdb" --host=127.0.0.1 --port="$port" --username=postgres "$DATABASE_NAME"
  log "PostgreSQL 15 ready on 127.0.0.1:$port (data in $dir)"
  echo "DATABASE_URL=postgres://postgres@127.0.0.1:$port/$DATABASE_NAME"
  echo "DECKHAND_CI_POSTGRES_DIR=$dir"
}

stop() {
  local dir="${1:-${DECKHAND_CI_POSTGRES_DIR:-}}"
  if [[ -z "$dir" || ! -d "$dir" ]]; then
    log "nothing to stop: pass the directory start printed, or set DECKHAND_CI_POSTGRES_DIR"
    exit 1
  fi
  if [[ -f "$dir/data/postmaster.pid" ]]; then
    as_postgres "$PG_BIN/pg_ctl" --pgdata="$dir/data" --mode=immediate --wait stop >/dev/null
  fi
  rm -rf "$dir"
  log "stopped and removed $dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *)
    echo "usage: $0 start | stop [DIR]" >&2
    exit 2
    ;;
esac
