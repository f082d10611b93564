"""``ForwardedReads``: the ``GraphReader`` primitives of another reader, for the wrappers that add
behaviour around a store or a transaction (publication, replay batches) but read as it does.

The primitives are bound methods assigned once, so a wrapper costs no call of its own per read
and type-checks against the port; a primitive added to ``GraphReader`` is added here, once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from resolvers.store import GraphReader


class ForwardedReads:
    """Answers every ``GraphReader`` primitive with ``reads``'s."""

    def __init__(self, reads: GraphReader) -> None:
        self.get_nodes = reads.get_nodes
        self.nodes_by_key = reads.nodes_by_key
        self.artifact_versions = reads.artifact_versions
        self.expand = reads.expand
        self.edges_among = reads.edges_among
        self.list_nodes = reads.list_nodes
        self.list_edges = reads.list_edges
        self.session_node_ids = reads.session_node_ids
        self.project_artifacts = reads.project_artifacts
        self.chain_members = reads.chain_members
        self.chain_neighbours = reads.chain_neighbours
        self.chain_before = reads.chain_before
        self.search = reads.search
