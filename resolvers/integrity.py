"""What the graph model of SPEC §2 says about a node's properties and an edge's ends, for a
graph built from outside the use cases (``import-graph``): a node's properties must say what its
key says (the stores derive what they index from them: an artifact's id and version, a step's
chain and its place there), and an edge must join the labels its type joins, within one
session (but ``input``), as its ends' keys say (a step runs its own code, a version supersedes
an earlier one of its artifact), a chain's edges in the chain's order. Every graph the use
cases write satisfies them (``tests/stores/sqlite/test_graph_lines.py`` exports and imports
generated sessions). Each check raises ``ValueError`` saying what is wrong.
"""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Final

from resolvers.records import SUBAGENT_TASK_TYPE, EdgeType, Label, NodeRecord, artifact_key
from resolvers.steps import CHILD_SEPARATOR, SCOPE_PREFIX, position
from resolvers.validate import (
    STEP_PREFIX,
    check_characters,
    check_key_form,
    names_other_session,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

# The property that holds a node's key, for the labels that keep one (SPEC §2).
_KEY_PROPERTY: Final = {
    Label.RESEARCH_GOAL: "goal_id",
    Label.CODE: "code_id",
    Label.EVIDENCE: "evidence_id",
    Label.CLAIM: "claim_id",
    Label.SOURCE_FILE: "file_id",
}
# The steps of a chain (``seq`` > 0): a session's tool calls and subagent scopes.
_STEPS: Final = frozenset({Label.TOOL_CALL, Label.TASK})
_STEP_OR_GOAL: Final = _STEPS | {Label.RESEARCH_GOAL}
# The labels each edge type joins, from → to (SPEC §2).
_ENDS: Final[dict[EdgeType, frozenset[tuple[Label, Label]]]] = {
    EdgeType.NEXT: frozenset((a, b) for a in _STEP_OR_GOAL for b in _STEPS),
    EdgeType.PRODUCES: frozenset(
        {
            (Label.TOOL_CALL, Label.CODE),
            (Label.CODE, Label.ARTIFACT),
            (Label.TOOL_CALL, Label.PAPER),
        }
    ),
    EdgeType.EXTRACTS: frozenset(
        {(Label.PAPER, Label.EVIDENCE), (Label.SOURCE_FILE, Label.EVIDENCE)}
    ),
    EdgeType.SUPPORTS: frozenset(
        (a, Label.CLAIM) for a in (Label.EVIDENCE, Label.ARTIFACT, Label.SOURCE_FILE)
    ),
    EdgeType.STATED_IN: frozenset({(Label.CLAIM, Label.ARTIFACT)}),
    EdgeType.SUPERSEDES: frozenset({(Label.ARTIFACT, Label.ARTIFACT)}),
    EdgeType.INPUT: frozenset({(Label.ARTIFACT, Label.CODE), (Label.SOURCE_FILE, Label.CODE)}),
    EdgeType.CONTAINS: frozenset((Label.TASK, b) for b in _STEPS),
    EdgeType.FEEDS: frozenset({(Label.SOURCE_FILE, Label.RESEARCH_GOAL)}),
}
# The one edge type that may join two sessions: a later session's code reading an artifact.
_ACROSS_SESSIONS: Final = EdgeType.INPUT


class Chains:
    """The chains of a graph's steps as the store orders them (``(chain_at, seq, id)`` per
    session and scope), which their ``next`` and ``contains`` edges must follow."""

    def __init__(self, nodes: Iterable[NodeRecord]) -> None:
        chains: dict[tuple[str, Any], list[NodeRecord]] = {}
        for node in nodes:
            if node.seq > 0:
                scope = node.get("parent_subtask_id")
                chains.setdefault((node.session_id, scope), []).append(node)
        self._first: dict[tuple[str, Any], str] = {}
        self._after: dict[str, str] = {}
        for chain, steps in chains.items():
            steps.sort(key=lambda step: (*position(step), step.id))
            self._first[chain] = steps[0].id
            self._after.update((a.id, b.id) for a, b in pairwise(steps))

    def next_of(self, node: NodeRecord) -> str | None:
        """The step a ``next`` edge from ``node`` must go to (a goal's: its session's first)."""
        if node.label is Label.RESEARCH_GOAL:
            return self._first.get((node.session_id, None))
        return self._after.get(node.id)

    def first_in(self, scope: NodeRecord) -> str | None:
        """The step a ``contains`` edge from the subagent scope ``scope`` must go to."""
        return self._first.get((scope.session_id, scope.key))


def check_edge(edge_type: str, source: NodeRecord, target: NodeRecord, chains: Chains) -> None:
    """Refuse an edge between labels its type does not join, between two sessions (but an
    ``input``), or that contradicts its ends' keys or the chains: a step's ``produces`` edge to
    another execution's code, a ``supersedes`` edge to another artifact or a later version, a
    ``next`` or ``contains`` edge to another step than the chain's order puts there."""
    kind = EdgeType(edge_type)
    if (source.label, target.label) not in _ENDS[kind]:
        raise ValueError(
            f"the {kind.value!r} edge does not go from {source.label} to {target.label}"
        )
    if kind is not _ACROSS_SESSIONS and source.session_id != target.session_id:
        raise ValueError(
            f"the {kind.value!r} edge joins two sessions "
            f"({source.session_id!r}, {target.session_id!r})"
        )
    if kind is EdgeType.PRODUCES and target.label is Label.CODE:
        parent = source.get("parent_subtask_id")
        runs = (f"{STEP_PREFIX}{target.key}", f"{parent}{CHILD_SEPARATOR}{target.key}")
        if source.key not in runs:
            raise ValueError(f"the step {source.key!r} does not run the code {target.key!r}")
    elif kind is EdgeType.SUPERSEDES:
        versions = (source.get("version", 0), target.get("version", 0))
        if source.get("artifact_id") != target.get("artifact_id") or versions[0] <= versions[1]:
            raise ValueError(f"{source.key!r} does not supersede {target.key!r}")
    elif kind in (EdgeType.NEXT, EdgeType.CONTAINS):
        expected = chains.next_of(source) if kind is EdgeType.NEXT else chains.first_in(source)
        if target.id != expected:
            raise ValueError(
                f"the {kind.value!r} edge from {source.id!r} goes to {target.id!r}, where its "
                f"chain's order ('chain_at', 'seq') puts {expected!r}"
            )


def check_node(label: Label, key: str, session: str, props: dict[str, Any], seq: int) -> None:
    """Refuse (``ValueError``, or ``InvalidInputError`` naming the key) a node the graph model
    does not hold. The forms the API refuses in ids are checked apart (``check_key_forms``)."""
    if not isinstance(props, dict):
        raise ValueError(f"'props' must be an object, not {type(props).__name__}")
    named = _KEY_PROPERTY.get(label)
    if named is not None and props.get(named, key) != key:
        raise ValueError(f"{named!r} {props[named]!r} is not its key {key!r}")
    if label is Label.PAPER and props.get("link", key) != key:
        raise ValueError(f"'link' {props['link']!r} is not its key {key!r}")
    if named is not None and names_other_session(named, key, session):
        raise ValueError(f"its key {key!r} names another session than {session!r}")
    if label is Label.ARTIFACT:
        _check_artifact(key, props)
    if label is Label.TASK and props.get("task_type") != SUBAGENT_TASK_TYPE:
        raise ValueError(f"a Task is a subagent's scope: 'task_type' {props.get('task_type')!r}")
    _check_scope(label, key, props)
    if seq > 0:
        _check_step(label, props)


def check_key_forms(label: Label, key: str, props: dict[str, Any]) -> None:
    """The forms the API refuses in an id (``resolvers.validate.check_key_form``), refused in
    the key that id becomes (``InvalidInputError``): a Code's key is its ``executionId``, a
    top-level tool call's its ``taskId`` (or ``subtask:<executionId>``), an artifact's
    ``artifact_id`` its ``artifactId``, and a subagent's scope is named
    ``subtask:subagent:<subagentId>``. Apart from ``check_node``: a graph written before a form
    was refused holds it, and can be imported as it is."""
    if label is Label.TASK and key.startswith(SCOPE_PREFIX):
        check_key_form("subagent_id", key[len(SCOPE_PREFIX) :], f"the key {key!r}")
    elif label is Label.CODE:
        check_key_form("execution_id", key, f"the key {key!r}")
    elif label is Label.TOOL_CALL and props.get("parent_subtask_id") is None:
        check_key_form("task_id", key, f"the key {key!r}")
    elif label is Label.ARTIFACT:
        artifact_id = props["artifact_id"]
        check_key_form("artifact_id", artifact_id, f"'artifact_id' {artifact_id!r}")


def _check_scope(label: Label, key: str, props: dict[str, Any]) -> None:
    """A subagent's scope is ``subtask:subagent:<subagentId>`` and has no scope; a tool call
    with a ``parent_subtask_id`` is a step of that scope, and its key names it
    (``<scope>:exec:<ref>``), whatever its ``seq``."""
    parent = props.get("parent_subtask_id")
    if label is Label.TASK:
        if not key.startswith(SCOPE_PREFIX):
            raise ValueError(f"a subagent's scope's key is {SCOPE_PREFIX}<id>, not {key!r}")
        _check_id_part(key[len(SCOPE_PREFIX) :], key)
        if parent is not None:
            raise ValueError("a subagent's scope has no 'parent_subtask_id'")
    if label is not Label.TOOL_CALL or parent is None:
        return
    if not (
        isinstance(parent, str)
        and parent.startswith(SCOPE_PREFIX)
        and key.startswith(f"{parent}{CHILD_SEPARATOR}")
    ):
        raise ValueError(f"'parent_subtask_id' {parent!r} is not the scope its key {key!r} names")
    _check_id_part(parent[len(SCOPE_PREFIX) :], key)
    _check_id_part(key[len(parent) + len(CHILD_SEPARATOR) :], key)


def _check_id_part(part: str, key: str) -> None:
    """An id the API took to make ``key`` (a subagent's, a step's): as the API checks it."""
    if not part.strip():
        raise ValueError(f"the key {key!r} holds an empty id")
    check_characters(part, f"the key {key!r}", single_line=True)


def _check_artifact(key: str, props: dict[str, Any]) -> None:
    """An artifact version is found by its key and by its ``artifact_id`` and ``version`` (the
    store indexes those): they must name the same version."""
    artifact_id, version = props.get("artifact_id"), props.get("version")
    if not isinstance(artifact_id, str) or type(version) is not int:
        raise ValueError("an Artifact needs 'artifact_id' (a text) and 'version' (an integer)")
    if key != artifact_key(artifact_id, version):
        raise ValueError(
            f"'artifact_id' {artifact_id!r} and 'version' {version} name "
            f"{artifact_key(artifact_id, version)!r}, not its key {key!r}"
        )


def _check_step(label: Label, props: dict[str, Any]) -> None:
    """A step's place on its chain (its scope's: ``_check_scope``) is ``chain_at``, a time."""
    if label not in _STEPS:
        raise ValueError(f"'seq' > 0 places a node on a chain, and a {label} is no step")
    at = props.get("chain_at")
    try:
        placed = isinstance(at, str) and datetime.fromisoformat(at).utcoffset() is not None
    except ValueError:
        placed = False
    if not placed:
        raise ValueError(f"a step's 'chain_at' {at!r} is not a time with a UTC offset")
