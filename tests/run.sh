#!/usr/bin/env bash
# Runs every NixMsg test on a fresh machine and ends with one line: "N passed, N failed".
# Installs what the tests need: Deno (from npm, into .tools/), openssl for the TLS tests.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

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
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}
command -v openssl >/dev/null 2>&1 || apt_install openssl

export NO_COLOR=1
passed=0
failed=0
log="$(mktemp)"

check() {
  local name="$1"; shift
  echo "== $name"
  if "$@"; then passed=$((passed + 1)); else echo "FAILED: $name"; failed=$((failed + 1)); fi
}
check "deno fmt --check" "$DENO" fmt --check
check "deno lint" "$DENO" lint
check "deno check" "$DENO" check --frozen server/ tests/

echo "== deno test (server)"
DENO_JOBS="${DENO_JOBS:-2}" "$DENO" test --allow-all --frozen --parallel server/ tests/ 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
summary="$(grep -E '^(ok|FAILED) \| [0-9]+ passed' "$log" | tail -n 1)"
p="$(sed -nE 's/.*\| ([0-9]+) passed.*/\1/p' <<<"$summary")"
f="$(sed -nE 's/.*\| ([0-9]+) failed.*/\1/p' <<<"$summary")"
if [ -z "$p" ]; then
  echo "deno test did not report a summary (exit $rc)"
  failed=$((failed + 1))
else
  passed=$((passed + p))
  failed=$((failed + ${f:-0}))
  [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ] && failed=$((failed + 1))
fi
rm -f "$log"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
