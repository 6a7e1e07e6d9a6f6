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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow_provider_namelookup.testing.capabilities import Capabilities
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
    :param conn_type: the engine it reports, as a common-sql hook's connection type does: what picks
        its dialect (:func:`~airflow_provider_namelookup.warehouse.dialects.dialect_for`) where a run is
        given none, a registered one's included.
    """

    conn_name_attr = "conn_id"

    def __init__(self, connect: Callable[[], Any], *, placeholder: str = "?", quote: str = '"',
                 conn_type: str | None = None) -> None:
        self.connect = connect
        self.placeholder = placeholder
        self.dialect = _Quoting(quote)
        self.conn_id = "compliance"
        self.conn_type = conn_type

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


STANDARD_TYPES: dict[str, str | None] = {"integer": "INTEGER", "bigint": "BIGINT", "uuid": "UUID",
                                         "varchar(20)": "VARCHAR(20)", "char(2)": "CHAR(2)"}
"""The suite's column kinds in standard SQL (``text`` is :class:`DbApiWarehouse`'s ``text_type``)."""


class DbApiWarehouse:
    """A warehouse the compliance suite runs on, from a DB-API connection and a dialect.

    :param connect: opens a new DB-API connection to it.
    :param dialect: its dialect class (a :class:`~airflow_provider_namelookup.warehouse.dialects.WarehouseDialect`).
    :param placeholder: the driver's bind marker.
    :param quote: the character that quotes an identifier.
    :param text_type: the SQL type of the source's wide text columns (``name``, ``country``).
    :param types: the warehouse's types for the suite's other column kinds where they are not
        :data:`STANDARD_TYPES`' (None: it has no such type; ``{"uuid": None}``, say).
    :param capabilities: what it declares it can do (default: everything the suite asks); the tests
        that need what it does not are skipped, naming the capability.
    :param table_options: written after the column list of the source tables the suite creates, where
        the engine needs them for a table the suite updates (ClickHouse: its engine and the settings
        of lightweight ``UPDATE``).
    """

    def __init__(self, connect: Callable[[], Any], dialect: type[WarehouseDialect], *, placeholder: str = "?",
                 quote: str = '"', text_type: str = "VARCHAR(200)", types: Mapping[str, str | None] | None = None,
                 capabilities: Capabilities | None = None, table_options: str = "") -> None:
        self.hook = DbApiConnectionHook(connect, placeholder=placeholder, quote=quote)
        self.dialect = dialect(self.hook)
        self.text_type = text_type
        self.types = {**STANDARD_TYPES, "text": text_type, **(types or {})}
        self.capabilities = capabilities or Capabilities()
        self.table_options = table_options
        self.answers_table = self.table_name("answers")
        self.kind = dialect.name

    def table_name(self, prefix: str = "customers") -> str:
        """A table name no other test uses."""
        return f"{prefix}_{uuid.uuid4().hex[:8]}"

    def create_customers(self, rows: list[tuple[Any, ...]], *, key_type: str = "integer", name_type: str = "text",
                         country_type: str = "text") -> str:
        """A table ``customers(customer_id, name, country)`` holding ``rows``; its name. The types are the
        suite's column kinds (``integer``, ``varchar(20)``, ...), spelled by :meth:`sql_type`."""
        table = self.table_name()
        key, name, country = (self.sql_type(kind) for kind in (key_type, name_type, country_type))
        if not (key and name and country):
            raise ValueError(f"{self.kind} has no type for {key_type}, {name_type} or {country_type}")
        self.hook.run(f"CREATE TABLE {table} (customer_id {key} NOT NULL PRIMARY KEY, name {name}, "
                      f"country {country}) {self.table_options}".rstrip())
        self.insert(table, rows)
        return table

    def sql_type(self, kind: str) -> str | None:
        """The warehouse's type for one of the suite's column kinds (None: it has none)."""
        return self.types[kind]

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
