"""``docker-compose.yml`` as a real Docker Compose v2 resolves it (``docker-compose config``).

The binary comes from ``tools/setup-compose.sh`` (run by ``tools/setup.sh dev``); without it the
tests skip, and fail when ``GATEWAY_REQUIRE_E2E=1`` (CI).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = Path(os.environ.get("GATEWAY_TEST_COMPOSE", ROOT / ".tools" / "bin" / "docker-compose"))
SECRETS = {
    "NEO4J_PASSWORD": "neo4j-secret-4b1e",
    "SCIENCE_AGENT_MEMORY_GRAPH_INTERNAL_TOKEN": "internal-secret-77a0",
    "SCIENCE_AGENT_MEMORY_GRAPH_READ_TOKEN": "",
}


def compose(env_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if not COMPOSE.is_file():
        reason = f"{COMPOSE} not found (run tools/setup-compose.sh)"
        if os.environ.get("GATEWAY_REQUIRE_E2E") == "1":
            pytest.fail(f"GATEWAY_REQUIRE_E2E=1 but {reason}")
        pytest.skip(reason)
    # Only the env file decides: none of the developer's variables or .env leak in.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [str(COMPOSE), "--project-directory", str(ROOT), "--env-file", str(env_file), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def resolved(tmp_path: Path, variables: dict[str, str]) -> dict[str, Any]:
    env_file = tmp_path / "compose.env"
    env_file.write_text("".join(f"{name}={value}\n" for name, value in variables.items()))
    done = compose(env_file, "config", "--format", "json")
    assert done.returncode == 0, done.stderr
    config: dict[str, Any] = json.loads(done.stdout)
    return config


def test_the_compose_file_runs_the_gateway_on_neo4j(tmp_path: Path) -> None:
    config = resolved(tmp_path, SECRETS)

    gateway, neo4j = config["services"]["gateway"], config["services"]["neo4j"]
    assert gateway["depends_on"]["neo4j"]["condition"] == "service_healthy"
    assert gateway["environment"]["SCIENCE_AGENT_MEMORY_GRAPH_BACKEND"] == "neo4j"
    assert gateway["environment"]["SCIENCE_AGENT_MEMORY_GRAPH_NEO4J_URI"] == "bolt://neo4j:7687"
    assert (
        gateway["environment"]["SCIENCE_AGENT_MEMORY_GRAPH_NEO4J_PASSWORD"] == "neo4j-secret-4b1e"
    )
    assert neo4j["environment"]["NEO4J_AUTH"] == "neo4j/neo4j-secret-4b1e"
    assert gateway["build"]["dockerfile"] == "Dockerfile"
    assert {"gateway", "neo4j"} == {
        name for name, service in config["services"].items() if service.get("healthcheck")
    }


def test_every_published_port_listens_on_loopback_only(tmp_path: Path) -> None:
    config = resolved(tmp_path, SECRETS)

    published = [
        port for service in config["services"].values() for port in service.get("ports", [])
    ]
    assert sorted(port["published"] for port in published) == ["17674", "7474", "7687"]
    assert {port["host_ip"] for port in published} == {"127.0.0.1"}


def test_the_example_env_file_is_complete(tmp_path: Path) -> None:
    done = compose(ROOT / ".env.example", "config", "--quiet")

    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("secret", ["NEO4J_PASSWORD", "SCIENCE_AGENT_MEMORY_GRAPH_INTERNAL_TOKEN"])
def test_a_missing_secret_refuses_to_resolve_and_names_itself(tmp_path: Path, secret: str) -> None:
    env_file = tmp_path / "compose.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in SECRETS.items() if k != secret))

    done = compose(env_file, "config", "--quiet")

    assert done.returncode != 0
    assert secret in done.stderr
