"""The compliance suite at the level Redshift and SQL Server can run it here: statements parsed only.

No engine of theirs runs here, so the suite's tables cannot be checked on them. What can be is
the SQL: the suite's scenarios are driven whole by the real engine against the emulator over a
recording connection (:mod:`.recording`), and every statement each sends must parse in sqlglot's
grammar of the warehouse (``redshift``, ``tsql``), and the runs must keep the suite's statement
budget (:data:`~airflow_provider_namelookup.testing.compliance.FIRST_RUN_STATEMENTS`,
:data:`~airflow_provider_namelookup.testing.compliance.RERUN_STATEMENTS`). The scenarios, as the
suite's: a first run over the suite's customers (spellings of one name, hints, the three kinds of
invalid row), an unchanged rerun, changed names, stale answers under ``max_age`` with
``retention``, a budget spent in part (``on_insufficient_credits="partial"``), a run the service
cuts midway, and an erasure by key, by value and by age. A failure names the dialect method that
built the statement (:class:`~airflow_provider_namelookup.testing.trace.DialectTrace`), as the
suite's do.

Example::

    pytest tests/warehouse/dialects/test_compliance_recorded.py -k mssql
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules, plan_name
from airflow_provider_namelookup.testing.compliance import (
    CUSTOMERS,
    ERASABLE,
    FIRST_RUN_STATEMENTS,
    RERUN_STATEMENTS,
    distinct_valid,
)
from airflow_provider_namelookup.testing.trace import DialectTrace
from airflow_provider_namelookup.warehouse.dialects.erasure import ErasureStatements
from airflow_provider_namelookup.warehouse.erasure import Erasure, erase
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from tests.warehouse.dialects.parsing import parse_all
from tests.warehouse.dialects.recording import (
    ANSWERS,
    SOURCE,
    RecordedRun,
    RecordingHook,
    RecordingSession,
    Warehouse,
    _bare,
    record_run,
)

PARSED_ONLY = {"redshift": "redshift", "mssql": "tsql"}
"""The warehouses the suite runs on as statements parsed only: connection type → sqlglot's grammar."""

TARGET = f"{SOURCE}_gender"


def distinct_pass(rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, Any, int, int]]:
    """What a distinct pass reads from ``(key, name, country)`` rows: each raw value, its row count and
    lowest key (:class:`~.recording.Warehouse`'s ``values``)."""
    counts: Counter[tuple[Any, Any]] = Counter()
    first: dict[tuple[Any, Any], int] = {}
    for key, name, country in rows:
        counts[(name, country)] += 1
        first[(name, country)] = min(first.get((name, country), key), key)
    return [(name, country, count, first[(name, country)]) for (name, country), count in counts.items()]


