"""SQLite's spellings on a real SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from tests.warehouse.dialects._engine import check_equalities, check_unchanged_forms, roundtrip_timestamp


def test_sqlite_compares_raw_values_exactly_and_keeps_times_as_iso_text(sqlite_warehouse: Any) -> None:
    session = WarehouseSession(sqlite_warehouse.hook)
    assert isinstance(session.dialect, SqliteDialect)
    check_equalities(session)
    table = sqlite_warehouse.table_name("times")
    moment = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert roundtrip_timestamp(session, table, moment) == "2026-11-23T12:00:00+00:00"
    assert session.fetchall("PRAGMA busy_timeout")[0][0] == 120_000  # several runs may write one file
    assert session.fetchall("PRAGMA threads")[0][0] == 1  # the distinct pass's sort gets a helper thread
    session.close()


def test_a_load_is_one_statement_that_keeps_each_value_of_its_own_type(sqlite_warehouse: Any) -> None:
    """Rows go into a run's table by one ``INSERT ... SELECT`` over one JSON document, so that the
    driver steps once, not once a row (each step lets go of the interpreter and waits up to 5 ms
    to get it back while the lookups keep the event loop busy). SQLite keeps a type per value,
    not per column, and so does the load: a text that looks like a number stays text."""
    session = WarehouseSession(sqlite_warehouse.hook)
    steps: list[str] = []
    session.conn.set_trace_callback(steps.append)
    session.execute("CREATE TEMP TABLE loaded (a, b, c)")
    rows = [("Anna", 1, 0.1), ("7", 2**62, 1e-300), (None, -3, 1.0), (17, "x" * 500, None), ("Zoë ✓", True, 2.5)]
    session.load("loaded", ["a", "b", "c"], rows * 200)
    assert len([s for s in steps if s.startswith("INSERT")]) == 1
    read = session.fetchall("SELECT a, typeof(a), b, typeof(b), c, typeof(c) FROM loaded LIMIT 5")
    assert read == [("Anna", "text", 1, "integer", 0.1, "real"), ("7", "text", 2**62, "integer", 1e-300, "real"),
                    (None, "null", -3, "integer", 1.0, "real"), (17, "integer", "x" * 500, "text", None, "null"),
                    ("Zoë ✓", "text", 1, "integer", 2.5, "real")]
    session.close()


def test_rows_json_cannot_carry_are_loaded_as_they_are(sqlite_warehouse: Any) -> None:
    """A NUL inside a text (SQLite's JSON functions end the text there) or bytes go by ``executemany``."""
    session = WarehouseSession(sqlite_warehouse.hook)
    session.execute("CREATE TEMP TABLE loaded (a, b)")
    rows = [("Ann\x00a", 1), (b"\x00\xff", 2)]
    for row in rows:
        session.load("loaded", ["a", "b"], [row])
    assert session.fetchall("SELECT a, b FROM loaded ORDER BY b") == rows
    session.close()




def test_a_reruns_outer_join_reads_exactly_the_rows_not_exists_would(sqlite_warehouse: Any) -> None:
    """SQLite runs a correlated ``NOT EXISTS`` once a row, so its distinct pass leaves unchanged rows
    out by a ``LEFT JOIN`` instead (a 1M-row rerun's pass: 0.19 s instead of 0.35 s)."""
    session = WarehouseSession(sqlite_warehouse.hook)
    assert session.dialect.engine.unchanged_by_outer_join
    check_unchanged_forms(session, sqlite_warehouse.table_name("src"), sqlite_warehouse.table_name("tgt"))
    session.close()
