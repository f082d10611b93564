"""Random write streams for the write model: two sessions sharing execution ids, artifact
versions and search ids, delivered in any order with duplicates (hypothesis).

Times are small multiples of ten, so different steps tie (arrival then orders them, SPEC
§3.3); observations of one step never tie (their order is the events' own). ``apply`` feeds a
delivered stream to a store through the use cases; ``graph`` reads back what the model
describes.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from resolvers import observe
from resolvers.errors import KeyOwnedByOtherSessionError
from resolvers.events import (
    ArtifactVersionRef,
    ExecutionObserved,
    FirstMessageObserved,
    PaperProduct,
    ProducedArtifact,
    ToolCallObserved,
    UploadFileObserved,
)
from tests.model.write_model import (
    Edge,
    Event,
    Found,
    Goal,
    Node,
    Run,
    Search,
    Upload,
    Version,
)

if TYPE_CHECKING:
    from resolvers.events import Event as DomainEvent
    from resolvers.records import NodeRecord
    from resolvers.store import GraphStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SESSIONS = ("A", "B")
# Each canonical link with spellings a search tool might return for it.
LINKS = {
    "https://doi.org/10.1000/k0": ("10.1000/K0", "https://doi.org/10.1000/k0/", "doi:10.1000/k0"),
    "https://arxiv.org/abs/2101.00001": ("arXiv:2101.00001v2", "https://arxiv.org/pdf/2101.00001"),
    "https://arxiv.org/abs/2101.00002": ("arXiv:2101.00002",),
    "https://x.org/a?flag": ("http://x.org/a/?flag#s", "x.org/a?flag&utm_source=feed"),
}


def _found() -> st.SearchStrategy[tuple[str, str]]:
    return st.sampled_from([(s, c) for c, spellings in LINKS.items() for s in spellings])


@st.composite
def _event(draw: st.DrawFn) -> tuple[str, ...] | Event:
    session = draw(st.sampled_from(SESSIONS))
    kind = draw(st.sampled_from(["goal", "upload", "run", "run", "search"]))
    slot = draw(st.integers(0, 3))
    if kind == "goal":
        return Goal(session)
    if kind == "upload":
        path = draw(st.sampled_from(["a.csv", "b.csv"]))
        return Upload(session, path, slot, draw(st.integers(1, 999)))
    if kind == "run":
        produces = draw(
            st.lists(st.tuples(st.sampled_from(["f0", "f1"]), st.integers(1, 2)), max_size=2)
        )
        reads = draw(
            st.lists(st.tuples(st.sampled_from(["f0", "f1"]), st.integers(1, 2)), max_size=1)
        )
        return Run(
            session,
            draw(st.sampled_from(["x0", "x1", "x2"])),
            slot,
            draw(st.sampled_from(["running", "completed", "failed"])),
            tuple(Version(a, v, f"{a}-v{v}.png") for a, v in dict.fromkeys(produces)),
            tuple(reads),
            tuple(draw(st.lists(st.sampled_from(["a.csv", "b.csv"]), max_size=1, unique=True))),
        )
    papers = draw(st.lists(_found(), max_size=3, unique_by=lambda f: f[1]))
    query = draw(st.sampled_from(["q0", "q1"]))
    return Search(session, query, slot, tuple(Found(s, c, "") for s, c in papers))


def _timed(events: list[Event]) -> list[Event]:
    """Own times: the drawn slot times ten, plus how many earlier events observed the same
    step or file (so one step's observations never tie)."""
    seen: dict[str, int] = {}
    timed: list[Event] = []
    for event in events:
        if isinstance(event, Run):
            key = f"run:{event.execution}"
            at = event.finished_at * 10 + seen.get(key, 0)
            event = Run(**{**event.__dict__, "finished_at": at})
        elif isinstance(event, Search):
            key = f"search:{event.query}"
            at = event.retrieved_at * 10 + seen.get(key, 0)
            papers = tuple(Found(f.spelling, f.canonical, f"T{at}") for f in event.papers)
            event = Search(event.session, event.query, at, papers)
        elif isinstance(event, Upload):
            key = f"upload:{event.session}:{event.path}"
            at = event.uploaded_at * 10 + seen.get(key, 0)
            event = Upload(event.session, event.path, at, event.size)
        else:
            key = ""
        seen[key] = seen.get(key, 0) + 1
        timed.append(event)
    return timed


@st.composite
def delivered(draw: st.DrawFn) -> list[Event]:
    """A stream as the network delivers it: reordered, with some events twice."""
    events = _timed(draw(st.lists(_event(), min_size=1, max_size=10)))  # type: ignore[arg-type]
    again = draw(st.lists(st.sampled_from(events), max_size=3))
    order: list[Event] = draw(st.permutations([*events, *again]))
    return order


# --- through the use cases ------------------------------------------------------------------


def _time(at: int) -> datetime:
    return T0 + timedelta(seconds=at)


def to_domain(event: Event, prefix: str) -> DomainEvent:
    """The domain event for a model event; ``prefix`` keeps examples apart in one store."""
    session = f"{prefix}{event.session}"
    if isinstance(event, Goal):
        return FirstMessageObserved(session, goal_id=f"goal:session:{session}", core_objective="g")
    if isinstance(event, Upload):
        return UploadFileObserved(
            session,
            file_id=f"source_file:session:{session}:{event.path}",
            name=event.path,
            path=event.path,
            uploaded_at=_time(event.uploaded_at),
            size=event.size,
        )
    if isinstance(event, Run):
        return ExecutionObserved(
            session,
            execution_id=f"{prefix}{event.execution}",
            turn_id="t",
            tool="python",
            code_hash="h",
            status=event.status,
            started_at=T0,
            finished_at=_time(event.finished_at),
            produced_artifacts=tuple(
                ProducedArtifact(
                    f"{prefix}{v.artifact}",
                    v.version,
                    path=v.path,
                    input_artifact_versions=tuple(
                        ArtifactVersionRef(f"{prefix}{a}", n) for a, n in event.reads
                    ),
                )
                for v in event.produces
            ),
            input_source_files=tuple(
                f"source_file:session:{session}:{p}" for p in event.reads_files
            ),
        )
    return ToolCallObserved(
        session,
        task_id=f"subtask:mcp:{prefix}{event.query}",
        turn_id="t",
        tool_name="search",
        tool_type="search",
        retrieved_at=_time(event.retrieved_at),
        products=tuple(PaperProduct(f.spelling, title=f.title) for f in event.papers),
    )


async def apply(
    store: GraphStore, events: list[Event], prefix: str, *, at_once: bool = False
) -> list[bool]:
    """Apply each event, one after the other or, ``at_once``, all sent at once (as in
    ``answers``); whether the store accepted it (``False``: refused by ownership)."""

    async def accepted(event: Event) -> bool:
        domain = to_domain(event, prefix)
        try:
            await observe.APPLY[type(domain)](store, domain)
        except KeyOwnedByOtherSessionError:
            return False
        return True

    sent = [accepted(event) for event in events]
    return list(await asyncio.gather(*sent)) if at_once else [await one for one in sent]


async def answers(
    store: GraphStore, events: list[Event], prefix: str, *, at_once: bool = False
) -> list[object]:
    """What the store answers to each event (ids with ``prefix`` removed), sent one after the
    other, or, ``at_once``, all at once as a burst of callers sends them: a store that queues
    them still applies one session's in the order they were sent (a Neo4j store several in
    one transaction)."""
    domain = [to_domain(event, prefix) for event in events]
    sent = [observe.APPLY[type(one)](store, one) for one in domain]
    found = await asyncio.gather(*sent) if at_once else [await one for one in sent]
    return [repr(answer).replace(prefix, "") for answer in found]


async def graph(store: GraphStore, prefix: str) -> tuple[dict[str, Node], set[Edge]]:
    """The stored nodes (projected as the model describes them) and edges of the example,
    ids with ``prefix`` removed."""
    ids = [i for s in SESSIONS for i in await store.session_node_ids(f"{prefix}{s}")]
    nodes = {
        _unprefix(node.id, prefix): _project(node, prefix)
        for node in await store.get_nodes(ids)
        if node is not None
    }
    edges = {
        (edge.type.value, _unprefix(edge.source, prefix), _unprefix(edge.target, prefix))
        for edge in await store.edges_among(ids)
    }
    return nodes, edges


def _unprefix(node_id: str, prefix: str) -> str:
    return node_id.replace(prefix, "")


def _seconds(text: str) -> int:
    return int((datetime.fromisoformat(text.replace("Z", "+00:00")) - T0).total_seconds())


def _project(node: NodeRecord, prefix: str) -> Node:
    found: Node = {"session": node.session_id.removeprefix(prefix)}
    label = node.label.value
    if label == "SourceFile":
        found["size"] = node.get("size")
    elif label == "Code" or (label == "ToolCall" and ":mcp:" not in node.key):
        found |= {"status": node.get("status"), "at": _seconds(str(node.get("finished_at")))}
    elif label == "ToolCall":
        found["status"] = node.get("status")
    elif label == "Artifact":
        found["path"] = node.get("path")
    elif label == "Paper":
        found |= {
            "title": node.get("title"),
            "count": node.get("retrieval_count"),
            "first": _seconds(str(node.get("first_retrieved_at"))),
            "at": _seconds(str(node.get("retrieved_at"))),
        }
    return found
