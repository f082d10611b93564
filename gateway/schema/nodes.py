"""Node and edge types: one object type per label, each a federation entity keyed by ``id``.

Property fields are plain attributes copied from the record (cheap on hot paths);
relationship fields go through the request's DataLoaders.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Self

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info
from strawberry.types.base import get_object_definition

from gateway.schema.context import GraphContext
from gateway.schema.enums import EdgeType, NodeLabel
from gateway.schema.identity import IdentityCache
from resolvers import records
from resolvers.records import Direction, EdgeRecord, Label, NodeRecord, stored_time
from resolvers.values import GRAPHQL_INT

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gateway.schema.selection import Fields

EXCERPT_LENGTH = 240
_EXCERPT_FIELDS: dict[Label, tuple[str, ...]] = {
    Label.RESEARCH_GOAL: ("core_objective", "domain"),
    Label.TASK: ("objective", "summary", "task_type"),
    Label.TOOL_CALL: ("tool_name", "tool_type", "source"),
    Label.PAPER: ("title", "identifier", "abstract", "link"),
    Label.EVIDENCE: ("content", "locator"),
    Label.CLAIM: ("content", "locator"),
    Label.CODE: ("tool", "code_id"),
    Label.ARTIFACT: ("logical_name", "path", "artifact_id"),
    Label.SOURCE_FILE: ("name", "path", "file_id"),
}
_BASE_FIELDS = frozenset(
    {"id", "key", "label", "session_id", "created_at", "excerpt", "properties"}
)


def json_properties(props: Mapping[str, Any]) -> JSON:
    """A copy of stored properties for a ``properties`` field (the ``JSON`` scalar answers a
    non-finite number in it as ``null``: ``gateway.schema.scalars``)."""
    return JSON(dict(props))


def excerpt(record: NodeRecord) -> str:
    props = record.props
    for name in _EXCERPT_FIELDS[record.label]:
        value = stored_text(props.get(name))
        if value:
            return value[:EXCERPT_LENGTH]
    return record.label.value


# A stored property as its typed field answers it. Stored values need not be what today's
# mutations write (an imported graph, a Neo4j another tool wrote to, an older data directory):
# one its type cannot hold is absent from the typed field (and as it is in ``properties``),
# as a time no parser reads is (``stored_time``), rather than failing the read.
_LONGEST_INT = 10**100  # longer, a number is not written out as text (Python refuses 4,300 digits)


def stored_text(value: Any) -> str | None:
    """Text as it is; a number or a truth value as graphql-core writes it (``String``);
    anything else (a list, an object, a non-finite number) absent."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) < _LONGEST_INT:
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(value)
    return None


def stored_int(value: Any) -> int | None:
    """A whole number a GraphQL ``Int`` holds (a float with no fraction included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value in GRAPHQL_INT else None


def stored_texts(value: Any) -> list[str] | None:
    """A list of texts; a list holding anything else, or no list, absent."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


_READERS: dict[str, Callable[[Any], Any]] = {
    "str | None": stored_text,
    "int | None": stored_int,
    "list[str] | None": stored_texts,
    "datetime | None": stored_time,
}
_PROPERTY_FIELDS: dict[type, tuple[tuple[str, Callable[[Any], Any]], ...]] = {}


def _property_fields(cls: type) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """The label-specific property fields of a node type (``seq`` aside), each with how its
    stored value is read (by the field's type), computed once per type."""
    names = _PROPERTY_FIELDS.get(cls)
    if names is None:
        names = _PROPERTY_FIELDS[cls] = tuple(
            (field.name, _READERS[str(field.type)])
            for field in dataclasses.fields(cls)
            if field.init and field.name not in _BASE_FIELDS and field.name != "seq"
        )
    return names


# What ``from_record`` fills besides the base fields, per type and attributes read:
# (excerpt, properties, the label's properties with how each is read, seq).
_Conversion = tuple[bool, bool, tuple[tuple[str, Callable[[Any], Any]], ...], bool]


_CONVERSIONS: dict[tuple[type, Fields], _Conversion] = {}
# The selections are the clients' to choose: the table is emptied when it holds this many.
_MAX_CONVERSIONS = 1024


