"""The kill test shared by both embedded engines: a child process of concurrent writers,
SIGKILLed after some acknowledged writes, and the check that no transaction was kept in part.

Each writer records executions e<first>, e<first+1>, … for ever, each with its Code and an
Artifact (one transaction), printing "ACK <i>" once each is durable.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from resolvers.records import EdgeType, Label, NodeRecord, node_id

REPO_ROOT = Path(__file__).resolve().parents[2]
CRASH_WRITERS = 4
# GATEWAY_LONG_TESTS=1 kills the writer many more times (the default keeps CI fast).
KILL_ROUNDS = 40 if os.environ.get("GATEWAY_LONG_TESTS") == "1" else 3

_WRITER = """
import asyncio, sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
{imports}
from resolvers.events import ExecutionObserved, FirstMessageObserved, ProducedArtifact
from resolvers.observe import observe_execution, observe_session_first_message

async def main(directory: str, first: int, writers: int) -> None:
    store = await {open}
    goal = FirstMessageObserved(session_id="s1", goal_id="goal:session:s1", core_objective="x")
    await observe_session_first_message(store, goal)
    numbers = iter(range(first, first + 100_000))

    async def write() -> None:
        for i in numbers:
            finished = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i)
            event = ExecutionObserved(
                session_id="s1", execution_id=f"e{{i}}", turn_id="t", tool="run_python",
                code_hash="h", status="succeeded", started_at=finished, finished_at=finished,
                produced_artifacts=(ProducedArtifact(f"fig-e{{i}}", 1),),
            )
            await observe_execution(store, event)
            print(f"ACK {{i}}", flush=True)

    await asyncio.gather(*(write() for _ in range(writers)))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


def writer_script(imports: str, open_store: str) -> str:
    """The child's program: ``imports`` bring the engine, ``open_store`` opens it on
    ``Path(directory)`` (an awaitable expression)."""
    return _WRITER.format(imports=imports, open=open_store)


def run_until_killed(script: str, directory: Path, first: int, kill_after: int) -> set[int]:
    """Run ``script``, SIGKILL it once ``kill_after`` writes are acknowledged; every ACK."""
    command = [sys.executable, "-c", script, str(directory), str(first), str(CRASH_WRITERS)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, cwd=REPO_ROOT) as child:
        assert child.stdout is not None
        acked: set[int] = set()
        for raw in child.stdout:
            acked.add(int(raw.split()[1]))
            if len(acked) == kill_after:
                child.send_signal(signal.SIGKILL)
                break
        acked.update(int(raw.split()[1]) for raw in child.stdout)  # ACKs already in the pipe
        child.wait()
    assert child.returncode == -signal.SIGKILL, "the writer died before it was killed"
    return acked


def half_applied(nodes: dict[str, NodeRecord], edges: set[tuple[EdgeType, str, str]]) -> list[str]:
    """Executions whose ToolCall is stored without all that its transaction wrote with it."""
    problems = []
    for node in nodes.values():
        if node.label is not Label.TOOL_CALL:
            continue
        execution = node.key.removeprefix("subtask:")
        code = node_id(Label.CODE, execution)
        figure = node_id(Label.ARTIFACT, f"fig-{execution}#v1")
        whole = {node.id, code, figure} <= set(nodes) and {
            (EdgeType.PRODUCES, node.id, code),
            (EdgeType.PRODUCES, code, figure),
        } <= edges
        if not whole:
            problems.append(execution)
    return problems
