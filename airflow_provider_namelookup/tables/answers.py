"""The shared answers table: the warehouse's cache of answers and where task instances claim work.

One answers table serves every table operator run that uses it (any table, any DAG),
keyed by the normalised query's hash. A query is paid for once per warehouse:

- a run **claims** the hashes it needs and nobody has answered: an insert-if-absent of
  ``(hash, state='claimed', claimed_by=<run id>, lease_expires=<now + lease>)``. Only
  the run whose insert won sends that query; the others wait for its answer.
- while it works, the run **renews** its leases. A run that dies stops renewing; once
  its leases expire any other run takes the hashes over (an update that only succeeds
  on an expired lease), so nothing is lost and nobody waits for long.
- an answer is **stored** in the same row (``state='answered'``), only while the run
  still holds the claim; ``answered_by`` says which run paid for it.
- at the end a run **releases** what it claimed but did not answer (budget, failure).

Example::

    answers = AnswersTable(session, "namelookup_answers")
    answers.ensure()
    claim = answers.claim(["<hash>", ...], LookupKind.GENDER, owner="run-1", lease_seconds=120)
    answers.store({"<hash>": result_values}, owner="run-1", lookup=LookupKind.GENDER)
    answers.release(owner="run-1")
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_namelookup.enrichment.plan import LookupKind
from airflow_provider_namelookup.tables.identifiers import check_identifier, quote
from airflow_provider_namelookup.tables.schema import (
    ANSWER_BOOKKEEPING,
    ANSWER_RESULTS,
    STATE_ANSWERED,
    STATE_CLAIMED,
    column_type,
    result_columns,
)
from airflow_provider_namelookup.tables.session import WarehouseSession

DEFAULT_ANSWERS_TABLE = "namelookup_answers"
_IN_CHUNK = 500
_STORE_CHUNK = 1_000


@dataclass
class ClaimOutcome:
    """What a claim round found for the hashes it asked for."""

    mine: list[str] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)
    held_by_others: set[str] = field(default_factory=set)


class AnswersTable:
    """The answers table of a warehouse (or schema).

    :param session: the run's warehouse session (methods run on its thread).
    :param name: table name (``table`` or ``schema.table``).
    """

    def __init__(self, session: WarehouseSession, name: str) -> None:
        self.session = session
        self.name = check_identifier(name, "answers_table", qualified=True)
        self.dialect = session.dialect

    def _q(self, name: str) -> str:
        return quote(self.session.hook, name)

    @property
    def quoted(self) -> str:
        return self._q(self.name)

    def exists(self) -> bool:
        return self.session.has_table(self.quoted, self._q('query_hash'))

    def ensure(self) -> bool:
        """Create the table if missing (safe when several runs try at once); True when created."""
        if self.exists():
            return False
        definitions = [f"{self._q('query_hash')} {column_type(ANSWER_BOOKKEEPING[0], self.dialect.name)} "
                       "NOT NULL PRIMARY KEY"]
        definitions += [f"{self._q(c.name)} {column_type(c, self.dialect.name)}"
                        for c in (*ANSWER_BOOKKEEPING[1:], *ANSWER_RESULTS)]
        index = self._q(f"{self.name.replace('.', '_')[:40]}_claimed_by_idx")
        try:
            self.session.execute(f"CREATE TABLE {self.quoted} ({', '.join(definitions)})")
            self.session.execute(f"CREATE INDEX {index} ON {self.quoted} ({self._q('claimed_by')})")
            self.session.commit()
        except Exception:
            self.session.rollback()
            if self.exists():  # another run created it at the same moment
                return False
            raise
        return True

    def _among(self, hashes: Sequence[str]) -> Iterator[tuple[str, list[Any]]]:
        """``query_hash IN hashes`` as ``(condition, params)`` pieces. PostgreSQL gets the whole
        set as one array parameter (an index scan whatever the plan cache holds; a long ``IN``
        list of parameters is scanned linearly row by row under a generic plan); the others
        get ``IN`` lists short enough for every driver."""
        column = self._q("query_hash")
        if self.dialect.name == "postgresql":
            if hashes:
                yield f"{column} = ANY({self.dialect.placeholder})", [list(hashes)]
            return
        for start in range(0, len(hashes), _IN_CHUNK):
            chunk = list(hashes[start:start + _IN_CHUNK])
            yield f"{column} IN ({self.dialect.marks(len(chunk))})", chunk

    def states(self, hashes: Sequence[str]) -> dict[str, tuple[str, str | None, float | None, float | None]]:
        """``{hash: (state, claimed_by, lease_expires, answered_at)}`` for the hashes that have a row."""
        found: dict[str, tuple[str, str | None, float | None, float | None]] = {}
        columns = ", ".join(self._q(c) for c in ("query_hash", "state", "claimed_by", "lease_expires",
                                                 "answered_at"))
        for among, params in self._among(hashes):
            for h, state, owner, lease, answered_at in self.session.fetchall(
                    f"SELECT {columns} FROM {self.quoted} WHERE {among}", params):
                found[h] = (state, owner, lease, answered_at)
        return found

    def claim(self, hashes: Sequence[str], lookup: LookupKind, *, owner: str, lease_seconds: float,
              stale_before: float | None = None) -> ClaimOutcome:
        """Claim the hashes nobody has answered (or whose claim expired, or whose answer is
        older than ``stale_before``), and say which are now this owner's to send."""
        hashes = sorted(hashes)  # every run locks in the same order, so claims rarely deadlock
        self._claim(hashes, lookup, owner=owner, lease_seconds=lease_seconds, stale_before=stale_before)
        outcome = ClaimOutcome()
        for h, (state, claimed_by, _, _) in self.states(hashes).items():
            if state == STATE_ANSWERED:
                outcome.answered.add(h)
            elif claimed_by == owner:
                outcome.mine.append(h)
            else:
                outcome.held_by_others.add(h)
        return outcome

    def _claim(self, hashes: Sequence[str], lookup: LookupKind, *, owner: str, lease_seconds: float,
               stale_before: float | None) -> None:
        now = time.time()
        lease = now + lease_seconds
        q = self._q
        columns = [q("query_hash"), q("lookup"), q("state"), q("claimed_by"), q("lease_expires")]
        p = self.dialect.placeholder
        if self.dialect.name == "postgresql":  # one statement for the whole chunk
            self.session.execute(
                f"INSERT INTO {self.quoted} ({', '.join(columns)}) SELECT h, {p}, {p}, {p}, {p} "
                f"FROM unnest({p}::text[]) AS h ON CONFLICT ({q('query_hash')}) DO NOTHING",
                [lookup.value, STATE_CLAIMED, owner, lease, list(hashes)])
        else:
            insert = self.dialect.insert_if_absent(self.quoted, columns, q("query_hash"))
            self.session.executemany(insert, [(h, lookup.value, STATE_CLAIMED, owner, lease) for h in hashes])
        self.session.commit()
        for among, params in self._among(hashes):
            self.session.execute(  # take over claims whose holder stopped renewing them
                f"UPDATE {self.quoted} SET {q('claimed_by')} = {p}, {q('lease_expires')} = {p} "
                f"WHERE {among} AND {q('state')} = {p} AND {q('lease_expires')} < {p}",
                [owner, lease, *params, STATE_CLAIMED, now])
            if stale_before is not None:
                self.session.execute(  # refresh answers older than max_age
                    f"UPDATE {self.quoted} SET {q('state')} = {p}, {q('claimed_by')} = {p}, "
                    f"{q('lease_expires')} = {p} WHERE {among} AND {q('state')} = {p} "
                    f"AND {q('answered_at')} < {p}",
                    [STATE_CLAIMED, owner, lease, *params, STATE_ANSWERED, stale_before])
        self.session.commit()

    def renew(self, *, owner: str, lease_seconds: float) -> None:
        """Extend the leases of everything ``owner`` holds."""
        p = self.dialect.placeholder
        self.session.execute(
            f"UPDATE {self.quoted} SET {self._q('lease_expires')} = {p} "
            f"WHERE {self._q('claimed_by')} = {p} AND {self._q('state')} = {p}",
            [time.time() + lease_seconds, owner, STATE_CLAIMED])
        self.session.commit()

    def store(self, answers: Mapping[str, tuple[Any, ...]], *, owner: str, lookup: LookupKind) -> set[str]:
        """Write answers (result column values by hash) into the rows ``owner`` holds; the hashes
        stored (an answer whose claim was taken over meanwhile is not)."""
        if not answers:
            return set()
        if self.dialect.name == "postgresql":
            hashes = list(answers)
            stored: set[str] = set()
            for start in range(0, len(hashes), _STORE_CHUNK):
                part = {h: answers[h] for h in hashes[start:start + _STORE_CHUNK]}
                stored |= self._store_postgres(part, owner=owner, lookup=lookup)
            self.session.commit()
            return stored
        p = self.dialect.placeholder
        names = [c.name for c in result_columns(lookup)]
        sets = ", ".join(f"{self._q(n)} = {p}" for n in
                         ("state", "claimed_by", "lease_expires", "answered_by", "answered_at", "credits", *names))
        sql = (f"UPDATE {self.quoted} SET {sets} WHERE {self._q('query_hash')} = {p} "
               f"AND {self._q('claimed_by')} = {p}")
        now = time.time()
        self.session.executemany(sql, [(STATE_ANSWERED, None, None, owner, now, lookup.credits_per_query,
                                        *values, h, owner) for h, values in answers.items()])
        self.session.commit()
        found: set[str] = set()
        for among, params in self._among(list(answers)):
            found.update(row[0] for row in self.session.fetchall(
                f"SELECT {self._q('query_hash')} FROM {self.quoted} WHERE {among} "
                f"AND {self._q('answered_by')} = {p}", [*params, owner]))
        return found

    def _store_postgres(self, answers: Mapping[str, tuple[Any, ...]], *, owner: str,
                        lookup: LookupKind) -> set[str]:
        """One ``UPDATE ... FROM unnest(<one array per column>)`` per batch: a statement whose
        text never changes (the server prepares it once), whatever the batch's size."""
        q = self._q
        columns = result_columns(lookup)
        arrays = ", ".join(["%s::TEXT[]", *(f"%s::{column_type(c, 'postgresql')}[]" for c in columns)])
        names = ", ".join(["query_hash", *(c.name for c in columns)])
        sets = ", ".join(f"{q(c.name)} = v.{c.name}" for c in columns)
        values = list(answers.values())
        params: list[Any] = [STATE_ANSWERED, owner, time.time(), lookup.credits_per_query, list(answers)]
        params += [[row[i] for row in values] for i in range(len(columns))]
        params.append(owner)
        stored = self.session.fetchall(
            f"UPDATE {self.quoted} AS a SET {q('state')} = %s, {q('claimed_by')} = NULL, "
            f"{q('lease_expires')} = NULL, {q('answered_by')} = %s, {q('answered_at')} = %s, "
            f"{q('credits')} = %s, {sets} FROM unnest({arrays}) AS v({names}) "
            f"WHERE a.{q('query_hash')} = v.query_hash AND a.{q('claimed_by')} = %s RETURNING a.{q('query_hash')}",
            params)
        return {row[0] for row in stored}

    def release(self, *, owner: str, hashes: Sequence[str] | None = None) -> None:
        """Give up what ``owner`` claimed and did not answer (of ``hashes``, or all): fresh
        claims are deleted, a stale answer being refreshed goes back to answered."""
        p, q = self.dialect.placeholder, self._q
        groups: Iterable[tuple[str, list[Any]]] = [("1 = 1", [])] if hashes is None else self._among(list(hashes))
        for among, params in groups:
            self.session.execute(
                f"DELETE FROM {self.quoted} WHERE {q('claimed_by')} = {p} AND {q('state')} = {p} "
                f"AND {q('answered_at')} IS NULL AND {among}", [owner, STATE_CLAIMED, *params])
            self.session.execute(
                f"UPDATE {self.quoted} SET {q('state')} = {p}, {q('claimed_by')} = NULL, "
                f"{q('lease_expires')} = NULL WHERE {q('claimed_by')} = {p} AND {q('state')} = {p} AND {among}",
                [STATE_ANSWERED, owner, STATE_CLAIMED, *params])
        self.session.commit()
