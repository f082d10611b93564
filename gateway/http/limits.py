"""The request body's limits: its size (413) and the time it may take to arrive (408)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from starlette.datastructures import Headers

from gateway.http.graphql import accept_of, coded_error

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodySizeLimit:
    """ASGI middleware: an HTTP request body over ``max_bytes`` answers 413 before it is parsed.

    A declared ``Content-Length`` over the limit is refused without reading; otherwise (chunked
    or understated bodies too) the body is read here, counting, and refused as soon as it passes
    the limit. A body within the limit is handed on whole. A body that takes longer than
    ``timeout`` seconds to arrive (a client trickling it, or stopping halfway) answers 408:
    uvicorn times out idle connections but not a request in progress.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float | None = None) -> None:
        self._app = app
        self._max_bytes = max_bytes
        self._timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self._max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        try:
            async with asyncio.timeout(self._timeout):
                while more:
                    message = await receive()
                    if message["type"] != "http.request":  # the client went away
                        return
                    chunks.append(message.get("body", b""))
                    size += len(chunks[-1])
                    if size > self._max_bytes:
                        await self._refuse(scope, receive, send)
                        return
                    more = message.get("more_body", False)
        except TimeoutError:
            await _too_slow(scope, receive, send, self._timeout)
            return
        await self._app(scope, _replay(b"".join(chunks), receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"request body larger than {self._max_bytes} bytes"
        response = coded_error(
            413, message, "QUERY_LIMIT_EXCEEDED", _accept(scope), {"Connection": "close"}
        )
        await response(scope, receive, send)


async def _too_slow(scope: Scope, receive: Receive, send: Send, seconds: float | None) -> None:
    message = f"request body not received within {seconds} s"
    response = coded_error(408, message, "REQUEST_TIMEOUT", _accept(scope), {"Connection": "close"})
    await response(scope, receive, send)


def _accept(scope: Scope) -> str:
    return accept_of(Headers(scope=scope))


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields ``body`` once, then defers to the original (disconnects)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed
