"""Benchmark 4: the table engine on PostgreSQL, from 100,000 up to 10,000,000 rows.

For each size a ``customers_<id>`` table of
:func:`~namelookup_emulator.sample.customer_rows` is bulk-loaded with
``COPY`` into the ``test`` database of the local PostgreSQL (``127.0.0.1:5432``, user
``postgres``), then ``SqlGenderLookupOperator(...).execute({})`` runs twice in fresh
processes (:mod:`benchmarks.child`): the first run and an unchanged rerun, each with
its own answers table. Credits and requests come from the emulator; what a correct run
must spend is counted from the table with the planner's own rules. Every table made
here is dropped at the end.

Example::

    section = run(PostgresOptions(sizes=(100_000, 1_000_000)), workdir=Path("/tmp/bench"))
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.figures import Section, count, megabytes, seconds
from benchmarks.service import BenchService
from benchmarks.table_enrichment import Run, WarehouseOptions, first_and_rerun, measured_run, planned_counts
from namelookup_emulator.sample import customer_rows

WAREHOUSE_CONN_ID = "bench_postgres"
POSTGRES = {"host": "127.0.0.1", "port": 5432, "user": "postgres", "dbname": "test"}
FIRST_RUN_TARGET_S = 15.0
RERUN_TARGET_S = 3.0
RSS_GROWTH_TARGET_MB = 50.0
STATEMENTS_TARGET = 40
FIRST_RUN_10M_TARGET_S = 45.0
RERUN_10M_TARGET_S = 10.0


PostgresOptions = WarehouseOptions


def _connect() -> Any:
    import psycopg

    return psycopg.connect(**POSTGRES, autocommit=True)  # type: ignore[arg-type]


def _rows(size: int, seed: int) -> Iterator[tuple[Any, ...]]:
    yield from customer_rows(size, seed=seed)


def load_customers(table: str, size: int, *, seed: int) -> None:
    """Create ``table`` and COPY ``size`` customers into it."""
    with _connect() as db:
        db.execute(f"CREATE TABLE {table} (customer_id BIGINT PRIMARY KEY, first_name TEXT, country TEXT)")
        with db.cursor().copy(f"COPY {table} (customer_id, first_name, country) FROM STDIN") as copy:
            for row in _rows(size, seed):
                copy.write_row(row)
        db.execute(f"ANALYZE {table}")


def distinct_queries(table: str) -> tuple[int, int]:
    """``(distinct valid queries, invalid rows)`` of a customers table, by the planner's rules."""
    with _connect() as db:
        return planned_counts(db.execute(f"SELECT first_name, country, COUNT(*) FROM {table} "
                                         "GROUP BY first_name, country"))


def drop(tables: list[str]) -> None:
    with _connect() as db:
        for table in tables:
            db.execute(f"DROP TABLE IF EXISTS {table}")


def connection_env() -> dict[str, str]:
    conn = {"conn_type": "postgres", "host": POSTGRES["host"], "port": POSTGRES["port"],
            "login": POSTGRES["user"], "schema": POSTGRES["dbname"]}
    return {f"AIRFLOW_CONN_{WAREHOUSE_CONN_ID.upper()}": json.dumps(conn)}


def run(options: PostgresOptions, workdir: Path) -> Section:
    """Load the tables, run the provider twice per size against one emulator, report, drop."""
    sizes = sorted(set(options.sizes))
    logs = workdir / "logs"
    suffix = uuid.uuid4().hex[:8]
    created: list[str] = []
    first: dict[int, Run] = {}
    second: dict[int, Run] = {}
    facts: dict[int, tuple[int, int]] = {}
    try:
        with BenchService(workdir / "emulator_postgres.log", credits=100_000_000) as service:
            for size in sizes:
                table, answers = f"bench_customers_{size}_{suffix}", f"bench_answers_{size}_{suffix}"
                created += [table, f"{table}_gender", answers]
                load_customers(table, size, seed=options.seed)
                facts[size] = distinct_queries(table)
                env = {**service.connection_env(), **connection_env()}
                params = {"sql_conn_id": WAREHOUSE_CONN_ID, "source_table": table, "answers_table": answers}
                for runs in (first, second):
                    runs[size] = measured_run(service, "benchmarks.provider:enrich_customers", params, env=env,
                                           log=logs / f"postgres_{size}.log", timeout=options.timeout)
                drop([table, f"{table}_gender", answers])  # keep the database small for the next size
    finally:
        drop(created)
    return report(sizes, facts, first, second)


def report(sizes: list[int], facts: dict[int, tuple[int, int]], first: dict[int, Run],
           second: dict[int, Run]) -> Section:
    section = Section("table_postgres", "Table enrichment on PostgreSQL: first run and unchanged rerun")
    first_and_rerun(section, sizes, facts, first, second, statement_budget=STATEMENTS_TARGET, budget_from=1_000_000)
    for size in sizes:
        if size == 10_000_000:
            section.check("10,000,000 rows: first run", f"<= {seconds(FIRST_RUN_10M_TARGET_S)}",
                          seconds(first[size].seconds), met=first[size].seconds <= FIRST_RUN_10M_TARGET_S)
            section.check("10,000,000 rows: unchanged rerun", f"<= {seconds(RERUN_10M_TARGET_S)}",
                          seconds(second[size].seconds), met=second[size].seconds <= RERUN_10M_TARGET_S)
        if size == 1_000_000:
            section.check("1,000,000 rows: first run", f"<= {seconds(FIRST_RUN_TARGET_S)}",
                          seconds(first[size].seconds), met=first[size].seconds <= FIRST_RUN_TARGET_S)
            section.check("1,000,000 rows: unchanged rerun", f"<= {seconds(RERUN_TARGET_S)}",
                          seconds(second[size].seconds), met=second[size].seconds <= RERUN_TARGET_S)
    if len(sizes) > 1:
        small, big = sizes[0], sizes[-1]
        growth = first[big].peak_rss_mb - first[small].peak_rss_mb
        section.check(f"peak RSS growth of the first run, {count(small)} -> {count(big)} rows",
                      f"< {megabytes(RSS_GROWTH_TARGET_MB)}", f"{growth:+,.0f} MB", met=growth < RSS_GROWTH_TARGET_MB)
    section.notes.append("Tables are bulk-loaded with COPY; the warehouse is the local PostgreSQL, which shares "
                         "the machine's cores with the client and the emulator.")
    return section
