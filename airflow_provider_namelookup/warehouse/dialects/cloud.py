"""What BigQuery and Databricks SQL share: tables in object storage, without keys, indexes or
session-private temporary tables.

Names are quoted in backticks and string literals escape with backslashes; a table declares no
key and no index (neither engine enforces one), so every fill is a ``MERGE``; the run's own
tables are staging tables beside the answers table (:attr:`~.engine_traits.EngineTraits.temporary_tables_are_private`
is False), and rows are loaded as one bound JSON document (``executemany`` runs a job per row).

Example::

    class BigQueryDialect(CloudTableDialect): ...
    BigQueryDialect(hook).quote("analytics.customers")          # '`analytics`.`customers`'
    BigQueryDialect(hook).literal("it's")                       # "'it\\\\'s'"
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.base import BulkLoad, WarehouseDialect
from airflow_provider_namelookup.warehouse.schema import Column


class CloudTableDialect(WarehouseDialect, abstract=True):
    """The spellings BigQuery and Databricks SQL share (see the module docstring)."""

    engine = WarehouseDialect.engine.changed(temporary_tables_are_private=False, enforces_keys=False,
                                             bulk_load=BulkLoad.JSON)

    def quote(self, name: str) -> str:
        return ".".join(f"`{part}`" for part in name.split("."))

    def literal(self, value: Any) -> str:
        if isinstance(value, datetime):
            return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
        if isinstance(value, str):
            return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return super().literal(value)

    def create_table(self, table: str, key: Column, columns: Sequence[Column]) -> list[str]:
        definitions = [f"{self.quote(key.name)} {self._column_type(key)} NOT NULL",
                       *(f"{self.quote(c.name)} {self._column_type(c)}" for c in columns)]
        return [f"CREATE TABLE {table} ({', '.join(definitions)})"]

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> list[str]:
        return []

    def add_column(self, table: str, column: Column) -> str:
        return f"ALTER TABLE {table} ADD COLUMN {self.quote(column.name)} {self._column_type(column)}"

    def add_primary_key(self, table: str, key: str) -> list[str]:
        return []
