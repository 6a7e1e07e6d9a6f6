"""SQL Server and Azure SQL (``apache-airflow-providers-microsoft-mssql``, pymssql or pyodbc).

What differs from the base: ``#temp`` tables (private to the session), made with
``SELECT ... INTO``; ``TOP 1`` instead of ``LIMIT``; ``MERGE`` claims and fills under
``HOLDLOCK`` and ended by ``;`` (SQL Server's rule); ``UPDATE alias SET ... FROM table alias
JOIN ...``; Unicode literals (``N'...'``); bulk loads as one statement binding one JSON
document, read by ``OPENJSON`` (SQL Server 2016+; ``executemany`` sends a statement per
row, and a statement binds at most 2,100 parameters); raw values compared and grouped on
their bytes, since the default collations fold case (``Anna`` = ``ANNA``); naive UTC
``DATETIME2``.

Credits: a claim is one ``MERGE ... WITH (HOLDLOCK)`` into the answers table: the
serialisable range lock it holds until it commits makes a second run's ``MERGE`` of the
same query wait and then find it claimed (without ``HOLDLOCK``, two ``MERGE`` statements
may both insert). A deadlock SQL Server breaks by choosing a victim (error 1205) is run
again. Fix-ups of one query's price take ``UPDLOCK`` on its answers row.

Example::

    dialect = MsSqlDialect(MsSqlHook("warehouse"))
    dialect.first_row("s.customer_id", "(SELECT * FROM customers)")   # 'SELECT TOP 1 s.customer_id FROM ...'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlglot import exp
from sqlglot.dialects.tsql import TSQL

from airflow_provider_namelookup.warehouse.dialects.base import (
    BulkLoad,
    DriverErrors,
    EngineTraits,
    Names,
    WarehouseDialect,
    WhereSpelling,
    cloud_tuning,
)
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types
from airflow_provider_namelookup.warehouse.dialects.where_literals import (
    UnwritableString,
    quotes_as,
)
from airflow_provider_namelookup.warehouse.schema import Column

_CASTS = {"bool": "BIT", "int": "BIGINT", "float": "FLOAT", "decimal": "DECIMAL(38, 10)", "datetime": "DATETIME2",
          "date": "DATE"}
_BYTES = "VARBINARY(8000)"


class MsSqlDialect(WarehouseDialect, name="mssql", sqlglot_name="tsql", proof="parsed only",
                   credit_promise=("a claim is one MERGE WITH (HOLDLOCK) into the answers table: its "
                                   "range lock makes a second run's claim of a query wait and find it"
                                   " held; deadlock victims are run again")):
    """The spellings of SQL Server and Azure SQL: what differs from the base is in this module's docstring."""

    engine = EngineTraits(naive_timestamps=True, compares_bytes_as=_BYTES, bulk_load=BulkLoad.JSON)
    types = column_types(text="NVARCHAR({n})", longtext="NVARCHAR(MAX)", float="FLOAT",
                         int="INT", bigint="BIGINT", timestamp="DATETIME2")
    tuning = cloud_tuning(store_every_seconds=10.0, store_batch=10_000)
    errors = DriverErrors(lock_conflict_codes=frozenset({1205}),  # a deadlock victim
                          lock_conflict_words=("deadlock", "lock request time out"),
                          duplicate_key_words=("violation of primary key", "cannot insert duplicate key",
                                               "there is already an object"))
    where = WhereSpelling(
        readings=(quotes_as("QUOTED_IDENTIFIER OFF", TSQL, strings=["'", '"'], identifiers=[("[", "]")]),),
        string_forms=(exp.National,))

    @classmethod
    def where_string(cls, value: str) -> str:
        r"""``N'...'`` with quotes doubled: Unicode whatever the database's collation (a ``'...'`` is read
        in its code page); no backslash before a line break, which SQL Server reads as a line
        continuation and leaves out.

        >>> MsSqlDialect.where_string("Zoë O'Neil")
        "N'Zoë O''Neil'"
        """
        if re.search(r"\\[\r\n]", value):
            raise UnwritableString("on mssql a where's string holds no backslash before a line break: SQL Server "
                                   "reads the two as a line continuation and leaves them out")
        return "N'" + value.replace("'", "''") + "'"

    def literal(self, value: Any) -> str:
        text = super().literal(value)
        return f"N{text}" if text.startswith("'") else text

    def temp_name(self, base: str, schema: str | None = None) -> str:
        return f"#{base}"

    def first_row(self, columns: str, relation: str) -> str:
        return f"SELECT TOP 1 {columns} FROM {relation} s"

    def create_temp_as(self, table: str, select: str) -> str:
        return f"SELECT * INTO {table} FROM ({select}) AS q"

    def create_like_source(self, table: str, names: Names, typed: Sequence[Column], key_sample: Any) -> list[str]:
        return [f"SELECT {self._target_columns(names, typed)} INTO {table} FROM {names.relation} s WHERE 1 = 0",
                *self.add_primary_key(table, names.key_column)]

    def null_safe_equal(self, left: str, right: str) -> str:
        return (f"(CAST({left} AS {_BYTES}) = CAST({right} AS {_BYTES}) "
                f"OR ({left} IS NULL AND {right} IS NULL))")

    def json_select(self, width: int, kinds: Sequence[str]) -> str:
        values = ", ".join(f"CAST(j.c{i} AS {_CASTS[k]})" if k in _CASTS else f"j.c{i}" for i, k in enumerate(kinds))
        shape = ", ".join(f"c{i} NVARCHAR(MAX) '$[{i}]'" for i in range(width))
        return f"SELECT {values} FROM OPENJSON({self.placeholder}) WITH ({shape}) AS j"

    def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
        return super().claim(f"{answers} WITH (HOLDLOCK)", chosen, reclaimable=reclaimable) + ";"

    def lock_answers(self, answers: str, chosen: str) -> str | None:
        return f"SELECT query_hash FROM {answers} WITH (UPDLOCK, HOLDLOCK) WHERE query_hash IN ({chosen})"

    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str:
        return f"{super().upsert(f'{table} WITH (HOLDLOCK)', columns, key, select)};"

    def update_from(self, table: str, alias: str, assignments: Sequence[tuple[str, str]], source: str,
                    condition: str) -> str:
        sets = ", ".join(f"{alias}.{column} = {expression}" for column, expression in assignments)
        return f"UPDATE {alias} SET {sets} FROM {table} {alias} JOIN {source} c ON {condition}"


DIALECT = MsSqlDialect
