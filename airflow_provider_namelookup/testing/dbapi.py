"""A warehouse reached by a bare DB-API connection, for the compliance suite (:mod:`.compliance`).

The engine reaches a warehouse through a common-sql ``DbApiHook``; a warehouse that has no Airflow
provider yet has none. :class:`DbApiConnectionHook` is the least of a hook the engine uses: new
connections, the bind marker, the quoting of a name. :class:`DbApiWarehouse` is the warehouse the
suite's tests make tables in and read back, over it.

Example::

    house = DbApiWarehouse(lambda: sqlite3.connect("/tmp/w.db"), SqliteDialect, placeholder="?")
    table = house.create_customers([(1, "Anna", "DE")])
    house.rows(f"SELECT COUNT(*) FROM {table}")        # [(1,)]
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from airflow_provider_namelookup.warehouse.dialects import WarehouseDialect


class _Quoting:
    """The part of common-sql's ``Dialect`` the engine uses: a word quoted."""

    def __init__(self, quote: str) -> None:
        self.quote = quote

    def escape_word(self, word: str) -> str:
        return f"{self.quote}{word.replace(self.quote, self.quote * 2)}{self.quote}"


class DbApiConnectionHook:
    """The least of a common-sql ``DbApiHook`` the engine uses, over a function that opens a DB-API connection.

    :param connect: opens a new DB-API (PEP 249) connection.
    :param placeholder: the driver's bind marker (``?``, ``%s``).
    :param quote: the character that quotes an identifier.
    """

    conn_name_attr = "conn_id"

    def __init__(self, connect: Callable[[], Any], *, placeholder: str = "?", quote: str = '"') -> None:
        self.connect = connect
        self.placeholder = placeholder
        self.dialect = _Quoting(quote)
        self.conn_id = "compliance"

    def get_conn(self) -> Any:
        """A new connection."""
        return self.connect()

    def run(self, sql: str, parameters: Sequence[Any] | None = None) -> None:
        """Run one statement and commit it."""
        with contextlib.closing(self.get_conn()) as conn:
            cursor = conn.cursor()
            cursor.execute(sql, parameters) if parameters else cursor.execute(sql)
            conn.commit()

    def get_records(self, sql: str, parameters: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """The rows of one query."""
        with contextlib.closing(self.get_conn()) as conn:
            cursor = conn.cursor()
            cursor.execute(sql, parameters) if parameters else cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]


class DbApiWarehouse:
    """A warehouse the compliance suite runs on, from a DB-API connection and a dialect.

    :param connect: opens a new DB-API connection to it.
    :param dialect: its dialect class (a :class:`~airflow_provider_namelookup.warehouse.dialects.WarehouseDialect`).
    :param placeholder: the driver's bind marker.
    :param quote: the character that quotes an identifier.
    :param text_type: the SQL type of the source's text columns (``name``, ``country``).
    :param concurrent_runs: runs in several threads of one process may write it at once.
    """

    def __init__(self, connect: Callable[[], Any], dialect: type[WarehouseDialect], *, placeholder: str = "?",
                 quote: str = '"', text_type: str = "VARCHAR(200)", concurrent_runs: bool = True) -> None:
        self.hook = DbApiConnectionHook(connect, placeholder=placeholder, quote=quote)
        self.dialect = dialect(self.hook)
        self.text_type = text_type
        self.concurrent_runs = concurrent_runs
        self.answers_table = self.table_name("answers")
        self.kind = dialect.name

    def table_name(self, prefix: str = "customers") -> str:
        """A table name no other test uses."""
        return f"{prefix}_{uuid.uuid4().hex[:8]}"

    def create_customers(self, rows: list[tuple[Any, ...]]) -> str:
        """A table ``customers(customer_id, name, country)`` holding ``rows``; its name."""
        table = self.table_name()
        self.hook.run(f"CREATE TABLE {table} (customer_id INTEGER NOT NULL PRIMARY KEY, name {self.text_type}, "
                      f"country {self.text_type})")
        self.insert(table, rows)
        return table

    def insert(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        """Insert ``(customer_id, name, country)`` rows."""
        if not rows:
            return
        with contextlib.closing(self.hook.get_conn()) as conn:
            cursor = conn.cursor()
            cursor.executemany(f"INSERT INTO {table} VALUES ({self.dialect.marks(3)})", rows)
            conn.commit()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of one query."""
        return self.hook.get_records(sql)
