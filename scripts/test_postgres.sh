#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests (issue 29): initdb as the unprivileged `postgres` user in a
# temp directory, on a free port, with one database and a password (so the tests see a URL that
# must never be logged whole).
#
#   eval "$(bash scripts/test_postgres.sh start)"   # exports NIXMSG_TEST_POSTGRES_URL, NIXMSG_TEST_POSTGRES_DIR
#   bash scripts/test_postgres.sh stop "$NIXMSG_TEST_POSTGRES_DIR"
#   bash scripts/test_postgres.sh pause DIR | resume DIR   # stop / start the server, data kept
#
# Only the export lines go to stdout; progress and errors go to stderr.
set -euo pipefail

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

# Runs a command as the `postgres` user when we are root (PostgreSQL refuses to run as root).
as_pg() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local bin dir port pw
  bin="$(find_bin)" || { echo "test_postgres: no initdb found (apt-get install postgresql)" >&2; exit 1; }
  dir="$(mktemp -d /tmp/nixmsg-pg.XXXXXX)"
  [ "$(id -u)" = "0" ] && chown postgres: "$dir"
  chmod 700 "$dir"
  pw="$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 20)"
  printf '%s\n' "$pw" > "$dir/pwfile"
  [ "$(id -u)" = "0" ] && chown postgres: "$dir/pwfile"
  as_pg "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" --auth=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
    echo "test_postgres: initdb failed:" >&2; cat "$dir/initdb.log" >&2; exit 1; }
  rm -f "$dir/pwfile"
  # Try ports until one is free: pg_ctl -w fails when the port is taken.
  local tries=0
  while :; do
    port=$((20000 + RANDOM % 40000))
    if as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on" \
      start >/dev/null 2>&1; then
      break
    fi
    tries=$((tries + 1))
    if [ "$tries" -ge 5 ]; then
      echo "test_postgres: the server did not start:" >&2; tail -n 20 "$dir/server.log" >&2; exit 1
    fi
  done
  echo "$port" > "$dir/port"
  as_pg env PGPASSWORD="$pw" "$bin/createdb" -h "$dir" -p "$port" -U postgres nixmsg_test
  echo "test_postgres: PostgreSQL $("$bin/pg_ctl" --version | awk '{print $3}') on 127.0.0.1:$port ($dir)" >&2
  echo "export NIXMSG_TEST_POSTGRES_URL='postgres://postgres:$pw@127.0.0.1:$port/nixmsg_test'"
  echo "export NIXMSG_TEST_POSTGRES_DIR='$dir'"
}

stop() {
  local dir="${1:-}" bin
  [ -n "$dir" ] && [ -d "$dir/data" ] || { echo "test_postgres: no data directory given" >&2; exit 1; }
  bin="$(find_bin)"
  as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

# Stops the server of DIR and keeps its data (a PostgreSQL outage, for the restart tests).
pause() {
  local dir="${1:-}" bin
  [ -n "$dir" ] && [ -d "$dir/data" ] || { echo "test_postgres: no data directory given" >&2; exit 1; }
  bin="$(find_bin)"
  as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
}

# Starts the server of DIR again on its port.
resume() {
  local dir="${1:-}" bin port
  [ -n "$dir" ] && [ -f "$dir/port" ] || { echo "test_postgres: no data directory given" >&2; exit 1; }
  bin="$(find_bin)"
  port="$(cat "$dir/port")"
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on" \
    start >/dev/null
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  pause) pause "${2:-}" ;;
  resume) resume "${2:-}" ;;
  *) echo "usage: $0 start | stop DIR | pause DIR | resume DIR" >&2; exit 2 ;;
esac
