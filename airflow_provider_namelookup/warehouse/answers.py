"""The shared answers table: the warehouse's cache of answers and where task instances claim work.

One answers table serves every table operator run that uses it (any table, any DAG),
keyed by the normalised query's hash. A query is paid for once per warehouse:

- a run **claims** the hashes it needs and nobody has answered, a chunk at a time: one
  insert-if-absent of ``(hash, state='claimed', claimed_by=<run id>, lease_expires=<now +
  lease>)`` for the chunk's hashes (read from the run's raw-value map), then one read of
  their states. Only the run whose insert won sends a query; the others wait for its answer.
- while it works, the run **renews** its leases. A run that dies stops renewing; once
  its leases expire any other run's claim takes the hashes over, so nothing is lost and
  nobody waits for long.
- an answer is **stored** in the same row (``state='answered'``), only while the run
  still holds the claim; ``answered_by`` names the run, ``paid_for`` the target it enriched.
  The answers go there through the run's incoming table (:mod:`.incoming`), which the
  answers table owns.
- at the end a run **releases** what it claimed but did not answer (budget, failure), and
  its staging tables are dropped (:meth:`AnswersTable.close`).
- a run of a task instance whose answers were lost after their request was sent (they may have
  been charged) **keeps** what they may have cost in one row of its own (``state='lost'``,
  ``credits``, ``answered_by``; its key ``lost:<run id>`` is no query's hash), so that the later
  tries of ``max_credits_scope="dag_run"`` count it (:meth:`AnswersTable.spent_earlier`).
- an erased answer (:mod:`~airflow_provider_namelookup.warehouse.erasure`) leaves a tombstone
  (``state='erased'``, the erasure's time in ``lease_expires``): a run that started before the
  erasure takes it for answered elsewhere (it asks nothing and fills no row from it), a run that
  started after claims it as a new question.
- with ``expire_before`` (the table operators' ``retention``), a run first deletes the answers
  stored before it, and the tombstones older than a day.

The statements are the dialect's (:mod:`~airflow_provider_namelookup.warehouse.dialects`);
a claim costs two statements per chunk of :data:`CLAIM_CHUNK` questions whatever the rows.

Example::

    answers = AnswersTable(session, "namelookup_answers", value_map, lookup=LookupKind.GENDER,
                           paid_for="customers_gender", lease_seconds=60)
    await answers.prepare(create=True)
    await answers.register(page)                 # the page's questions into the map
    fresh = await answers.answered(hashes)
    for claim in answers.plan_claims(to_ask):
        outcome = await answers.claim(claim)     # outcome.mine: this run's to ask
    await answers.store({"<hash>": result})
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.ports import ClaimOutcome, Question, Result
from airflow_provider_namelookup.warehouse.dialects.claims import claims_index_name
from airflow_provider_namelookup.warehouse.dialects.engine_traits import ClaimProtocol
from airflow_provider_namelookup.warehouse.dialects.erasure import STATE_ERASED, TOMBSTONE_SECONDS
from airflow_provider_namelookup.warehouse.identifiers import check_identifier
from airflow_provider_namelookup.warehouse.incoming import IncomingAnswers
from airflow_provider_namelookup.warehouse.schema import (
    ANSWER_BOOKKEEPING,
    ANSWER_KEY,
    ANSWER_RESULTS,
    STATE_ANSWERED,
    result_columns,
    result_values,
)
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.valuemap import ValueMap, load_entries
from airflow_provider_namelookup.warehouse.writer_lease import WriterLease

SPENDER_LENGTH = 24
"""Hex digits of the paying task instance's id at the end of an ``answered_by``."""
_RUN_ID_LENGTH = 32
DEFAULT_ANSWERS_TABLE = "namelookup_answers"
CLAIM_CHUNK = 10_000
"""Questions claimed together: each claim is two statements, so a run of 40,000 new
questions claims in 8; parallel runs still divide the work chunk by chunk."""


def answers_table_statements(dialect: Any, name: str) -> list[str]:
    """The statements that make answers table ``name`` (unquoted; checked) and its claims index."""
    quoted = dialect.quote(check_identifier(name, "answers_table", qualified=True))
    return [*dialect.create_table(quoted, ANSWER_KEY, (*ANSWER_BOOKKEEPING, *ANSWER_RESULTS)),
            *dialect.create_index(claims_index_name(name), quoted, ["claimed_by"])]


@dataclass
class MapClaim:
    """The hashes of one chunk of the map."""

    chunk: int
    hashes: list[str]


