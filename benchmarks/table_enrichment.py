"""Benchmark 1 (the headline): enrich a customers table with the provider, beside a naive loop.

For each table size (default 100,000 and 1,000,000 rows of
:func:`~namelookup_emulator.sample.customer_rows`, in SQLite):

1. **provider, first run**: ``SqlGenderLookupOperator(...).execute({})``
   (:mod:`benchmarks.provider`) into a new ``customers_gender`` table;
2. **provider, second run** over the unchanged table: it should find nothing to do;
3. **naive loop** (:mod:`benchmarks.naive`): one ``POST /v2/gender`` and one committed
   ``INSERT`` per row. It runs once, on the first ``naive_rows`` rows of the smallest
   table; for bigger tables its figures are extrapolated (per row with a name, the
   only thing its cost depends on) and labelled so.

Every run is a fresh child process (:mod:`benchmarks.child`): wall time and CPU time of
the work only, peak RSS of that run alone. HTTP requests, credits spent and the
emulator's CPU time come from the emulator (:mod:`benchmarks.service`) before and after.
What a correct run must spend comes from :class:`~benchmarks.warehouse.TableFacts`.

Example::

    section = run(TableOptions(sizes=[10_000, 100_000], naive_rows=2_000), workdir=Path("/tmp/bench"))
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_namelookup.engine.plan import LookupKind, QueryRules, plan_name
from benchmarks.child import run_in_child
from benchmarks.figures import Section, cores, count, megabytes, rate, ratio, seconds
from benchmarks.service import BenchService, Usage
from benchmarks.warehouse import TableFacts, build_customers, sqlite_connection_env

WAREHOUSE_CONN_ID = "bench_warehouse"
BATCH_LIMIT = 100
SPEEDUP_TARGET = 50.0
RSS_GROWTH_TARGET_MB = 50.0


def planned_counts(groups: Iterable[tuple[Any, Any, int]]) -> tuple[int, int]:
    """``(distinct valid queries, invalid rows)`` of ``(name, country, rows)`` groups, by the planner's rules."""
    spec = QueryRules(LookupKind.GENDER)
    valid: set[str] = set()
    invalid = 0
    for name, country, repeats in groups:
        planned = plan_name(name, spec, country=country)
        if planned.query is None:
            invalid += repeats
        else:
            valid.add(planned.query_hash)
    return len(valid), invalid


@dataclass(frozen=True)
class WarehouseOptions:
    """What to run on a warehouse of the table benchmarks (PostgreSQL, DuckDB).

    :param sizes: table sizes in rows.
    :param seed: seed of the customer rows.
    :param timeout: most seconds one measured run may take.
    """

    sizes: tuple[int, ...] = (100_000, 1_000_000)
    seed: int = 2026
    timeout: float = 3600.0


@dataclass(frozen=True)
class TableOptions:
    """What to run.

    :param sizes: table sizes in rows.
    :param naive_rows: rows the naive loop goes through (a prefix of the smallest table).
    :param seed: seed of the customer rows (the same tables every run).
    :param timeout: most seconds one measured run may take.
    """

    sizes: tuple[int, ...] = (100_000, 1_000_000)
    naive_rows: int = 100_000
    seed: int = 2026
    timeout: float = 3600.0


@dataclass(frozen=True)
class Run:
    """One measured run: the child's figures and what the emulator saw."""

    seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    rss_before_mb: float
    usage: Usage
    value: dict[str, Any]
    other_cores: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "cpu_seconds": self.cpu_seconds, "peak_rss_mb": self.peak_rss_mb,
                "rss_before_mb": self.rss_before_mb, "requests": self.usage.requests,
                "credits": self.usage.credits, "emulator_cpu_seconds": self.usage.cpu_seconds,
                "other_cores": self.other_cores, "value": self.value}


@dataclass(frozen=True)
class NaiveEstimate:
    """The naive loop's figures for a whole table, measured or scaled from a prefix."""

    seconds: float
    http_seconds: float
    requests: float
    credits: float
    cpu_seconds: float
    emulator_cpu_seconds: float
    extrapolated: bool


