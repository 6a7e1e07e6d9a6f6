"""Shared checks of a dialect's distinctive spellings, run on the real engine."""

from __future__ import annotations

from typing import Any

from airflow_provider_namelookup.warehouse.session import WarehouseSession


def truth(session: WarehouseSession, condition: str) -> bool:
    """Evaluate a condition on literal values in the engine."""
    return bool(session.fetchall(f"SELECT CASE WHEN {condition} THEN 1 ELSE 0 END")[0][0])


def check_equalities(session: WarehouseSession) -> None:
    d = session.dialect
    assert truth(session, d.null_safe_equal("NULL", "NULL"))
    assert not truth(session, d.null_safe_equal("'Anna'", "NULL"))
    assert not truth(session, d.null_safe_equal("'José'", "'Jose'"))  # accents are not folded
    assert not truth(session, d.null_safe_equal("'anna'", "'Anna'"))  # nor case
    assert truth(session, d.exact_equal("'Anna'", "'Anna'")) and not truth(session, d.exact_equal("'ANNA'", "'Anna'"))


def roundtrip_timestamp(session: WarehouseSession, table: str, value: Any) -> Any:
    d = session.dialect
    from airflow_provider_namelookup.warehouse.schema import Column

    session.execute(f"CREATE TABLE {table} (at {d.column_type(Column('at', 'timestamp'))})")
    session.execute(f"INSERT INTO {table} (at) VALUES ({d.placeholder})", [d.timestamp(value)])
    session.commit()
    return session.fetchall(f"SELECT at FROM {table}")[0][0]
