"""``science-memory export``: writes a session's export; refuses clearly when it cannot read."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING

from gateway.cli import main as cli
from gateway.exports.formats import ExportFormat, export_session, load_session
from gateway.stores.file.store import FileStore
from gateway.stores.sqlite.store import SqliteStore
from resolvers.records import Backend
from tests.conftest import neo4j_settings
from tests.sample_session import SESSION, record_sample_session

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from gateway.settings import Settings
    from resolvers.store import GraphStore
    from tests.conftest import GraphQLClient


def use(monkeypatch: pytest.MonkeyPatch, settings: Settings, target: GraphStore | Backend) -> None:
    """Give the CLI ``settings`` reading ``target`` (a store: its backend and engine) instead
    of this process's environment."""
    backend = target if isinstance(target, Backend) else target.backend
    if isinstance(target, FileStore | SqliteStore):
        engine = "sqlite" if isinstance(target, SqliteStore) else "log"
        settings = dataclasses.replace(settings, file_engine=engine)
    if backend is Backend.NEO4J:
        connection = neo4j_settings()
        assert connection is not None
        settings = dataclasses.replace(
            settings,
            neo4j_uri=connection["uri"],
            neo4j_user=connection["user"],
            neo4j_password=connection["password"],
        )
    settings = dataclasses.replace(settings, backend=backend)
    monkeypatch.setattr(cli, "load_settings", lambda: settings)


async def run(*argv: str) -> int:
    # The command runs its own event loop, so it runs in a thread beside the test's.
    return await asyncio.to_thread(cli.main, list(argv))


async def test_the_command_writes_the_export_to_a_file(
    gql: GraphQLClient,
    store: GraphStore,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await record_sample_session(gql)
    expected = export_session(await load_session(store, SESSION), ExportFormat.MERMAID).content
    await store.aclose()  # the command opens the store itself (the file store is single-writer)
    use(monkeypatch, settings, store)
    output = tmp_path / "session.mmd"

    code = await run("export", "--session", SESSION, "--format", "mermaid", "--output", str(output))

    assert code == 0
    assert output.read_text(encoding="utf-8") == expected


async def test_without_output_the_export_goes_to_stdout(
    gql: GraphQLClient,
    store: GraphStore,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await record_sample_session(gql)
    await store.aclose()
    use(monkeypatch, settings, store)

    code = await run("export", "--session", SESSION, "--format", "graphml")

    assert code == 0
    assert capsys.readouterr().out.startswith("<?xml")


async def test_a_running_gateway_s_store_is_refused_with_the_graphql_alternative(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    held = await FileStore.open(settings.data_dir / "graph")  # as a running gateway holds it
    use(monkeypatch, settings, Backend.FILE)

    code = await run("export", "--session", SESSION, "--format", "prov-json")
    await held.aclose()

    assert code == 1
    err = capsys.readouterr().err
    assert "locked" in err
    assert f'exportSession(sessionId: "{SESSION}", format: PROV_JSON)' in err


async def test_a_missing_store_exits_1(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, settings, Backend.FILE)

    code = await run("export", "--session", SESSION, "--format", "mermaid")

    assert code == 1
    assert "no file store" in capsys.readouterr().err
    assert not (settings.data_dir / "graph").exists()  # nothing was created


async def test_an_unknown_session_exits_1(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    await (await FileStore.open(settings.data_dir / "graph")).aclose()
    use(monkeypatch, settings, Backend.FILE)

    code = await run("export", "--session", "nobody", "--format", "mermaid")

    assert code == 1
    assert "session not found: nobody" in capsys.readouterr().err


async def test_an_output_that_cannot_be_written_exits_1_in_one_line(
    gql: GraphQLClient,
    store: GraphStore,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await record_sample_session(gql)
    await store.aclose()
    use(monkeypatch, settings, store)

    codes = [
        await run("export", "--session", SESSION, "--format", "mermaid", "--output", str(output))
        for output in (tmp_path, tmp_path / "absent" / "session.mmd")
    ]

    err = capsys.readouterr().err
    assert codes == [1, 1]
    assert "Traceback" not in err
    assert [line.split(":")[0] for line in err.splitlines()] == ["science-memory"] * 2
