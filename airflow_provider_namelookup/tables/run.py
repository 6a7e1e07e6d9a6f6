"""One table enrichment run: rows stay in the warehouse, Python handles distinct questions.

1. **Distinct pass** — one GROUP BY over the source (left-joined to the target) gives
   each distinct raw (name, country) with the hash its rows were enriched with and the
   row count. Python plans each value once: unchanged, invalid (its rule), or a query
   to answer. Queries already in the shared **answers table** cost nothing; the rest,
   times the lookup's price, is what the run needs. That is checked against
   ``max_credits`` and the account's remaining credits before anything is spent.
2. **Claim and call** — the needed hashes are claimed in the answers table a chunk at a
   time (insert-if-absent with a lease; each run starts at its own point of the hash
   order, so parallel runs rarely meet), sent as full batches through the async hook,
   and each answered batch is stored at once. Hashes another run holds are waited for;
   if its lease expires (the run died) they are taken over. What the budget does not
   cover is released for the next run.
   Country-of-origin runs on PostgreSQL and MySQL overlap steps 1 and 2 when one query
   per source row would fit the budget: each batch of the distinct pass (read on a
   connection of its own) is claimed and sent while the next is read.
3. **Fill** — the raw-value map (a temporary table) goes to the warehouse, is joined once
   to the answers table, and the target is upserted from ``source ⋈ resolved map`` in one
   statement; the lowest-keyed row of each query this run paid for carries its price in
   ``credits_used`` (the distinct pass read that key with each value).

If a lookup fails (credits exhausted, network gone after retries), the answers received
are already stored, the target is filled with them, the claims are released, and the
error is raised: the next run only pays for what is missing.

Example::

    job = TableJob(session, source, target, answers, RowSpec(LookupKind.GENDER))
    summary = asyncio.run(run_table_job(job, async_hook, log))
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from airflow_provider_namelookup.enrichment.budget import CreditBudget, InsufficientCreditsMode
from airflow_provider_namelookup.enrichment.calls import QueryAnswerer, decide_budget
from airflow_provider_namelookup.enrichment.plan import LookupKind, PlannedRow, RowSpec, plan_row
from airflow_provider_namelookup.enrichment.progress import RunProgress
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.tables.answers import AnswersTable
from airflow_provider_namelookup.tables.schema import STATE_ANSWERED, result_values, timestamp_value
from airflow_provider_namelookup.tables.session import WarehouseSession
from airflow_provider_namelookup.tables.source import DistinctValue, TableSource
from airflow_provider_namelookup.tables.target import TargetTable
from airflow_provider_namelookup.tables.valuemap import MapEntry, ValueMap

_INVALID_VALUES_LOGGED = 20
_PLAN_MEMO_SIZE = 1_024
_CHUNK_REQUESTS_CAP = 16
"""Requests' worth of queries a run claims at a time is 4x this at most (whatever
``max_concurrency``), so parallel runs keep dividing the work between them."""


@dataclass
class TableJob:
    """What one table operator run does.

    :param page_size: distinct values fetched from the warehouse at a time.
    :param max_age: answers (and target rows) older than this are looked up again; None: never.
    :param lease_seconds: how long a claim holds without renewal (a dead run's work is
        taken over after at most this long); renewed every third of it while the run lives.
    :param poll_seconds: how often a run waiting for another run's claims looks again.
    :param plan_only: only plan: count the credits the run needs, spend and write nothing.
    """

    session: WarehouseSession
    source: TableSource
    target: TargetTable
    answers: AnswersTable
    spec: RowSpec
    page_size: int = 10_000
    max_credits: int | None = None
    on_insufficient_credits: InsufficientCreditsMode = "fail"
    check_remaining_credits: bool = True
    progress_interval: float = 15.0
    plan_only: bool = False
    max_age: timedelta | None = None
    lease_seconds: float = 60.0
    poll_seconds: float = 1.0


class TableRun:
    """State of one run; see the module docstring for the steps."""

    def __init__(self, job: TableJob, hook: NameLookupAsyncHook, log: logging.Logger | Any) -> None:
        self.job = job
        self.hook = hook
        self.log = log
        self.lookup = job.spec.lookup
        self.owner = f"{uuid.uuid4().hex}"
        self.progress = RunProgress(label=f"{job.source.label} -> {job.target.name}",
                                    interval=job.progress_interval)
        self.entries: dict[Any, MapEntry] = {}
        self.first_rows: dict[str, tuple[Any, Any]] = {}
        """query hash -> (lowest key of its rows to write, the map entry holding that row)"""
        self.rows_by_hash: Counter[str] = Counter()
        self.queries: dict[str, Query] = {}
        self.answered_before: set[str] = set()
        self.answered_elsewhere: set[str] = set()
        self.answered_here: set[str] = set()
        self.paid_here: set[str] = set()
        """What this run stored in the answers table itself (its rows carry the price)."""
        self._unstored: dict[str, tuple[Any, ...]] = {}
        self._storing: asyncio.Future[None] | None = None
        self.deferred: set[str] = set()
        self.lost_claims = 0
        self.remaining_credits: int | None = None
        """The account's remaining credits, once read."""
        self.invalid_values = 0
        self.target_created = False
        self._plan_value = lru_cache(maxsize=_PLAN_MEMO_SIZE)(self._plan_uncached)
        now = datetime.now(UTC)
        self.stamp = timestamp_value(now, job.target.dialect)
        self.stale_rows_before = timestamp_value(now - job.max_age, job.target.dialect) if job.max_age else None
        self.stale_answers_before = (now - job.max_age).timestamp() if job.max_age else None

    async def db(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await self.job.session.run(fn, *args, **kwargs)

    async def db_write(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """An idempotent write step, run again if the database breaks a lock conflict."""
        return await self.job.session.run_retrying(fn, *args, **kwargs)

    # Distinct pass ----------------------------------------------------------------------------------
    def _plan_uncached(self, name: Any, country: Any) -> PlannedRow:
        return plan_row(None, name, self.job.spec, country=country)

    def _plan(self, name: Any, country: Any) -> PlannedRow:
        try:
            return self._plan_value(name, country)
        except TypeError:  # an unhashable value (a driver's JSON or array type)
            return self._plan_uncached(name, country)

    @staticmethod
    def _entry_key(name: Any, country: Any) -> Any:
        key = (type(name), name, type(country), country)
        try:
            hash(key)
        except TypeError:
            return (type(name), repr(name), type(country), repr(country))
        return key

    def _take(self, value: DistinctValue) -> str | None:
        """Plan one distinct value; the query's hash when it is a query not seen before in this run."""
        name, country, stored_hash, rows, first_key = value
        rows = int(rows)
        self.progress.rows_read += rows
        planned = self._plan(name, country)
        if stored_hash == planned.query_hash:
            self.progress.rows_unchanged += rows
            return None
        entry_key = self._entry_key(name, country)
        self.entries.setdefault(entry_key, (
            name, country, planned.query_hash, None if planned.error is None else str(planned.error), None))
        if planned.error is not None:
            self.progress.rows_invalid += rows
            self._note_invalid(planned, rows)
            return None
        assert planned.query is not None
        self.rows_by_hash[planned.query_hash] += rows
        self._note_first_row(planned.query_hash, first_key, entry_key)
        if planned.query_hash in self.queries:
            return None
        self.queries[planned.query_hash] = planned.query.with_id(None)
        return planned.query_hash

    def _note_first_row(self, query_hash: str, key: Any, entry_key: Any) -> None:
        known = self.first_rows.get(query_hash)
        try:
            lower = known is None or key < known[0]
        except TypeError:  # keys that do not compare: any one row will do
            lower = False
        if lower:
            self.first_rows[query_hash] = (key, entry_key)

    def _note_invalid(self, planned: PlannedRow, rows: int) -> None:
        self.invalid_values += 1
        if self.invalid_values <= _INVALID_VALUES_LOGGED:
            self.log.warning("%d row(s) hold a value that is invalid and costs nothing: %s", rows, planned.error)
        elif self.invalid_values == _INVALID_VALUES_LOGGED + 1:
            self.log.warning("More invalid values follow; see the error column of %s", self.job.target.name)

    async def read_distinct(self, *, target_exists: bool,
                            feed: asyncio.Queue[list[str] | None] | None = None) -> None:
        """The distinct pass. With a ``feed`` (pipelined runs) it reads on a connection of its own
        and hands each batch's new queries that are not answered yet to the claimer, then None."""
        reader = self.job.session if feed is None else WarehouseSession(self.job.session.hook)
        try:
            batches: Iterator[list[DistinctValue]] = self.job.source.on(reader).distinct_values(
                self.job.target, joined=target_exists, stale_before=self.stale_rows_before,
                batch_size=self.job.page_size)
            asked = 0
            while (batch := await reader.run(next, batches, None)) is not None:
                self.progress.pages += 1
                new = [h for value in batch if (h := self._take(value)) is not None]
                if feed is not None:
                    to_ask = await self.sort_out_answered(answers_exist=True, hashes=new)
                    asked += len(to_ask)
                    self.progress.distinct_queries = asked
                    if to_ask:
                        await feed.put(to_ask)
                self.progress.tick(self.log)
            self.progress.lookups_while_reading = self.progress.lookups
        finally:
            if feed is not None:
                await feed.put(None)
                await asyncio.get_running_loop().run_in_executor(None, reader.shutdown)

    async def sort_out_answered(self, *, answers_exist: bool, hashes: list[str] | None = None) -> list[str]:
        """Note the needed queries (of ``hashes``, default all) already answered; return those still to ask."""
        hashes = list(self.queries) if hashes is None else hashes
        states = await self.db(self.job.answers.states, hashes) if answers_exist else {}
        stale = self.stale_answers_before
        for h, (state, _, _, answered_at) in states.items():
            if state == STATE_ANSWERED and (stale is None or (answered_at or 0) >= stale):
                self.answered_before.add(h)
        return [h for h in hashes if h not in self.answered_before]

    # Claim and call -----------------------------------------------------------------------------------
    @property
    def chunk_size(self) -> int:
        per_request = self.hook.sizer.limit if self.lookup.takes_hints else 25
        return per_request * min(self.hook.max_concurrency, _CHUNK_REQUESTS_CAP) * 4

    def _my_order(self, hashes: list[str]) -> list[str]:
        """The hashes in hash order, starting at this run's own point (parallel runs spread out)."""
        ordered = sorted(hashes)
        if not ordered:
            return ordered
        start = int(self.owner[:8], 16) % len(ordered)
        return ordered[start:] + ordered[:start]

    async def claim_and_answer(self, feed: asyncio.Queue[list[str] | None], answerer: QueryAnswerer,
                               budget: CreditBudget) -> None:
        """Claim chunks ahead (a producer) while the claimed ones are sent (the consumer).

        :param feed: lists of hashes to ask, then None.
        """
        claimed: asyncio.Queue[list[str]] = asyncio.Queue(maxsize=1)
        producer = asyncio.create_task(self._claim_chunks(feed, claimed, budget))
        try:
            while True:
                getter = asyncio.ensure_future(claimed.get())
                await asyncio.wait({getter, producer}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    await self._send(getter.result(), answerer)
                    continue
                getter.cancel()
                if claimed.empty():
                    break
            await producer  # its error, if it failed
        finally:
            if not producer.done():
                producer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await producer
        self.deferred |= answerer.deferred

    async def _claim_chunks(self, feed: asyncio.Queue[list[str] | None], claimed: asyncio.Queue[list[str]],
                            budget: CreditBudget) -> None:
        pending: list[str] = []
        waiting: set[str] = set()
        feeding = True
        while feeding or pending or waiting:
            if feeding and (not pending or not feed.empty()):
                try:  # while others' claims are waited for, look at them again every poll_seconds
                    batch = await asyncio.wait_for(feed.get(), self.job.poll_seconds if waiting else None)
                except TimeoutError:
                    batch = []
                if batch is None:
                    feeding = False
                elif batch:
                    pending += self._my_order(batch)
                    continue
                if not waiting:
                    continue
            if pending:
                chunk, pending = pending[:self.chunk_size], pending[self.chunk_size:]
                if budget.allowance is not None and budget.spent >= budget.allowance:
                    self.deferred.update(chunk)
                    continue
            else:
                if not feeding:
                    await asyncio.sleep(self.job.poll_seconds)
                chunk, waiting = sorted(waiting), set()
            outcome = await self.db_write(self.job.answers.claim, chunk, self.lookup, owner=self.owner,
                                          lease_seconds=self.job.lease_seconds,
                                          stale_before=self.stale_answers_before)
            self.answered_elsewhere |= outcome.answered
            waiting |= outcome.held_by_others
            if outcome.mine:
                await claimed.put(outcome.mine)
            self.progress.tick(self.log)

    async def _store(self, values: dict[str, tuple[Any, ...]]) -> None:
        stored = await self.db_write(self.job.answers.store, values, owner=self.owner, lookup=self.lookup)
        self.answered_here.update(values)
        self.paid_here |= stored
        if len(stored) < len(values):
            self.lost_claims += len(values) - len(stored)
            self.log.warning("%d answers came after their claims had expired and been taken over by "
                             "another run: raise lease_seconds", len(values) - len(stored))

    async def _store_unstored(self) -> None:
        while self._unstored:
            batch, self._unstored = self._unstored, {}
            await self._store(batch)

    async def _keep(self, values: dict[str, tuple[Any, ...]]) -> None:
        """Store answered values; what arrives while a store runs goes in the next, bigger one.
        Waits when more than a few requests' worth is paid for but not stored yet."""
        self._unstored.update(values)
        if self._storing is not None and self._storing.done():
            storing, self._storing = self._storing, None
            storing.result()  # a failed store's error
        if self._storing is None:
            self._storing = asyncio.ensure_future(self._store_unstored())
        elif len(self._unstored) >= self.chunk_size // 4:
            await asyncio.shield(self._storing)

    async def _kept(self) -> None:
        """Wait until everything answered is stored (the error of a store that failed)."""
        if self._storing is not None:
            storing, self._storing = self._storing, None
            await storing
        if self._unstored:
            await self._store_unstored()

    async def _send(self, mine: list[str], answerer: QueryAnswerer) -> None:
        """Send claimed queries; answered batches are stored while the next requests run."""
        try:
            async for chunk in answerer.answer({h: self.queries[h] for h in mine}):
                await self._keep({h: result_values(self.lookup, result) for h, result in chunk.items()})
        finally:
            try:
                await self._kept()
            finally:
                await self.db_write(self.job.answers.release, owner=self.owner, hashes=mine)

    async def _renew_leases(self) -> None:
        while True:
            await asyncio.sleep(self.job.lease_seconds / 3)
            await self.db_write(self.job.answers.renew, owner=self.owner, lease_seconds=self.job.lease_seconds)

    # Fill -------------------------------------------------------------------------------------------------
    async def fill(self) -> None:
        job = self.job
        if not self.entries:
            return
        started = time.monotonic()
        value_map = ValueMap(job.session, job.source)
        await self.db(value_map.create)
        try:
            await self.db(value_map.load, self._map_entries())
            await self.db(value_map.resolve, job.answers, self.lookup)
            await self.db_write(job.target.fill, job.source, value_map, stamp=self.stamp,
                                stale_before=self.stale_rows_before, new_table=self.target_created)
        finally:
            await self.db(value_map.drop)
        self.log.info("Filled %s from %d distinct values in %.1f s", job.target.name, len(self.entries),
                      time.monotonic() - started)

    def _map_entries(self) -> list[MapEntry]:
        """The map's entries, the charged row's key on the entry of each query this run paid for."""
        entries = dict(self.entries)
        for query_hash in self.paid_here:
            if query_hash in self.first_rows:
                key, entry_key = self.first_rows[query_hash]
                name, country, h, error, _ = entries[entry_key]
                entries[entry_key] = (name, country, h, error, key)
        return list(entries.values())

    def _count_outcomes(self) -> None:
        p = self.progress
        answered = self.answered_before | self.answered_elsewhere | self.answered_here
        p.rows_enriched = sum(self.rows_by_hash[h] for h in answered)
        p.cache_hits = sum(self.rows_by_hash[h] for h in answered - self.answered_here)
        p.rows_deferred = sum(self.rows_by_hash[h] for h in self.deferred - answered)

    # The run ----------------------------------------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        job = self.job
        key_sample = await self.db(job.source.peek_key)
        if key_sample is None:
            self.log.info("Source %s is empty: nothing to enrich", job.source.label)
            self.progress.log_summary(self.log)
            return self.progress.summary()
        if job.plan_only:
            target_exists = await self.db(job.target.exists)
            answers_exist = await self.db(job.answers.exists)
        else:
            if await self.db(job.target.ensure, key_sample):
                self.log.info("Created target table %s", job.target.name)
                self.target_created = True
            if await self.db(job.answers.ensure):
                self.log.info("Created answers table %s", job.answers.name)
            target_exists = answers_exist = True
        joined = target_exists and not self.target_created
        started = time.monotonic()
        pipelined = None if job.plan_only else await self._pipelined_budget()
        feed: asyncio.Queue[list[str] | None] = asyncio.Queue()
        if pipelined is not None:
            budget = pipelined
            self.log.info("Country-of-origin lookups start while the distinct values are read (the source's "
                          "rows times the price fit the budget)")
            reader = asyncio.create_task(self.read_distinct(target_exists=joined, feed=feed))
        else:
            await self.read_distinct(target_exists=joined)
            to_ask = await self._plan_summary(started, await self.sort_out_answered(answers_exist=answers_exist))
            if job.plan_only:
                self._count_outcomes()
                self.log.info("Plan only: %d distinct new queries would need %d credits; nothing was spent",
                              len(to_ask), self.progress.credits_needed)
                self.progress.log_summary(self.log)
                return self.progress.summary()
            needed = self.progress.credits_needed
            budget = await decide_budget(self.hook, needed, max_credits=job.max_credits,
                                         mode=job.on_insufficient_credits,
                                         check_remaining=job.check_remaining_credits,
                                         remaining=self.remaining_credits)
            if budget.allowance is not None and budget.allowance < needed:
                self.log.warning("Only %d of the %d credits needed may be spent (limited by %s); the rest is left "
                                 "for the next run", budget.allowance, needed, budget.limited_by)
            feed.put_nowait(to_ask)
            feed.put_nowait(None)
            reader = None
        answerer = QueryAnswerer(self.hook, self.lookup, budget, self.progress)
        renewer = asyncio.create_task(self._renew_leases())
        try:
            await self.claim_and_answer(feed, answerer, budget)
            if reader is not None:
                await reader
                await self._plan_summary(started, [h for h in self.queries if h not in self.answered_before])
        finally:
            for task in (renewer, reader):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            try:
                await self.db_write(job.answers.release, owner=self.owner)
                await self.fill()
            finally:
                self._count_outcomes()
                self.progress.log_summary(self.log)
        return self.progress.summary()

    async def _plan_summary(self, started: float, to_ask: list[str]) -> list[str]:
        self.log.info("Read %d distinct values of %d rows in %.1f s", len(self.entries), self.progress.rows_read,
                      time.monotonic() - started)
        self.progress.distinct_queries = len(to_ask)
        self.progress.credits_needed = needed = len(to_ask) * self.lookup.credits_per_query
        self.log.info("Plan for %s: %d rows, %d distinct new queries (%d credits), %d already answered in %s",
                      self.progress.label, self.progress.rows_read, len(to_ask), needed,
                      len(self.answered_before), self.job.answers.name)
        return to_ask

    async def _pipelined_budget(self) -> CreditBudget | None:
        """The budget of a pipelined run, or None when the run must read everything first.

        Country-of-origin lookups (one request each) start while the distinct pass still reads,
        on PostgreSQL and MySQL (SQLite's GROUP BY returns nothing before it has sorted
        everything), when even one query per source row would fit the budget: the exact need
        is only known at the end of the pass, and nothing may be spent before it is checked.
        """
        job = self.job
        if self.lookup is not LookupKind.ORIGIN or job.session.dialect.name == "sqlite":
            return None
        bound = await self.db(job.source.count_rows) * self.lookup.credits_per_query
        if job.max_credits is not None and bound > job.max_credits:
            return None
        remaining = None
        if job.check_remaining_credits:
            remaining = int((await self.hook.get_statistic()).get("remaining_credits") or 0)
            self.remaining_credits = remaining
            if bound > remaining:
                return None
        return CreditBudget.decide(needed=bound, max_credits=job.max_credits, remaining=remaining,
                                   mode=job.on_insufficient_credits)


async def run_table_job(job: TableJob, hook: NameLookupAsyncHook, log: logging.Logger | Any) -> dict[str, Any]:
    """Run one table enrichment and return its summary (see :class:`RunProgress`)."""
    return await TableRun(job, hook, log).run()

