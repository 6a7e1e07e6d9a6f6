"""The source of a table run: a table or a SELECT, optionally filtered by ``where``.

Rows stay in the warehouse: the run asks for the source's *distinct* raw values of the
rows that need an answer (one ``GROUP BY``; rows whose target row was enriched from the
same raw values and settings are left out by an anti-join on the key), and later the
target is filled by a set-based statement that reads the source again. The key must be
unique and not null. The DAG author's ``sql`` and ``where`` run as written on every
supported warehouse (a ``%`` is escaped for drivers that would read it as a bind marker).

Example::

    source = TableSource(dialect, table="customers", key_column="customer_id", name_column="first_name",
                         country_column="country", where="customer_id % 8 = 3")
    questions = TableQuestions(session, source, rules, target)
    if await questions.prepare():
        async for page in questions.pages(): ...
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Collection, Iterator
from dataclasses import InitVar, dataclass, field
from typing import Any, Protocol

from airflow_provider_namelookup.engine.plan import QueryRules, build_query_object
from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.warehouse.diagnosis import (
    Catalog,
    WarehouseInputError,
    connection_of,
    first_line,
    missing_table_or_column,
    warehouse_says,
)
from airflow_provider_namelookup.warehouse.dialects import Names, Unchanged, WarehouseDialect
from airflow_provider_namelookup.warehouse.identifiers import check_identifier
from airflow_provider_namelookup.warehouse.schema import SOURCE_COUNTRY, SOURCE_NAME
from airflow_provider_namelookup.warehouse.select_text import checked_select
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.where_clause import (
    CheckedWhere,
    check_where_columns,
    checked_where,
    filtered,
    sqlglot_dialect,
    without_values,
)


class ComparedTarget(Protocol):
    """The target a source's rows are compared with: whether it can be joined, and its name."""

    joinable: bool
    quoted: str


@dataclass(frozen=True)
class TableSource:
    """Rows to enrich: a table (or a SELECT), optionally filtered.

    :param dialect: the warehouse's dialect (quoting, ``%`` escaping).
    :param table: source table (``table`` or ``schema.table``); or give ``sql``.
    :param sql: a SELECT whose columns include the key, name and country columns.
    :param key_column: unique, non-null key.
    :param name_column: the name (first name, full name or e-mail).
    :param country_column: optional per-row country hint.
    :param last_name_column: optional last name, looked up with the first name in ``name_column`` as
        one full name (:func:`~airflow_provider_namelookup.engine.plan.build_query_object`).
    :param where: optional filter on the source's columns, checked by
        :func:`~airflow_provider_namelookup.warehouse.where_clause.checked_where` (what runs is
        :attr:`checked`).
    :param secrets: the service connection's token: a ``where`` or ``sql`` holding it is refused
        unquoted (not kept).
    """

    dialect: WarehouseDialect
    key_column: str
    name_column: str
    table: str | None = None
    sql: str | None = None
    country_column: str | None = None
    where: str | None = None
    last_name_column: str | None = None
    checked: CheckedWhere | None = field(init=False, default=None)
    secrets: InitVar[Collection[str]] = ()

    def __post_init__(self, secrets: Collection[str]) -> None:
        if (self.table is None) == (self.sql is None):
            raise ValueError("give exactly one of source_table and sql")
        if self.table:
            check_identifier(self.table, "source_table", qualified=True)
        check_identifier(self.key_column, "key_column")
        check_identifier(self.name_column, "name_column")
        if self.country_column:
            check_identifier(self.country_column, "country_column")
        if self.last_name_column:
            check_identifier(self.last_name_column, "last_name_column")
        if self.sql is not None:
            object.__setattr__(self, "sql", checked_select(self.sql, sqlglot_dialect(self.dialect), secrets=secrets))
        object.__setattr__(self, "checked", checked_where(self.where, self.dialect, secrets=secrets))
        object.__setattr__(self, "where", self.checked.written if self.checked else None)

    @property
    def label(self) -> str:
        return self.table or "(sql)"

    @property
    def described(self) -> str:
        """The source as messages name it."""
        return f"source_table {self.table!r}" if self.table else "the sql query"

    def relation(self, *, with_params: bool) -> str:
        """The filtered source as a derived table, so ``where`` never meets another table's columns.

        :param with_params: the statement it goes into passes bind parameters (a literal
            ``%`` in the DAG author's SQL is then escaped for format-style drivers).
        """
        d = self.dialect
        base = d.select_rows(d.quote(self.table)) if self.table else d.user_sql(f"{self.sql}\n",
                                                                                 with_params=with_params)
        checked = self.checked and CheckedWhere(d.user_sql(self.checked.sql, with_params=with_params),
                                                self.checked.columns, self.checked.written)
        return f"({filtered(base, checked)})"

    def unfiltered(self) -> str:
        """The source before ``where``, as a derived table (its columns are what a filter may read)."""
        d = self.dialect
        return f"({d.select_rows(d.quote(self.table)) if self.table else f'{self.sql}{chr(10)}'})"

    def names(self, *, with_params: bool) -> Names:
        q = self.dialect.quote
        return Names(relation=self.relation(with_params=with_params), key_column=q(self.key_column),
                     key=f"s.{q(self.key_column)}", name=f"s.{q(self.name_column)}",
                     country=f"s.{q(self.country_column)}" if self.country_column else None,
                     last_name=f"s.{q(self.last_name_column)}" if self.last_name_column else None)