def _conversion(cls: type[GraphNode], fields: Fields) -> _Conversion:
    key = (cls, fields)
    found = _CONVERSIONS.get(key)
    if found is None:
        if len(_CONVERSIONS) >= _MAX_CONVERSIONS:
            _CONVERSIONS.clear()
        wanted = _BASE_FIELDS | {"seq"} | {name for name, _ in _property_fields(cls)}
        if fields is not None:
            wanted &= fields
        found = _CONVERSIONS[key] = (
            "excerpt" in wanted,
            "properties" in wanted,
            tuple(entry for entry in _property_fields(cls) if entry[0] in wanted),
            cls.HAS_SEQ and "seq" in wanted,
        )
    return found


@strawberry.interface(description="A node of the provenance graph.")
class GraphNode:
    id: strawberry.ID = strawberry.field(description="Global id: `<Label>:<key>`.")
    key: str = strawberry.field(description="The domain key (a Paper's key is its link).")
    label: NodeLabel
    session_id: str
    created_at: datetime = strawberry.field(description="Server time of creation (UTC).")
    excerpt: str
    properties: JSON = strawberry.field(description="Every stored property, snake_case.")

    label_of: ClassVar[Label]
    HAS_SEQ: ClassVar[bool] = False
    # Made once per record and selection (``to_node``), never changed after: the executor
    # keeps each one's completed leaves (``gateway.schema.execution``).
    SHARED: ClassVar[bool] = True

    @classmethod
    def from_record(cls, record: NodeRecord, fields: Fields = None) -> Self:
        """The node of ``record``; with ``fields`` (``gateway.schema.selection``) only the
        attributes named there are filled besides ``id``, ``key``, ``label``, ``session_id``
        and ``created_at``. A property left out keeps its class default (``None``), the
        excerpt and ``properties`` are absent: what no selection reads is never computed."""
        with_excerpt, with_properties, properties, with_seq = _conversion(cls, fields)
        props = record.props
        # The dataclass ``__init__`` would insist on every field: the attributes are set as
        # it sets them, those left out fall back to the class defaults.
        node = cls.__new__(cls)
        values: dict[str, Any] = node.__dict__
        values["id"] = record.id  # an ID is a str: no call to ``strawberry.ID`` per node
        values["key"] = record.key
        values["label"] = NodeLabel.from_domain(record.label)
        values["session_id"] = record.session_id
        values["created_at"] = record.created_at
        if with_excerpt:
            values["excerpt"] = excerpt(record)
        if with_properties:
            values["properties"] = json_properties(props)
        for name, read in properties:
            values[name] = read(props.get(name))
        if with_seq:
            values["seq"] = record.seq
        return node

    @classmethod
    async def resolve_reference(
        cls, info: Info[GraphContext, None], id: strawberry.ID
    ) -> Self | None:
        record = await info.context.loaders.node.load(str(id))
        return (
            cls.from_record(record) if record is not None and record.label is cls.label_of else None
        )


async def _related(
    info: Info[GraphContext, None], node_id: str, edge: records.EdgeType, direction: Direction
) -> list[GraphNode]:
    found = await info.context.loaders.neighbours.load((node_id, edge, direction))
    return [to_node(record) for record in found]


async def _one(
    info: Info[GraphContext, None], node_id: str, edge: records.EdgeType, direction: Direction
) -> GraphNode | None:
    found = await _related(info, node_id, edge, direction)
    return found[0] if found else None


OUT, IN = Direction.OUT, Direction.IN
E = records.EdgeType


@strawberry.federation.type(keys=["id"], description="The session's research goal.")
class ResearchGoal(GraphNode):
    label_of: ClassVar[Label] = Label.RESEARCH_GOAL
    goal_id: str | None = None
    core_objective: str | None = None
    domain: str | None = None
    topic_scope: list[str] | None = None
    sent_at: datetime | None = None

    @strawberry.field(description="The first step of the session's main chain.")
    async def first_step(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.NEXT, OUT)

    @strawberry.field(description="Uploaded files that feed the goal.")
    async def sources(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.FEEDS, IN)


