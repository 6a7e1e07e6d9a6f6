"""Benchmark 4: the same table enrichment when every request crosses a WAN.

The emulator's latency fault adds 80-120 ms to every request (a realistic round trip to
the real service). For each table size (default 20,000 and 100,000 rows of
:func:`~namelookup_emulator.sample.customer_rows`, in SQLite) and each
lookup (gender: arrays of 100; country of origin: one request per distinct name):

1. **provider**: ``SqlGenderLookupOperator`` / ``SqlCountryOfOriginOperator``
   ``.execute({})`` with their defaults (:mod:`benchmarks.provider`), in a fresh
   process: adaptive concurrency up to 64 requests in flight;
2. **naive loop** (:mod:`benchmarks.naive`): one request and one committed ``INSERT`` per
   row. At ~100 ms a row it cannot run whole (20,000 rows would take over half an
   hour), so it runs over the first ``naive_rows`` rows of the smallest table and its
   time is **extrapolated** per row with a name (its cost is linear in them) and marked
   ``~``.

Requests and credits are the emulator's own counters; what a correct run must spend
comes from :func:`~benchmarks.warehouse.table_facts`. The scenario uses the operators
only through ``execute``, so it keeps working whatever their engine does inside.

Example::

    section = run(LatencyOptions(sizes=(20_000, 100_000), latency_ms=(80, 120)), workdir=Path("/tmp/bench"))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_namelookup.engine.plan import LookupKind
from benchmarks.figures import Section, cores, count, ratio, seconds
from benchmarks.service import BenchService
from benchmarks.table_enrichment import Run, measured_run
from benchmarks.warehouse import TableFacts, build_customers, sqlite_connection_env, table_facts

WAREHOUSE_CONN_ID = "bench_warehouse"
BATCH_LIMIT = 100
TARGETS = {LookupKind.GENDER: 400.0, LookupKind.ORIGIN: 100.0}
"""Speed-up over the naive loop each lookup must reach (issue 11)."""
JOBS = {LookupKind.GENDER: ("benchmarks.provider:enrich_customers", "gender"),
        LookupKind.ORIGIN: ("benchmarks.provider:enrich_origins", "origin")}
TITLES = {LookupKind.GENDER: "gender (arrays of 100)", LookupKind.ORIGIN: "country of origin (one name per request)"}


@dataclass(frozen=True)
class LatencyOptions:
    """What to run.

    :param sizes: table sizes in rows.
    :param latency_ms: the latency fault: (low, high) milliseconds, drawn per request.
    :param naive_rows: rows of the smallest table the naive loop goes through, per lookup.
    :param seed: seed of the customer rows.
    :param timeout: most seconds one measured run may take.
    """

    sizes: tuple[int, ...] = (20_000, 100_000)
    latency_ms: tuple[float, float] = (80.0, 120.0)
    naive_rows: int = 200
    seed: int = 2026
    timeout: float = 3600.0


def expected_requests(lookup: LookupKind, distinct: int) -> int:
    """Lookup requests of a correct run, plus the one free statistic call before spending."""
    if not distinct:
        return 0
    lookups = math.ceil(distinct / BATCH_LIMIT) if lookup is LookupKind.GENDER else distinct
    return lookups + 1


def naive_seconds(naive: Run, facts: TableFacts) -> float:
    """The naive loop's time over a whole table: its measured time per row with a name."""
    sent = naive.value["sent"]
    return naive.seconds / sent * facts.named_rows if sent else math.inf


def run(options: LatencyOptions, workdir: Path) -> Section:
    """Build the tables, run everything against one emulator with the latency fault, and report."""
    sizes = sorted(set(options.sizes))
    logs = workdir / "logs"
    facts: dict[tuple[LookupKind, int], TableFacts] = {}
    for size in sizes:
        path = workdir / f"latency_customers_{size}.db"
        build_customers(path, size, seed=options.seed)
        for lookup in JOBS:
            facts[lookup, size] = table_facts(path, lookup)
    provider: dict[tuple[LookupKind, int], Run] = {}
    naive: dict[LookupKind, Run] = {}
    with BenchService(workdir / "emulator_latency.log") as service:
        service.process.set_faults(latency_ms=list(options.latency_ms))
        for size in sizes:
            db = Path(facts[LookupKind.GENDER, size].path)
            env = {**service.connection_env(), **sqlite_connection_env(WAREHOUSE_CONN_ID, db)}
            for lookup, (job, name) in JOBS.items():
                provider[lookup, size] = measured_run(service, job, {"sql_conn_id": WAREHOUSE_CONN_ID}, env=env,
                                                   log=logs / f"latency_{name}_{size}.log", timeout=options.timeout)
        for lookup, (_, name) in JOBS.items():
            naive[lookup] = measured_run(
                service, "benchmarks.naive:naive_loop",
                {"db": facts[lookup, sizes[0]].path, "url": service.url, "token": service.token,
                 "limit": options.naive_rows, "lookup": name},
                env={}, log=logs / f"latency_naive_{name}.log", timeout=options.timeout)
    return report(options, sizes, facts, provider, naive)


