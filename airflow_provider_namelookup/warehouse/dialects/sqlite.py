"""SQLite (``apache-airflow-providers-sqlite``): the embedded default of the demo and the tests.

What differs from the base: ``INSERT ... ON CONFLICT`` for claims and the fill (no
``MERGE``), ``IS`` as null-safe equality, untyped raw columns (SQLite compares by storage
class, so the target keeps each raw value exactly as it was read), an index on the
joined temporary tables, ISO text timestamps, and a long wait for the file's write lock.
SQLite reads and writes in the client's process: each statement is a function call, so
stores are plain ``executemany`` updates.

Credits: SQLite has one writer at a time per file; a claim is an insert that conflicts on
the answers table's primary key, and the busy timeout makes concurrent runs wait for
each other instead of failing.

Example::

    dialect = SqliteDialect(SqliteHook("warehouse"))
    dialect.null_safe_equal("t.source_country", "s.country")    # 't.source_country IS s.country'
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_provider_namelookup.warehouse.dialects.base import Names, OnConflictDialect
from airflow_provider_namelookup.warehouse.schema import Column

if TYPE_CHECKING:
    from airflow_provider_namelookup.warehouse.session import WarehouseSession

_BUSY_TIMEOUT_MS = 120_000


class SqliteDialect(OnConflictDialect):
    name = "sqlite"
    engines = ("sqlite",)
    provider = "apache-airflow-providers-sqlite"
    credit_promise = "one writer at a time per database file; claims conflict on the answers table's primary key"
    types: ClassVar[dict[str, str]] = {
        "text": "TEXT", "longtext": "TEXT", "float": "REAL", "int": "INTEGER", "bigint": "INTEGER",
        "timestamp": "TEXT",
    }
    max_in_list = 500
    indexes_null_safe_equality = True  # `IS` is looked up through an index like `=`
    lock_conflict_words = ("database is locked",)

    def on_connect(self) -> list[str]:
        return [f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}"]  # several runs may write one file: wait

    def timestamp(self, moment: datetime) -> Any:
        return moment.isoformat()

    def null_safe_equal(self, left: str, right: str) -> str:
        return f"{left} IS {right}"

    def create_like_source(self, table: str, names: Names, typed: Sequence[Column], key_sample: Any) -> list[str]:
        """An explicit ``CREATE TABLE`` (SQLite cannot add a primary key later): the key typed
        after a sample key, the raw columns without a type (values are kept as they were read)."""
        kind = "INTEGER" if isinstance(key_sample, int) and not isinstance(key_sample, bool) else "TEXT"
        definitions = [f"{names.key_column} {kind} NOT NULL PRIMARY KEY",
                       *(f"{c.name} {self.column_type(c)}" for c in typed),
                       *(column for _, column in names.raw_columns())]
        return [f"CREATE TABLE {table} ({', '.join(definitions)})"]

    def create_temp_as(self, table: str, select: str) -> str:
        return f"CREATE TEMP TABLE {table} AS {select}"

    def index_temp(self, table: str, index: str, columns: Sequence[str]) -> list[str]:
        return [f"CREATE INDEX {self.quote(index)} ON {table} ({', '.join(columns)})"]

    def store(self, session: WarehouseSession, answers: str, rows: Sequence[Sequence[Any]],
              result_columns: Sequence[Column], *, owner: str, stamp: float, credits: int,
              paid_for: str) -> set[str]:
        """One ``executemany`` of updates (in-process: no round trips to save); read back only
        when some claim was taken over meanwhile."""
        sets = ", ".join(f"{c.name} = ?" for c in result_columns)
        written = session.executemany(
            f"UPDATE {answers} SET state = 'answered', claimed_by = NULL, lease_expires = NULL, answered_by = ?, "
            f"answered_at = ?, credits = ?, paid_for = ?, {sets} WHERE query_hash = ? AND claimed_by = ?",
            [(owner, stamp, credits, paid_for, *row[1:], row[0], owner) for row in rows])
        if written == len(rows):
            return {row[0] for row in rows}
        return self.stored_by(session, answers, [row[0] for row in rows], owner=owner, stamp=stamp)

    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str:
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
        return (f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM ({select}) WHERE 1 = 1 "
                f"ON CONFLICT ({key}) DO UPDATE SET {sets}")
