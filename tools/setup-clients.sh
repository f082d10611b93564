#!/usr/bin/env bash
# The clients' toolchain. With npm: the packages of clients/package-lock.json (GraphiQL, GraphQL
# Code Generator, TypeScript, Apollo composition and gateway, playwright-core, Cytoscape.js and
# graphql-ws), the GraphiQL files the gateway serves offline, copied into
# gateway/static/graphiql/, and the session explorer, built into gateway/static/explorer/.
# Without npm the playground loads GraphiQL from unpkg.com, /explorer says how to install it,
# and the Node and browser tests skip.
# `tools/setup-clients.sh dev` also creates .venv-codegen with ariadne-codegen, kept apart from
# .venv because it pins graphql-core<3.3 and ruff<0.16.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}

# Re-run an install only when its lock changed (a stamp holds the lock's hash).
stale() {
  [ "$(cat "$2" 2>/dev/null)" != "$(sha256sum "$1" | cut -d' ' -f1)" ]
}

if command -v npm >/dev/null 2>&1; then
  # The stamp lives beside node_modules, not in it: `npm ci` by hand empties the folder but
  # installs the same lock, and npm's own record (.package-lock.json) says the folder is whole.
  stamp=clients/.node_modules.sha256
  if stale clients/package-lock.json "$stamp" || [ ! -f clients/node_modules/.package-lock.json ]; then
    npm ci --prefix clients --no-audit --no-fund --loglevel=error
    sha256sum clients/package-lock.json | cut -d' ' -f1 >"$stamp"
  fi
  bash tools/copy-static.sh
else
  echo "tools/setup-clients.sh: npm not found: the playground loads GraphiQL from unpkg.com;" \
    "the Node and browser tests will be skipped" >&2
fi

if [ "${1:-}" = "dev" ]; then
  stamp=.venv-codegen/requirements.sha256
  if stale clients/python/codegen-requirements.txt "$stamp"; then
    rm -rf .venv-codegen
    "$PYTHON" -m venv .venv-codegen
    .venv-codegen/bin/python -m pip install --quiet --disable-pip-version-check \
      -r clients/python/codegen-requirements.txt
    sha256sum clients/python/codegen-requirements.txt | cut -d' ' -f1 >"$stamp"
  fi
fi
