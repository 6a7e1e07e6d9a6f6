"""ClickHouse, through apache-airflow-providers-clickhousedb's ``ClickHouseHook``.

Example::

    dialect = ClickHouseDialect(ClickHouseHook("warehouse"))
"""

from __future__ import annotations

from airflow_provider_namelookup.warehouse.dialects.base import WarehouseDialect


class ClickHouseDialect(WarehouseDialect, name="clickhouse",
                        credit_promise="one run at a time claims in an answers table, holding its writer lease"):
    """The spellings of ClickHouse."""
