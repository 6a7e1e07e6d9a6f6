"""DuckDB (``apache-airflow-providers-duckdb``): an analytical engine in the worker's process, on a file.

What differs from the base: ``INSERT ... ON CONFLICT`` for claims and the fill (it has
``MERGE`` only from 1.4), bulk loads and stores as one statement over list parameters
(``UNNEST``), naive UTC timestamps, and the connection itself: a DuckDB cursor is a
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
    dialect.null_safe_equal("t.source_country", "s.country")
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_provider_namelookup.warehouse.dialects.base import OnConflictDialect
from airflow_provider_namelookup.warehouse.schema import Column

if TYPE_CHECKING:
    from airflow_provider_namelookup.warehouse.session import WarehouseSession

_LOCKED_FILE = re.compile(r"could not set lock on file \"?(?P<file>[^\"]*)", re.IGNORECASE)
_HOLDER = re.compile(r"\(PID (?P<pid>\d+)\)")


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

    def fetchall(self) -> list[Any]:
        return list(self.conn.duckdb.fetchall())

    def fetchmany(self, size: int) -> list[Any]:
        return list(self.conn.duckdb.fetchmany(size))

    @property
    def rowcount(self) -> int:
        return int(self.conn.duckdb.rowcount)

    def close(self) -> None:
        """Nothing to release: the statement's result goes with the next one."""


class DuckDBDialect(OnConflictDialect):
    name = "duckdb"
    engines = ("duckdb",)
    provider = "apache-airflow-providers-duckdb"
    credit_promise = ("one writing process per database file: a run whose file another process holds is refused "
                      "before it spends; in one process, of two claims of a query the second fails at commit and "
                      "is run again")
    types: ClassVar[dict[str, str]] = {
        "text": "VARCHAR", "longtext": "VARCHAR", "float": "DOUBLE", "int": "INTEGER", "bigint": "BIGINT",
        "timestamp": "TIMESTAMP",
    }

    def connect(self, hook: Any) -> Any:
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

    def timestamp(self, moment: datetime) -> Any:
        return moment.replace(tzinfo=None)

    def is_duplicate_key(self, err: BaseException) -> bool:
        """A key taken, or a table another run is creating or altering (a catalog conflict)."""
        return "write-write conflict on" in str(err).lower() or super().is_duplicate_key(err)

    def is_lock_conflict(self, err: BaseException) -> bool:
        """Transactions are optimistic: a row or key another transaction wrote meanwhile fails the
        statement or its commit (an ``ON CONFLICT`` sees only committed rows), and the step is run
        again, seeing it."""
        text = str(err).lower()
        return any(word in text for word in ("transactioncontext", "conflict on", "duplicate key"))

    def load_rows(self, session: WarehouseSession, table: str, columns: Sequence[str],
                  rows: Sequence[Sequence[Any]]) -> None:
        """One ``INSERT ... SELECT UNNEST(?), ...`` of one list per column (``executemany`` runs
        the insert once per row)."""
        lists = [[row[i] for row in rows] for i in range(len(columns))]
        unnests = ", ".join(f"UNNEST({self.placeholder})" for _ in columns)
        session.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {unnests}", lists)

    def store(self, session: WarehouseSession, answers: str, rows: Sequence[Sequence[Any]],
              result_columns: Sequence[Column], *, owner: str, stamp: float, credits: int,
              paid_for: str) -> set[str]:
        """One ``UPDATE ... FROM (SELECT UNNEST(<one list per column>)) ... RETURNING``."""
        p = self.placeholder
        names = ["query_hash", *(c.name for c in result_columns)]
        types = ["VARCHAR", *(self.column_type(c) for c in result_columns)]
        values = ", ".join(f"UNNEST(CAST({p} AS {t}[])) AS {n}" for n, t in zip(names, types, strict=True))
        sets = ", ".join(f"{c.name} = v.{c.name}" for c in result_columns)
        params: list[Any] = [owner, stamp, credits, paid_for]
        params += [[row[i] for row in rows] for i in range(len(names))]
        params.append(owner)
        return {r[0] for r in session.fetchall(
            f"UPDATE {answers} AS a SET state = 'answered', claimed_by = NULL, lease_expires = NULL, "
            f"answered_by = {p}, answered_at = {p}, credits = {p}, paid_for = {p}, {sets} "
            f"FROM (SELECT {values}) AS v WHERE a.query_hash = v.query_hash AND a.claimed_by = {p} "
            f"RETURNING a.query_hash", params, commit=False)}

    def lock_answers(self, answers: str, chosen: str) -> str | None:
        """A write of the rows (DuckDB has no ``FOR UPDATE``): two fix-ups of one query conflict."""
        return f"UPDATE {answers} SET credits = credits WHERE query_hash IN ({chosen}) RETURNING query_hash"