def measured_run(service: BenchService, job: str, params: dict[str, Any], *, env: dict[str, str], log: Path,
              timeout: float) -> Run:
    with service.meter() as meter:
        result = run_in_child(job, params, env=env, log_path=log, timeout=timeout)
    usage = meter.usage
    assert usage is not None
    return Run(seconds=result["seconds"], cpu_seconds=result["cpu_seconds"], peak_rss_mb=result["peak_rss_mb"],
               rss_before_mb=result["rss_before_mb"], usage=usage, value=result["value"],
               other_cores=usage.other_cores(result["process_cpu_seconds"] + usage.client_cpu_seconds))


def statements(measured: Run) -> str:
    """The SQL statements a provider run sent (its summary's count)."""
    sent = measured.value.get("statements")
    return "-" if sent is None else count(sent)


def first_and_rerun(section: Section, sizes: list[int], facts: dict[int, tuple[int, int]], first: dict[int, Run],
                    second: dict[int, Run], *, statement_budget: int, budget_from: int = 0) -> None:
    """The table and the checks every warehouse's first-run/rerun benchmark shares: credits =
    distinct valid queries, a rerun spends nothing, and at most ``statement_budget`` SQL
    statements in a first run of ``budget_from`` rows or more; ``section.data`` gets the runs.

    Example::

        section = Section("table_duckdb", "Table enrichment on DuckDB: first run and unchanged rerun")
        first_and_rerun(section, [100_000], {100_000: (18_876, 1_036)}, first, second, statement_budget=40)
    """
    runs = section.table(["table", "distinct valid queries", "run", "wall time", "rows/s", "HTTP requests",
                          "credits spent", "SQL statements", "client CPU", "emulator CPU", "other load", "peak RSS"],
                         "Each run in a fresh process; requests and credits as counted by the emulator:")
    for size in sizes:
        for name, measured in (("first run", first[size]), ("rerun (table unchanged)", second[size])):
            runs.add(f"{count(size)} rows", count(facts[size][0]), name, seconds(measured.seconds),
                     rate(size / measured.seconds), count(measured.usage.requests), count(measured.usage.credits),
                     statements(measured), seconds(measured.cpu_seconds), seconds(measured.usage.cpu_seconds),
                     f"{measured.other_cores:.1f} cores", megabytes(measured.peak_rss_mb))
        label = f"{count(size)} rows"
        spent = first[size].usage.credits
        section.check(f"{label}: credits = distinct valid queries", count(facts[size][0]), count(spent),
                      met=spent == facts[size][0])
        again = second[size].usage
        section.check(f"{label}: rerun spends nothing", "0 credits, 0 requests",
                      f"{count(again.credits)} credits, {count(again.requests)} requests",
                      met=again.credits == 0 and again.requests == 0)
        if size >= budget_from:  # a local warehouse's continuous stores aside (their count follows the lookups' pace)
            sent = int(first[size].value.get("statements", 0)) - int(first[size].value.get("store_statements", 0))
            section.check(f"{label}: SQL statements of the first run besides its answer stores",
                          f"<= {statement_budget}", count(sent), met=sent <= statement_budget)
    section.data = {"sizes": sizes, "facts": {s: {"distinct_queries": f[0], "invalid_rows": f[1]}
                                              for s, f in facts.items()},
                    "first": {s: r.as_dict() for s, r in first.items()},
                    "second": {s: r.as_dict() for s, r in second.items()}}


def expected_requests(distinct_queries: int) -> int:
    """Lookup requests of full batches, plus the one free statistic call made before spending."""
    return math.ceil(distinct_queries / BATCH_LIMIT) + 1 if distinct_queries else 0


def estimate_naive(naive: Run, facts: TableFacts) -> NaiveEstimate:
    """The naive loop over the whole table: the measured prefix scaled by rows with a name."""
    sent = naive.value["sent"]
    scale = facts.named_rows / sent if sent else 0.0
    extrapolated = naive.value["rows"] < facts.rows
    if not extrapolated:
        scale = 1.0
    return NaiveEstimate(seconds=naive.seconds * scale, http_seconds=naive.value["http_seconds"] * scale,
                         requests=naive.usage.requests * scale, credits=naive.usage.credits * scale,
                         cpu_seconds=naive.cpu_seconds * scale,
                         emulator_cpu_seconds=naive.usage.cpu_seconds * scale, extrapolated=extrapolated)


