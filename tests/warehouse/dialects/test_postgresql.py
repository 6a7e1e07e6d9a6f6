"""PostgreSQL's spellings on the real server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.dialects.postgresql import PostgresDialect
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from tests.warehouse.dialects._engine import check_equalities, roundtrip_timestamp


@pytest.mark.database
def test_postgresql_compares_exactly_bulk_loads_with_copy_and_keeps_aware_times(postgres_warehouse: Any) -> None:
    session = WarehouseSession(postgres_warehouse.hook)
    assert isinstance(session.dialect, PostgresDialect) and session.dialect.creates_target_at_fill
    check_equalities(session)
    moment = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert roundtrip_timestamp(session, postgres_warehouse.table_name("times"), moment) == moment
    table = postgres_warehouse.table_name("load")
    session.execute(f"CREATE TABLE {table} (a TEXT, b INTEGER)")
    before = session.statements
    session.load(table, ["a", "b"], [(f"v{i}", i) for i in range(5_000)] + [(None, None), ("tab\there", 1)])
    session.commit()
    assert session.statements - before == 1  # one COPY, whatever the number of rows
    assert session.fetchall(f"SELECT COUNT(*), COUNT(a) FROM {table}")[0] == (5_002, 5_001)
    assert session.fetchall(f"SELECT a FROM {table} WHERE b = 1 ORDER BY a")[0][0] == "tab\there"
    session.close()
