"""The few SQL forms that differ between warehouses, in one place.

The table engine runs set-based statements (insert-if-absent claims, upserts from a
join, byte-exact joins on raw values); each warehouse spells them differently.
SQLite, PostgreSQL and MySQL/MariaDB are supported and tested; another dialect is
refused with a clear error before anything is written (see :data:`SUPPORTED`).

Example::

    dialect = SqlDialect.for_hook(PostgresHook("warehouse"))
    dialect.user_sql("customer_id % 8 = 3", with_params=True)   # 'customer_id %% 8 = 3' for psycopg
    dialect.null_safe_equal("s.country", "m.raw_country")       # 's.country IS NOT DISTINCT FROM m.raw_country'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SUPPORTED = ("sqlite", "postgresql", "mysql")


@dataclass(frozen=True)
class SqlDialect:
    """SQL spellings for one warehouse.

    :param name: the hook's ``dialect_name`` (``sqlite``, ``postgresql``, ``mysql``, ...).
    :param placeholder: the driver's bind marker (``?`` or ``%s``).
    """

    name: str
    placeholder: str

    @classmethod
    def for_hook(cls, hook: Any) -> SqlDialect:
        """The hook's dialect; ValueError for a warehouse the engine has no statements for."""
        name = hook.dialect_name
        if name not in SUPPORTED:
            raise ValueError(f"the table operators support {', '.join(SUPPORTED)} warehouses; "
                             f"this connection's dialect is {name!r}")
        return cls(name, hook.placeholder)

    @property
    def format_style(self) -> bool:
        """True when the driver formats ``%`` markers (psycopg, mysql-connector): a literal ``%`` is ``%%``."""
        return "%" in self.placeholder

    def user_sql(self, text: str, *, with_params: bool) -> str:
        """A DAG author's SQL text as it must be written into a statement.

        Format-style drivers read ``%`` as a bind marker whenever parameters are passed,
        so ``customer_id % 8 = 3`` has to travel as ``customer_id %% 8 = 3`` then (and as
        written when no parameter is passed).
        """
        return text.replace("%", "%%") if with_params and self.format_style else text

    def marks(self, count: int) -> str:
        return ", ".join([self.placeholder] * count)

    # Equality on raw values ------------------------------------------------------------------------
    def exact_equal(self, left: str, right: str) -> str:
        """Byte-exact equality (MySQL's default collations fold case and accents: José = Jose)."""
        if self.name == "mysql":
            return f"{left} = {right} AND CAST({left} AS BINARY) = CAST({right} AS BINARY)"
        return f"{left} = {right}"

    def null_safe_equal(self, left: str, right: str) -> str:
        """Equality where NULL equals NULL, byte-exact."""
        if self.name == "sqlite":
            return f"{left} IS {right}"
        if self.name == "postgresql":
            return f"{left} IS NOT DISTINCT FROM {right}"
        if self.name == "mysql":
            return f"CAST({left} AS BINARY) <=> CAST({right} AS BINARY)"
        return f"({left} = {right} OR ({left} IS NULL AND {right} IS NULL))"

    def exact_group(self, expression: str) -> str:
        """A GROUP BY term that keeps values apart that differ by a single byte."""
        return f"CAST({expression} AS BINARY)" if self.name == "mysql" else expression

    # Statements -------------------------------------------------------------------------------------
    def insert_if_absent(self, table: str, columns: Sequence[str], key: str) -> str:
        """An INSERT of one row (bind markers) that does nothing when ``key`` already exists."""
        names, marks = ", ".join(columns), self.marks(len(columns))
        if self.name == "sqlite":
            return f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({marks})"
        if self.name == "mysql":
            return f"INSERT IGNORE INTO {table} ({names}) VALUES ({marks})"
        if self.name == "postgresql":
            return f"INSERT INTO {table} ({names}) VALUES ({marks}) ON CONFLICT ({key}) DO NOTHING"
        raise NotImplementedError(f"insert-if-absent is not written for the {self.name!r} dialect")

    def upsert_from_select(self, table: str, columns: Sequence[str], key: str, select: str) -> list[str]:
        """Statements that insert ``select``'s rows into ``table``, replacing rows with the same key."""
        names = ", ".join(columns)
        if self.name == "sqlite":
            return [f"INSERT OR REPLACE INTO {table} ({names}) {select}"]
        if self.name == "mysql":
            return [f"REPLACE INTO {table} ({names}) {select}"]
        if self.name == "postgresql":
            updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c != key)
            return [f"INSERT INTO {table} ({names}) {select} ON CONFLICT ({key}) DO UPDATE SET {updates}"]
        raise NotImplementedError(f"set-based upserts are not written for the {self.name!r} dialect")

    @property
    def temporary(self) -> str:
        return "TEMPORARY"
