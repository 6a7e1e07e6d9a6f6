"""How a warehouse spells the table engine's SQL: the statement builder every dialect module refines.

The engine's statements are few and set-based (see :mod:`airflow_provider_namelookup.warehouse`):
a probe, the distinct pass, the raw-value map and its bulk load, claims (insert-if-absent
with a lease), the stores of answers, the fill of the target (an upsert from a join) and
the fix-up that keeps one price per query. :class:`WarehouseDialect` writes each of them
once, in standard SQL (``MERGE``, ``UPDATE ... FROM``, ``CREATE TEMPORARY TABLE ... AS``); a
dialect module (:mod:`.sqlite`, :mod:`.postgresql`, :mod:`.mysql`, ...) overrides only
what its engine spells differently. No other module of the package writes a dialect's
name or a spelling of its own.

A dialect only builds statements, as common-sql's ``Dialect`` does: the run's session
(:mod:`airflow_provider_namelookup.warehouse.session`) sends them. What else differs between
warehouses is data on the dialect, each its own small object: how rows are bulk-loaded
(:class:`BulkLoad`), how its driver's errors are sorted (:class:`DriverErrors`) and how often
it stores and retries (:class:`Tuning`).

Quoting of identifiers, the bind marker and the reserved words come from the hook's
``apache-airflow-providers-common-sql`` ``Dialect`` (``hook.dialect``): it knows them for
every engine, and its PostgreSQL and SQL Server subclasses add primary-key and column
introspection, which the engine does not need. The statements themselves are not built
on it: its only statement generators are an ``INSERT`` and a ``REPLACE INTO`` of bound
values row by row, while the engine needs set-based statements from joins.

The engine's own column names (``query_hash``, ``state``, ``gender``, ...) are plain
lower-case words reserved by no supported engine, and are written unquoted; table names
and the DAG author's column names are checked identifiers, quoted by :meth:`WarehouseDialect.quote`.

Example::

    dialect = dialect_for(PostgresHook("warehouse"))     # PostgresDialect
    dialect.user_sql("customer_id % 8 = 3", with_params=True)   # 'customer_id %% 8 = 3' for psycopg
    dialect.null_safe_equal("s.country", "m.raw_country")       # 's.country IS NOT DISTINCT FROM m.raw_country'
    dialect.errors.is_lock_conflict(err), dialect.tuning.store_every_seconds, dialect.bulk_load
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, ClassVar

from airflow_provider_namelookup.warehouse.dialects.where_functions import COMMON_WHERE_FUNCTIONS, WhereFunctions
from airflow_provider_namelookup.warehouse.schema import SOURCE_COUNTRY, SOURCE_NAME, Column


def value_kinds(rows: Sequence[Sequence[Any]], width: int) -> list[str]:
    """The kind of each column's values, read from the first value that is not None: ``bool``,
    ``int``, ``float``, ``decimal``, ``datetime``, ``date`` or ``text`` (anything else).

    >>> value_kinds([(None, 1, "a"), (2.5, 3, None)], 3)
    ['float', 'int', 'text']
    """
    kinds = ["text"] * width
    for i in range(width):
        value = next((row[i] for row in rows if row[i] is not None), None)
        for kind, types in _KINDS:
            if isinstance(value, types):
                kinds[i] = kind
                break
    return kinds


_KINDS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("bool", bool), ("int", int), ("float", float), ("decimal", Decimal), ("datetime", datetime), ("date", date),
    ("text", str))


def json_rows(rows: Sequence[Sequence[Any]]) -> str:
    """Rows as a JSON array of arrays of text (or null): what :meth:`WarehouseDialect.load_json` binds.

    >>> json_rows([("Anna", 1, None, True, 0.5)])
    '[["Anna","1",null,"true","0.5"]]'
    """
    def text(value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, (datetime, date)):
            return value.isoformat()
        return str(value)
    return json.dumps([[text(v) for v in row] for row in rows], ensure_ascii=False, separators=(",", ":"))


class BulkLoad(enum.Enum):
    """How many rows go into a (temporary) table at once, as the warehouse takes them best.

    :attr:`EXECUTEMANY`: one ``executemany`` of an ``INSERT`` (drivers that send its rows as one
    statement). :attr:`COPY`: ``COPY ... FROM STDIN`` (psycopg). :attr:`UNNEST`: one ``INSERT ...
    SELECT UNNEST(?), ...`` binding one list per column. :attr:`JSON`: one ``INSERT ... SELECT``
    binding one JSON document (:meth:`WarehouseDialect.json_select`), for drivers whose
    ``executemany`` sends a statement per row. :attr:`LITERALS`: multi-row ``INSERT ... VALUES`` of
    literals, a few megabytes a statement (:meth:`WarehouseDialect.insert_literals`).
    """

    EXECUTEMANY = "executemany"
    COPY = "copy"
    UNNEST = "unnest"
    JSON = "json"
    LITERALS = "literals"


def _code(err: BaseException) -> int | None:
    """The driver's numeric error code (``errno``, or the first argument), if it has one."""
    code = getattr(err, "errno", None)
    if not isinstance(code, int):
        code = err.args[0] if err.args and isinstance(err.args[0], int) else None
    return code


