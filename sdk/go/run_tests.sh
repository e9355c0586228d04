#!/usr/bin/env bash
# Vets the Go SDK (go vet, then staticcheck, pinned below and installed into GOBIN on first use)
# and runs its unit and integration tests under the race detector; the
# integration tests start a real server through sdk/conformance/harness.ts. Ends with two lines,
# "# pass N" and "# fail N" (test cases; skips are not failures), and exits non-zero on any
# failure.
#
# Needs on the machine: Go 1.24+ (modules from the Go proxy, or the module cache) and Deno (on
# PATH, in $DENO, or the repository's .tools/ copy that ./nixmsg installs).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
repo="$(cd ../.. && pwd)"

if [ -z "${DENO:-}" ] && ! command -v deno >/dev/null 2>&1; then
  if [ -x "$repo/.tools/node_modules/.bin/deno" ]; then
    export PATH="$repo/.tools/node_modules/.bin:$PATH"
  else
    echo "run_tests.sh: Deno not found (set DENO, put deno on PATH, or run ./nixmsg once)" >&2
    exit 1
  fi
fi
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "run_tests.sh: go not found (install Go 1.24 or newer)" >&2
  exit 1
fi
# go.sum pins every module; the module cache stays where Go keeps it (GOMODCACHE).
export GOFLAGS="-mod=readonly"

echo "== go vet"
if ! go vet ./...; then
  echo "# pass 0"
  echo "# fail 1"
  exit 1
fi

# staticcheck, pinned; installed from the Go proxy into GOBIN (or GOPATH/bin) on first use.
STATICCHECK_VERSION=v0.8.2
bin="$(go env GOBIN)"
[ -n "$bin" ] || bin="$(go env GOPATH)/bin"
if ! "$bin/staticcheck" -version 2>/dev/null | grep -qF "(${STATICCHECK_VERSION#v})"; then
  echo "== go install staticcheck@$STATICCHECK_VERSION"
  if ! (cd / && GOFLAGS=-buildvcs=false go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"); then
    echo "# pass 0"
    echo "# fail 1"
    exit 1
  fi
fi
echo "== staticcheck"
if ! "$bin/staticcheck" ./...; then
  echo "# pass 0"
  echo "# fail 1"
  exit 1
fi

echo "== go test -race"
json="$(mktemp)"
trap 'rm -f "$json"' EXIT
go test -race -count=1 -timeout 10m -json ./... >"$json"
status=$?
# Print failures' output for the log, then the counts (top-level and subtests alike).
python3 - "$json" "$status" <<'PY'
import json, sys
passed = failed = 0
out = {}
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        ev = json.loads(line)
    except ValueError:
        print(line, end="")
        continue
    test = ev.get("Test")
    action = ev.get("Action")
    if action == "output":
        out.setdefault(test, []).append(ev.get("Output", ""))
    elif test and action == "pass":
        passed += 1
        print(f"ok   {test} ({ev.get('Elapsed', 0)}s)")
    elif test and action == "skip":
        print(f"skip {test}")
    elif action == "fail":
        if test:
            failed += 1
        print("".join(out.get(test, [])), end="")
        print(f"FAIL {test or ev.get('Package')}")
if sys.argv[2] != "0" and failed == 0:
    failed = 1  # a build error or a crash outside any test still fails
print(f"# pass {passed}")
print(f"# fail {failed}")
PY
[ "$status" -eq 0 ]
