"""Benchmark: the provider against the DAG a competent engineer writes by hand.

The hand-written DAG (:mod:`benchmarks.handwritten`) is no straw man: ``SELECT DISTINCT``,
arrays of 100 names, 8 requests in flight over one client, one ``executemany`` upsert of
every row. It keeps no memory between runs. For each table size (SQLite, default 100,000
and 1,000,000 rows) and each network (loopback, and the emulator's latency fault set to a
WAN round trip), both run twice in fresh processes: a first run and a rerun over the
unchanged table.

Example::

    section = run(VersusOptions(sizes=(100_000,), latency_ms=(80, 120)), workdir=Path("/tmp/bench"))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmarks.figures import Section, cores, count, ratio, seconds
from benchmarks.service import BenchService
from benchmarks.table_enrichment import Run, measured_run
from benchmarks.warehouse import TableFacts, build_customers, sqlite_connection_env

WAREHOUSE_CONN_ID = "bench_warehouse"
NETWORKS = ("loopback", "latency")


@dataclass(frozen=True)
class VersusOptions:
    """What to run.

    :param sizes: table sizes in rows.
    :param latency_ms: the WAN network's latency fault: (low, high) milliseconds per request.
    :param seed: seed of the customer rows.
    :param timeout: most seconds one measured run may take.
    """

    sizes: tuple[int, ...] = (100_000, 1_000_000)
    latency_ms: tuple[float, float] = (80.0, 120.0)
    seed: int = 2026
    timeout: float = 3600.0


def run(options: VersusOptions, workdir: Path) -> Section:
    """Build the tables, run both ways on both networks, and report."""
    sizes = sorted(set(options.sizes))
    logs = workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    facts: dict[tuple[str, int], TableFacts] = {}
    runs: dict[tuple[str, str, int, str], Run] = {}
    for network in NETWORKS:
        with BenchService(workdir / f"emulator_versus_{network}.log") as service:
            if network == "latency":
                service.process.set_faults(latency_ms=list(options.latency_ms))
            for size in sizes:
                path = workdir / f"versus_{network}_{size}.db"
                facts[network, size] = build_customers(path, size, seed=options.seed)
                env = {**service.connection_env(), **sqlite_connection_env(WAREHOUSE_CONN_ID, path)}
                for attempt in ("first", "rerun"):
                    runs[network, "provider", size, attempt] = measured_run(
                        service, "benchmarks.provider:enrich_customers", {"sql_conn_id": WAREHOUSE_CONN_ID},
                        env=env, log=logs / f"versus_provider_{network}_{size}.log", timeout=options.timeout)
                for attempt in ("first", "rerun"):
                    runs[network, "handwritten", size, attempt] = measured_run(
                        service, "benchmarks.handwritten:handwritten_dag",
                        {"db": str(path), "url": service.url, "token": service.token}, env={},
                        log=logs / f"versus_handwritten_{network}_{size}.log", timeout=options.timeout)
    return report(options, sizes, facts, runs)


def report(options: VersusOptions, sizes: list[int], facts: dict[tuple[str, int], TableFacts],
           runs: dict[tuple[str, str, int, str], Run]) -> Section:
    low, high = options.latency_ms
    section = Section("handwritten", "The provider vs the DAG a competent engineer writes by hand")
    table = section.table(
        ["network", "table", "run", "provider", "hand-written DAG", "speed-up", "provider credits",
         "hand-written credits", "provider SQL statements", "other load"],
        "SQLite warehouse, each run in a fresh process; credits as counted by the emulator. The hand-written "
        "DAG: SELECT DISTINCT, arrays of 100 over one httpx client with 8 requests in flight, one executemany "
        "upsert of every row, no memory between runs:")
    for network in NETWORKS:
        label = "loopback" if network == "loopback" else f"{low:g}-{high:g} ms"
        for size in sizes:
            for attempt in ("first", "rerun"):
                mine, theirs = runs[network, "provider", size, attempt], runs[network, "handwritten", size, attempt]
                table.add(label, f"{count(size)} rows", attempt, seconds(mine.seconds), seconds(theirs.seconds),
                          ratio(theirs.seconds / mine.seconds), count(mine.usage.credits),
                          count(theirs.usage.credits), count(mine.value.get("statements", 0)),
                          cores(max(mine.other_cores, theirs.other_cores)))
            distinct = facts[network, size].distinct_queries
            first = runs[network, "provider", size, "first"].usage.credits
            section.check(f"{label}, {count(size)} rows: the provider's first run pays each distinct query once",
                          count(distinct), count(first), met=first == distinct)
            again = runs[network, "provider", size, "rerun"].usage.credits
            section.check(f"{label}, {count(size)} rows: the provider's rerun pays nothing", "0", count(again),
                          met=again == 0)
    section.notes.append("The hand-written DAG pays again on every run (it has no memory), and a batch the "
                         "service refuses whole (one unknown country) is sent again name by name.")
    section.data = {"options": {"sizes": sizes, "latency_ms": [low, high], "seed": options.seed},
                    "facts": {f"{n}_{s}": f.as_dict() for (n, s), f in facts.items()},
                    "runs": {"_".join(map(str, key)): r.as_dict() for key, r in runs.items()}}
    return section
