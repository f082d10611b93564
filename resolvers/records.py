"""Records that cross the store port: labels, edge types, nodes, edges, pages.

Identity rules (SPEC §2.1):

* a node's ``key`` is its domain key (``goal:session:s1``, ``subtask:exec-1``, ``fig#v2``,
  a Paper's normalised link, …);
* its global ``id`` is ``<Label>:<key>`` except for a Paper, whose key is only unique within a
  session: ``Paper:<sessionId>|<link>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


class Label(StrEnum):
    """The nine public node labels."""

    RESEARCH_GOAL = "ResearchGoal"
    TASK = "Task"
    TOOL_CALL = "ToolCall"
    CODE = "Code"
    ARTIFACT = "Artifact"
    PAPER = "Paper"
    EVIDENCE = "Evidence"
    CLAIM = "Claim"
    SOURCE_FILE = "SourceFile"


class EdgeType(StrEnum):
    """The nine directed edge types."""

    NEXT = "next"
    PRODUCES = "produces"
    EXTRACTS = "extracts"
    SUPPORTS = "supports"
    STATED_IN = "stated_in"
    SUPERSEDES = "supersedes"
    INPUT = "input"
    CONTAINS = "contains"
    FEEDS = "feeds"


class Direction(StrEnum):
    """``OUT`` follows the arrow, ``IN`` walks against it."""

    OUT = "out"
    IN = "in"


class Backend(StrEnum):
    FILE = "file"
    NEO4J = "neo4j"


PDF_MEDIA_TYPE = "application/pdf"
SUBAGENT_TASK_TYPE = "subagent"


def utc_now() -> datetime:
    return datetime.now(UTC)


def stored_time(value: Any) -> datetime | None:
    """A stored ``…_at`` property as a datetime; ``None`` when absent or not a readable time.

    Stored values predate today's input rules (``resolvers.validate.check_time``): one written
    before them (``999-06-01T…``) is reported as absent here, and as its raw text in a node's
    ``properties``, rather than failing the read."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def node_id(label: Label, key: str, session_id: str = "") -> str:
    """The global id of a node: ``<Label>:<key>`` (a Paper also carries its session)."""
    if label is Label.PAPER:
        return f"{label.value}:{session_id}|{key}"
    return f"{label.value}:{key}"


def split_node_id(value: str) -> tuple[Label, str] | None:
    """``(label, key)`` of a global id, or ``None`` when ``value`` is not one.

    For a Paper the key returned is the link (the session part is dropped).
    """
    prefix, sep, rest = value.partition(":")
    if not sep:
        return None
    try:
        label = Label(prefix)
    except ValueError:
        return None
    if label is Label.PAPER:
        _, bar, link = rest.partition("|")
        return (label, link) if bar else None
    return label, rest


def artifact_key(artifact_id: str, version: int) -> str:
    return f"{artifact_id}#v{version}"


_DIGITS = re.compile(r"[0-9]+")
_MAX_VERSION_DIGITS = 16  # versions are at most 2**53 (resolvers.validate)


def split_artifact_key(ref: str) -> tuple[str, int | None]:
    """``(artifactId, n)`` for ``<artifactId>#v<n>`` (ASCII digits), the inverse of
    ``artifact_key``; else ``(ref, None)``.

    A suffix of more digits than any stored version can have names no version: ``0``, which
    matches nothing (converting thousands of digits would itself be refused by ``int``)."""
    head, sep, tail = ref.rpartition("#v")
    if not (sep and head and _DIGITS.fullmatch(tail)):
        return ref, None
    return head, int(tail) if len(tail) <= _MAX_VERSION_DIGITS else 0


# ``weakref_slot``: what is made of a record can be kept for as long as the record lives
# (``gateway.schema.identity``).
@dataclass(frozen=True, slots=True, weakref_slot=True)
class NodeRecord:
    """One stored node.

    ``props`` holds the label's own properties in snake_case (never ``None`` values: a missing
    property is absent). ``seq`` is the per-session arrival counter of steps (ToolCall and Task),
    0 for other labels. A step's ``chain_at`` property is the time it is ordered by in its
    chain (``resolvers.steps``).
    """

    id: str
    label: Label
    key: str
    session_id: str
    created_at: datetime
    props: Mapping[str, Any] = field(default_factory=dict)
    seq: int = 0

    @property
    def deleted(self) -> bool:
        return bool(self.props.get("deleted_session"))

    def get(self, name: str, default: Any = None) -> Any:
        return self.props.get(name, default)

    def with_props(self, **changes: Any) -> NodeRecord:
        """A copy with ``changes`` merged into ``props``; a ``None`` value removes the key."""
        merged = dict(self.props)
        for name, value in changes.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        return NodeRecord(
            self.id, self.label, self.key, self.session_id, self.created_at, merged, self.seq
        )


@dataclass(frozen=True, slots=True, weakref_slot=True)
class EdgeRecord:
    """One directed edge; ``(type, source, target)`` is unique. Endpoints are global ids."""

    type: EdgeType
    source: str
    target: str
    props: Mapping[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> tuple[EdgeType, str, str]:
        return self.type, self.source, self.target


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A node a search matched: how many of the terms it matched, and the best rank
    (``resolvers.text.SEARCH_FIELDS``) of a field a term matched in."""

    node: NodeRecord
    matched: int
    rank: int


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """A bounded slice of a longer ordered list. ``end_cursor`` continues after the slice."""

    items: Sequence[T]
    total: int
    truncated: bool
    end_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class GraphSlice:
    """Nodes plus the edges among them (chains, subgraphs, expansions)."""

    nodes: Sequence[NodeRecord]
    edges: Sequence[EdgeRecord]
    total: int
    truncated: bool = False
    end_cursor: str | None = None


def clean_props(values: Mapping[str, Any]) -> dict[str, Any]:
    """Drop ``None`` values: a missing property is absent, never null (Neo4j semantics)."""
    return {name: value for name, value in values.items() if value is not None}
