"""A databricks connection's common-sql hook is DatabricksSqlHook, not its registered REST hook."""

from __future__ import annotations

import pytest

from airflow_provider_namelookup.operators import SqlGenderLookupOperator
from airflow_provider_namelookup.operators.sql_hook import sql_hook
from tests.support import require, set_connection


def test_a_databricks_connection_gets_the_sql_hook_and_others_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    databricks_sql = require("airflow.providers.databricks.hooks.databricks_sql", "the databricks extra")
    set_connection("dbx_hook", {"conn_type": "databricks", "host": "example.cloud.databricks.com", "password": "t",
                                "extra": {"http_path": "/sql/1.0/warehouses/abc"}})
    set_connection("sqlite_hook", {"conn_type": "sqlite", "host": ":memory:"})
    hook = sql_hook("dbx_hook", {"catalog": "main"})
    assert isinstance(hook, databricks_sql.DatabricksSqlHook) and hook.catalog == "main"
    assert sql_hook("sqlite_hook") is None and sql_hook("no_such_connection") is None
    operator = SqlGenderLookupOperator(task_id="t", conn_id="dbx_hook", source_table="customers",
                                       key_column="id", name_column="name")
    assert isinstance(operator.get_db_hook(), databricks_sql.DatabricksSqlHook)
    assert operator.get_db_hook() is operator.get_db_hook()
    sqlite = SqlGenderLookupOperator(task_id="t", conn_id="sqlite_hook", source_table="customers",
                                     key_column="id", name_column="name")
    assert type(sqlite.get_db_hook()).__name__ == "SqliteHook"
