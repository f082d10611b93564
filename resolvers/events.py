"""Domain events: every accepted write, as data.

An event is the mutation's input plus what the server assigned when it accepted it
(``received_at``). Applying an event to a store (``resolvers.observe`` / ``resolvers.declare``)
is deterministic and idempotent, so one event stream can feed the file store, the Neo4j outbox,
a replay after an outage and a migration.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from resolvers.records import utc_now

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Event:
    """``journalled``: whether the event may wait in the outbox while the selected backend is
    unreachable, to be applied when it returns (the observes: they never depend on what the
    graph holds). A declare validates against the graph, so it is answered at once."""

    kind: ClassVar[str] = "event"
    journalled: ClassVar[bool] = False
    session_id: str
    received_at: datetime = field(default_factory=utc_now, kw_only=True)


@dataclass(frozen=True, slots=True)
class ArtifactVersionRef:
    artifact_id: str
    version: int


@dataclass(frozen=True, slots=True)
class ProducedArtifact:
    artifact_id: str
    version: int
    path: str | None = None
    media_type: str | None = None
    logical_name: str | None = None
    project_id: str | None = None
    turn_id: str | None = None
    content_hash: str | None = None
    input_artifact_versions: tuple[ArtifactVersionRef, ...] = ()


@dataclass(frozen=True, slots=True)
class UploadFileObserved(Event):
    kind: ClassVar[str] = "upload_file"
    journalled: ClassVar[bool] = True
    input_names: ClassVar[dict[str, str]] = {"uploaded_at": "createdAt"}
    file_id: str
    name: str
    path: str
    uploaded_at: datetime | None = None
    media_type: str | None = None
    size: int | None = None
    content_hash: str | None = None


@dataclass(frozen=True, slots=True)
class FirstMessageObserved(Event):
    kind: ClassVar[str] = "first_message"
    journalled: ClassVar[bool] = True
    input_names: ClassVar[dict[str, str]] = {"sent_at": "createdAt"}
    goal_id: str
    core_objective: str
    domain: str | None = None
    topic_scope: tuple[str, ...] = ()
    sent_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ExecutionObserved(Event):
    kind: ClassVar[str] = "execution"
    journalled: ClassVar[bool] = True
    execution_id: str
    turn_id: str
    tool: str
    code_hash: str
    status: str
    started_at: datetime
    finished_at: datetime
    language: str | None = None
    exit_code: int | None = None
    tool_type: str = "execution"
    tool_name: str | None = None
    produced_artifacts: tuple[ProducedArtifact, ...] = ()
    stdout_hash: str | None = None
    stderr_hash: str | None = None
    env_hash: str | None = None
    parent_subagent_id: str | None = None
    input_source_files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PaperProduct:
    link: str
    title: str | None = None
    identifier: str | None = None
    identifier_type: str | None = None
    year: str | None = None
    authors: tuple[str, ...] = ()
    abstract: str | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallObserved(Event):
    kind: ClassVar[str] = "tool_call"
    journalled: ClassVar[bool] = True
    task_id: str
    turn_id: str | None
    tool_name: str
    tool_type: str
    source: str | None = None
    status: str = "completed"
    result_count: int | None = None
    retrieved_at: datetime | None = None
    products: tuple[PaperProduct, ...] = ()
    parent_subagent_id: str | None = None


@dataclass(frozen=True, slots=True)
class SubagentObserved(Event):
    kind: ClassVar[str] = "subagent"
    journalled: ClassVar[bool] = True
    input_names: ClassVar[dict[str, str]] = {"started_at": "createdAt"}
    subagent_id: str
    turn_id: str
    objective: str
    started_at: datetime
    status: str
    task_type: str = "subagent"
    subagent_type: str | None = None
    finished_at: datetime | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class ArtifactDeclared(Event):
    kind: ClassVar[str] = "declare_artifact"
    execution_id: str
    artifact: ProducedArtifact


@dataclass(frozen=True, slots=True)
class Alias:
    alias: str
    id: str


@dataclass(frozen=True, slots=True)
class ArtifactAlias:
    alias: str
    artifact_id: str
    version: int | None = None


@dataclass(frozen=True, slots=True)
class EvidenceDeclared(Event):
    kind: ClassVar[str] = "declare_evidence"
    content: str
    locator: str
    evidence_type: str
    confidence: str
    strength: str
    source_paper_link: str | None = None
    source_file_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimDeclared(Event):
    kind: ClassVar[str] = "declare_claim"
    content: str
    claim_type: str
    confidence: str
    locator: str
    cites_evidence: tuple[Alias, ...] = ()
    cites_artifacts: tuple[ArtifactAlias, ...] = ()
    cites_source_files: tuple[Alias, ...] = ()
    artifact_id: str | None = None
    artifact_version: int | None = None


@dataclass(frozen=True, slots=True)
class ClaimsLinked(Event):
    kind: ClassVar[str] = "link_claims"
    artifact_id: str
    artifact_version: int
    claim_ids: tuple[str, ...] = ()


OBSERVE_EVENTS: tuple[type[Event], ...] = (
    UploadFileObserved,
    FirstMessageObserved,
    ExecutionObserved,
    ToolCallObserved,
    SubagentObserved,
)
_ALL_EVENTS: tuple[type[Event], ...] = (
    *OBSERVE_EVENTS,
    ArtifactDeclared,
    EvidenceDeclared,
    ClaimDeclared,
    ClaimsLinked,
)
EVENT_TYPES: dict[str, type[Event]] = {cls.kind: cls for cls in _ALL_EVENTS}


def event_to_dict(event: Event) -> dict[str, Any]:
    """A JSON-ready form of ``event`` (datetimes as ISO-8601 text), tagged with its kind."""
    return {"kind": event.kind, "data": _plain(event)}


def event_from_dict(value: dict[str, Any]) -> Event:
    cls = EVENT_TYPES[value["kind"]]
    built = _build(cls, value["data"])
    assert isinstance(built, Event)
    return built


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def from_input(cls: type[T], value: object, **derived: Any) -> T:
    """``cls`` (an event or a part of one) from a client's input object, nested as the event is:
    each field is read from the input attribute of the same name, or of the name its
    ``input_names`` gives (``createdAt`` for ``started_at``); a null input field takes the
    event's default; ``derived`` gives fields the input does not carry. Nothing is validated
    here: the write entrance validates the event once."""
    built = _build(cls, value, _read_input)
    assert isinstance(built, cls)
    return built if not derived else dataclasses.replace(built, **derived)  # type: ignore[type-var]


_ABSENT: Any = object()


def _read_stored(cls: type[Any], name: str, value: Any) -> Any:
    return value.get(name, _ABSENT)


def _read_input(cls: type[Any], name: str, value: Any) -> Any:
    if name == "received_at":  # the server's, never the client's
        return _ABSENT
    spelled = getattr(cls, "input_names", {}).get(name, name)
    found = getattr(value, _SNAKE.sub(r"_\1", spelled).lower(), None)
    if found is not None:
        return found
    return _ABSENT if _shape(cls)[name][1] else None


_SNAKE = re.compile("([A-Z])")


_SHAPES: dict[type[Any], dict[str, tuple[Any, bool]]] = {}


def _shape(cls: type[Any]) -> dict[str, tuple[Any, bool]]:
    """A dataclass's fields in order: name → (resolved type, has a default). Resolving the
    annotations is costly (``get_type_hints``), so once per class."""
    shape = _SHAPES.get(cls)
    if shape is None:
        hints = typing.get_type_hints(cls)
        shape = _SHAPES[cls] = {
            f.name: (
                hints[f.name],
                f.default is not dataclasses.MISSING
                or f.default_factory is not dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)
        }
    return shape


def _build(
    annotation: Any, value: Any, read: Callable[[type[Any], str, Any], Any] = _read_stored
) -> Any:
    if value is None:
        return None
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        kwargs = {}
        for name, (hint, _) in _shape(annotation).items():
            found = read(annotation, name, value)
            if found is not _ABSENT:
                kwargs[name] = _build(hint, found, read)
        return annotation(**kwargs)
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        inner = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _build(inner[0], value, read)
    if origin is tuple:
        item_type = typing.get_args(annotation)[0]
        return tuple(_build(item_type, item, read) for item in value)
    if annotation is datetime and not isinstance(value, datetime):
        return datetime.fromisoformat(value)
    return value