@dataclass(frozen=True)
class DriverErrors:
    """How a warehouse's driver says what went wrong: by SQLSTATE, numeric code, or words of its message.

    Example::

        >>> DriverErrors().is_lock_conflict(RuntimeError("deadlock detected"))
        True
    """

    lock_conflict_states: frozenset[str] = frozenset({"40001", "40P01"})
    lock_conflict_codes: frozenset[int] = frozenset()
    lock_conflict_words: tuple[str, ...] = ("deadlock", "lock wait timeout", "could not serialize",
                                            "serialization failure", "conflict")
    connection_lost_codes: frozenset[int] = frozenset()
    connection_lost_words: tuple[str, ...] = (
        "server closed the connection", "connection already closed", "connection not available", "lost connection",
        "server has gone away", "connection was killed", "terminating connection", "broken pipe",
        "connection reset", "connection is closed", "connection refused")
    duplicate_key_codes: frozenset[int] = frozenset()
    duplicate_key_words: tuple[str, ...] = ("duplicate key", "unique constraint", "already exists",
                                            "duplicate entry", "duplicate column", "primary key")

    @staticmethod
    def _state(err: BaseException) -> str | None:
        return getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)

    def _says(self, err: BaseException, words: tuple[str, ...]) -> bool:
        text = str(err).lower()
        return any(word in text for word in words)

    def is_lock_conflict(self, err: BaseException) -> bool:
        """The engine failed this statement to resolve a lock conflict: run the step again."""
        return (self._state(err) in self.lock_conflict_states or _code(err) in self.lock_conflict_codes
                or self._says(err, self.lock_conflict_words))

    def is_connection_lost(self, err: BaseException) -> bool:
        """The connection is gone (the server ended it, the network broke): its temporary
        tables with it. A statement that needs none may run again on a new connection."""
        state = self._state(err)
        if state and (state.startswith("08") or state in ("57P01", "57P02", "57P03")):
            return True
        return _code(err) in self.connection_lost_codes or self._says(err, self.connection_lost_words)

    def is_duplicate_key(self, err: BaseException) -> bool:
        """A unique key (or a table or column name) is taken: another run got there first."""
        return (self._state(err) in ("23505", "42P07") or _code(err) in self.duplicate_key_codes
                or self._says(err, self.duplicate_key_words))


@dataclass(frozen=True)
class Tuning:
    """How often a warehouse is written, and how lock conflicts are retried.

    :param store_every_seconds: most seconds an answer waits before it is stored; 0 stores
        continuously (a store begins whenever answers wait and none runs), where a statement costs
        milliseconds. On a cloud warehouse, where each costs a second and money, answers wait and
        go together: a task killed outright loses that long's answers.
    :param store_batch: with a wait, a store also starts once this many answers wait.
    :param conflict_attempts: how often a step the engine failed to resolve a lock conflict is run.
    :param conflict_backoff_seconds: the first wait before it is run again (doubled each time).
    :param max_in_list: most values bound in one ``IN (...)`` list.
    :param asks_while_reading: a run may look a page's queries up before the next page is read
        (each page then costs two statements of its own: its map rows and what is answered).
    """

    store_every_seconds: float = 0.0
    store_batch: int = 10_000
    conflict_attempts: int = 6
    conflict_backoff_seconds: float = 0.05
    max_in_list: int = 1_000
    asks_while_reading: bool = True


