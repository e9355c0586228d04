#!/usr/bin/env bash
# The close-after-handler reproduction (checklist 17a) on demand, for one SDK: five kept
# messages, close as the fifth handler returns, connect again, count the redeliveries; ROUNDS
# rounds (default 20) against a real server. Runs only that test of the SDK's suite (Python: of
# its thread client and of its asyncio client), with NIXMSG_CLOSE_ROUNDS set, and prints the
# result lines, "rounds=N redelivered=M not_accepted=K". Exits non-zero when an M or K is not 0,
# or the test failed or printed no result.
#
# Usage: sdk/conformance/close_after_handler.sh ts|go|python|java [ROUNDS]
#
# Needs what the SDK's run_tests.sh needs, installed once by it: sdk/ts/node_modules (npm ci),
# sdk/python/.venv, Go, JDK and Maven (Maven's cache: $NIXMSG_M2, default ~/.cache/nixmsg/m2).
set -uo pipefail
sdk="${1:-}"
rounds="${2:-20}"
case "$sdk" in ts | go | python | java) ;; *)
  echo "usage: $0 ts|go|python|java [ROUNDS]" >&2
  exit 2
  ;;
esac
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  echo "$0: ROUNDS must be a positive integer, not $rounds" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if [ -z "${DENO:-}" ] && ! command -v deno >/dev/null 2>&1 && [ -x "$repo/.tools/node_modules/.bin/deno" ]; then
  export PATH="$repo/.tools/node_modules/.bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
export NIXMSG_CLOSE_ROUNDS="$rounds"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

cd "$repo/sdk/$sdk" || exit 1
case "$sdk" in
ts)
  node scripts/test.mjs integration/checklist_lifecycle.test.ts -- \
    --test-name-pattern="checklist 17a" >"$log" 2>&1
  ;;
go)
  go test -mod=readonly -count=1 -timeout 30m -v -run '^TestChecklist17a' . >"$log" 2>&1
  ;;
python)
  # The thread client's 17a and the asyncio client's.
  .venv/bin/python -m pytest -q -s -p no:cacheprovider tests/test_checklist_lifecycle.py \
    -k "test_checklist_17a or test_asyncio_close_as_the_handler_returns" >"$log" 2>&1
  ;;
java)
  rm -f target/surefire-reports/*ChecklistLifecycleTest*
  mvn -q -B -Dstyle.color=never test -Dmaven.repo.local="${NIXMSG_M2:-$HOME/.cache/nixmsg/m2}" \
    -Dtest='ChecklistLifecycleTest#checklist17a*' -Dsurefire.failIfNoSpecifiedTests=false >"$log" 2>&1
  status=$?
  cat target/surefire-reports/*ChecklistLifecycleTest-output.txt >>"$log" 2>/dev/null
  (exit "$status")
  ;;
esac
status=$?

lines="$(grep -oE '(asyncio )?rounds=[0-9]+ redelivered=[0-9]+ not_accepted=[0-9]+' "$log")"
if [ -z "$lines" ]; then
  cat "$log"
  echo "$sdk: no result line (exit $status)"
  exit 1
fi
ok=1
while IFS= read -r line; do
  echo "$sdk: $line"
  [ "${line#asyncio }" = "rounds=$rounds redelivered=0 not_accepted=0" ] || ok=0
done <<<"$lines"
if [ "$status" -ne 0 ] || [ "$ok" -ne 1 ]; then
  [ "$status" -ne 0 ] && tail -40 "$log"
  exit 1
fi
