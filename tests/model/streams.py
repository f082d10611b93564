"""Random sessions as event streams (hypothesis), and applying them through the use cases.

A stream is what the agent control plane would send for one or two sessions: an optional
first message (the goal), uploads (CSV and PDF), main-chain executions and searches, subagents
whose scope is mirrored, mirrored late or never mirrored, their children, inputs read from
earlier versions, from an earlier session and from uploads, evidence from papers and PDFs,
claims citing evidence, artifacts and files, reports, and links of claims to reports. Times
are small integers (ties happen). ``streams()`` then delivers it as the network would: some
events late, some twice, some in another order.

Events that depend on server-assigned ids (a claim citing evidence) hold an ordinal: the
``n``-th evidence declared so far when the event is applied (``Cite``); a declare the session
cannot satisfy yet is rejected, as it would be for the real caller, and the stream goes on.

Reusable: ``sessions()`` gives the in-order stream, ``streams()`` the delivered one;
``apply()`` feeds either to a store and returns what it recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from resolvers import declare, observe
from resolvers.errors import DomainError
from resolvers.events import (
    Alias,
    ArtifactAlias,
    ArtifactVersionRef,
    ClaimDeclared,
    ClaimsLinked,
    Event,
    EvidenceDeclared,
    ExecutionObserved,
    FirstMessageObserved,
    PaperProduct,
    ProducedArtifact,
    SubagentObserved,
    ToolCallObserved,
    UploadFileObserved,
)

if TYPE_CHECKING:
    from resolvers.store import GraphStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SESSION = "s1"
EARLIER = "s0"  # a session whose artifact the main session reads
LINKS = ("https://doi.org/10.1/a", "https://example.org/b", "arXiv:2401.00001", "PMID:42")
FILES = ("data.csv", "paper.pdf", "notes.txt")


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def file_id(path: str, session: str = SESSION) -> str:
    return f"source_file:session:{session}:{path}"


@dataclass(frozen=True, slots=True)
class Cite:
    """A claim's citations: evidence by ordinal, artifact versions, source files."""

    evidence: tuple[int, ...] = ()
    artifacts: tuple[tuple[str, int], ...] = ()
    files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClaimOp:
    session_id: str
    content: str
    cite: Cite
    report: tuple[str, int] | None


@dataclass(frozen=True, slots=True)
class LinkOp:
    """Link the claims declared so far (by ordinal) to a report version."""

    session_id: str
    claims: tuple[int, ...]
    report: tuple[str, int]


Op = Event | ClaimOp | LinkOp


@dataclass(slots=True)
class Applied:
    """What applying a stream recorded: the ids the store assigned, the sessions touched."""

    evidence: list[str] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)
    rejected: int = 0


async def apply(store: GraphStore, ops: tuple[Op, ...]) -> Applied:
    """Send every op through its use case, in order; refused declares are counted."""
    applied = Applied()
    for op in ops:
        applied.sessions.add(op.session_id)
        try:
            await _send(store, op, applied)
        except DomainError:
            applied.rejected += 1
    return applied


async def _send(store: GraphStore, op: Op, applied: Applied) -> None:
    if isinstance(op, ClaimOp):
        event = ClaimDeclared(
            session_id=op.session_id,
            content=op.content,
            claim_type="finding",
            confidence="high",
            locator="§1",
            cites_evidence=tuple(
                Alias(f"e{i}", applied.evidence[n % len(applied.evidence)].partition(":")[2])
                for i, n in enumerate(op.cite.evidence)
                if applied.evidence
            ),
            cites_artifacts=tuple(
                ArtifactAlias(f"a{i}", a, v) for i, (a, v) in enumerate(op.cite.artifacts)
            ),
            cites_source_files=tuple(
                Alias(f"f{i}", file_id(f, op.session_id)) for i, f in enumerate(op.cite.files)
            ),
            artifact_id=op.report[0] if op.report else None,
            artifact_version=op.report[1] if op.report else None,
        )
        applied.claims.append((await declare.declare_claim(store, event)).claim.id)
    elif isinstance(op, LinkOp):
        ids = tuple(
            applied.claims[n % len(applied.claims)].partition(":")[2]
            for n in op.claims
            if applied.claims
        )
        linked = ClaimsLinked(
            session_id=op.session_id,
            artifact_id=op.report[0],
            artifact_version=op.report[1],
            claim_ids=ids,
        )
        await declare.link_claims_to_report(store, linked, wait_seconds=0)
    elif isinstance(op, EvidenceDeclared):
        applied.evidence.append((await declare.declare_evidence(store, op)).evidence.id)
    elif isinstance(op, UploadFileObserved):
        await observe.observe_upload_file(store, op)
    elif isinstance(op, FirstMessageObserved):
        await observe.observe_session_first_message(store, op)
    elif isinstance(op, ExecutionObserved):
        await observe.observe_execution(store, op)
    elif isinstance(op, ToolCallObserved):
        await observe.observe_tool_call(store, op)
    elif isinstance(op, SubagentObserved):
        await observe.observe_subagent(store, op)
    else:
        raise TypeError(op)