def run(options: TableOptions, workdir: Path) -> Section:
    """Build the tables, run everything against one emulator process, and report."""
    sizes = sorted(set(options.sizes))
    logs = workdir / "logs"
    facts: dict[int, TableFacts] = {}
    first: dict[int, Run] = {}
    second: dict[int, Run] = {}
    for size in sizes:
        facts[size] = build_customers(workdir / f"customers_{size}.db", size, seed=options.seed)
    naive_limit = min(options.naive_rows, sizes[0])
    with BenchService(workdir / "emulator.log") as service:
        for size in sizes:
            db = Path(facts[size].path)
            env = {**service.connection_env(), **sqlite_connection_env(WAREHOUSE_CONN_ID, db)}
            params = {"sql_conn_id": WAREHOUSE_CONN_ID}
            for runs in (first, second):
                runs[size] = measured_run(service, "benchmarks.provider:enrich_customers", params, env=env,
                                       log=logs / f"provider_{size}.log", timeout=options.timeout)
        naive = measured_run(service, "benchmarks.naive:naive_loop",
                          {"db": facts[sizes[0]].path, "url": service.url, "token": service.token,
                           "limit": naive_limit},
                          env={}, log=logs / "naive.log", timeout=options.timeout)
    return report(options, sizes, facts, first, second, naive)


def report(options: TableOptions, sizes: list[int], facts: dict[int, TableFacts], first: dict[int, Run],
           second: dict[int, Run], naive: Run) -> Section:
    section = Section("table", "Table enrichment: SqlGenderLookupOperator vs a naive per-row loop")
    tables = section.table(["table", "rows with a name", "distinct names", "distinct valid queries",
                            "invalid rows"], "The tables (SQLite, skewed real names from `customer_rows`):")
    for size in sizes:
        f = facts[size]
        tables.add(f"{count(size)} rows", count(f.named_rows), count(f.distinct_names), count(f.distinct_queries),
                   count(f.invalid_rows))
    runs = section.table(["table", "run", "wall time", "rows/s", "HTTP requests", "credits spent", "SQL statements",
                          "client CPU", "emulator CPU", "other load", "peak RSS", "speed-up vs naive"],
                         "The runs (each in a fresh process; requests and credits as counted by the emulator):")
    naive_rows = naive.value["rows"]
    estimates = {size: estimate_naive(naive, facts[size]) for size in sizes}
    for size in sizes:
        label = f"{count(size)} rows"
        baseline = estimates[size]
        for name, measured in (("provider, first run", first[size]),
                               ("provider, second run (table unchanged)", second[size])):
            runs.add(label, name, seconds(measured.seconds), rate(size / measured.seconds),
                     count(measured.usage.requests), count(measured.usage.credits), statements(measured),
                     seconds(measured.cpu_seconds),
                     seconds(measured.usage.cpu_seconds), cores(measured.other_cores), megabytes(measured.peak_rss_mb),
                     ratio(baseline.seconds / measured.seconds))
        if size == sizes[0] and baseline.extrapolated:
            runs.add(label, f"naive loop, first {count(naive_rows)} rows only (measured)", seconds(naive.seconds),
                     rate(naive_rows / naive.seconds), count(naive.usage.requests), count(naive.usage.credits),
                     count(naive.value["sent"] + 1), seconds(naive.cpu_seconds), seconds(naive.usage.cpu_seconds),
                     cores(naive.other_cores), megabytes(naive.peak_rss_mb), "-")
        if baseline.extrapolated:
            runs.add(label, f"naive loop, **extrapolated** from {count(naive_rows)} rows",
                     "~" + seconds(baseline.seconds), "~" + rate(size / baseline.seconds),
                     "~" + count(baseline.requests), "~" + count(baseline.credits),
                     "~" + count(round(baseline.requests) + 1),
                     "~" + seconds(baseline.cpu_seconds), "~" + seconds(baseline.emulator_cpu_seconds), "-", "-",
                     ratio(1.0))
        else:
            runs.add(label, "naive loop (measured)", seconds(naive.seconds), rate(size / naive.seconds),
                     count(naive.usage.requests), count(naive.usage.credits), count(naive.value["sent"] + 1),
                     seconds(naive.cpu_seconds),
                     seconds(naive.usage.cpu_seconds), cores(naive.other_cores), megabytes(naive.peak_rss_mb),
                     ratio(1.0))
    _checks(section, sizes, facts, first, second, estimates)
    _notes(section, sizes, naive, estimates)
    section.data = {"options": {"sizes": sizes, "naive_rows": options.naive_rows, "seed": options.seed},
                    "facts": {size: facts[size].as_dict() for size in sizes},
                    "provider_first": {size: first[size].as_dict() for size in sizes},
                    "provider_second": {size: second[size].as_dict() for size in sizes},
                    "naive": naive.as_dict(),
                    "naive_estimates": {size: vars(estimates[size]) for size in sizes}}
    return section