@dataclass
class FirstRow:
    """The source's first row's key, as :meth:`TableQuestions.prepare` read it: a target made like
    the source types its key after it (given to both at construction)."""

    key: Any = None


class TableQuestions:
    """The distinct values of a source's rows that need an answer, page by page.

    :param session: the run's warehouse session.
    :param source: what to read.
    :param rules: how values become queries (its fingerprint marks a target row's settings).
    :param target: the target the rows are compared with (read only when it exists).
    :param page_size: distinct values fetched at a time.
    :param stale_rows_before: with ``max_age``: target rows enriched before this count as changed.
    :param first_row: where the source's first key is put when it is read.
    """

    reads_pages = True

    def __init__(self, session: WarehouseSession, source: TableSource, rules: QueryRules, target: ComparedTarget, *,
                 page_size: int = 10_000, stale_rows_before: Any = None,
                 first_row: FirstRow | None = None) -> None:
        self.session = session
        self.source = source
        self.rules = rules
        self.target = target
        self.page_size = page_size
        self.stale_rows_before = stale_rows_before
        self.label = source.label
        self.reads_while_writing = session.dialect.engine.reads_while_writing
        self.asks_while_reading = session.dialect.tuning.asks_while_reading
        self.total_rows = 0
        self.distinct_bound: int | None = None
        self.first_row = first_row or FirstRow()

    async def prepare(self) -> bool:
        """Read one row: a mistake in the source (a missing table or column, a ``where`` that
        does not parse) fails here, named, before anything is created or spent."""
        return bool(await self.session.run(self._first_row))

    def _first_row(self) -> bool:
        s, q = self.source, self.session.dialect.quote
        columns = ", ".join(f"s.{q(c)}" for c in (s.key_column, s.name_column, s.last_name_column, s.country_column)
                            if c)
        self.session.conn  # noqa: B018 - a connection that fails fails as itself, not as a source mistake
        try:
            if s.checked is not None:
                check_where_columns(s.checked, self.session.column_names(s.unfiltered()), s.described)
            rows = self.session.fetchall(self.session.dialect.first_row(columns, s.relation(with_params=False)))
        except WarehouseInputError:
            raise
        except Exception as err:
            raise explain_source_error(self.session, s, err) from None
        if rows:
            self.first_row.key = rows[0][0]
        return bool(rows)

    def _unchanged(self, names: Names) -> Unchanged | None:
        """When source row ``s`` is unchanged since target row ``t`` was written (the engine's own
        values as literals: the statement binds nothing, so that engines may run it as
        ``CREATE TABLE ... AS``)."""
        if not self.target.joinable or self.rules.identity_key is not None:
            # a pseudonymised target keeps no raw value to compare with: every row is read, and the
            # fill rewrites only those whose pseudonyms, settings or age differ
            return None
        d, t = self.session.dialect, "t"
        conditions = [f"{t}.{names.key_column} = {names.key}",
                      *(d.null_safe_equal(f"{t}.{column}", expression) for expression, column in names.raw_columns()),
                      f"{t}.query_spec = {d.literal(self.rules.fingerprint)}"]
        if self.stale_rows_before is not None:
            conditions.append(f"{t}.enriched_at >= {d.literal(self.stale_rows_before)}")
        return Unchanged(self.target.quoted, " AND ".join(conditions), matched=f"{t}.query_spec")

    def _statement(self) -> str:
        names = self.source.names(with_params=False)  # nothing bound: the DAG author's % is sent as written
        return self.session.dialect.distinct_values(names, self._unchanged(names), self.first_row.key)

    def _rows(self, reader: WarehouseSession) -> Iterator[list[tuple[Any, ...]]]:
        try:
            yield from reader.stream(self._statement(), self.page_size)
        except Exception as err:
            raise explain_source_error(reader, self.source, err) from None

    async def pages(self, *, own_connection: bool = False) -> AsyncGenerator[list[SourceValue]]:
        """Distinct ``(name, country)`` values with their row count and lowest key, page by page;
        :attr:`distinct_bound` is set with the first page, the source's row count lands in
        :attr:`total_rows` at the end.

        :param own_connection: read page by page on a second connection (its statements count for
            the run's session), so that the run may write between pages; else everything is read
            first, and the pages come from memory (the run's session is then free to write
            between them).
        """
        if not own_connection:
            batches = await self.session.run(lambda: list(self._rows(self.session)))
            for batch in batches:
                if values := self._values(batch):
                    yield values
            return
        reader = self.session.sibling()
        try:
            rows = self._rows(reader)
            while (batch := await reader.run(next, rows, None)) is not None:
                if values := self._values(batch):
                    yield values
        finally:
            await asyncio.get_running_loop().run_in_executor(None, reader.shutdown)
            self.session.count_sibling(reader)

    def _values(self, batch: list[tuple[Any, ...]]) -> list[SourceValue]:
        """Each distinct value as the run plans it; its ``ref`` is its raw ``(name, country, last name)``."""
        country = self.source.country_column is not None
        values = []
        for total, name, raw_country, count, first_key, distinct, *last in batch:
            if total:
                self.total_rows = int(count)
                continue
            if self.distinct_bound is None:
                self.distinct_bound = int(distinct)
            last_name = last[0] if last else None
            ref = (name, raw_country, last_name)
            try:
                raw = build_query_object(name, self.rules, country=raw_country if country else None,
                                         last_name=last_name)
            except NameLookupValidationError as refusal:  # a last name that is not text
                values.append(SourceValue(ref, None, refusal, rows=int(count), first_key=first_key, shown=name))
                continue
            values.append(SourceValue(ref, raw, rows=int(count), first_key=first_key, shown=name))
        return values


