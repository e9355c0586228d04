#!/usr/bin/env bash
# Runs every NixMsg test on a fresh machine and ends with one line: "N passed, N failed".
# Installs what the tests need: Deno (from npm, into .tools/), openssl for the TLS tests,
# Debian's chromium and a CJK font for the browser tests, toxiproxy (built with Go) and nftables
# for the weak-network tests, mosquitto-clients for the device guide, Schemathesis (pip, into a
# venv in .tools/) for the admin API fuzz test, and the SDKs' packages.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
export NO_COLOR=1

if command -v deno >/dev/null 2>&1; then
  DENO="$(command -v deno)"
else
  DENO="$root/.tools/node_modules/.bin/deno"
  if [ ! -x "$DENO" ]; then
    echo "== installing Deno 2.9.6 into .tools/"
    npm install --silent --no-audit --no-fund --prefix "$root/.tools" deno@2.9.6 || exit 1
  fi
fi
export PATH="$(dirname "$DENO"):$PATH"

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" = "0" ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}
command -v openssl >/dev/null 2>&1 || apt_install openssl
# tests/docs_commands_test.ts runs the shell blocks of the README and docs/ as written: curl,
# sysctl (procps), ss and nstat (iproute2), mosquitto_rr (below).
command -v curl >/dev/null 2>&1 || apt_install curl
command -v sysctl >/dev/null 2>&1 || apt_install procps
command -v ss >/dev/null 2>&1 && command -v nstat >/dev/null 2>&1 || apt_install iproute2
# The browser tests drive Debian's chromium; the Chinese console needs a CJK font.
apt_install chromium fonts-wqy-microhei
# The weak-network tests run toxiproxy v2.5.0, built once from its Go module into ~/.cache/nixmsg.
command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || apt_install golang-go
bash scripts/install_toxiproxy.sh >/dev/null || echo "== toxiproxy could not be built: the weak-network tests will fail"
# The packet-loss test drops packets with nftables inside a network namespace (skipped when not root).
command -v nft >/dev/null 2>&1 || apt_install nftables
# The device guide's mosquitto_rr check: tests/docs_commands_test.ts fails without it, the sdk/ts
# devices_doc test skips itself.
apt_install mosquitto-clients || echo "== mosquitto-clients not installed: the docs' mosquitto_rr check fails"

# The PROXY protocol tests put Debian's HAProxy in front of a server (tests/proxy_protocol_haproxy_test.ts).
apt_install haproxy || echo "== haproxy not installed: the PROXY protocol tests are skipped"

# --- test PostgreSQL (issue 29) -------------------------------------------------------------
# A throwaway PostgreSQL for the PostgreSQL store tests: initdb as the `postgres` user in a temp
# directory, on a free port (scripts/test_postgres.sh); stopped when this script exits. The
# tests read NIXMSG_TEST_POSTGRES_URL and skip, saying so, only when it is unset.
command -v runuser >/dev/null 2>&1 || apt_install util-linux
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_install postgresql
if pg_env="$(bash scripts/test_postgres.sh start)"; then
  eval "$pg_env"
  trap 'bash scripts/test_postgres.sh stop "$NIXMSG_TEST_POSTGRES_DIR"' EXIT
else
  echo "== the test PostgreSQL could not be started: the PostgreSQL store tests will fail"
  export NIXMSG_TEST_POSTGRES_URL="postgres://unavailable@127.0.0.1:1/none"
fi
# --- end of test PostgreSQL -----------------------------------------------------------------

# --- Schemathesis (issue 32) -----------------------------------------------------------------
# tests/schemathesis_test.ts fuzzes the admin API from docs/openapi.json with the pinned
# Schemathesis of tests/schemathesis/requirements.txt, installed with pip into a venv in .tools/.
st_venv="$root/.tools/schemathesis"
command -v python3 >/dev/null 2>&1 || apt_install python3
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || apt_install python3-venv
if [ ! -x "$st_venv/bin/st" ] \
  || ! cmp -s tests/schemathesis/requirements.txt "$st_venv/requirements.txt"; then
  echo "== installing Schemathesis into .tools/schemathesis"
  rm -rf "$st_venv"
  if python3 -m venv "$st_venv" \
    && "$st_venv/bin/pip" install -q --disable-pip-version-check -r tests/schemathesis/requirements.txt; then
    cp tests/schemathesis/requirements.txt "$st_venv/requirements.txt"
  else
    echo "== Schemathesis could not be installed: tests/schemathesis_test.ts is skipped"
  fi
fi
[ -x "$st_venv/bin/st" ] && export NIXMSG_SCHEMATHESIS="$st_venv/bin/st"
# --- end of Schemathesis --------------------------------------------------------------------

passed=0
failed=0

# The fault tests append their figures (lost, duplicated, redelivered, …) as JSON lines here
# (tests/helpers/fault_counts.ts); collected into one summary file at the end.
export NIXMSG_FAULT_SUMMARY_DIR="$(mktemp -d -t nixmsg-fault-summary.XXXXXX)"

# One check counted as one test.
check() {
  local name="$1"; shift
  echo "== $name"
  if "$@"; then passed=$((passed + 1)); else echo "FAILED: $name"; failed=$((failed + 1)); fi
}

# A test runner whose summary line gives its own counts. $1 = label, $2 = pass regex,
# $3 = fail regex (sed -E with one capture group each), then the command.
suite() {
  local name="$1" pass_re="$2" fail_re="$3"; shift 3
  echo "== $name"
  local log; log="$(mktemp)"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local p f
  p="$(sed -nE "s/$pass_re/\1/p" "$log" | tail -n 1)"
  f="$(sed -nE "s/$fail_re/\1/p" "$log" | tail -n 1)"
  rm -f "$log"
  if [ -z "$p" ]; then
    echo "FAILED: $name reported no summary (exit $rc)"
    failed=$((failed + 1))
    return
  fi
  passed=$((passed + p))
  failed=$((failed + ${f:-0}))
  if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
    echo "FAILED: $name exited $rc"
    failed=$((failed + 1))
  fi
}

