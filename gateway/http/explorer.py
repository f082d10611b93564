"""The session explorer at ``/explorer``: static files, no server-side logic.

``tools/setup-clients.sh`` builds ``gateway/static/explorer/`` from ``clients/explorer/`` (the
page, its script and style) and the npm packages pinned in ``clients/package-lock.json``
(Cytoscape.js, cytoscape-dagre with its bundled dagre, graphql-ws), so the explorer works
without network access. The page talks to ``/graphql`` only, with the token the user types in
(a read token is enough: it only queries and subscribes). Without the build, ``/explorer``
answers 503 and says how to install it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.responses import HTMLResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.routing import BaseRoute
    from starlette.types import Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

EXPLORER_DIR = Path(__file__).parent.parent / "static" / "explorer"
FILES = (
    "index.html",
    "explorer.js",
    "explorer.css",
    "cytoscape.min.js",
    "cytoscape-dagre.js",
    "graphql-ws.min.js",
)
# The page may load and connect to its own origin only (no CDN, no third party).
POLICY = (
    "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data: blob:; "
    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"
)
_MISSING = """<!doctype html><meta charset="utf-8"><title>ScienceMemory explorer</title>
<p>The session explorer is not installed. Run <code>bash tools/setup-clients.sh</code>
(needs npm) and restart the gateway.</p>"""


class Explorer:
    """The explorer's routes: its files when built, else a page saying how to build them."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or EXPLORER_DIR
        self.installed = all((self.directory / name).is_file() for name in FILES)

    def log_source(self) -> None:
        if self.installed:
            logger.info("explorer: serving %s at /explorer", self.directory)
        else:
            logger.warning(
                "explorer: not built in %s; run `bash tools/setup-clients.sh` (needs npm)",
                self.directory,
            )

    def routes(self) -> list[BaseRoute]:
        if not self.installed:
            return [Route("/explorer", _missing), Route("/explorer/{path:path}", _missing)]
        return [Mount("/explorer", app=_Guarded(StaticFiles(directory=self.directory, html=True)))]


async def _missing(request: Request) -> HTMLResponse:
    return HTMLResponse(_MISSING, status_code=503)


class _Guarded:
    """Static files with a Content-Security-Policy that keeps the page on its own origin."""

    def __init__(self, app: StaticFiles) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    *message.get("headers", []),
                    (b"content-security-policy", POLICY.encode()),
                    (b"x-content-type-options", b"nosniff"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive, send_with_policy)
