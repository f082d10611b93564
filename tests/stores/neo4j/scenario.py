"""A session's write events, a small model of what SPEC says they give, and checks of both.

The model is written from SPEC §2-§3 only: node keys per label, the task chain ordered by the
step's own time (finishedAt for executions, retrievedAt for tool calls, the start for a subagent
scope), one Paper per normalised link whose retrievalCount counts the distinct ToolCalls that
found it, `supersedes` between consecutive versions of an artifact.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

MUTATIONS = {
    "observeSessionFirstMessage": "ObserveSessionFirstMessageInput",
    "observeUploadFile": "ObserveUploadFileInput",
    "observeExecution": "ObserveExecutionInput",
    "observeMcpSearch": "ObserveMcpSearchInput",
    "observeToolCall": "ObserveToolCallInput",
    "observeSubagent": "ObserveSubagentInput",
    "declareArtifact": "DeclareArtifactInput",
    "declareEvidence": "DeclareEvidenceInput",
    "declareClaim": "DeclareClaimInput",
}
SUBGRAPH = """query($s: String!) { subgraph(sessionId: $s, first: 2000, fold: false) { __typename
  ... on Subgraph { total truncated nodes { __typename id key sessionId
     ... on Paper { retrievalCount link } ... on Artifact { version } }
   edges { type source target } } ... on Error { code message } } }"""


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def mutation(name: str) -> str:
    if name.startswith("observe"):
        extra = "... on Observed { written nodeIds rejected { index field message } } "
    elif name == "declareEvidence":
        extra = "... on EvidenceDeclared { evidenceId } ... on DeclareRejected { instruction } "
    elif name == "declareClaim":
        extra = "... on ClaimDeclared { claimId } ... on DeclareRejected { instruction } "
    else:
        extra = ""
    return (
        f"mutation($input: {MUTATIONS[name]}!) {{ {name}(input: $input) {{ __typename {extra}"
        "... on MemoryGraphUnreachable { queued } ... on InvalidInput { field } "
        "... on Error { code message } } }"
    )


async def post(client: httpx.AsyncClient, url: str, query: str, **variables: Any) -> Any:
    body = json.dumps({"query": query, "variables": variables})  # ASCII: lone surrogates too
    response = await client.post(
        f"{url}/graphql", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def send(client: httpx.AsyncClient, url: str, name: str, payload: dict[str, Any]) -> Any:
    answer = await post(client, url, mutation(name), input=payload)
    assert "errors" not in answer, answer
    return answer["data"][name]


PAPER_SPELLINGS = [
    # one DOI, five spellings
    (
        "https://doi.org/10.1000/tp53.2024",
        [
            "https://doi.org/10.1000/TP53.2024",
            "doi:10.1000/tp53.2024",
            "http://dx.doi.org/10.1000/TP53.2024/",
            "10.1000/Tp53.2024",
            "https://doi.org/10.1000/tp53.2024?utm_source=x#frag",
        ],
    ),
    # one URL, four spellings
    (
        "https://example.org/Paper/One?id=7",
        [
            "https://example.org/Paper/One?id=7",
            "HTTP://Example.ORG:80/Paper/One/?id=7&utm_medium=mail",
            "example.org/Paper/One?id=7#sec2",
            "  https://user:pw@example.org/Paper/One?id=7&fbclid=zz  ",
        ],
    ),
    # the server's canonical arXiv form; two arXiv ids never merge
    ("https://arxiv.org/abs/2401.00001", ["arXiv:2401.00001", "https://arxiv.org/abs/2401.00001"]),
    ("https://arxiv.org/abs/2401.00002", ["arXiv:2401.00002"]),
]


@dataclass
class Session:
    """The events of one session and the graph SPEC says they give."""

    sid: str
    executions: int = 24
    subagents: int = 3
    tool_calls: int = 8
    seed: int = 1
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    top: list[tuple[datetime, str]] = field(default_factory=list)  # (own time, node id)
    scopes: dict[str, list[tuple[datetime, str]]] = field(default_factory=dict)
    nodes: set[str] = field(default_factory=set)
    paper_finders: dict[str, set[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rnd = random.Random(self.seed)
        s = self.sid
        goal = f"goal:session:{s}"
        self.goal_id = f"ResearchGoal:{goal}"
        self.events.append(
            (
                "observeSessionFirstMessage",
                {"sessionId": s, "goalId": goal, "coreObjective": "TP53 outliers"},
            )
        )
        self.nodes.add(self.goal_id)
        for name in ("cohort.csv", "paper.pdf"):
            fid = f"source_file:session:{s}:{name}"
            self.events.append(
                ("observeUploadFile", {"sessionId": s, "fileId": fid, "name": name, "path": name})
            )
            self.nodes.add(f"SourceFile:{fid}")
        subagent_ids = [f"{s}-sa{j}" for j in range(self.subagents)]
        for j, sa in enumerate(subagent_ids):
            start = T0 + timedelta(minutes=10 * j + 3, seconds=rnd.randint(0, 59))
            base = {
                "subagentId": sa,
                "sessionId": s,
                "turnId": "t1",
                "objective": f"scope {j}",
                "createdAt": iso(start),
            }
            self.events.append(("observeSubagent", {**base, "status": "running"}))
            self.events.append(
                (
                    "observeSubagent",
                    {
                        **base,
                        "status": "completed",
                        "finishedAt": iso(start + timedelta(hours=5)),
                        "summary": "done",
                    },
                )
            )
            key = f"subtask:subagent:{sa}"
            self.nodes.add(f"Task:{key}")
            self.top.append((start, f"Task:{key}"))
            self.scopes[f"Task:{key}"] = []
        # executions, each producing one version of a shared artifact (versions in time order)
        times = sorted(
            T0 + timedelta(seconds=rnd.randint(1, 36000)) for _ in range(self.executions)
        )
        for i, finished in enumerate(times):
            ex = f"{s}-exec-{i}"
            version = i + 1
            parent = subagent_ids[i % len(subagent_ids)] if i % 4 == 3 else None
            art: dict[str, Any] = {
                "artifactId": f"{s}-fig",
                "version": version,
                "logicalName": "volcano",
            }
            if version > 1:
                art["inputArtifactVersions"] = [{"artifactId": f"{s}-fig", "version": version - 1}]
            payload: dict[str, Any] = {
                "sessionId": s,
                "executionId": ex,
                "turnId": "t1",
                "tool": "run_python",
                "codeHash": f"h{i}",
                "status": "succeeded",
                "startedAt": iso(finished - timedelta(seconds=1)),
                "finishedAt": iso(finished),
                "producedArtifacts": [art],
                "inputSourceFiles": [f"source_file:session:{s}:cohort.csv"],
            }
            if parent:
                payload["parentSubagentId"] = parent
                key = f"subtask:subagent:{parent}:exec:{ex}"
                self.scopes[f"Task:subtask:subagent:{parent}"].append((finished, f"ToolCall:{key}"))
            else:
                key = f"subtask:{ex}"
                self.top.append((finished, f"ToolCall:{key}"))
            self.events.append(("observeExecution", payload))
            self.nodes |= {f"ToolCall:{key}", f"Code:{ex}", f"Artifact:{s}-fig#v{version}"}
        for k in range(self.tool_calls):
            at = T0 + timedelta(seconds=rnd.randint(1, 36000), milliseconds=k)
            task = f"subtask:mcp:{s}-call-{k}"
            products = []
            for canonical, spellings in PAPER_SPELLINGS:
                if (k + len(canonical)) % 3 == 0 and k % 2:
                    continue
                products.append({"link": rnd.choice(spellings), "title": f"t {canonical}"})
                self.paper_finders.setdefault(canonical, set()).add(task)
            self.events.append(
                (
                    "observeToolCall",
                    {
                        "taskId": task,
                        "sessionId": s,
                        "toolName": "pubmed_search",
                        "toolType": "search",
                        "turnId": "t1",
                        "retrievedAt": iso(at),
                        "products": products,
                    },
                )
            )
            self.nodes.add(f"ToolCall:{task}")
            self.top.append((at, f"ToolCall:{task}"))
        for canonical in self.paper_finders:
            self.nodes.add(f"Paper:{s}|{canonical}")

    def expected_main_chain(self) -> list[str]:
        return [self.goal_id] + [n for _, n in sorted(self.top)]

    def expected_scope_chain(self, scope: str) -> list[str]:
        return [n for _, n in sorted(self.scopes[scope])]


def walk(edges: list[dict[str, str]], start: str) -> list[str]:
    nxt: dict[str, list[str]] = {}
    for e in edges:
        if e["type"] == "NEXT":
            nxt.setdefault(e["source"], []).append(e["target"])
    order, node = [start], start
    while node in nxt and len(order) < 10_000:
        assert len(nxt[node]) == 1, f"{node} has several next edges: {nxt[node]}"
        node = nxt[node][0]
        order.append(node)
    return order


def check_subgraph(model: Session, answer: Any) -> list[str]:
    """Differences between a subgraph answer and the model (empty when they agree)."""
    problems: list[str] = []
    sub = answer["data"]["subgraph"]
    if sub["__typename"] != "Subgraph":
        return [f"subgraph answered {sub}"]
    ids = [n["id"] for n in sub["nodes"]]
    if len(ids) != len(set(ids)):
        problems.append("duplicate nodes")
    if set(ids) != model.nodes:
        problems.append(
            f"missing {sorted(model.nodes - set(ids))} extra {sorted(set(ids) - model.nodes)}"
        )
    edges = sub["edges"]
    triples = [(e["type"], e["source"], e["target"]) for e in edges]
    if len(triples) != len(set(triples)):
        dups = sorted({t for t in triples if triples.count(t) > 1})
        problems.append(f"duplicate edges {dups[:5]}")
    try:
        chain = walk(edges, model.goal_id)
    except AssertionError as error:
        problems.append(str(error))
        chain = []
    if chain and chain != model.expected_main_chain():
        problems.append(f"main chain {chain} != {model.expected_main_chain()}")
    for scope in model.scopes:
        firsts = [t for ty, src, t in triples if ty == "CONTAINS" and src == scope]
        want = model.expected_scope_chain(scope)
        if not want:
            continue
        if firsts != [want[0]]:
            problems.append(f"{scope} contains {firsts}, expected {want[0]}")
            continue
        try:
            got = walk(edges, want[0])
        except AssertionError as error:
            problems.append(str(error))
            continue
        if got != want:
            problems.append(f"scope chain {scope}: {got} != {want}")
    s = model.sid
    for v in range(2, model.executions + 1):
        t = ("SUPERSEDES", f"Artifact:{s}-fig#v{v}", f"Artifact:{s}-fig#v{v - 1}")
        if t not in set(triples):
            problems.append(f"missing {t}")
        t = ("INPUT", f"Artifact:{s}-fig#v{v - 1}", f"Code:{s}-exec-{v - 1}")
        if t not in set(triples):
            problems.append(f"missing {t}")
    counts = {n["id"]: n.get("retrievalCount") for n in sub["nodes"] if n["__typename"] == "Paper"}
    for canonical, finders in model.paper_finders.items():
        pid = f"Paper:{s}|{canonical}"
        if counts.get(pid) != len(finders):
            problems.append(f"{pid} retrievalCount {counts.get(pid)} != {len(finders)}")
    return problems


async def send_all(
    urls: list[str],
    events: list[tuple[str, dict[str, Any]]],
    clients: int,
    *,
    seed: int = 0,
    accept: tuple[str, ...] = ("Observed",),
) -> list[tuple[str, dict[str, Any], Any]]:
    """Send every event once through ``clients`` concurrent workers spread over ``urls``;
    return the (name, payload, answer) of each answer whose type is not in ``accept``."""
    queue: asyncio.Queue[tuple[int, str, dict[str, Any]]] = asyncio.Queue()
    shuffled = list(events)
    random.Random(seed).shuffle(shuffled)
    for index, (name, payload) in enumerate(shuffled):
        queue.put_nowait((index, name, payload))
    bad: list[tuple[str, dict[str, Any], Any]] = []

    async def worker(w: int, client: httpx.AsyncClient) -> None:
        while not queue.empty():
            index, name, payload = queue.get_nowait()
            url = urls[(index + w) % len(urls)]
            answer = await send(client, url, name, payload)
            if answer["__typename"] not in accept:
                bad.append((name, payload, answer))

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(timeout=60.0, limits=limits) as client:
        await asyncio.gather(*(worker(w, client) for w in range(clients)))
    return bad
