"""Source resolution: turn a ``nodeId`` argument into one live node (SPEC §2.1).

Shared by ``node()``, ``getChain``, ``chainExists`` and ``traceProvenance`` so that every read
resolves a reference the same way. A reference is either

* a global id (``Artifact:fig#v2``, ``Paper:s1|https://…``, ``ToolCall:subtask:e1``), or
* a domain key: ``task_id``, ``code_id``, ``goal_id``, ``evidence_id``, ``claim_id``,
  ``file_id``, a Paper link (normalised first), ``<artifactId>#v<n>`` or a bare ``artifactId``
  (its latest version).

An explicit ``version`` wins over a ``#v<n>`` suffix. With ``session_id`` only that session's
nodes match; without it an ambiguous key resolves to the most recently created match.
Soft-deleted nodes never match.

A global id is first a lookup (``source_ref``): a backend may run it inside the request of
the walk that starts there (``resolvers.store.SourceRef``), and only when it finds nothing is
the reference resolved over the primitives, as here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from resolvers.errors import InvalidInputError, NodeNotFoundError
from resolvers.links import normalize_link
from resolvers.records import Label, NodeRecord, artifact_key, split_artifact_key, split_node_id
from resolvers.store import SourceRef
from resolvers.validate import check_unicode

if TYPE_CHECKING:
    from resolvers.store import GraphReader


async def resolve_node(
    store: GraphReader,
    node_ref: str,
    *,
    session_id: str | None = None,
    version: int | None = None,
) -> NodeRecord:
    """The live node ``node_ref`` names; ``NodeNotFoundError`` when there is none."""
    ref = _checked(node_ref, session_id, version)
    found = await _by_global_id(store, ref, session_id, version)
    parsed = split_node_id(ref)
    # A Paper's global id names that session's Paper or nothing: read as a link, it would name
    # another session's Paper whose link is that id ("Paper:s|…" normalises to "paper:s|…").
    if found is None and (parsed is None or parsed[0] is not Label.PAPER):
        found = await _by_domain_key(store, ref, session_id, version)
    if found is None:
        raise NodeNotFoundError(node_ref)
    return found


def source_ref(node_ref: str, *, session_id: str | None, version: int | None) -> SourceRef | None:
    """The lookup that finds what ``resolve_node`` answers when ``node_ref`` is a global id
    of a node it finds (of any label but Paper, whose link is normalised first); ``None`` for
    other references. Refuses bad input as ``resolve_node`` does."""
    ref = _checked(node_ref, session_id, version)
    parsed = split_node_id(ref)
    if parsed is None or parsed[0] is Label.PAPER:
        return None
    label, key = parsed
    if label is not Label.ARTIFACT:
        return SourceRef(label, ref, session_id)
    artifact_id, wanted = split_artifact_key(key)
    if version is not None:
        wanted = version
    wanted_key = None if wanted is None else artifact_key(artifact_id, wanted)
    return SourceRef(label, None, session_id, artifact_id, wanted_key)


def _checked(node_ref: str, session_id: str | None, version: int | None) -> str:
    ref = node_ref  # opaque: as stored, whitespace and all (an older write may hold some)
    if not ref.strip():
        raise InvalidInputError("nodeId", "must not be empty")
    check_unicode(ref, "nodeId")
    if session_id is not None:
        check_unicode(session_id, "sessionId")
    if version is not None and version < 1:
        raise InvalidInputError("version", "must be 1 or more")
    return ref


def in_scope(node: NodeRecord | None, session_id: str | None) -> TypeGuard[NodeRecord]:
    """Whether ``node`` exists, is live and belongs to ``session_id`` (any session if None)."""
    return (
        node is not None
        and not node.deleted
        and (session_id is None or node.session_id == session_id)
    )


def most_recent(nodes: list[NodeRecord]) -> NodeRecord | None:
    """The most recently created node (later in ``nodes`` wins a tie)."""
    best: NodeRecord | None = None
    for node in nodes:
        if best is None or node.created_at >= best.created_at:
            best = node
    return best


async def _by_global_id(
    store: GraphReader, ref: str, session_id: str | None, version: int | None
) -> NodeRecord | None:
    parsed = split_node_id(ref)
    if parsed is None:
        return None
    label, key = parsed
    if label is Label.ARTIFACT:
        return await _artifact(store, key, session_id, version)
    if label is Label.PAPER:
        paper_session = ref[len(Label.PAPER.value) + 1 :].partition("|")[0]
        if session_id is not None and paper_session != session_id:
            return None
        papers = await store.nodes_by_key(
            normalize_link(key), labels=[Label.PAPER], session_id=paper_session
        )
        return most_recent([node for node in papers if in_scope(node, session_id)])
    (node,) = await store.get_nodes([ref])
    return node if in_scope(node, session_id) else None


async def _by_domain_key(
    store: GraphReader, ref: str, session_id: str | None, version: int | None
) -> NodeRecord | None:
    artifact = await _artifact(store, ref, session_id, version)
    if artifact is not None or version is not None:
        return artifact  # a version asked for names an artifact's, or nothing
    # An artifact's key is found by ``_artifact`` alone, where ``version`` wins: ``fig#v2``
    # asked with ``version: 1`` names version 1, which may not exist.
    matches = [
        node
        for node in await store.nodes_by_key(ref, session_id=session_id)
        if node.label is not Label.ARTIFACT
    ]
    link = normalize_link(ref)
    if link and link != ref:
        matches += await store.nodes_by_key(link, labels=[Label.PAPER], session_id=session_id)
    return most_recent([node for node in matches if in_scope(node, session_id)])


async def _artifact(
    store: GraphReader, ref: str, session_id: str | None, version: int | None
) -> NodeRecord | None:
    """``<artifactId>#v<n>`` or a bare ``artifactId`` (latest live version), ``version`` wins."""
    artifact_id, wanted = split_artifact_key(ref)
    if version is not None:
        wanted = version
    versions = [
        node
        for node in await store.artifact_versions(artifact_id, session_id=session_id)
        if in_scope(node, session_id)
    ]
    if wanted is not None:
        versions = [node for node in versions if node.key == artifact_key(artifact_id, wanted)]
    return versions[-1] if versions else None
