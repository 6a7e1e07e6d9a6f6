"""What a warehouse's engine and driver do that changes how the table engine works with them,
as one value a dialect owns: :class:`EngineTraits` (its :attr:`~.base.WarehouseDialect.engine`).

Each trait is a fact about the engine (its keys, its temporary tables, its ``RETURNING``, its
driver's ``rowcount``), not a statement: the statements are the dialect's methods, and a trait
says which of the engine's ways the run takes around them. The defaults are those of an engine
with enforced primary keys, session-private temporary tables and a ``MERGE`` claim, read by
``executemany``; a dialect names only what differs.

Example::

    >>> traits = EngineTraits(enforces_keys=False, bulk_load=BulkLoad.JSON)
    >>> traits.enforces_keys, traits.counts_rows
    (False, True)
    >>> traits.changed(naive_timestamps=True).bulk_load is BulkLoad.JSON
    True
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.traits import BulkLoad

__all__ = ["ClaimProtocol", "EngineTraits"]


class ClaimProtocol(enum.Enum):
    """How a dialect's engine lets exactly one of two runs claiming one query win it
    (:attr:`EngineTraits.claim_protocol`; what each promises: docs' Warehouses page).

    :attr:`ROW_CLAIMS`: a claim is one statement that the engine makes atomic for each row (a
    primary key that refuses a second insert, a row or table lock, an optimistic commit that fails
    the loser): runs claim at the same time, and the loser finds the query held.
    :attr:`SINGLE_WRITER`: for an engine without row-level transactions or keys that refuse a
    second row (ClickHouse). One run at a time claims in an answers table, holding the table's
    writer lease (:meth:`~.claims.AnswersStatements.writer_lease`) while it takes over what is
    reclaimable (a plain ``UPDATE``), inserts the hashes nobody holds
    (:meth:`~.claims.AnswersStatements.claim`) and reads back what it won. Parallel runs still
    divide the work and ask at the same time; only their claim statements queue.
    """

    ROW_CLAIMS = "row claims"
    SINGLE_WRITER = "single writer"


@dataclass(frozen=True)
class EngineTraits:
    """The engine's traits, each with what it promises and what it changes in a run.

    Keys and claims:

    :param enforces_keys: a second row with a table's primary key is refused. Where keys are only
        declared (cloud warehouses), a fill always upserts, even into a table the run has just created.
    :param claim_protocol: how one of two runs claiming a query wins it (:class:`ClaimProtocol`):
        ``SINGLE_WRITER`` needs the dialect's ``writer_lease``, and its ``claim`` inserts only the
        hashes nobody holds (checked when the dialect is defined).
    :param claimed_row: how a claim's condition names the answers row it may take over (its alias;
        ``""`` where ``ON DUPLICATE KEY UPDATE`` names the existing row's columns bare).
    :param claim_returning: how a claim's ``RETURNING`` names the hash of a row it claimed (None:
        its outcome is read after it).
    :param claim_counts_rows: without :attr:`claim_returning`: the claim's row count is the number
        of rows it claimed (inserted or took over), so a count equal to the chunk's hashes says every
        one is this run's and nothing is read back.
    :param update_returning: how ``UPDATE ... RETURNING`` names the hash of a row a store wrote
        (None: the engine has no ``RETURNING``, the rows written are read back when some were not).

    The driver:

    :param counts_rows: the driver's ``rowcount`` of an ``UPDATE`` or ``DELETE`` is the rows it
        changed (clickhouse-connect's is 0): where not, an erasure counts the rows before it changes them.
    :param naive_timestamps: the driver takes timestamps without a time zone (UTC, naive).
    :param bulk_load: how rows are loaded into the run's tables (:class:`~.traits.BulkLoad`): ``JSON``
        needs the dialect's ``json_select``, ``LITERALS`` its ``insert_literals``, ``ARROW`` its
        ``insert_arrow`` (checked when the dialect is defined).
    :param sql_hook: (module, class, connection-id parameter) of the common-sql hook of the engine's
        connection type, where Airflow registers another kind of hook for it (None: the registered
        hook is one).

    Reading the source:

    :param reads_while_writing: lookups may start while the distinct pass still reads (on a second connection).
    :param materializes_reads: the distinct pass is made into a temporary table first, then read (a
        ``CREATE TABLE ... AS`` may run in parallel where a cursor's query does not).
    :param server_side_cursor: rows are read through a named (server-side) cursor, a page at a time.
    :param listed_name_column: which column of the dialect's ``table_names`` rows holds the table's
        name (a ``SHOW TABLES`` gives the schema first).
    :param unchanged_by_outer_join: a rerun's distinct pass leaves out unchanged rows by a ``LEFT JOIN``
        to the target (the rows it leaves unmatched are read) instead of a correlated ``NOT EXISTS``:
        for an engine that runs such a subquery once a row instead of as an anti-join (SQLite: 0.19 s
        instead of 0.35 s over 1M unchanged rows). The two read the same rows: the join keeps only
        the source rows no target row matched, each once, whatever the target holds.
    :param compares_bytes_as: the type raw values are cast to for comparing and grouping them
        exactly, where the default collations fold case or accents (MySQL's ``BINARY``); None: they
        compare exactly as they are.
    :param indexes_null_safe_equality: a join on the dialect's ``null_safe_equal`` uses an index
        (else NULL names are joined apart).

    Tables:

    :param temporary_tables_are_private: temporary tables live in the run's session and vanish
        with it (no drop needed).
    :param creates_target_at_fill: a missing target is created by the fill itself
        (``CREATE TABLE ... AS``), not before.
    """

    enforces_keys: bool = True
    claim_protocol: ClaimProtocol = ClaimProtocol.ROW_CLAIMS
    claimed_row: str = "a."
    claim_returning: str | None = None
    claim_counts_rows: bool = False
    update_returning: str | None = None
    counts_rows: bool = True
    naive_timestamps: bool = False
    bulk_load: BulkLoad = BulkLoad.EXECUTEMANY
    sql_hook: tuple[str, str, str] | None = None
    reads_while_writing: bool = False
    materializes_reads: bool = False
    server_side_cursor: bool = False
    listed_name_column: int = 0
    unchanged_by_outer_join: bool = False
    compares_bytes_as: str | None = None
    indexes_null_safe_equality: bool = False
    temporary_tables_are_private: bool = True
    creates_target_at_fill: bool = False

    def changed(self, **traits: Any) -> EngineTraits:
        """These traits with some changed: how a dialect refines a shared base's
        (``engine = CloudTableDialect.engine.changed(naive_timestamps=True)``)."""
        return dataclasses.replace(self, **traits)

