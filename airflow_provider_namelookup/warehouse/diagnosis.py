"""Mistakes in what a DAG author wrote, named: the error the source and target raise for them.

When the source cannot be read, a few probes that read no row find out why (the table
does not exist, a column is misspelled, the ``where`` or the ``sql`` does not run:
:func:`~.source.explain_source_error`; :func:`missing_table_or_column` for any table and
columns). The error names the parameter and what was written in it, the nearest names that
exist (:func:`nearest_hint`: the table's columns, or the schema's tables where the warehouse
lists them cheaply), and the warehouse's own words (:func:`warehouse_says`: its first line and
its hint), never SQL the author did not write. Such mistakes fail the task at once, without
Airflow's retries (no retry can fix them); anything else (a lost connection, a lock) is raised
as it was and retried.

Example::

    raise WarehouseInputError(f"name_column 'nmae' is not a column of source_table 'customers'"
                              f"{connection_of(hook)}{nearest_hint('nmae', columns)}: {warehouse_says(err)}")
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


class WarehouseInputError(ValueError):
    """A table operator's parameter names something the warehouse does not have or cannot run."""


def first_line(err: BaseException) -> str:
    """The warehouse's message, first line only (drivers go on with the statement they ran)."""
    text = str(err).strip().splitlines()
    return text[0].strip() if text else type(err).__name__


def warehouse_says(err: BaseException) -> str:
    """The warehouse's message: its first line and the hint it gives (PostgreSQL's ``HINT:``
    line), never the statement it quotes (``LINE 1: ...``, which the author did not write).

    >>> warehouse_says(Exception('column s.frist_name does not exist\\nLINE 1: SELECT s."frist_name" FROM ...\\n'
    ...                          '               ^\\nHINT:  Perhaps you meant to reference the column "s.first_name".'))
    'column s.frist_name does not exist (HINT: Perhaps you meant to reference the column "s.first_name".)'
    """
    lines = [line.strip() for line in str(err).strip().splitlines()]
    hints = [" ".join(line.split()) for line in lines[1:] if line.upper().startswith("HINT:")]
    return first_line(err) + "".join(f" ({hint})" for hint in hints)


def connection_of(hook: Any) -> str:
    """`` on connection '<conn_id>'`` of a warehouse hook, or nothing when it has no connection id."""
    conn_id = getattr(hook, getattr(hook, "conn_name_attr", ""), None)
    return f" on connection {conn_id!r}" if conn_id else ""


def nearest_names(name: str, candidates: Sequence[str], *, count: int = 3) -> list[str]:
    """The names among ``candidates`` closest to a misspelled ``name`` (case aside), best first.

    >>> nearest_names("frist_name", ["customer_id", "first_name", "last_name", "country"])
    ['first_name', 'last_name']
    """
    by_lower = {candidate.lower(): candidate for candidate in candidates}
    return [by_lower[match] for match in difflib.get_close_matches(name.lower(), list(by_lower), n=count, cutoff=0.6)]


def nearest_hint(name: str, candidates: Sequence[str], *, listed: str | None = "its columns", shown: int = 20) -> str:
    """`` (nearest: a, b)`` naming the :func:`nearest_names`; when none is near, `` (<listed>: ...)``
    (the first ``shown`` of ``candidates``), or nothing when ``listed`` is None or there is no candidate.

    >>> nearest_hint("contry", ["id", "country"]), nearest_hint("zzz", ["id", "country"])
    (' (nearest: country)', ' (its columns: id, country)')
    """
    near = nearest_names(name, candidates)
    if near:
        return f" (nearest: {', '.join(near)})"
    if listed is None or not candidates:
        return ""
    more = ", ..." if len(candidates) > shown else ""
    return f" ({listed}: {', '.join(candidates[:shown])}{more})"


@dataclass
class Catalog:
    """What a diagnosis reads of a warehouse, each by a statement that reads no row of the tables:
    ``probe`` runs one and returns the error it raised (None: it ran), ``rows`` returns a statement's
    rows, ``columns`` the column names of a derived table (``(SELECT ...)``), and ``dialect`` spells them."""

    dialect: Any
    probe: Callable[[str], BaseException | None]
    rows: Callable[[str], list[tuple[Any, ...]]]
    columns: Callable[[str], list[str]]

    def table_names(self, table: str) -> list[str]:
        """The tables beside ``table`` (in its schema), or none when the warehouse cannot list them."""
        schema = table.rpartition(".")[0] or None
        sql = self.dialect.table_names(schema)
        try:
            column = self.dialect.engine.listed_name_column
            names = [str(row[column]) for row in self.rows(sql)] if sql else []
        except Exception:
            return []
        return [f"{schema}.{name}" if schema else name for name in names]


def missing_table_or_column(catalog: Catalog, table: str, described: str, where: str,
                            columns: Sequence[tuple[str, str | None]], *,
                            relation: str | None = None) -> WarehouseInputError | None:
    """The first of ``table`` and its ``columns`` (``(parameter, column)``; None: not given) that the
    warehouse does not have, named with the nearest names that exist and the warehouse's own words;
    None when they all read (the cause is elsewhere).

    :param described: how the error calls the table (``source_table 'customers'``).
    :param where: `` on connection '<conn_id>'`` (:func:`connection_of`), or nothing.
    :param relation: the derived table to read the columns of (default: every row of ``table``).
    """
    d = catalog.dialect
    relation = relation or f"({d.select_rows(d.quote(table))})"
    if (failed := catalog.probe(d.no_rows("*", f"{relation} s"))) is not None:
        tables = {name.rpartition(".")[2]: name for name in catalog.table_names(table)}
        near = nearest_hint(table.rpartition(".")[2], list(tables), listed=None)
        for bare, qualified in tables.items():  # named as the author would write them
            near = near.replace(f" {bare}", f" {qualified}") if bare != qualified else near
        return WarehouseInputError(f"{described} cannot be read{where} (does it exist?){near}: "
                                   f"{warehouse_says(failed)}")
    available: list[str] | None = None
    for parameter, column in columns:
        if column and (failed := catalog.probe(d.no_rows(f"s.{d.quote(column)}", f"{relation} s"))):
            available = catalog.columns(relation) if available is None else available
            return WarehouseInputError(f"{parameter} {column!r} is not a column of {described}{where}"
                                       f"{nearest_hint(column, available)}: {warehouse_says(failed)}")
    return None
