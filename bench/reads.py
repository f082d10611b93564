"""Read latency through HTTP GraphQL: chains, existence, traces, subgraphs and search.

Every query starts from probe nodes of the first sessions of the seed, which every store size
holds, so the sizes differ only in how much else is stored. Queries are interleaved round by
round (``{ __typename }`` included), so a drift of the machine affects all of them alike, and
every answer is checked: an empty chain or a broken trace would measure nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.client import BenchError, Latency, timed

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import httpx

    from bench.generate import Session

NODE = "id label excerpt"
CHAIN = f"""query($id: ID!, $kind: ChainKind!) {{ getChain(nodeId: $id, kind: $kind) {{
  __typename ... on Chain {{ total truncated nodes {{ {NODE} }} edges {{ type source target }} }}
  ... on Error {{ code message }} }} }}"""
EXISTS = """query($id: ID!, $kinds: [ChainKind!]!) { chainExists(nodeId: $id, kinds: $kinds) {
  __typename ... on ChainAvailability { entries { kind exists } }
  ... on Error { code message } } }"""
TRACE = f"""query($id: ID!) {{ traceProvenance(nodeId: $id) {{ __typename
  ... on ProvenanceTrace {{ broken truncated reason
    chain {{ hop viaEdge isTerminal node {{ {NODE} }} }} }}
  ... on Error {{ code message }} }} }}"""
SUBGRAPH = f"""query($s: String!) {{ subgraph(sessionId: $s) {{ __typename
  ... on Subgraph {{ total truncated nodes {{ {NODE} }} edges {{ type source target }}
                    groups {{ id kind count }} }}
  ... on Error {{ code message }} }} }}"""
SEARCH = f"""query($q: String!, $s: String) {{ searchNodes(query: $q, sessionId: $s, first: 20) {{
  __typename ... on NodeList {{ total nodes {{ {NODE} }} }} ... on Error {{ code message }} }} }}"""
TRIVIAL = "{ __typename }"

ARTIFACT_KINDS = [
    "VIEW_PRODUCING_CODE",
    "VIEW_RELATED_TASK",
    "VIEW_CITING_CLAIM_FOR_ARTIFACT",
    "VIEW_CONTAINED_CLAIMS",
    "VIEW_CITING_EVIDENCE_FOR_ARTIFACT",
    "VIEW_CITED_PAPER",
]
RARE_TERM = "mtor"
MIN_SAMPLES = 5
QUERY_BUDGET = 30.0  # seconds of requests per query and store size
COMMON_TERM = "tp53"


@dataclass(frozen=True, slots=True)
class ReadQuery:
    """One measured request: its document, its variables for a probe session, the success
    type, and how many nodes its answer holds (0 means it measured nothing)."""

    name: str
    document: str
    variables: Callable[[Session], dict[str, Any]]
    expect: str | None
    size: Callable[[dict[str, Any]], int]


def _chain(kind: str, probe: Callable[[Session], str]) -> ReadQuery:
    return ReadQuery(
        f"getChain {kind.lower()}",
        CHAIN,
        lambda s: {"id": probe(s), "kind": kind},
        "Chain",
        lambda value: int(value["total"]),
    )


def _trace(name: str, probe: Callable[[Session], str]) -> ReadQuery:
    def size(value: dict[str, Any]) -> int:
        return 0 if value["broken"] else len(value["chain"])

    return ReadQuery(
        f"traceProvenance {name}", TRACE, lambda s: {"id": probe(s)}, "ProvenanceTrace", size
    )


def _search(name: str, term: Callable[[Session], str], scoped: bool) -> ReadQuery:
    return ReadQuery(
        f"searchNodes {name}",
        SEARCH,
        lambda s: {"q": term(s), "s": s.session_id if scoped else None},
        "NodeList",
        lambda value: int(value["total"]),
    )


QUERIES: tuple[ReadQuery, ...] = (
    ReadQuery("{ __typename }", TRIVIAL, lambda s: {}, None, lambda value: 1),
    _chain("VIEW_GOAL", lambda s: s.probes.step),
    _chain("VIEW_RELATED_TASK", lambda s: s.probes.artifact),
    _chain("VIEW_PRODUCING_CODE", lambda s: s.probes.child_artifact),
    _chain("VIEW_CITING_CLAIM", lambda s: s.probes.paper),
    _chain("VIEW_CITED_PAPER", lambda s: s.probes.report),
    ReadQuery(
        "chainExists 6 kinds",
        EXISTS,
        lambda s: {"id": s.probes.report, "kinds": ARTIFACT_KINDS},
        "ChainAvailability",
        lambda value: sum(entry["exists"] for entry in value["entries"]),
    ),
    _trace("subagent artifact", lambda s: s.probes.child_artifact),
    _trace("claim", lambda s: s.probes.claim),
    ReadQuery(
        "subgraph session",
        SUBGRAPH,
        lambda s: {"s": s.session_id},
        "Subgraph",
        lambda value: len(value["nodes"]),
    ),
    _search("in session", lambda s: s.probes.search_term, scoped=True),
    _search(f"all sessions '{RARE_TERM}'", lambda s: RARE_TERM, scoped=False),
    _search(f"all sessions '{COMMON_TERM}'", lambda s: COMMON_TERM, scoped=False),
)


@dataclass(frozen=True, slots=True)
class ReadResult:
    latency: Latency
    nodes: float  # mean answer size


class _Samples:
    """Timings per query; a query that used up its time budget is not sent again once it has
    ``MIN_SAMPLES`` samples (a slow query must not hold up a run)."""

    def __init__(self, queries: Sequence[ReadQuery], budget: float) -> None:
        self.budget = budget
        self.seconds: dict[str, list[float]] = {query.name: [] for query in queries}
        self.sizes: dict[str, list[int]] = {query.name: [] for query in queries}
        self.spent: dict[str, float] = dict.fromkeys(self.seconds, 0.0)

    def wanted(self, query: ReadQuery, *, warming: bool = False) -> bool:
        done = warming or len(self.seconds[query.name]) >= MIN_SAMPLES
        return not (done and self.spent[query.name] > self.budget)

    def add(self, query: ReadQuery, elapsed: float, size: int, *, timed: bool = True) -> None:
        self.spent[query.name] += elapsed
        if timed:
            self.seconds[query.name].append(elapsed)
            self.sizes[query.name].append(size)

    def results(self) -> dict[str, ReadResult]:
        return {
            name: ReadResult(Latency.of(values), sum(self.sizes[name]) / len(values))
            for name, values in self.seconds.items()
        }


async def measure_reads(
    client: httpx.AsyncClient,
    url: str,
    probes: Sequence[Session],
    rounds: int,
    queries: Sequence[ReadQuery] = QUERIES,
    budget: float = QUERY_BUDGET,
) -> dict[str, ReadResult]:
    """``rounds`` timed requests per query, after a warm-up request on each probe session
    (which also checks that every probe answers something at this store size)."""
    samples = _Samples(queries, budget)
    for session in probes:
        for query in queries:
            if samples.wanted(query, warming=True):
                elapsed, size = await _once(client, url, query, session)
                samples.add(query, elapsed, size, timed=False)
    samples.spent = dict.fromkeys(samples.spent, 0.0)
    for index in range(rounds):
        session = probes[index % len(probes)]
        for query in queries:
            if samples.wanted(query):
                samples.add(query, *await _once(client, url, query, session))
    return samples.results()


async def _once(
    client: httpx.AsyncClient, url: str, query: ReadQuery, session: Session
) -> tuple[float, int]:
    elapsed, value = await timed(
        client, url, query.document, query.variables(session), query.expect
    )
    size = query.size(value) if isinstance(value, dict) else 1
    if size == 0 and query.expect in {"Chain", "ProvenanceTrace"}:
        raise BenchError(f"{query.name} on {session.session_id} answered nothing: {value!r:.300}")
    return elapsed, size
