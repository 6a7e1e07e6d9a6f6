"""Benchmark 5: the table engine on a DuckDB file (default 100,000 and 1,000,000 rows).

For each size a DuckDB file with a ``customers`` table of
:func:`~namelookup_emulator.sample.customer_rows` is built (one
``INSERT ... SELECT UNNEST`` of the columns), then ``SqlGenderLookupOperator(...).execute({})``
runs twice in fresh processes (:mod:`benchmarks.child`) through the real DuckDB hook
(``apache-airflow-providers-duckdb``): the first run and an unchanged rerun. Credits and
requests come from the emulator, the SQL statements from the run's own count; what a
correct run must spend is counted from the table with the planner's own rules.

Example::

    section = run(DuckDBOptions(sizes=(100_000, 1_000_000)), workdir=Path("/tmp/bench"))
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.figures import Section
from benchmarks.service import BenchService
from benchmarks.table_enrichment import Run, WarehouseOptions, first_and_rerun, measured_run, planned_counts
from namelookup_emulator.sample import customer_rows

WAREHOUSE_CONN_ID = "bench_duckdb"
STATEMENT_BUDGET = 40
"""Most SQL statements a 1,000,000-row first run may send (issue 17)."""


DuckDBOptions = WarehouseOptions


def build_customers(path: Path, size: int, *, seed: int) -> tuple[int, int]:
    """Create the DuckDB file ``path`` holding ``size`` customers; ``(distinct valid queries, invalid rows)``."""
    import duckdb

    path.unlink(missing_ok=True)
    rows = list(customer_rows(size, seed=seed))
    db = duckdb.connect(str(path))
    try:
        db.execute("CREATE TABLE customers (customer_id BIGINT PRIMARY KEY, first_name VARCHAR, country VARCHAR)")
        db.execute("INSERT INTO customers SELECT UNNEST(?), UNNEST(?), UNNEST(?)",
                   [[r[i] for r in rows] for i in range(3)])
        pairs = db.execute("SELECT first_name, country, COUNT(*) FROM customers GROUP BY ALL").fetchall()
    finally:
        db.close()
    return planned_counts(pairs)


def connection_env(path: Path) -> dict[str, str]:
    return {f"AIRFLOW_CONN_{WAREHOUSE_CONN_ID.upper()}": json.dumps({"conn_type": "duckdb", "host": str(path)})}


def run(options: DuckDBOptions, workdir: Path) -> Section:
    """Build the files, run the provider twice per size against one emulator, and report."""
    sizes = sorted(set(options.sizes))
    logs = workdir / "logs"
    first: dict[int, Run] = {}
    second: dict[int, Run] = {}
    facts: dict[int, tuple[int, int]] = {}
    with BenchService(workdir / "emulator_duckdb.log", credits=100_000_000) as service:
        for size in sizes:
            path = workdir / f"customers_{size}.duckdb"
            facts[size] = build_customers(path, size, seed=options.seed)
            env = {**service.connection_env(), **connection_env(path)}
            params = {"sql_conn_id": WAREHOUSE_CONN_ID}
            for runs in (first, second):
                runs[size] = measured_run(service, "benchmarks.provider:enrich_customers", params, env=env,
                                          log=logs / f"duckdb_{size}.log", timeout=options.timeout)
            path.unlink(missing_ok=True)
    return report(sizes, facts, first, second)


def report(sizes: list[int], facts: dict[int, tuple[int, int]], first: dict[int, Run],
           second: dict[int, Run]) -> Section:
    section = Section("table_duckdb", "Table enrichment on DuckDB: first run and unchanged rerun")
    first_and_rerun(section, sizes, facts, first, second, statement_budget=STATEMENT_BUDGET)
    section.notes.append("The warehouse is a DuckDB file in the scratch directory, opened by the measured process "
                         "itself (DuckDB runs in the client's process: its CPU time is the client's).")
    return section