# --- generation ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Plan:
    """The session being drawn: what exists so far, so later events can refer to it."""

    draw: st.DrawFn
    ops: list[Op] = field(default_factory=list)
    artifacts: dict[str, int] = field(default_factory=dict)  # artifact id -> latest version
    papers: list[str] = field(default_factory=list)
    uploads: list[str] = field(default_factory=list)
    counter: int = 0

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def time(self) -> int:
        return self.draw(st.integers(0, 30))

    def produced(self) -> tuple[ProducedArtifact, ...]:
        products = []
        for _ in range(self.draw(st.integers(0, 2))):
            known = sorted(self.artifacts)
            if self.draw(st.booleans()) and known:
                artifact = self.draw(st.sampled_from(known))  # a new version of it
            else:
                artifact = self.name("art")
            version = self.artifacts.get(artifact, 0) + 1
            reads = self.inputs()
            self.artifacts[artifact] = version
            products.append(
                ProducedArtifact(
                    artifact, version, path=f"{artifact}.csv", input_artifact_versions=reads
                )
            )
        return tuple(products)

    def inputs(self) -> tuple[ArtifactVersionRef, ...]:
        choices = [(a, v) for a, latest in self.artifacts.items() for v in range(1, latest + 1)]
        choices.append(("earlier", 1))
        picked = self.draw(st.lists(st.sampled_from(choices), max_size=2, unique=True))
        return tuple(ArtifactVersionRef(a, v) for a, v in picked)

    def execution(self, scope: str | None) -> None:
        finished = self.time()
        files = self.draw(st.lists(st.sampled_from(FILES), max_size=2, unique=True))
        self.ops.append(
            ExecutionObserved(
                session_id=SESSION,
                execution_id=self.name("x"),
                turn_id="t1",
                tool="run_python",
                code_hash="h",
                status=self.draw(st.sampled_from(["succeeded", "failed"])),
                started_at=at(max(finished - 1, 0)),
                finished_at=at(finished),
                produced_artifacts=self.produced(),
                input_source_files=tuple(file_id(f) for f in files),
                parent_subagent_id=scope,
            )
        )

    def search(self, scope: str | None) -> None:
        links = self.draw(st.lists(st.sampled_from(LINKS), max_size=3))
        self.papers.extend(links)
        retrieved = self.draw(st.none() | st.integers(0, 30).map(at))
        self.ops.append(
            ToolCallObserved(
                session_id=SESSION,
                task_id=f"subtask:mcp:{self.name('q')}",
                turn_id="t1",
                tool_name="search",
                tool_type="search",
                retrieved_at=retrieved,
                products=tuple(PaperProduct(link, title=f"paper {link}") for link in links),
                parent_subagent_id=scope,
            )
        )

    def subagent(self) -> None:
        subagent_id = self.name("sub")
        started = self.time()
        mirrored = self.draw(st.sampled_from(["start", "start+end", "never"]))
        scope_events: list[Op] = []
        if mirrored != "never":
            scope_events.append(self._subagent_event(subagent_id, started, "running"))
        if mirrored == "start+end":
            scope_events.append(self._subagent_event(subagent_id, started, "completed"))
        children_first = self.draw(st.booleans())
        if not children_first:
            self.ops.extend(scope_events)
        for _ in range(self.draw(st.integers(1, 3))):
            self.step(subagent_id)
        if children_first:
            self.ops.extend(scope_events)

    def _subagent_event(self, subagent_id: str, started: int, status: str) -> SubagentObserved:
        done = status != "running"
        return SubagentObserved(
            session_id=SESSION,
            subagent_id=subagent_id,
            turn_id="t1",
            objective=f"objective {subagent_id}",
            started_at=at(started),
            status=status,
            finished_at=at(started + 5) if done else None,
            summary="done" if done else None,
        )

    def step(self, scope: str | None) -> None:
        if self.draw(st.integers(0, 2)) == 0:
            self.search(scope)
        else:
            self.execution(scope)

    def upload(self) -> None:
        path = self.draw(st.sampled_from(FILES))
        self.uploads.append(path)
        self.ops.append(
            UploadFileObserved(
                session_id=SESSION,
                file_id=file_id(path),
                name=path,
                path=path,
                media_type="application/pdf" if path.endswith(".pdf") else "text/csv",
            )
        )

    def evidence(self) -> None:
        from_pdf = self.draw(st.booleans()) if "paper.pdf" in self.uploads else False
        links = sorted(set(self.papers)) or list(LINKS)
        self.ops.append(
            EvidenceDeclared(
                session_id=SESSION,
                content=self.name("passage "),
                locator="p. 1",
                evidence_type="quote",
                confidence="high",
                strength="strong",
                source_paper_link=None if from_pdf else self.draw(st.sampled_from(links)),
                source_file_id=file_id("paper.pdf") if from_pdf else None,
            )
        )

    def report(self) -> tuple[str, int] | None:
        known = [(a, v) for a, latest in self.artifacts.items() for v in range(1, latest + 1)]
        return self.draw(st.none() | st.sampled_from(known)) if known else None

    def claim(self) -> None:
        versions = [(a, v) for a, latest in self.artifacts.items() for v in range(1, latest + 1)]
        cite = Cite(
            evidence=tuple(self.draw(st.lists(st.integers(0, 5), max_size=2))),
            artifacts=tuple(self.draw(st.lists(st.sampled_from(versions), max_size=1)))
            if versions
            else (),
            files=tuple(self.draw(st.lists(st.sampled_from(FILES), max_size=1))),
        )
        self.ops.append(ClaimOp(SESSION, self.name("claim "), cite, self.report()))

    def link(self) -> None:
        report = self.report()
        if report is not None:
            claims = tuple(self.draw(st.lists(st.integers(0, 5), min_size=1, max_size=2)))
            self.ops.append(LinkOp(SESSION, claims, report))


