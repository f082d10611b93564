"""End-to-end fixtures: a real gateway under uvicorn on a free loopback port, and the tools.

``gateway`` runs ``python -m gateway serve`` (the command operators run) on an empty data
directory and stops it after the test. Tests that need Node.js, the npm packages of
``clients/`` or Debian's Chromium skip with a printed reason when they are missing, and FAIL
instead when ``GATEWAY_REQUIRE_E2E=1`` (CI): a skipped browser test is not a passing one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "clients"
NODE_MODULES = CLIENTS / "node_modules"
CHROMIUM = Path(os.environ.get("GATEWAY_TEST_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = ROOT / "test-artifacts"
# Bounds, not expectations: a healthy run takes a fraction of each.
START_SECONDS = 30.0
TOOL_SECONDS = 120.0
ENV_PREFIX = "SCIENCE_AGENT_MEMORY_GRAPH_"


def missing(reason: str) -> None:
    """Skip the test, or fail it when the end-to-end tools are required (CI)."""
    if os.environ.get("GATEWAY_REQUIRE_E2E") == "1":
        pytest.fail(f"GATEWAY_REQUIRE_E2E=1 but {reason}")
    pytest.skip(reason)


def require_node() -> str:
    """The ``node`` executable, with the npm packages of ``clients/`` installed.

    Installed means what npm itself records (``node_modules/.package-lock.json``, written by
    ``npm ci`` and ``npm install``), so an install by hand counts as much as
    ``tools/setup-clients.sh``; a package the lock names but the folder lacks is named.
    """
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        missing("node/npm not found (install Node.js 20+ and run tools/setup-clients.sh)")
    absent = uninstalled_packages()
    if absent:
        missing(
            f"clients/node_modules lacks {', '.join(absent)} of clients/package-lock.json "
            "(run tools/setup-clients.sh)"
        )
    assert node is not None
    return node


def uninstalled_packages() -> list[str]:
    """The direct dependencies of ``clients/package.json`` that ``node_modules`` lacks."""
    if not (NODE_MODULES / ".package-lock.json").is_file():
        return ["every package"]
    manifest = json.loads((CLIENTS / "package.json").read_text())
    wanted = {**manifest.get("dependencies", {}), **manifest.get("devDependencies", {})}
    return sorted(name for name in wanted if not (NODE_MODULES / name / "package.json").is_file())


def require_chromium() -> Path:
    if not CHROMIUM.is_file():
        missing(f"{CHROMIUM} not found (apt-get install chromium)")
    return CHROMIUM


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child process, without the developer's gateway settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env.update(extra)
    return env


def stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@dataclass(frozen=True)
class Gateway:
    url: str
    log: Path

    @property
    def graphql(self) -> str:
        return f"{self.url}/graphql"

    def post(self, query: str, **variables: Any) -> dict[str, Any]:
        """The ``data`` of a document sent over HTTP; fails the test on errors."""
        response = httpx.post(self.graphql, json={"query": query, "variables": variables})
        body: dict[str, Any] = response.json()
        assert "errors" not in body, body
        data: dict[str, Any] = body["data"]
        return data


def wait_until_healthy(url: str, process: subprocess.Popen[Any], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the gateway exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"the gateway did not answer /health within {START_SECONDS}s:\n{log.read_text()}")


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    """A real gateway on the file store, on a free loopback port; stopped after the test."""
    with serve_gateway(tmp_path) as served:
        yield served


@contextlib.contextmanager
def serve_gateway(tmp_path: Path, **settings: str) -> Iterator[Gateway]:
    """``science-memory serve`` with ``settings`` (names without the prefix) for the block."""
    port = free_port()
    log = tmp_path / "gateway.log"
    env = child_env(
        **{
            f"{ENV_PREFIX}DATA_DIR": str(tmp_path / "data"),
            f"{ENV_PREFIX}FSYNC": "0",
            f"{ENV_PREFIX}LOG_LEVEL": "INFO",
            **{f"{ENV_PREFIX}{name}": value for name, value in settings.items()},
        }
    )
    command = [sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process, log)
        yield Gateway(url, log)
    finally:
        stop(process)


def run_node(script: Path, *args: str, timeout: float = TOOL_SECONDS) -> dict[str, Any]:
    """Run a Node script of ``clients/`` that prints one JSON object; fail on a non-zero exit."""
    node = require_node()
    done = subprocess.run(
        [node, str(script), *args],
        cwd=CLIENTS,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
