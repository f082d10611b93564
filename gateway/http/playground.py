"""The GraphiQL playground: our page, its default document, and where its scripts come from.

The page (``static/playground.html``) loads React, ReactDOM and GraphiQL from
``gateway/static/graphiql/``, which ``tools/setup-clients.sh`` fills from the npm packages
pinned in ``clients/package-lock.json``; the gateway serves that folder under
``/graphql/assets/`` so the playground works without network access (air-gapped labs). When
the folder is incomplete the page loads the same versions from unpkg.com instead, pinned by
Subresource Integrity hashes, and the gateway logs how to install the assets.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from starlette.staticfiles import StaticFiles

logger = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent.parent / "static"
ASSETS_DIR = STATIC_DIR / "graphiql"
# Relative to the page at ``…/graphql``, so the playground also works behind a path prefix.
ASSETS_URL = "graphql/assets"

DEFAULT_QUERY = """# ScienceMemory playground: run with the play button or Ctrl-Enter.
# With a token configured, set Headers (below) to
#   { "Authorization": "Bearer <token>" }
# Replace the session id and the artifact. Every root field answers a union:
# its success type or an Error. The trace's `path` is its witness: every stored
# edge from the artifact back to the goal, each step naming the node it was
# reached from.

query SessionChain($sessionId: String! = "demo-session", $artifact: ID! = "fig-volcano") {
  health { status backend enabled pendingWrites }
  session(sessionId: $sessionId) {
    ... on Session {
      goal { ... on ResearchGoal { coreObjective } }
      chain {
        __typename
        id
        excerpt
        ... on ToolCall { toolName status finishedAt products { __typename id excerpt } }
        ... on Task { objective status firstChild { id excerpt } }
      }
    }
    ... on Error { code message }
  }
  traceProvenance(nodeId: $artifact, sessionId: $sessionId) {
    ... on ProvenanceTrace {
      broken truncated reason
      path { hop viaEdge reachedFrom node { __typename id excerpt } }
    }
    ... on Error { code message }
  }
}
"""


@dataclass(frozen=True, slots=True)
class Asset:
    """One file the page needs: its name in the assets folder and its pinned CDN twin."""

    name: str
    cdn_url: str
    integrity: str

    def tag(self, src: str, integrity: str | None) -> str:
        pinned = f' integrity="{integrity}" crossorigin="anonymous"' if integrity else ""
        if self.name.endswith(".css"):
            return f'<link rel="stylesheet" href="{src}"{pinned} />'
        return f'<script src="{src}"{pinned}></script>'


# The versions of clients/package-lock.json; the hashes are those of the npm files.
ASSETS = (
    Asset(
        "graphiql.min.css",
        "https://unpkg.com/graphiql@3.8.3/graphiql.min.css",
        "sha384-Mq3vbRBY71jfjQAt/DcjxUIYY33ksal4cgdRt9U/hNPvHBCaT2JfJ/PTRiPKf0aM",
    ),
    Asset(
        "react.production.min.js",
        "https://unpkg.com/react@18.2.0/umd/react.production.min.js",
        "sha384-tMH8h3BGESGckSAVGZ82T9n90ztNXxvdwvdM6UoR56cYcf+0iGXBliJ29D+wZ/x8",
    ),
    Asset(
        "react-dom.production.min.js",
        "https://unpkg.com/react-dom@18.2.0/umd/react-dom.production.min.js",
        "sha384-bm7MnzvK++ykSwVJ2tynSE5TRdN+xL418osEVF2DE/L/gfWHj91J2Sphe582B1Bh",
    ),
    Asset(
        "graphiql.min.js",
        "https://unpkg.com/graphiql@3.8.3/graphiql.min.js",
        "sha384-HbRVEFG0JGJZeAHCJ9Xm2+tpknBQ7QZmNlO/DgZtkZ0aJSypT96YYGRNod99l9Ie",
    ),
)


class Playground:
    """The playground page, rendered once, and the ASGI app serving its local assets."""

    def __init__(self, assets_dir: Path | None = None) -> None:
        self.assets_dir = assets_dir or ASSETS_DIR
        self.offline = all((self.assets_dir / asset.name).is_file() for asset in ASSETS)
        self.html = _render(self.offline)
        self.assets = StaticFiles(directory=self.assets_dir, check_dir=False)

    def log_source(self) -> None:
        if self.offline:
            logger.info("playground: serving GraphiQL from %s", self.assets_dir)
        else:
            logger.warning(
                "playground: GraphiQL assets not found in %s, so the page loads them from "
                "unpkg.com; run `bash tools/setup-clients.sh` (needs npm) to serve them offline",
                self.assets_dir,
            )


def _render(offline: bool) -> str:
    tags = (
        asset.tag(f"{ASSETS_URL}/{asset.name}", None)
        if offline
        else asset.tag(asset.cdn_url, asset.integrity)
        for asset in ASSETS
    )
    # Escaping "<" keeps the document from closing the <script> it is embedded in.
    document = json.dumps(DEFAULT_QUERY).replace("<", "\\u003c")
    template = (STATIC_DIR / "playground.html").read_text(encoding="utf-8")
    return template.replace("__ASSET_TAGS__", "\n    ".join(tags)).replace(
        "__DEFAULT_QUERY__", document
    )
