"""DuckDB (``apache-airflow-providers-duckdb``): an analytical engine in the worker's process, on a file.

What differs from the base: ``INSERT ... ON CONFLICT`` for claims and the fill (it has
``MERGE`` only from 1.4), claims and stores judged by their row counts instead of ``RETURNING``
rows (which cost DuckDB more than the statements themselves), a first run's target made by its fill
(``CREATE TABLE ... AS``, then the key), bulk loads as one statement over an Arrow table the engine
reads in place (a third of the time of binding lists, which it falls back to, ``UNNEST``, where
converting would import pandas: :mod:`~airflow_provider_namelookup.warehouse.arrow_rows`), stores
straight from a bound JSON document, a small store's rows reached by the answers' key
(:meth:`DuckDBDialect._held_by`), naive UTC timestamps, and the connection itself: a DuckDB cursor is a
second connection with its own temporary tables and transactions, and a connection
commits every statement unless a transaction was begun, so the run gets a connection
that hands out itself as its cursor and begins a transaction before a step's first
statement, as DB-API promises.

Credits: DuckDB allows **one writing process per database file** (an OS lock taken when
the file is opened). Runs on one file therefore never overlap across processes: a run
whose file another process holds open is refused at once, before it reads or spends
anything, with an error naming the rule (:class:`DuckDBFileInUse`); give such tasks one
pool slot so that they queue instead. Inside one process (threads), transactions are
optimistic: of two claims of one query, the second fails at commit with a constraint or
write conflict, and the engine runs the claim again, which then finds the query held.
Fix-ups of one query's price write its answers row first (:meth:`DuckDBDialect.lock_answers`),
so two of them conflict and run one after another.

Example::

    dialect = DuckDBDialect(DuckDBHook("warehouse"))
    dialect.lock_answers("namelookup_answers", "SELECT query_hash FROM fixes")   # no FOR UPDATE: a write
    # 'UPDATE namelookup_answers SET credits = credits WHERE query_hash IN (SELECT query_hash FROM fixes)
    #  RETURNING query_hash'
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Sequence
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.base import (
    BulkLoad,
    DriverErrors,
    OnConflictDialect,
    WhereSpelling,
)
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types
from airflow_provider_namelookup.warehouse.dialects.where_functions import (
    COMMON_WHERE_FUNCTIONS,
    STRFTIME,
)

_LOCKED_FILE = re.compile(r"could not set lock on file \"?(?P<file>[^\"]*)", re.IGNORECASE)
_HOLDER = re.compile(r"\(PID (?P<pid>\d+)\)")
_STORE_BY_KEY_MAX = 128
"""The most answers a store reaches by the answers' key (:meth:`DuckDBDialect._held_by`)."""


class DuckDBFileInUse(RuntimeError):
    """Another process holds the DuckDB file open: DuckDB allows one writing process per file."""


class _Connection:
    """A DuckDB connection with DB-API transactions: a transaction begins before the first
    statement after a commit or rollback, and its cursors are views of it (a DuckDB cursor
    would be another connection, which sees none of this one's temporary tables)."""

    def __init__(self, conn: Any) -> None:
        self.duckdb = conn
        self._open = False

    def cursor(self) -> _Cursor:
        return _Cursor(self)

    def begin(self) -> None:
        if not self._open:
            self.duckdb.begin()
            self._open = True

    def commit(self) -> None:
        if self._open:
            self._open = False
            try:
                self.duckdb.commit()
            except Exception:
                with contextlib.suppress(Exception):  # a failed commit may leave nothing to undo
                    self.duckdb.rollback()
                raise

    def rollback(self) -> None:
        if self._open:
            self._open = False
            self.duckdb.rollback()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.rollback()
        self.duckdb.close()


class _Cursor:
    """A cursor of :class:`_Connection`: its statements run on the connection itself."""

    def __init__(self, conn: _Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Any = None) -> _Cursor:
        self.conn.begin()
        self.conn.duckdb.execute(sql, params) if params is not None else self.conn.duckdb.execute(sql)
        return self

    def executemany(self, sql: str, rows: Any) -> _Cursor:
        self.conn.begin()
        self.conn.duckdb.executemany(sql, rows)
        return self

    def register(self, view: str, data: Any) -> None:
        """Make the Arrow table ``data`` readable as ``view`` on the connection (in place, not copied)."""
        self.conn.duckdb.register(view, data)

    def unregister(self, view: str) -> None:
        self.conn.duckdb.unregister(view)

    def fetchall(self) -> list[Any]:
        return list(self.conn.duckdb.fetchall())

    def fetchmany(self, size: int) -> list[Any]:
        return list(self.conn.duckdb.fetchmany(size))

    @property
    def rowcount(self) -> int:
        return int(self.conn.duckdb.rowcount)

    @property
    def description(self) -> Any:
        return self.conn.duckdb.description

    def close(self) -> None:
        """Nothing to release: the statement's result goes with the next one."""


def open_connection(hook: Any) -> _Connection:
    """A run's connection to the DuckDB file, or :class:`DuckDBFileInUse` when another process holds it."""
    try:
        conn = hook.get_conn()
    except Exception as err:
        if (found := _LOCKED_FILE.search(str(err))) is None:
            raise
        pid = _HOLDER.search(str(err))
        holder = f" (PID {pid['pid']})" if pid else ""
        raise DuckDBFileInUse(
            f"DuckDB allows one writing process per database file, and {found['file'] or 'the file'} is open "
            f"in another process{holder}: this run cannot write to it, and has spent nothing. Runs on one "
            f"DuckDB file must not overlap: give their tasks one pool slot (or run them in one task)") from None
    return _Connection(conn)


