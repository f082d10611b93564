"""Logging: a request id in every record of a request, JSON lines on demand, secrets redacted.

* ``RequestIdMiddleware`` gives each HTTP request and WebSocket connection an id (the client's
  ``X-Request-ID`` when it is a short safe token, else a new one), keeps it in a context
  variable for everything the request runs, and echoes it in the ``X-Request-ID`` response
  header. Masked errors carry the same id in ``extensions.requestId``.
* ``configure_logging`` installs one root handler: plain text, or JSON lines (one object per
  record: ``time level logger message request_id`` plus ``exc_info`` and any ``extra`` fields)
  when ``SCIENCE_AGENT_MEMORY_GRAPH_LOG_FORMAT=json``.
* Every record passes ``RedactSecrets``: ``gateway.observability.redaction.redact`` masks the
  configured tokens and password (percent-encoded too, as in the access log's query strings),
  any secret registered since, ``Bearer …`` credentials, credential query parameters and the
  password of a URI's user-info before a handler formats it.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from gateway.observability.redaction import redact, register_secrets

if TYPE_CHECKING:
    from collections.abc import Iterable

    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from gateway.settings import Settings

REQUEST_ID_HEADER = b"x-request-id"
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request being served, if any."""
    return request_id_var.get()


def _request_id(scope: Scope) -> str:
    supplied = dict(scope["headers"]).get(REQUEST_ID_HEADER, b"").decode("latin-1")
    return supplied if _SAFE_ID.fullmatch(supplied) else uuid.uuid4().hex


class RequestIdMiddleware:
    """ASGI middleware: one request id per HTTP request or WebSocket connection."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        request_id = _request_id(scope)
        token = request_id_var.set(request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (REQUEST_ID_HEADER, request_id.encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self._app(scope, receive, send_with_id)
        finally:
            request_id_var.reset(token)


class RequestIdFilter(logging.Filter):
    """Puts the current request id (or ``None``) on every record as ``request_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id()
        return True


class RedactSecrets(logging.Filter):
    """Redacts the rendered message and traceback (``gateway.observability.redaction``)."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        super().__init__()
        register_secrets(*secrets)

    def redact(self, text: str) -> str:
        return redact(text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg, record.args = self.redact(message), None
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True


_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
    "color_message",  # uvicorn's ANSI-coloured copy of the message
}


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        entry.update((name, value) for name, value in vars(record).items() if name not in _STANDARD)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc_info"] = record.exc_text
        return json.dumps(entry, default=str)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"


def log_handler(settings: Settings, stream: TextIO | None = None) -> logging.Handler:
    """A handler (stderr by default) in the configured format, with request ids and redaction."""
    handler = logging.StreamHandler(stream)
    json_lines = settings.log_format == "json"
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RequestIdFilter())
    handler.addFilter(
        RedactSecrets(
            (
                settings.internal_token,
                settings.read_token,
                settings.reviewer_token,
                settings.neo4j_password,
            )
        )
    )
    return handler


def configure_logging(settings: Settings) -> None:
    """Route every logger (uvicorn's too) through one handler on the root logger; like
    ``logging.basicConfig``, leave a root logger that already has handlers alone."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(log_handler(settings))
    root.setLevel(settings.log_level)
