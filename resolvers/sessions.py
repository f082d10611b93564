"""Session use cases: a session is a scope, not a node (SPEC §2), so it exists while it holds a
live node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resolvers.errors import NodeNotFoundError
from resolvers.validate import check_text

if TYPE_CHECKING:
    from resolvers.store import GraphReader


async def get_session(store: GraphReader, session_id: str) -> str:
    """``session_id`` when the session holds a live node; ``NodeNotFoundError`` else."""
    check_text("session_id", session_id, "sessionId")
    page = await store.list_nodes(session_id=session_id, limit=1)
    if not page.items:
        raise NodeNotFoundError(session_id, "session")
    return session_id
