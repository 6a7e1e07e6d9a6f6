"""Mistakes in what a DAG author wrote, found and named before anything is spent.

When the source cannot be read, a few probes that read no row find out why: the table
does not exist, a column is misspelled, the ``where`` or the ``sql`` does not run. The
error names the parameter and what was written in it, with the first line of the
warehouse's own message, never SQL the author did not write. Such mistakes fail the task
at once, without Airflow's retries (no retry can fix them); anything else (a lost
connection, a lock) is raised as it was and retried.

Example::

    try:
        session.fetchall(statement)
    except Exception as err:
        raise explain_source_error(session, source, err) from None
    # WarehouseInputError: name_column 'nmae' is not a column of source_table 'customers' on connection
    # 'warehouse': column s.nmae does not exist
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_namelookup.warehouse.session import WarehouseSession
    from airflow_provider_namelookup.warehouse.source import TableSource


class WarehouseInputError(ValueError):
    """A table operator's parameter names something the warehouse does not have or cannot run."""


def first_line(err: BaseException) -> str:
    """The warehouse's message, first line only (drivers go on with the statement they ran)."""
    text = str(err).strip().splitlines()
    return text[0].strip() if text else type(err).__name__


def connection_of(session: WarehouseSession) -> str:
    conn_id = getattr(session.hook, getattr(session.hook, "conn_name_attr", ""), None)
    return f" on connection {conn_id!r}" if conn_id else ""


def explain_source_error(session: WarehouseSession, source: TableSource, err: BaseException) -> BaseException:
    """The named mistake behind ``err`` (a :class:`WarehouseInputError`), or ``err`` itself when
    every part of the source reads fine (then the cause is elsewhere: the network, a lock)."""
    d = session.dialect
    where = connection_of(session)
    base = f"source_table {source.table!r}" if source.table else "the sql query"
    whole = f"SELECT * FROM {d.quote(source.table)}" if source.table else source.sql or ""
    failed = session.probe(d.no_rows("*", f"({whole}) s"))
    if failed is not None:
        if source.table:
            return WarehouseInputError(f"{base} cannot be read{where} (does it exist?): {first_line(failed)}")
        return WarehouseInputError(f"sql does not run{where}: {first_line(failed)}; it was: {source.sql!r}")
    for parameter, column in (("key_column", source.key_column), ("name_column", source.name_column),
                              ("country_column", source.country_column)):
        if column and (failed := session.probe(d.no_rows(f"s.{d.quote(column)}", f"({whole}) s"))) is not None:
            return WarehouseInputError(f"{parameter} {column!r} is not a column of {base}{where}: "
                                       f"{first_line(failed)}")
    if source.where and (failed := session.probe(d.no_rows("*", source.relation(with_params=False) + " s"))):
        return WarehouseInputError(f"where {source.where!r} does not run on {base}{where}: {first_line(failed)}")
    return err


def explain_target_error(session: WarehouseSession, table: str, columns: list[str], err: Any) -> WarehouseInputError:
    """An existing target table that lacks a column the operator writes."""
    return WarehouseInputError(f"target table {table} exists{connection_of(session)} but lacks columns the operator "
                               f"writes ({', '.join(columns)}): {first_line(err)}")
