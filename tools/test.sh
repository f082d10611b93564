#!/usr/bin/env bash
# Set up and run every check: formatting, lint, types, import contracts and the test suite.
# With Java 17 and Maven present a real Neo4j is started for the Neo4j backend tests; without
# them those tests are skipped with a printed reason (GATEWAY_REQUIRE_NEO4J=1 makes them fail).
# The browser and Node tests need Node.js and Chromium (GATEWAY_TEST_CHROMIUM, default
# /usr/bin/chromium), one disk-fault test strace: GATEWAY_REQUIRE_E2E=1 fails at once without
# them; unset, the suite runs, says what it skipped and exits 1; GATEWAY_REQUIRE_E2E=0 accepts
# the skip.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

e2e_missing=()
[ -x "${GATEWAY_TEST_CHROMIUM:-/usr/bin/chromium}" ] ||
  e2e_missing+=("Chromium at ${GATEWAY_TEST_CHROMIUM:-/usr/bin/chromium} (apt-get install chromium)")
command -v npm >/dev/null 2>&1 || e2e_missing+=("Node.js 20+ with npm")
# The SQLite engine's failed-fsync test injects the fault with strace (tests/http/).
command -v strace >/dev/null 2>&1 || e2e_missing+=("strace (apt-get install strace)")
if [ ${#e2e_missing[@]} -gt 0 ] && [ "${GATEWAY_REQUIRE_E2E:-}" = 1 ]; then
  printf 'tools/test.sh: GATEWAY_REQUIRE_E2E=1 but missing: %s\n' "${e2e_missing[*]}" >&2
  exit 1
fi

bash tools/setup.sh dev
export PATH="$ROOT/.venv/bin:$PATH"
if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then
  eval "$(tools/neo4j-test-server/run.sh start --fresh)"
  trap 'tools/neo4j-test-server/run.sh stop >/dev/null 2>&1 || true' EXIT
else
  echo "tools/test.sh: Java 17 and Maven not found; Neo4j backend tests will be skipped" >&2
fi
ruff format --check .
ruff check .
mypy
lint-imports
status=0
pytest "$@" || status=$?
if [ ${#e2e_missing[@]} -gt 0 ]; then
  printf '\ntools/test.sh: the browser, Node or strace tests were SKIPPED; missing: %s\n' \
    "${e2e_missing[*]}" >&2
  if [ "${GATEWAY_REQUIRE_E2E:-}" != 0 ]; then
    echo "tools/test.sh: failing; install them, or set GATEWAY_REQUIRE_E2E=0 to accept the skip" >&2
    [ "$status" -ne 0 ] || status=1
  fi
fi
exit "$status"
