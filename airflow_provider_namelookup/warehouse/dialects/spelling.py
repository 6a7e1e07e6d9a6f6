"""The spellings every statement of a warehouse is written with: bind markers, literals, quoted
names, column types, casts and equality; and the class attributes that describe the engine.

:class:`Spelling` is the root of the dialect contract (:class:`~.base.WarehouseDialect`): each
group of statements
(:mod:`~airflow_provider_namelookup.warehouse.dialects.reading`,
:mod:`~airflow_provider_namelookup.warehouse.dialects.run_tables`,
:mod:`~airflow_provider_namelookup.warehouse.dialects.claims`,
:mod:`~airflow_provider_namelookup.warehouse.dialects.fill`) builds on
these. Quoting of identifiers and the bind marker come from the hook's common-sql ``Dialect``
(``hook.dialect``, ``hook.placeholder``), which knows them for every engine.

Example::

    dialect = SqliteDialect(SqliteHook("warehouse"))
    dialect.quote("analytics.customers")                 # '"analytics"."customers"'
    dialect.literal("O'Neil"), dialect.marks(2)          # "'O''Neil'", '?, ?'
    dialect.null_safe_equal("t.country", "s.country")    # 't.country IS s.country'
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlglot import exp

from airflow_provider_namelookup.warehouse.dialects.engine_traits import EngineTraits
from airflow_provider_namelookup.warehouse.dialects.traits import DriverErrors, Tuning
from airflow_provider_namelookup.warehouse.dialects.where_spelling import WhereSpelling
from airflow_provider_namelookup.warehouse.schema import Column

PROOFS = ("real engine", "emulator", "parsed only")
"""The values :attr:`Spelling.proof` may take."""
COLUMN_KINDS = ("text", "longtext", "float", "int", "bigint", "timestamp")
"""The kinds of column the engine's tables have (:mod:`~airflow_provider_namelookup.warehouse.schema`):
:attr:`Spelling.types` names the engine's type of each."""


def column_types(**types: str) -> dict[str, str]:
    """A dialect's :attr:`Spelling.types`: the engine's type of each of :data:`COLUMN_KINDS`, by name.

    >>> column_types(text="TEXT", longtext="TEXT", float="REAL", int="INTEGER", bigint="INTEGER",
    ...              timestamp="TEXT")["float"]
    'REAL'
    """
    if sorted(types) != sorted(COLUMN_KINDS):
        raise TypeError(f"column_types takes exactly {', '.join(COLUMN_KINDS)}; got {', '.join(types)}")
    return types