@strawberry.federation.type(keys=["id"], description="A subagent's scope.")
class Task(GraphNode):
    label_of: ClassVar[Label] = Label.TASK
    task_type: str | None = None
    objective: str | None = None
    subagent_type: str | None = None
    status: str | None = None
    summary: str | None = None
    failure_reason: str | None = None
    turn_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    seq: int = 0
    HAS_SEQ: ClassVar[bool] = True

    @strawberry.field(description="The first step inside the scope.")
    async def first_child(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.CONTAINS, OUT)

    @strawberry.field
    async def next(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.NEXT, OUT)

    @strawberry.field
    async def previous(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.NEXT, IN)


@strawberry.federation.type(keys=["id"], description="One step: a code execution or a search.")
class ToolCall(GraphNode):
    label_of: ClassVar[Label] = Label.TOOL_CALL
    tool_type: str | None = None
    tool_name: str | None = None
    status: str | None = None
    source: str | None = None
    result_count: int | None = None
    parent_subtask_id: str | None = None
    turn_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    retrieved_at: datetime | None = None
    seq: int = 0
    HAS_SEQ: ClassVar[bool] = True

    @strawberry.field(description="What the step produced (Code, Papers).")
    async def products(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.PRODUCES, OUT)

    @strawberry.field
    async def next(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.NEXT, OUT)

    @strawberry.field
    async def previous(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.NEXT, IN)


@strawberry.federation.type(keys=["id"], description="A piece of executed code.")
class Code(GraphNode):
    label_of: ClassVar[Label] = Label.CODE
    code_id: str | None = None
    tool: str | None = None
    language: str | None = None
    code_hash: str | None = None
    exit_code: int | None = None
    status: str | None = None
    stdout_hash: str | None = None
    stderr_hash: str | None = None
    env_hash: str | None = None
    turn_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @strawberry.field(description="The step that ran the code.")
    async def produced_by(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.PRODUCES, IN)

    @strawberry.field(description="Artifact versions the code wrote.")
    async def outputs(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.PRODUCES, OUT)

    @strawberry.field(description="Artifact versions and uploaded files the code read.")
    async def inputs(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.INPUT, IN)


@strawberry.federation.type(keys=["id"], description="One version of a produced file.")
class Artifact(GraphNode):
    label_of: ClassVar[Label] = Label.ARTIFACT
    artifact_id: str | None = None
    version: int | None = None
    path: str | None = None
    logical_name: str | None = None
    media_type: str | None = None
    project_id: str | None = None
    turn_id: str | None = None
    content_hash: str | None = None

    @strawberry.field(description="The code that wrote this version.")
    async def produced_by(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.PRODUCES, IN)

    @strawberry.field(description="The previous version.")
    async def supersedes(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.SUPERSEDES, OUT)

    @strawberry.field(description="Claims stated in this version (a report).")
    async def claims(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.STATED_IN, IN)

    @strawberry.field(description="Claims this version supports.")
    async def supports(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.SUPPORTS, OUT)

    @strawberry.field(description="Code that read this version.")
    async def read_by(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.INPUT, OUT)


@strawberry.federation.type(keys=["id"], description="A literature record found in a session.")
class Paper(GraphNode):
    label_of: ClassVar[Label] = Label.PAPER
    link: str | None = None
    title: str | None = None
    identifier: str | None = None
    identifier_type: str | None = None
    year: str | None = None
    authors: list[str] | None = None
    abstract: str | None = None
    source: str | None = None
    retrieval_count: int | None = None
    first_retrieved_at: datetime | None = None
    retrieved_at: datetime | None = None

    @strawberry.field(description="Evidence extracted from the paper.")
    async def evidence(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.EXTRACTS, OUT)

    @strawberry.field(description="The searches that found the paper.")
    async def found_by(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.PRODUCES, IN)


