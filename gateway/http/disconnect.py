"""Work for a client that went away is cancelled (SPEC §8 isolation).

uvicorn goes on running a request whose client closed its connection (it gave up, it timed
out): the request's task keeps what it holds — a heavy query's reader slot
(``gateway.schema.cost``), a SQLite reader, a Neo4j transaction — until its time budget is
spent, and a few clients that give up can hold every heavy slot with work nobody will read.
``CancelOnDisconnect`` listens for the client's ``http.disconnect`` while the request is served
and then cancels the request's task. What the task holds is let go as the cancellation
unwinds: slots are released, SQLite's readers abort the statement of a cancelled caller, the
Neo4j driver drops the connection of a cancelled transaction (the server then rolls it back).

Listening starts once the request's body has arrived (at once when it has none), so the body
keeps its flow control; every message the listener reads is handed to the app's next
``receive``, none is swallowed. A request that ``may_cancel`` says must finish (a mutation that
began executing: ``gateway.http.graphql``) is never cancelled: it runs to its end, and its
answer goes nowhere.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)


class CancelOnDisconnect:
    """ASGI middleware: an HTTP request whose client disconnects is cancelled, unless
    ``may_cancel(scope)`` answers false at that moment (module docstring)."""

    def __init__(self, app: ASGIApp, may_cancel: Callable[[Scope], bool]) -> None:
        self._app = app
        self._may_cancel = may_cancel

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        client = _Client(scope, receive, send, lambda: self._may_cancel(scope))
        if not await client.serve(self._app):
            logger.info(
                "the client went away: %s %s cancelled after %.1f ms",
                scope["method"],
                scope["path"],
                (time.perf_counter() - started) * 1000,
            )


class _Client:
    """One request's client, listened to while ``serve`` runs the app."""

    def __init__(
        self, scope: Scope, receive: Receive, send: Send, may_cancel: Callable[[], bool]
    ) -> None:
        self._scope = scope
        self._receive = receive
        self._send = send
        self._may_cancel = may_cancel
        self._held: deque[Message] = deque()  # read by the listener, not yet by the app
        self._arrived = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None
        self._serving: asyncio.Task[object] | None = None
        self._answered = False
        self._cancelled = False

    async def serve(self, app: ASGIApp) -> bool:
        """Run ``app``; False when it was cancelled because the client went away."""
        serving = self._serving = asyncio.current_task()
        assert serving is not None
        if not _has_body(self._scope):
            self._listen()
        try:
            await app(self._scope, self.receive, self.send)
        except asyncio.CancelledError:
            if self._cancelled and serving.uncancel() == 0:
                return False
            raise
        finally:
            self._serving = None
            if self._listener is not None:
                # Not awaited: it ends at its next step, and nothing it holds outlives it.
                self._listener.cancel()
        if self._cancelled:  # asked, but the app absorbed the cancellation
            serving.uncancel()
        return not self._cancelled

    async def receive(self) -> Message:
        """The app's ``receive``: its body as it arrives, then what the listener heard."""
        if self._listener is None:
            message = await self._receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                self._listen()  # the whole body is in
            self._heard(message)
            return message
        while not self._held:
            if self._listener.done():
                return await self._receive()
            self._arrived.clear()
            await self._arrived.wait()
        return self._held.popleft()

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            # uvicorn answers ``receive`` with ``http.disconnect`` once the response is sent.
            self._answered = True
        await self._send(message)

    def _listen(self) -> None:
        if self._listener is None:
            self._listener = asyncio.create_task(self._listening())

    async def _listening(self) -> None:
        try:
            while True:
                message = await self._receive()
                self._held.append(message)
                self._arrived.set()
                self._heard(message)
                if message["type"] == "http.disconnect":
                    return
        finally:
            self._arrived.set()  # an app waiting for a message then asks the server itself

    def _heard(self, message: Message) -> None:
        serving = self._serving
        if message["type"] != "http.disconnect" or serving is None or self._answered:
            return
        if not self._cancelled and self._may_cancel():
            self._cancelled = True
            serving.cancel()


def _has_body(scope: Scope) -> bool:
    """Whether the request's head announces a body (HTTP/1.1: a length or a chunked one)."""
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False