def _checks(section: Section, sizes: list[int], facts: dict[int, TableFacts], first: dict[int, Run],
            second: dict[int, Run], estimates: dict[int, NaiveEstimate]) -> None:
    for size in sizes:
        label = f"{count(size)} rows"
        distinct = facts[size].distinct_queries
        spent = first[size].usage.credits
        section.check(f"{label}: provider credits = distinct valid queries", count(distinct), count(spent),
                      met=spent == distinct)
        wanted, made = expected_requests(distinct), first[size].usage.requests
        summary = first[size].value
        partial = max(0, int(summary.get("pages") or 0) - 1)  # each page's last batch may be partial
        section.check(f"{label}: provider requests = ceil(distinct / 100) + 1 statistic call (+ at most one "
                      "partial batch per page read while looking up)",
                      count(wanted) + (f" to {count(wanted + partial)}" if partial else ""), count(made),
                      met=wanted <= made <= wanted + partial)
        speedup = estimates[size].seconds / first[size].seconds
        against = " (vs the extrapolated naive loop)" if estimates[size].extrapolated else ""
        section.check(f"{label}: provider at least {SPEEDUP_TARGET:.0f}x faster than the naive loop{against}",
                      f">= {ratio(SPEEDUP_TARGET)}", ratio(speedup), met=speedup >= SPEEDUP_TARGET)
        again = second[size].usage
        section.check(f"{label}: second run spends nothing", "0 credits, 0 requests",
                      f"{count(again.credits)} credits, {count(again.requests)} requests",
                      met=again.credits == 0 and again.requests == 0)
    if len(sizes) > 1:
        small, big = sizes[0], sizes[-1]
        growth = first[big].peak_rss_mb - first[small].peak_rss_mb
        section.check(f"peak RSS growth of the provider's first run, {count(small)} -> {count(big)} rows",
                      f"< {megabytes(RSS_GROWTH_TARGET_MB)}",
                      f"{growth:+,.0f} MB ({megabytes(first[small].peak_rss_mb)} -> "
                      f"{megabytes(first[big].peak_rss_mb)})", met=growth < RSS_GROWTH_TARGET_MB)


def _notes(section: Section, sizes: list[int], naive: Run, estimates: dict[int, NaiveEstimate]) -> None:
    http_share = naive.value["http_seconds"] / naive.seconds if naive.seconds else 0.0
    section.notes.append(
        f"Naive loop: {count(naive.value['sent'])} requests sent for {count(naive.value['rows'])} rows "
        f"({count(naive.value['ok'])} answered, {count(naive.value['errors'])} refused as invalid and not "
        f"charged, {count(naive.value['skipped'])} skipped for an empty name); {http_share:.0%} of its wall time "
        f"was spent waiting for HTTP answers, the rest reading and committing one row at a time.")
    if any(e.extrapolated for e in estimates.values()):
        section.notes.append("Extrapolated figures (marked ~) scale the measured naive prefix by the table's rows "
                             "with a name: the naive loop's cost is linear in them; nothing is deduplicated.")
    section.notes.append("SQL statements: what the run sent to the warehouse (the provider counts its own; the "
                         "naive loop sends one SELECT and one INSERT per row with a name).")
    section.notes.append("Client CPU: CPU time of the measured process (all its threads) during the work. "
                         "Emulator CPU: CPU time of the emulator process over the same run. Other load: cores "
                         "kept busy by other processes on the machine meanwhile (average); the client, the "
                         "emulator and anything else running share the same 2 cores.")
