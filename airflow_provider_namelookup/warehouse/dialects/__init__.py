"""One module per warehouse engine, each the only place of its SQL spellings.

:func:`dialect_for` picks the module for a common-sql hook by its ``dialect_name`` (or
connection type); a warehouse the engine cannot serve gets an error naming the ones it can.
A new warehouse is one module here (a :class:`~.base.WarehouseDialect` subclass listed in
:data:`DIALECTS`) and its tests.

Example::

    >>> sorted(d.name for d in DIALECTS)
    ['bigquery', 'databricks', 'duckdb', 'mssql', 'mysql', 'postgresql', 'redshift', 'snowflake', 'sqlite']
"""

from __future__ import annotations

from typing import Any

from airflow_provider_namelookup.warehouse.dialects.base import Names, WarehouseDialect
from airflow_provider_namelookup.warehouse.dialects.bigquery import BigQueryDialect
from airflow_provider_namelookup.warehouse.dialects.databricks import DatabricksDialect
from airflow_provider_namelookup.warehouse.dialects.duckdb import DuckDBDialect
from airflow_provider_namelookup.warehouse.dialects.mssql import MsSqlDialect
from airflow_provider_namelookup.warehouse.dialects.mysql import MySqlDialect
from airflow_provider_namelookup.warehouse.dialects.postgresql import PostgresDialect
from airflow_provider_namelookup.warehouse.dialects.redshift import RedshiftDialect
from airflow_provider_namelookup.warehouse.dialects.snowflake import SnowflakeDialect
from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect

__all__ = ["DIALECTS", "Names", "UnsupportedWarehouse", "WarehouseDialect", "dialect_for"]

DIALECTS: tuple[type[WarehouseDialect], ...] = (
    SqliteDialect, PostgresDialect, MySqlDialect, DuckDBDialect, SnowflakeDialect, BigQueryDialect, DatabricksDialect,
    RedshiftDialect, MsSqlDialect)


class UnsupportedWarehouse(ValueError):
    """The connection's warehouse has no dialect module."""


def _engine_of(hook: Any) -> str:
    name = getattr(hook, "dialect_name", None)
    return str(name if name and name != "default" else getattr(hook, "conn_type", None) or name)


def dialect_for(hook: Any) -> WarehouseDialect:
    """The dialect of a common-sql hook.

    :raises UnsupportedWarehouse: naming the warehouses the table operators support.
    """
    engine = _engine_of(hook)
    for dialect in DIALECTS:
        if engine in dialect.engines:
            return dialect(hook)
    supported = ", ".join(d.name for d in DIALECTS)
    raise UnsupportedWarehouse(f"the table operators support {supported} warehouses; this connection's "
                               f"dialect is {engine!r}")
