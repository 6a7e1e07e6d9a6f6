"""MySQL and MariaDB (``apache-airflow-providers-mysql``, mysqlclient or mysql-connector-python).

What differs from the base: the default collations fold case and accents (José = Jose),
so raw values are compared and grouped on their bytes; ``INSERT ... ON DUPLICATE KEY
UPDATE`` instead of ``MERGE`` (assignments run left to right, so each is guarded by the
claim's owner); ``UPDATE ... JOIN``; a ``LEFT JOIN`` to the target for a rerun's changed rows
(MariaDB runs a correlated ``NOT EXISTS`` as a dependent subquery); ``READ COMMITTED`` (an
``INSERT ... SELECT`` then reads without the gap locks that deadlock concurrent runs); a prefix
index on the joined text columns (a plain one where the column is narrower than the prefix, or
not text); naive UTC timestamps; ``CAST`` types of its own. mysql-connector-python
replaces only ``%s`` markers and sends ``%%`` as is, so the DAG author's ``%`` is escaped
only for mysqlclient.

Credits: a claim is an insert that conflicts on the answers table's primary key (InnoDB
row locks), so one run wins each query; fix-ups lock the query's answers row.

Example::

    dialect = MySqlDialect(MySqlHook("warehouse"))
    dialect.null_safe_equal("t.source_name", "s.name")   # 'CAST(t.source_name AS BINARY) <=> CAST(s.name AS BINARY)'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL

from airflow_provider_namelookup.warehouse.dialects.base import (
    DriverErrors,
    EngineTraits,
    Names,
    WarehouseDialect,
    WhereSpelling,
)
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types
from airflow_provider_namelookup.warehouse.dialects.traits import error_code
from airflow_provider_namelookup.warehouse.dialects.where_literals import (
    UnwritableString,
    backslash_escapes,
    double_pipe_concatenates,
    quotes_as,
)
from airflow_provider_namelookup.warehouse.schema import Column

_PREFIX_REFUSED = 1089
"""``Incorrect prefix key``: the column is narrower than the prefix, or not text."""
_CASTS = {"text": "CHAR({n})", "longtext": "CHAR", "float": "DOUBLE", "int": "SIGNED", "bigint": "SIGNED",
          "timestamp": "DATETIME(6)"}


class MySqlDialect(WarehouseDialect, name="mysql",
                   credit_promise=("InnoDB row locks: claims are inserts that conflict on the answers"
                                   " table's primary key, so one run wins each query; fix-ups lock "
                                   "the query's answers row")):
    """The spellings of MySQL and MariaDB: what differs from the base is in this module's docstring."""

    engine = EngineTraits(
        naive_timestamps=True, compares_bytes_as="BINARY", reads_while_writing=True,
        unchanged_by_outer_join=True,  # MariaDB runs NOT EXISTS as a dependent subquery: 0.75 s, not 0.6 s (500k rows)
        claimed_row="")  # ON DUPLICATE KEY UPDATE names the existing row's columns bare
    types = column_types(text="VARCHAR({n})", longtext="MEDIUMTEXT", float="DOUBLE",
                         int="INT", bigint="BIGINT", timestamp="DATETIME(6)")
    errors = DriverErrors(lock_conflict_codes=frozenset({1205, 1213}),
                          lock_conflict_words=("deadlock", "lock wait timeout"),
                          connection_lost_codes=frozenset({1927, 2006, 2013, 2055, 4031}),
                          duplicate_key_codes=frozenset({1050, 1060, 1062, 1068}))
    where = WhereSpelling(
        readings=(backslash_escapes("sql_mode NO_BACKSLASH_ESCAPES", MySQL, "'", '"'),
                  quotes_as("sql_mode ANSI_QUOTES", MySQL, strings=["'"], identifiers=["`", '"']),
                  double_pipe_concatenates("sql_mode PIPES_AS_CONCAT", MySQL)),
        string_forms=(exp.Repeat,))  # HIGH_NOT_PRECEDENCE: every NOT is written before parentheses

    @classmethod
    def where_string(cls, value: str) -> str:
        r"""``'...'`` with quotes doubled, and a backslash only before ``%`` or ``_``: with or without
        ``sql_mode`` ``NO_BACKSLASH_ESCAPES``, ``'\%'`` and ``'\_'`` are those two characters, while
        any other backslash is an escape or not as the mode says. The empty string as
        ``REPEAT(' ', 0)``: MariaDB reads ``''`` as NULL under ``EMPTY_STRING_IS_NULL``.

        >>> MySqlDialect.where_string("O'Neil"), MySqlDialect.where_string("a\\_b"), MySqlDialect.where_string("")
        ("'O''Neil'", "'a\\_b'", "REPEAT(' ', 0)")
        """
        if not value:
            return exp.Repeat(this=exp.Literal.string(" "), times=exp.Literal.number(0)).sql("mysql")
        for at, character in enumerate(value):
            if character == "\\" and value[at + 1:at + 2] not in ("%", "_"):
                raise UnwritableString(
                    "on mysql a string holds a backslash only before % or _ (LIKE's escapes, which every "
                    "sql_mode reads alike): sql_mode NO_BACKSLASH_ESCAPES decides what any other means")
        return "'" + value.replace("'", "''") + "'"

    @property
    def _percent_escaped(self) -> bool:
        conn_id = getattr(self.hook, self.hook.conn_name_attr, None)
        client = self.hook.get_connection(conn_id).extra_dejson.get("client", "mysqlclient") if conn_id else ""
        return client != "mysql-connector-python"

    def on_connect(self) -> list[str]:
        return ["SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"]  # INSERT ... SELECT reads without locks

    def table_names(self, schema: str | None) -> str | None:
        schema_is = f"= {self.literal(schema)}" if schema else "= DATABASE()"
        return f"SELECT table_name FROM information_schema.tables WHERE table_schema {schema_is}"

    def cast_null(self, column: Column) -> str:
        return f"CAST(NULL AS {_CASTS[column.kind].format(n=column.length)})"

    def null_safe_equal(self, left: str, right: str) -> str:
        return f"CAST({left} AS {self.engine.compares_bytes_as}) <=> CAST({right} AS {self.engine.compares_bytes_as})"

    def create_like_source(self, table: str, names: Names, typed: Sequence[Column], key_sample: Any) -> list[str]:
        raw = ", ".join([f"{names.key} AS {names.key_column}",
                         *(f"{expression} AS {column}" for expression, column in names.raw_columns())])
        added = ", ".join(f"ADD {c.name} {self._column_type(c)}" for c in typed)
        return [f"CREATE TABLE {table} AS SELECT {raw} FROM {names.relation} s WHERE 1 = 0",
                f"ALTER TABLE {table} ADD PRIMARY KEY ({names.key_column}), {added}"]

    def create_temp_like_source(self, table: str, names: Names, raw: Sequence[str],
                                typed: Sequence[Column]) -> list[str]:
        """MySQL's ``CAST`` has no type for long text: the typed columns are added afterwards."""
        added = ", ".join(f"ADD {c.name} {self._column_type(c)}" for c in typed)
        return [self.create_temp_as(table, f"SELECT {', '.join(raw)} FROM {names.relation} s WHERE 1 = 0"),
                f"ALTER TABLE {table} {added}"]

    def drop_table(self, table: str) -> str:
        return f"DROP TEMPORARY TABLE IF EXISTS {table}"

    def index_temp(self, table: str, index: str, columns: Sequence[str], covering: Sequence[str] = ()) -> list[str]:
        """A prefix of the name: a text or long column takes no index on all of it (191 characters of
        ``utf8mb4`` are InnoDB's 767 bytes)."""
        return [f"CREATE INDEX {self.quote(index)} ON {table} ({columns[0]}(191))"]

    def index_temp_instead(self, err: Exception, table: str, index: str, columns: Sequence[str]) -> list[str] | None:
        """The whole column where no prefix fits it (``VARCHAR(20)``, ``CHAR(2)``, a number, a date)."""
        if error_code(err) != _PREFIX_REFUSED:
            return None
        return [f"CREATE INDEX {self.quote(index)} ON {table} ({columns[0]})"]

    def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
        """Assignments run left to right: ``claimed_by`` first, decided on the row as it was;
        the others follow it."""
        mine = "claimed_by = VALUES(claimed_by)"
        return (f"{self._insert_claim(answers, chosen)} "
                f"ON DUPLICATE KEY UPDATE claimed_by = IF({reclaimable}, VALUES(claimed_by), claimed_by), "
                f"lease_expires = IF({mine}, VALUES(lease_expires), lease_expires), "
                f"state = IF({mine}, 'claimed', state)")

    def claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                     lookup: str) -> list[Any]:
        return self._insert_claim_params(chosen, reclaimable, owner=owner, lease=lease, lookup=lookup)

    def lock_answers(self, answers: str, chosen: str) -> str | None:
        return f"SELECT query_hash FROM {answers} WHERE query_hash IN ({chosen}) ORDER BY query_hash FOR UPDATE"

    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str:
        sets = ", ".join(f"{c} = VALUES({c})" for c in columns if c != key)
        return f"INSERT INTO {table} ({', '.join(columns)}) {select} ON DUPLICATE KEY UPDATE {sets}"

    def update_from(self, table: str, alias: str, assignments: Sequence[tuple[str, str]], source: str,
                    condition: str) -> str:
        sets = ", ".join(f"{alias}.{column} = {expression}" for column, expression in assignments)
        return f"UPDATE {table} {alias} JOIN {source} c ON {condition} SET {sets}"


DIALECT = MySqlDialect
