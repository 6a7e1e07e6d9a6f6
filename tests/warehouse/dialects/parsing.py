"""What the tests of each dialect check on recorded runs (:mod:`.recording`): every statement a
run sends parses in the warehouse's own sqlglot dialect, and a run shaped like the
1,000,000-row benchmark sends at most 40 statements."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow_provider_namelookup.warehouse.dialects import warehouse_of
from tests.support import require
from tests.warehouse.dialects.recording import RecordedRun, record_run

BENCHMARK_SHAPE = {"distinct": 41_815, "rows": 1_000_000}
"""The 1M-row benchmark's table: 41,817 distinct values (2 of them invalid), read in 5 pages of 10,000."""
STATEMENT_BUDGET = 40


def parse_all(statements: list[str], read: str) -> list[Any]:
    """Each statement parsed by sqlglot in ``read`` (the driver's ``%s`` markers as ``?``)."""
    sqlglot = require("sqlglot", reason="sqlglot parses the generated SQL (the test extra installs it)")
    parsed = []
    for sql in statements:
        try:
            parsed.append(sqlglot.parse_one(sql.replace("%s", "?"), read=read,
                                            error_level=sqlglot.ErrorLevel.RAISE))
        except sqlglot.errors.ParseError as err:
            raise AssertionError(f"{read} does not parse: {sql[:400]}\n{err}") from None
    return parsed


def check_every_statement_parses(conn_type: str, read: str, emulator: Any, make_account: Any) -> list[str]:
    """Every statement of three runs parsed: a first run (1,500 distinct values in 3 pages,
    claims of 3 chunks, the target and answers table created), a run over an existing target
    whose rows changed (the upsert, the price fix-up, ``max_age``), and a ``plan_only`` run."""
    token = make_account(credits=10_000)
    shape = {"distinct": 1_500, "rows": 4_000, "page_size": 600, "claim_chunk": 500}
    first = record_run(conn_type, emulator, token, **shape)
    changed = record_run(conn_type, emulator, token, existing=True, max_age=timedelta(days=30), **shape)
    plan = record_run(conn_type, emulator, token, existing=True, plan_only=True, **shape)
    for run in (first, changed):
        assert (run.summary["lookups"], run.summary["rows_enriched"], run.summary["rows_invalid"]) == (1_500, 3_996, 4)
    assert plan.summary["credits_needed"] == 1_500 and plan.summary["lookups"] == 0
    statements = first.statements + changed.statements + plan.statements
    assert len(parse_all(statements, read)) == sum(r.summary["statements"] for r in (first, changed, plan))
    assert any(s.startswith(("INSERT", "MERGE")) and "_gender" in s.split("(")[0] for s in changed.statements)
    return statements


def is_store(sql: str) -> bool:
    """A statement of an answers store: the incoming rows loaded, or moved into the answers table."""
    return "namelookup_incoming_" in sql.split("(")[0] or (sql.startswith(("UPDATE", "MERGE")) and "answered_by" in sql)


def check_statement_budget(conn_type: str, emulator: Any, make_account: Any,
                           record_property: Any) -> RecordedRun:
    """The 1M-row benchmark's shape sends at most :data:`STATEMENT_BUDGET` statements.

    A warehouse that stores answers continuously behind the lookups (a local one, whose
    statements cost nothing: ``store_every_seconds`` 0) is held to the budget without its
    stores, which it sends as fast as answers arrive; a cloud warehouse, which bills
    statements, is held to it with them.
    """
    run = record_run(conn_type, emulator, make_account(credits=50_000), **BENCHMARK_SHAPE)
    assert run.summary["lookups"] == 41_815 and run.summary["rows_read"] == 1_000_000
    assert run.summary["statements"] == len(run.statements)
    continuous = warehouse_of(conn_type).dialect_class().tuning.store_every_seconds <= 0  # type: ignore[union-attr]
    counted = [sql for sql in run.statements if not (continuous and is_store(sql))]
    stores = [sql for sql in run.statements if is_store(sql)]
    assert 0 < run.summary["store_statements"] <= len(stores)  # the summary tells the stores apart too
    record_property("statements", run.summary["statements"])
    print(f"{conn_type}: {run.summary['statements']} statements ({len(counted)} besides continuous stores) for a "
          f"1,000,000-row run of 41,817 distinct values")
    assert len(counted) <= STATEMENT_BUDGET, counted
    return run
