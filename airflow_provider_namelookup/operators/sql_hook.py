"""The common-sql hook of a warehouse connection, where its connection type's own hook is none.

``BaseSQLOperator.get_db_hook`` takes the hook Airflow registers for the connection type, and
for a ``databricks`` connection that is the REST API's ``DatabricksHook``, no ``DbApiHook``:
the table operators would fail with common-sql's "You are trying to use `common-sql` with
DatabricksHook". As Databricks' own ``DatabricksSqlOperator`` does, they take
``DatabricksSqlHook`` on such a connection instead.

Example::

    hook = sql_hook("warehouse", {"http_path": "/sql/1.0/warehouses/abc"})
    # DatabricksSqlHook(databricks_conn_id="warehouse", http_path=...) on a databricks connection, else None
"""

from __future__ import annotations

import importlib
from typing import Any

from airflow_provider_namelookup.warehouse.dialects import warehouse_of


def sql_hook(conn_id: str, hook_params: dict[str, Any] | None = None) -> Any | None:
    """The common-sql hook of ``conn_id`` where its connection type registers another kind of hook;
    None where the connection type's own hook serves (or the connection cannot be read)."""
    from airflow.sdk import BaseHook

    try:
        conn_type = BaseHook.get_connection(conn_id).conn_type
    except Exception:  # common-sql's get_db_hook says what is wrong with the connection
        return None
    warehouse = warehouse_of(conn_type)
    if warehouse is None or (named := warehouse.dialect_class().sql_hook) is None:
        return None
    module, name, id_param = named
    hook_class = getattr(importlib.import_module(module), name)
    return hook_class(**{id_param: conn_id, **(hook_params or {})})