def cloud_tuning(**more: Any) -> Tuning:
    """The tuning of a warehouse whose every statement costs a second and money: answers stored
    together at most every 30 s, and the source read whole before anything is asked (no
    statements of a page's own)."""
    return Tuning(**{"store_every_seconds": 30.0, "store_batch": 50_000, "asks_while_reading": False, **more})


@dataclass(frozen=True)
class Names:
    """The quoted names a statement about a source ``s`` is written with.

    :param relation: the filtered source as a derived table (``(SELECT ...)``).
    :param key_column: the key column's name (quoted), which the target shares.
    :param key: ``s.<key column>``; ``name`` / ``country``: the name and country columns
        (``country`` None when the run reads no country).
    """

    relation: str
    key_column: str
    key: str
    name: str
    country: str | None

    def raw_columns(self) -> list[tuple[str, str]]:
        """``(expression, target column)`` of the raw values a target keeps."""
        raw = [(self.name, SOURCE_NAME)]
        if self.country:
            raw.append((self.country, SOURCE_COUNTRY))
        return raw


class WarehouseDialect:
    """SQL spellings for one warehouse, built on the hook's common-sql ``Dialect``; and, as data,
    how its rows are bulk-loaded, its driver's errors sorted and its writes paced.

    :param hook: the warehouse's common-sql ``DbApiHook``.
    """

    name: ClassVar[str] = "ansi"
    """The engine's name in messages and in the docs' table of warehouses (its module's name)."""
    sqlglot_name: ClassVar[str | None] = None
    """sqlglot's name of the engine's SQL, when it is not :attr:`name` (a ``where`` is parsed in it)."""
    where_functions: ClassVar[WhereFunctions] = COMMON_WHERE_FUNCTIONS
    """The pure scalar functions a ``where`` may call on this engine: the name a user writes, and
    the sqlglot expressions it parses to (:mod:`.where_functions`)."""
    sql_hook: ClassVar[tuple[str, str, str] | None] = None
    """(module, class, connection-id parameter) of the common-sql hook of the engine's connection
    type, where Airflow registers another kind of hook for it (None: the registered hook is one)."""
    credit_promise: ClassVar[str] = ""
    """How the engine's transactions and locks keep credits = distinct valid queries."""
    proof: ClassVar[str] = "real engine"
    """How this release's tests run the module's SQL: ``real engine``, ``emulator`` (another engine
    that speaks its SQL), or ``parsed only`` (every statement of recorded runs parsed in its dialect:
    a run logs a warning that its SQL has not been run on the warehouse by the tests)."""

    types: ClassVar[dict[str, str]] = {
        "text": "VARCHAR({n})", "longtext": "VARCHAR(65535)", "float": "DOUBLE PRECISION", "int": "INTEGER",
        "bigint": "BIGINT", "timestamp": "TIMESTAMP",
    }
    bulk_load: ClassVar[BulkLoad] = BulkLoad.EXECUTEMANY
    """How rows are loaded into the run's tables (see :class:`BulkLoad`)."""
    errors: ClassVar[DriverErrors] = DriverErrors()
    """How the driver's errors are told apart."""
    tuning: ClassVar[Tuning] = Tuning()
    """How often answers are stored, and how lock conflicts are retried."""
    reads_while_writing: ClassVar[bool] = False
    """Lookups may start while the distinct pass still reads (on a second connection)."""
    materializes_reads: ClassVar[bool] = False
    """The distinct pass is made into a temporary table first, then read (a ``CREATE TABLE ... AS``
    may run in parallel where a cursor's query does not)."""
    server_side_cursor: ClassVar[bool] = False
    """Rows are read through a named (server-side) cursor, a page at a time."""
    temporary_tables_are_private: ClassVar[bool] = True
    """Temporary tables live in the run's session and vanish with it (no drop needed)."""
    creates_target_at_fill: ClassVar[bool] = False
    """A missing target is created by the fill itself (``CREATE TABLE ... AS``), not before."""
    claimed_row: ClassVar[str] = "a."
    """How a claim's condition names the answers row it may take over (its alias)."""
    enforces_keys: ClassVar[bool] = True
    """A second row with a table's primary key is refused. Where keys are only declared (cloud
    warehouses), a fill always upserts, even into a table the run has just created."""
    indexes_null_safe_equality: ClassVar[bool] = False
    """A join on :meth:`null_safe_equal` uses an index (else NULL names are joined apart)."""
    claim_returning: ClassVar[str | None] = None
    """How a claim's ``RETURNING`` names the hash of a row it claimed (None: its outcome is read after it)."""
    update_returning: ClassVar[str | None] = None
    """How ``UPDATE ... RETURNING`` names the hash of a row a store wrote (None: the engine has no
    ``RETURNING``, the rows written are read back when some were not)."""

    def __init__(self, hook: Any) -> None:
        self.hook = hook

    # Bind markers and the DAG author's SQL ------------------------------------------------------------
    @property
    def placeholder(self) -> str:
        return str(self.hook.placeholder)

    @property
    def percent_escaped(self) -> bool:
        """The driver formats statements with ``%`` when given parameters (psycopg, mysqlclient),
        so a literal ``%`` must travel as ``%%`` then."""
        return "%" in self.placeholder

    def user_sql(self, text: str, *, with_params: bool) -> str:
        """A DAG author's SQL text as it must be written into a statement (``customer_id % 8 = 3``
        travels as ``customer_id %% 8 = 3`` to drivers that read ``%`` as a marker)."""
        return text.replace("%", "%%") if with_params and self.percent_escaped else text

    def marks(self, count: int) -> str:
        return ", ".join([self.placeholder] * count)

    def literal(self, value: Any) -> str:
        """A value of the engine's own (never a DAG author's) as an SQL literal, for statements
        that take no bind parameters (``CREATE TABLE ... AS`` on some drivers)."""
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, (int, float)):
            return repr(value)
        if isinstance(value, datetime):
            value = value.isoformat(sep=" ")
        return "'" + str(value).replace("'", "''") + "'"

    # Names and types ----------------------------------------------------------------------------------------
    def quote(self, name: str) -> str:
        """A checked identifier (``table`` or ``schema.table``) quoted as the engine needs."""
        return ".".join(self.hook.dialect.escape_word(part) for part in name.split("."))

    def temp_name(self, base: str, schema: str | None = None) -> str:
        """The name of a temporary table of the run (quoted); where temporary tables are not private,
        a staging table in ``schema`` (the answers table's), dropped at the end of the run."""
        if schema and not self.temporary_tables_are_private:
            return self.quote(f"{schema}.{base}")
        return self.quote(base)

    def column_type(self, column: Column) -> str:
        return self.types[column.kind].format(n=column.length)

    def cast(self, expression: str, column: Column) -> str:
        """``expression`` as a value of the column's type, for ``CREATE TABLE ... AS SELECT``."""
        return f"CAST({expression} AS {self.column_type(column)})"

    def cast_null(self, column: Column) -> str:
        """A NULL of the column's type."""
        return self.cast("NULL", column)

    def timestamp(self, moment: datetime) -> Any:
        """``enriched_at`` as the driver takes it (an aware UTC datetime by default)."""
        return moment

    # Equality on raw values --------------------------------------------------------------------------
    def exact_equal(self, left: str, right: str) -> str:
        """Equality that tells apart values differing by case or accents (José, Jose)."""
        return f"{left} = {right}"

    def null_safe_equal(self, left: str, right: str) -> str:
        """Equality where NULL equals NULL, exact."""
        return f"{left} IS NOT DISTINCT FROM {right}"

    # Connections and bulk loads -----------------------------------------------------------------------------
    @staticmethod
    def connect(hook: Any) -> Any:
        """A new DB-API connection of a run (a dialect whose driver needs one shaped differently
        gives its own opener)."""
        return hook.get_conn()

    def on_connect(self) -> list[str]:
        """Statements that set up a new connection of a run (lock waits, isolation)."""
        return []

    def before_distinct_pass(self) -> list[str]:
        """Statements run in the distinct pass's transaction before it (memory for its join)."""
        return []

    def insert_values(self, table: str, columns: Sequence[str]) -> str:
        """The ``INSERT`` of one row of bound values (:attr:`BulkLoad.EXECUTEMANY`)."""
        return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({self.marks(len(columns))})"

    def copy_from_stdin(self, table: str, columns: Sequence[str]) -> str:
        """``COPY ... FROM STDIN`` (:attr:`BulkLoad.COPY`)."""
        return f"COPY {table} ({', '.join(columns)}) FROM STDIN"

    def insert_page(self, table: str, columns: Sequence[str]) -> str:
        """One ``INSERT`` of many rows for psycopg2's ``execute_values`` (its one ``%s`` takes them
        all): :attr:`BulkLoad.COPY` on a driver without ``COPY`` support."""
        return f"INSERT INTO {table} ({', '.join(columns)}) VALUES %s"

    def insert_unnest(self, table: str, columns: Sequence[str]) -> str:
        """One ``INSERT`` binding one list per column (:attr:`BulkLoad.UNNEST`)."""
        unnests = ", ".join(f"UNNEST({self.placeholder})" for _ in columns)
        return f"INSERT INTO {table} ({', '.join(columns)}) SELECT {unnests}"

    def insert_json(self, table: str, columns: Sequence[str], kinds: Sequence[str]) -> str:
        """One ``INSERT`` binding the rows as one JSON document (:attr:`BulkLoad.JSON`, :func:`json_rows`)."""
        return f"INSERT INTO {table} ({', '.join(columns)}) {self.json_select(len(columns), kinds)}"

    def json_select(self, width: int, kinds: Sequence[str]) -> str:
        """A SELECT of the rows of the JSON array bound at its one marker (see :meth:`insert_json`),
        each value cast to the kind of Python value it was (:func:`value_kinds`)."""
        raise NotImplementedError(f"{self.name} does not load rows as JSON")

    def insert_literals(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
        """Multi-row ``INSERT ... VALUES`` of literals (:attr:`BulkLoad.LITERALS`)."""
        raise NotImplementedError(f"{self.name} does not load rows as literals")

    # Probes and DDL ---------------------------------------------------------------------------------------------
    def first_row(self, columns: str, relation: str) -> str:
        return f"SELECT {columns} FROM {relation} s LIMIT 1"

    def no_rows(self, columns: str, table: str) -> str:
        """A probe that reads no row: does ``table`` have these columns?"""
        return f"SELECT {columns} FROM {table} WHERE 1 = 0"

    def create_table(self, table: str, key: Column, columns: Sequence[Column]) -> list[str]:
        definitions = [f"{self.quote(key.name)} {self.column_type(key)} NOT NULL PRIMARY KEY",
                       *(f"{self.quote(c.name)} {self.column_type(c)}" for c in columns)]
        return [f"CREATE TABLE {table} ({', '.join(definitions)})"]

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> list[str]:
        return [f"CREATE INDEX {self.quote(name)} ON {table} ({', '.join(columns)})"]

    def add_column(self, table: str, column: Column) -> str:
        return f"ALTER TABLE {table} ADD {self.quote(column.name)} {self.column_type(column)}"

    def add_primary_key(self, table: str, key: str) -> list[str]:
        """The statements that make ``key`` the table's primary key (none where keys are not declared)."""
        return [f"ALTER TABLE {table} ADD PRIMARY KEY ({key})"]

    def create_like_source(self, table: str, names: Names, typed: Sequence[Column], key_sample: Any) -> list[str]:
        """Create a target table: its key and raw columns take the source's own types (rows are
        compared like with like), the ``typed`` columns their own; the key is the primary key.

        :param key_sample: a key of the source (for engines that must name the key's type).
        """
        columns = [f"{names.key} AS {names.key_column}", *(f"{self.cast_null(c)} AS {c.name}" for c in typed),
                   *(f"{expression} AS {column}" for expression, column in names.raw_columns())]
        return [f"CREATE TABLE {table} AS SELECT {', '.join(columns)} FROM {names.relation} s WHERE 1 = 0",
                *self.add_primary_key(table, names.key_column)]

    def create_temp_as(self, table: str, select: str) -> str:
        return f"CREATE TEMPORARY TABLE {table} AS {select}"

    def create_temp_like_source(self, table: str, names: Names, raw: Sequence[str],
                                typed: Sequence[Column]) -> list[str]:
        """Create an empty temporary table of the ``raw`` expressions over the source (typed as the
        source's columns) and the ``typed`` columns."""
        columns = [*raw, *(f"{self.cast_null(c)} AS {c.name}" for c in typed)]
        return [self.create_temp_as(table, f"SELECT {', '.join(columns)} FROM {names.relation} s WHERE 1 = 0")]

    def drop_table(self, table: str) -> str:
        return f"DROP TABLE IF EXISTS {table}"

    def stage_name(self, base: str, schema: str | None = None) -> str:
        """The name (quoted) of a table the fill joins every source row to (a temporary table
        by default, see :meth:`temp_name`)."""
        return self.temp_name(base, schema)

    def create_stage_as(self, table: str, select: str) -> list[str]:
        """Statements that create a stage table (a temporary table, by default)."""
        return [self.create_temp_as(table, select)]

    def drop_stage(self, table: str) -> list[str]:
        """Statements that drop a stage table the session does not drop by itself."""
        return []

    def index_temp(self, table: str, index: str, columns: Sequence[str]) -> list[str]:
        """Statements that make a joined temporary table cheap to join (an index, statistics)."""
        return []

    def analyze(self, table: str, columns: Sequence[str] = ()) -> list[str]:
        """Statistics for a table just bulk-filled, when the engine keeps them by hand (of
        ``columns`` only, when given: the ones later runs join and compare on)."""
        return []

    # The distinct pass -----------------------------------------------------------------------------------------
    def distinct_values(self, names: Names, unchanged: str | None) -> str:
        """Each distinct raw value of the rows to enrich, with its row count, its lowest key and
        how many distinct values there are in all (on every row: the first page tells the run
        its need's bound), and one more row (``total`` = 1) with the count of every row of the source.

        :param unchanged: the condition on a target row ``t`` that makes a source row ``s``
            unchanged; None when there is no target yet.
        """
        country = names.country or "NULL"
        groups = ", ".join(e for e in (names.name, names.country) if e)
        return self._distinct_values(names, unchanged, f"{names.name}, {country}", groups)

    def _distinct_values(self, names: Names, unchanged: str | None, values: str, groups: str) -> str:
        filtered = f" WHERE NOT EXISTS ({unchanged})" if unchanged else ""
        return (f"SELECT 0 AS total, {values}, COUNT(*) AS value_rows, MIN({names.key}) AS first_key, "
                f"COUNT(*) OVER () AS distinct_values "
                f"FROM {names.relation} s{filtered} GROUP BY {groups} "
                f"UNION ALL SELECT 1, NULL, NULL, COUNT(*), NULL, NULL FROM {names.relation} s")

    # Claims and stores in the answers table ---------------------------------------------------------------
    def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
        """Claim the hashes ``chosen`` selects (a column ``query_hash``): insert those nobody
        holds, take over those ``reclaimable`` (on the existing row ``a``). Parameters, in
        order: those of ``chosen``, then ``reclaimable``'s, then owner, lease, lookup."""
        p = self.placeholder
        return (f"MERGE INTO {answers} AS a USING ({chosen}) AS c ON a.query_hash = c.query_hash "
                f"WHEN MATCHED AND ({reclaimable}) THEN UPDATE SET state = 'claimed', claimed_by = {p}, "
                f"lease_expires = {p} "
                f"WHEN NOT MATCHED THEN INSERT (query_hash, lookup, state, claimed_by, lease_expires) "
                f"VALUES (c.query_hash, {p}, 'claimed', {p}, {p})")

    def claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                     lookup: str) -> list[Any]:
        return [*chosen, *reclaimable, owner, lease, lookup, owner, lease]

    def create_incoming(self, incoming: str, answers: str, result_columns: Sequence[Column]) -> str:
        """The run's table of answers on their way into the answers table (``query_hash``, the result
        columns, and the number of the store that brought them)."""
        columns = ", ".join(["query_hash", *(c.name for c in result_columns),
                             f"{self.cast_null(Column('store_no', 'int'))} AS store_no"])
        return self.create_temp_as(incoming, f"SELECT {columns} FROM {answers} WHERE 1 = 0")

    def store_answers(self, answers: str, incoming: str, store_no: int, result_columns: Sequence[Column], *,
                      owner: str, stamp: float, credits: int, paid_for: str) -> str:
        """Write one store's answers (the rows of ``incoming`` tagged ``store_no``) into the answers
        rows ``owner`` still holds. Values of the engine's own (owner, time, price) are literals, so
        that every spelling of the update binds nothing; where :attr:`update_returning` says how, it
        returns the hashes written."""
        lit = self.literal
        assignments = [("state", lit("answered")), ("claimed_by", "NULL"), ("lease_expires", "NULL"),
                       ("answered_by", lit(owner)), ("answered_at", lit(stamp)), ("credits", lit(credits)),
                       ("paid_for", lit(paid_for)), *((c.name, f"c.{c.name}") for c in result_columns)]
        # The owner is compared through COALESCE so that no planner reaches the answers rows by the
        # claimed_by index: on a young answers table without statistics PostgreSQL then joined with a
        # filter in a nested loop, and a store of 30,000 answers took 23 s instead of 0.2 s.
        update = self.update_from(answers, "a", assignments,
                                  f"(SELECT * FROM {incoming} WHERE store_no = {lit(store_no)})",
                                  f"a.query_hash = c.query_hash AND COALESCE(a.claimed_by, {lit('')}) = {lit(owner)}")
        return f"{update} RETURNING {self.update_returning}" if self.update_returning else update

    def stored_by(self, answers: str, incoming: str, store_no: int, *, owner: str, stamp: float) -> str:
        """The hashes of one store that it wrote (``answered_by`` and ``answered_at`` are its own):
        read back when some claim was taken over meanwhile."""
        lit = self.literal
        return (f"SELECT a.query_hash FROM {answers} a JOIN {incoming} i ON a.query_hash = i.query_hash "
                f"WHERE i.store_no = {lit(store_no)} AND a.answered_by = {lit(owner)} "
                f"AND a.answered_at = {lit(stamp)}")

    def lock_answers(self, answers: str, chosen: str) -> str | None:
        """A statement that locks the answers rows of the hashes ``chosen`` selects until the
        transaction ends (fix-ups of one query then run one after another), or None where
        the engine serialises the statements that follow anyway."""
        return None

    # The fill ------------------------------------------------------------------------------------------------
    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str:
        """Insert ``select``'s rows into ``table``, replacing rows with the same key."""
        names = ", ".join(columns)
        sets = ", ".join(f"{c} = s.{c}" for c in columns if c != key)
        values = ", ".join(f"s.{c}" for c in columns)
        return (f"MERGE INTO {table} AS t USING ({select}) AS s ON t.{key} = s.{key} "
                f"WHEN MATCHED THEN UPDATE SET {sets} WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})")

    def update_from(self, table: str, alias: str, assignments: Sequence[tuple[str, str]], source: str,
                    condition: str) -> str:
        """``UPDATE table AS alias SET column = expression, ...`` for the rows matching ``source``
        (a derived table ``c``) under ``condition``."""
        sets = ", ".join(f"{column} = {expression}" for column, expression in assignments)
        return f"UPDATE {table} AS {alias} SET {sets} FROM {source} c WHERE {condition}"


