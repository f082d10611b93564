#!/usr/bin/env bash
# Regenerate the typed clients from schema.graphql: the Python package committed in
# clients/python/science_memory_client/ and, with npm, the TypeScript types in
# clients/src/generated/ (not committed; the tests generate them).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
bash tools/setup-clients.sh dev
(cd clients/python && ../../.venv-codegen/bin/ariadne-codegen --config ariadne-codegen.toml >/dev/null)
if command -v npm >/dev/null 2>&1; then
  npm run --silent --prefix clients codegen
fi
