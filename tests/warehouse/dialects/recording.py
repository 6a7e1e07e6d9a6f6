"""A whole table run against a warehouse that only records: every statement a dialect sends, in order.

For the warehouses no test here can reach (BigQuery, Databricks, Redshift, SQL Server), a
real run is driven end to end, the real engine and warehouse adapters and real lookups
against the emulator, over a DB-API connection that records each statement and answers
it plausibly: a table the run created exists, the source holds generated distinct values,
nothing is answered before, every claim is won (its row count is its chunk's hashes), every
store writes what it was given (from the incoming table, or from its JSON document).
The statements are then what a run sends, in the order it sends them, for sqlglot to
parse in the warehouse's own dialect.

Example::

    recorded = record_run("mssql", emulator, make_account, distinct=1_000)
    for sql in recorded.statements: sqlglot.parse_one(sql, read="tsql")
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules
from airflow_provider_namelookup.engine.run import RunOptions
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.testing.trace import DialectTrace
from airflow_provider_namelookup.warehouse import TableRunSpec, WarehouseSession, table_run
from airflow_provider_namelookup.warehouse.source import TableSource
from tests.support import NoTransactions

SOURCE = "analytics.customers"
ANSWERS = "analytics.namelookup_answers"
_CREATED = re.compile(r"^(?:CREATE (?:TEMPORARY |TEMP )?TABLE|SELECT .*? INTO) ([^\s(]+)", re.DOTALL)
_PROBE = re.compile(r"^SELECT [^()]*? FROM ([^\s(]+) WHERE (?:1 = 0|FALSE)$")


def _bare(name: str) -> str:
    return re.sub(r"[`\"\[\]#]", "", name).lower()


@dataclass
class Warehouse:
    """What the recording warehouse holds and has been sent."""

    values: list[tuple[str, str | None, int, int]]
    statements: list[str] = field(default_factory=list)
    tables: set[str] = field(default_factory=lambda: {_bare(SOURCE)})
    loads: dict[str, tuple[list[str], list[Sequence[Any]]]] = field(default_factory=dict)
    owner: str = ""

    def rows_of(self, table: str, column: str) -> list[Any]:
        columns, rows = self.loads.get(_bare(table), ([], []))
        at = columns.index(column)
        return [row[at] for row in rows]

    def _chunk_hashes(self, chunk: Any) -> set[str]:
        """The valid hashes of one claim chunk of the run's map."""
        maps = [t for t in self.loads if "namelookup_map_" in t]
        columns, rows = self.loads[maps[0]]
        at, error = columns.index("chunk"), columns.index("error")
        return {row[columns.index("query_hash")] for row in rows if row[at] == chunk and row[error] is None}

    def answer(self, sql: str, params: Sequence[Any] | None) -> tuple[list[tuple[Any, ...]], int]:
        """Rows and row count of one statement."""
        self.statements.append(sql)
        if probe := _PROBE.match(sql):
            if _bare(probe[1]) not in self.tables:
                raise RuntimeError(f"table {probe[1]} does not exist")
            return [], 0
        if created := _CREATED.match(sql):
            self.tables.add(_bare(created[1]))
            return [], 0
        if sql.startswith("DROP TABLE"):
            self.tables.discard(_bare(sql.split()[-1]))
            return [], 0
        if re.match(r"^SELECT (TOP 1 )?s\.", sql):  # the source's first row
            first = self.values[0] if self.values else ("Anna", None)
            return [(1, first[0], first[1])], 1
        if sql.startswith("SELECT 0 AS total"):  # the distinct pass
            total = sum(count for *_, count, _ in self.values)
            distinct = len(self.values)
            return [(0, *value, distinct) for value in self.values] + [(1, None, None, total, None, None)], distinct + 1
        if sql.startswith("SELECT a.query_hash, a.state, a.claimed_by"):  # a claim's outcome: all won
            hashes = self._chunk_hashes(params[0] if params else None)
            return [(h, "claimed", self.owner) for h in sorted(hashes)], len(hashes)
        if "answered_by" in sql and sql.startswith(("UPDATE", "MERGE")):  # a store writes what it was given
            if params:  # straight from the answers' JSON document, its one parameter (SQLite, DuckDB)
                hashes = [row[0] for row in json.loads(params[0])]
            else:
                incoming = next(t for t in self.loads if "namelookup_incoming_" in t)
                columns, rows = self.loads[incoming]
                number = int(re.search(r"store_no = (\d+)", sql)[1])  # type: ignore[index]
                hashes = [row[0] for row in rows if row[columns.index("store_no")] == number]
            return ([(h,) for h in hashes] if "RETURNING" in sql else []), len(hashes)
        if sql.startswith("INSERT INTO") and "'claimed'" in sql and params:  # an insert claim: all won
            return [], len(self._chunk_hashes(params[3]))
        if sql.startswith("SELECT COUNT(*) FROM"):  # nothing there to count (retention's count of old answers)
            return [(0,)], 1
        return [], 0

    def columns(self, sql: str) -> list[str] | None:
        """The column names a statement's rows carry (a cursor's ``description``), where a caller reads them."""
        return None


