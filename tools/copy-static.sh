#!/usr/bin/env bash
# Copy what the gateway serves offline out of clients/ (npm packages installed from
# clients/package-lock.json): the GraphiQL playground into gateway/static/graphiql/ and the
# session explorer (clients/explorer/ and the libraries it draws with) into
# gateway/static/explorer/. Run by tools/setup-clients.sh and by the Dockerfile's first stage.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
mkdir -p gateway/static/graphiql gateway/static/explorer
cp clients/node_modules/react/umd/react.production.min.js \
  clients/node_modules/react-dom/umd/react-dom.production.min.js \
  clients/node_modules/graphiql/graphiql.min.js \
  clients/node_modules/graphiql/graphiql.min.css \
  gateway/static/graphiql/
cp clients/explorer/index.html clients/explorer/explorer.js clients/explorer/explorer.css \
  clients/node_modules/cytoscape/dist/cytoscape.min.js \
  clients/node_modules/cytoscape-dagre/dist/cytoscape-dagre.js \
  clients/node_modules/graphql-ws/umd/graphql-ws.min.js \
  gateway/static/explorer/
