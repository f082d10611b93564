"""Neo4jStore connection handling: schema bootstrap, unreachable servers, credentials."""

from __future__ import annotations

import asyncio
import gc
import socket
import warnings
from typing import TYPE_CHECKING

import pytest

from gateway.stores.neo4j.schema import SCHEMA
from resolvers.errors import StoreUnavailableError
from tests.stores.neo4j.conftest import open_store
from tests.timing import within

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from gateway.stores.neo4j import Neo4jStore


SLACK = 0.5  # scheduling on a loaded machine
CANCEL_POINTS = 12  # loop turns a refused connect to 127.0.0.1 takes, with room to spare


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """A port that accepts connections and never answers (a hung server)."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer in held:
            writer.close()
        await server.wait_closed()


async def test_every_constraint_and_index_exists_after_open(neo4j_store: Neo4jStore) -> None:
    names = {row["name"] for row in await neo4j_store._write("SHOW INDEXES YIELD name", 10)}

    assert {name for name, _ in SCHEMA} <= names


async def test_ensuring_the_schema_again_creates_nothing(neo4j_store: Neo4jStore) -> None:
    assert await neo4j_store.ensure_schema() == []


async def test_a_missing_index_is_recreated_on_the_next_connect(
    neo4j_store: Neo4jStore, connection: dict[str, str]
) -> None:
    await neo4j_store._write("DROP INDEX sm_Artifact_project", 10)

    reopened = await open_store(connection)
    try:
        again = await reopened.ensure_schema()
    finally:
        await reopened.aclose()

    assert again == []
    names = {row["name"] for row in await neo4j_store._write("SHOW INDEXES YIELD name", 10)}
    assert "sm_Artifact_project" in names


async def test_a_closed_port_fails_fast_with_store_unavailable() -> None:
    address = {"uri": f"bolt://127.0.0.1:{closed_port()}", "user": "neo4j", "password": "pw-9"}

    async def connect() -> StoreUnavailableError:
        with pytest.raises(StoreUnavailableError) as raised:
            await open_store(address, connection_timeout=1.0)
        return raised.value

    error = await within(1.0, connect)  # well before the connection timeout

    assert error.backend == "neo4j"


async def test_a_server_that_never_answers_fails_within_the_timeout(silent_server: int) -> None:
    address = {"uri": f"bolt://127.0.0.1:{silent_server}", "user": "neo4j", "password": "pw"}

    async def connect() -> None:
        with pytest.raises(StoreUnavailableError):
            await open_store(address, connection_timeout=1.0)

    await within(1.0 + SLACK, connect)


async def test_an_open_cancelled_mid_connect_leaves_no_socket_behind() -> None:
    address = {"uri": f"bolt://127.0.0.1:{closed_port()}", "user": "neo4j", "password": "pw"}

    async def cancel_after(turns: int) -> None:
        opening = asyncio.create_task(open_store(address, connection_timeout=1.0))
        for _ in range(turns):
            await asyncio.sleep(0)
        opening.cancel()
        await asyncio.gather(opening, return_exceptions=True)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for turns in range(CANCEL_POINTS):  # each early step of the connect, the socket's too
            await cancel_after(turns)
        gc.collect()  # an unclosed socket warns when it is collected

    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


async def test_rejected_credentials_are_unavailable_without_the_password(
    connection: dict[str, str],
) -> None:
    wrong = "not-the-password-" + connection["password"][::-1]

    with pytest.raises(StoreUnavailableError) as raised:
        await open_store({**connection, "password": wrong})

    assert wrong not in str(raised.value)
    assert "Auth" in raised.value.message


async def test_ping_answers_and_a_closed_store_is_unavailable(connection: dict[str, str]) -> None:
    store = await open_store(connection)
    await store.ping()

    await store.aclose()
    await store.aclose()

    with pytest.raises(StoreUnavailableError):
        await store.ping()
    with pytest.raises(StoreUnavailableError):
        await store.get_nodes(["Task:x"])


async def test_an_invalid_uri_is_unavailable_not_a_crash() -> None:
    with pytest.raises(StoreUnavailableError):
        await open_store({"uri": "ftp://127.0.0.1:1", "user": "neo4j", "password": "pw"})
