"""One warehouse connection for one table run, used from one thread, counting its statements.

A run's statements (built by its dialect, :mod:`.dialects`) share a connection (its
temporary tables live there, and vanish with it if the task dies), and every statement
runs on the session's own worker thread (SQLite connections refuse to be used from
another thread), so the async run awaits them without blocking its lookups. Each step
commits at its end: no transaction spans two steps, so other task instances see claims
and answers at once. What a lost connection takes with it (a temporary table) is told
through :meth:`WarehouseSession.on_lost`.

On a cloud warehouse every statement costs time and money, so the session counts them
(:attr:`WarehouseSession.statements`: every ``execute``, ``executemany`` and bulk load,
an ``executemany`` counting once, as drivers that batch an ``INSERT``'s rows send it).

Example::

    session = WarehouseSession(hook)
    rows = await session.run(session.fetchall, "SELECT 1")
    session.statements                                  # 1
    await asyncio.get_running_loop().run_in_executor(None, session.shutdown)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from airflow_provider_namelookup.warehouse.arrow_rows import arrow_table
from airflow_provider_namelookup.warehouse.diagnosis import first_line
from airflow_provider_namelookup.warehouse.dialects import WarehouseDialect, dialect_for
from airflow_provider_namelookup.warehouse.dialects.base import BulkLoad, value_kinds

T = TypeVar("T")


class WarehouseConnectionLost(Exception):
    """The warehouse ended the run's connection (or the network did), and its temporary tables with it."""


