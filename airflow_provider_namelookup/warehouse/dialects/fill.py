"""The fill: the target table created like the source, and the upsert of its new and changed rows.

The fill writes every source row whose question is answered (or invalid), by one set-based
statement from a join of the source to the resolved map; then it moves each query's price to
one row (``SUM(credits_used)`` is what the table cost), locking the query's answers row first
(:meth:`FillStatements.lock_answers`) so that two runs' fix-ups of one query do not interleave.

Example (the defaults)::

    dialect.upsert('"customers_gender"', ["id", "gender"], "id", "SELECT ...")
    # 'MERGE INTO "customers_gender" AS t USING (SELECT ...) AS s ON t.id = s.id
    #  WHEN MATCHED THEN UPDATE SET gender = s.gender WHEN NOT MATCHED THEN INSERT (id, gender) VALUES (s.id, s.gender)'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.claims import AnswersStatements
from airflow_provider_namelookup.warehouse.dialects.traits import Names
from airflow_provider_namelookup.warehouse.schema import Column


class FillStatements(AnswersStatements):
    """The target table's statements (see the module docstring)."""

    def add_primary_key(self, table: str, key: str) -> list[str]:
        """The statements that make ``key`` the table's primary key (none where keys are not declared).

        Example: ``["ALTER TABLE \"customers_gender\" ADD PRIMARY KEY (\"id\")"]``."""
        return [f"ALTER TABLE {table} ADD PRIMARY KEY ({key})"]

    def before_fill_by_creating(self) -> list[str]:
        """Statements run in the transaction of a fill that creates its target (``CREATE TABLE ... AS``),
        before it: settings for the engine's plan of that one statement. None by default.

        Example: ``["SELECT set_config('parallel_tuple_cost', '0', true)"]`` (PostgreSQL: ``SET LOCAL``)."""
        return []

    def create_like_source(self, table: str, names: Names, typed: Sequence[Column], key_sample: Any) -> list[str]:
        """Create a target table: its key and raw columns take the source's own types (rows are
        compared like with like), the ``typed`` columns their own; the key is the primary key.

        :param key_sample: a key of the source (for engines that must name the key's type).

        Example: ``CREATE TABLE "t" AS SELECT s."id" AS "id", CAST(NULL AS VARCHAR(16)) AS gender, ...
        FROM (...) s WHERE 1 = 0``, then :meth:`add_primary_key`.
        """
        select = f"SELECT {self._target_columns(names, typed)} FROM {names.relation} s WHERE 1 = 0"
        return [f"CREATE TABLE {table} AS {select}",
                *self.add_primary_key(table, names.key_column)]

    def _target_columns(self, names: Names, typed: Sequence[Column]) -> str:
        """The columns of a target made like the source: its key, the ``typed`` columns as NULLs of
        their type, the raw columns (the SELECT list of :meth:`create_like_source`)."""
        return ", ".join([f"{names.key} AS {names.key_column}", *(f"{self.cast_null(c)} AS {c.name}" for c in typed),
                          *(f"{expression} AS {column}" for expression, column in names.raw_columns())])

    def upsert(self, table: str, columns: Sequence[str], key: str, select: str) -> str | list[str]:
        """Insert ``select``'s rows into ``table``, replacing rows with the same key (see the module's example);
        a list: statements run in order, where the engine has no one statement for it (ClickHouse: a
        ``DELETE`` of the rows replaced, then an ``INSERT``; ``select`` reads the target, so the second
        finds the rows the first deleted new)."""
        names = ", ".join(columns)
        sets = ", ".join(f"{c} = s.{c}" for c in columns if c != key)
        values = ", ".join(f"s.{c}" for c in columns)
        return (f"MERGE INTO {table} AS t USING ({select}) AS s ON t.{key} = s.{key} "
                f"WHEN MATCHED THEN UPDATE SET {sets} WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})")

    def lock_answers(self, answers: str, chosen: str) -> str | None:
        """A statement that locks the answers rows of the hashes ``chosen`` selects until the
        transaction ends (fix-ups of one query then run one after another), or None (the default)
        where the engine serialises the statements that follow anyway.

        Example: ``SELECT a.query_hash FROM answers a WHERE a.query_hash IN (...) ORDER BY a.query_hash
        FOR UPDATE OF a``."""
        return None