class _Cursor:
    def __init__(self, house: Warehouse) -> None:
        self.house = house
        self.rows: list[tuple[Any, ...]] = []
        self.rowcount = -1
        self.description: list[tuple[str, ...]] | None = None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        self.rows, self.rowcount = self.house.answer(sql, params)
        columns = self.house.columns(sql)
        self.description = None if columns is None else [(name,) for name in columns]

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        # MySQL counts a row an ON DUPLICATE KEY UPDATE changed twice
        per_row = 2 if "ON DUPLICATE KEY UPDATE" in sql and "answered_by" in sql else 1
        self.rows, self.rowcount = self.house.answer(sql, None)[0], per_row * len(rows)

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self.rows = self.rows, []
        return rows

    def register(self, view: str, data: Any) -> None:
        """DuckDB's Arrow load reads ``data`` as ``view`` (its rows are kept by :meth:`RecordingSession.load`)."""

    def unregister(self, view: str) -> None:
        pass

    def fetchmany(self, size: int) -> list[tuple[Any, ...]]:
        rows, self.rows = self.rows[:size], self.rows[size:]
        return rows

    def close(self) -> None:
        pass


class _Connection(NoTransactions):
    """A DB-API connection, and (as DuckDB's is) a cursor of its own that can begin a transaction."""

    def __init__(self, house: Warehouse) -> None:
        self.house = house
        self._own = _Cursor(house)
        self.execute, self.executemany = self._own.execute, self._own.executemany
        self.fetchall, self.fetchmany = self._own.fetchall, self._own.fetchmany

    @property
    def rowcount(self) -> int:
        return self._own.rowcount

    def cursor(self) -> _Cursor:
        return _Cursor(self.house)



class RecordingHook:
    """A common-sql-like hook of connection type ``conn_type`` whose connections record."""

    placeholder = "%s"
    dialect_name = None
    conn_name_attr = "conn_id"
    conn_id = None

    def __init__(self, conn_type: str, house: Warehouse) -> None:
        self.conn_type = conn_type
        self.house = house
        self.dialect = SimpleNamespace(escape_word=lambda word: word)

    def get_conn(self) -> _Connection:
        return _Connection(self.house)


class RecordingSession(WarehouseSession):
    """A session on the recording connection (whatever opener the dialect has for its real driver)
    that also keeps the rows of every bulk load (what the map and the stores hold)."""

    def __init__(self, hook: RecordingHook) -> None:
        super().__init__(hook)
        self.dialect.connect = lambda hook: hook.get_conn()  # type: ignore[method-assign]

    def load(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        _, held = self.hook.house.loads.setdefault(_bare(table), (list(columns), []))
        held.extend(rows)  # loads add rows: a page's map rows stay while the claims of earlier pages run
        super().load(table, columns, rows)


def distinct_values(distinct: int, rows: int) -> list[tuple[str, str | None, int, int]]:
    """``distinct`` valid first names and two invalid ones, with row counts summing to ``rows``."""
    names = [(f"Name{'abcdefghij'[i % 10]}{i}", "DE" if i % 3 else None) for i in range(distinct)]
    names += [("", None), ("x" * 60, None)]
    each, extra = divmod(rows, len(names))
    return [(name, country, each + (1 if i < extra else 0), i + 1) for i, (name, country) in enumerate(names)]


@dataclass
class RecordedRun:
    statements: list[str]
    summary: dict[str, Any]
    trace: DialectTrace | None = None
    """Which dialect method built each statement (``traced=True``)."""
    error: Exception | None = None
    """What the run raised (``raises=True``): the statements up to it, and after it, are recorded."""


def record_run(conn_type: str, emulator: Any, token: str, *, distinct: int, rows: int,
               page_size: int = 10_000, claim_chunk: int | None = None, existing: bool = False,
               max_age: timedelta | None = None, plan_only: bool = False, retention: timedelta | None = None,
               values: list[tuple[str, str | None, int, int]] | None = None, traced: bool = False,
               raises: bool = False, **options: Any) -> RecordedRun:
    """One gender run over a source of ``distinct`` names in ``rows`` rows, on a recording warehouse.

    :param existing: the target and the answers table exist (the source's rows changed since).
    :param values: the distinct pass's values instead (``[]``: an unchanged table's rerun).
    :param traced: remember which dialect method built each statement (:class:`DialectTrace`).
    :param raises: the run is expected to fail; what it raised is kept, not raised.
    :param options: more :class:`RunOptions` (``max_credits``, ``on_insufficient_credits``).
    """
    house = Warehouse(distinct_values(distinct, rows) if values is None else values)
    if existing:
        house.tables |= {_bare(f"{SOURCE}_gender"), _bare(ANSWERS)}
    session = RecordingSession(RecordingHook(conn_type, house))
    trace = DialectTrace(session.dialect) if traced else None
    if trace is not None:
        session.dialect = trace.dialect
    source = TableSource(session.dialect, table=SOURCE, key_column="customer_id", name_column="first_name",
                         country_column="country")
    job = TableRunSpec(source=source, target=f"{SOURCE}_gender", answers=ANSWERS, rules=QueryRules(LookupKind.GENDER),
                       page_size=page_size, max_age=max_age, retention=retention,
                       **({"claim_chunk": claim_chunk} if claim_chunk else {}))

    async def run() -> dict[str, Any]:
        hook = NameLookupAsyncHook.for_url(emulator.url, token)
        async with hook:
            lookup = table_run(session, job, hook, logging.getLogger("recorded"),
                               RunOptions(check_remaining_credits=False, plan_only=plan_only, **options))
            house.owner = lookup.state.cache.owner  # type: ignore[attr-defined]
            await lookup.run()
            return lookup.state.progress.summary()

    summary: dict[str, Any] = {}
    error: Exception | None = None
    try:
        summary = asyncio.run(run())
    except Exception as err:
        if not raises:
            raise
        error = err
    finally:
        session.shutdown()
    if raises and error is None:
        raise AssertionError(f"the run was expected to fail; it did not: {summary}")
    return RecordedRun(house.statements, summary, trace, error)
