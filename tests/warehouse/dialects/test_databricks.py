"""Databricks SQL's dialect: what its statements carry (the statements run in
tests/operators/test_warehouse_databricks.py, on a local Spark)."""

from __future__ import annotations

from types import SimpleNamespace

from airflow_provider_namelookup.warehouse.dialects.databricks import DatabricksDialect
from tests.support import require, set_connection


def test_parameters_travel_at_the_native_marker_unless_the_connection_inlines_them() -> None:
    """DatabricksSqlHook keeps common-sql's ``%s``; the connector binds a list at ``?`` (native
    parameters, its default since 3.0), or formats ``%s`` itself with ``use_inline_params``."""
    databricks_sql = require("airflow.providers.databricks.hooks.databricks_sql", "the databricks extra")
    set_connection("x", {"conn_type": "databricks", "host": "example.cloud.databricks.com", "password": "t"})
    assert databricks_sql.DatabricksSqlHook(databricks_conn_id="x").placeholder == "%s"
    native = DatabricksDialect(databricks_sql.DatabricksSqlHook(databricks_conn_id="no_such_connection"))
    assert native.placeholder == "?" and not native._percent_escaped
    assert "from_json(?, " in native.json_select(2, ["str", "int"])
    inline = DatabricksDialect(databricks_sql.DatabricksSqlHook(databricks_conn_id="x", use_inline_params=True))
    assert inline.placeholder == "%s" and inline._percent_escaped
    from_extra = SimpleNamespace(additional_params={},
                                 databricks_conn=SimpleNamespace(extra_dejson={"use_inline_params": "silent"}))
    assert DatabricksDialect(from_extra).placeholder == "%s"
