"""FileMemoryStore specifics: the findings.jsonl format, durability, repair, backup, lock."""

from __future__ import annotations

import errno
import json
import logging
import os
from typing import TYPE_CHECKING

import pytest

from gateway.stores.file.memory import (
    BACKUP_NAME,
    FILE_NAME,
    CorruptMemoryFileError,
    FileMemoryStore,
    MemoryStoreLockedError,
)
from resolvers.errors import StoreWriteError
from resolvers.memory import record_memory
from tests.memory.factories import finding, pitfall, prepared

if TYPE_CHECKING:
    from pathlib import Path

GOOD = b'{"type": "pitfall", "date": "2025-06-01", "tags": [], "project": "p", "context": "c", "issue": "i", "fix": "f"}\n'  # noqa: E501


def write(directory: Path, content: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / FILE_NAME
    path.write_bytes(content)
    return path


def file_names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


async def reopened(directory: Path) -> list[str]:
    store = await FileMemoryStore.open(directory)
    try:
        return [record.project for record in await store.all_records()]
    finally:
        await store.aclose()


async def test_records_survive_a_reopen_in_order(tmp_path: Path) -> None:
    store = await FileMemoryStore.open(tmp_path)
    await record_memory(store, finding(project="a"))
    await record_memory(store, pitfall(project="b"))
    await store.aclose()

    assert await reopened(tmp_path) == ["a", "b"]


async def test_a_line_is_the_established_format_with_unicode_kept(tmp_path: Path) -> None:
    store = await FileMemoryStore.open(tmp_path)
    stored = await record_memory(store, finding(finding="肝癌", gene="TP53", session_id="s1"))
    await store.aclose()

    line = (tmp_path / FILE_NAME).read_text(encoding="utf-8")

    assert "肝癌" in line
    assert json.loads(line) == {
        "type": "finding",
        "date": "2025-06-01",
        "tags": [],
        "project": "onco",
        "finding": "肝癌",
        "significance": "relapse",
        "gene": "TP53",
        "sources": [],
        "session_id": "s1",
        "id": stored.id,
    }


async def test_lines_without_id_get_their_deterministic_id(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    store = await FileMemoryStore.open(tmp_path)

    stored = await record_memory(store, pitfall(project="p", context="c", issue="i", fix="f"))

    assert len(await store.all_records()) == 1
    assert (await store.all_records())[0].id == stored.id
    await store.aclose()


async def test_a_torn_last_line_is_truncated_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, GOOD + b'{"type": "pitfall", "da')

    with caplog.at_level(logging.WARNING):
        store = await FileMemoryStore.open(tmp_path)
    await store.aclose()

    assert path.read_bytes() == GOOD
    assert "torn last line" in caplog.text


async def test_appending_after_a_torn_tail_keeps_whole_lines(tmp_path: Path) -> None:
    write(tmp_path, GOOD + b"{not json")
    store = await FileMemoryStore.open(tmp_path)
    await record_memory(store, finding(project="new"))
    await store.aclose()

    assert await reopened(tmp_path) == ["p", "new"]


async def test_a_whole_last_line_without_newline_is_kept_and_completed(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.rstrip(b"\n"))

    store = await FileMemoryStore.open(tmp_path)
    await store.aclose()

    assert path.read_bytes() == GOOD


@pytest.mark.parametrize(
    "bad",
    [b"{not json\n", b'{"type": "pitfall", "date": "2025-06-01", "project": "p"}\n', b"\xff\n"],
)
async def test_a_bad_line_before_the_last_refuses_to_open(tmp_path: Path, bad: bytes) -> None:
    path = write(tmp_path, GOOD + bad + GOOD)

    with pytest.raises(CorruptMemoryFileError, match="line 2"):
        await FileMemoryStore.open(tmp_path)

    assert path.read_bytes() == GOOD + bad + GOOD


async def test_a_parsable_but_invalid_last_line_is_damage_not_a_torn_write(
    tmp_path: Path,
) -> None:
    write(tmp_path, GOOD + b'{"type": "pitfall", "date": "2025-06-01", "project": "p"}\n')

    with pytest.raises(CorruptMemoryFileError, match="line 2"):
        await FileMemoryStore.open(tmp_path)


async def test_a_repeated_line_is_loaded_once(tmp_path: Path) -> None:
    write(tmp_path, GOOD + b"\n" + GOOD)

    assert await reopened(tmp_path) == ["p"]


async def test_replace_all_backs_up_the_original_then_replaces_it(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    store = await FileMemoryStore.open(tmp_path)
    [replacement] = prepared(finding(project="new"))

    replaced = await store.replace_all(lambda _: [replacement])
    await store.aclose()

    assert replaced.backup == str(tmp_path / BACKUP_NAME)
    assert (tmp_path / BACKUP_NAME).read_bytes() == GOOD
    assert json.loads(path.read_bytes())["project"] == "new"
    assert file_names(tmp_path) == sorted([BACKUP_NAME, FILE_NAME, "LOCK"])


async def test_appends_after_replace_all_go_to_the_new_file(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    store = await FileMemoryStore.open(tmp_path)
    await store.replace_all(lambda _: prepared(finding(project="kept")))

    await record_memory(store, finding(project="later"))
    await store.aclose()

    assert await reopened(tmp_path) == ["kept", "later"]


async def test_replace_all_without_backup_returns_none(tmp_path: Path) -> None:
    store = await FileMemoryStore.open(tmp_path)

    replaced = await store.replace_all(lambda _: [], backup=False)
    await store.aclose()

    assert replaced.backup is None
    assert not (tmp_path / BACKUP_NAME).exists()


async def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    store = await FileMemoryStore.open(tmp_path)

    with pytest.raises(MemoryStoreLockedError):
        await FileMemoryStore.open(tmp_path)

    await store.aclose()


async def test_a_read_only_store_reads_beside_a_writer_and_refuses_writes(tmp_path: Path) -> None:
    writer = await FileMemoryStore.open(tmp_path)
    await record_memory(writer, finding())
    reader = await FileMemoryStore.open(tmp_path, read_only=True)

    with pytest.raises(StoreWriteError):
        await record_memory(reader, pitfall())

    assert len(await reader.all_records()) == 1
    await reader.aclose()
    await writer.aclose()


async def test_a_read_only_store_ignores_a_torn_tail_without_repairing(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + b'{"ty')

    store = await FileMemoryStore.open(tmp_path, read_only=True)

    assert len(await store.all_records()) == 1
    assert path.read_bytes() == GOOD + b'{"ty'
    await store.aclose()


async def test_size_is_the_file_size(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    store = await FileMemoryStore.open(tmp_path)

    await record_memory(store, finding())

    assert await store.size_bytes() == path.stat().st_size
    await store.aclose()


async def test_an_append_is_fsynced_before_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await FileMemoryStore.open(tmp_path)
    synced: list[int] = []
    real_fsync = os.fsync

    def counted_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counted_fsync)

    await record_memory(store, finding())

    assert synced
    await store.aclose()


async def test_a_failed_append_leaves_the_file_and_the_store_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, GOOD)
    store = await FileMemoryStore.open(tmp_path)

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "disk gone")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(StoreWriteError):
        await record_memory(store, finding())
    monkeypatch.undo()

    assert path.read_bytes() == GOOD
    assert len(await store.all_records()) == 1
    await store.aclose()