def report(options: LatencyOptions, sizes: list[int], facts: dict[tuple[LookupKind, int], TableFacts],
           provider: dict[tuple[LookupKind, int], Run], naive: dict[LookupKind, Run]) -> Section:
    low, high = options.latency_ms
    section = Section("latency", f"Latency: {low:g}-{high:g} ms per request, provider vs naive per-row loop")
    runs = section.table(
        ["lookup", "table", "distinct queries", "provider wall time", "HTTP requests", "credits spent",
         "client CPU", "other load", "naive loop (~ extrapolated)", "speed-up"],
        "Each provider run is `Sql...Operator(...).execute({})` with its defaults in a fresh process; requests "
        "and credits as counted by the emulator; the naive loop's time is extrapolated per row with a name "
        "from its measured sample:")
    for lookup in JOBS:
        for size in sizes:
            measured, f = provider[lookup, size], facts[lookup, size]
            baseline = naive_seconds(naive[lookup], f)
            speedup = baseline / measured.seconds
            runs.add(TITLES[lookup], f"{count(size)} rows", count(f.distinct_queries), seconds(measured.seconds),
                     count(measured.usage.requests), count(measured.usage.credits), seconds(measured.cpu_seconds),
                     cores(measured.other_cores), "~" + seconds(baseline), ratio(speedup))
            label = f"{TITLES[lookup].split(' (')[0]}, {count(size)} rows"
            wanted = f.distinct_queries * lookup.credits_per_query
            section.check(f"{label}: credits = distinct queries x {lookup.credits_per_query}", count(wanted),
                          count(measured.usage.credits), met=measured.usage.credits == wanted)
            requests = expected_requests(lookup, f.distinct_queries)
            section.check(f"{label}: requests = lookups + 1 statistic call", count(requests),
                          count(measured.usage.requests), met=measured.usage.requests == requests)
            target = TARGETS[lookup]
            section.check(f"{label}: at least {target:.0f}x faster than the naive loop (extrapolated)",
                          f">= {ratio(target)}", ratio(speedup), met=speedup >= target)
    samples = section.table(["naive loop sample", "rows", "requests sent", "wall time", "per row with a name",
                             "waiting for HTTP"], "The naive loop's measured samples (first rows of the "
                            f"{count(sizes[0])}-row table):")
    for lookup, sample in naive.items():
        sent = sample.value["sent"]
        samples.add(TITLES[lookup], count(sample.value["rows"]), count(sent), seconds(sample.seconds),
                    f"{sample.seconds / sent * 1000:,.1f} ms" if sent else "-",
                    f"{sample.value['http_seconds'] / sample.seconds:.0%}" if sample.seconds else "-")
    section.notes.append(
        "The provider pays each distinct query once and keeps many requests in flight: gender sends arrays of "
        "100, country of origin (no array form) one request per distinct name, with requests in flight adapted "
        "between 1 and 64 (AIMD). The naive loop waits one round trip per row.")
    section.notes.append("Other load: cores kept busy by other processes during the run (the machine is shared).")
    section.data = {"options": {"sizes": sizes, "latency_ms": list(options.latency_ms),
                                "naive_rows": options.naive_rows, "seed": options.seed},
                    "facts": {f"{lookup.value}_{size}": f.as_dict() for (lookup, size), f in facts.items()},
                    "provider": {f"{lookup.value}_{size}": r.as_dict() for (lookup, size), r in provider.items()},
                    "naive": {lookup.value: r.as_dict() for lookup, r in naive.items()}}
    return section