# The cluster tests (issue 30) run nats-server v2.15.3, built once from its Go module into
# ~/.cache/nixmsg; without it they would skip, so a failed build fails the run here.
check "nats-server for the cluster tests" bash scripts/install_nats_server.sh

echo "== building the admin console (web/dist)"
check "web build" "$DENO" task build:web

check "deno fmt --check" "$DENO" fmt --check
check "deno lint" "$DENO" lint
check "deno check" "$DENO" check --frozen server/ tests/
check "vue-tsc" bash -c "cd web && '$DENO' task typecheck"

suite "web unit tests" '^[a-zA-Z]+ \| ([0-9]+) passed.*$' '.*\| ([0-9]+) failed.*$' \
  bash -c "cd web && '$DENO' task test"
# permissions: not the shipped command: the test runner spawns servers, clients, prlimit and chromium and
# reads /proc; every server or CLI it starts runs with the shipped set (tests/permissions_test.ts).
suite "server tests" '^[a-zA-Z]+ \| ([0-9]+) passed.*$' '.*\| ([0-9]+) failed.*$' \
  env DENO_JOBS="${DENO_JOBS:-2}" "$DENO" test --allow-all --frozen --parallel server/ tests/
# The store-neutral server suites again with store.kind postgres (issue 29): each test server gets
# a fresh database on the test PostgreSQL (tests/helpers/test_store.ts). Tests about SQLite itself
# (its file, WAL, file backups) ignore themselves there and say why. All of these files run: none
# is slow enough to need a subset (93 tests, about 1.5 minutes at DENO_JOBS=2).
PG_SUITES=(
  tests/messaging*_test.ts tests/groups_test.ts tests/talk*_test.ts tests/admin_*_test.ts
  tests/crash_matrix_test.ts tests/readyz_test.ts tests/http_store_errors_test.ts
  tests/webhook_admin_test.ts
)
# permissions: not the shipped command: the test runner, as for the server tests above.
suite "server tests on PostgreSQL" '^[a-zA-Z]+ \| ([0-9]+) passed.*$' '.*\| ([0-9]+) failed.*$' \
  env NIXMSG_TEST_STORE=postgres DENO_JOBS="${DENO_JOBS:-2}" "$DENO" test --allow-all --frozen --parallel "${PG_SUITES[@]}"

if [ -x sdk/ts/run_tests.sh ]; then
  suite "TypeScript SDK" '^# pass ([0-9]+)$' '^# fail ([0-9]+)$' bash sdk/ts/run_tests.sh
fi
# The TypeScript SDK's checklist (spec 9 接入清单, all 8 files, 22 tests) again through a 3-node
# cluster (issue 30): the conformance harness's cluster mode starts, per test file, a fresh
# database on the test PostgreSQL above, a nats-server, 3 `nixmsg serve` nodes with the shipped
# permissions and HAProxy (TCP, send-proxy-v2, round robin) in front; the SDK only sees HAProxy.
# About 2.5 minutes on the shared 2-core machine. The nodes' logs go to a directory printed here.
if [ -x sdk/ts/run_tests.sh ]; then
  cluster_logs="$(mktemp -d -t nixmsg-cluster-checklist.XXXXXX)"
  echo "== (the cluster nodes' logs: $cluster_logs)"
  suite "TypeScript SDK checklist through a 3-node cluster" '^# pass ([0-9]+)$' '^# fail ([0-9]+)$' \
    env -C sdk/ts NIXMSG_HARNESS_CLUSTER=3 NIXMSG_HARNESS_LOG_DIR="$cluster_logs" node scripts/test.mjs \
    integration/checklist_login.test.ts integration/checklist_messaging.test.ts \
    integration/checklist_groups_talk.test.ts integration/checklist_lifecycle.test.ts \
    integration/checklist_schedule.test.ts integration/checklist_takeover_register.test.ts \
    integration/checklist_weak_network.test.ts integration/checklist_browser.test.ts
fi
if [ -x sdk/go/run_tests.sh ]; then
  suite "Go SDK" '^# pass ([0-9]+)$' '^# fail ([0-9]+)$' bash sdk/go/run_tests.sh
fi
if [ -x sdk/python/run_tests.sh ]; then
  suite "Python SDK" '^# pass ([0-9]+)$' '^# fail ([0-9]+)$' bash sdk/python/run_tests.sh
fi
if [ -x sdk/java/run_tests.sh ]; then
  suite "Java SDK" '^# pass ([0-9]+)$' '^# fail ([0-9]+)$' bash sdk/java/run_tests.sh
fi

# permissions: not the shipped command: a doc generator of this repo, run by the test runner.
fault_summary="$NIXMSG_FAULT_SUMMARY_DIR/fault_summary.json"
if "$DENO" run --quiet --allow-all scripts/reliability_tables.ts collect "$NIXMSG_FAULT_SUMMARY_DIR" \
  "$fault_summary" --run "run-$(date -u +%Y%m%dT%H%M)" --note "tests/run.sh"; then
  echo "== fault summary: $fault_summary"
  echo "   (docs/RELIABILITY.md from it: deno run -A scripts/reliability_tables.ts merge $fault_summary && deno run -A scripts/reliability_tables.ts write)"
else
  echo "FAILED: collecting the fault summary"
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
