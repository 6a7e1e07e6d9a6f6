"""Benchmark: the provider against the DAG a competent engineer writes by hand.

The hand-written DAG (:mod:`benchmarks.handwritten`) is no straw man: ``SELECT DISTINCT``,
arrays of 100 names with ids over one client, and either 8 requests in flight with one
``executemany`` upsert of every row (the issue-16 baseline) or 16 in flight with the
answers copied into a temporary table and one ``INSERT ... SELECT ... JOIN ... ON
CONFLICT`` upsert (the issue-23 baseline). It keeps no memory between runs.

Each case is a warehouse (SQLite, PostgreSQL or DuckDB), a table size and a network
(loopback, or the emulator's latency fault set to a WAN round trip). In each, the provider
and both hand-written DAGs run twice in fresh processes, one after another against the
same emulator: a first run and a rerun over the unchanged table. The ratios (hand-written
time ÷ provider time: above 1 means the provider is faster) come from one benchmark run.
A WAN case lasts about a second and its latency is drawn at random, so it is repeated
(``latency_repeats`` times, each on a fresh table, the contenders interleaved): the table
shows the median of the repetitions' ratios and their range.

Example::

    section = run(VersusOptions(loopback_sizes=(1_000_000,), latency_sizes=(20_000,)), workdir=Path("/tmp/b"))
"""

from __future__ import annotations

import itertools
import statistics
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import table_duckdb, table_postgres
from benchmarks.figures import Section, cores, count, ratio, seconds
from benchmarks.service import BenchService
from benchmarks.table_enrichment import Run, measured_run
from benchmarks.warehouse import build_customers, sqlite_connection_env

NETWORKS = ("loopback", "latency")
WAREHOUSES = ("postgres", "sqlite", "duckdb")
BASELINES = {"hand16": {"in_flight": 16, "upsert": "join"}, "hand8": {"in_flight": 8, "upsert": "rows"}}
"""The hand-written DAGs: 16 in flight with a temp-table upsert (issue 23), 8 with an executemany (issue 16)."""
ROW_BY_ROW = ("sqlite", "postgres")
"""Where the 8-in-flight DAG's executemany is a fair baseline: DuckDB runs an executemany row by row (minutes
for 1,000,000 rows), which no competent DuckDB user would write."""
ATTEMPTS = ("first", "rerun")
TARGETS = {("postgres", "loopback"): 1.0, ("postgres", "latency"): 1.2}
"""First-run goals (issue 23): hand-written (16 in flight) ÷ provider, at least."""
GOAL_SIZES = {"loopback": 1_000_000, "latency": 20_000}
"""The table sizes the goals were set at; smaller tables (``--quick``) are reported only: a run of
0.1-0.3 s is mostly the fixed costs the goals' sizes spread out."""
RERUN_TARGET = 20.0
"""An unchanged rerun of the provider against the hand-written DAG's rerun (which pays again), on
PostgreSQL (issue 23); SQLite's and DuckDB's are reported."""
SQLITE_CONN_ID = "bench_warehouse"


@dataclass(frozen=True)
class VersusOptions:
    """What to run.

    :param loopback_sizes: table sizes on loopback.
    :param latency_sizes: table sizes with the latency fault.
    :param warehouses: which of ``postgres``, ``sqlite``, ``duckdb`` (loopback); the latency
        cases run on the first of them.
    :param latency_ms: the WAN network's latency fault: (low, high) milliseconds per request.
    :param seed: seed of the customer rows.
    :param timeout: most seconds one measured run may take.
    :param latency_repeats: how many times each WAN case runs (each on a fresh table).
    """

    loopback_sizes: tuple[int, ...] = (1_000_000,)
    latency_sizes: tuple[int, ...] = (20_000,)
    warehouses: tuple[str, ...] = WAREHOUSES
    latency_ms: tuple[float, float] = (80.0, 120.0)
    seed: int = 2026
    timeout: float = 3600.0
    latency_repeats: int = 5

    def repeats(self, network: str) -> int:
        """How many times a case of ``network`` runs."""
        return max(1, self.latency_repeats) if network == "latency" else 1

    def cases(self) -> list[tuple[str, str, int]]:
        """``(network, warehouse, size)`` in the order they run."""
        loopback = [("loopback", w, s) for w in self.warehouses for s in sorted(self.loopback_sizes)]
        return [*loopback, *(("latency", self.warehouses[0], s) for s in sorted(self.latency_sizes))]


