"""PostgreSQL (``apache-airflow-providers-postgres``, psycopg 3 or psycopg2).

What differs from the base: ``INSERT ... ON CONFLICT`` for claims and the fill, ``COPY`` for
bulk loads (the map, the answers of each store), the distinct pass made into a temporary
table in parallel and read with a server-side cursor (with 64 MB of ``work_mem`` for its
join and ``GROUP BY``), claims and stores judged by their row counts (``RETURNING`` rows
cost the task more CPU to take in than a count), ``ANALYZE`` after bulk fills,
and a new target table made by the fill itself
(``CREATE TABLE ... AS`` then its primary key, in one transaction: 2x faster than an
``INSERT`` into a keyed table at 10,000,000 rows), its join planned in parallel workers
(:meth:`PostgresDialect.before_fill_by_creating`); the lowest of ``uuid`` keys through their text
(PostgreSQL's ``MIN`` takes no ``uuid``).

Credits: a claim is an ``INSERT ... ON CONFLICT DO NOTHING``-style upsert on the answers
table's primary key, so of two runs claiming one query exactly one inserts it; the
other reads it back as held and waits. Fix-ups of one query's price lock its answers row
(``SELECT ... FOR UPDATE``) and so run one after another.

Example::

    dialect = PostgresDialect(PostgresHook("warehouse"))
    dialect.null_safe_equal("t.source_country", "s.country")
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlglot.dialects.postgres import Postgres

from airflow_provider_namelookup.warehouse.dialects.base import BulkLoad, OnConflictDialect, WhereSpelling
from airflow_provider_namelookup.warehouse.dialects.spelling import column_types
from airflow_provider_namelookup.warehouse.dialects.where_literals import backslash_escapes

_STAGE_PREFIX = "namelookup_stage_"
_BIG_STATEMENT_SETTINGS = ("SELECT set_config('work_mem', '64MB', true), "
                           "set_config('parallel_tuple_cost', '0', true)")
"""For the rest of the transaction (``SET LOCAL``, in one statement): 64 MB for a join's hash and a
``GROUP BY`` (with the default 4 MB they spill to disk), and the rows parallel workers hand over at
no cost to the planner (at its default 0.1 a row, a statement that moves 1,000,000 rows or groups
never ran in workers: the leader alone joined and grouped, beside two idle workers)."""


class PostgresDialect(OnConflictDialect, name="postgresql", sqlglot_name="postgres",
                      credit_promise=("row-level: claims are inserts that conflict on the answers "
                                      "table's primary key, so one run wins each query; fix-ups lock "
                                      "the query's answers row")):
    """The spellings of PostgreSQL: what differs from the base is in this module's docstring."""

    types = column_types(text="VARCHAR({n})", longtext="TEXT", float="DOUBLE PRECISION",
                         int="INTEGER", bigint="BIGINT", timestamp="TIMESTAMP WITH TIME ZONE")
    # A claim's (OnConflictDialect) or a store's row count tells whether every hash of it was written (a
    # short one reads the outcome back): taking in their RETURNING rows cost a 1M-row first run's task
    # 1.96 s of CPU instead of 1.79 s (medians of three, side by side).
    engine = OnConflictDialect.engine.changed(
        bulk_load=BulkLoad.COPY, reads_while_writing=True,
        materializes_reads=True,  # a CREATE TABLE ... AS may read in parallel, a cursor never does
        server_side_cursor=True, creates_target_at_fill=True)
    where = WhereSpelling(readings=(backslash_escapes("standard_conforming_strings = off", Postgres, "'", "\\"),))

    @classmethod
    def where_string(cls, value: str) -> str:
        r"""``E'...'`` for a string holding a backslash (each doubled): ``standard_conforming_strings``
        (per server, database, role or session) decides whether a backslash in ``'...'`` escapes the
        next character, never in ``E'...'``.

        >>> PostgresDialect.where_string("a\\"), PostgresDialect.where_string("it's")
        ("E'a\\\\'", "'it''s'")
        """
        if "\\" not in value:
            return super().where_string(value)
        return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"

    def before_distinct_pass(self) -> list[str]:
        """64 MB for the distinct pass's anti-join and GROUP BY, and its ``GROUP BY`` in parallel
        workers (a first run's pass over 1,000,000 rows: 0.29 s instead of 0.35 s), for its
        transaction only (``_BIG_STATEMENT_SETTINGS``)."""
        return [_BIG_STATEMENT_SETTINGS]

    def before_fill_by_creating(self) -> list[str]:
        """Let the planner join the source to the stage in parallel workers while the leader writes
        the new table (``_BIG_STATEMENT_SETTINGS``, for this transaction only): a 1,000,000-row
        fill of 16 columns took 1.15 s instead of 1.65 s."""
        return [_BIG_STATEMENT_SETTINGS]

    def stage_name(self, base: str, schema: str | None = None) -> str:
        """A regular table named after its day, beside the answers table: the fill joins the source
        to it in parallel, which PostgreSQL never does with a temporary table (a 10,000,000-row
        fill: 23 s instead of 36 s)."""
        name = f"{_STAGE_PREFIX}{datetime.now(UTC):%Y%m%d}_{base.rsplit('_', 1)[-1]}"
        return self.quote(f"{schema}.{name}" if schema else name)

    def create_stage_as(self, table: str, select: str) -> list[str]:
        """Drop stages a killed run left behind (named before yesterday), then create this one unlogged."""
        stale = f"{_STAGE_PREFIX}{datetime.now(UTC) - timedelta(days=1):%Y%m%d}"
        cleanup = (f"DO $$DECLARE t record; BEGIN FOR t IN SELECT schemaname, tablename FROM pg_tables "
                   f"WHERE tablename LIKE '{_STAGE_PREFIX}%' AND tablename < '{stale}' LOOP "
                   f"EXECUTE format('DROP TABLE IF EXISTS %I.%I', t.schemaname, t.tablename); END LOOP; END$$")
        return [cleanup, f"CREATE UNLOGGED TABLE {table} AS {select}"]

    def drop_stage(self, table: str) -> list[str]:
        return [self.drop_table(table)]

    def lowest_key(self, expression: str, key_sample: Any, *, over: str = "") -> str:
        """``MIN`` takes no ``uuid``: its text is ordered as its bytes are (fixed-width hex, dashes in
        the same places), and cast back so that the key compares with the source's."""
        if not isinstance(key_sample, uuid.UUID):
            return super().lowest_key(expression, key_sample, over=over)
        return f"CAST(MIN(CAST({expression} AS text)){f' OVER ({over})' if over else ''} AS uuid)"

    def index_temp(self, table: str, index: str, columns: Sequence[str], covering: Sequence[str] = ()) -> list[str]:
        return [f"ANALYZE {table} ({', '.join(columns)})"]  # the planner then hashes the small table

    def analyze(self, table: str, columns: Sequence[str] = ()) -> list[str]:
        return [f"ANALYZE {table}" + (f" ({', '.join(columns)})" if columns else "")]

    def lock_answers(self, answers: str, chosen: str) -> str | None:
        return (f"SELECT a.query_hash FROM {answers} a WHERE a.query_hash IN ({chosen}) "
                f"ORDER BY a.query_hash FOR UPDATE OF a")


DIALECT = PostgresDialect
