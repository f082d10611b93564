"""The Markdown report of one run: tables side by side, targets met or missed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bench.client import Latency
    from bench.ingest import Throughput
    from bench.results import IngestResults, Neo4jResults, Results, SizeResults

TRIVIAL = "{ __typename }"
WALKS = ("getChain", "traceProvenance")
REFERENCE = {
    "ingest": "3.5 requests/s",
    "growth": "19.5 → 549.5 ms over 2,000 steps (28x)",
    "chains": "0.6-1.0 s at 10k nodes; trace, chainExists, related task fail at ~8k",
    "search": "1.7 s at 10k nodes",
    "cold": "32 s",
}


def size_name(nodes: int) -> str:
    if nodes >= 1_000_000 and nodes % 1_000_000 == 0:
        return f"{nodes // 1_000_000}M"
    return f"{nodes // 1000}k" if nodes % 1000 == 0 else f"{nodes:,}"


def render(results: Results) -> str:
    parts = [
        _machine(results),
        _ingest(results.ingest) if results.ingest else "",
        _reads(results.sizes),
        _stores(results.sizes),
        _neo4j(results.neo4j) if results.neo4j else "",
        _targets(results),
        _reference(results),
        _profiles(results.profiles),
    ]
    return "\n\n".join(part for part in parts if part) + "\n"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _machine(results: Results) -> str:
    m = results.machine
    return (
        f"### Machine\n\n{m['cpus']} CPUs ({m['cpu']}), {m['memory']} RAM, Python {m['python']}, "
        f"{m['system']}; 1-minute load average {m['load before']} before the run and "
        f"{m['load after']} after it.\nCommand: `{results.command}` — "
        f"{results.seconds / 60:.1f} min."
    )


def _rate(t: Throughput) -> str:
    return f"{t.per_second:,.0f} mutations/s ({t.mutations:,} in {t.seconds:.1f} s)"


def _ingest(ingest: IngestResults) -> str:
    rows = [
        ["ingest, 1 client", _rate(ingest.one_client)],
        [f"ingest, {ingest.many_clients.clients} concurrent clients", _rate(ingest.many_clients)],
    ]
    for window, latency in ingest.latency.windows.items():
        rows.append(
            [
                f"observeExecution p50 / p99, steps {window}",
                f"{latency.p50:.2f} / {latency.p99:.2f} ms (n={latency.count})",
            ]
        )
    rows.append(["p50 last window ÷ first window", f"**{ingest.latency.ratio():.2f}**"])
    control, ratio = ingest.latency.control, ingest.latency.control_ratio()
    if control is not None and ratio is not None:
        rows.append(
            [
                "control: steps 50-150 of a fresh session, alternating with the last window",
                f"{control.p50:.2f} / {control.p99:.2f} ms (n={control.count}); "
                f"last window ÷ control **{ratio:.2f}**",
            ]
        )
    eq = ingest.equivalence
    verdict = "identical" if eq.same else f"{eq.differences} differences"
    rows.append(
        ["HTTP-written store vs. in-process", f"{verdict} ({eq.nodes:,} nodes, {eq.edges:,} edges)"]
    )
    return "### Writes (HTTP GraphQL, file store, fsync on)\n\n" + _table(["", ""], rows)


def _reads(sizes: Sequence[SizeResults]) -> str:
    if not sizes:
        return ""
    names = [size_name(s.store.target) for s in sizes]
    header = ["request", "answer (nodes)"]
    header += [f"{n} p50 / p99 ms" for n in names]
    header += [f"p50 {names[-1]} ÷ {names[0]}", f"p50 ÷ `{TRIVIAL}` ({' / '.join(names)})"]
    rows = []
    for query in sizes[0].reads:
        first, last = sizes[0].reads[query], sizes[-1].reads[query]
        row = [query.replace(TRIVIAL, f"`{TRIVIAL}`"), f"{first.nodes:.0f}"]
        row += [
            f"{s.reads[query].latency.p50:.2f} / {s.reads[query].latency.p99:.2f}" for s in sizes
        ]
        row.append(f"{last.latency.p50 / first.latency.p50:.2f}")
        row.append(" / ".join(f"{_over_trivial(s, query):.1f}" for s in sizes))
        rows.append(row)
    return "### Reads (HTTP GraphQL, one client, keep-alive)\n\n" + _table(header, rows)


def _percentiles(latency: Latency, rounds: int) -> str:
    text = f"{latency.p50:.2f} / {latency.p99:.2f}"
    return text if latency.count >= rounds else f"{text} (n={latency.count})"


def _over_trivial(size: SizeResults, query: str) -> float:
    return size.reads[query].latency.p50 / size.reads[TRIVIAL].latency.p50


def _stores(sizes: Sequence[SizeResults]) -> str:
    if not sizes:
        return ""
    header = [
        "store",
        "nodes",
        "preload (in-process)",
        "cold start as left",
        "snapshot",
        "cold start after snapshot",
        "RSS per node",
        "server up",
        "server RSS",
    ]
    rows = []
    for s in sizes:
        store = s.store
        rows.append(
            [
                size_name(store.target),
                f"{store.nodes:,}",
                f"{store.preload.seconds:.1f} s ({store.preload.events:,} events)",
                f"{store.cold_log.seconds:.2f} s",
                f"{store.snapshot_seconds:.2f} s",
                f"{store.cold_snapshot.seconds:.2f} s",
                f"{store.cold_snapshot.bytes_per_node:,.0f} B",
                f"{s.server_start_seconds:.2f} s",
                f"{s.server_rss_bytes / 2**20:,.0f} MiB",
            ]
        )
    return "### File store\n\n" + _table(header, rows)


def _neo4j(neo: Neo4jResults) -> str:
    rows = []
    for name, gateway in neo.gateway.items():
        cypher = neo.cypher.get(name)
        ratio = f"{gateway.latency.p50 / cypher.latency.p50:.2f}" if cypher else "—"
        direct = f"{cypher.latency.p50:.2f} / {cypher.latency.p99:.2f}" if cypher else "—"
        rows.append([name, f"{gateway.latency.p50:.2f} / {gateway.latency.p99:.2f}", direct, ratio])
    table = _table(["request", "gateway p50 / p99 ms", "Cypher p50 / p99 ms", "ratio"], rows)
    return (
        f"### Neo4j ({neo.nodes:,} nodes, preloaded in {neo.preload_seconds:.0f} s)\n\n{table}\n\n"
        f"observe throughput: 1 client {_rate(neo.one_client)}; "
        f"{neo.many_clients.clients} clients {_rate(neo.many_clients)}"
    )


def _verdict(met: bool) -> str:
    return "**met**" if met else "**missed**"


def _walk_rows(sizes: Sequence[SizeResults]) -> list[list[str]]:
    walks = [q for q in sizes[0].reads if q.startswith(WALKS)]
    first, last = sizes[0], sizes[-1]

    def growth(query: str) -> float:
        return last.reads[query].latency.p50 / first.reads[query].latency.p50

    def normalised(query: str) -> float:
        return _over_trivial(last, query) / _over_trivial(first, query)

    worst = max(walks, key=growth)
    worst_normalised = max(walks, key=normalised)
    size, query = max(((s, q) for s in sizes for q in walks), key=lambda p: _over_trivial(*p))
    names = f"{size_name(last.store.target)} ÷ {size_name(first.store.target)}"
    return [
        [
            f"chain and trace p50 {names} ≤ 2",
            f"worst {growth(worst):.2f} ({worst}); each over `{TRIVIAL}` of its size: "
            f"worst {normalised(worst_normalised):.2f} ({worst_normalised})",
            _verdict(growth(worst) <= 2),
        ],
        [
            f"getChain, traceProvenance p50 ÷ `{TRIVIAL}` ≤ 3",
            f"worst {_over_trivial(size, query):.2f} ({query}, {size_name(size.store.target)})",
            _verdict(_over_trivial(size, query) <= 3),
        ],
    ]


def _targets(results: Results) -> str:
    rows = []
    if results.ingest:
        latency = results.ingest.latency
        ratio, control = latency.ratio(), latency.control_ratio()
        measured = f"{ratio:.2f}" + (f" (control {control:.2f})" if control is not None else "")
        target = "write p50 at step 10,000 ÷ step 100 ≤ 1.5"
        rows.append([target, measured, _verdict(ratio <= 1.5)])
    if results.sizes:
        rows += _walk_rows(results.sizes)
    if results.neo4j:
        ratios = [
            (g.latency.p50 / results.neo4j.cypher[name].latency.p50, name)
            for name, g in results.neo4j.gateway.items()
            if name in results.neo4j.cypher
        ]
        worst, name = max(ratios)
        rows.append(
            [
                "Neo4j gateway ÷ direct Cypher ≤ 1.5",
                f"worst {worst:.2f} ({name})",
                _verdict(worst <= 1.5),
            ]
        )
    return "### Targets\n\n" + _table(["target", "measured", ""], rows)


def _reference(results: Results) -> str:
    if not results.ingest or not results.sizes:
        return ""
    ingest, first = results.ingest, results.sizes[0]
    windows = list(ingest.latency.windows.values())
    walks = [r.latency.p50 for q, r in first.reads.items() if q.startswith((*WALKS, "chainExists"))]
    search = max(r.latency.p50 for q, r in first.reads.items() if q.startswith("searchNodes all"))
    ours = {
        "ingest": f"{ingest.one_client.per_second:,.0f} mutations/s (1 client), "
        f"{ingest.many_clients.per_second:,.0f} ({ingest.many_clients.clients} clients)",
        "growth": f"{windows[0].p50:.1f} → {windows[-1].p50:.1f} ms over "
        f"{ingest.latency.steps:,} steps ({ingest.latency.ratio():.2f}x)",
        "chains": f"p50 {min(walks):.1f}-{max(walks):.1f} ms at {size_name(first.store.target)}, "
        "none fails",
        "search": f"p50 {search:.1f} ms at {size_name(first.store.target)}",
        "cold": f"{first.store.cold_log.seconds:.2f} s at {size_name(first.store.target)}, "
        f"{results.sizes[-1].store.cold_snapshot.seconds:.2f} s at "
        f"{size_name(results.sizes[-1].store.target)} (snapshot)",
    }
    labels = {
        "ingest": "ingest, one session over HTTP",
        "growth": "per-write latency growth",
        "chains": "chains and traces",
        "search": "cross-session search",
        "cold": "cold start",
    }
    rows = [[labels[key], REFERENCE[key], ours[key]] for key in labels]
    return "### Against the reference sidecar (issue 7)\n\n" + _table(
        ["", "reference sidecar", "this gateway"], rows
    )


def _profiles(profiles: dict[str, str]) -> str:
    if not profiles:
        return ""
    blocks = [f"#### {name}\n\n```\n{text}\n```" for name, text in profiles.items()]
    return "### Profiles (py-spy, server process)\n\n" + "\n\n".join(blocks)
