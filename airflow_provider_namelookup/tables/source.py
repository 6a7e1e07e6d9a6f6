"""The source of a table operator: a table or a SELECT, optionally filtered by ``where``.

Rows stay in the warehouse: the engine asks for the source's *distinct* raw values
(one GROUP BY, joined to the target for the hash each row was enriched with), and later
fills the target with one set-based statement that reads the source again. The key
must be unique and not null (a primary key). The DAG author's ``sql`` and ``where`` are
run as written on every supported database (a ``%`` is escaped for drivers that would
read it as a bind marker).

Example::

    source = TableSource(session, table="customers", key_column="customer_id",
                         name_column="first_name", country_column="country", where="customer_id % 8 = 3")
    for batch in source.distinct_values(target, joined=True):
        for name, country, enriched_hash, rows, first_key in batch: ...
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from airflow_provider_namelookup.tables.identifiers import check_identifier, quote
from airflow_provider_namelookup.tables.session import WarehouseSession
from airflow_provider_namelookup.tables.target import TargetTable

DistinctValue = tuple[Any, Any, Any, int, Any]
"""``(name, country or None, query hash its rows have in the target or None, row count, lowest key)``"""


class TableSource:
    """Rows to enrich: a table (or a SELECT), optionally filtered.

    :param session: the run's warehouse session (methods run on its thread).
    :param table: source table (``table`` or ``schema.table``); or give ``sql``.
    :param sql: a SELECT whose columns include the key, name and country columns.
    :param key_column: unique, non-null key.
    :param name_column: the name (first name, full name or e-mail).
    :param country_column: optional per-row country hint.
    :param where: optional SQL filter on the source's columns (the DAG author's SQL).
    """

    def __init__(self, session: WarehouseSession, *, table: str | None = None, sql: str | None = None, key_column: str,
                 name_column: str, country_column: str | None = None, where: str | None = None) -> None:
        if (table is None) == (sql is None):
            raise ValueError("give exactly one of source_table and sql")
        self.session = session
        self.table = check_identifier(table, "source_table", qualified=True) if table else None
        self.sql = sql.strip().rstrip(";") if sql else None
        self.key_column = check_identifier(key_column, "key_column")
        self.name_column = check_identifier(name_column, "name_column")
        self.country_column = check_identifier(country_column, "country_column") if country_column else None
        self.where = where.strip() if where and where.strip() else None

    def on(self, session: WarehouseSession) -> TableSource:
        """The same source, read through another session (another connection)."""
        other = copy.copy(self)
        other.session = session
        return other

    @property
    def label(self) -> str:
        return self.table or "(sql)"

    def _q(self, name: str) -> str:
        return quote(self.session.hook, name)

    def relation(self, *, with_params: bool) -> str:
        """The filtered source as a derived table, so ``where`` never meets the target's columns.

        :param with_params: the statement it goes into passes bind parameters (a literal
            ``%`` in the DAG author's SQL is then escaped for format-style drivers).
        """
        dialect = self.session.dialect
        base = (f"SELECT * FROM {self._q(self.table)}" if self.table
                else dialect.user_sql(self.sql or "", with_params=with_params))
        if self.where:
            base = f"SELECT * FROM ({base}) src WHERE {dialect.user_sql(self.where, with_params=with_params)}"
        return f"({base})"

    @property
    def name_expr(self) -> str:
        return f"s.{self._q(self.name_column)}"

    @property
    def country_expr(self) -> str | None:
        return f"s.{self._q(self.country_column)}" if self.country_column else None

    def peek_key(self) -> Any:
        """One key of the source (None when it is empty), to type the target's key column."""
        rows = self.session.fetchall(
            f"SELECT {self._q(self.key_column)} FROM {self.relation(with_params=False)} s LIMIT 1")
        return rows[0][0] if rows else None

    def count_rows(self) -> int:
        """How many rows the source has (a bound on its distinct queries)."""
        return int(self.session.fetchall(f"SELECT COUNT(*) FROM {self.relation(with_params=False)} s")[0][0])

    def distinct_values(self, target: TargetTable, *, joined: bool, stale_before: Any = None,
                        batch_size: int = 10_000) -> Iterator[list[DistinctValue]]:
        """Yield the source's distinct ``(name, country, hash in the target, rows, lowest key)``, in batches.

        The warehouse does the row work: one GROUP BY over the source left-joined to the
        target, so Python only sees each distinct raw value (with the hash its rows were
        enriched with; rows of one value enriched differently come as separate entries).

        :param joined: read the hashes from the target (False when it does not exist yet).
        :param stale_before: with ``max_age``: rows enriched before this moment count as not
            enriched (their hash is read as NULL).
        """
        dialect = self.session.dialect
        mysql = dialect.name == "mysql"
        name, country = self.name_expr, self.country_expr or "NULL"
        params: list[Any] = []
        if joined:
            stored = f"t.{self._q('query_hash')}"
            if stale_before is not None:
                stored = (f"CASE WHEN t.{self._q('enriched_at')} < {dialect.placeholder} THEN NULL "
                          f"ELSE {stored} END")
                params += [stale_before] * (2 if mysql else 1)  # MySQL repeats it in its GROUP BY
            join = (f"LEFT JOIN {target.quoted} t ON t.{self._q(target.key_column)} = "
                    f"s.{self._q(self.key_column)}")
        else:
            stored, join = "NULL", ""
        slots = [name, country if self.country_column else None, stored if joined else None]
        grouped = [(position, e) for position, e in enumerate(slots, start=1) if e is not None]
        if mysql:
            # MySQL's collations fold case and accents: group on the bytes, and read each group's
            # value back through MIN (every value of a group is the same).
            columns = [f"MIN({e})" if e is not None else "NULL" for e in slots]
            groups = [dialect.exact_group(e) if e != stored else e for _, e in grouped]
        else:
            columns = [e if e is not None else "NULL" for e in slots]
            groups = [str(position) for position, _ in grouped]
        select = (f"SELECT {', '.join(columns)}, COUNT(*), MIN(s.{self._q(self.key_column)}) "
                  f"FROM {self.relation(with_params=bool(params))} s {join} GROUP BY {', '.join(groups)}")
        yield from self.session.stream(select, params, batch_size)
