"""Every read of SPEC §4 agrees with the executable model on generated sessions.

Each example delivers a random session (``tests.model.streams``) through the use cases to an
empty store, dumps what the store recorded into the model (``tests.model.graph``), then asks
both, from every node: every ``getChain`` kind, ``chainExists`` for all kinds, and
``traceProvenance`` for every target label at the ``maxHops`` where the answer changes (1,
around the hop the exploration ends at, 32). On Neo4j, where every primitive is a round trip,
the short profile checks a few drawn nodes per example; ``HYPOTHESIS_PROFILE=long`` all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import given
from hypothesis import strategies as st

from gateway.stores.neo4j import Neo4jStore
from resolvers.chains import ChainKind, chain_exists, get_chain
from resolvers.provenance import trace_provenance
from resolvers.records import Label
from tests.model import reads
from tests.model.conftest import emptied
from tests.model.graph import dump
from tests.model.streams import apply, streams
from tests.profiles import LONG, profile

if TYPE_CHECKING:
    import pytest

    from resolvers.provenance import ProvenanceStep, ProvenanceTrace
    from resolvers.store import GraphStore
    from tests.model.graph import Graph
    from tests.model.streams import Op

MODEL = profile("model", examples=25, long_examples=1000)
NEO4J_NODES = 1  # nodes checked per example on Neo4j by default (every node when long)


def answer_of(trace: ProvenanceTrace) -> reads.TraceAnswer:
    def steps(found: list[ProvenanceStep]) -> list[reads.Step]:
        return [reads.Step(s.hop, s.node.id, s.via_edge.value, s.reached_from) for s in found]

    return reads.TraceAnswer(
        steps(trace.path), steps(trace.chain), trace.broken, trace.truncated, str(trace.reason)
    )


def hops_to_try(answer: reads.TraceAnswer) -> set[int]:
    """1, 32 and the hops around where the full exploration stops."""
    last = max((step.hop for step in answer.chain), default=0)
    return {1, 32} | {hop for hop in (last - 1, last, last + 1, last + 2) if 1 <= hop <= 32}


async def check_chains(store: GraphStore, graph: Graph, node: str) -> None:
    for kind in ChainKind:
        chain = await get_chain(store, node, kind)
        got = reads.ChainAnswer(
            [n.id for n in chain.nodes],
            frozenset((e.type.value, e.source, e.target) for e in chain.edges),
        )
        assert got == reads.get_chain(graph, node, kind.value, None), (node, kind)
    exists = await chain_exists(store, node, list(ChainKind))
    assert {k.value: v for k, v in exists.items()} == {
        kind: reads.chain_exists(graph, node, kind, None) for kind in reads.KINDS
    }, node


async def check_traces(store: GraphStore, graph: Graph, node: str) -> None:
    session = graph.nodes[node].session
    for target in Label:
        full = reads.trace(graph, node, target.value, 32, session)
        for max_hops in sorted(hops_to_try(full)):
            expected = reads.trace(graph, node, target.value, max_hops, session)
            trace = await trace_provenance(store, node, target_label=target, max_hops=max_hops)
            got = answer_of(trace)
            assert got == expected, f"{node} {target} {max_hops}\n{got}\n{expected}"


async def check_reads(store: GraphStore, graph: Graph, nodes: list[str]) -> None:
    for node in nodes:
        await check_chains(store, graph, node)
        await check_traces(store, graph, node)


@MODEL
@given(ops=streams(), data=st.data())
async def test_every_read_agrees_with_the_model(
    store: GraphStore,
    tmp_path_factory: pytest.TempPathFactory,
    ops: tuple[Op, ...],
    data: st.DataObject,
) -> None:
    async with emptied(store, tmp_path_factory.mktemp("model")) as fresh:
        applied = await apply(fresh, ops)
        graph = await dump(fresh, applied.sessions)
        nodes = sorted(graph.nodes)
        if isinstance(fresh, Neo4jStore) and not LONG:  # a round trip per primitive
            nodes = (
                data.draw(st.lists(st.sampled_from(nodes), max_size=NEO4J_NODES, unique=True))
                if nodes
                else []
            )

        await check_reads(fresh, graph, nodes)
