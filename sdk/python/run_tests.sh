#!/usr/bin/env bash
# Creates sdk/python/.venv, installs the pinned tools (pip's cache is used), type-checks with
# mypy --strict, builds the wheel and sdist into dist/, and runs the pytest suite against real
# servers. Ends with "# pass N" and "# fail N"; exits non-zero on any failure, including pytest
# finding no tests (exit 5).
#
# Needs: python3 (>= 3.10) with venv (installed with apt when missing) and Deno (on PATH, in
# $DENO, or the repository's .tools/ copy that ./nixmsg installs).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
repo="$(cd ../.. && pwd)"

pass=0
fail=0
finish() {
  echo "# pass $pass"
  echo "# fail $fail"
  [ "$fail" -eq 0 ] && exit 0 || exit 1
}
step_failed() {
  echo "FAILED: $1"
  fail=$((fail + 1))
  finish
}

if [ -z "${DENO:-}" ] && ! command -v deno >/dev/null 2>&1; then
  if [ -x "$repo/.tools/node_modules/.bin/deno" ]; then
    export PATH="$repo/.tools/node_modules/.bin:$PATH"
  else
    echo "run_tests.sh: Deno not found (set DENO, put deno on PATH, or run ./nixmsg once)" >&2
    step_failed "deno"
  fi
fi

if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  echo "== apt-get install python3-venv"
  if [ "$(id -u)" -eq 0 ]; then apt=(apt-get); else apt=(sudo apt-get); fi
  "${apt[@]}" update -qq && "${apt[@]}" install -y -qq python3-venv || step_failed "python3-venv"
fi

echo "== venv and pinned tools"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv || step_failed "python3 -m venv"
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt ||
  step_failed "pip install -r requirements-dev.txt"
.venv/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . ||
  step_failed "pip install -e ."

echo "== mypy --strict"
if .venv/bin/mypy --strict; then pass=$((pass + 1)); else echo "FAILED: mypy"; fail=$((fail + 1)); fi

echo "== build wheel and sdist"
rm -rf dist
build_log="$(mktemp)"
if .venv/bin/python -m build --no-isolation --outdir dist . >"$build_log" 2>&1 &&
  ls dist/nixmsg-*.whl dist/nixmsg-*.tar.gz >/dev/null 2>&1; then
  pass=$((pass + 1))
else
  cat "$build_log"
  echo "FAILED: python -m build"
  fail=$((fail + 1))
fi
rm -f "$build_log"

echo "== pytest"
report="$(mktemp)"
.venv/bin/python -m pytest -q -rs -p no:cacheprovider --junitxml="$report" tests
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "FAILED: pytest collected no tests"
  fail=$((fail + 1))
elif [ -s "$report" ]; then
  read -r t f e s < <(.venv/bin/python - "$report" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
n = lambda k: sum(int(x.get(k, 0)) for x in suites)
print(n("tests"), n("failures"), n("errors"), n("skipped"))
PY
)
  pass=$((pass + t - f - e - s))
  fail=$((fail + f + e))
  if [ "$rc" -ne 0 ] && [ $((f + e)) -eq 0 ]; then
    echo "FAILED: pytest exited $rc"
    fail=$((fail + 1))
  fi
else
  echo "FAILED: pytest exited $rc without a report"
  fail=$((fail + 1))
fi
rm -f "$report"
finish