def valid_rows(rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The ``(key, name, country)`` rows whose gender query is valid, planned as the engine plans them."""
    rules = QueryRules(LookupKind.GENDER)
    return [row for row in rows if plan_name(row[1], rules, country=row[2]).query is not None]


def check_parses(statements: Sequence[str], trace: DialectTrace, read: str) -> None:
    """Every statement parses in ``read``; a failure names the dialect method that built the statement."""
    for sql in statements:
        try:
            parse_all([sql], read)
        except AssertionError as err:
            raise AssertionError(f"{err}\n{trace.blame(sql)}") from None


def by_method(run: RecordedRun) -> str:
    """The statements of a run counted by the dialect method that built them, most first."""
    assert run.trace is not None
    counts = Counter(run.trace.method_of(sql) for sql in run.statements)
    return ", ".join(f"{method} x{count}" for method, count in counts.most_common())


def check_budget(conn_type: str, run: RecordedRun, what: str, budget: int) -> None:
    assert len(run.statements) == run.summary["statements"]
    assert len(run.statements) <= budget, (
        f"{conn_type}: a {what} sent {len(run.statements)} statements (budget {budget}); by the dialect method "
        f"that built them: {by_method(run)}")


@pytest.fixture(params=PARSED_ONLY, ids=str)
def conn_type(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _read(conn_type: str) -> str:
    return PARSED_ONLY[conn_type]


def _record(conn_type: str, emulator: Any, token: str, **shape: Any) -> RecordedRun:
    return record_run(conn_type, emulator, token, distinct=0, rows=0, traced=True, **shape)


def test_a_first_run_and_its_rerun_parse_and_keep_the_budget(conn_type: str, emulator: Any,
                                                             make_account: Any) -> None:
    """The suite's customers: every distinct valid query looked up once, every row an outcome (the
    invalid ones errors), within :data:`FIRST_RUN_STATEMENTS`; the unchanged rerun within
    :data:`RERUN_STATEMENTS`, looking nothing up."""
    token = make_account(credits=100)
    first = _record(conn_type, emulator, token, values=distinct_pass(CUSTOMERS))
    invalid = len(CUSTOMERS) - len(valid_rows(CUSTOMERS))
    assert (first.summary["lookups"], first.summary["rows_invalid"]) == (distinct_valid(CUSTOMERS), invalid), \
        first.summary
    assert first.summary["rows_enriched"] == len(CUSTOMERS) - invalid
    assert any(s.startswith("CREATE") and _bare(ANSWERS) in _bare(s) for s in first.statements)  # it made them
    rerun = _record(conn_type, emulator, token, values=[], existing=True)
    assert (rerun.summary["lookups"], rerun.summary["requests"]) == (0, 0), rerun.summary
    for run in (first, rerun):
        assert run.trace is not None
        check_parses(run.statements, run.trace, _read(conn_type))
    check_budget(conn_type, first, "first run", FIRST_RUN_STATEMENTS)
    check_budget(conn_type, rerun, "rerun", RERUN_STATEMENTS)


def test_changed_names_and_stale_answers_parse(conn_type: str, emulator: Any, make_account: Any) -> None:
    """A rerun over an existing target whose rows changed (the upsert of the target), then one that
    refreshes answers older than ``max_age`` and deletes those older than ``retention``."""
    token = make_account(credits=100)
    changed = _record(conn_type, emulator, token, existing=True,
                      values=distinct_pass([(1, "Giulia", None), (2, "Sven", "SE"), (3, "giulia", "IT")]))
    assert changed.summary["lookups"] == 3 and changed.summary["rows_enriched"] == 3, changed.summary
    assert any(s.startswith(("INSERT", "MERGE", "UPDATE")) and _bare(TARGET) in _bare(s.split("(")[0])
               for s in changed.statements)  # the target's rows written again
    stale = _record(conn_type, emulator, token, existing=True, values=distinct_pass([(1, "Anna", None)]),
                    max_age=timedelta(hours=1), retention=timedelta(days=30))
    assert stale.summary["lookups"] == 1, stale.summary
    assert any("answered_at <" in s for s in stale.statements)  # retention's delete of old answers
    for run in (changed, stale):
        assert run.trace is not None
        check_parses(run.statements, run.trace, _read(conn_type))
    check_budget(conn_type, changed, "rerun over changed names", FIRST_RUN_STATEMENTS)


def test_a_partial_budget_and_a_run_cut_midway_parse(conn_type: str, emulator: Any, make_account: Any) -> None:
    """``max_credits`` below what the table needs with ``on_insufficient_credits="partial"``: the run
    spends the budget and defers the rest. A run the service stops midway (its credits run out): the
    statements it sent before and after the refusal (the answers it paid for stored, its claims
    released) parse."""
    partial = _record(conn_type, emulator, make_account(credits=100), values=distinct_pass(CUSTOMERS),
                      max_credits=3, on_insufficient_credits="partial")
    assert (partial.summary["credits_used"], partial.summary["lookups"]) == (3, 3), partial.summary
    assert partial.summary["rows_deferred"] > 0
    cut = _record(conn_type, emulator, make_account(credits=150), raises=True,
                  values=distinct_pass([(i, f"Person{i:03d}", None) for i in range(1, 251)]))
    assert re.search(r"(?i)credit", str(cut.error)), cut.error
    assert any("answered_by" in s for s in cut.statements)  # what was paid for was stored
    for run in (partial, cut):
        assert run.trace is not None
        check_parses(run.statements, run.trace, _read(conn_type))


class ErasableWarehouse(Warehouse):
    """The recording warehouse after a run over the suite's :data:`ERASABLE` people: a target whose rows
    carry their keys, names and query hashes (``h<key>``), an answers table echoing their names, one
    hash (``h2``) without an answers row (a claim not made yet: its tombstone is inserted)."""

    TARGET_COLUMNS = ("customer_id", "gender", "status", "credits_used", "query_hash", "source_name",
                      "source_country", "enriched_at")

    def answer(self, sql: str, params: Sequence[Any] | None) -> tuple[list[tuple[Any, ...]], int]:
        people = {key: (name, country) for key, name, country in ERASABLE}
        if "source_name IS NOT NULL" in sql:  # the target's rows with values
            self.statements.append(sql)
            return [(key, name, None, f"h{key}") for key, (name, _) in people.items()], len(people)
        if "first_name IS NOT NULL" in sql:  # the names the service echoed
            self.statements.append(sql)
            return [(f"h{key}", name.strip().title(), None) for key, (name, _) in people.items()], len(people)
        if re.match(r"^SELECT \S+, query_hash FROM", sql):  # the target's rows of the keys
            self.statements.append(sql)
            return [(key, f"h{key}") for key in params or ()], len(params or ())
        if sql.startswith(("UPDATE", "MERGE")) and "'erased'" in sql:  # the answers made tombstones
            self.statements.append(sql)
            return [], len(params or ()) - 1
        if re.match(r"^SELECT query_hash FROM .* IN \(", sql):  # which hashes have a row
            self.statements.append(sql)
            there = [(h,) for h in params or () if h != "h2"]
            return there, len(there)
        return super().answer(sql, params)

    def columns(self, sql: str) -> list[str] | None:
        if _bare(TARGET) in _bare(sql) and sql.endswith(("1 = 0", "FALSE")):
            return list(self.TARGET_COLUMNS)
        return None


def test_an_erasure_parses(conn_type: str) -> None:
    """Erasing two people by key and one by value, and answers by age: every statement it sends (the
    reads that find them, the tombstones, a tombstone inserted for a hash without a row, the deletes
    from the target and the answers table) parses."""
    house = ErasableWarehouse([])
    house.tables |= {_bare(TARGET), _bare(ANSWERS)}
    session: WarehouseSession = RecordingSession(RecordingHook(conn_type, house))
    trace = DialectTrace(session.dialect)
    session.dialect = trace.dialect
    try:
        counts = erase(session, Erasure(answers_table=ANSWERS, target_tables=(TARGET,), key_column="customer_id",
                                        keys=(1, 2), values=("GIULIA",), older_than=timedelta(days=30)))
    finally:
        session.shutdown()
    assert counts.answers_erased == 4  # by key (1, 2) and by value (4 "Giulia", 6 "giulia "), nothing else
    methods = {trace.method_of(sql) for sql in house.statements}
    assert {f"erasure.{name}" for name in ("rows_of_keys", "rows_with_values", "echoed_names", "erase_answers",
                                           "existing_hashes", "insert_tombstone", "delete_where_in",
                                           "delete_answers_before")} <= methods, methods
    check_parses(house.statements, trace, _read(conn_type))


def test_a_statement_that_does_not_parse_names_the_method_that_built_it() -> None:
    """What a dialect's wrong spelling fails with: the statement, sqlglot's error, and the method."""
    from airflow_provider_namelookup.warehouse.dialects.mssql import MsSqlDialect

    class MisspeltErasure(ErasureStatements):
        def delete_where_in(self, table: str, column: str, count: int) -> str:
            return f"DELETE {table} WHERE {column} IN (({self.marks(count)})"

    class Misspelt(MsSqlDialect, name="mssql", sqlglot_name="tsql", proof="parsed only",
                   credit_promise=MsSqlDialect.credit_promise):
        @cached_property
        def erasure(self) -> ErasureStatements:
            return MisspeltErasure(self)

    trace = DialectTrace(Misspelt(RecordingHook("mssql", Warehouse([]))))
    erasure = trace.dialect.erasure
    statements = [erasure.rows_of_keys(TARGET, "customer_id", 2), erasure.delete_where_in(TARGET, "id", 2)]
    with pytest.raises(AssertionError, match=r"(?s)tsql does not parse: DELETE .*built by "
                                             r"\S*Misspelt\.erasure\.delete_where_in: DELETE"):
        check_parses(statements, trace, "tsql")
