"""SQLite (``apache-airflow-providers-sqlite``): the embedded default of the demo and the tests.

What differs from the base: ``INSERT ... ON CONFLICT`` for claims and the fill (no
``MERGE``), ``IS`` as null-safe equality, a ``LEFT JOIN`` to the target for a rerun's changed rows
(SQLite runs a correlated ``NOT EXISTS`` once a row), untyped raw columns (SQLite compares by storage
class, so the target keeps each raw value exactly as it was read), a covering index on the
joined temporary tables, ISO text timestamps, a long wait for the file's write lock, and a helper
thread for sorts (the distinct pass's ``GROUP BY``).

SQLite reads and writes in the client's process, and Python's driver lets go of the
interpreter for every row it steps through. While the lookups keep the event loop busy,
getting it back costs up to the interpreter's switch interval (5 ms) a row: an
``executemany`` of 10,000 rows took 0.4 s inside a run where 40 ms was enough, and 36 s beside
a thread that never waits (a fetch of 10,000 rows: 24 s). So nothing of a run's steps goes row by
row: bulk loads are one ``INSERT ... SELECT`` over one JSON document (``json_each``; each value
keeps its own type, as SQLite does), a store is one ``UPDATE`` straight from its answers'
document (no incoming table), a claim and a store are judged by their row counts instead of
``RETURNING`` rows, and only rows JSON cannot carry (bytes, a NUL in a text, a value JSON has
no spelling for) go by ``executemany``.

Credits: SQLite has one writer at a time per file; a claim is an insert that conflicts on
the answers table's primary key, and the busy timeout makes concurrent runs wait for
each other instead of failing.

Example::

    dialect = SqliteDialect(SqliteHook("warehouse"))
    dialect.null_safe_equal("t.source_country", "s.country")    # 't.source_country IS s.country'
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.base import (
    BulkLoad,
    DriverErrors,
    Names,
    OnConflictDialect,
    Tuning,
    WhereSpelling,
)
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types
from airflow_provider_namelookup.warehouse.dialects.where_functions import STRFTIME, without
from airflow_provider_namelookup.warehouse.schema import Column

_BUSY_TIMEOUT_MS = 120_000
_SORTER_THREADS = 1
"""Helper threads a statement's sorter may use (SQLite's default is none). The distinct pass's
``GROUP BY`` sorts every row of the source: over 1M rows it took 0.49 s instead of 0.76 s with one
helper, and two were no faster on two cores; a run's first run took 3.74 s instead of 4.04 s. One
keeps a run's sorting to two cores of a worker that runs other tasks beside it."""


class SqliteDialect(OnConflictDialect, name="sqlite",
                    credit_promise=("one writer at a time per database file; claims conflict on the "
                                    "answers table's primary key")):
    """The spellings of SQLite: what differs from the base is in this module's docstring."""

    where = WhereSpelling(functions={**without("extract (date_part)", "year, month, day"), **STRFTIME})
    types = column_types(text="TEXT", longtext="TEXT", float="REAL", int="INTEGER", bigint="INTEGER", timestamp="TEXT")
    tuning = Tuning(max_in_list=500)
    errors = DriverErrors(lock_conflict_words=("database is locked",))
    engine = OnConflictDialect.engine.changed(
        indexes_null_safe_equality=True,  # `IS` is looked up through an index like `=`
        bulk_load=BulkLoad.JSON,
        unchanged_by_outer_join=True)  # a correlated NOT EXISTS runs once a row: a rerun's pass took 0.35 s, not 0.19 s

    def on_connect(self) -> list[str]:
        """Wait for the file's write lock (several runs may write one file), and let a statement's sorts
        run on a helper thread (:data:`_SORTER_THREADS`)."""
        return [f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}", f"PRAGMA threads = {_SORTER_THREADS}"]

    def table_names(self, schema: str | None) -> str | None:
        catalog = f"{self.quote(schema)}.sqlite_master" if schema else "sqlite_master"
        return f"SELECT name FROM {catalog} WHERE type IN ('table', 'view')"

    def timestamp(self, moment: datetime) -> Any:
        return moment.isoformat()

    def null_safe_equal(self, left: str, right: str) -> str:
        return f"{left} IS {right}"

    def create_like_source(self, table: str, names: Names, typed: Sequence[Column], key_sample: Any) -> list[str]:
        """An explicit ``CREATE TABLE`` (SQLite cannot add a primary key later): the key typed
        after a sample key, the raw columns without a type (values are kept as they were read)."""
        kind = "INTEGER" if isinstance(key_sample, int) and not isinstance(key_sample, bool) else "TEXT"
        definitions = [f"{names.key_column} {kind} NOT NULL PRIMARY KEY",
                       *(f"{c.name} {self._column_type(c)}" for c in typed),
                       *(column for _, column in names.raw_columns())]
        return [f"CREATE TABLE {table} ({', '.join(definitions)})"]

    def json_document(self, rows: Sequence[Sequence[Any]]) -> str | None:
        """The rows as JSON of their own values (a text stays text, a number a number), or None
        where JSON cannot carry one of them exactly."""
        if not _reads_json():
            return None
        try:
            document = json.dumps(rows, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError):  # bytes, dates, decimals, NaN: bound as they are
            return None
        return None if "\\u0000" in document else document  # SQLite's JSON text ends at a NUL

    def json_select(self, width: int, kinds: Sequence[str]) -> str:
        """Each row's values by position (``kinds`` is not needed: every value has its JSON type).

        Example: ``SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)``."""
        return self._json_rows([None] * width)

    def answers_document(self, columns: Sequence[str]) -> str | None:
        """A store's answers straight from its JSON document: the store is one ``UPDATE``."""
        return f"({self._json_rows(columns)})"

    def _json_rows(self, names: Sequence[str | None]) -> str:
        """The bound document's rows, each value by position (named where a name is given)."""
        values = ", ".join(f"json_extract(value, '$[{i}]')" + (f" AS {name}" if name else "")
                           for i, name in enumerate(names))
        return f"SELECT {values} FROM json_each({self.placeholder})"

    def create_temp_as(self, table: str, select: str) -> str:
        return f"CREATE TEMP TABLE {table} AS {select}"

    def index_temp(self, table: str, index: str, columns: Sequence[str], covering: Sequence[str] = ()) -> list[str]:
        """A covering index: a fill's million lookups read the index alone (2.0 s instead of 3.0 s)."""
        return [f"CREATE INDEX {self.quote(index)} ON {table} ({', '.join((*columns, *covering))})"]

    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str:
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
        return (f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM ({select}) WHERE 1 = 1 "
                f"ON CONFLICT ({key}) DO UPDATE SET {sets}")


@functools.cache
def _reads_json() -> bool:
    """Whether the SQLite library Python was built with has the JSON functions (built in from
    3.38; an earlier build may lack them)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as probe:
            return bool(probe.execute("SELECT json_extract(value, '$[0]') FROM json_each('[[1]]')").fetchone()[0])
    except sqlite3.Error:
        return False


DIALECT = SqliteDialect
