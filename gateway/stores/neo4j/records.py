"""Conversion between port records and Neo4j property maps.

A node is stored with its label (one of the nine) and these properties:

* the record's ``props``, flattened: values Neo4j can store natively (``str``, ``int``,
  ``float``, ``bool`` and homogeneous lists of them) as they are; anything else (a mapping, a
  mixed list) as JSON text, its name listed in ``_sm_json`` so reading decodes it again;
* ``id``, ``key``, ``session_id``, ``created_at`` (native ``DateTime``) and ``seq``;
* internal helpers under the reserved ``_sm_`` prefix, stripped on read: ``_sm_live`` (not
  soft-deleted), ``_sm_tokens`` / ``_sm_text`` (search tokens as a sorted list and
  space-joined for the fulltext index; live nodes only), ``_sm_ranks`` (the best field rank of
  each token, parallel to ``_sm_tokens``), ``_sm_sess`` (one fulltext token naming the session,
  ``session_token``, so in-session search goes through the index too), ``_sm_scope`` /
  ``_sm_pos`` (chain and position of a step, ``seq > 0`` only) and ``_sm_order`` (insertion
  order, set by the Cypher write).

A relationship holds the edge's props (same encoding) plus ``_sm_order`` and ``_sm_session``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Final

from resolvers.records import EdgeRecord, EdgeType, Label, NodeRecord
from resolvers.text import SEARCH_FIELDS, token_ranks

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from resolvers.store import ChainPosition

INTERNAL_PREFIX: Final = "_sm_"
RECORD_FIELDS: Final = frozenset({"id", "key", "session_id", "created_at", "seq"})
_INT64 = 2**63


def node_properties(node: NodeRecord, *, search: bool = True) -> dict[str, Any]:
    """The property map stored for ``node`` (without ``_sm_order``); without the search
    helpers (``_sm_tokens``, ``_sm_ranks``, ``_sm_text``, ``_sm_sess``) when not ``search``."""
    values, encoded = _encode(node.props, RECORD_FIELDS)
    values |= {
        "id": node.id,
        "key": node.key,
        "session_id": node.session_id,
        "created_at": node.created_at,
        "seq": node.seq,
        "_sm_live": not node.deleted,
    }
    if encoded:
        values["_sm_json"] = encoded
    ranks = token_ranks(node.props) if search and not node.deleted else {}
    if ranks:
        found = sorted(ranks)
        values["_sm_tokens"] = found
        values["_sm_ranks"] = [ranks[token] for token in found]
        values["_sm_text"] = " ".join(found)
        values["_sm_sess"] = session_token(node.session_id)
    if node.seq > 0:
        values["_sm_scope"] = chain_scope(node.get("parent_subtask_id"))
        values["_sm_pos"] = chain_pos((str(node.get("chain_at", "")), node.seq))
    return values


def same_search_text(stored: NodeRecord, node: NodeRecord) -> bool:
    """Whether ``node`` stores the same search helpers as ``stored`` (so an update need not
    tokenise either of them)."""
    return (
        stored.deleted == node.deleted
        and stored.session_id == node.session_id
        and all(stored.props.get(name) == node.props.get(name) for name in SEARCH_FIELDS)
    )


def take_created_at(props: dict[str, Any]) -> str | None:
    """Take a ``created_at`` with a fixed offset (UTC, as the gateway makes them) out of a
    property map, as ISO text for the write statement to convert (``datetime(row.at)``: the
    value the driver would store). The driver's conversion of a ``datetime`` costs more CPU
    than the rest of a node's row. Any other time (naive, a named zone) stays in ``props``."""
    value = props.get("created_at")
    if not isinstance(value, datetime) or not isinstance(value.tzinfo, timezone):
        return None
    del props["created_at"]
    return value.isoformat()


def session_token(session_id: str) -> str:
    """The fulltext token of a session: a digest, so any session id is one plain token."""
    return "s" + hashlib.sha256(session_id.encode()).hexdigest()[:32]


def edge_properties(edge: EdgeRecord) -> dict[str, Any]:
    """The property map stored on the relationship of ``edge`` (without internal helpers)."""
    values, encoded = _encode(edge.props, frozenset())
    if encoded:
        values["_sm_json"] = encoded
    return values


def chain_scope(parent: object) -> str:
    """The ``_sm_scope`` of a chain: ``""`` for the main chain, ``">" + key`` for a scope."""
    return "" if parent is None else ">" + str(parent)


def chain_pos(position: ChainPosition) -> str:
    """Text whose order is the order of ``(chain_at, seq)`` (``seq`` zero-padded)."""
    chain_at, seq = position
    return f"{chain_at}\x00{seq:020d}"


