"""GraphQL surface of the research memory (SPEC §9): ``MemoryQuery`` and ``MemoryMutation``.

Merge both into the root types (``strawberry.tools.merge_types``) and pass ``MEMORY_TYPES`` to
``strawberry.Schema(types=...)``: the four record types are only reachable through the
``MemoryRecord`` interface. Resolvers read the store from ``info.context.memory`` and let domain
errors reach the schema's exception handlers (``gateway.schema.errors``).
"""

from __future__ import annotations

import datetime
from enum import Enum
from typing import Annotated, Any

import strawberry

from gateway.schema.errors import InvalidInput, MemoryGraphDisabled, MemoryGraphUnreachable
from resolvers import memory
from resolvers.errors import InvalidInputError

# --- enums --------------------------------------------------------------------------------


@strawberry.enum(description="The four kinds of memory record.")
class MemoryRecordType(Enum):
    FINDING = "finding"
    IDEATION = "ideation"
    STRATEGY = "strategy"
    PITFALL = "pitfall"

    @classmethod
    def from_domain(cls, kind: memory.MemoryRecordType) -> MemoryRecordType:
        return cls(kind.value)

    def to_domain(self) -> memory.MemoryRecordType:
        return memory.MemoryRecordType(self.value)


@strawberry.enum(description="How promising a research direction proved to be.")
class Feasibility(Enum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"
    DEAD_END = "DEAD_END"

    def to_domain(self) -> memory.Feasibility:
        return memory.Feasibility(self.value)


# --- records ------------------------------------------------------------------------------


@strawberry.interface(description="One remembered item, learnt in some session.")
class MemoryRecord:
    id: strawberry.ID = strawberry.field(description="Deterministic: the same content, same id.")
    type: MemoryRecordType
    date: datetime.date
    tags: list[str]
    project: str
    session_id: str | None


def _common(record: memory.MemoryRecordBase) -> dict[str, Any]:
    return {
        "id": strawberry.ID(record.id),
        "type": MemoryRecordType.from_domain(record.type),
        "date": record.date,
        "tags": list(record.tags),
        "project": record.project,
        "session_id": record.session_id,
    }


@strawberry.type(description="What was found, why it matters, and where it comes from.")
class Finding(MemoryRecord):
    gene: str | None
    disease: str | None
    finding: str
    significance: str
    sources: list[str]

    @classmethod
    def from_record(cls, record: memory.FindingRecord) -> Finding:
        return cls(
            **_common(record),
            gene=record.gene,
            disease=record.disease,
            finding=record.finding,
            significance=record.significance,
            sources=list(record.sources),
        )


@strawberry.type(description="A verdict on a research direction.")
class Ideation(MemoryRecord):
    direction: str
    feasibility: Feasibility
    reason: str

    @classmethod
    def from_record(cls, record: memory.IdeationRecord) -> Ideation:
        return cls(
            **_common(record),
            direction=record.direction,
            feasibility=Feasibility(record.feasibility.value),
            reason=record.reason,
        )


@strawberry.type(description="An approach to a task that worked (or did not), with its tools.")
class Strategy(MemoryRecord):
    task: str
    strategy: str
    outcome: str
    tools: list[str]

    @classmethod
    def from_record(cls, record: memory.StrategyRecord) -> Strategy:
        return cls(
            **_common(record),
            task=record.task,
            strategy=record.strategy,
            outcome=record.outcome,
            tools=list(record.tools),
        )


@strawberry.type(description="Something that went wrong, in which context, and the fix.")
class Pitfall(MemoryRecord):
    context: str
    issue: str
    fix: str

    @classmethod
    def from_record(cls, record: memory.PitfallRecord) -> Pitfall:
        return cls(**_common(record), context=record.context, issue=record.issue, fix=record.fix)


MEMORY_TYPES: tuple[type, ...] = (Finding, Ideation, Strategy, Pitfall)


def memory_record(record: memory.MemoryRecord) -> MemoryRecord:
    """The GraphQL object of a domain record."""
    match record:
        case memory.FindingRecord():
            return Finding.from_record(record)
        case memory.IdeationRecord():
            return Ideation.from_record(record)
        case memory.StrategyRecord():
            return Strategy.from_record(record)
        case memory.PitfallRecord():
            return Pitfall.from_record(record)


# --- results ------------------------------------------------------------------------------


@strawberry.type
class RecallGroup:
    type: MemoryRecordType
    records: list[MemoryRecord] = strawberry.field(description="The best matches first.")
    total: int = strawberry.field(description="Every match of this type, shown or not.")

    @classmethod
    def from_record(cls, group: memory.RecallGroup) -> RecallGroup:
        records = [memory_record(record) for record in group.records]
        return cls(
            type=MemoryRecordType.from_domain(group.type), records=records, total=group.total
        )


@strawberry.type(description="Records matching a topic, one group per requested type.")
class Recall:
    groups: list[RecallGroup]

    @classmethod
    def from_record(cls, found: memory.Recall) -> Recall:
        return cls(groups=[RecallGroup.from_record(group) for group in found.groups])


@strawberry.type(description="The most recent strategies and pitfalls, newest first.")
class Lessons:
    records: list[MemoryRecord]


@strawberry.type
class MemoryTypeCount:
    type: MemoryRecordType
    count: int


@strawberry.type
class MemoryProjectCount:
    project: str
    count: int


@strawberry.type
class MemoryTagCount:
    tag: str
    count: int


@strawberry.type(description="What the memory holds.")
class MemoryStats:
    total: int
    by_type: list[MemoryTypeCount]
    top_projects: list[MemoryProjectCount] = strawberry.field(description="Most entries first.")
    top_tags: list[MemoryTagCount] = strawberry.field(description="Most used first.")
    size_bytes: int

    @classmethod
    def from_record(cls, stats: memory.MemoryStats) -> MemoryStats:
        return cls(
            total=stats.total,
            by_type=[
                MemoryTypeCount(type=MemoryRecordType.from_domain(kind), count=count)
                for kind, count in stats.by_type
            ],
            top_projects=[MemoryProjectCount(project=p, count=n) for p, n in stats.top_projects],
            top_tags=[MemoryTagCount(tag=tag, count=n) for tag, n in stats.top_tags],
            size_bytes=stats.size_bytes,
        )


@strawberry.type(description="The outcome of a compaction; `backup` is where the original went.")
class MemoryCompaction:
    before: int
    after: int
    compacted: bool = strawberry.field(description="False when nothing had to be dropped.")
    backup: str | None

    @classmethod
    def from_record(cls, report: memory.CompactionReport) -> MemoryCompaction:
        return cls(
            before=report.before,
            after=report.after,
            compacted=report.compacted,
            backup=report.backup,
        )


@strawberry.type(description="The stored record (the existing one when it was already known).")
class MemoryRecorded:
    record: MemoryRecord


@strawberry.type(description="The paragraph a research session starts with.")
class SessionGreeting:
    text: str


_Unavailable = MemoryGraphDisabled | MemoryGraphUnreachable

RecallResult = Annotated[Recall | _Unavailable | InvalidInput, strawberry.union("RecallResult")]
LessonsResult = Annotated[Lessons | _Unavailable | InvalidInput, strawberry.union("LessonsResult")]
MemoryStatsResult = Annotated[MemoryStats | _Unavailable, strawberry.union("MemoryStatsResult")]
SessionGreetingResult = Annotated[
    SessionGreeting | _Unavailable, strawberry.union("SessionGreetingResult")
]
MemoryRecordResult = Annotated[
    MemoryRecorded | _Unavailable | InvalidInput, strawberry.union("MemoryRecordResult")
]
MemoryCompactionResult = Annotated[
    MemoryCompaction | _Unavailable, strawberry.union("MemoryCompactionResult")
]


# --- inputs -------------------------------------------------------------------------------


@strawberry.input
class _MemoryCommonInput:
    project: str
    tags: list[str] = strawberry.field(default_factory=list)
    date: datetime.date | None = strawberry.field(default=None, description="Default: today.")
    session_id: str | None = None

    def _common(self) -> dict[str, Any]:
        return {
            "date": self.date or datetime.date.today(),
            "project": self.project,
            "tags": tuple(self.tags),
            "session_id": self.session_id,
        }


@strawberry.input
class FindingInput(_MemoryCommonInput):
    finding: str
    significance: str
    gene: str | None = None
    disease: str | None = None
    sources: list[str] = strawberry.field(default_factory=list)

    def to_record(self) -> memory.FindingRecord:
        return memory.FindingRecord(
            **self._common(),
            finding=self.finding,
            significance=self.significance,
            gene=self.gene,
            disease=self.disease,
            sources=tuple(self.sources),
        )


@strawberry.input
class IdeationInput(_MemoryCommonInput):
    direction: str
    feasibility: Feasibility
    reason: str

    def to_record(self) -> memory.IdeationRecord:
        return memory.IdeationRecord(
            **self._common(),
            direction=self.direction,
            feasibility=self.feasibility.to_domain(),
            reason=self.reason,
        )


@strawberry.input
class StrategyInput(_MemoryCommonInput):
    task: str
    strategy: str
    outcome: str
    tools: list[str] = strawberry.field(default_factory=list)

    def to_record(self) -> memory.StrategyRecord:
        return memory.StrategyRecord(
            **self._common(),
            task=self.task,
            strategy=self.strategy,
            outcome=self.outcome,
            tools=tuple(self.tools),
        )


@strawberry.input
class PitfallInput(_MemoryCommonInput):
    context: str
    issue: str
    fix: str

    def to_record(self) -> memory.PitfallRecord:
        return memory.PitfallRecord(
            **self._common(), context=self.context, issue=self.issue, fix=self.fix
        )


@strawberry.input(one_of=True, description="Exactly one kind of record.")
class MemoryRecordInput:
    finding: FindingInput | None = strawberry.UNSET
    ideation: IdeationInput | None = strawberry.UNSET
    strategy: StrategyInput | None = strawberry.UNSET
    pitfall: PitfallInput | None = strawberry.UNSET

    def to_record(self) -> memory.MemoryRecord:
        member = self.finding or self.ideation or self.strategy or self.pitfall
        if not member:  # @oneOf validation makes this unreachable
            raise InvalidInputError("input", "set exactly one of its fields")
        return member.to_record()


# --- root fields --------------------------------------------------------------------------


@strawberry.type
class MemoryQuery:
    @strawberry.field
    async def recall(
        self,
        info: strawberry.Info,
        topic: str,
        types: list[MemoryRecordType] | None = None,
        limit_per_type: int | None = memory.DEFAULT_LIMIT_PER_TYPE,
    ) -> RecallResult:
        kinds = None if types is None else [kind.to_domain() for kind in types]
        limit = memory.DEFAULT_LIMIT_PER_TYPE if limit_per_type is None else limit_per_type
        found = await memory.recall(info.context.memory, topic, kinds, limit)
        return Recall.from_record(found)

    @strawberry.field
    async def lessons(
        self, info: strawberry.Info, limit: int | None = memory.DEFAULT_LESSONS
    ) -> LessonsResult:
        count = memory.DEFAULT_LESSONS if limit is None else limit
        records = await memory.lessons(info.context.memory, count)
        return Lessons(records=[memory_record(record) for record in records])

    @strawberry.field
    async def memory_stats(self, info: strawberry.Info) -> MemoryStatsResult:
        return MemoryStats.from_record(await memory.memory_stats(info.context.memory))

    @strawberry.field
    async def session_greeting(self, info: strawberry.Info) -> SessionGreetingResult:
        return SessionGreeting(text=await memory.session_greeting(info.context.memory))


@strawberry.type
class MemoryMutation:
    @strawberry.mutation
    async def record_memory(
        self, info: strawberry.Info, input: MemoryRecordInput
    ) -> MemoryRecordResult:
        record = await memory.record_memory(info.context.memory, input.to_record())
        return MemoryRecorded(record=memory_record(record))

    @strawberry.mutation
    async def compact_memory(self, info: strawberry.Info) -> MemoryCompactionResult:
        report = await memory.compact_memory(info.context.memory, datetime.date.today())
        return MemoryCompaction.from_record(report)
