"""The source of a table operator, read in pages joined to the target's hashes.

Pages are read by keyset (``key > last key ORDER BY key LIMIT n``), so memory stays
flat whatever the table's size and a page is never read twice. Each row comes with the
``query_hash`` its key has in the target table (None if not yet enriched), which is
what makes runs incremental. The key must be unique and not null (a primary key), and
the database must understand ``LIMIT`` (SQLite, PostgreSQL, MySQL/MariaDB, DuckDB...).

Example::

    source = TableSource(hook, table="customers", key_column="customer_id",
                         name_column="first_name", country_column="country", where="active = 1")
    for page in source.pages(target, page_size=1000):
        for key, name, country, enriched_hash in page: ...
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from airflow_provider_namelookup.tables.identifiers import check_identifier, quote
from airflow_provider_namelookup.tables.target import TargetTable

SourceRow = tuple[Any, Any, Any, Any]
"""``(key, name, country or None, query hash in the target or None)``"""


class TableSource:
    """Rows to enrich: a table (or a SELECT), optionally filtered.

    :param hook: a common-sql ``DbApiHook``.
    :param table: source table (``table`` or ``schema.table``); or give ``sql``.
    :param sql: a SELECT whose columns include the key, name and country columns.
    :param key_column: unique, non-null key.
    :param name_column: the name (first name, full name or e-mail).
    :param country_column: optional per-row country hint.
    :param where: optional SQL filter on the source's columns (the DAG author's SQL).
    """

    def __init__(self, hook: Any, *, table: str | None = None, sql: str | None = None, key_column: str,
                 name_column: str, country_column: str | None = None, where: str | None = None) -> None:
        if (table is None) == (sql is None):
            raise ValueError("give exactly one of source_table and sql")
        self.hook = hook
        self.table = check_identifier(table, "source_table", qualified=True) if table else None
        self.sql = sql.strip().rstrip(";") if sql else None
        self.key_column = check_identifier(key_column, "key_column")
        self.name_column = check_identifier(name_column, "name_column")
        self.country_column = check_identifier(country_column, "country_column") if country_column else None
        self.where = where.strip() if where and where.strip() else None

    @property
    def label(self) -> str:
        return self.table or "(sql)"

    def _q(self, name: str) -> str:
        return quote(self.hook, name)

    def _relation(self) -> str:
        """The filtered source as a derived table, so ``where`` never meets the target's columns."""
        base = f"SELECT * FROM {self._q(self.table)}" if self.table else self.sql
        if self.where:
            base = f"SELECT * FROM ({base}) src WHERE {self.where}"
        return f"({base})"

    def peek_key(self) -> Any:
        """One key of the source (None when it is empty), to type the target's key column."""
        rows = self.hook.get_records(
            f"SELECT {self._q(self.key_column)} FROM {self._relation()} s LIMIT 1")
        return rows[0][0] if rows else None

    def pages(self, target: TargetTable, page_size: int, *, joined: bool = True) -> Iterator[list[SourceRow]]:
        """Yield the source's rows in key order, ``page_size`` at a time.

        :param joined: read each row's hash from the target (False when it does not exist yet).
        """
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        key = f"s.{self._q(self.key_column)}"
        country = f"s.{self._q(self.country_column)}" if self.country_column else "NULL"
        if joined:
            select = (f"SELECT {key}, s.{self._q(self.name_column)}, {country}, t.{self._q('query_hash')} "
                      f"FROM {self._relation()} s LEFT JOIN {target.quoted} t "
                      f"ON t.{self._q(target.key_column)} = {key}")
        else:
            select = f"SELECT {key}, s.{self._q(self.name_column)}, {country}, NULL FROM {self._relation()} s"
        last: Any = None
        while True:
            if last is None:
                rows = self.hook.get_records(f"{select} ORDER BY {key} LIMIT {int(page_size)}")
            else:
                rows = self.hook.get_records(
                    f"{select} WHERE {key} > {self.hook.placeholder} ORDER BY {key} LIMIT {int(page_size)}", [last])
            if not rows:
                return
            yield [tuple(r) for r in rows]
            if len(rows) < page_size:
                return
            last = rows[-1][0]
