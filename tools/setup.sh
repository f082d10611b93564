#!/usr/bin/env bash
# Create .venv and install the project into it. `tools/setup.sh dev` adds the test tools.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
extras=""
if [ "${1:-}" = "dev" ]; then
  extras="[dev]"
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet -e ".${extras}"
# npm packages and the offline GraphiQL files (with npm); with `dev`, the codegen venv too.
bash tools/setup-clients.sh "${1:-}"
