"""JSON encoding of the file store's change operations.

A log record is one committed transaction: ``{"at": <iso>, "ops": [op, ...]}``. A snapshot line
is one op. Ops, applied in order, rebuild the graph:

    {"op": "n",  "id", "label", "key", "session", "created", "props", "seq"}   put node
    {"op": "dn", "id"}                                                      delete node
    {"op": "e",  "type", "source", "target", "props"}                       put edge
    {"op": "de", "type", "source", "target"}                                delete edge
    {"op": "q",  "session", "value"}                                        seq counter
    {"op": "pk", "for", "edge": {type, source, target, props}}              park an edge
    {"op": "up", "for"}                                                     take parked edges
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from resolvers.records import EdgeRecord, EdgeType, Label, NodeRecord

if TYPE_CHECKING:
    from collections.abc import Iterator

    from gateway.stores.file.graph import MemoryGraph

Op = dict[str, Any]


def node_op(node: NodeRecord) -> Op:
    return {
        "op": "n",
        "id": node.id,
        "label": node.label.value,
        "key": node.key,
        "session": node.session_id,
        "created": node.created_at.isoformat(),
        "props": dict(node.props),
        "seq": node.seq,
    }


def edge_op(edge: EdgeRecord) -> Op:
    return {"op": "e", **_edge_fields(edge)}


def delete_node_op(node_id: str) -> Op:
    return {"op": "dn", "id": node_id}


def delete_edge_op(edge_type: EdgeType, source: str, target: str) -> Op:
    return {"op": "de", "type": edge_type.value, "source": source, "target": target}


def seq_op(session_id: str, value: int) -> Op:
    return {"op": "q", "session": session_id, "value": value}


def park_op(edge: EdgeRecord, waiting_for: str) -> Op:
    return {"op": "pk", "for": waiting_for, "edge": _edge_fields(edge)}


def unpark_op(waiting_for: str) -> Op:
    return {"op": "up", "for": waiting_for}


def encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def decode(payload: bytes) -> Any:
    return json.loads(payload)


def apply_op(graph: MemoryGraph, op: Op) -> None:
    """Apply one decoded op to ``graph`` (replay of the log and of snapshots)."""
    kind = op["op"]
    if kind == "n":
        graph.put_node(
            NodeRecord(
                op["id"],
                Label(op["label"]),
                op["key"],
                op["session"],
                datetime.fromisoformat(op["created"]),
                op["props"],
                op["seq"],
            )
        )
    elif kind == "dn":
        graph.delete_node(op["id"])
    elif kind == "e":
        graph.put_edge(_edge_of(op))
    elif kind == "de":
        graph.delete_edge(EdgeType(op["type"]), op["source"], op["target"])
    elif kind == "q":
        graph.seq[op["session"]] = max(graph.seq.get(op["session"], 0), op["value"])
    elif kind == "pk":
        edge = _edge_of(op["edge"])
        graph.parked.setdefault(op["for"], {})[edge.identity] = edge
    elif kind == "up":
        graph.parked.pop(op["for"], None)
    else:
        raise ValueError(f"unknown op {kind!r}")


@dataclass(frozen=True, slots=True)
class Captured:
    """A consistent copy of the graph's contents (records are immutable, so copies are shallow)."""

    nodes: list[NodeRecord]
    edges: list[EdgeRecord]
    seq: dict[str, int]
    parked: list[tuple[str, EdgeRecord]]

    def record_count(self) -> int:
        """How many records a snapshot of this copy holds."""
        return len(self.nodes) + len(self.edges) + len(self.seq) + len(self.parked)


def capture(graph: MemoryGraph) -> Captured:
    """Copy the graph's contents; call on the event loop, then encode anywhere."""
    return Captured(
        list(graph.nodes.values()),
        list(graph.all_edges()),
        dict(graph.seq),
        [(key, edge) for key, parked in graph.parked.items() for edge in parked.values()],
    )


def snapshot_ops(captured: Captured) -> Iterator[Op]:
    """Every op needed to rebuild the captured graph; nodes before the edges that need them."""
    for node in captured.nodes:
        yield node_op(node)
    for edge in captured.edges:
        yield edge_op(edge)
    for session_id, value in captured.seq.items():
        yield seq_op(session_id, value)
    for waiting_for, edge in captured.parked:
        yield park_op(edge, waiting_for)


def _edge_fields(edge: EdgeRecord) -> dict[str, Any]:
    return {
        "type": edge.type.value,
        "source": edge.source,
        "target": edge.target,
        "props": dict(edge.props),
    }


def _edge_of(fields: dict[str, Any]) -> EdgeRecord:
    return EdgeRecord(
        EdgeType(fields["type"]), fields["source"], fields["target"], fields.get("props", {})
    )