@strawberry.federation.type(keys=["id"], description="A passage extracted from a source.")
class Evidence(GraphNode):
    label_of: ClassVar[Label] = Label.EVIDENCE
    evidence_id: str | None = None
    content: str | None = None
    source_paper_link: str | None = None
    source_file_id: str | None = None
    locator: str | None = None
    evidence_type: str | None = None
    confidence: str | None = None
    strength: str | None = None

    @strawberry.field(description="The Paper or PDF the passage comes from.")
    async def source(self, info: Info[GraphContext, None]) -> GraphNode | None:
        return await _one(info, self.id, E.EXTRACTS, IN)

    @strawberry.field(description="Claims the passage supports.")
    async def supports(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.SUPPORTS, OUT)


@strawberry.federation.type(keys=["id"], description="A cited assertion in a report.")
class Claim(GraphNode):
    label_of: ClassVar[Label] = Label.CLAIM
    claim_id: str | None = None
    content: str | None = None
    claim_type: str | None = None
    confidence: str | None = None
    locator: str | None = None
    content_hash: str | None = None

    @strawberry.field(description="Evidence, artifacts and files backing the claim.")
    async def supported_by(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.SUPPORTS, IN)

    @strawberry.field(description="Report versions stating the claim.")
    async def stated_in(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.STATED_IN, OUT)


@strawberry.federation.type(keys=["id"], description="A user-uploaded input file.")
class SourceFile(GraphNode):
    label_of: ClassVar[Label] = Label.SOURCE_FILE
    file_id: str | None = None
    name: str | None = None
    path: str | None = None
    media_type: str | None = None
    size: int | None = None
    content_hash: str | None = None
    origin: str | None = None
    uploaded_at: datetime | None = None

    @strawberry.field(description="Goals the file feeds.")
    async def feeds(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.FEEDS, OUT)

    @strawberry.field(description="Evidence extracted from the file (PDFs).")
    async def evidence(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.EXTRACTS, OUT)

    @strawberry.field(description="Code that read the file.")
    async def read_by(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.INPUT, OUT)

    @strawberry.field(description="Claims citing the file directly.")
    async def supports(self, info: Info[GraphContext, None]) -> list[GraphNode]:
        return await _related(info, self.id, E.SUPPORTS, OUT)


NODE_TYPES: dict[Label, type[GraphNode]] = {
    cls.label_of: cls
    for cls in (ResearchGoal, Task, ToolCall, Code, Artifact, Paper, Evidence, Claim, SourceFile)
}


# The objects made from records, by record and selection (``identity``): a largest subgraph's
# nodes and edges, twice.
CONVERTED: IdentityCache[Any] = IdentityCache(24_000)


def to_node(record: NodeRecord, fields: Fields = None) -> GraphNode:
    """The node of ``record`` (``GraphNode.from_record``), made once per record and
    selection."""
    node: GraphNode | None = CONVERTED.get(record, fields)
    if node is None:
        node = CONVERTED.put(record, fields, NODE_TYPES[record.label].from_record(record, fields))
    return node


NODE_TYPE_NAMES = tuple(get_object_definition(cls, strict=True).name for cls in NODE_TYPES.values())


@strawberry.type(description="A directed edge between two nodes (ids are global ids).")
class GraphEdge:
    type: EdgeType
    source: strawberry.ID
    target: strawberry.ID
    properties: JSON

    SHARED: ClassVar[bool] = True  # as a node's

    @classmethod
    def from_record(cls, edge: EdgeRecord, fields: Fields = None) -> GraphEdge:
        """The edge of ``edge``; ``properties`` only if ``fields`` is ``None`` or names it.
        Made once per record and selection, as a node (``to_node``)."""
        made: GraphEdge | None = CONVERTED.get(edge, fields)
        if made is None:
            made = CONVERTED.put(edge, fields, cls._made(edge, fields))
        return made

    @classmethod
    def _made(cls, edge: EdgeRecord, fields: Fields) -> GraphEdge:
        found = cls.__new__(cls)
        attributes = found.__dict__
        attributes["type"] = EdgeType.from_domain(edge.type)
        attributes["source"] = edge.source  # IDs are str
        attributes["target"] = edge.target
        if fields is None or "properties" in fields:
            attributes["properties"] = json_properties(edge.props)
        return found


EDGE_TYPE_NAMES = (get_object_definition(GraphEdge, strict=True).name,)
