"""The per-request context every resolver receives as ``info.context``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from gateway.schema.loaders import Loaders

if TYPE_CHECKING:
    from gateway.runtime.state import Runtime
    from resolvers.memory import MemoryStore
    from resolvers.store import GraphStore


@dataclass
class GraphContext:
    runtime: Runtime
    can_write: bool = True
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # True once a mutation began executing (``MarkWrites``): its HTTP request is then run to its
    # end even when the client goes away (``gateway.http.graphql``), never abandoned halfway.
    writing: bool = False
    # Set by strawberry from a WebSocket's connection_init payload (it holds the token).
    connection_params: dict[str, object] | None = field(default=None, repr=False)

    @property
    def store(self) -> GraphStore:
        """The active graph store (raises ``MemoryGraphDisabledError`` when switched off)."""
        return self.runtime.graph_store

    @property
    def memory(self) -> MemoryStore:
        return self.runtime.memory

    @cached_property
    def loaders(self) -> Loaders:
        return Loaders(self.store)

    def fresh_loaders(self) -> None:
        """Forget cached loads: a WebSocket connection keeps one context for all its events."""
        self.__dict__.pop("loaders", None)
