"""Rows to evaluate, read from a warehouse: the labels of a source table beside the genders its
enrichment wrote.

Two ways to say where they are:

* **source and target**: the source table holds the key, the label and (optionally) the
  grouping column; the target (``<source>_gender`` by default) is the table
  :class:`~airflow_provider_namelookup.operators.SqlGenderLookupOperator` wrote. Every source
  row is read (a ``LEFT JOIN``): a row the enrichment has not answered yet, or whose lookup
  failed (``status = 'error'``), comes with no gender and is counted as not answered. A
  ``where`` filters the source only (it is applied in a subquery, so its column names are
  the source's);
* **sql**: any SELECT whose columns are named ``label``, ``gender``, ``probability`` and
  optionally ``samples``, ``status`` and the grouping column.

Names are checked identifiers (letters, digits, ``_``; ``schema.table`` for tables) quoted
by the hook's dialect when needed. ``where`` takes the provider's one checked path
(:mod:`~airflow_provider_namelookup.warehouse.where_clause`: the source's own columns,
literals, operators and a short list of pure functions); ``sql`` is the DAG author's own
query, checked to be one query that only reads
(:mod:`~airflow_provider_namelookup.warehouse.select_text`).

Example::

    >>> spec = TableEvaluationSource(source_table="customers", key_column="customer_id",
    ...                              label_column="true_gender", group_column="country", where="country <> 'XX'")
    >>> from airflow_provider_namelookup.warehouse.dialects.sqlite import SqliteDialect
    >>> print(spec.select(SqliteDialect, quote=str))
    SELECT s.true_gender, t.gender, t.probability, t.samples, t.status, s.country
    FROM (SELECT * FROM (SELECT * FROM customers) src WHERE "country" <> 'XX') s
    LEFT JOIN customers_gender t ON t.customer_id = s.customer_id
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_namelookup.warehouse.diagnosis import (
    Catalog,
    WarehouseInputError,
    connection_of,
    first_line,
    missing_table_or_column,
)
from airflow_provider_namelookup.warehouse.dialects import (
    WarehouseDialect,
    connect,
    dialect_for,
    engine_of,
    warehouse_of,
)
from airflow_provider_namelookup.warehouse.identifiers import check_identifier
from airflow_provider_namelookup.warehouse.select_text import checked_select
from airflow_provider_namelookup.warehouse.where_clause import (
    check_where_columns,
    checked_where,
    filtered,
    sqlglot_dialect,
    without_values,
)

FETCH_SIZE = 10_000
TARGET_COLUMNS = ("gender", "probability", "samples", "status")
"""The columns of the enrichment's target an evaluation reads."""
STATUS_ERROR = "error"
"""The ``status`` of a target row whose lookup failed (the engine's bookkeeping column)."""


