"""The commands that only read the embedded graph (``migrate --to neo4j``, ``export-graph``)
read it with the engine whose files hold it, whatever ``FILE_ENGINE`` says: a log directory is
not migrated to SQLite by the default engine on the way, and a SQLite one is not refused by
``FILE_ENGINE=log`` with an uncaught ``EngineMismatchError``.

No Neo4j is started: the target is a closed loopback port, so ``migrate`` reads the graph, then
fails to connect, and says so in one line (exit 1).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
from typing import TYPE_CHECKING

from gateway.cli import main as cli
from gateway.settings import Settings
from gateway.stores.sqlite.migrate import DATABASE_NAME
from gateway.stores.sqlite.store import SqliteStore
from tests.stores.sqlite.test_migrate_log import write_log_store

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port  # closed again when the block ends: nothing listens there


def use(monkeypatch: pytest.MonkeyPatch, data_dir: Path, **changes: str) -> None:
    """The CLI reads these settings (the default engine unless ``changes`` name one)."""
    settings = Settings(
        data_dir=data_dir,
        neo4j_uri=f"bolt://127.0.0.1:{closed_port()}",
        neo4j_password="secret",
        neo4j_timeout=2.0,
        **changes,  # type: ignore[arg-type]
    )
    monkeypatch.setattr(cli, "load_settings", lambda: settings)


def log_directory(data_dir: Path) -> list[str]:
    """A graph written by the log engine; its file names."""
    asyncio.run(write_log_store(data_dir / "graph"))
    return sorted(path.name for path in (data_dir / "graph").iterdir())


def sqlite_directory(data_dir: Path, copy_of: Path | None = None) -> None:
    """A graph written by the log engine (or a copy of the one in ``copy_of``) and migrated to
    SQLite."""
    if copy_of is None:
        asyncio.run(write_log_store(data_dir / "graph"))
    else:
        shutil.copytree(copy_of, data_dir, ignore=shutil.ignore_patterns("LOCK"))

    async def migrate() -> None:
        await (await SqliteStore.open(data_dir / "graph")).aclose()

    asyncio.run(migrate())


def test_migrate_reads_a_log_directory_as_it_is_with_the_sqlite_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = log_directory(tmp_path)
    use(monkeypatch, tmp_path)

    code = cli.main(["migrate", "--to", "neo4j"])

    err = capsys.readouterr().err
    assert code == 1
    assert "(log engine)" in err
    assert "neo4j memory graph is unreachable" in err.splitlines()[-1]
    assert "Traceback" not in err
    assert sorted(path.name for path in (tmp_path / "graph").iterdir()) == files
    assert not (tmp_path / "graph" / DATABASE_NAME).exists()


def test_migrate_reads_a_sqlite_directory_when_the_log_engine_is_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_directory(tmp_path)
    use(monkeypatch, tmp_path, file_engine="log")

    code = cli.main(["migrate", "--to", "neo4j"])

    err = capsys.readouterr().err
    assert code == 1
    assert "(sqlite engine)" in err
    assert "neo4j memory graph is unreachable" in err.splitlines()[-1]


def test_export_graph_reads_either_engine_without_migrating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_dir, sqlite_dir = tmp_path / "log", tmp_path / "sqlite"
    files = log_directory(log_dir)
    sqlite_directory(sqlite_dir, copy_of=log_dir)
    lines = []
    for data_dir, engine in ((log_dir, "sqlite"), (sqlite_dir, "log")):
        use(monkeypatch, data_dir, file_engine=engine)  # the other engine than the one stored
        output = tmp_path / f"{data_dir.name}.jsonl"

        assert cli.main(["export-graph", "--output", str(output)]) == 0
        lines.append(sorted(output.read_text().splitlines()))

    assert lines[0] == lines[1]
    assert lines[0]
    assert sorted(path.name for path in (log_dir / "graph").iterdir()) == files
