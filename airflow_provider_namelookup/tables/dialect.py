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
    :param percent_escaped: the driver formats statements with ``%`` when given parameters
        (psycopg, mysqlclient), so a literal ``%`` must be written ``%%`` then;
        mysql-connector-python only replaces ``%s`` markers and sends ``%%`` as is.
    """

    name: str
    placeholder: str
    percent_escaped: bool = False

    @classmethod
    def for_hook(cls, hook: Any) -> SqlDialect:
        """The hook's dialect; ValueError for a warehouse the engine has no statements for."""
        name = hook.dialect_name
        if name not in SUPPORTED:
            raise ValueError(f"the table operators support {', '.join(SUPPORTED)} warehouses; "
                             f"this connection's dialect is {name!r}")
        escaped = "%" in hook.placeholder
        if name == "mysql":
            conn_id = getattr(hook, hook.conn_name_attr, None)
            client = hook.get_connection(conn_id).extra_dejson.get("client", "mysqlclient") if conn_id else ""
            escaped = client != "mysql-connector-python"
        return cls(name, hook.placeholder, escaped)

    def user_sql(self, text: str, *, with_params: bool) -> str:
        """A DAG author's SQL text as it must be written into a statement.

        Drivers that format statements with ``%`` read it as a bind marker whenever
        parameters are passed, so ``customer_id % 8 = 3`` has to travel as
        ``customer_id %% 8 = 3`` then (and as written when no parameter is passed).
        """
        return text.replace("%", "%%") if with_params and self.percent_escaped else text

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

    def upsert_from_select(self, table: str, columns: Sequence[str], key: str, select: str, *,
                           keep_larger_if_same: tuple[str, str]) -> str:
        """A statement that inserts ``select``'s rows into ``table``, updating rows with the same key.

        :param keep_larger_if_same: ``(kept, compared)``: an updated row whose ``compared``
            column does not change keeps the larger of its old and new ``kept`` value (runs that
            rewrite each other's rows, in any order, never zero a charge one of them put there).
        """
        kept, compared = keep_larger_if_same
        names = ", ".join(columns)
        others = [c for c in columns if c not in (key, kept)]
        if self.name == "mysql":  # assignments run left to right: decide `kept` before `compared` changes
            sets = [f"{table}.{kept} = IF({table}.{compared} = VALUES({compared}), "
                    f"GREATEST(COALESCE({table}.{kept}, 0), VALUES({kept})), VALUES({kept}))",
                    *(f"{table}.{c} = VALUES({c})" for c in others)]
            return f"INSERT INTO {table} ({names}) {select} ON DUPLICATE KEY UPDATE {', '.join(sets)}"
        old = "tgt." if self.name == "postgresql" else ""
        larger = "GREATEST" if self.name == "postgresql" else "MAX"
        sets = [f"{kept} = CASE WHEN {old}{compared} = excluded.{compared} "
                f"THEN {larger}(COALESCE({old}{kept}, 0), excluded.{kept}) ELSE excluded.{kept} END",
                *(f"{c} = excluded.{c}" for c in others)]
        alias = " AS tgt" if self.name == "postgresql" else ""
        return (f"INSERT INTO {table}{alias} ({names}) {select} "
                f"ON CONFLICT ({key}) DO UPDATE SET {', '.join(sets)}")

    @property
    def temporary(self) -> str:
        return "TEMPORARY"
