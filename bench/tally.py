"""What the load's callers were answered, how the answers are judged, and the report.

Answers are judged once the load is over, because whether ``MemoryGraphUnreachable`` is allowed
depends on the outage window, known only once the gateway has recovered. Each request counts
as at most one error: no answer (a transport error, counted at once), a failed answer (not HTTP
200, a GraphQL error, or a union member its kind does not expect), one slower than the bound,
or an unreachable answer outside the outage window.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.client import Latency

if TYPE_CHECKING:
    from bench.outage import Outage, Timeline

WRITES = ("observeExecution", "observeToolCall", "observeUploadFile")
READS = ("getChain", "traceProvenance", "searchNodes", "subgraph")
WINDOW = 10.0  # seconds per throughput window in the report
# After the gateway reports the backend healthy with an empty outbox, requests sent within this
# many seconds may still answer unreachable: /health is polled every 0.2 s and pings over its own
# connection, while a request may have picked a connection broken by the restart.
GRACE = 2.0


@dataclass(frozen=True, slots=True)
class Answer:
    kind: str
    sent: float  # time.monotonic()
    answered: float
    unreachable: bool = False  # MemoryGraphUnreachable: queued for a write, not for a read
    failure: str | None = None  # why the answer is wrong whatever the moment, or None

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @property
    def seconds(self) -> float:
        return self.answered - self.sent


@dataclass
class Tally:
    bound: float  # seconds: a slower answer is an error
    answers: list[Answer] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    samples: dict[str, str] = field(default_factory=dict)
    acknowledged: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    queued: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    wrong: list[Answer] = field(default_factory=list)  # the answers judged errors

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        self.samples.setdefault(kind, detail[:300])

    def judge(self, timeline: Timeline | None) -> None:
        """Count the answers that are errors: failed, too slow, or unreachable outside the
        outage window of ``timeline``."""
        for answer in self.answers:
            if answer.failure is not None:
                problem = answer.failure
            elif answer.seconds > self.bound:
                problem = f"answered after {answer.seconds:.2f} s > {self.bound:g} s"
            elif answer.unreachable and not in_window(answer, timeline):
                problem = "MemoryGraphUnreachable outside the outage window"
            else:
                continue
            self.error(answer.kind, problem)
            self.wrong.append(answer)


def in_window(answer: Answer, timeline: Timeline | None) -> bool:
    """Answered after the stop began, sent before the gateway was settled again (+ GRACE)."""
    if timeline is None or timeline.stop_sent is None or answer.answered < timeline.stop_sent:
        return False
    return timeline.recovered is None or answer.sent <= timeline.recovered + GRACE


@dataclass(frozen=True, slots=True)
class LoadResult:
    run: str  # the id in this run's session names
    backend: str
    clients: int
    tally: Tally
    started: float  # time.monotonic() when the load began
    elapsed: float
    outage: Outage | None
    timeline: Timeline | None
    settled_after: float | None  # seconds from the end of the load to an empty outbox
    missing_live: int
    missing_restarted: int

    @property
    def served(self) -> int:
        return len(self.tally.answers)

    @property
    def errors(self) -> int:
        return sum(self.tally.errors.values())

    @property
    def acknowledged_steps(self) -> int:
        return sum(len(steps) for steps in self.tally.acknowledged.values())

    @property
    def queued_writes(self) -> int:
        return sum(a.unreachable for a in self.tally.answers if a.kind in WRITES)

    @property
    def unreachable_reads(self) -> int:
        return sum(a.unreachable for a in self.tally.answers if a.kind in READS)

    @property
    def max_seconds(self) -> float:
        return max((a.seconds for a in self.tally.answers), default=0.0)

    def served_after(self, moment: float | None, kinds: tuple[str, ...]) -> int:
        """Answers with data (not unreachable, not failed) to ``kinds`` sent after ``moment``."""
        if moment is None:
            return 0
        return sum(
            a.sent > moment and a.kind in kinds and not (a.unreachable or a.failed)
            for a in self.tally.answers
        )

    @property
    def reads_after_restart(self) -> int:
        """Reads answered with data, sent after the gateway reported Neo4j healthy again."""
        reachable = self.timeline.reachable if self.timeline is not None else None
        return self.served_after(reachable, READS)

    @property
    def served_after_window(self) -> int:
        """Requests answered with data, sent after the outage window closed."""
        recovered = self.timeline.recovered if self.timeline is not None else None
        closed = recovered + GRACE if recovered is not None else None
        return self.served_after(closed, (*WRITES, *READS))

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.missing_live or self.missing_restarted)


def report(result: LoadResult) -> str:
    tally, elapsed = result.tally, result.elapsed
    everything = Latency.of([a.seconds for a in tally.answers])
    lines = [
        f"{result.clients} clients for {elapsed:.1f} s on {result.backend} (run {result.run}): "
        f"{result.served} requests served ({result.served / elapsed:.0f}/s), "
        f"{result.errors} errors",
        f"{'all':<18} n={everything.count:<6} p50 {everything.p50:7.1f}  p99 {everything.p99:7.1f}"
        f"  max {result.max_seconds * 1000:7.1f} ms  (bound {tally.bound * 1000:.0f} ms)",
    ]
    for kind in (*WRITES, *READS):
        answers = [a for a in tally.answers if a.kind == kind]
        latency = Latency.of([a.seconds for a in answers])
        worst = max((a.seconds for a in answers), default=0.0)
        unreachable, errors = sum(a.unreachable for a in answers), tally.errors[kind]
        lines.append(
            f"{kind:<18} n={latency.count:<6} p50 {latency.p50:7.1f}  p99 {latency.p99:7.1f}"
            f"  max {worst * 1000:7.1f} ms  unreachable {unreachable:<4} errors {errors}"
        )
    others = [f"{kind} {n}" for kind, n in tally.errors.items() if kind not in (*WRITES, *READS)]
    if others:
        lines.append(f"other errors: {', '.join(others)}")
    lines += [f"  e.g. {kind}: {sample}" for kind, sample in tally.samples.items()]
    windows = Counter(int((a.answered - result.started) // WINDOW) for a in tally.answers)
    per_second = [f"{windows[w] / WINDOW:.0f}" for w in range(int(elapsed // WINDOW))]
    lines.append(f"requests/s per {WINDOW:.0f} s window: {' '.join(per_second)}")
    lines += _outage_lines(result)
    queued = sum(len(steps) for steps in tally.queued.values())
    lines.append(
        f"steps acknowledged: {result.acknowledged_steps}, queued: {queued}; missing on the "
        f"running gateway: {result.missing_live}, after a restart: {result.missing_restarted}"
    )
    return "\n".join(lines)


def _outage_lines(result: LoadResult) -> list[str]:
    settled = "never" if result.settled_after is None else f"{result.settled_after:.1f} s"
    lines = [f"no pending writes after the load: {settled}"]
    timeline, outage = result.timeline, result.outage
    if timeline is None or outage is None:
        return lines

    def at(moment: float | None) -> str:
        return "never" if moment is None else f"+{moment - result.started:.1f} s"

    before = sum(a.answered < (timeline.stop_sent or 0.0) for a in result.tally.wrong)
    inside = sum(in_window(a, timeline) for a in result.tally.wrong)
    return [
        f"outage {outage.start:g}:{outage.duration:g}: stop sent {at(timeline.stop_sent)}, "
        f"stopped {at(timeline.stopped)}, start sent {at(timeline.start_sent)}, "
        f"Bolt ready {at(timeline.started)}",
        f"gateway: DEGRADED {at(timeline.degraded)}, HEALTHY {at(timeline.reachable)}, "
        f"HEALTHY with no pending writes {at(timeline.recovered)} "
        f"(outbox peak {timeline.peak_pending}); window closes {GRACE:g} s after that",
        f"unreachable reads: {result.unreachable_reads}, queued writes: {result.queued_writes}; "
        f"answered with data: {result.reads_after_restart} reads sent after HEALTHY, "
        f"{result.served_after_window} requests sent after the window",
        f"errors answered before the stop: {before}, in the window: {inside}, after it: "
        f"{len(result.tally.wrong) - before - inside}, without an answer: "
        f"{result.errors - len(result.tally.wrong)}",
        *lines,
    ]