def _earlier_session() -> list[Op]:
    """A session before this one that made the artifact ``earlier#v1``."""
    product = ProducedArtifact("earlier", 1, path="earlier.csv")
    return [
        FirstMessageObserved(
            session_id=EARLIER, goal_id=f"goal:session:{EARLIER}", core_objective="old"
        ),
        ExecutionObserved(
            session_id=EARLIER,
            execution_id="old-x",
            turn_id="t0",
            tool="run_python",
            code_hash="h",
            status="succeeded",
            started_at=at(0),
            finished_at=at(1),
            produced_artifacts=(product,),
        ),
    ]


@st.composite
def sessions(draw: st.DrawFn, max_steps: int = 12) -> tuple[Op, ...]:
    """One session's events in the order they happened (after an optional earlier session)."""
    plan = _Plan(draw)
    if draw(st.booleans()):
        plan.ops.extend(_earlier_session())
    if draw(st.integers(0, 3)) > 0:  # a quarter of the sessions never get their goal
        plan.ops.append(
            FirstMessageObserved(
                session_id=SESSION, goal_id=f"goal:session:{SESSION}", core_objective="goal"
            )
        )
    actions = {
        "upload": plan.upload,
        "step": lambda: plan.step(None),
        "subagent": plan.subagent,
        "evidence": plan.evidence,
        "claim": plan.claim,
        "link": plan.link,
    }
    weighted = ["step", "step", "step", "subagent", *sorted(actions)]
    for action in draw(st.lists(st.sampled_from(weighted), min_size=2, max_size=max_steps)):
        actions[action]()
    return tuple(plan.ops)


@st.composite
def streams(draw: st.DrawFn, max_steps: int = 12) -> tuple[Op, ...]:
    """A session as delivered: some events late, some twice, some swapped with a neighbour."""
    ops = list(draw(sessions(max_steps)))
    if not ops:
        return ()
    indices = st.integers(0, len(ops) - 1)
    for index in draw(st.lists(indices, max_size=3)):  # duplicated, possibly much later
        ops.insert(draw(st.integers(index, len(ops))), _resent(ops[index]))
    for _ in range(draw(st.integers(0, 4))):  # delivered out of order
        i, j = draw(indices), draw(indices)
        ops[i], ops[j] = ops[j], ops[i]
    late = draw(st.lists(indices, max_size=2, unique=True))
    kept = [op for k, op in enumerate(ops) if k not in late]
    return (*kept, *(ops[k] for k in late))


def _resent(op: Op) -> Op:
    """The same event sent again (a retry): same content, a later receive time."""
    if isinstance(op, Event):
        return replace(op, received_at=op.received_at + timedelta(seconds=1))
    return op
