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

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.warehouse.dialects.erasure import STATE_ERASED
from airflow_provider_namelookup.warehouse.dialects.run_tables import RunTables
from airflow_provider_namelookup.warehouse.schema import STATE_ANSWERED, STATE_LOST, Column

CLAIM_COLUMNS = "(query_hash, lookup, state, claimed_by, lease_expires)"
"""The columns a claim inserts."""


def claims_index_name(table: str) -> str:
    """The claims index of answers table ``table``: its name, cut to fit an identifier with a hash of the
    whole name where it is long (index names are per schema, and per-DAG tables share a long prefix).

    >>> claims_index_name("namelookup_answers")
    'namelookup_answers_claimed_by_idx'
    >>> long = "namelookup_answers_daily_enrichment"
    >>> claims_index_name(f"{long}_a") != claims_index_name(f"{long}_b")
    True
    """
    flat = table.replace(".", "_")
    if len(flat) > 40:
        flat = f"{flat[:31]}_{hashlib.sha256(table.encode()).hexdigest()[:8]}"
    return f"{flat}_claimed_by_idx"


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

    def writer_lease(self, lease: str, *, owner: str, expires: float, holder: tuple[str, float] | None = None
                     ) -> LeaseStatements:
        """The statements of the answers table's writer lease, table ``lease`` (unquoted), for run ``owner``
        until UNIX time ``expires``; ``holder``: the expired ``(owner, expires)`` that :attr:`LeaseStatements.retire`
        moves away. No default: a dialect whose ``engine.claim_protocol`` is ``SINGLE_WRITER`` must write it.

        Example (ClickHouse, whose ``CREATE TABLE`` of a name that exists fails)::

            LeaseStatements(take="CREATE TABLE \"a_writer\" (x UInt8) ENGINE = Memory COMMENT 'run1 1700000060.0'",
                        read="SELECT splitByChar(' ', comment)[1], ... FROM system.tables WHERE ...",
                        retire="RENAME TABLE \"a_writer\" TO \"a_writer_gone_run0_1700000000000\"")
        """
        raise NotImplementedError(f"{self.name} has no writer lease")

    def create_table(self, table: str, key: Column, columns: Sequence[Column]) -> list[str]:
        """Create a table keyed by ``key`` (the answers table).

        Example: ``CREATE TABLE "namelookup_answers" ("query_hash" VARCHAR(64) NOT NULL PRIMARY KEY, ...)``."""
        definitions = [f"{self.quote(key.name)} {self._column_type(key)} NOT NULL PRIMARY KEY",
                       *(f"{self.quote(c.name)} {self._column_type(c)}" for c in columns)]
        return [f"CREATE TABLE {table} ({', '.join(definitions)})"]

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> list[str]:
        """Index ``columns`` (none where the engine has no indexes).

        Example: ``["CREATE INDEX \"i\" ON \"namelookup_answers\" (claimed_by)"]``."""
        return [f"CREATE INDEX {self.quote(name)} ON {table} ({', '.join(columns)})"]

    def add_column(self, table: str, column: Column) -> str:
        """Add a column (to a table an earlier release made).

        Example: ``ALTER TABLE "t" ADD "paid_for" VARCHAR(256)``."""
        return f"ALTER TABLE {table} ADD {self.quote(column.name)} {self._column_type(column)}"

    def _merge_claim(self, answers: str, chosen: str, when_matched: str) -> str:
        """A claim as one ``MERGE``: ``when_matched`` takes an existing row over, a missing one is
        inserted claimed (the base's :meth:`claim`; Redshift's, whose ``MERGE`` has no ``WHEN MATCHED AND``)."""
        p = self.placeholder
        return (f"MERGE INTO {answers} AS a USING ({chosen}) AS c ON a.query_hash = c.query_hash {when_matched} "
                f"WHEN NOT MATCHED THEN INSERT {CLAIM_COLUMNS} VALUES (c.query_hash, {p}, 'claimed', {p}, {p})")

    def _insert_claim(self, answers: str, chosen: str, *, alias: str = "") -> str:
        """A claim as an insert that conflicts on the answers table's key, up to its conflict clause
        (``ON CONFLICT``, ``ON DUPLICATE KEY UPDATE``); its parameters: :meth:`_insert_claim_params`."""
        p = self.placeholder
        return (f"INSERT INTO {answers}{alias} {CLAIM_COLUMNS} SELECT c.query_hash, {p}, 'claimed', {p}, {p} "
                f"FROM ({chosen}) c")

    def _insert_claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                            lookup: str) -> list[Any]:
        """The parameters of a claim that starts with :meth:`_insert_claim`."""
        return [lookup, owner, lease, *chosen, *reclaimable]

    def claim(self, answers: str, chosen: str, *, reclaimable: str) -> str:
        """Claim the hashes ``chosen`` selects (a column ``query_hash``): insert those nobody
        holds, take over those ``reclaimable`` (on the existing row ``a``). Parameters, in
        order: those of ``chosen``, then ``reclaimable``'s, then owner, lease, lookup
        (:meth:`claim_params` puts them in the statement's own order: a dialect that writes one
        writes both, which is checked when it is defined)."""
        p = self.placeholder
        return self._merge_claim(answers, chosen, f"WHEN MATCHED AND ({reclaimable}) THEN UPDATE SET "
                                                  f"state = 'claimed', claimed_by = {p}, lease_expires = {p}")

    def claim_params(self, chosen: Sequence[Any], reclaimable: Sequence[Any], *, owner: str, lease: float,
                     lookup: str) -> list[Any]:
        """The parameters of :meth:`claim`'s statement, in the order its markers stand."""
        return [*chosen, *reclaimable, owner, lease, lookup, owner, lease]

    def reclaimable(self, *, stale: bool, row: str | None = None) -> str:
        """The condition on an answers row that another run may take it over: a claim whose lease
        expired, a tombstone of an erasure before the run began, and (``stale``: ``max_age``) an answer
        stored before the oldest kept. ``row``: how it names the row (default :attr:`claimed_row`).
        Bound, in order: now, the run's start, (``stale``) the oldest answer kept.

        Example: ``(a.state = 'claimed' AND a.lease_expires < ?) OR (a.state = 'erased' AND a.lease_expires < ?)``."""
        a, p = self.engine.claimed_row if row is None else row, self.placeholder
        reclaimable = (f"({a}state = 'claimed' AND {a}lease_expires < {p}) OR "
                       f"({a}state = '{STATE_ERASED}' AND {a}lease_expires < {p})")  # erased before the run began
        if stale:
            reclaimable += f" OR ({a}state = 'answered' AND {a}answered_at < {p})"
        return reclaimable

    def take_over(self, answers: str, chosen: str, *, stale: bool) -> str:
        """Under :attr:`ClaimProtocol.SINGLE_WRITER`, before :meth:`claim` inserts the hashes nobody holds: take
        over the :meth:`reclaimable` rows of the hashes ``chosen`` selects. Bound: owner, lease, ``chosen``'s
        parameters, the condition's.

        Example: ``UPDATE "a" SET state = 'claimed', claimed_by = ?, lease_expires = ? WHERE query_hash IN
        (SELECT ...) AND ((state = 'claimed' AND lease_expires < ?) OR ...)``."""
        p = self.placeholder
        return (f"UPDATE {answers} SET state = 'claimed', claimed_by = {p}, lease_expires = {p} "
                f"WHERE query_hash IN ({chosen}) AND ({self.reclaimable(stale=stale, row='')})")

    def claimed_states(self, answers: str, chosen: str) -> str:
        """A claim's outcome, where its statement did not say it: the hash, state and holder of the
        answers rows of the hashes ``chosen`` selects (bound: its parameters).

        Example: ``SELECT a.query_hash, a.state, a.claimed_by FROM "a" a WHERE a.query_hash IN (SELECT ...)``."""
        return f"SELECT a.query_hash, a.state, a.claimed_by FROM {answers} a WHERE a.query_hash IN ({chosen})"

    def fresh_answers(self, answers: str, *, stale: bool, batch_of: str | None = None, among: int = 0) -> str:
        """The hashes with an answer (``stale``: stored since a time, bound last): those of one batch of
        the run's map ``batch_of`` (bound: the batch), or (without a map) those among ``among`` hashes.

        Example: ``SELECT DISTINCT a.query_hash FROM "a" a JOIN "m" m ON a.query_hash = m.query_hash
        WHERE m.batch = ? AND m.error IS NULL AND a.state = 'answered'``."""
        p = self.placeholder
        fresh = f"a.state = 'answered' AND a.answered_at >= {p}" if stale else "a.state = 'answered'"
        if batch_of is not None:
            return (f"SELECT DISTINCT a.query_hash FROM {answers} a JOIN {batch_of} m ON a.query_hash = m.query_hash "
                    f"WHERE m.batch = {p} AND m.error IS NULL AND {fresh}")
        return f"SELECT a.query_hash FROM {answers} a WHERE a.query_hash IN ({self.marks(among)}) AND {fresh}"

    def renew_claims(self, answers: str) -> str:
        """Extend the leases of a run's claims (bound: the new lease's end, the owner).

        Example: ``UPDATE "a" SET lease_expires = ? WHERE claimed_by = ? AND state = 'claimed'``."""
        p = self.placeholder
        return f"UPDATE {answers} SET lease_expires = {p} WHERE claimed_by = {p} AND state = 'claimed'"

    def release_claims(self, answers: str, chosen: str | None = None) -> list[str]:
        """Give up what a run claimed and did not answer (bound in each: the owner, then ``chosen``'s
        parameters): fresh claims are deleted, a stale answer being refreshed goes back to answered; all
        of them, or those of the hashes ``chosen`` selects.

        Example: ``["DELETE FROM "a" WHERE claimed_by = ? AND state = 'claimed' AND answered_at IS NULL",
        "UPDATE "a" SET state = 'answered', claimed_by = NULL, lease_expires = NULL WHERE claimed_by = ? AND ..."]``."""
        p = self.placeholder
        among = "" if chosen is None else f" AND query_hash IN ({chosen})"
        return [f"DELETE FROM {answers} WHERE claimed_by = {p} AND state = 'claimed' AND answered_at IS NULL{among}",
                f"UPDATE {answers} SET state = 'answered', claimed_by = NULL, lease_expires = NULL "
                f"WHERE claimed_by = {p} AND state = 'claimed'{among}"]

    def spent_by(self, answers: str, *, spender: str, owner: str) -> str:
        """What the other runs of one spender (the end of their ``answered_by``) spent: their answers
        and their lost answers' rows (:meth:`insert_lost`).

        Example: ``SELECT COALESCE(SUM(credits), 0) FROM "a" WHERE state IN ('answered', 'lost')
        AND answered_by LIKE '%<spender>' AND answered_by <> '<owner>'``."""
        lit = self.literal
        return (f"SELECT COALESCE(SUM(credits), 0) FROM {answers} "
                f"WHERE state IN ('{STATE_ANSWERED}', '{STATE_LOST}') "
                f"AND answered_by LIKE {lit('%' + spender)} AND answered_by <> {lit(owner)}")

    def insert_lost(self, answers: str, *, owner: str, lookup: str, stamp: float, credits: int) -> str:
        """The row of what a run's lost answers may have cost (``state='lost'``, keyed ``lost:<owner>``),
        every value a literal.

        Example: ``INSERT INTO "a" (query_hash, lookup, state, answered_by, answered_at, credits)
        VALUES ('lost:<owner>', 'gender', 'lost', '<owner>', 1700000000.0, 3)``."""
        values = {"query_hash": f"{STATE_LOST}:{owner}", "lookup": lookup, "state": STATE_LOST,
                  "answered_by": owner, "answered_at": stamp, "credits": credits}
        return (f"INSERT INTO {answers} ({', '.join(values)}) "
                f"VALUES ({', '.join(self.literal(v) for v in values.values())})")

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
        (:meth:`_held_by`, told the store's ``hashes``). Values of the engine's own (owner, time,
        price) are literals, so that every spelling of the update binds nothing but ``source``'s
        document; where ``engine.update_returning`` says how, it returns the hashes written. Built on
        :meth:`~.fill.FillStatements.update_from`."""
        lit = self.literal
        assignments = [("state", lit("answered")), ("claimed_by", "NULL"), ("lease_expires", "NULL"),
                       ("answered_by", lit(owner)), ("answered_at", lit(stamp)), ("credits", lit(credits)),
                       ("paid_for", lit(paid_for)), *((c.name, f"c.{c.name}") for c in result_columns)]
        update = self.update_from(answers, "a", assignments, source or self._store_rows(incoming, store_no),
                                  f"a.query_hash = c.query_hash AND {self._held_by(owner, hashes)}")
        return f"{update} RETURNING {self.engine.update_returning}" if self.engine.update_returning else update

    def _held_by(self, owner: str, hashes: Sequence[str]) -> str:
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