class AnswersTable:
    """The answers table of a warehouse (or schema), as a run's answer cache.

    :param session: the run's warehouse session.
    :param name: table name (``table`` or ``schema.table``).
    :param value_map: the run's raw-value map (where claims read their hashes).
    :param lookup: the run's lookup (the result columns it stores).
    :param paid_for: the target table whose rows carry the prices this run pays.
    :param owner: this run's id in ``claimed_by`` / ``answered_by``: 32 hex digits of its own,
        then the paying task instance's :data:`SPENDER_LENGTH` (see :meth:`spent_earlier`).
    :param lease_seconds: how long a claim holds without renewal.
    :param stale_before: with ``max_age``: answers older than this UNIX time are asked again.
    :param plan_only: read only; create nothing (no map: hashes are looked up by value).
    :param expire_before: with ``retention``: answers stored before this UNIX time are deleted when the
        run prepares the table.
    """

    def __init__(self, session: WarehouseSession, name: str, value_map: ValueMap, *, lookup: LookupKind,
                 paid_for: str, owner: str, lease_seconds: float, stale_before: float | None = None,
                 plan_only: bool = False, claim_chunk: int = CLAIM_CHUNK,
                 expire_before: float | None = None) -> None:
        self.session = session
        self.started = time.time()
        """When the run began: answers erased after it are not this run's to bring back."""
        self.expire_before = expire_before
        self.expired: int | None = None
        """Answers the run's retention deleted (None: none was applied)."""
        self.name = check_identifier(name, "answers_table", qualified=True)
        self.quoted = session.dialect.quote(self.name)
        self.map = value_map
        self.lookup = lookup
        self.paid_for = paid_for
        self.owner = owner
        self.lease_seconds = lease_seconds
        tuning = session.dialect.tuning
        self.store_every = tuning.store_every_seconds
        self.store_batch = tuning.store_batch
        """Answers are stored together at most this long after they came (the dialect's choice)."""
        self.incoming = IncomingAnswers(session, self.quoted, value_map.staging_name("namelookup_incoming"))
        self.stale_before = stale_before
        self.plan_only = plan_only
        self.claim_chunk = claim_chunk
        self.exists = False
        self.ready = False
        """It exists with every column: nothing left to create or alter."""
        self._found: str | None = None
        """What the first probe found: ``complete``, ``key only`` (an earlier release's table) or ``missing``."""
        self.fresh = False
        """Made by this run: it holds no answer yet, every valid question will be asked."""
        self.store_statements = 0
        """Statements its stores sent (the run's summary shows them beside the total)."""
        self._chunks: dict[str, int] = {}
        self._chunk_sizes: dict[int, int] = {}
        self._chunk_count = 0
        self._batch = 0

    @property
    def statements(self) -> int:
        """Statements the run's session sent so far (with :attr:`store_statements`: the run's
        :class:`~airflow_provider_namelookup.engine.ports.StatementCounts`)."""
        return self.session.statements

    async def db(self, fn: Any, *args: Any) -> Any:
        return await self.session.run(fn, *args)

    async def db_write(self, fn: Any, *args: Any) -> Any:
        return await self.session.run_retrying(fn, *args)

    async def spent_earlier(self) -> int:
        """Credits earlier runs of this run's task instance spent: what the answers they stored cost,
        and what their lost answers may have cost (:meth:`keep_lost`); rows whose ``answered_by`` ends
        in the same spender as this run's owner (0 without a table)."""
        spender = self.owner[_RUN_ID_LENGTH:]
        if not spender or not self.exists:
            return 0
        rows = await self.db(self.session.fetchall,
                             self.session.dialect.spent_by(self.quoted, spender=spender, owner=self.owner))
        return int(rows[0][0] or 0)

    async def keep_lost(self, credits: int) -> None:
        """Keep what this run's lost answers may have cost, in a row of its own, for the later tries of
        its task instance (nothing without one: no later run would count it)."""
        if self.owner[_RUN_ID_LENGTH:] and self.exists and not self.plan_only:
            await self.session.run_reconnecting(self._keep_lost, credits)

    def _keep_lost(self, credits: int) -> None:
        self.session.execute(self.session.dialect.insert_lost(self.quoted, owner=self.owner, lookup=self.lookup.value,
                                                              stamp=time.time(), credits=credits))
        self.session.commit()

    # Table ----------------------------------------------------------------------------------------------
    async def prepare(self, *, create: bool) -> bool:
        """Find the table (``create=False``: nothing is written) or make it (``create=True``); whether it is
        there with every column, nothing left to create or alter. The probe is made once. With
        ``expire_before`` (and not ``plan_only``), the first call that finds the table deletes what expired."""
        await self.db(self._prepare, create)
        if self.ready and not self.plan_only and self.expire_before is not None and self.expired is None:
            self.expired = await self.db_write(self._expire, self.expire_before)
        return self.ready

    def _expire(self, before: float) -> int:
        """Delete the answers stored before ``before`` and the tombstones older than a day; how many."""
        d = self.session.dialect
        deleted = self.session.execute(d.erasure.delete_answers_before(self.quoted),
                                       [before, time.time() - TOMBSTONE_SECONDS])
        self.session.commit()
        return max(deleted, 0)

    def _prepare(self, create: bool) -> None:
        d = self.session.dialect
        columns = ", ".join(c.name for c in (ANSWER_KEY, *ANSWER_BOOKKEEPING))
        if self.ready:
            return
        if self._found is None:
            self._found = "complete" if self.session.probe(d.no_rows(columns, self.quoted)) is None else \
                "key only" if self.session.probe(d.no_rows(ANSWER_KEY.name, self.quoted)) is None else "missing"
        if self._found == "complete":
            self.exists = self.ready = True
            return
        if self._found == "key only":  # an earlier release's table
            self.exists = True
            if create:
                for column in ANSWER_BOOKKEEPING:
                    if self.session.probe(d.no_rows(column.name, self.quoted)) is not None:
                        self.session.execute(d.add_column(self.quoted, column))
                self.session.commit()
                self.ready = True
            return
        if not create:
            return
        self.fresh = True
        try:
            for statement in answers_table_statements(d, self.name):
                self.session.execute(statement)
            self.session.commit()
        except Exception as err:
            self.session.rollback()
            if not d.errors.is_duplicate_key(err) and self.session.probe(d.no_rows(columns, self.quoted)) is not None:
                raise
        self.exists = self.ready = True

    # Questions ------------------------------------------------------------------------------------------
    def _my_order(self, hashes: list[str]) -> list[str]:
        """The hashes in hash order, starting at this run's own point (parallel runs spread out)."""
        ordered = sorted(hashes)
        if not ordered:
            return ordered
        start = int(self.owner[:8], 16) % len(ordered)
        return ordered[start:] + ordered[:start]

    async def register(self, questions: Sequence[Question]) -> None:
        """Put one page's questions into the map, each new hash in a chunk of this run's order."""
        new = self._my_order([q.query_hash for q in questions if q.valid and q.query_hash not in self._chunks])
        for start in range(0, len(new), self.claim_chunk):
            self._chunk_count += 1
            members = new[start:start + self.claim_chunk]
            self._chunk_sizes[self._chunk_count] = len(members)
            for h in members:
                self._chunks[h] = self._chunk_count
        if self.plan_only:
            return
        self._batch = await self.db(self.map.load, load_entries(questions, self._chunks))

    async def answered(self, hashes: Collection[str]) -> set[str]:
        """Which of ``hashes`` (the last registered page's) have a fresh answer. None in a table
        this run made (:attr:`fresh`): what another run answers there meanwhile, the claim finds."""
        if not self.exists or not hashes or self.fresh:
            return set()
        if self.plan_only:
            return await self.db(self._answered_among, list(hashes))
        return await self.db(self._answered_in_batch, self._batch)

    @property
    def _stale(self) -> list[Any]:
        """The parameter of a fresh answer's age (none without ``max_age``)."""
        return [] if self.stale_before is None else [self.stale_before]

    def _answered_in_batch(self, batch: int) -> set[str]:
        self.session.require_temporaries()
        statement = self.session.dialect.fresh_answers(self.quoted, stale=bool(self._stale), batch_of=self.map.name)
        return {r[0] for r in self.session.fetchall(statement, [batch, *self._stale])}

    def _answered_among(self, hashes: list[str]) -> set[str]:
        d = self.session.dialect
        found: set[str] = set()
        step = d.tuning.max_in_list
        for start in range(0, len(hashes), step):
            part = hashes[start:start + step]
            found |= {r[0] for r in self.session.fetchall(
                d.fresh_answers(self.quoted, stale=bool(self._stale), among=len(part)), [*part, *self._stale])}
        return found

    # Claims -----------------------------------------------------------------------------------------------
    def plan_claims(self, hashes: Sequence[str]) -> list[MapClaim]:
        by_chunk: dict[int, list[str]] = {}
        for h in hashes:
            by_chunk.setdefault(self._chunks[h], []).append(h)
        return [MapClaim(chunk, members) for chunk, members in sorted(by_chunk.items())]

    async def claim(self, claim: Any) -> ClaimOutcome:
        return await self.db_write(self._claim, claim.chunk, claim.hashes)

    def _claim(self, chunk: int, wanted: Sequence[str]) -> ClaimOutcome:
        """One statement claims the chunk; where the warehouse says which rows it wrote (``RETURNING``,
        or a row count of the whole chunk) and they are all the ``wanted`` ones, that is the outcome;
        else a read of their states. Under the ``SINGLE_WRITER`` claim protocol, the run holds the
        table's writer lease (:mod:`.writer_lease`) and takes over what is reclaimable first."""
        self.session.require_temporaries()
        if self.session.dialect.engine.claim_protocol is ClaimProtocol.SINGLE_WRITER:
            with WriterLease(self.session, self.name, owner=self.owner, seconds=self.lease_seconds):
                return self._claim_rows(chunk, wanted, take_over_first=True)
        return self._claim_rows(chunk, wanted)

    def _claim_rows(self, chunk: int, wanted: Sequence[str], *, take_over_first: bool = False) -> ClaimOutcome:
        d = self.session.dialect
        now = time.time()
        chosen = self.map.chunk_hashes()
        stale = self.stale_before is not None  # refresh answers older than max_age
        reclaim_params: list[Any] = [now, self.started, *self._stale]
        if take_over_first:  # the dialect's claim then inserts only the hashes nobody holds
            self.session.execute(d.take_over(self.quoted, chosen, stale=stale),
                                 [self.owner, now + self.lease_seconds, chunk, *reclaim_params])
        statement = d.claim(self.quoted, chosen, reclaimable=d.reclaimable(stale=stale))
        params = d.claim_params([chunk], reclaim_params, owner=self.owner, lease=now + self.lease_seconds,
                                lookup=self.lookup.value)
        if d.engine.claim_returning:
            won = {r[0] for r in self.session.fetchall(f"{statement} RETURNING {d.engine.claim_returning}", params,
                                                       commit=False)}
            self.session.commit()
            if won.issuperset(wanted):  # nobody else held or answered any of them: nothing to read back
                return ClaimOutcome(mine=[h for h in wanted if h in won])
        else:
            claimed = self.session.execute(statement, params)
            self.session.commit()
            if d.engine.claim_counts_rows and claimed == self._chunk_sizes[chunk]:  # every hash of the chunk is ours
                return ClaimOutcome(mine=list(wanted))
        outcome = ClaimOutcome()
        for h, state, claimed_by in self.session.fetchall(d.claimed_states(self.quoted, chosen), [chunk]):
            if state in (STATE_ANSWERED, STATE_ERASED):  # erased after this run began: not to be brought back
                outcome.answered.add(h)
            elif claimed_by == self.owner:
                outcome.mine.append(h)
            else:
                outcome.held_by_others.add(h)
        return outcome

    async def renew(self) -> None:
        await self.session.run_reconnecting(self._renew)

    def _renew(self) -> None:
        self.session.execute(self.session.dialect.renew_claims(self.quoted),
                             [time.time() + self.lease_seconds, self.owner])
        self.session.commit()

    async def release(self, claim: Any = None) -> None:
        if claim is None:  # every claim of this run: no temporary table needed, so after a lost connection too
            await self.session.run_reconnecting(self._release, None)
        elif not self.session.lost:
            await self.db_write(self._release, claim.chunk)

    def _release(self, chunk: int | None) -> None:
        """Give up what this run claimed and did not answer (of one chunk, or all): fresh claims
        are deleted, a stale answer being refreshed goes back to answered."""
        chosen, params = (None, []) if chunk is None else (self.map.chunk_hashes(), [chunk])
        for statement in self.session.dialect.release_claims(self.quoted, chosen):
            self.session.execute(statement, [self.owner, *params])
        self.session.commit()

    # Stores -----------------------------------------------------------------------------------------------
    async def store(self, answers: Mapping[str, Result]) -> set[str]:
        # paid for: stored even after a lost connection
        return await self.session.run_reconnecting(self._store, answers)

    def _store(self, answers: Mapping[str, Result]) -> set[str]:
        sent = self.session.own_statements
        rows = [(h, *result_values(self.lookup, result)) for h, result in answers.items()]
        try:
            kept = self.incoming.write(rows, result_columns(self.lookup), owner=self.owner, stamp=time.time(),
                                       credits=self.lookup.credits_per_query, paid_for=self.paid_for)
            self.session.commit()
        finally:
            self.store_statements += self.session.own_statements - sent
        return kept

    # The end -------------------------------------------------------------------------------------------------
    async def close(self) -> None:
        """Drop the run's staging tables (the map's and the incoming table, where they outlive the session)."""
        if not self.plan_only:
            await self.session.run_reconnecting(self.map.drop, self.incoming.drop_statements())