@dataclass
class Case:
    """One table on one warehouse: what the runs are given, and what is known of it."""

    provider_params: dict[str, Any]
    handwritten_params: dict[str, Any]
    env: dict[str, str]
    distinct_queries: int
    cleanup: Callable[[], None]


def _prepare(warehouse: str, size: int, network: str, options: VersusOptions, workdir: Path,
             service: BenchService) -> Case:
    service_params = {"url": service.url, "token": service.token}
    if warehouse == "postgres":
        suffix = uuid.uuid4().hex[:8]
        table, answers = f"bench_versus_{size}_{suffix}", f"bench_versus_answers_{suffix}"
        table_postgres.load_customers(table, size, seed=options.seed)
        distinct, _ = table_postgres.distinct_queries(table)
        return Case({"sql_conn_id": table_postgres.WAREHOUSE_CONN_ID, "source_table": table, "answers_table": answers},
                    {"warehouse": "postgres", "table": table, **service_params},
                    {**service.connection_env(), **table_postgres.connection_env()}, distinct,
                    lambda: table_postgres.drop([table, f"{table}_gender", f"{table}_handwritten", answers]))
    if warehouse == "duckdb":
        path = workdir / f"versus_{network}_{size}.duckdb"
        distinct, _ = table_duckdb.build_customers(path, size, seed=options.seed)
        return Case({"sql_conn_id": table_duckdb.WAREHOUSE_CONN_ID},
                    {"warehouse": "duckdb", "db": str(path), **service_params},
                    {**service.connection_env(), **table_duckdb.connection_env(path)}, distinct,
                    lambda: path.unlink(missing_ok=True))
    path = workdir / f"versus_{network}_{size}.db"
    facts = build_customers(path, size, seed=options.seed)
    return Case({"sql_conn_id": SQLITE_CONN_ID}, {"warehouse": "sqlite", "db": str(path), **service_params},
                {**service.connection_env(), **sqlite_connection_env(SQLITE_CONN_ID, path)}, facts.distinct_queries,
                lambda: path.unlink(missing_ok=True))


def run(options: VersusOptions, workdir: Path) -> Section:
    """Build each case's table, run the provider and both hand-written DAGs twice, and report."""
    logs = workdir / "logs"
    runs: dict[tuple[str, str, int, str, str], list[Run]] = {}
    distinct: dict[tuple[str, str, int], int] = {}
    for network in NETWORKS:
        cases = [c for c in options.cases() if c[0] == network]
        if not cases:
            continue
        with BenchService(workdir / f"emulator_versus_{network}.log", credits=100_000_000) as service:
            if network == "latency":
                service.process.set_faults(latency_ms=list(options.latency_ms))
            for (_, warehouse, size), _repetition in itertools.product(cases, range(options.repeats(network))):
                case = _prepare(warehouse, size, network, options, workdir, service)
                distinct[network, warehouse, size] = case.distinct_queries
                log = logs / f"versus_{network}_{warehouse}_{size}.log"
                try:
                    for attempt in ATTEMPTS:  # interleaved, so that a noisy minute hurts every contender alike
                        key = (network, warehouse, size, attempt)
                        runs.setdefault((*key, "provider"), []).append(measured_run(
                            service, "benchmarks.provider:enrich_customers", case.provider_params, env=case.env,
                            log=log, timeout=options.timeout))
                        for name, baseline in BASELINES.items():
                            if name == "hand8" and warehouse not in ROW_BY_ROW:
                                continue
                            runs.setdefault((*key, name), []).append(measured_run(
                                service, "benchmarks.handwritten:handwritten_dag",
                                {**case.handwritten_params, **baseline}, env={}, log=log, timeout=options.timeout))
                finally:
                    case.cleanup()
    return report(options, distinct, runs)


def _ratios(slower: list[Run], mine: list[Run]) -> list[float]:
    """Per repetition: ``slower``'s time ÷ the provider's (the repetitions ran side by side)."""
    return [other.seconds / own.seconds for other, own in zip(slower, mine, strict=True)]


def _shown(ratios: list[float]) -> str:
    """The median ratio, and the range when there are several."""
    middle = ratio(statistics.median(ratios))
    return middle if len(ratios) == 1 else f"{middle} ({ratio(min(ratios))}-{ratio(max(ratios))}, {len(ratios)} runs)"


def _median_seconds(measured: list[Run]) -> str:
    return seconds(statistics.median(r.seconds for r in measured))