class OnConflictDialect(WarehouseDialect):
    """Claims and upserts as ``INSERT ... SELECT ... ON CONFLICT (...) DO UPDATE`` (SQLite,
    PostgreSQL, DuckDB), in place of the base's ``MERGE``.

    ``WHERE 1 = 1`` keeps SQLite from reading ``ON CONFLICT`` as the derived table's join
    constraint; the others ignore it. ``RETURNING`` names the rows a claim took, so the common
    claim (nobody else holds any of its queries) is one statement.

    Example::

        class SqliteDialect(OnConflictDialect): ...
    """

    claim_returning = "query_hash"

    def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
        p = self.placeholder
        return (f"INSERT INTO {answers} AS a (query_hash, lookup, state, claimed_by, lease_expires) "
                f"SELECT c.query_hash, {p}, 'claimed', {p}, {p} FROM ({chosen}) c WHERE 1 = 1 "
                f"ON CONFLICT (query_hash) DO UPDATE SET state = 'claimed', claimed_by = excluded.claimed_by, "
                f"lease_expires = excluded.lease_expires WHERE {reclaimable}")

    def claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                     lookup: str) -> list[Any]:
        return [lookup, owner, lease, *chosen, *reclaimable]

    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str:
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
        return f"INSERT INTO {table} ({', '.join(columns)}) {select} ON CONFLICT ({key}) DO UPDATE SET {sets}"
