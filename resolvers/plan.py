"""Read plans: what one event's rules will read, named before they run.

A write runs its rules over the store's primitives (``resolvers.writes.Writer``). On a backend
whose every primitive is a network round trip, that is one round trip per read and per change.
A ``ReadPlan`` names, from the event alone, everything its rules will ask: the nodes it merges
or connects, the steps it may create (each new one gets its ``seq`` while the plan loads), the
chain positions it will insert at, the adjacency it walks, the artifact versions and keys it
looks up, the session listings it pages through. A backend loads the plan in one request
(``GraphTransaction.prefetch``), answers the rules' reads from that snapshot and what the
transaction itself changed, and applies the changes the rules made in one request at the end;
a read the plan did not name still gets a correct answer (a round trip of its own).

A plan is only a hint: on a backend that reads from memory (the file store) it costs nothing
and changes nothing, and the rules are the same code on every backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from resolvers.records import Direction, EdgeType, Label, node_id


@dataclass(frozen=True, slots=True)
class ChainProbe:
    """The neighbours of one position in a chain (``scope`` ``None`` = the main chain): the
    position is ``(chain_at, seq)`` where ``seq`` is the stored ``seq`` of ``step``, or the one
    allocated for it when it does not exist yet, or ``0`` without a step (the chain's start
    with ``chain_at`` ``""``)."""

    scope: str | None
    chain_at: str
    step: str | None = None


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Everything the rules of one event read, in one session.

    * ``nodes``: ids read (the node or its absence) — with the edges parked for each;
    * ``steps``: step ids the event merges; each one that does not exist yet gets the next
      ``seq`` of the session (in this order), handed out by ``next_seq``;
    * ``chains``: chain positions whose neighbours ``chain_neighbours`` is asked for;
    * ``adjacent``: ``(id, edge type, direction)`` whose every edge ``expand`` is asked for;
    * ``artifacts``: artifact ids whose every version (all sessions) is read;
    * ``keys``: ``(key, label)`` looked up in the session (``nodes_by_key``);
    * ``listings``: labels whose every live node of the session is listed (``list_nodes``).

    Edges among all the nodes named or reached are loaded too, so creating or deleting an
    edge between them knows whether it exists."""

    session_id: str
    nodes: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    chains: tuple[ChainProbe, ...] = ()
    adjacent: tuple[tuple[str, EdgeType, Direction], ...] = ()
    artifacts: tuple[str, ...] = ()
    keys: tuple[tuple[str, Label], ...] = ()
    listings: tuple[Label, ...] = ()


@dataclass(slots=True)
class PlanBuilder:
    """Collects a ``ReadPlan`` (duplicates dropped, first mention kept)."""

    session_id: str
    nodes: dict[str, None] = field(default_factory=dict)
    steps: dict[str, None] = field(default_factory=dict)
    chains: dict[ChainProbe, None] = field(default_factory=dict)
    adjacent: dict[tuple[str, EdgeType, Direction], None] = field(default_factory=dict)
    artifacts: dict[str, None] = field(default_factory=dict)
    keys: dict[tuple[str, Label], None] = field(default_factory=dict)
    listings: dict[Label, None] = field(default_factory=dict)

    def node(self, *ids: str) -> PlanBuilder:
        self.nodes.update(dict.fromkeys(ids))
        return self

    def step(self, step_id: str, scope: str | None, chain_at: str) -> PlanBuilder:
        """A step merged at ``chain_at``: its node, seq, chain position, own chain edges and
        the owners of its chain's head (the session's goals, or its scope)."""
        self.node(step_id)
        self.steps[step_id] = None
        self.chains[ChainProbe(scope, chain_at, step_id)] = None
        for edge_type, direction in (
            (EdgeType.NEXT, Direction.OUT),
            (EdgeType.NEXT, Direction.IN),
            (EdgeType.CONTAINS, Direction.IN),
        ):
            self.adjacent[(step_id, edge_type, direction)] = None
        if scope is None:
            self.listing(Label.RESEARCH_GOAL)
        else:
            self.node(node_id(Label.TASK, scope))
        return self

    def chain_start(self, scope: str | None) -> PlanBuilder:
        self.chains[ChainProbe(scope, "")] = None
        return self

    def adjacency(self, node: str, edge_type: EdgeType, direction: Direction) -> PlanBuilder:
        self.node(node)
        self.adjacent[(node, edge_type, direction)] = None
        return self

    def versions(self, *artifact_ids: str) -> PlanBuilder:
        self.artifacts.update(dict.fromkeys(artifact_ids))
        return self

    def key(self, key: str, label: Label) -> PlanBuilder:
        self.keys[(key, label)] = None
        return self

    def listing(self, *labels: Label) -> PlanBuilder:
        self.listings.update(dict.fromkeys(labels))
        return self

    def build(self) -> ReadPlan:
        return ReadPlan(
            self.session_id,
            tuple(self.nodes),
            tuple(self.steps),
            tuple(self.chains),
            tuple(self.adjacent),
            tuple(self.artifacts),
            tuple(self.keys),
            tuple(self.listings),
        )
