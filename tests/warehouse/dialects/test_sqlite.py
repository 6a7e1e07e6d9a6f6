"""SQLite's spellings on a real SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from tests.warehouse.dialects._engine import check_equalities, roundtrip_timestamp


def test_sqlite_compares_raw_values_exactly_and_keeps_times_as_iso_text(sqlite_warehouse: Any) -> None:
    session = WarehouseSession(sqlite_warehouse.hook)
    assert isinstance(session.dialect, SqliteDialect)
    check_equalities(session)
    table = sqlite_warehouse.table_name("times")
    moment = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert roundtrip_timestamp(session, table, moment) == "2026-11-23T12:00:00+00:00"
    assert session.fetchall("PRAGMA busy_timeout")[0][0] == 120_000  # several runs may write one file
    session.close()