class DuckDBDialect(OnConflictDialect, name="duckdb",
                    credit_promise=("one writing process per database file: a run whose file another "
                                    "process holds is refused before it spends; in one process, of "
                                    "two claims of a query the second fails at commit and is run "
                                    "again")):
    """The spellings of DuckDB: what differs from the base is in this module's docstring."""

    where = WhereSpelling(functions={**COMMON_WHERE_FUNCTIONS, **STRFTIME})
    types = column_types(text="VARCHAR", longtext="VARCHAR", float="DOUBLE",
                         int="INTEGER", bigint="BIGINT", timestamp="TIMESTAMP")
    # Claims and stores are judged by their row counts, as on SQLite: DuckDB's RETURNING cost more than
    # the statement (a store of 13,000 answers: 0.17 s of CPU with it, 0.08 s without), and a 1M-row first
    # run's CPU fell from 6.27 s to 5.35 s without it (medians of three, side by side). Where a count falls
    # short (a claim another run holds, one taken over meanwhile), the outcome is read back. A first run's
    # target is made by its fill (CREATE TABLE ... AS, then the key), as on PostgreSQL: an insert into a
    # table with its key already there kept the key's index row by row (a 1M-row first run: 4.64 s of
    # CPU instead of 5.04 s, medians of three side by side).
    engine = OnConflictDialect.engine.changed(naive_timestamps=True, bulk_load=BulkLoad.ARROW,
                                              creates_target_at_fill=True)
    # Transactions are optimistic: a row or key another transaction wrote meanwhile fails the statement or
    # its commit (an ON CONFLICT sees only committed rows); the step is run again, and then sees it. A table
    # another run is creating or altering is a catalog conflict.
    errors = DriverErrors(lock_conflict_words=("transactioncontext", "conflict on", "duplicate key"),
                          duplicate_key_words=(*DriverErrors.duplicate_key_words, "write-write conflict on"))
    connect = staticmethod(open_connection)

    def insert_arrow(self, cursor: Any, table: str, columns: Sequence[str], data: Any) -> None:
        """``data`` registered as a view of the run's connection, read by one ``INSERT``, unregistered."""
        view = f"namelookup_arrow_{uuid.uuid4().hex[:12]}"
        cursor.register(view, data)
        try:
            cursor.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM {view}")
        except Exception:
            with contextlib.suppress(Exception):  # an aborted transaction refuses it: the insert's error is the one
                cursor.unregister(view)
            raise
        cursor.unregister(view)

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> list[str]:
        """None. DuckDB runs an ``UPDATE`` that changes an indexed column as a delete and an insert,
        and every store sets ``claimed_by``: the stores of 50,000 answers took 1.17 s with the
        answers table's ``claimed_by`` index and 0.25 s without. What the index served (a
        renewal's or release's ``WHERE claimed_by = ...``) is a column scan here."""
        return []

    def answers_document(self, columns: Sequence[str]) -> str | None:
        """A store's answers straight from its JSON document, every value as text
        (:meth:`~.run_tables.RunTables.json_document`) that the update casts to its column's type:
        the store is one ``UPDATE`` and the run makes no incoming table. Loading an Arrow table of
        the answers into the incoming table and reading them back by store cost more CPU (stores of
        100 answers into 43,000 rows: 15-18 ms each, against 17-22 ms, on a loaded machine).

        Example: ``(SELECT j->>0 AS query_hash, j->>1 AS gender FROM (SELECT unnest(CAST(? AS JSON[])) AS j))``."""
        values = ", ".join(f"j->>{i} AS {name}" for i, name in enumerate(columns))
        return f"(SELECT {values} FROM (SELECT unnest(CAST({self.placeholder} AS JSON[])) AS j))"

    def _held_by(self, owner: str, hashes: Sequence[str]) -> str:
        """For a store of at most :data:`_STORE_BY_KEY_MAX` answers, its hashes as a literal ``IN``
        list on the answers' key besides the owner, so that DuckDB reaches the rows by the key's
        index instead of reading every answer: a store of 100 answers took 73 ms of CPU with 430,000
        rows in the answers table and 19 ms with the list, as with 43,000 (loaded machine). Each
        hash named costs about 13 µs and reading the table about 25 ns a row, so a larger store (as
        a fast service's are: thousands of answers) reads the table, whose cost it shares.

        DuckDB scans by an index only from constants and only when the scan has one filter: the
        owner is compared in an expression of two columns, which stays above the scan
        (``claimed_by || query_hash`` equals ``owner || query_hash`` exactly when ``claimed_by``
        equals ``owner``).

        Example: ``a.query_hash IN ('9f86...', '603...') AND a.claimed_by || a.query_hash = 'run1' || a.query_hash``."""
        if not hashes or len(hashes) > _STORE_BY_KEY_MAX:
            return super()._held_by(owner, hashes)
        lit = self.literal
        return (f"a.query_hash IN ({', '.join(lit(h) for h in hashes)}) "
                f"AND a.claimed_by || a.query_hash = {lit(owner)} || a.query_hash")

    def lock_answers(self, answers: str, chosen: str) -> str | None:
        """A write of the rows (DuckDB has no ``FOR UPDATE``): two fix-ups of one query conflict."""
        return f"UPDATE {answers} SET credits = credits WHERE query_hash IN ({chosen}) RETURNING query_hash"


DIALECT = DuckDBDialect
