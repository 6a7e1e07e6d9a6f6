"""What runs of a ``where`` is the checked tree written back by sqlglot (issue 32): on every
warehouse that runs here, each allowed construct runs written back and keeps the rows the filter
means, and where the engine also runs the text as written, both keep the same rows."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_namelookup.warehouse.where_clause import checked_where, filtered

ROWS = [(1, "Anna", "DE"), (2, "ben", "AT"), (3, " Carla ", None), (4, "Dörte", "DE"), (5, "O'Neil", "FR"),
        (6, None, "IT")]

FILTERS = {  # the filter, and the keys of ROWS it keeps
    "customer_id % 2 = 0": {2, 4, 6},
    "lower(name) LIKE 'a%' OR country IN ('AT', 'IT')": {1, 2, 6},
    "upper(trim(name)) = 'CARLA'": {3},
    "length(name) BETWEEN 3 AND 4": {1, 2},
    "COALESCE(country, 'XX') = 'XX'": {3},
    "NULLIF(country, 'DE') IS NULL": {1, 3, 4},
    "abs(customer_id - 4) <= 1": {3, 4, 5},
    "CAST(customer_id AS VARCHAR(10)) = '5'": {5},
    "substring(name, 1, 1) = 'A'": {1},
    "EXTRACT(YEAR FROM CAST('2026-05-01' AS DATE)) = 2026 AND customer_id < 3": {1, 2},
    "CASE WHEN country = 'DE' THEN 1 ELSE 0 END = 1": {1, 4},
    "name = 'O''Neil'": {5},
    "NOT (customer_id BETWEEN 2 AND 5)": {1, 6},
    "country IS NOT NULL AND customer_id > 4": {5, 6},
    "CURRENT_DATE > CAST('2000-01-01' AS DATE) AND customer_id = 1": {1},
    "-customer_id < -5": {6},
}
OWN_SPELLING = {
    ("sqlite", "EXTRACT(YEAR FROM CAST('2026-05-01' AS DATE)) = 2026 AND customer_id < 3"):
        "strftime('%Y', '2026-05-01') = '2026' AND customer_id < 3",  # SQLite has no extract
    ("bigquery", "name = 'O''Neil'"): "name = \"O'Neil\"",  # BigQuery doubles no quote (nor may a where escape it)
    ("databricks", "name = 'O''Neil'"): "name = \"O'Neil\"",  # Spark reads 'O''Neil' as 'O' 'Neil': ONeil
}


def _kept(warehouse: Any, table: str, condition: str) -> set[int]:
    sql = f"SELECT customer_id FROM (SELECT * FROM {table}) src WHERE {condition}"
    return {int(row[0]) for row in warehouse.rows(sql)}


def _each_filter_keeps_its_rows(warehouse: Any) -> None:
    table = warehouse.create_customers(ROWS)
    dialect = warehouse.dialect
    differ, as_written_fails = [], []
    filters = {OWN_SPELLING.get((warehouse.kind, where), where): expected for where, expected in FILTERS.items()}
    for where, expected in filters.items():
        checked = checked_where(where, dialect)
        assert checked is not None
        kept = {int(row[0]) for row in warehouse.rows(filtered(f"SELECT * FROM {table}", checked)
                                                      .replace("SELECT *", "SELECT customer_id", 1))}
        if kept != expected:
            differ.append(f"{where!r} -> {checked.sql!r} kept {sorted(kept)}, not {sorted(expected)}")
        try:
            as_written = _kept(warehouse, table, where)
        except Exception as err:
            as_written_fails.append(f"{where!r}: {str(err).splitlines()[0][:100]}")
            continue
        assert as_written == kept, f"{where!r}: as written {sorted(as_written)}, written back {sorted(kept)}"
    assert not differ, "\n".join(differ)
    print(f"{warehouse.kind}: {len(filters) - len(as_written_fails)} of {len(filters)} also run as written; "
          f"the others only written back: {as_written_fails}")


def test_each_allowed_construct_runs_written_back_and_keeps_its_rows(warehouse: Any) -> None:
    _each_filter_keeps_its_rows(warehouse)


def test_each_allowed_construct_runs_on_databricks_sql(databricks_warehouse: Any) -> None:
    _each_filter_keeps_its_rows(databricks_warehouse)


@pytest.mark.parametrize("where", ["CAST(name AS INTEGER) = 1", "CAST(name AS DATE) = CAST('2026-01-01' AS DATE)"])
def test_a_filter_that_fails_on_a_value_names_no_value(postgres_warehouse: Any, where: str) -> None:
    """The error of a ``where`` that fails while it runs keeps the warehouse's reason, not the
    value it quoted (PostgreSQL says ``invalid input syntax for type integer: "Anna"``)."""
    from airflow_provider_namelookup.warehouse.session import WarehouseSession
    from airflow_provider_namelookup.warehouse.source import TableSource, explain_source_error

    table = postgres_warehouse.create_customers([(1, "Anna", "DE")])
    session = WarehouseSession(postgres_warehouse.hook)
    try:
        source = TableSource(session.dialect, table=table, key_column="customer_id", name_column="name", where=where)
        failed = session.probe(f"SELECT * FROM {source.relation(with_params=False)} s")
        assert failed is not None and "Anna" in str(failed)
        explained = explain_source_error(session, source, failed)
    finally:
        session.shutdown()
    assert str(explained).startswith(f"where {where!r} fails on source_table {table!r} on connection ")
    assert "invalid input syntax for type " in str(explained) and "Anna" not in str(explained)
