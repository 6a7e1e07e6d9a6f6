"""Reading the source: a run's connection, the probes of a source, and the distinct pass.

The distinct pass is the one statement that reads the source's rows: each distinct raw
``(name, country)`` (and last name, where the run reads one) of the rows to enrich, with how
many rows hold it and their lowest key. Python plans only those values (never the rows).

Example (the defaults, on a source ``(SELECT * FROM customers)`` with no target yet)::

    dialect.first_row("s.id, s.name", "(SELECT * FROM customers)")
    # 'SELECT s.id, s.name FROM (SELECT * FROM customers) s LIMIT 1'
    dialect.distinct_values(names, unchanged=None)
    # 'SELECT 0 AS total, s.name, NULL, COUNT(*) AS value_rows, MIN(s.id) AS first_key,
    #  COUNT(*) OVER () AS distinct_values FROM (...) s GROUP BY s.name
    #  UNION ALL SELECT 1, NULL, NULL, COUNT(*), NULL, NULL FROM (...) s'
"""

from __future__ import annotations

from typing import Any

from airflow_provider_namelookup.warehouse.dialects.spelling import Spelling
from airflow_provider_namelookup.warehouse.dialects.traits import Names, Unchanged


class SourceReading(Spelling):
    """A run's connections and what reads the source (see the module docstring)."""

    @staticmethod
    def connect(hook: Any) -> Any:
        """A new DB-API connection of a run: ``hook.get_conn()`` by default (a dialect whose driver
        needs one shaped differently gives its own opener)."""
        return hook.get_conn()

    def on_connect(self) -> list[str]:
        """Statements that set up a new connection of a run (lock waits, isolation); none by default.

        Example: ``["PRAGMA busy_timeout = 120000"]`` (SQLite: several runs may write one file)."""
        return []

    def first_row(self, columns: str, relation: str) -> str:
        """Read one row of the source (``relation`` is a derived table, aliased ``s`` here): a
        mistake in the source fails here, before anything is created or spent.

        Example: ``SELECT s.id FROM (SELECT * FROM customers) s LIMIT 1``."""
        return f"SELECT {columns} FROM {relation} s LIMIT 1"

    def table_names(self, schema: str | None) -> str | None:
        """A statement listing the tables and views of ``schema`` (None: the connection's own), one name
        a row: sent only after a source table did not read, to name the nearest ones. None where the
        warehouse cannot list them cheaply (the error then names none); a statement that fails is
        ignored the same way. ``schema`` is the schema part of ``source_table`` or ``target_table``,
        which ``check_identifier`` passed before any statement ran; it is still written as an
        escaped literal (or a quoted name), never as raw text.

        Example: ``SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()``;
        BigQuery: ``SELECT table_name FROM `analytics`.INFORMATION_SCHEMA.TABLES``; Databricks:
        ``SHOW TABLES IN `analytics``` (its names in the second column: ``engine.listed_name_column``)."""
        schema_is = f"= {self.literal(schema)}" if schema else "= current_schema()"
        return f"SELECT table_name FROM information_schema.tables WHERE table_schema {schema_is}"

    def no_rows(self, columns: str, table: str) -> str:
        """A probe that reads no row: does ``table`` have these columns?

        Example: ``SELECT query_hash, state FROM namelookup_answers WHERE 1 = 0``."""
        return f"SELECT {columns} FROM {table} WHERE 1 = 0"

    def select_rows(self, relation: str, *, count: bool = False) -> str:
        """Every row of ``relation`` (a table, or a derived table with its alias), or (``count``) their number.

        Example: ``SELECT * FROM "customers"``; ``SELECT COUNT(*) FROM (SELECT ...) s``."""
        return f"SELECT {'COUNT(*)' if count else '*'} FROM {relation}"

    def before_distinct_pass(self) -> list[str]:
        """Statements run in the distinct pass's transaction before it (memory for its join); none by default.

        Example: ``["SELECT set_config('work_mem', '64MB', true)"]`` (PostgreSQL: ``SET LOCAL``)."""
        return []

    def lowest_key(self, expression: str, key_sample: Any, *, over: str = "") -> str:
        """The lowest of a group's keys: an aggregate, or with ``over`` (``PARTITION BY ...``) a window
        function. The distinct pass, the fill and the fix-up of prices all pick the row that carries a
        query's price with it, so they agree on that row.

        :param key_sample: a key of the source as the driver read it (its first row's), for an engine
            whose ``MIN`` does not take every type of key.

        Example: ``MIN(s.id)``; ``MIN(m.first_key) OVER (PARTITION BY m.query_hash)``; PostgreSQL, whose
        ``MIN`` takes no ``uuid``: ``CAST(MIN(CAST(s.id AS text)) AS uuid)``."""
        return f"MIN({expression})" + (f" OVER ({over})" if over else "")

    def distinct_values(self, names: Names, unchanged: Unchanged | None, key_sample: Any = None) -> str:
        """Each distinct raw value of the rows to enrich, with its row count, its lowest key and
        how many distinct values there are in all (on every row: the first page tells the run
        its need's bound), and one more row (``total`` = 1) with the count of every row of the source.
        Six columns: ``total, name, country, value_rows, first_key, distinct_values``, and a seventh,
        ``last_name``, where the run reads one (:attr:`Names.last_name`).

        :param unchanged: when a source row ``s`` is unchanged since its target row ``t`` was written;
            None when there is no target yet.
        :param key_sample: a key of the source (see :meth:`lowest_key`).
        """
        raw = [e for e in (names.name, names.country, names.last_name) if e]
        if self.engine.compares_bytes_as:  # grouped on the bytes, each group's value read back through MIN
            name, country, last_name = (f"MIN({e})" if e else "NULL"
                                        for e in (names.name, names.country, names.last_name))
            groups = ", ".join(f"CAST({e} AS {self.engine.compares_bytes_as})" for e in raw)
        else:
            name, country, last_name = (e or "NULL" for e in (names.name, names.country, names.last_name))
            groups = ", ".join(raw)
        return self._distinct_values(names, unchanged, f"{name}, {country}", groups, key_sample,
                                     last_name if names.last_name else None)

    def _distinct_values(self, names: Names, unchanged: Unchanged | None, values: str, groups: str,
                         key_sample: Any, last_name: str | None = None) -> str:
        if unchanged is None:
            filtered = ""
        elif self.engine.unchanged_by_outer_join:
            filtered = f" LEFT JOIN {unchanged.target} t ON {unchanged.condition} WHERE {unchanged.matched} IS NULL"
        else:
            filtered = f" WHERE NOT EXISTS ({unchanged.exists()})"
        last, no_last = (f", {last_name}", ", NULL") if last_name else ("", "")
        return (f"SELECT 0 AS total, {values}, COUNT(*) AS value_rows, "
                f"{self.lowest_key(names.key, key_sample)} AS first_key, "
                f"COUNT(*) OVER () AS distinct_values{last} "
                f"FROM {names.relation} s{filtered} GROUP BY {groups} "
                f"UNION ALL SELECT 1, NULL, NULL, COUNT(*), NULL, NULL{no_last} FROM {names.relation} s")
