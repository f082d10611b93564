"""Deterministic, realistic research sessions for the benchmark.

A session, from a seed and an index: uploads (some before the first message), the research goal,
then steps — executions producing versioned artifacts and reading earlier versions and uploads,
literature searches returning Papers (~20% of the links were already found, often spelled
differently), subagent scopes with children — evidence extracted from Papers and PDFs, claims
citing evidence, artifacts and files, and a report artifact whose claims are linked with
``linkClaimsToReport``. Neighbouring observe events are swapped now and then, so the stream
arrives partly out of order the way a busy control plane delivers it.

Each write is a ``resolvers.events`` object wrapped in a ``bench.mutations.Mutation``: sent over
HTTP as the GraphQL mutation that builds that event, or applied in-process through the same use
case (``bench.preload``); ``bench.check`` verifies that both paths build the same graph.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from bench import vocabulary as words
from bench.mutations import Mutation
from resolvers.declare import _derived_id  # the ids the server derives for declares
from resolvers.events import (
    Alias,
    ArtifactAlias,
    ArtifactDeclared,
    ArtifactVersionRef,
    ClaimDeclared,
    ClaimsLinked,
    Event,
    EvidenceDeclared,
    ExecutionObserved,
    FirstMessageObserved,
    ProducedArtifact,
    SubagentObserved,
    ToolCallObserved,
    UploadFileObserved,
)
from resolvers.links import normalize_link
from resolvers.records import PDF_MEDIA_TYPE, Label, artifact_key, node_id

if TYPE_CHECKING:
    from collections.abc import Iterator

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DUPLICATE_SHARE = 0.2
SWAP_SHARE = 0.08
SESSION_STEPS = 100


_SWAPPABLE = (
    UploadFileObserved,
    FirstMessageObserved,
    ExecutionObserved,
    ToolCallObserved,
    SubagentObserved,
    ArtifactDeclared,
)


@dataclass(frozen=True, slots=True)
class Probes:
    """Global ids of nodes the read benchmark starts from; every session has each kind."""

    step: str
    artifact: str
    child_artifact: str
    report: str
    claim: str
    evidence: str
    paper: str
    search_term: str


@dataclass(frozen=True, slots=True)
class Session:
    session_id: str
    mutations: tuple[Mutation, ...]
    probes: Probes


def generate_session(seed: int, index: int, steps: int = SESSION_STEPS) -> Session:
    """The ``index``-th session of ``seed``: the same arguments always give the same session."""
    return _Builder(seed, index).build(steps)


def generate_sessions(seed: int, steps: int = SESSION_STEPS, start: int = 0) -> Iterator[Session]:
    index = start
    while True:
        yield generate_session(seed, index, steps)
        index += 1


class _Builder:
    """Writes one session's events in the order an agent produces them."""

    def __init__(self, seed: int, index: int) -> None:
        self.rng = random.Random(f"{seed}:{index}")
        self.session = f"bench-{seed}-{index:06d}"
        self.clock = T0 + timedelta(hours=index % 100_000)
        self.step = 0
        self.counter = 0
        self.out: list[Mutation] = []
        self.gene = words.pick_gene(self.rng)
        self.links: list[str] = []
        self.artifacts: dict[str, int] = {}
        self.uploads: list[tuple[str, str]] = []
        self.evidence: list[str] = []
        self.claims: list[str] = []
        self.probe: dict[str, str] = {}
        self._last_top_step = ""  # the latest step of the main chain

    def build(self, steps: int) -> Session:
        self._uploads(self.rng.randint(1, 2))
        self._first_message()
        self._uploads(self.rng.randint(1, 2))
        self._scripted_start()
        while self.step < steps:
            self._random_step()
        self.probe.setdefault("step", self._last_top_step)
        self._report()
        probes = Probes(search_term=self.gene.lower(), **self.probe)
        return Session(self.session, tuple(_partly_out_of_order(self.out, self.rng)), probes)

    # --- helpers ----------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        self.out.append(Mutation(event, self.step))

    def _next_id(self, kind: str) -> str:
        self.counter += 1
        return f"{self.session}-{kind}-{self.counter}"

    def _tick(self, low: int = 5, high: int = 90) -> datetime:
        self.clock += timedelta(seconds=self.rng.randint(low, high))
        return self.clock

    # --- uploads and the goal ---------------------------------------------------------

    def _uploads(self, count: int) -> None:
        for _ in range(count):
            pdf = not any(media == PDF_MEDIA_TYPE for _, media in self.uploads)
            media = PDF_MEDIA_TYPE if pdf and self.rng.random() < 0.6 else "text/csv"
            path = f"data/{self._next_id('upload')}.{'pdf' if media == PDF_MEDIA_TYPE else 'csv'}"
            file_id = f"source_file:session:{self.session}:{path}"
            self.uploads.append((file_id, media))
            event = UploadFileObserved(
                session_id=self.session,
                file_id=file_id,
                name=path.rsplit("/", 1)[-1],
                path=path,
                uploaded_at=self._tick(),
                media_type=media,
                size=self.rng.randint(10_000, 5_000_000),
                content_hash=f"sha256:{self.rng.getrandbits(128):032x}",
            )
            self._emit(event)

    def _first_message(self) -> None:
        event = FirstMessageObserved(
            session_id=self.session,
            goal_id=f"goal:session:{self.session}",
            core_objective=words.objective(self.rng, self.gene),
            domain="oncology",
            topic_scope=(self.gene, words.pick_disease(self.rng)),
            sent_at=self._tick(),
        )
        self._emit(event)

    # --- steps ------------------------------------------------------------------------

    def _scripted_start(self) -> None:
        """Make sure every session holds each probe: search → evidence → claim, an artifact
        made from an earlier version at the top level and one inside a subagent scope."""
        papers = self._search()
        self.probe["paper"] = self._paper_id(papers[0])
        self.probe["evidence"] = node_id(Label.EVIDENCE, self._evidence_from_paper(papers[0]))
        self._execution(probe="artifact")
        self.probe["claim"] = node_id(Label.CLAIM, self._claim())
        self._subagent(first_child_probe="child_artifact")

    def _random_step(self) -> None:
        roll = self.rng.random()
        if roll < 0.5:
            self._execution()
        elif roll < 0.9:
            papers = self._search()
            for link in papers[: self.rng.choice((0, 0, 1, 1, 2))]:
                self._evidence_from_paper(link)
        else:
            self._subagent()
        if self.step >= 40 and "step" not in self.probe:
            self.probe["step"] = self._last_top_step
        if self.evidence and self.rng.random() < 0.15:
            self._claim()

    def _execution(self, parent: str | None = None, *, probe: str | None = None) -> str:
        self.step += 1
        execution_id = self._next_id("exec")
        finished = self._tick()
        produced = self._produced(with_input=probe is not None)
        declared_later = produced[-1:] if probe is None and self.rng.random() < 0.1 else []
        inputs = tuple(f for f, media in self.uploads if media != PDF_MEDIA_TYPE)
        event = ExecutionObserved(
            session_id=self.session,
            execution_id=execution_id,
            turn_id=f"turn-{self.step // 3}",
            tool="run_python",
            code_hash=f"sha256:{self.rng.getrandbits(128):032x}",
            status=self.rng.choice(("succeeded",) * 9 + ("failed",)),
            started_at=finished - timedelta(seconds=self.rng.randint(1, 30)),
            finished_at=finished,
            language="python",
            exit_code=0,
            produced_artifacts=tuple(a for a in produced if a not in declared_later),
            stdout_hash=f"sha256:{self.rng.getrandbits(64):016x}",
            parent_subagent_id=parent,
            input_source_files=inputs[:1] if inputs and self.rng.random() < 0.2 else (),
        )
        self._emit(event)
        for artifact in declared_later:
            self._emit(ArtifactDeclared(self.session, execution_id=execution_id, artifact=artifact))
        if parent is None:
            self._last_top_step = node_id(Label.TOOL_CALL, f"subtask:{execution_id}")
        if probe is not None:
            self.probe[probe] = self._artifact_node(produced[0])
        return execution_id

    def _produced(self, with_input: bool) -> list[ProducedArtifact]:
        count = 1 if with_input else self.rng.choice((0, 1, 1, 1, 2))
        return [self._artifact(with_input) for _ in range(count)]

    def _artifact(self, with_input: bool) -> ProducedArtifact:
        existing = list(self.artifacts)
        if existing and self.rng.random() < 0.4:
            artifact_id = self.rng.choice(existing)
        else:
            artifact_id = self._next_id(self.rng.choice(("fig", "table", "model")))
        version = self.artifacts.get(artifact_id, 0) + 1
        reads = self.rng.sample(existing, min(len(existing), self.rng.choice((0, 1, 1, 2))))
        if with_input and not reads and existing:
            reads = existing[:1]
        refs = tuple(ArtifactVersionRef(a, self.artifacts[a]) for a in reads)
        self.artifacts[artifact_id] = version
        return ProducedArtifact(
            artifact_id=artifact_id,
            version=version,
            path=f"outputs/{artifact_id}.png",
            media_type="image/png",
            logical_name=words.artifact_name(self.rng, self.gene),
            turn_id=f"turn-{self.step // 3}",
            content_hash=f"sha256:{self.rng.getrandbits(128):032x}",
            input_artifact_versions=refs,
        )

    def _artifact_node(self, artifact: ProducedArtifact) -> str:
        return node_id(Label.ARTIFACT, artifact_key(artifact.artifact_id, artifact.version))

    def _search(self, parent: str | None = None) -> list[str]:
        self.step += 1
        task_id = f"subtask:search:{self._next_id('search')}"
        links = self._links(self.rng.randint(5, 10))
        products = tuple(words.paper(self.rng, link, self.gene) for link in links)
        event = ToolCallObserved(
            session_id=self.session,
            task_id=task_id,
            turn_id=f"turn-{self.step // 3}",
            tool_name=self.rng.choice(("mcp__europe-pmc__search", "web_search", "pubmed_fetch")),
            tool_type="search",
            source="europe-pmc",
            retrieved_at=self._tick(),
            products=products,
            parent_subagent_id=parent,
        )
        self._emit(event)
        if parent is None:
            self._last_top_step = node_id(Label.TOOL_CALL, task_id)
        return links

    def _links(self, count: int) -> list[str]:
        """``count`` links, ~20% of them already found in this session (respelled)."""
        links: list[str] = []
        for _ in range(count):
            if self.links and self.rng.random() < DUPLICATE_SHARE:
                links.append(words.respell(self.rng, self.rng.choice(self.links)))
            else:
                link = words.new_link(self.rng)
                self.links.append(link)
                links.append(link)
        return links

    def _paper_id(self, link: str) -> str:
        return node_id(Label.PAPER, normalize_link(link), self.session)

    def _subagent(self, *, first_child_probe: str | None = None) -> None:
        subagent_id = self._next_id("sub")
        started = self._tick()
        start = self._subagent_event(subagent_id, started, "running")
        self.step += 1
        self._emit(start)
        self._execution(subagent_id, probe=first_child_probe)
        for _ in range(self.rng.randint(1, 4)):
            if self.rng.random() < 0.5:
                self._execution(subagent_id)
            else:
                self._search(subagent_id)
        end = dataclasses.replace(
            start, status="completed", finished_at=self._tick(), summary="Scope finished."
        )
        self._emit(end)

    def _subagent_event(self, subagent_id: str, started: datetime, status: str) -> SubagentObserved:
        return SubagentObserved(
            session_id=self.session,
            subagent_id=subagent_id,
            turn_id=f"turn-{self.step // 3}",
            objective=words.objective(self.rng, self.gene),
            started_at=started,
            status=status,
            subagent_type=self.rng.choice(("literature", "analysis")),
        )

    # --- declares ---------------------------------------------------------------------

    def _evidence_from_paper(self, link: str) -> str:
        return self._evidence(self._paper_id(link), paper_link=link)

    def _evidence(
        self, source_id: str, *, paper_link: str | None = None, file_id: str | None = None
    ) -> str:
        content = words.sentence(self.rng, self.gene)
        locator = f"p. {self.rng.randint(1, 30)}, ¶{self._next_id('loc').rsplit('-', 1)[-1]}"
        event = EvidenceDeclared(
            session_id=self.session,
            content=content,
            locator=locator,
            evidence_type=self.rng.choice(("quote", "figure", "table")),
            confidence="high",
            strength=self.rng.choice(("strong", "moderate")),
            source_paper_link=paper_link,
            source_file_id=file_id,
        )
        self._emit(event)
        evidence_id = _derived_id(self.session, source_id, content, locator)
        self.evidence.append(evidence_id)
        return evidence_id

    def _claim(self, report: ProducedArtifact | None = None) -> str:
        cited = self.rng.sample(self.evidence, min(len(self.evidence), self.rng.randint(1, 3)))
        artifacts = self.rng.sample(list(self.artifacts), min(len(self.artifacts), 1))
        files = [f for f, media in self.uploads if media != PDF_MEDIA_TYPE][:1]
        cites_files = files if self.rng.random() < 0.2 else []
        event = ClaimDeclared(
            session_id=self.session,
            content=words.sentence(self.rng, self.gene),
            claim_type="finding",
            confidence=self.rng.choice(("high", "medium")),
            locator=f"§{self._next_id('claim').rsplit('-', 1)[-1]}",
            cites_evidence=tuple(Alias(f"e{i}", e) for i, e in enumerate(cited)),
            cites_artifacts=tuple(
                ArtifactAlias(f"a{i}", a, self.artifacts[a]) for i, a in enumerate(artifacts)
            ),
            cites_source_files=tuple(Alias(f"f{i}", f) for i, f in enumerate(cites_files)),
            artifact_id=report.artifact_id if report else None,
            artifact_version=report.version if report else None,
        )
        self._emit(event)
        targets = [node_id(Label.EVIDENCE, e) for e in cited]
        targets += [node_id(Label.ARTIFACT, artifact_key(a, self.artifacts[a])) for a in artifacts]
        targets += [node_id(Label.SOURCE_FILE, f) for f in cites_files]
        claim_id = _derived_id(
            self.session, event.content, event.claim_type, event.locator, *sorted(set(targets))
        )
        self.claims.append(claim_id)
        return claim_id

    def _report(self) -> None:
        pdfs = [f for f, media in self.uploads if media == PDF_MEDIA_TYPE]
        if pdfs:
            self._evidence(node_id(Label.SOURCE_FILE, pdfs[0]), file_id=pdfs[0])
        self._execution()
        for _ in range(self.rng.randint(2, 4)):
            self._claim()
        report = ProducedArtifact(
            artifact_id=self._next_id("report"),
            version=1,
            path="outputs/report.md",
            media_type="text/markdown",
            logical_name=f"Report on {self.gene}",
            input_artifact_versions=tuple(
                ArtifactVersionRef(a, v) for a, v in list(self.artifacts.items())[:3]
            ),
        )
        self.step += 1
        self._emit(self._report_execution(report))
        self.probe["report"] = self._artifact_node(report)
        self._claim(report)
        linked = ClaimsLinked(
            session_id=self.session,
            artifact_id=report.artifact_id,
            artifact_version=1,
            claim_ids=tuple(self.claims),
        )
        self._emit(linked)

    def _report_execution(self, report: ProducedArtifact) -> ExecutionObserved:
        finished = self._tick()
        return ExecutionObserved(
            session_id=self.session,
            execution_id=self._next_id("exec"),
            turn_id=f"turn-{self.step // 3}",
            tool="write_report",
            code_hash=f"sha256:{self.rng.getrandbits(128):032x}",
            status="succeeded",
            started_at=finished - timedelta(seconds=20),
            finished_at=finished,
            produced_artifacts=(report,),
        )


def _partly_out_of_order(mutations: list[Mutation], rng: random.Random) -> list[Mutation]:
    """Swap some neighbouring observe events. Declares keep their place: they are validated
    against what the session already holds, as the agent only cites what it has seen."""
    out = list(mutations)
    index = 0
    while index < len(out) - 1:
        pair = (out[index].event, out[index + 1].event)
        if all(isinstance(e, _SWAPPABLE) for e in pair) and rng.random() < SWAP_SHARE:
            out[index], out[index + 1] = out[index + 1], out[index]
            index += 1
        index += 1
    return out
