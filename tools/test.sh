#!/usr/bin/env bash
# Set up and run every check: formatting, lint, types, import contracts and the test suite.
# With Java 17 and Maven present a real Neo4j is started for the Neo4j backend tests; without
# them those tests are skipped with a printed reason (GATEWAY_REQUIRE_NEO4J=1 makes them fail).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
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
pytest "$@"