class Spelling:
    """How one warehouse spells values, names and types; and, as class attributes, what the
    engine needs to know of it (see :mod:`~airflow_provider_namelookup.warehouse.dialects.base` for
    which of them a dialect must write).

    :param hook: the warehouse's common-sql ``DbApiHook`` (or any object with ``placeholder``,
        ``dialect.escape_word`` and ``get_conn``: see
        :class:`~airflow_provider_namelookup.testing.compliance.DbApiConnectionHook`).
    """

    name: ClassVar[str] = "ansi"
    """The engine's name in messages and in the docs' table of warehouses (its module's name)."""
    sqlglot_name: ClassVar[str | None] = None
    """sqlglot's name of the engine's SQL, when it is not :attr:`name` (a ``where`` is parsed in it)."""
    engine: ClassVar[EngineTraits] = EngineTraits()
    """What the engine and its driver do that changes how a run works with them (:class:`~.engine_traits.EngineTraits`:
    its keys, claims, ``RETURNING``, bulk loads, temporary tables; the defaults, and what each promises)."""
    where: ClassVar[WhereSpelling] = WhereSpelling()
    """What a ``where`` may call and write on this engine, and the engine's settings that read text
    otherwise (:class:`~.where_spelling.WhereSpelling`)."""
    credit_promise: ClassVar[str] = ""
    """How the engine's transactions and locks keep credits = distinct valid queries."""
    proof: ClassVar[str] = "real engine"
    """How this release's tests run the module's SQL: ``real engine``, ``emulator`` (another engine
    that speaks its SQL), or ``parsed only`` (every statement of recorded runs parsed in its dialect:
    a run logs a warning that its SQL has not been run on the warehouse by the tests)."""

    types: ClassVar[dict[str, str]] = {"text": "VARCHAR({n})", "longtext": "VARCHAR(65535)",
                                       "float": "DOUBLE PRECISION", "int": "INTEGER", "bigint": "BIGINT",
                                       "timestamp": "TIMESTAMP"}
    """The engine's type of each of :data:`COLUMN_KINDS` (``{n}``: a text column's length)."""
    errors: ClassVar[DriverErrors] = DriverErrors()
    """How the driver's errors are told apart."""
    tuning: ClassVar[Tuning] = Tuning()
    """How often answers are stored, and how lock conflicts are retried."""

    def __init__(self, hook: Any) -> None:
        self.hook = hook


    # Bind markers and the DAG author's SQL ------------------------------------------------------------
    @property
    def placeholder(self) -> str:
        return str(self.hook.placeholder)

    @property
    def _percent_escaped(self) -> bool:
        """The driver formats statements with ``%`` when given parameters (psycopg, mysqlclient),
        so a literal ``%`` must travel as ``%%`` then."""
        return "%" in self.placeholder

    def user_sql(self, text: str, *, with_params: bool) -> str:
        """A DAG author's SQL text as it must be written into a statement (``customer_id % 8 = 3``
        travels as ``customer_id %% 8 = 3`` to drivers that read ``%`` as a marker)."""
        return text.replace("%", "%%") if with_params and self._percent_escaped else text

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

    @classmethod
    def where_string(cls, value: str) -> str:
        """A string of a ``where`` as it is sent, written so that every setting of the engine reads
        ``value`` (:mod:`.where_literals`); sqlglot's spelling of the engine's string, by default.

        :raises ~.where_literals.UnwritableString: the engine has no spelling every setting reads the same.
        """
        if "'" not in value and "\\" not in value and value.isprintable():
            return f"'{value}'"  # what sqlglot writes of it on every engine, without building a generator
        return exp.Literal.string(value).sql(dialect=cls.sqlglot_name or cls.name)

    # Names and types ----------------------------------------------------------------------------------------
    def quote(self, name: str) -> str:
        """A checked identifier (``table`` or ``schema.table``) quoted as the engine needs."""
        return ".".join(self.hook.dialect.escape_word(part) for part in name.split("."))

    def _column_type(self, column: Column) -> str:
        return self.types[column.kind].format(n=column.length)

    def cast(self, expression: str, column: Column) -> str:
        """``expression`` as a value of the column's type, for ``CREATE TABLE ... AS SELECT``."""
        return f"CAST({expression} AS {self._column_type(column)})"

    def nullable_like(self, expression: str) -> str:
        """An expression of ``expression``'s type that a ``CREATE TABLE ... AS`` makes a nullable
        column of (a plain column would carry its NOT NULL along, on MySQL).

        Example: ``CASE WHEN 1 = 0 THEN s."customer_id" END`` (H2 folds that to a column of no type,
        and writes ``CASE WHEN s."customer_id" IS NULL THEN s."customer_id" END``)."""
        return f"CASE WHEN 1 = 0 THEN {expression} END"

    def cast_null(self, column: Column) -> str:
        """A NULL of the column's type."""
        return self.cast("NULL", column)

    def timestamp(self, moment: datetime) -> Any:
        """``enriched_at`` as the driver takes it: an aware UTC datetime, or a naive one where
        ``engine.naive_timestamps`` says so."""
        return moment.replace(tzinfo=None) if self.engine.naive_timestamps else moment

    # Equality on raw values --------------------------------------------------------------------------
    def exact_equal(self, left: str, right: str) -> str:
        """Equality that tells apart values differing by case or accents (José, Jose): on their
        bytes, where ``engine.compares_bytes_as`` names their type (the plain ``=`` first, which an index serves)."""
        if self.engine.compares_bytes_as:
            t = self.engine.compares_bytes_as
            return f"{left} = {right} AND CAST({left} AS {t}) = CAST({right} AS {t})"
        return f"{left} = {right}"

    def null_safe_equal(self, left: str, right: str) -> str:
        """Equality where NULL equals NULL, exact."""
        return f"{left} IS NOT DISTINCT FROM {right}"
