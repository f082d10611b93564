"""Equivalence of the two write paths the benchmark uses.

The store filled over HTTP by the ingest phase is compared with a fresh store that received the
same events in-process (``bench.preload``): the same nodes (label, key, session, seq,
properties — not the server's receive time), edges, parked edges and step counters. If they
match, preloading the large stores in-process builds what HTTP clients would have built.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.preload import apply_session
from gateway.stores.file.store import FileStore

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from bench.generate import Session
    from gateway.stores.file.codec import Captured


@dataclass(frozen=True, slots=True)
class Equivalence:
    nodes: int
    edges: int
    differences: int

    @property
    def same(self) -> bool:
        return self.differences == 0


def _canonical(captured: Captured) -> set[str]:
    rows = [
        ["n", n.id, n.label.value, n.key, n.session_id, n.seq, dict(n.props)]
        for n in captured.nodes
    ]
    rows += [["e", e.type.value, e.source, e.target, dict(e.props)] for e in captured.edges]
    rows += [["p", waiting, e.type.value, e.source, e.target] for waiting, e in captured.parked]
    rows += [["q", session, value] for session, value in captured.seq.items()]
    return {json.dumps(row, sort_keys=True) for row in rows}


async def compare_with_in_process(
    http_store_dir: Path, scratch_dir: Path, sessions: Sequence[Session]
) -> Equivalence:
    """Compare the (closed) store at ``http_store_dir`` with ``sessions`` applied in-process."""
    over_http = await FileStore.open(http_store_dir, fsync=False)
    try:
        expected = over_http.capture()
    finally:
        await over_http.aclose()
    in_process = await FileStore.open(scratch_dir, fsync=False)
    try:
        for session in sessions:
            await apply_session(in_process, session)
        actual = in_process.capture()
    finally:
        await in_process.aclose()
    left, right = _canonical(expected), _canonical(actual)
    return Equivalence(len(expected.nodes), len(expected.edges), len(left ^ right))