def to_node(value: Mapping[str, Any]) -> NodeRecord:
    """The record of a node map projected as ``n {.*, _sm_label: labels(n)[0]}``."""
    return NodeRecord(
        id=value["id"],
        label=Label(value["_sm_label"]),
        key=value["key"],
        session_id=value["session_id"],
        created_at=_native_time(value["created_at"]),
        props=_decode(value),
        seq=int(value.get("seq") or 0),
    )


def to_edge(edge_type: str, source: str, target: str, props: Mapping[str, Any]) -> EdgeRecord:
    return EdgeRecord(EdgeType(edge_type), source, target, _decode(props))


def to_nodes(values: Iterable[Mapping[str, Any]]) -> list[NodeRecord]:
    """The records of projected nodes, leaving out those that vanished (``vanished``)."""
    return Decoded().nodes(values)


def to_edges(rows: Iterable[Mapping[str, Any]]) -> list[EdgeRecord]:
    """The records of ``{type, source, target, props}`` rows, leaving out relationships that
    vanished the same way: Neo4j projects those without their type or an endpoint's id."""
    return Decoded().edges(rows)


class Decoded:
    """``to_nodes`` and ``to_edges`` of the parts of one answer, each distinct node and edge
    decoded once: a trace's region lists a step in the entry of every step above it, and its
    edges too. One statement's answer is one state, so a node or edge reads the same each
    time it is listed."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeRecord] = {}
        self._edges: dict[tuple[str, str, str], EdgeRecord] = {}

    def nodes(self, values: Iterable[Mapping[str, Any]]) -> list[NodeRecord]:
        known = self._nodes
        found = []
        for value in values:
            if vanished(value):
                continue
            node = known.get(value["id"])
            if node is None:
                node = known[value["id"]] = to_node(value)
            found.append(node)
        return found

    def edges(self, rows: Iterable[Mapping[str, Any]]) -> list[EdgeRecord]:
        known = self._edges
        found = []
        for row in rows:
            key = (row["type"], row["source"], row["target"])
            if None in key:
                continue
            edge = known.get(key)
            if edge is None:
                edge = known[key] = to_edge(*key, row["props"])
            found.append(edge)
        return found


def vanished(node: Mapping[str, Any]) -> bool:
    """Whether a projected node was deleted by a commit that landed while the statement read
    it (reads are read committed): Neo4j then projects it without its id. It is no longer
    stored, so a read leaves it out."""
    return node.get("id") is None


def parked_props(edge: EdgeRecord) -> str:
    return json.dumps(dict(edge.props), ensure_ascii=False, sort_keys=True)


def to_parked(edge_type: str, source: str, target: str, props: str) -> EdgeRecord:
    return EdgeRecord(EdgeType(edge_type), source, target, json.loads(props))


def check_props(props: Mapping[str, Any], reserved: frozenset[str]) -> None:
    """Refuse property names that would collide with stored fields or internal helpers."""
    for name in props:
        if name in reserved or name.startswith(INTERNAL_PREFIX):
            raise ValueError(f"reserved property name: {name!r}")


def _encode(props: Mapping[str, Any], reserved: frozenset[str]) -> tuple[dict[str, Any], list[str]]:
    check_props(props, reserved)
    values: dict[str, Any] = {}
    encoded: list[str] = []
    for name, value in props.items():
        if _native(value):
            values[name] = list(value) if isinstance(value, tuple) else value
        else:
            values[name] = json.dumps(value, ensure_ascii=False)
            encoded.append(name)
    return values, sorted(encoded)


def _native(value: Any) -> bool:
    if isinstance(value, list | tuple):
        kinds = {_kind(item) for item in value}
        return len(kinds) <= 1 and None not in kinds
    return value is None or _kind(value) is not None


def _kind(value: Any) -> type | None:
    """The Neo4j storage kind of a scalar (``None`` when Neo4j cannot store it natively)."""
    if isinstance(value, bool):
        return bool
    if isinstance(value, int):
        return int if -_INT64 <= value < _INT64 else None
    if isinstance(value, str | float):
        return str if isinstance(value, str) else float
    return None


def _decode(stored: Mapping[str, Any]) -> dict[str, Any]:
    encoded = set(stored.get("_sm_json") or ())
    return {
        name: json.loads(value) if name in encoded else value
        for name, value in stored.items()
        if name not in RECORD_FIELDS and not name.startswith(INTERNAL_PREFIX)
    }


def _native_time(value: Any) -> datetime:
    """A stored time as ``NodeRecord.created_at``: ISO text (``cypher.NODE`` projects a fixed
    offset so), else the driver's time type or a ``datetime``."""
    if isinstance(value, str):
        native = datetime.fromisoformat(value)
    else:
        native = value.to_native() if hasattr(value, "to_native") else value
    if native.tzinfo is not None and native.utcoffset() == timedelta(0):
        return native.replace(tzinfo=UTC)
    return native
