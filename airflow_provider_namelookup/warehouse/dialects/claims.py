"""The shared answers table: its creation, claims (insert-if-absent with a lease), and stores.

This is where the engine's credit promise lives: of two runs claiming one query, exactly one
may win it (:meth:`AnswersStatements.claim`), whatever the engine does to get there (a primary
key that refuses the second insert, a table lock, an optimistic commit that fails and is run
again). A store writes answers only into rows the run still holds.

Example (the defaults: standard ``MERGE``)::

    dialect.claim("namelookup_answers", "SELECT DISTINCT query_hash FROM m WHERE chunk = ?",
                  reclaimable="(a.state = 'claimed' AND a.lease_expires < ?)")
    # "MERGE INTO namelookup_answers AS a USING (SELECT ...) AS c ON a.query_hash = c.query_hash
    #  WHEN MATCHED AND ((a.state = 'claimed' AND a.lease_expires < ?)) THEN UPDATE SET state = 'claimed', ...
    #  WHEN NOT MATCHED THEN INSERT (query_hash, lookup, state, claimed_by, lease_expires) VALUES (...)"
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from airflow_provider_namelookup.warehouse.dialects.run_tables import RunTables
from airflow_provider_namelookup.warehouse.schema import Column

CLAIM_COLUMNS = "(query_hash, lookup, state, claimed_by, lease_expires)"
"""The columns a claim inserts."""


class ClaimProtocol(enum.Enum):
    """How a dialect's engine lets exactly one of two runs claiming one query win it
    (:attr:`AnswersStatements.claim_protocol`; what each promises: docs' Warehouses page).

    :attr:`ROW_CLAIMS`: a claim is one statement that the engine makes atomic for each row (a
    primary key that refuses a second insert, a row or table lock, an optimistic commit that fails
    the loser): runs claim at the same time, and the loser finds the query held.
    :attr:`SINGLE_WRITER`: for an engine without row-level transactions or keys that refuse a
    second row (ClickHouse). One run at a time claims in an answers table, holding the table's
    writer lease (:meth:`AnswersStatements.writer_lease`) while it takes over what is reclaimable
    (a plain ``UPDATE``), inserts the hashes nobody holds (:meth:`AnswersStatements.claim`) and
    reads back what it won. Parallel runs still divide the work and ask at the same time; only
    their claim statements queue.
    """

    ROW_CLAIMS = "row claims"
    SINGLE_WRITER = "single writer"


@dataclass(frozen=True)
class LeaseStatements:
    """The statements of an answers table's writer lease (:attr:`ClaimProtocol.SINGLE_WRITER`);
    the lease is released by dropping its table (:meth:`~.run_tables.RunTables.drop_table`).

    :param take: fails as a duplicate key (:meth:`~.traits.DriverErrors.is_duplicate_key`) while
        another run holds the lease, else makes this run the holder until ``expires`` (atomically:
        of two runs taking it, one fails).
    :param read: one row ``(owner, expires)`` of the holder, or none.
    :param retire: moves an expired holder's lease out of the way; fails when another run did so first
        (it names the holder read, so that it can never retire a later holder's).
    """

    take: str
    read: str
    retire: str


class AnswersStatements(RunTables):
    """The answers table's statements (see the module docstring); its incoming table is a run table."""

    claimed_row: ClassVar[str] = "a."
    """How a claim's condition names the answers row it may take over (its alias)."""
    claim_returning: ClassVar[str | None] = None
    """How a claim's ``RETURNING`` names the hash of a row it claimed (None: its outcome is read after it)."""
    claim_counts_rows: ClassVar[bool] = False
    """Without :attr:`claim_returning`: the claim's row count is the number of rows it claimed
    (inserted or took over), so a count equal to the chunk's hashes says every one is this run's
    and nothing is read back."""
    update_returning: ClassVar[str | None] = None
    """How ``UPDATE ... RETURNING`` names the hash of a row a store wrote (None: the engine has no
    ``RETURNING``, the rows written are read back when some were not)."""
    claim_protocol: ClassVar[ClaimProtocol] = ClaimProtocol.ROW_CLAIMS
    """How one of two runs claiming a query wins it (:class:`ClaimProtocol`): ``SINGLE_WRITER``
    needs :meth:`writer_lease`, and its :meth:`claim` inserts only the hashes nobody holds."""

    def writer_lease(self, lease: str, *, owner: str, expires: float, holder: tuple[str, float] | None = None
                     ) -> LeaseStatements:
        """The statements of the answers table's writer lease, table ``lease`` (unquoted), for run ``owner``
        until UNIX time ``expires``; ``holder``: the expired ``(owner, expires)`` that :attr:`LeaseStatements.retire`
        moves away. No default: a dialect whose :attr:`claim_protocol` is ``SINGLE_WRITER`` must write it.

        Example (ClickHouse, whose ``CREATE TABLE`` of a name that exists fails)::

            LeaseStatements(take="CREATE TABLE \"a_writer\" (x UInt8) ENGINE = Memory COMMENT 'run1 1700000060.0'",
                        read="SELECT splitByChar(' ', comment)[1], ... FROM system.tables WHERE ...",
                        retire="RENAME TABLE \"a_writer\" TO \"a_writer_gone_run0_1700000000000\"")
        """
        raise NotImplementedError(f"{self.name} has no writer lease")

    def create_table(self, table: str, key: Column, columns: Sequence[Column]) -> list[str]:
        """Create a table keyed by ``key`` (the answers table).

        Example: ``CREATE TABLE "namelookup_answers" ("query_hash" VARCHAR(64) NOT NULL PRIMARY KEY, ...)``."""
        definitions = [f"{self.quote(key.name)} {self.column_type(key)} NOT NULL PRIMARY KEY",
                       *(f"{self.quote(c.name)} {self.column_type(c)}" for c in columns)]
        return [f"CREATE TABLE {table} ({', '.join(definitions)})"]

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> list[str]:
        """Index ``columns`` (none where the engine has no indexes).

        Example: ``["CREATE INDEX \"i\" ON \"namelookup_answers\" (claimed_by)"]``."""
        return [f"CREATE INDEX {self.quote(name)} ON {table} ({', '.join(columns)})"]

    def add_column(self, table: str, column: Column) -> str:
        """Add a column (to a table an earlier release made).

        Example: ``ALTER TABLE "t" ADD "paid_for" VARCHAR(256)``."""
        return f"ALTER TABLE {table} ADD {self.quote(column.name)} {self.column_type(column)}"

    def merge_claim(self, answers: str, chosen: str, when_matched: str) -> str:
        """A claim as one ``MERGE``: ``when_matched`` takes an existing row over, a missing one is
        inserted claimed (the base's :meth:`claim`; Redshift's, whose ``MERGE`` has no ``WHEN MATCHED AND``)."""
        p = self.placeholder
        return (f"MERGE INTO {answers} AS a USING ({chosen}) AS c ON a.query_hash = c.query_hash {when_matched} "
                f"WHEN NOT MATCHED THEN INSERT {CLAIM_COLUMNS} VALUES (c.query_hash, {p}, 'claimed', {p}, {p})")

    def insert_claim(self, answers: str, chosen: str, *, alias: str = "") -> str:
        """A claim as an insert that conflicts on the answers table's key, up to its conflict clause
        (``ON CONFLICT``, ``ON DUPLICATE KEY UPDATE``); its parameters: :meth:`insert_claim_params`."""
        p = self.placeholder
        return (f"INSERT INTO {answers}{alias} {CLAIM_COLUMNS} SELECT c.query_hash, {p}, 'claimed', {p}, {p} "
                f"FROM ({chosen}) c")

    def insert_claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                            lookup: str) -> list[Any]:
        """The parameters of a claim that starts with :meth:`insert_claim`."""
        return [lookup, owner, lease, *chosen, *reclaimable]

    def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
        """Claim the hashes ``chosen`` selects (a column ``query_hash``): insert those nobody
        holds, take over those ``reclaimable`` (on the existing row ``a``). Parameters, in
        order: those of ``chosen``, then ``reclaimable``'s, then owner, lease, lookup
        (:meth:`claim_params` puts them in the statement's own order: a dialect that writes one
        writes both, which is checked when it is defined)."""
        p = self.placeholder
        return self.merge_claim(answers, chosen, f"WHEN MATCHED AND ({reclaimable}) THEN UPDATE SET state = 'claimed', "
                                                 f"claimed_by = {p}, lease_expires = {p}")

    def claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                     lookup: str) -> list[Any]:
        """The parameters of :meth:`claim`'s statement, in the order its markers stand."""
        return [*chosen, *reclaimable, owner, lease, lookup, owner, lease]

    def create_incoming(self, incoming: str, answers: str, result_columns: Sequence[Column]) -> str:
        """The run's table of answers on their way into the answers table (``query_hash``, the result
        columns, and the number of the store that brought them)."""
        columns = ", ".join(["query_hash", *(c.name for c in result_columns),
                             f"{self.cast_null(Column('store_no', 'int'))} AS store_no"])
        return self.create_temp_as(incoming, f"SELECT {columns} FROM {answers} WHERE 1 = 0")

    def answers_document(self, columns: Sequence[str]) -> str | None:
        """A derived table of one store's answers read straight from a bound JSON document
        (:meth:`~.run_tables.RunTables.json_document`), its columns named ``columns``, where the
        warehouse updates from it in one statement; None (the default): a store's answers go through
        the run's incoming table first.

        Example (SQLite): ``(SELECT json_extract(value, '$[0]') AS query_hash, ... FROM json_each(?))``."""
        return None

    def store_answers(self, answers: str, incoming: str, store_no: int, result_columns: Sequence[Column], *,
                      owner: str, stamp: float, credits: int, paid_for: str, source: str | None = None,
                      hashes: Sequence[str] = ()) -> str:
        """Write one store's answers (the rows of ``incoming`` tagged ``store_no``, or the derived
        table ``source``: :meth:`answers_document`) into the answers rows ``owner`` still holds
        (:meth:`held_by`, told the store's ``hashes``). Values of the engine's own (owner, time,
        price) are literals, so that every spelling of the update binds nothing but ``source``'s
        document; where :attr:`update_returning` says how, it returns the hashes written. Built on
        :meth:`~.fill.FillStatements.update_from`."""
        lit = self.literal
        assignments = [("state", lit("answered")), ("claimed_by", "NULL"), ("lease_expires", "NULL"),
                       ("answered_by", lit(owner)), ("answered_at", lit(stamp)), ("credits", lit(credits)),
                       ("paid_for", lit(paid_for)), *((c.name, f"c.{c.name}") for c in result_columns)]
        update = self.update_from(answers, "a", assignments, source or self._store_rows(incoming, store_no),
                                  f"a.query_hash = c.query_hash AND {self.held_by(owner, hashes)}")
        return f"{update} RETURNING {self.update_returning}" if self.update_returning else update

    def held_by(self, owner: str, hashes: Sequence[str]) -> str:
        """A store's condition that the answers row ``a`` is one ``owner`` still holds; ``hashes``
        are the store's (the base leaves them to the join with its answers).

        Example: ``COALESCE(a.claimed_by, '') = 'run1'``."""
        # The owner is compared through COALESCE so that no planner reaches the answers rows by the
        # claimed_by index: on a young answers table without statistics PostgreSQL then joined with a
        # filter in a nested loop, and a store of 30,000 answers took 23 s instead of 0.2 s.
        return f"COALESCE(a.claimed_by, {self.literal('')}) = {self.literal(owner)}"

    def _store_rows(self, incoming: str, store_no: int) -> str:
        """The incoming table's rows of one store, as a derived table."""
        return f"(SELECT * FROM {incoming} WHERE store_no = {self.literal(store_no)})"

    def stored_by(self, answers: str, incoming: str, store_no: int, *, owner: str, stamp: float,
                  source: str | None = None) -> str:
        """The hashes of one store that it wrote (``answered_by`` and ``answered_at`` are its own):
        read back when some claim was taken over meanwhile."""
        lit = self.literal
        store = source or self._store_rows(incoming, store_no)
        return (f"SELECT a.query_hash FROM {answers} a JOIN {store} i ON a.query_hash = i.query_hash "
                f"WHERE a.answered_by = {lit(owner)} AND a.answered_at = {lit(stamp)}")

    def update_from(self, table: str, alias: str, assignments: Sequence[tuple[str, str]], source: str,
                    condition: str) -> str:
        """``UPDATE table AS alias SET column = expression, ...`` for the rows matching ``source``
        (a derived table ``c``) under ``condition``: a store, and the fill's fix-up of prices. Every
        caller's ``condition`` joins on ``alias.query_hash = c.query_hash``, and ``source`` has one row
        a hash (ClickHouse, which has no ``UPDATE ... FROM``, reads ``c`` by ``query_hash``).

        Example: ``UPDATE t AS t0 SET credits_used = c.price FROM (SELECT ...) c
        WHERE t0.query_hash = c.query_hash``."""
        sets = ", ".join(f"{column} = {expression}" for column, expression in assignments)
        return f"UPDATE {table} AS {alias} SET {sets} FROM {source} c WHERE {condition}"
