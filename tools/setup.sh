#!/usr/bin/env bash
# Create .venv and install the project into it. `tools/setup.sh dev` adds the test tools.
# The install is editable, so code changes need nothing; pip runs again only when
# pyproject.toml changed since the last install of the same kind (a stamp in .venv).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
extras="" stamp=.venv/.installed.sha256
if [ "${1:-}" = "dev" ]; then
  extras="[dev]" stamp=.venv/.installed-dev.sha256
fi
wanted=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}"
  echo "$wanted" >"$stamp"
  # A dev install is a plain install too.
  [ -z "$extras" ] || echo "$wanted" >.venv/.installed.sha256
fi
# npm packages and the offline GraphiQL files (with npm); with `dev`, the codegen venv too.
bash tools/setup-clients.sh "${1:-}"
if [ "${1:-}" = "dev" ]; then
  bash tools/setup-compose.sh  # the Compose binary that checks docker-compose.yml
fi
