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
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import msgspec

from resolvers.records import EdgeRecord, EdgeType, Label, NodeRecord

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from gateway.stores.file.graph import MemoryGraph

Op = dict[str, Any]

# msgspec decodes about twice as fast as the standard library, keeps integers of any size exact
# and shares the key strings of the objects it decodes (one ``"content_hash"`` for all nodes,
# not one per node). What it refuses but ``encode`` may have written (NaN and Infinity) is
# decoded by ``json.loads`` instead, so every record reads back as it always did.
_DECODER = msgspec.json.Decoder()


class _Lookup(dict[str, Any]):
    """A value table whose miss is a ``ValueError`` naming the value (a damaged record), not
    a ``KeyError`` that would read like a missing field."""

    def __init__(self, what: str, members: dict[str, Any]) -> None:
        super().__init__(members)
        self._what = what

    def __missing__(self, key: str) -> Any:
        raise ValueError(f"unknown {self._what} {key!r}")


# Dict lookups: calling an enum class to look a value up costs ten times as much.
_LABELS = _Lookup("label", {label.value: label for label in Label})
_EDGE_TYPES = _Lookup("edge type", {edge_type.value: edge_type for edge_type in EdgeType})
# Property values up to this length are shared between the records of a load: statuses, tool
# names, years, the timestamp of one search's papers repeat across nodes; longer text is rarely
# repeated and would only grow the table of strings met.
_SHARED_LENGTH = 32
# Most edges have no properties: one read-only empty mapping serves them all.
_NO_PROPS: Mapping[str, Any] = MappingProxyType({})


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


def decode(payload: bytes | str) -> Any:
    try:
        return _DECODER.decode(payload)
    except msgspec.DecodeError:
        return json.loads(payload)


def apply_op(graph: MemoryGraph, op: Op, strings: dict[str, str]) -> None:
    """Apply one decoded op to ``graph`` (replay of the log and of snapshots).

    Repeated strings are held once, not once per record: an edge's endpoints are the strings
    of the nodes they name, and a session id or a short property value is the first equal
    string met in ``strings`` (one dict for a whole load, dropped after it).
    """
    kind = op["op"]
    if kind == "n":
        graph.put_node(
            NodeRecord(
                op["id"],
                _LABELS[op["label"]],
                op["key"],
                strings.setdefault(op["session"], op["session"]),
                datetime.fromisoformat(op["created"]),
                _share_values(_props(op["props"]), strings),
                op["seq"],
            )
        )
    elif kind == "dn":
        graph.delete_node(op["id"])
    elif kind == "e":
        graph.put_edge(_edge_of(op, graph))
    elif kind == "de":
        graph.delete_edge(_EDGE_TYPES[op["type"]], op["source"], op["target"])
    elif kind == "q":
        graph.seq[op["session"]] = max(graph.seq.get(op["session"], 0), op["value"])
    elif kind == "pk":
        edge = _edge_of(op["edge"], graph)
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


def _edge_of(fields: dict[str, Any], graph: MemoryGraph) -> EdgeRecord:
    return EdgeRecord(
        _EDGE_TYPES[fields["type"]],
        _stored_id(graph, fields["source"]),
        _stored_id(graph, fields["target"]),
        _props(fields.get("props")) or _NO_PROPS,
    )


def _props(value: Any) -> dict[str, Any]:
    if type(value) is dict:
        return value
    if value is None:
        return {}
    raise ValueError(f"'props' must be an object, not {type(value).__name__}")


def _share_values(props: dict[str, Any], strings: dict[str, str]) -> dict[str, Any]:
    for name, value in props.items():
        if type(value) is str and len(value) <= _SHARED_LENGTH:
            props[name] = strings.setdefault(value, value)  # same keys: iteration is unaffected
    return props


def _stored_id(graph: MemoryGraph, node_id: str) -> str:
    """The stored node's own id string, if there is such a node, else ``node_id``."""
    node = graph.nodes.get(node_id)
    return node_id if node is None else node.id