@dataclass(frozen=True)
class TableEvaluationSource:
    """Where the labels and the answers are (see the module's docstring)."""

    source_table: str | None = None
    key_column: str | None = None
    label_column: str = "label"
    target_table: str | None = None
    group_column: str | None = None
    where: str | None = None
    sql: str | None = None
    secrets: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    """The service connection's token: a ``where`` or ``sql`` holding it is refused unquoted."""

    def __post_init__(self) -> None:
        if (self.source_table is None) == (self.sql is None):
            raise ValueError("give exactly one of source_table (with key_column and label_column) and sql")
        if self.group_column is not None:
            check_identifier(self.group_column, "group_column")
        if self.sql is not None:
            if self.where:
                raise ValueError("where filters source_table; put the filter in the sql instead")
            return
        check_identifier(self.source_table, "source_table", qualified=True)
        check_identifier(self.target, "target_table", qualified=True)
        if self.key_column is None:
            raise ValueError("key_column is required with source_table: it joins the source to its target")
        check_identifier(self.key_column, "key_column")
        check_identifier(self.label_column, "label_column")

    @property
    def target(self) -> str:
        return self.target_table or f"{self.source_table}_gender"

    @property
    def label(self) -> str:
        """What the report calls the rows' origin."""
        if self.sql is not None:
            return "sql"
        return f"{self.source_table} LEFT JOIN {self.target}" + (f" WHERE {self.where}" if self.where else "")

    def select(self, dialect: WarehouseDialect | type[WarehouseDialect], quote: Callable[[str], str]) -> str:
        """The SELECT of the source-and-target way: the source filtered by the checked ``where``
        (:func:`~airflow_provider_namelookup.warehouse.where_clause.filtered`, the provider's one
        way of filtering), joined to the target. ``quote`` quotes one identifier, ``schema.name`` too."""
        assert self.source_table is not None and self.key_column is not None
        key, label = quote(self.key_column), quote(self.label_column)
        group = f", s.{quote(self.group_column)}" if self.group_column else ""
        source = filtered(f"SELECT * FROM {quote(self.source_table)}",
                          checked_where(self.where, dialect, secrets=self.secrets))
        return (f"SELECT s.{label}, t.gender, t.probability, t.samples, t.status{group}\n"
                f"FROM ({source}) s\n"
                f"LEFT JOIN {quote(self.target)} t ON t.{key} = s.{key}")

    def rows(self, hook: Any) -> Generator[dict[str, Any], None, None]:
        """Rows for :func:`~airflow_provider_namelookup.evaluation.evaluate` (``group`` holds the
        grouping value), read through a common-sql ``DbApiHook`` ``FETCH_SIZE`` rows at a time."""
        if self.sql is not None:
            yield from self._rows_of_sql(hook)
            return
        dialect = dialect_for(hook)
        if (checked := checked_where(self.where, dialect, secrets=self.secrets)) is not None:
            assert self.source_table is not None
            source = f"SELECT * FROM {dialect.quote(self.source_table)}"
            check_where_columns(checked, _column_names(hook, dialect.no_rows("*", f"({source}) s")),
                                f"source_table {self.source_table!r}")
        try:
            for values in _fetch(hook, self.select(dialect, dialect.quote)):
                label, gender, probability, samples, status, *group = values
                yield _row(label, gender, probability, samples, status, group[0] if group else None)
        except Exception:
            if (missing := self.missing_name(hook, dialect)) is not None:
                raise missing from None
            if checked is None:
                raise
            source = filtered(f"SELECT * FROM {dialect.quote(self.source_table or '')}", checked)
            try:
                _column_names(hook, f"SELECT COUNT(*) FROM ({source}) s")
            except Exception as failed:
                raise WarehouseInputError(f"where {self.where!r} fails on source_table {self.source_table!r}: "
                                          f"{without_values(first_line(failed))}") from None
            raise

    def missing_name(self, hook: Any, dialect: WarehouseDialect) -> WarehouseInputError | None:
        """The table or column of the source or the target the warehouse does not have, named with
        the nearest ones that exist (None: they all read)."""
        assert self.source_table is not None
        catalog = Catalog(dialect, lambda sql: _fails(hook, sql), lambda sql: list(_fetch(hook, sql)),
                          lambda relation: _column_names(hook, dialect.no_rows("*", f"{relation} s")))
        where = connection_of(hook)
        return missing_table_or_column(
            catalog, self.source_table, f"source_table {self.source_table!r}", where,
            [("key_column", self.key_column), ("label_column", self.label_column),
             ("group_column", self.group_column)]) or missing_table_or_column(
            catalog, self.target, f"target_table {self.target!r} (the enrichment's)", where,
            [("key_column", self.key_column), *((f"its {c} column", c) for c in TARGET_COLUMNS)])

    def _rows_of_sql(self, hook: Any) -> Iterator[dict[str, Any]]:
        warehouse = warehouse_of(engine_of(hook))
        sql = checked_select(self.sql, sqlglot_dialect(warehouse.dialect_class()) if warehouse else None,
                             secrets=self.secrets)
        columns: list[str] = []
        for values in _fetch(hook, sql, columns):
            named = dict(zip(columns, values, strict=True))
            yield _row(named.get("label"), named.get("gender"), named.get("probability"), named.get("samples"),
                       named.get("status"), named.get(self.group_column.lower()) if self.group_column else None)


def _row(label: Any, gender: Any, probability: Any, samples: Any, status: Any, group: Any) -> dict[str, Any]:
    if status == STATUS_ERROR:
        gender = None
    return {"label": label, "gender": gender, "probability": probability, "samples": samples, "group": group}


def _fails(hook: Any, sql: str) -> Exception | None:
    """The error ``sql`` raises, or None."""
    try:
        list(_fetch(hook, sql))
    except Exception as err:
        return err
    return None


def _column_names(hook: Any, sql: str) -> list[str]:
    """The column names of a query that reads no row."""
    conn = connect(hook)
    try:
        cursor = conn.cursor()
        try:
            cursor.execute(sql)
            cursor.fetchall()
            return [str(d[0]) for d in cursor.description or ()]
        finally:
            cursor.close()
    finally:
        conn.close()


def _fetch(hook: Any, sql: str, columns: list[str] | None = None) -> Iterator[tuple[Any, ...]]:
    """Rows of ``sql``; fills ``columns`` with the result's lower-cased column names."""
    conn = connect(hook)
    try:
        cursor = conn.cursor()
        try:
            cursor.execute(sql)
            if columns is not None:
                columns.extend(str(d[0]).lower() for d in cursor.description)
                if missing := [c for c in ("label", "gender", "probability") if c not in columns]:
                    raise ValueError(f"sql must return columns named label, gender and probability (and "
                                     f"optionally samples, status and the group column); missing: "
                                     f"{', '.join(missing)}")
            while batch := cursor.fetchmany(FETCH_SIZE):
                yield from (tuple(values) for values in batch)
        finally:
            cursor.close()
    finally:
        conn.close()
