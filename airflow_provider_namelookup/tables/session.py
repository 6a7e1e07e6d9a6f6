"""One warehouse connection for one table run, used from one thread.

A run's statements share a connection (its temporary tables live there, and vanish with
it if the task dies), and every statement runs on the session's own worker thread
(SQLite connections refuse to be used from another thread), so the async run awaits
them without blocking its lookups. Each step commits at its end: no transaction spans
two steps, so other task instances see claims and answers at once.

Example::

    session = WarehouseSession(hook)
    rows = await session.run(session.fetchall, "SELECT 1")
    await session.run(session.close)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from airflow_provider_namelookup.tables.dialect import SqlDialect

T = TypeVar("T")
_SQLITE_BUSY_TIMEOUT_MS = 120_000
_CONFLICT_ATTEMPTS = 6
_CONFLICT_SQLSTATES = {"40001", "40P01"}
_PG_AGGREGATION_MEMORY = "SET LOCAL work_mem = '64MB'"
"""For the distinct pass's join and GROUP BY: with PostgreSQL's default 4 MB they spill to disk
(an unchanged 10,000,000-row rerun read its distinct values in 34 s; 20 s with 64 MB)."""
_CONFLICT_WORDS = ("deadlock", "lock wait timeout", "database is locked", "could not serialize")


def is_lock_conflict(err: BaseException) -> bool:
    """Whether ``err`` is a lock conflict the database resolved by failing this statement."""
    state = getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)
    if state in _CONFLICT_SQLSTATES or getattr(err, "errno", None) in (1205, 1213):
        return True
    return any(word in str(err).lower() for word in _CONFLICT_WORDS)


def is_duplicate_key(err: BaseException) -> bool:
    """Whether ``err`` is a unique-key violation (PostgreSQL, MySQL/MariaDB, SQLite)."""
    state = getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)
    if state == "23505" or getattr(err, "errno", None) == 1062 or (err.args and err.args[0] == 1062):
        return True
    return "unique constraint failed" in str(err).lower() or "duplicate key" in str(err).lower()


class WarehouseSession:
    """A DB-API connection from a common-sql ``DbApiHook``, opened on first use.

    :param hook: the warehouse's ``DbApiHook``.
    """

    def __init__(self, hook: Any) -> None:
        self.hook = hook
        self.dialect = SqlDialect.for_hook(hook)
        self._conn: Any = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="namelookup-sql")

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args)`` (which uses this session) on the session's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    @property
    def conn(self) -> Any:
        if self._conn is None:
            self._conn = self.hook.get_conn()
            if self.dialect.name == "sqlite":
                # Several task instances may write one SQLite file: wait for the lock, don't fail.
                self._conn.execute(f"PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}")
            elif self.dialect.name == "mysql":
                # INSERT ... SELECT then reads without locking what it reads (no gap locks to deadlock on).
                cursor = self._conn.cursor()
                cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                cursor.close()
        return self._conn

    async def run_retrying(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """:meth:`run` for an idempotent step: run again when the database broke a lock conflict
        (deadlock, serialisation failure, a locked SQLite file) by failing it."""
        for attempt in range(_CONFLICT_ATTEMPTS):
            try:
                return await self.run(fn, *args, **kwargs)
            except Exception as err:
                if attempt == _CONFLICT_ATTEMPTS - 1 or not is_lock_conflict(err):
                    raise
                await asyncio.sleep(0.05 * 2 ** attempt)
        raise AssertionError("unreachable")

    def _cursor_call(self, work: Callable[[Any], T]) -> T:
        cursor = self.conn.cursor()
        try:
            return work(cursor)
        except Exception:
            self.rollback()
            raise
        finally:
            cursor.close()

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> int:
        """Run one statement (not committed); its row count."""
        def work(cursor: Any) -> int:
            cursor.execute(sql, params) if params else cursor.execute(sql)
            return int(cursor.rowcount or 0)
        return self._cursor_call(work)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for many parameter rows (not committed)."""
        if rows:
            self._cursor_call(lambda cursor: cursor.executemany(sql, rows))

    def insert_many(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert rows into ``table`` (quoted; ``columns`` quoted), not committed: with ``COPY``
        on psycopg 3 (one stream instead of a statement per row), else ``executemany``."""
        if not rows:
            return

        def copy_rows(cursor: Any) -> bool:
            if not hasattr(cursor, "copy"):  # psycopg2 and the other drivers
                return False
            with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return True

        if self.dialect.name == "postgresql" and self._cursor_call(copy_rows):
            return
        self.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({self.dialect.marks(len(columns))})",
                         rows)

    def fetchall(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        def work(cursor: Any) -> list[tuple[Any, ...]]:
            cursor.execute(sql, params) if params else cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]
        rows = self._cursor_call(work)
        self.commit()  # ends the read's transaction, so the next read sees other tasks' commits
        return rows

    def has_table(self, table: str, column: str) -> bool:
        """Whether ``table`` (quoted) exists with ``column`` (quoted): a probe that reads no row."""
        try:
            self.fetchall(f"SELECT {column} FROM {table} WHERE 1 = 0")
        except Exception:
            return False
        return True

    def stream(self, sql: str, params: Sequence[Any] | None, size: int) -> Iterator[list[tuple[Any, ...]]]:
        """Yield the rows of a query ``size`` at a time without holding them all (a server-side
        cursor on PostgreSQL). Advance it only through :meth:`run`."""
        streaming = self.dialect.name == "postgresql"
        if streaming:
            self.execute(_PG_AGGREGATION_MEMORY)  # this transaction only
        cursor = self.conn.cursor(name="namelookup_stream") if streaming else self.conn.cursor()
        try:
            if streaming:
                cursor.itersize = size
            cursor.execute(sql, params) if params else cursor.execute(sql)
            while batch := cursor.fetchmany(size):
                yield [tuple(row) for row in batch]
        except Exception:
            self.rollback()
            raise
        finally:
            cursor.close()
        self.commit()

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # the connection is gone: nothing left to undo
                self._conn.rollback()

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def shutdown(self) -> None:
        """Close the connection on its thread and stop the thread."""
        try:
            self._executor.submit(self.close).result()
        finally:
            self._executor.shutdown(wait=True)
