"""The common-sql hook of a warehouse connection, where its connection type's own hook is none.

``BaseSQLOperator.get_db_hook`` takes the hook Airflow registers for the connection type, and
for a ``databricks`` connection that is the REST API's ``DatabricksHook``, no ``DbApiHook``:
the table operators would fail with common-sql's "You are trying to use `common-sql` with
DatabricksHook". As Databricks' own ``DatabricksSqlOperator`` does, they take
``DatabricksSqlHook`` on such a connection instead.

:func:`warehouse_hook` is how every operator that reads a warehouse gets its hook: a
connection that can never give one (its provider is not installed, or it is no SQL warehouse's:
the service's connection given as ``conn_id``, say) fails with a :class:`WarehouseInputError`
that says what to change, which no retry can fix.

Example::

    hook = sql_hook("warehouse", {"http_path": "/sql/1.0/warehouses/abc"})
    # DatabricksSqlHook(databricks_conn_id="warehouse", http_path=...) on a databricks connection, else None
    hook = warehouse_hook(operator.get_db_hook, "warehouse")
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError
from airflow_provider_namelookup.warehouse.dialects import install_hint, warehouse_of


def sql_hook(conn_id: str, hook_params: dict[str, Any] | None = None) -> Any | None:
    """The common-sql hook of ``conn_id`` where its connection type registers another kind of hook;
    None where the connection type's own hook serves (or the connection cannot be read)."""
    from airflow.providers.common.compat.sdk import BaseHook

    try:
        conn_type = BaseHook.get_connection(conn_id).conn_type
    except Exception:  # common-sql's get_db_hook says what is wrong with the connection
        return None
    warehouse = warehouse_of(conn_type)
    if warehouse is None or (named := warehouse.dialect_class().engine.sql_hook) is None:
        return None
    module, name, id_param = named
    hook_class = getattr(importlib.import_module(module), name)
    return hook_class(**{id_param: conn_id, **(hook_params or {})})


def warehouse_hook(get_db_hook: Callable[[], Any], conn_id: str) -> Any:
    """``get_db_hook()`` (an operator's common-sql hook), or why ``conn_id`` can never give one."""
    try:
        return get_db_hook()
    except Exception as err:
        raise _why_no_hook(conn_id, err) from err


def _why_no_hook(conn_id: str, err: Exception) -> Exception:
    """A :class:`WarehouseInputError` naming what to change, or ``err`` when the connection is fine."""
    from airflow.providers.common.compat.sdk import BaseHook
    from airflow.providers.common.sql.hooks.sql import DbApiHook

    try:
        conn = BaseHook.get_connection(conn_id)
    except Exception:
        return err  # not defined: common-sql's own error says so
    conn_type = conn.conn_type
    hint = install_hint(conn_type)
    if hint is not None and (isinstance(err, ImportError) or "unknown hook type" in str(err).lower()):
        return WarehouseInputError(f"connection {conn_id!r} is a {conn_type} warehouse, whose Airflow provider is "
                                   f"not installed: {hint}")
    try:
        hook = conn.get_hook()
    except Exception:
        return err
    if isinstance(hook, DbApiHook):
        return err
    return WarehouseInputError(f"conn_id {conn_id!r} is a {conn_type!r} connection ({type(hook).__name__}), not a "
                               "SQL warehouse's: conn_id must name the connection of the warehouse holding the "
                               "table (postgres, sqlite, mysql, snowflake, ...: one whose hook is a common-sql "
                               "DbApiHook)")
