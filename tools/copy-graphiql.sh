#!/usr/bin/env bash
# Copy the GraphiQL playground's scripts from clients/node_modules (installed from
# clients/package-lock.json) into gateway/static/graphiql/, which the gateway serves offline.
# Run by tools/setup-clients.sh and by the Dockerfile's playground stage.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
mkdir -p gateway/static/graphiql
cp clients/node_modules/react/umd/react.production.min.js \
  clients/node_modules/react-dom/umd/react-dom.production.min.js \
  clients/node_modules/graphiql/graphiql.min.js \
  clients/node_modules/graphiql/graphiql.min.css \
  gateway/static/graphiql/
