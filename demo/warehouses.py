"""The demo's warehouse: SQLite by default, DuckDB with ``NAMELOOKUP_DEMO_WAREHOUSE=duckdb``.

Each kind builds the customers table, names the Airflow connection the example DAG uses,
and opens a DB-API connection for the closing report.

Example::

    warehouse = demo_warehouse("duckdb", Path(".demo"))     # .demo/warehouse.duckdb
    warehouse.build(rows=4000)
    warehouse.connection()          # {"conn_type": "duckdb", "host": ".../warehouse.duckdb"}
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from namelookup_emulator.sample import customer_rows

KINDS = ("sqlite", "duckdb")
_SCHEMA = "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT)"


@dataclass(frozen=True)
class DemoWarehouse:
    kind: str
    path: Path
    label: str

    def connection(self) -> dict[str, Any]:
        """The Airflow connection (``AIRFLOW_CONN_NAMELOOKUP_WAREHOUSE``) of the example DAG."""
        return {"conn_type": self.kind, "host": str(self.path)}

    def connect(self) -> Any:
        """A DB-API connection for the report (closed by the caller)."""
        if self.kind == "duckdb":
            import duckdb

            return duckdb.connect(str(self.path))
        return sqlite3.connect(self.path)

    def build(self, rows: int) -> None:
        """The customers table: ``rows`` customers of real name frequencies (seed 2026)."""
        db = self.connect()
        try:
            db.execute(_SCHEMA)
            db.executemany("INSERT INTO customers VALUES (?, ?, ?)", list(customer_rows(rows, seed=2026)))
            db.commit()
        finally:
            db.close()


def demo_warehouse(kind: str, workdir: Path) -> DemoWarehouse:
    """The demo warehouse of ``kind`` (one of :data:`KINDS`) in ``workdir``."""
    if kind == "duckdb":
        return DemoWarehouse("duckdb", workdir / "warehouse.duckdb", "DuckDB")
    if kind == "sqlite":
        return DemoWarehouse("sqlite", workdir / "warehouse.db", "SQLite")
    raise SystemExit(f"NAMELOOKUP_DEMO_WAREHOUSE must be one of {', '.join(KINDS)}, got {kind!r}")
