"""A small model of SPEC §3 (write semantics), written from SPEC over plain dicts.

It covers the events of ``write_streams``: first messages, uploads, executions (with artifact
versions and inputs) and searches (with Paper links), for sessions that may share execution ids
and artifact versions. Given the delivered sequence of events, it answers the graph the store
must hold: every node with its label, session and key properties, and every edge.

Rules, each from SPEC:

* §3.8 ownership — a node belongs to the session whose event created it first; an event of
  another session that names one of its keys as its own is refused whole (nothing of it
  counts, not even its creation order in the session);
* §3.1 idempotence — a duplicate changes nothing;
* §3.9 facts by the events' own times — an execution's status and finish come from its
  observation ranked greatest by (terminal status, finishedAt); a Paper's title from the
  earliest retrieval (retrievedAt); a file's size from the latest upload (uploadedAt);
* §3.2 / §3.3 order — a session's main chain is its goal, then its steps by (own time, arrival
  of the step's first accepted event); ``supersedes`` links consecutive existing versions of an
  artifact within the session that owns them (§3.8: never across sessions); ``input`` and
  ``feeds`` exist once both ends exist, whatever came first;
* §3.7 links — a Paper is keyed by ``(session, canonical link)``; the streams spell one link in
  several ways, and the model knows the canonical form of each spelling by construction.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

TERMINAL = frozenset({"completed", "failed"})


@dataclass(frozen=True)
class Goal:
    session: str


@dataclass(frozen=True)
class Upload:
    session: str
    path: str
    uploaded_at: int
    size: int


@dataclass(frozen=True)
class Version:
    artifact: str
    version: int
    path: str


@dataclass(frozen=True)
class Run:
    """One observation of an execution."""

    session: str
    execution: str
    finished_at: int
    status: str  # running | completed | failed
    produces: tuple[Version, ...] = ()
    reads: tuple[tuple[str, int], ...] = ()
    reads_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Found:
    """A Paper in a search: its spelling as sent and the canonical link it stands for."""

    spelling: str
    canonical: str
    title: str


@dataclass(frozen=True)
class Search:
    session: str
    query: str
    retrieved_at: int
    papers: tuple[Found, ...] = ()


Event = Goal | Upload | Run | Search
Node = dict[str, Any]
Edge = tuple[str, str, str]


def goal_id(session: str) -> str:
    return f"ResearchGoal:goal:session:{session}"


def file_id(session: str, path: str) -> str:
    return f"SourceFile:source_file:session:{session}:{path}"


def version_id(artifact: str, version: int) -> str:
    return f"Artifact:{artifact}#v{version}"


@dataclass
class WriteModel:
    owner: dict[str, str] = field(default_factory=dict)  # node id -> session
    arrival: dict[str, int] = field(default_factory=dict)  # step id -> first accepted arrival
    runs: dict[str, list[Run]] = field(default_factory=dict)
    searches: dict[str, list[Search]] = field(default_factory=dict)
    uploads: dict[str, list[Upload]] = field(default_factory=dict)
    goals: set[str] = field(default_factory=set)
    versions: dict[str, Version] = field(default_factory=dict)
    papers: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)
    finders: dict[str, set[str]] = field(default_factory=dict)
    reads: set[Edge] = field(default_factory=set)
    counter: int = 0

    def apply(self, event: Event) -> bool:
        """Record one delivered event; ``False`` when SPEC §3.8 refuses it."""
        keys = _keys(event)
        if any(self.owner.get(key, event.session) != event.session for key in keys):
            return False
        for key in keys:
            self.owner.setdefault(key, event.session)
        self.counter += 1
        if isinstance(event, Goal):
            self.goals.add(event.session)
        elif isinstance(event, Upload):
            self.uploads.setdefault(file_id(event.session, event.path), []).append(event)
        elif isinstance(event, Run):
            self._run(event)
        else:
            self._search(event)
        return True

    def _run(self, run: Run) -> None:
        step = f"ToolCall:subtask:{run.execution}"
        self.arrival.setdefault(step, self.counter)
        self.runs.setdefault(step, []).append(run)
        for version in run.produces:
            self.versions.setdefault(version_id(version.artifact, version.version), version)
        code = f"Code:{run.execution}"
        if run.produces:  # the API declares inputs with the versions they were read for
            self.reads.update(("input", version_id(a, v), code) for a, v in run.reads)
        self.reads.update(("input", file_id(run.session, p), code) for p in run.reads_files)

    def _search(self, search: Search) -> None:
        step = f"ToolCall:subtask:mcp:{search.query}"
        self.arrival.setdefault(step, self.counter)
        self.searches.setdefault(step, []).append(search)
        for found in search.papers:
            paper = f"Paper:{search.session}|{found.canonical}"
            self.papers.setdefault(paper, []).append((search.retrieved_at, step, found.title))
            self.finders.setdefault(paper, set()).add(step)

    # --- the graph ----------------------------------------------------------------------

    def nodes(self) -> dict[str, Node]:
        nodes: dict[str, Node] = {goal_id(s): {"session": s} for s in self.goals}
        for source, uploads in self.uploads.items():
            latest = max(uploads, key=lambda u: u.uploaded_at)
            nodes[source] = {"session": latest.session, "size": latest.size}
        for step, runs in self.runs.items():
            best = max(runs, key=lambda r: (r.status in TERMINAL, r.finished_at))
            state = {"session": best.session, "status": best.status, "at": best.finished_at}
            nodes[step] = state
            nodes[step.replace("ToolCall:subtask:", "Code:")] = dict(state)
        for step, searches in self.searches.items():
            found = max(searches, key=lambda s: s.retrieved_at)
            nodes[step] = {"session": found.session, "status": "completed"}
        for artifact, version in self.versions.items():
            nodes[artifact] = {"session": self.owner[artifact], "path": version.path}
        for paper, retrievals in self.papers.items():
            session = paper.split(":", 1)[1].split("|", 1)[0]
            title = min(retrievals)[2]
            nodes[paper] = {
                "session": session,
                "title": title,
                "count": len(self.finders[paper]),
                # every retrieval's own time counts, however often one step found it
                "first": min(at for at, _, _ in retrievals),
                "at": max(at for at, _, _ in retrievals),
            }
        return nodes

    def edges(self) -> set[Edge]:
        nodes = self.nodes()
        edges: set[Edge] = {edge for edge in self.reads if edge[1] in nodes and edge[2] in nodes}
        for step, runs in self.runs.items():
            code = step.replace("ToolCall:subtask:", "Code:")
            edges.add(("produces", step, code))
            for run in runs:
                edges.update(
                    ("produces", code, version_id(v.artifact, v.version)) for v in run.produces
                )
        for step, searches in self.searches.items():
            for search in searches:
                edges.update(
                    ("produces", step, f"Paper:{search.session}|{f.canonical}")
                    for f in search.papers
                )
        edges |= self._lineage() | self._chains(nodes)
        edges.update(
            ("feeds", source, goal_id(node["session"]))
            for source, node in nodes.items()
            if source.startswith("SourceFile:") and node["session"] in self.goals
        )
        return edges

    def _lineage(self) -> set[Edge]:
        by_artifact: dict[tuple[str, str], list[int]] = {}
        for node, version in self.versions.items():
            lineage = (self.owner[node], version.artifact)
            by_artifact.setdefault(lineage, []).append(version.version)
        edges: set[Edge] = set()
        for (_, artifact), numbers in by_artifact.items():
            ordered = sorted(numbers)
            edges.update(
                ("supersedes", version_id(artifact, new), version_id(artifact, old))
                for old, new in itertools.pairwise(ordered)
            )
        return edges

    def _chains(self, nodes: dict[str, Node]) -> set[Edge]:
        by_session: dict[str, list[tuple[int, int, str]]] = {}
        for step in self.arrival:
            at = nodes[step].get("at")
            if at is None:
                at = max(s.retrieved_at for s in self.searches[step])
            session = nodes[step]["session"]
            by_session.setdefault(session, []).append((at, self.arrival[step], step))
        edges: set[Edge] = set()
        for session, steps in by_session.items():
            chain = [step for _, _, step in sorted(steps)]
            if session in self.goals:
                chain.insert(0, goal_id(session))
            edges.update(("next", a, b) for a, b in itertools.pairwise(chain))
        return edges


def _keys(event: Event) -> list[str]:
    """The node ids an event names as its own (SPEC §3.8)."""
    if isinstance(event, Goal):
        return [goal_id(event.session)]
    if isinstance(event, Upload):
        return [file_id(event.session, event.path)]
    if isinstance(event, Run):
        ids = [f"ToolCall:subtask:{event.execution}", f"Code:{event.execution}"]
        return ids + [version_id(v.artifact, v.version) for v in event.produces]
    return [f"ToolCall:subtask:mcp:{event.query}"]
