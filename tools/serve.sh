#!/usr/bin/env bash
# Set up and run the gateway on the embedded file store (http://127.0.0.1:17674/graphql).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
bash "$ROOT/tools/setup.sh"
exec "$ROOT/.venv/bin/science-memory" serve "$@"
