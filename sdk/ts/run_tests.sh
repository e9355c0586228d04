#!/usr/bin/env bash
# Installs the SDK's dependencies (npm ci), builds it, type-checks it and runs the unit and
# integration tests with node's test runner. Exits non-zero on any failure.
#
# Needs on the machine: Node.js 20+ with npm; Deno (on PATH, in $DENO, or the repository's
# .tools/ copy that ./nixmsg installs); for the browser test the Debian packages `chromium` and
# `fonts-wqy-microhei` (`apt-get install chromium fonts-wqy-microhei`), or $CHROMIUM; and
# python3 with venv, for the docs/devices.md example (paho-mqtt is installed from PyPI into
# node_modules/.venv); Go, for toxiproxy (the weak-network tests; ../../scripts/install_toxiproxy.sh
# builds it into ~/.cache/nixmsg on first use, or set NIXMSG_TOXIPROXY to a binary); and,
# optionally, `mosquitto_rr` (Debian `mosquitto-clients`) for the guide's quick check, which is
# skipped without it.
set -euo pipefail
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
if [ -z "${CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then
  echo "run_tests.sh: /usr/bin/chromium not found (apt-get install chromium fonts-wqy-microhei)" >&2
  exit 1
fi

echo "== npm ci (sdk/ts)"
npm ci --no-audit --no-fund
if [ -z "${NIXMSG_PYTHON:-}" ]; then
  echo "== paho-mqtt for the docs/devices.md example"
  python3 -m venv node_modules/.venv
  node_modules/.venv/bin/pip install --quiet --disable-pip-version-check "paho-mqtt==2.2.0"
fi
echo "== build"
npm run --silent build
echo "== type check"
npm run --silent typecheck
echo "== tests"
node scripts/test.mjs