def explain_source_error(session: WarehouseSession, source: TableSource, err: BaseException) -> BaseException:
    """The named mistake behind ``err`` (a :class:`WarehouseInputError`), or ``err`` itself when
    every part of the source reads fine (then the cause is elsewhere: the network, a lock).

    A ``where`` that fails while it runs (a cast of a value that is no number, say) is named
    without the values the warehouse quoted: they may come from rows whoever chose the filter
    may not read."""
    d = session.dialect
    where = connection_of(session.hook)
    base = source.described
    if not source.table and (failed := session.probe(d.no_rows("*", f"{source.unfiltered()} s"))) is not None:
        return WarehouseInputError(f"sql does not run{where}: {warehouse_says(failed)}; it was: {source.sql!r}")
    catalog = Catalog(d, session.probe, session.fetchall, session.column_names)
    columns = (("key_column", source.key_column), ("name_column", source.name_column),
               ("last_name_column", source.last_name_column), ("country_column", source.country_column))
    if missing := missing_table_or_column(catalog, source.table or "", base, where, columns,
                                          relation=source.unfiltered()):
        return missing
    counted = d.select_rows(f"{source.relation(with_params=False)} s", count=True)
    if source.checked is not None and (failed := session.probe(counted)):
        return WarehouseInputError(f"where {source.where!r} fails on {base}{where}: "
                                   f"{without_values(first_line(failed))}")
    return err


__all__ = ["SOURCE_COUNTRY", "SOURCE_NAME", "FirstRow", "TableQuestions", "TableSource", "WarehouseInputError"]
