"""The run's own tables: the raw-value map, the answers on their way in, the resolved map; and
how rows are bulk-loaded into them.

A run keeps its decisions beside the warehouse's tables, in temporary tables of its session
(or, where those are not private to a session, staging tables named for the run and dropped at
its end: :attr:`~.engine_traits.EngineTraits.temporary_tables_are_private`). Rows go in by one statement (or a few)
the way :attr:`~.engine_traits.EngineTraits.bulk_load` says the warehouse takes them best.

Example (the defaults)::

    dialect.create_temp_as('"namelookup_map_1"', "SELECT ...")
    # 'CREATE TEMPORARY TABLE "namelookup_map_1" AS SELECT ...'
    dialect.insert_values('"namelookup_map_1"', ["raw_name", "query_hash"])
    # 'INSERT INTO "namelookup_map_1" (raw_name, query_hash) VALUES (?, ?)'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.spelling import Spelling
from airflow_provider_namelookup.warehouse.dialects.traits import Names, json_rows
from airflow_provider_namelookup.warehouse.schema import Column


class RunTables(Spelling):
    """Temporary and staging tables of a run, and bulk loads into them (see the module docstring)."""

    def temp_name(self, base: str, schema: str | None = None) -> str:
        """The name of a temporary table of the run (quoted); where temporary tables are not private,
        a staging table in ``schema`` (the answers table's), dropped at the end of the run."""
        if schema and not self.engine.temporary_tables_are_private:
            return self.quote(f"{schema}.{base}")
        return self.quote(base)

    def create_temp_as(self, table: str, select: str) -> str:
        """Create a temporary table of the run holding ``select``'s rows.

        Example: ``CREATE TEMPORARY TABLE "t" AS SELECT ...``."""
        return f"CREATE TEMPORARY TABLE {table} AS {select}"

    def create_temp_like_source(self, table: str, names: Names, raw: Sequence[str],
                                typed: Sequence[Column]) -> list[str]:
        """Create an empty temporary table of the ``raw`` expressions over the source (typed as the
        source's columns) and the ``typed`` columns.

        Example: ``CREATE TEMPORARY TABLE "m" AS SELECT s.name AS raw_name, CAST(NULL AS INTEGER) AS chunk
        FROM (...) s WHERE 1 = 0``."""
        columns = [*raw, *(f"{self.cast_null(c)} AS {c.name}" for c in typed)]
        return [self.create_temp_as(table, f"SELECT {', '.join(columns)} FROM {names.relation} s WHERE 1 = 0")]

    def create_value_map(self, table: str, names: Names, typed: Sequence[Column]) -> list[str]:
        """Create the run's raw-value map: the source's raw values (typed as its columns), the lowest key
        holding each (``first_key``) and the ``typed`` columns; built on :meth:`create_temp_like_source`.

        Example: ``CREATE TEMPORARY TABLE "m" AS SELECT s."name" AS raw_name, s."id" AS first_key,
        CAST(NULL AS VARCHAR(64)) AS query_hash, ... FROM (...) s WHERE 1 = 0``."""
        raw = [f"{names.name} AS raw_name", *([f"{names.last_name} AS raw_last_name"] if names.last_name else []),
               *([f"{names.country} AS raw_country"] if names.country else []),
               f"{self.nullable_like(names.key)} AS first_key"]
        return self.create_temp_like_source(table, names, raw, typed)

    def chunk_hashes(self, map_table: str) -> str:
        """The distinct valid hashes of one chunk of the run's map (bound: the chunk): what a claim takes.

        Example: ``SELECT DISTINCT query_hash FROM "m" WHERE error IS NULL AND chunk = ?``."""
        return f"SELECT DISTINCT query_hash FROM {map_table} WHERE error IS NULL AND chunk = {self.placeholder}"

    def drop_table(self, table: str) -> str:
        """Drop a table of the run if it is there. Example: ``DROP TABLE IF EXISTS "t"``."""
        return f"DROP TABLE IF EXISTS {table}"

    def stage_name(self, base: str, schema: str | None = None) -> str:
        """The name (quoted) of a table the fill joins every source row to (a temporary table
        by default, see :meth:`temp_name`)."""
        return self.temp_name(base, schema)

    def create_stage_as(self, table: str, select: str) -> list[str]:
        """Statements that create a stage table (a temporary table, by default)."""
        return [self.create_temp_as(table, select)]

    def drop_stage(self, table: str) -> list[str]:
        """Statements that drop a stage table the session does not drop by itself (none by default)."""
        return []

    def index_temp(self, table: str, index: str, columns: Sequence[str], covering: Sequence[str] = ()) -> list[str]:
        """Statements that make a joined temporary table cheap to join (an index, statistics); none by default.

        :param columns: what the join looks the table up by.
        :param covering: the table's other columns the join reads (an index that holds them too
            answers the join without a second lookup per row).

        Example: ``["CREATE INDEX \"i\" ON \"t\" (raw_name, raw_country, gender)"]`` (SQLite)."""
        return []

    def index_temp_instead(self, err: Exception, table: str, index: str, columns: Sequence[str]) -> list[str] | None:
        """Statements to run when one of :meth:`index_temp`'s failed with ``err`` because of the
        joined columns' type (they are the source's own: any width, text or not); None to raise ``err``.

        Example: ``["CREATE INDEX `i` ON t (raw_name)"]`` (MySQL, after a prefix index on a column
        narrower than the prefix, or not text)."""
        return None

    def analyze(self, table: str, columns: Sequence[str] = ()) -> list[str]:
        """Statistics for a table just bulk-filled, when the engine keeps them by hand (of
        ``columns`` only, when given: the ones later runs join and compare on); none by default."""
        return []

    # Bulk loads --------------------------------------------------------------------------------------------
    def insert_values(self, table: str, columns: Sequence[str]) -> str:
        """The ``INSERT`` of one row of bound values (:attr:`~.traits.BulkLoad.EXECUTEMANY`)."""
        return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({self.marks(len(columns))})"

    def copy_from_stdin(self, table: str, columns: Sequence[str]) -> str:
        """``COPY ... FROM STDIN`` (:attr:`~.traits.BulkLoad.COPY`)."""
        return f"COPY {table} ({', '.join(columns)}) FROM STDIN"

    def insert_page(self, table: str, columns: Sequence[str]) -> str:
        """One ``INSERT`` of many rows for psycopg2's ``execute_values`` (its one ``%s`` takes them
        all): :attr:`~.traits.BulkLoad.COPY` on a driver without ``COPY`` support."""
        return f"INSERT INTO {table} ({', '.join(columns)}) VALUES %s"

    def insert_unnest(self, table: str, columns: Sequence[str]) -> str:
        """One ``INSERT`` binding one list per column (:attr:`~.traits.BulkLoad.UNNEST`)."""
        unnests = ", ".join(f"UNNEST({self.placeholder})" for _ in columns)
        return f"INSERT INTO {table} ({', '.join(columns)}) SELECT {unnests}"

    def insert_json(self, table: str, columns: Sequence[str], kinds: Sequence[str]) -> str:
        """One ``INSERT`` binding the rows as one JSON document (:attr:`~.traits.BulkLoad.JSON`,
        :func:`~.traits.json_rows`)."""
        return f"INSERT INTO {table} ({', '.join(columns)}) {self.json_select(len(columns), kinds)}"

    def json_document(self, rows: Sequence[Sequence[Any]]) -> str | None:
        """The JSON document :meth:`insert_json` binds: every value as text (:func:`~.traits.json_rows`),
        cast back by :meth:`json_select`. None where these rows cannot travel as JSON: they are
        loaded by ``executemany`` instead."""
        return json_rows(rows)

    def json_select(self, width: int, kinds: Sequence[str]) -> str:
        """A SELECT of the rows of the JSON array bound at its one marker (see :meth:`insert_json`),
        each value cast to the kind of Python value it was (:func:`~.traits.value_kinds`). No
        default: a dialect whose ``engine.bulk_load`` is ``JSON`` must write it.

        Example (Snowflake): ``SELECT f.value[0]::VARCHAR, f.value[1]::VARCHAR::BIGINT FROM
        TABLE(FLATTEN(INPUT => PARSE_JSON(%s))) AS f``."""
        raise NotImplementedError(f"{self.name} does not load rows as JSON")

    def insert_arrow(self, cursor: Any, table: str, columns: Sequence[str], data: Any) -> None:
        """Insert the rows of ``data``, an Arrow table of columns ``c0``, ``c1``, ... in the order of
        ``columns`` (:attr:`~.traits.BulkLoad.ARROW`), through ``cursor``, one of the run's connection.
        No default: a dialect whose ``engine.bulk_load`` is ``ARROW`` must write it.

        Example (DuckDB): register ``data`` as a view, ``INSERT INTO t (a, b) SELECT * FROM view``,
        unregister it."""
        raise NotImplementedError(f"{self.name} does not read Arrow tables")

    def insert_literals(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
        """Multi-row ``INSERT ... VALUES`` of literals (:attr:`~.traits.BulkLoad.LITERALS`). No
        default: a dialect whose ``engine.bulk_load`` is ``LITERALS`` must write it."""
        raise NotImplementedError(f"{self.name} does not load rows as literals")