def report(options: VersusOptions, distinct: dict[tuple[str, str, int], int],
           runs: dict[tuple[str, str, int, str, str], list[Run]]) -> Section:
    low, high = options.latency_ms
    section = Section("handwritten", "The provider vs the DAG a competent engineer writes by hand")
    table = section.table(
        ["network", "warehouse", "table", "run", "provider", "hand-written, 16 in flight", "ratio (16)",
         "hand-written, 8 in flight", "ratio (8)", "provider credits", "hand-written credits",
         "provider SQL statements", "other load"],
        "Each run in a fresh process; credits as counted by the emulator; ratio = hand-written time ÷ provider "
        "time (above 1: the provider is faster). Hand-written, 16 in flight: SELECT DISTINCT, arrays of 100 with "
        "ids over one httpx client, the answers copied into a temporary table and one INSERT ... SELECT ... JOIN "
        "... ON CONFLICT upsert; 8 in flight: the same with one executemany upsert of every row. Neither keeps "
        "memory between runs. A case run several times (each on a fresh table) shows median times and the "
        "median of its ratios, with their range:")
    for network, warehouse, size in options.cases():
        label = "loopback" if network == "loopback" else f"{low:g}-{high:g} ms"
        for attempt in ATTEMPTS:
            key = (network, warehouse, size, attempt)
            mine, hand16, hand8 = runs[(*key, "provider")], runs[(*key, "hand16")], runs.get((*key, "hand8"))
            table.add(label, warehouse, f"{count(size)} rows", attempt, _median_seconds(mine),
                      _median_seconds(hand16), _shown(_ratios(hand16, mine)),
                      _median_seconds(hand8) if hand8 else "-", _shown(_ratios(hand8, mine)) if hand8 else "-",
                      count(mine[0].usage.credits), count(hand16[0].usage.credits),
                      count(mine[0].value.get("statements", 0)),
                      cores(max(r.other_cores for r in (*mine, *hand16, *(hand8 or [])))))
        _checks(section, label, network, warehouse, size, distinct[network, warehouse, size], runs)
    section.notes.append("The hand-written DAGs pay again on every run (they have no memory), and a batch the "
                         "service refuses whole (one unknown country) is sent again name by name. The 8-in-flight "
                         "DAG runs on SQLite and PostgreSQL only: DuckDB runs an executemany row by row.")
    section.data = {"options": {"loopback_sizes": list(options.loopback_sizes),
                                "latency_sizes": list(options.latency_sizes), "warehouses": list(options.warehouses),
                                "latency_ms": [low, high], "seed": options.seed,
                                "latency_repeats": options.latency_repeats},
                    "distinct": {"_".join(map(str, k)): v for k, v in distinct.items()},
                    "runs": {"_".join(map(str, key)): [r.as_dict() for r in measured]
                             for key, measured in runs.items()}}
    return section


def _checks(section: Section, label: str, network: str, warehouse: str, size: int, distinct: int,
            runs: dict[tuple[str, str, int, str, str], list[Run]]) -> None:
    first = runs[network, warehouse, size, "first", "provider"]
    rerun = runs[network, warehouse, size, "rerun", "provider"]
    where = f"{label}, {warehouse}, {count(size)} rows"
    paid = sorted({r.usage.credits for r in first})
    section.check(f"{where}: the provider's first run pays each distinct query once", count(distinct),
                  ", ".join(count(c) for c in paid), met=paid == [distinct])
    rerun_paid = sorted({r.usage.credits for r in rerun})
    section.check(f"{where}: the provider's rerun pays nothing", "0", ", ".join(count(c) for c in rerun_paid),
                  met=rerun_paid == [0])
    first_ratios = _ratios(runs[network, warehouse, size, "first", "hand16"], first)
    at_goal_size = size >= GOAL_SIZES[network]
    goal = TARGETS.get((warehouse, network)) if at_goal_size else None
    section.check(f"{where}: first run, hand-written (16 in flight) ÷ provider",
                  f">= {goal:g}x" if goal else "reported", _shown(first_ratios),
                  met=None if goal is None else statistics.median(first_ratios) >= goal)
    rerun_ratios = _ratios(runs[network, warehouse, size, "rerun", "hand16"], rerun)
    rerun_goal = RERUN_TARGET if warehouse == "postgres" and at_goal_size else None
    section.check(f"{where}: unchanged rerun, hand-written (16 in flight) ÷ provider",
                  f">= {rerun_goal:g}x" if rerun_goal else "reported", _shown(rerun_ratios),
                  met=None if rerun_goal is None else statistics.median(rerun_ratios) >= rerun_goal)