class WarehouseSession:
    """A DB-API connection from a common-sql ``DbApiHook``, opened on first use.

    :param hook: the warehouse's ``DbApiHook``.
    :param dialect: its dialect (default: :func:`dialect_for` the hook).
    """

    def __init__(self, hook: Any, dialect: WarehouseDialect | None = None) -> None:
        self.hook = hook
        self.dialect = dialect or dialect_for(hook)
        self.own_statements = 0
        """Statements sent on this session's connection (only its thread counts them)."""
        self.sibling_statements = 0
        """Statements its siblings (:meth:`sibling`) sent, counted for the run when they are done."""
        self._on_lost: list[Callable[[], None]] = []
        self.lost: WarehouseConnectionLost | None = None
        """Set once the connection was lost: the run's temporary tables are gone."""
        self._conn: Any = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="namelookup-sql")

    def sibling(self) -> WarehouseSession:
        """Another session on the same warehouse (a connection of its own)."""
        return WarehouseSession(self.hook, self.dialect)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args)`` (which uses this session) on the session's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def run_retrying(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """:meth:`run` for an idempotent step: run again when the database broke a lock conflict
        (deadlock, serialisation failure, a locked SQLite file) by failing it."""
        tuning = self.dialect.tuning
        for attempt in range(tuning.conflict_attempts):
            try:
                return await self.run(fn, *args, **kwargs)
            except Exception as err:
                if attempt == tuning.conflict_attempts - 1 or not self.dialect.errors.is_lock_conflict(err):
                    raise
                await asyncio.sleep(tuning.conflict_backoff_seconds * 2 ** attempt)
        raise AssertionError("unreachable")

    async def run_reconnecting(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """:meth:`run_retrying` for a step that needs no temporary table (a store, a release):
        run again once on a new connection when the connection was lost."""
        try:
            return await self.run_retrying(fn, *args, **kwargs)
        except WarehouseConnectionLost:
            return await self.run_retrying(fn, *args, **kwargs)

    def require_temporaries(self) -> None:
        """Raise :class:`WarehouseConnectionLost` if the connection that held the run's temporary
        tables was lost (a statement on them would only say they do not exist)."""
        if self.lost is not None:
            raise self.lost

    def _failed(self, err: Exception) -> Exception:
        """The error to raise for a failed statement: the transaction is undone, and a lost
        connection becomes :class:`WarehouseConnectionLost`."""
        if isinstance(err, WarehouseConnectionLost):
            return err
        if self.dialect.errors.is_connection_lost(err):
            return self._connection_lost(err)
        self.rollback()
        return err

    def _connection_lost(self, err: Exception) -> WarehouseConnectionLost:
        """Forget the dead connection (the next statement opens a new one)."""
        with contextlib.suppress(Exception):
            self._conn.close()
        self._conn = None
        for forget in self._on_lost:  # a temporary table went with the connection
            forget()
        conn_id = getattr(self.hook, getattr(self.hook, "conn_name_attr", ""), None)
        message = first_line(err)
        self.lost = WarehouseConnectionLost(f"the connection to the warehouse{f' {conn_id!r}' if conn_id else ''} "
                                            f"was lost: {message}")
        return self.lost

    def on_lost(self, forget: Callable[[], None]) -> None:
        """Call ``forget`` when the connection is lost (what lived in it, a temporary table, is gone)."""
        self._on_lost.append(forget)

    @property
    def conn(self) -> Any:
        if self._conn is None:
            conn = self.dialect.connect(self.hook)
            for statement in self.dialect.on_connect():
                cursor = conn.cursor()
                self.count()
                cursor.execute(statement)
                cursor.close()
            self._conn = conn
        return self._conn

    def cursor(self) -> Any:
        return self.conn.cursor()

    @property
    def statements(self) -> int:
        """Every statement of the run: this connection's and its siblings'."""
        return self.own_statements + self.sibling_statements

    def count(self, statements: int = 1) -> None:
        """Count statements sent by a dialect's own cursor work."""
        self.own_statements += statements

    def count_sibling(self, sibling: WarehouseSession) -> None:
        """Count for the run what a sibling's connection sent (apart from :attr:`own_statements`,
        which a step on this session's thread may be measuring while the sibling finishes)."""
        self.sibling_statements += sibling.statements

    def _cursor_call(self, work: Callable[[Any], T]) -> T:
        cursor = None
        try:
            cursor = self.cursor()
            self.count()
            return work(cursor)
        except Exception as err:
            failure = self._failed(err)
            if failure is err:
                raise
            raise failure from err
        finally:
            if cursor is not None:
                with contextlib.suppress(Exception):
                    cursor.close()

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> int:
        """Run one statement (not committed); its row count."""
        def work(cursor: Any) -> int:
            cursor.execute(sql, params) if params else cursor.execute(sql)
            return int(cursor.rowcount or 0)
        return self._cursor_call(work)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run one statement for many parameter rows (not committed); the rows it touched."""
        if not rows:
            return 0

        def work(cursor: Any) -> int:
            cursor.executemany(sql, rows)
            return int(cursor.rowcount or 0)
        return self._cursor_call(work)

    def fetchall(self, sql: str, params: Sequence[Any] | None = None, *, commit: bool = True) -> list[tuple[Any, ...]]:
        """The rows of a query; the read's transaction ends (unless ``commit`` is False: a read
        that locks rows for the rest of a step), so the next read sees other runs' commits."""
        def work(cursor: Any) -> list[tuple[Any, ...]]:
            cursor.execute(sql, params) if params else cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]
        rows = self._cursor_call(work)
        if commit:
            self.commit()
        return rows

    def column_names(self, relation: str) -> list[str]:
        """The names of a derived table's columns (``(SELECT ...)``), read by a query that reads no row."""
        def work(cursor: Any) -> list[str]:
            cursor.execute(self.dialect.no_rows("*", f"{relation} s"))
            cursor.fetchall()
            return [str(column[0]) for column in cursor.description or ()]
        names = self._cursor_call(work)
        self.commit()
        return names

    def probe(self, sql: str) -> Exception | None:
        """Run a read that should succeed; the error it raised, or None (the failure is undone)."""
        try:
            self.fetchall(sql)
        except Exception as err:
            return err
        return None

    def stream(self, sql: str, size: int) -> Iterator[list[tuple[Any, ...]]]:
        """Yield the rows of the distinct pass's query ``size`` at a time, without holding them all:
        after the dialect's set-up, made into a temporary table first where the dialect reads in
        parallel that way, read through a server-side cursor where it has one. Advance it only
        through :meth:`run`."""
        d = self.dialect
        try:
            for statement in d.before_distinct_pass():
                self.execute(statement)
            if d.engine.materializes_reads:
                table = d.temp_name(f"namelookup_read_{uuid.uuid4().hex[:12]}")
                self.execute(d.create_temp_as(table, sql))
                sql = d.select_rows(table)
            cursor = self.conn.cursor(name="namelookup_stream") if d.engine.server_side_cursor else self.cursor()
            if d.engine.server_side_cursor:
                cursor.itersize = size
            try:
                self.count()
                cursor.execute(sql)
                while batch := cursor.fetchmany(size):
                    yield [tuple(row) for row in batch]
            finally:
                cursor.close()
        except Exception as err:
            failure = self._failed(err)
            if failure is err:
                raise
            raise failure from err
        self.commit()

    def load(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert many rows into a table of the run, in one statement (or a few), the way the dialect's
        :class:`~.dialects.base.BulkLoad` says the warehouse takes them best; not committed."""
        if not rows:
            return
        d = self.dialect
        match d.engine.bulk_load:
            case BulkLoad.EXECUTEMANY:
                self.executemany(d.insert_values(table, columns), rows)
            case BulkLoad.COPY:
                self._cursor_call(lambda cursor: _copy(cursor, d.copy_from_stdin(table, columns),
                                                       d.insert_page(table, columns), rows))
            case BulkLoad.ARROW if (data := arrow_table(rows, len(columns))) is not None:
                self._cursor_call(lambda cursor: d.insert_arrow(cursor, table, columns, data))
            case BulkLoad.UNNEST | BulkLoad.ARROW:
                self.execute(d.insert_unnest(table, columns), [[row[i] for row in rows] for i in range(len(columns))])
            case BulkLoad.JSON:
                if (document := d.json_document(rows)) is None:  # values JSON cannot carry
                    self.executemany(d.insert_values(table, columns), rows)
                else:
                    self.execute(d.insert_json(table, columns, value_kinds(rows, len(columns))), [document])
            case BulkLoad.LITERALS:
                for statement in d.insert_literals(table, columns, rows):
                    self.execute(statement)

    def commit(self) -> None:
        try:
            self.conn.commit()
        except Exception as err:
            if self.dialect.errors.is_connection_lost(err):
                raise self._connection_lost(err) from err
            raise

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


def _copy(cursor: Any, copy_statement: str, insert_page: str, rows: Sequence[Sequence[Any]]) -> None:
    """``COPY ... FROM STDIN`` with psycopg 3; psycopg2 (no ``copy``) gets one multi-row ``INSERT``."""
    if hasattr(cursor, "copy"):
        with cursor.copy(copy_statement) as copy:
            for row in rows:
                copy.write_row(row)
        return
    from psycopg2.extras import execute_values

    execute_values(cursor, insert_page, rows, page_size=max(1, len(rows)))
