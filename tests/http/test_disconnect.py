"""A request whose client goes away is cancelled (SPEC §8 isolation, ``gateway.http.disconnect``).

Over a real uvicorn server, on every backend: heavy queries whose node listing is made slow (a
long statement of the backend itself where it has one) take every reader slot; their clients
close their sockets; each slow read is cancelled within a second, the store lets go of what it
did for it (SQLite interrupts the statement, Neo4j ends the transaction) and the next heavy query
gets a slot at once. A mutation whose client left runs to its end; a subscription ends with its
WebSocket. And the middleware alone, with a scripted client: the body is handed on whole before
anything is listened for, and no message is swallowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import socket
import sqlite3
import time
import uuid
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

import httpx2
import neo4j
import pytest
from websockets.sync.client import connect

from gateway.http.app import create_app
from gateway.http.disconnect import CancelOnDisconnect
from gateway.runtime.state import Runtime
from gateway.settings import Settings
from gateway.stores.neo4j import Neo4jStore
from gateway.stores.sqlite.store import SqliteStore
from resolvers.records import Backend
from resolvers.store import one_state
from tests.conftest import BACKENDS, neo4j_settings
from tests.http.live import serving
from tests.timing import Pauses, once_within

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
    from pathlib import Path

    from starlette.types import Message, Receive, Scope, Send

    from resolvers.store import GraphReader, GraphStore

HEAVY = 2  # reader slots
BUDGET = 60.0  # a query's time budget: longer than the test, so only a cancellation frees a slot
PROMPT = 1.0  # how long a cancellation may take, the machine's pauses not counted
WAIT = 10.0  # a bound on what happens at once, for a busy machine
# A session no other test writes: the Neo4j database is shared by the whole run.
HEAVY_QUERY = (
    '{ subgraph(sessionId: "left-by-its-client", first: 2000) '
    "{ ... on Subgraph { nodes { id } } } }"
)
NO_NODES: dict[str, Any] = {"data": {"subgraph": {"nodes": []}}}
MARK = "left-by-its-client"
# Seconds of work for the backend (tens on a busy machine), unless it is cancelled.
SLOW_SQL = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 30000000) "
    "SELECT count(*) FROM c"
)
SLOW_CYPHER = f"UNWIND range(1, 200000000) AS x WITH x WHERE x < 0 RETURN count(x) /* {MARK} */"
RUNNING_MARKED = (
    "SHOW TRANSACTIONS YIELD currentQuery WHERE currentQuery CONTAINS $mark RETURN count(*) AS n"
)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def settings_for(backend: str, tmp_path: Path) -> Settings:
    limits: dict[str, Any] = {"heavy_readers": HEAVY, "query_timeout_seconds": BUDGET}
    if backend == "neo4j":
        server = neo4j_settings()
        assert server is not None
        return Settings(
            data_dir=tmp_path,
            backend=Backend.NEO4J,
            neo4j_uri=server["uri"],
            neo4j_user=server["user"],
            neo4j_password=server["password"],
            **limits,
        )
    return Settings(
        data_dir=tmp_path, file_engine="sqlite" if backend == "sqlite" else "log", **limits
    )


class Slowed:
    """The runtime's active store, whose first ``slow`` node listings (or session pages) first
    run a slow read
    (``_SlowView``); ``holding`` keeps a write's transaction open ``hold`` seconds. What happens
    is put on ``events`` (from the server's threads): ``listing`` when a slow read starts,
    ``counting`` when SQLite starts its statement, ``cancelled`` when a read or a write saw
    ``CancelledError``, ``interrupted`` when SQLite aborted its statement; ``writing`` once a
    write's work is done, ``written`` once it committed."""

    def __init__(
        self, store: GraphStore, events: queue.Queue[str], *, slow: int, hold: float
    ) -> None:
        self._store = store
        self.events = events
        self._slow = slow
        self._hold = hold

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @asynccontextmanager
    async def consistent_view(self) -> AsyncIterator[GraphReader]:
        async with one_state(self._store) as view:
            yield _SlowView(view, self)

    async def list_nodes(self, **kwargs: Any) -> Any:
        return await _SlowView(self._store, self).list_nodes(**kwargs)

    def holding(self, write: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """``write`` (a store's), whose transaction stays open ``hold`` seconds after its work."""

        async def held(session_id: str, work: Callable[[Any], Awaitable[Any]]) -> Any:
            async def held_open(tx: Any) -> Any:
                result = await work(tx)
                self.events.put("writing")
                await asyncio.sleep(self._hold)
                return result

            try:
                result = await write(session_id, held_open)
            except asyncio.CancelledError:
                self.events.put("cancelled")
                raise
            self.events.put("written")
            return result

        return held

    def take_slow(self) -> bool:
        self._slow -= 1
        return self._slow >= 0


class _SlowView:
    def __init__(self, view: GraphReader, slowed: Slowed) -> None:
        self._view = view
        self._slowed = slowed

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._view, name)
        if name != "session_page":
            return found

        async def session_page(*args: Any, **kwargs: Any) -> Any:
            """A session's page and its edges in one read (``SessionPageReader``, SQLite)."""
            await self._maybe_slow()
            return await found(*args, **kwargs)

        return session_page

    async def list_nodes(self, **kwargs: Any) -> Any:
        await self._maybe_slow()
        return await self._view.list_nodes(**kwargs)

    async def _maybe_slow(self) -> None:
        if self._slowed.take_slow():
            self._slowed.events.put("listing")
            try:
                await self._slow_read()
            except asyncio.CancelledError:
                self._slowed.events.put("cancelled")
                raise

    async def _slow_read(self) -> None:
        inner = getattr(self._slowed._store, "inner", None)
        if isinstance(inner, SqliteStore):
            # On the reader connection lent to this view (its thread), as its own reads run.
            await self._view._db.run(self._counting)  # type: ignore[attr-defined]
        elif isinstance(inner, Neo4jStore):
            await inner._fetch(SLOW_CYPHER)
        else:  # the log engine reads in memory: a read that takes long is one that waits
            await asyncio.sleep(BUDGET)

    def _counting(self, db: sqlite3.Connection) -> None:
        self._slowed.events.put("counting")
        try:
            db.execute(SLOW_SQL).fetchall()
        except sqlite3.OperationalError:  # "interrupted" by the progress handler
            self._slowed.events.put("interrupted")
            raise


@contextlib.contextmanager
def slowed_server(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, *, hold: float = 0.0
) -> Iterator[tuple[str, Slowed]]:
    app = create_app(settings)
    with serving(app) as url:
        active = app.state.runtime.graph_store
        slowed = Slowed(active, queue.Queue(), slow=HEAVY, hold=hold)
        monkeypatch.setattr(Runtime, "graph_store", property(lambda _: slowed))
        # Under the change publication, where every write of every backend passes.
        monkeypatch.setattr(active.inner, "write", slowed.holding(active.inner.write))
        yield url, slowed


def sent(url: str, query: str, method: str = "POST") -> socket.socket:
    """A connection that sent ``query`` and reads nothing back."""
    address = urlsplit(url)
    connection = socket.create_connection((address.hostname, address.port))
    if method == "GET":
        target = "/graphql?" + urlencode({"query": query})
        connection.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        return connection
    body = json.dumps({"query": query}).encode()
    head = "POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    connection.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    return connection


def arrived(events: queue.Queue[str], count: int, seconds: float) -> list[str]:
    """The next ``count`` events, or fewer: those that arrived within ``seconds``."""
    found: list[str] = []
    deadline = time.monotonic() + seconds
    with contextlib.suppress(queue.Empty):
        while len(found) < count:
            found.append(events.get(timeout=max(0.0, deadline - time.monotonic())))
    return found


def leave(
    connections: list[socket.socket],
    events: queue.Queue[str],
    count: int,
    settled: Callable[[], bool] = lambda: True,
) -> tuple[list[str], float]:
    """Close ``connections``; the ``count`` events that followed, and the seconds they took and
    ``settled`` took to become true (the machine's pauses not counted)."""
    with Pauses() as pauses:
        left = time.monotonic()
        for connection in connections:
            connection.close()
        found = arrived(events, count, WAIT)
        until(settled)
        return found, pauses.running_since(left)


@contextlib.contextmanager
def statements_running(settings: Settings) -> Iterator[Callable[[], int]]:
    """How many of the slow statements the Neo4j server is running (none elsewhere)."""
    if settings.backend is not Backend.NEO4J:
        yield lambda: 0
        return
    assert settings.neo4j_password is not None
    auth = (settings.neo4j_user, settings.neo4j_password)
    with neo4j.GraphDatabase.driver(settings.neo4j_uri, auth=auth) as driver:

        def running() -> int:
            records, _, _ = driver.execute_query(RUNNING_MARKED, mark=MARK)
            return int(records[0]["n"])

        yield running


def test_heavy_queries_whose_clients_left_are_cancelled_and_free_their_slots(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_for(backend, tmp_path)
    # SQLite runs its statement on the view's reader thread, Neo4j on the server.
    begun = ["counting", "listing"] if backend == "sqlite" else ["listing"]
    expected = ["cancelled", "interrupted"] if backend == "sqlite" else ["cancelled"]
    on_server = HEAVY if backend == "neo4j" else 0

    with (
        statements_running(settings) as running,
        slowed_server(settings, monkeypatch) as (url, slowed),
    ):
        abandoned = [sent(url, HEAVY_QUERY) for _ in range(HEAVY)]
        started = arrived(slowed.events, HEAVY * len(begun), WAIT)
        ran = until(lambda: running() == on_server)
        ended, took = leave(abandoned, slowed.events, HEAVY * len(expected), lambda: running() == 0)
        answer = httpx2.post(f"{url}/graphql", json={"query": HEAVY_QUERY}, timeout=WAIT)

    assert sorted(started) == sorted(begun * HEAVY)  # every slot was taken
    assert ran  # on Neo4j, the server ran each slow statement
    assert sorted(ended) == sorted(expected * HEAVY)
    assert took < PROMPT  # and on Neo4j, the server ended them
    assert answer.json() == NO_NODES


def test_a_heavy_query_sent_with_get_is_cancelled_when_its_client_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with slowed_server(settings_for("file", tmp_path), monkeypatch) as (url, slowed):
        client = sent(url, HEAVY_QUERY, method="GET")
        started = arrived(slowed.events, 1, WAIT)
        ended, took = leave([client], slowed.events, 1)

    assert (started, ended) == (["listing"], ["cancelled"])
    assert took < PROMPT


def test_a_mutation_whose_client_left_runs_to_its_end(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = f"s-{uuid.uuid4().hex[:8]}"
    mutation = (
        "mutation { observeSessionFirstMessage(input: {"
        f'sessionId: "{session}", goalId: "goal:session:{session}", coreObjective: "TP53"'
        "}) { __typename } }"
    )
    lookup = f'{{ node(nodeId: "ResearchGoal:goal:session:{session}") {{ __typename }} }}'
    # Long enough for the disconnect to be heard while the write is still open.
    hold = 1.0

    settings = settings_for(backend, tmp_path)
    with slowed_server(settings, monkeypatch, hold=hold) as (url, slowed):
        client = sent(url, mutation)
        started = arrived(slowed.events, 1, WAIT)
        ended, _ = leave([client], slowed.events, 1)
        found = httpx2.post(f"{url}/graphql", json={"query": lookup}, timeout=WAIT)

    assert (started, ended) == (["writing"], ["written"])
    assert found.json() == {"data": {"node": {"__typename": "ResearchGoal"}}}


def test_a_subscription_ends_when_its_websocket_is_dropped(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path))
    subscribe = {
        "id": "1",
        "type": "subscribe",
        "payload": {"query": 'subscription { graphEvents(sessionId: "s1") { kind } }'},
    }

    with serving(app, ws="websockets-sansio") as url:
        events = app.state.runtime.events
        socket_url = url.replace("http", "ws", 1) + "/graphql"
        with connect(socket_url, subprotocols=["graphql-transport-ws"]) as client:  # type: ignore[list-item]
            client.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(client.recv(WAIT))["type"] == "connection_ack"
            client.send(json.dumps(subscribe))
            subscribed = until(lambda: events.subscriber_count == 1)
            client.socket.shutdown(socket.SHUT_RDWR)  # gone, without a closing frame
            left = until(lambda: events.subscriber_count == 0)

    assert subscribed
    assert left


def until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


# --- the middleware, with a scripted client -------------------------------------------------


class Client:
    """An HTTP client as uvicorn shows it to the app: the body in ``chunks``, then nothing
    until it leaves (or the answer is sent), then ``http.disconnect``."""

    def __init__(self, chunks: list[bytes], *, leaves_when_answered: bool = False) -> None:
        self._chunks = list(chunks)
        self.reads = 0
        self.gone = asyncio.Event()
        self.sent: list[Message] = []
        self._leaves_when_answered = leaves_when_answered

    async def receive(self) -> Message:
        self.reads += 1
        if self._chunks:
            body = self._chunks.pop(0)
            return {"type": "http.request", "body": body, "more_body": bool(self._chunks)}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        self.sent.append(message)
        if self._leaves_when_answered and not message.get("more_body", False):
            self.gone.set()


def scope_of(body: bytes | None) -> Scope:
    headers = [] if body is None else [(b"content-length", str(len(body)).encode())]
    return {"type": "http", "method": "POST", "path": "/graphql", "headers": headers}


async def answer(send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def read_body(receive: Receive) -> bytes:
    body, more = b"", True
    while more:
        message = await receive()
        body += message["body"]
        more = message["more_body"]
    return body


async def test_the_body_is_handed_on_whole_before_anything_is_listened_for() -> None:
    client = Client([b"ab", b"cd", b"ef"])
    reads_while_reading: list[int] = []
    bodies: list[bytes] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body, more = b"", True
        while more:
            message = await receive()
            body += message["body"]
            more = message["more_body"]
            await asyncio.sleep(0.01)  # a listener reading ahead would read now
            reads_while_reading.append(client.reads)
        bodies.append(body)
        await answer(send)

    await once_within(
        WAIT,
        CancelOnDisconnect(app, lambda _: True)(scope_of(b"abcdef"), client.receive, client.send),
    )

    assert reads_while_reading == [1, 2, 4]  # after the last chunk, the listener waits for more
    assert bodies == [b"abcdef"]


async def test_an_app_still_working_when_its_client_leaves_is_cancelled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = Client([b"{}"])
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        client.gone.set()
        try:
            await asyncio.sleep(BUDGET)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    with caplog.at_level(logging.INFO, logger="gateway.http.disconnect"):
        await once_within(
            WAIT,
            CancelOnDisconnect(app, lambda _: True)(scope_of(b"{}"), client.receive, client.send),
        )

    assert seen == ["cancelled"]
    assert client.sent == []
    assert "the client went away: POST /graphql cancelled" in caplog.text


async def test_a_request_without_a_body_is_listened_to_at_once() -> None:
    client = Client([b""])
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        client.gone.set()  # the app never reads: a GET carries its query in the URL
        try:
            await asyncio.sleep(BUDGET)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    await once_within(
        WAIT, CancelOnDisconnect(app, lambda _: True)(scope_of(None), client.receive, client.send)
    )

    assert seen == ["cancelled"]


async def test_work_that_must_finish_runs_on_and_still_hears_the_disconnect() -> None:
    client = Client([b"{}"])
    heard: list[Message] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        client.gone.set()
        await asyncio.sleep(0.05)  # the listener hears the client leave meanwhile
        heard.append(await receive())
        await answer(send)

    guard = CancelOnDisconnect(app, lambda _: False)
    await once_within(WAIT, guard(scope_of(b"{}"), client.receive, client.send))

    assert heard == [{"type": "http.disconnect"}]
    assert [message["type"] for message in client.sent] == [
        "http.response.start",
        "http.response.body",
    ]


async def test_the_disconnect_that_follows_an_answer_cancels_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = Client([b"{}"], leaves_when_answered=True)
    finished: list[bool] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        await answer(send)
        await asyncio.sleep(0.05)  # what follows the answer (a background task) is not cut
        finished.append(True)

    with caplog.at_level(logging.INFO, logger="gateway.http.disconnect"):
        await once_within(
            WAIT,
            CancelOnDisconnect(app, lambda _: True)(scope_of(b"{}"), client.receive, client.send),
        )

    assert finished == [True]
    assert "went away" not in caplog.text


async def test_a_cancellation_from_outside_is_not_taken_for_the_client() -> None:
    client = Client([b"{}"])
    reading = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        reading.set()
        await asyncio.sleep(BUDGET)

    serving_task = asyncio.ensure_future(
        CancelOnDisconnect(app, lambda _: True)(scope_of(b"{}"), client.receive, client.send)
    )
    await once_within(WAIT, reading.wait())
    serving_task.cancel()
    await asyncio.wait({serving_task}, timeout=WAIT)

    assert serving_task.cancelled()
