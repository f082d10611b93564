"""The ``science-memory`` command line: export-schema, serve's bind check, ``python -m gateway``."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import uvicorn

from gateway.cli import main as cli
from gateway.schema import schema_sdl
from gateway.settings import Settings

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO_ROOT = Path(__file__).resolve().parents[1]


def inject(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    """Give the CLI ``settings`` instead of reading this process's environment."""
    monkeypatch.setattr(cli, "load_settings", lambda: settings)


@pytest.fixture(autouse=True)
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    injected = Settings(data_dir=tmp_path / "data")
    inject(monkeypatch, injected)
    return injected


@pytest.fixture
def uvicorn_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append(kwargs))
    # ``serve`` tunes the interpreter for a serving process: this one's is given back.
    threshold, interval = gc.get_threshold(), sys.getswitchinterval()
    yield calls
    gc.set_threshold(*threshold)
    sys.setswitchinterval(interval)


def test_export_schema_writes_the_schema(tmp_path: Path) -> None:
    output = tmp_path / "schema.graphql"

    code = cli.main(["export-schema", "--output", str(output)])

    assert code == 0
    assert output.read_text(encoding="utf-8") == schema_sdl()


def test_export_schema_prints_the_schema_without_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = cli.main(["export-schema"])

    assert code == 0
    assert capsys.readouterr().out == schema_sdl()


def test_serve_refuses_a_public_host_without_a_token(
    uvicorn_calls: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["serve", "--host", "0.0.0.0"])

    assert code == 2
    assert uvicorn_calls == []
    assert "SCIENCE_AGENT_MEMORY_GRAPH_INTERNAL_TOKEN" in capsys.readouterr().err


def test_serve_binds_a_public_host_with_a_token(
    uvicorn_calls: list[dict[str, Any]], settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject(monkeypatch, Settings(data_dir=settings.data_dir, internal_token="internal"))

    code = cli.main(["serve", "--host", "0.0.0.0", "--port", "8081"])

    assert code == 0
    assert [(call["host"], call["port"]) for call in uvicorn_calls] == [("0.0.0.0", 8081)]


def test_serve_without_a_token_says_it_is_loopback_only(
    uvicorn_calls: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    code = cli.main(["serve"])

    assert code == 0
    assert [(call["host"], call["port"]) for call in uvicorn_calls] == [("127.0.0.1", 17674)]
    assert "serving on loopback only" in caplog.text


def test_serve_bounds_a_websocket_message_like_a_request_body(
    uvicorn_calls: list[dict[str, Any]], settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject(monkeypatch, Settings(data_dir=settings.data_dir, max_body_bytes=2048))

    cli.main(["serve"])

    assert [call["ws_max_size"] for call in uvicorn_calls] == [2048]


def test_serve_hands_the_gil_to_a_waiting_thread_within_a_millisecond(
    uvicorn_calls: list[dict[str, Any]],
) -> None:
    sys.setswitchinterval(0.005)  # Python's own

    cli.main(["serve"])

    assert len(uvicorn_calls) == 1
    assert sys.getswitchinterval() == pytest.approx(0.001)


def test_a_bad_setting_exits_2_with_its_name(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def bad_port() -> Settings:
        return Settings.from_env({"SCIENCE_AGENT_MEMORY_GRAPH_PORT": "http"})

    monkeypatch.setattr(cli, "load_settings", bad_port)

    code = cli.main(["export-schema"])

    assert code == 2
    assert "SCIENCE_AGENT_MEMORY_GRAPH_PORT" in capsys.readouterr().err


def test_python_m_gateway_help_lists_the_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gateway", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert "science-memory" in result.stdout
    assert "serve" in result.stdout
    assert "export-schema" in result.stdout
