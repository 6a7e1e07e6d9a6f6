"""BigQuery's connection: google-cloud-bigquery's DB-API over the hook's client, not ``BigQueryHook.get_conn()``.

The table-operator tests run every statement on bqemulator (the ``warehouse`` fixture); these
check the opener they rely on, against the real, unpatched ``BigQueryHook``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import require, set_connection


@pytest.fixture
def bigquery_hook(request: pytest.FixtureRequest) -> Iterator[Any]:
    from conftest import BIGQUERY, require_reachable

    require_reachable("bigquery")
    request.getfixturevalue("bigquery_emulator")
    set_connection("bigquery_opener", BIGQUERY)
    from airflow.providers.google.cloud.hooks.bigquery import BigQueryHook

    yield BigQueryHook(gcp_conn_id="bigquery_opener")


def test_the_hooks_own_db_api_cannot_bind_the_engines_positional_parameters() -> None:
    """Why the dialect does not use ``BigQueryHook.get_conn()``: its cursor formats named parameters
    into the text and fails on the positional ones every engine statement binds."""
    hooks = require("airflow.providers.google.cloud.hooks.bigquery", reason="the bigquery extra installs it")
    cursor = hooks.BigQueryCursor(service=None, project_id="p", hook=None)
    with pytest.raises(AttributeError, match="items"):
        cursor.execute("SELECT %s", [1])
    assert cursor.rowcount == -1  # and it never counts rows


def test_a_runs_connection_binds_query_parameters_and_counts_rows(bigquery_hook: Any) -> None:
    from airflow_provider_namelookup.warehouse.session import WarehouseSession

    session = WarehouseSession(bigquery_hook)
    try:
        assert session.dialect.name == "bigquery"
        table = "`analytics`.`opener_check`"
        session.execute(f"CREATE OR REPLACE TABLE {table} (k INT64, v STRING)")
        assert session.execute(f"INSERT INTO {table} (k, v) VALUES (%s, %s), (%s, %s)", [1, "O'Brien\\", 2, "b"]) == 2
        assert session.fetchall(f"SELECT v FROM {table} WHERE k = %s", [1]) == [("O'Brien\\",)]
        assert session.execute(f"UPDATE {table} SET v = %s WHERE k >= %s", ["c", 1]) == 2
        assert session.execute(f"DROP TABLE {table}") == 0
    finally:
        session.shutdown()


def test_a_statement_on_a_missing_table_fails(bigquery_hook: Any) -> None:
    """A failed query is an error, not an empty result (the run's probes decide what exists by it)."""
    from airflow_provider_namelookup.warehouse.session import WarehouseSession

    session = WarehouseSession(bigquery_hook)
    try:
        assert session.probe("SELECT 1 FROM `analytics`.`no_such_table` WHERE 1 = 0") is not None
        assert session.probe("SELECT 1 WHERE 1 = 0") is None
    finally:
        session.shutdown()
