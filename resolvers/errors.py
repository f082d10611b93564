"""Domain errors: the expected failures of every use case.

The GraphQL layer maps each class to one union member in ``gateway/schema/errors.py``; anything
that is not a ``DomainError`` is unexpected and is masked there.

    DomainError
    ├── MemoryGraphDisabledError        the ScienceMemory toggle is off
    ├── StoreUnavailableError           the selected backend cannot be reached (``queued`` says
    │                                   whether the write was journalled for replay)
    ├── NodeNotFoundError               a lookup argument names no live node
    ├── InvalidInputError               an argument fails validation (``field`` names it)
    ├── QueryLimitExceededError         a configured limit or the time budget was hit
    ├── StoreWriteError                 the store (``backend``) could not make a write durable
    ├── KeyOwnedByOtherSessionError     a write would change a node another session created
    └── DeclareRejectedError            a declare failed a rule; ``code`` and ``instruction``
                                        tell the agent what to do instead
"""

from __future__ import annotations

from enum import StrEnum


class DeclareCode(StrEnum):
    NO_SOURCE = "NO_SOURCE"
    AMBIGUOUS_SOURCE = "AMBIGUOUS_SOURCE"
    SOURCE_PAPER_NOT_FOUND = "SOURCE_PAPER_NOT_FOUND"
    SOURCE_FILE_NOT_FOUND = "SOURCE_FILE_NOT_FOUND"
    SOURCE_FILE_NOT_PDF = "SOURCE_FILE_NOT_PDF"
    SOURCE_FILE_IS_PDF = "SOURCE_FILE_IS_PDF"
    NO_CITES_TARGET = "NO_CITES_TARGET"
    EVIDENCE_NOT_FOUND = "EVIDENCE_NOT_FOUND"
    ARTIFACT_VERSION_NOT_FOUND = "ARTIFACT_VERSION_NOT_FOUND"
    ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND"
    CLAIM_NOT_FOUND = "CLAIM_NOT_FOUND"


class DomainError(Exception):
    """Base of every expected failure. ``message`` is safe to show to a client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class MemoryGraphDisabledError(DomainError):
    def __init__(self) -> None:
        super().__init__("ScienceMemory is disabled; nothing is recorded or returned.")


class StoreUnavailableError(DomainError):
    """The backend did not serve the request. ``transient``: it answered, but refused this
    attempt (a deadlock or lock timeout between concurrent writers); the same write may succeed
    in a new transaction."""

    def __init__(
        self, backend: str, *, queued: bool = False, detail: str = "", transient: bool = False
    ) -> None:
        suffix = "; the write was queued and will be replayed" if queued else ""
        text = f"The {backend} memory graph is unreachable{suffix}."
        super().__init__(f"{text} {detail}".strip())
        self.backend = backend
        self.queued = queued
        self.transient = transient
        self.detail = detail


class NodeNotFoundError(DomainError):
    def __init__(self, node_id: str, what: str = "node") -> None:
        super().__init__(f"{what} not found: {node_id}")
        self.node_id = node_id


class InvalidInputError(DomainError):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.reason = message


class QueryLimitExceededError(DomainError):
    def __init__(self, message: str) -> None:
        super().__init__(message)


class StoreWriteError(DomainError):
    """``backend`` answered but could not make the write durable (a full disk, a refused
    constraint); nothing of the write is stored."""

    def __init__(self, message: str, *, backend: str) -> None:
        super().__init__(message)
        self.backend = backend


class KeyOwnedByOtherSessionError(DomainError):
    """A write from ``session_id`` would change the node ``node_id`` (domain key ``key``),
    which belongs to ``owner_session_id``, the session that created it (SPEC §3.8). The whole
    write is refused: nothing of it is stored."""

    def __init__(self, node_id: str, key: str, owner_session_id: str, session_id: str) -> None:
        super().__init__(
            f"{key} belongs to session {owner_session_id}; session {session_id} may not change "
            "it. Use ids of this session's own (e.g. a fresh executionId or artifactId)."
        )
        self.node_id = node_id
        self.key = key
        self.owner_session_id = owner_session_id
        self.session_id = session_id


class DeclareRejectedError(DomainError):
    def __init__(
        self,
        code: DeclareCode,
        message: str,
        instruction: str | None = None,
        alias: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.instruction = instruction
        self.alias = alias
