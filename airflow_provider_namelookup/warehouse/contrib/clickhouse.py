"""ClickHouse (with lightweight ``UPDATE``; tested: 26.9), through apache-airflow-providers-clickhousedb's
``ClickHouseHook``; written from the docs' page "Adding a warehouse" alone, and registered by an entry
point (``clickhouse`` and ``clickhousedb``: the hook's connection type and its SQLAlchemy dialect).

What differs from the base:

- **claims**: ClickHouse has no row-level transactions, and its keys sort rows without refusing a
  second one, so two inserts of one query would both win. Its claims follow the
  ``SINGLE_WRITER`` protocol: one run at a time claims in an answers table, holding the table's
  writer lease, a table of its own (``<answers>_writer``) whose ``CREATE TABLE`` only one run wins
  (ClickHouse refuses a second table of one name: ``TABLE_ALREADY_EXISTS``); its holder and expiry
  are the table's comment. An expired lease is retired by renaming it to a name made of the holder
  read, which only one run can do, and never to a later holder's. The claim itself inserts the
  hashes nobody holds (``INSERT ... SELECT ... WHERE query_hash NOT IN``); a fill holds its target's
  writer lease the same way (the engine's doing, for every ``SINGLE_WRITER`` dialect);
- every table is a ``MergeTree`` ordered by its key, with the block-number columns that lightweight
  ``UPDATE`` needs; no ``PRIMARY KEY`` refuses duplicates (``EngineTraits(enforces_keys=False)``), no indexes;
- columns are ``Nullable(...)``, as ClickHouse's are not by default; the key of an answers or
  target table is not (a sorting key may not be);
- no ``UPDATE ... FROM`` and no correlated subquery in an ``UPDATE``: :meth:`update_from` reads each
  of the source's columns through a map of the source by ``query_hash`` (the key every such update
  joins on), built once by a scalar subquery;
- no ``MERGE``: an upsert deletes the rows it replaces (lightweight ``DELETE``), then inserts;
- on a run's connection, ``join_use_nulls = 1``: an outer join's unmatched columns are NULL (by
  default ClickHouse gives them their type's default value); and ``lightweight_delete_mode =
  'lightweight_update_force'``: a ``DELETE`` runs as a lightweight update in the statement's own
  session (else it is a mutation, run later without the session's temporary tables);
- backslashes escape in string literals, so :meth:`literal` doubles them.

Example::

    dialect = ClickHouseDialect(ClickHouseHook("warehouse"))
    dialect.claim('"answers"', "SELECT DISTINCT query_hash FROM m WHERE chunk = %s", reclaimable="...")
    # 'INSERT INTO "answers" (query_hash, ...) SELECT c.query_hash, %s, ... WHERE c.query_hash NOT IN (...)'
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlglot
from sqlglot import exp

from airflow_provider_namelookup.warehouse.dialects.base import (
    ClaimProtocol,
    EngineTraits,
    LeaseStatements,
    Names,
    WarehouseDialect,
)
from airflow_provider_namelookup.warehouse.dialects.claims import CLAIM_COLUMNS
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types
from airflow_provider_namelookup.warehouse.schema import Column

UPDATABLE = "SETTINGS enable_block_number_column = 1, enable_block_offset_column = 1"
"""What a MergeTree needs for lightweight ``UPDATE`` and ``DELETE``."""


class ClickHouseDialect(WarehouseDialect, name="clickhouse",
                        credit_promise="one run at a time claims in an answers table, holding its writer lease "
                                       "(a table whose CREATE only one run wins); the others wait for it"):
    """The spellings of ClickHouse: what differs from the base is in this module's docstring."""

    types = column_types(text="Nullable(String)", longtext="Nullable(String)", float="Nullable(Float64)",
                         int="Nullable(Int32)", bigint="Nullable(Int64)", timestamp="Nullable(DateTime64(6, 'UTC'))")
    engine = EngineTraits(claim_protocol=ClaimProtocol.SINGLE_WRITER, enforces_keys=False, unchanged_by_outer_join=True,
                          counts_rows=False)

    def on_connect(self) -> list[str]:
        return ["SET join_use_nulls = 1, lightweight_delete_mode = 'lightweight_update_force'"]

    def literal(self, value: Any) -> str:
        if isinstance(value, str):
            return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
        if isinstance(value, datetime):
            return f"toDateTime64({self.literal(value.strftime('%Y-%m-%d %H:%M:%S.%f'))}, 6, 'UTC')"
        return super().literal(value)

    def nullable_like(self, expression: str) -> str:
        return f"toNullable({expression})"

    # Tables ---------------------------------------------------------------------------------------------
    def create_table(self, table: str, key: Column, columns: Sequence[Column]) -> list[str]:
        definitions = [f"{self.quote(key.name)} String",
                       *(f"{self.quote(c.name)} {self._column_type(c)}" for c in columns)]
        return [f"CREATE TABLE {table} ({', '.join(definitions)}) ENGINE = MergeTree "
                f"ORDER BY {self.quote(key.name)} {UPDATABLE}"]

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> list[str]:
        return []

    def create_like_source(self, table: str, names: Names, typed: Sequence[Column], key_sample: Any) -> list[str]:
        select = f"SELECT {self._target_columns(names, typed)} FROM {names.relation} s WHERE 1 = 0"
        return [f"CREATE TABLE {table} ENGINE = MergeTree ORDER BY {names.key_column} {UPDATABLE}, "
                f"allow_nullable_key = 1 AS {select}"]

    def add_primary_key(self, table: str, key: str) -> list[str]:
        return []

    # Claims ---------------------------------------------------------------------------------------------
    def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
        p = self.placeholder
        return (f"INSERT INTO {answers} {CLAIM_COLUMNS} SELECT c.query_hash, {p}, 'claimed', {p}, {p} "
                f"FROM ({chosen}) c WHERE c.query_hash NOT IN (SELECT query_hash FROM {answers})")

    def claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                     lookup: str) -> list[Any]:
        return [lookup, owner, lease, *chosen]

    def writer_lease(self, lease: str, *, owner: str, expires: float, holder: tuple[str, float] | None = None
                     ) -> LeaseStatements:
        lit = self.literal
        schema, _, name = lease.rpartition(".")
        database = lit(schema) if schema else "currentDatabase()"
        gone = f"{lease}_gone_{holder[0]}_{int(holder[1] * 1000)}" if holder else f"{lease}_gone"
        return LeaseStatements(
            take=(f"CREATE TABLE {self.quote(lease)} (holder UInt8) ENGINE = Memory "
                  f"COMMENT {lit(f'{owner} {expires!r}')}"),
            read=(f"SELECT splitByChar(' ', comment)[1], toFloat64(splitByChar(' ', comment)[2]) FROM system.tables "
                  f"WHERE database = {database} AND name = {lit(name)}"),
            retire=f"RENAME TABLE {self.quote(lease)} TO {self.quote(gone)}")

    # Updates and upserts ------------------------------------------------------------------------------------
    def update_from(self, table: str, alias: str, assignments: Sequence[tuple[str, str]], source: str,
                    condition: str) -> str:
        source = self._named_columns(source)

        def through_map(node: exp.Expr) -> exp.Expr:
            if isinstance(node, exp.Column) and node.table == "c":
                column = exp.column(node.name, quoted=node.this.quoted).sql("clickhouse")
                return sqlglot.parse_one(
                    f"(SELECT mapFromArrays(groupArray(c.query_hash), groupArray(tuple({column}))) "
                    f"FROM {source} c)[query_hash].1", read="clickhouse")
            if isinstance(node, exp.Column) and node.table == alias:
                return exp.to_column(node.name, quoted=node.this.quoted)
            return node

        def rewrite(sql: str) -> str:
            return sqlglot.parse_one(sql, read="clickhouse").transform(through_map).sql("clickhouse")

        sets = ", ".join(f"{column} = {rewrite(expression)}" for column, expression in assignments)
        return f"UPDATE {table} SET {sets} WHERE {rewrite(condition)}"

    @staticmethod
    def _named_columns(derived: str) -> str:
        """A derived table whose columns are named as in standard SQL: ClickHouse names an unaliased
        ``t.query_hash`` of a subquery ``t.query_hash``, where other engines name it ``query_hash``."""
        tree = sqlglot.parse_one(derived, read="clickhouse")
        select = tree.find(exp.Select)
        if select is None:
            return derived
        select.set("expressions", [exp.alias_(e, e.name, quoted=e.this.quoted) if isinstance(e, exp.Column) else e
                                   for e in select.expressions])
        return tree.sql("clickhouse")

    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str | list[str]:
        return [f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM ({select}) s)",
                f"INSERT INTO {table} ({', '.join(columns)}) {select}"]
