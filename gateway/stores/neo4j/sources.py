"""A walk's source found inside the walk's own statement, its session's state taken first.

A chain walk or a trace starts from the node a ``resolvers.store.SourceRef`` names; finding it
in the walk's statement saves the round trip of resolving it first. Every answer of a walk
must also come from one committed state of the source's session (``resolvers.store``,
``one_state``), which ``Neo4jStore.session_view`` gives by taking the session counter's lock
before it reads (``cypher.LOCK_SESSION``: each write of the session holds that lock from its
first statement to its wholly visible commit). Here the lock is taken inside the statement,
once the source names its session:

1. ``s0``: the source as the lookup finds it now (read committed: possibly mid-commit);
2. ``sc``: the session to read, ``$src.session`` when given, else ``s0``'s; its counter is
   locked as ``cypher.LOCK_SESSION`` does (waiting for the write in flight, if any);
3. ``s``: the source found again, in ``sc`` only. This lookup and every clause after it run
   after the lock: Cypher applies a clause's writes before the clauses that follow it read
   (the planner stacks each later part on top of the update, with an ``Eager`` barrier where
   they could conflict), so they read the committed state no write of ``sc`` can change
   before the transaction ends.

The statement changes nothing, not even a counter for a session never written, so it runs
in auto-commit, its lock held until the statement ends (``Neo4jStore._in_one_statement``),
or first in a transaction rolled back when the read needs further statements. The same lookup
without the lock (``source``) serves walks that need no one state (``chainExists``).

Every text is per source label (one index seek) and whether the source is an artifact's
latest version; its parameters are one map, ``$src`` (``source_params``), never null inside:
Neo4j plans a statement anew for another parameter type, and for another length bucket of a
top-level string (0, 1-10, 11-100 and so on characters), but keys a map by its type alone, so the
plan made ahead for an empty id (``Traces.trace_statements``) serves every id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, LiteralString

from gateway.stores.neo4j.cypher import label_name

if TYPE_CHECKING:
    from resolvers.records import Label
    from resolvers.store import SourceRef

_LOCK: Final[LiteralString] = (
    "CALL (sc) { WITH sc WHERE sc IS NOT NULL "
    "MERGE (c:SessionCounter {session_id: sc}) ON CREATE SET c._sm_new = true "
    "SET c._sm_lock = true REMOVE c._sm_lock WITH c WHERE c._sm_new DELETE c } "
)
"""``cypher.LOCK_SESSION`` of the session ``sc``, as a unit subquery that changes nothing: a
counter it had to create (a session never written) it deletes again. The locks stay taken
until the transaction ends, the ``session_id`` constraint's entry included, so a first write
of that session waits as it would behind an existing counter."""


def _lookup(
    label: Label, by_artifact: bool, name: LiteralString, session: LiteralString
) -> LiteralString:
    """Binds ``name`` to the live node of ``SourceRef`` whose session meets ``session``, or to
    null: ``$src.id`` of ``label``, else the last version of ``$src.artifact`` (keyed
    ``$src.key`` unless ``$src.any_key``) in ``cypher.ARTIFACT_VERSIONS`` order, as
    ``resolvers.resolve`` picks."""
    live = f"{name}._sm_live AND {session}"
    if by_artifact:
        return (
            f"CALL (*) {{ MATCH ({name}:Artifact {{artifact_id: $src.artifact}}) "
            f"WHERE {live} AND ($src.any_key OR {name}.key = $src.key) "
            f"WITH {name} ORDER BY {name}.version DESC, {name}._sm_order DESC LIMIT 1 "
            f"RETURN collect({name})[0] AS {name} }} "
        )
    return f"OPTIONAL MATCH ({name}:{label_name(label)} {{id: $src.id}}) WHERE {live} "


def source(label: Label, by_artifact: bool) -> LiteralString:
    """Binds ``s`` to the node the ``SourceRef`` finds (in ``$src.session`` unless
    ``$src.any_session``), or to null, and ``sc`` to the session the walk reads; no lock."""
    anywhere: LiteralString = "($src.any_session OR s.session_id = $src.session)"
    return (
        _lookup(label, by_artifact, "s", anywhere)
        + "WITH s, CASE WHEN $src.any_session THEN s.session_id ELSE $src.session END AS sc "
    )


def locked_source(label: Label, by_artifact: bool) -> LiteralString:
    """As ``source``, the session ``sc`` locked first and ``s`` found after the lock."""
    anywhere: LiteralString = "($src.any_session OR s0.session_id = $src.session)"
    return (
        _lookup(label, by_artifact, "s0", anywhere)
        + "WITH CASE WHEN $src.any_session THEN s0.session_id ELSE $src.session END AS sc "
        + _LOCK
        + _lookup(label, by_artifact, "s", "s.session_id = sc")
        + "WITH s, sc "
    )


def source_params(ref: SourceRef) -> dict[str, Any]:
    """The parameters of ``source`` and ``locked_source``."""
    return {
        "src": {
            "id": ref.node_id or "",
            "artifact": ref.artifact_id or "",
            "key": ref.key or "",
            "any_key": ref.key is None,
            "session": ref.session_id or "",
            "any_session": ref.session_id is None,
        }
    }
