#!/usr/bin/env bash
# Builds and tests the Java SDK (mvn -B verify: compile for Java 8, animal-sniffer for Android
# API 24, unit tests, and the conformance checklist against a real server started by
# sdk/conformance/harness.ts). Ends with two lines, "# pass N" and "# fail N", counted from the
# Surefire reports (skipped tests are neither); exits non-zero on any failure.
#
# Needs: JDK 17+, Maven 3.8+, and Deno (on PATH, in $DENO, or the repository's .tools/ copy).
# Maven's downloads are cached in $NIXMSG_M2 (default ~/.cache/nixmsg/m2) between runs.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
repo="$(cd ../.. && pwd)"

if [ -z "${DENO:-}" ] && ! command -v deno >/dev/null 2>&1; then
  if [ -x "$repo/.tools/node_modules/.bin/deno" ]; then
    export PATH="$repo/.tools/node_modules/.bin:$PATH"
  else
    echo "run_tests.sh: Deno not found (set DENO, put deno on PATH, or run ./nixmsg once)" >&2
    echo "# pass 0"
    echo "# fail 1"
    exit 1
  fi
fi
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "run_tests.sh: $tool not found (apt-get install openjdk-17-jdk-headless maven)" >&2
    echo "# pass 0"
    echo "# fail 1"
    exit 1
  fi
done

m2="${NIXMSG_M2:-$HOME/.cache/nixmsg/m2}"
rm -rf target/surefire-reports
mvn -q -B -Dstyle.color=never verify -Dmaven.repo.local="$m2"
rc=$?

pass=0
fail=0
shopt -s nullglob
reports=(target/surefire-reports/TEST-*.xml)
for report in "${reports[@]}"; do
  # <testsuite ... tests="N" errors="N" skipped="N" failures="N">
  line="$(grep -m1 -o '<testsuite [^>]*>' "$report")"
  num() { sed -nE "s/.* $1=\"([0-9]+)\".*/\\1/p" <<<"$line"; }
  tests="$(num tests)"
  errors="$(num errors)"
  skipped="$(num skipped)"
  failures="$(num failures)"
  bad=$((${errors:-0} + ${failures:-0}))
  fail=$((fail + bad))
  pass=$((pass + ${tests:-0} - ${skipped:-0} - bad))
done
# A build that failed before or outside the tests (compile, animal-sniffer) counts as one failure.
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
  echo "run_tests.sh: mvn verify exited $rc" >&2
  fail=1
fi
# Maven may leave its last output line open: start the summary on a line of its own.
echo
echo "# pass $pass"
echo "# fail $fail"
[ "$rc" -eq 0 ] && [ "$fail" -eq 0 ]
