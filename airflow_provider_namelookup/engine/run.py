"""The one lookup run, for every source and sink: distinct → plan → already answered? →
budget → claim → call → store → fill.

1. **Distinct and plan** — the source yields its distinct values page by page (a table's
   new and changed rows only, grouped in the warehouse; a list's items). Each is planned
   once (:mod:`.plan`): a query with its hash, or the rule it broke (it costs nothing).
2. **Already answered?** — the answer cache knows which hashes have an answer; the rest,
   priced (:class:`~airflow_provider_namelookup.contract.LookupKind`), is the run's need.
3. **Budget** — the need is checked once against ``max_credits`` and the account's
   remaining credits (:func:`.budget.decide_budget`). A run that looks up while it still
   reads (country of origin on a warehouse that reads on a second connection) decides on
   a bound instead: one query per source row.
4. **Claim, call, store** — the hashes to ask are claimed in the cache a group at a time
   (another run's claims are waited for, not paid again), sent through the async hook
   with the hash as each query's id (:mod:`.answerer`), and their answers stored behind
   the lookups (:mod:`.writeback`). What the budget does not cover is released.
5. **Fill** — the sink writes every row whose question is answered or invalid.

If a lookup fails (credits exhausted, network gone), the answers received are stored,
the sink is filled with them, the claims are released, and the error is raised: the next
run pays only for what is missing. ``plan_only`` stops after step 2, spending and
writing nothing.

Example::

    run = LookupRun(RowSpec(LookupKind.GENDER), source, cache, sink, hook, log, RunOptions(max_credits=500))
    progress = await run.run()
    progress.summary()["credits_used"]
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import httpx

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.answerer import QueryAnswerer
from airflow_provider_namelookup.engine.budget import CreditBudget, InsufficientCreditsMode, decide_budget
from airflow_provider_namelookup.engine.invalid import InvalidValues
from airflow_provider_namelookup.engine.plan import PlannedRow, RowSpec, plan_query_object
from airflow_provider_namelookup.engine.ports import (
    AnswerCache,
    Claim,
    Question,
    QuestionSource,
    RunOutcome,
    Sink,
    SourceValue,
)
from airflow_provider_namelookup.engine.progress import RunProgress
from airflow_provider_namelookup.engine.writeback import WriteBack
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.hooks.transport_errors import display_url
from airflow_provider_namelookup.models import Query

_CLAIMS_AHEAD = 1
"""Claims made while the previous one is still being asked (so the next requests start at once)."""


@dataclass
class RunOptions:
    """How one run may spend and how it reports.

    :param max_credits: most credits the run may spend; None for no budget.
    :param on_insufficient_credits: ``fail`` stops before spending anything when the need
        exceeds what is available; ``partial`` spends what it may.
    :param check_remaining_credits: read the account's remaining credits (a free call)
        before spending.
    :param plan_only: count the need; spend, create and write nothing.
    :param progress_interval: seconds between progress lines.
    :param poll_seconds: how often a run waiting for another run's claims looks again.
    """

    max_credits: int | None = None
    on_insufficient_credits: InsufficientCreditsMode = "fail"
    check_remaining_credits: bool = True
    plan_only: bool = False
    progress_interval: float = 15.0
    poll_seconds: float = 1.0


class LookupRun:
    """One run; see the module docstring for its steps.

    :param spec: how values are read (lookup, name kind, default hints, secrets).
    :param label: what is enriched, for log lines (default: the source's label).
    :param statements: how many SQL statements the run has sent so far (a warehouse's count).
    :param on_failure: called with the error when a step fails, after the answers are kept and
        the sink is filled, before the summary (which stays the last line of the log).
    """

    def __init__(self, spec: RowSpec, source: QuestionSource, cache: AnswerCache, sink: Sink,
                 hook: NameLookupAsyncHook, log: logging.Logger | Any, options: RunOptions | None = None, *,
                 label: str | None = None, statements: Callable[[], int] | None = None,
                 on_failure: Callable[[BaseException], None] | None = None) -> None:
        self.spec = spec
        self.lookup: LookupKind = spec.lookup
        self.source = source
        self.cache = cache
        self.sink = sink
        self.hook = hook
        self.log = log
        self.options = options or RunOptions()
        self.statements = statements
        self.on_failure = on_failure
        self.progress = RunProgress(label=label or source.label, interval=self.options.progress_interval,
                                    reads_pages=getattr(source, "reads_pages", False))
        self.questions: list[Question] = []
        self.queries: dict[str, Query] = {}
        self.rows_by_hash: Counter[str] = Counter()
        self.to_ask: list[str] = []
        self.answered_before: set[str] = set()
        self.answered_elsewhere: set[str] = set()
        self.paid_here: set[str] = set()
        self.deferred: set[str] = set()
        self.invalid = InvalidValues(spec.secrets)
        self.remaining_credits: int | None = None
        self.claimed: set[str] = set()
        """Hashes this run claimed for itself and handed to the lookups."""
        self.looking_up = False

    # Distinct and plan --------------------------------------------------------------------------------
    def _plan(self, value: SourceValue) -> PlannedRow:
        if isinstance(value.raw, NameLookupValidationError):
            return PlannedRow(value.ref, None, f"invalid:{value.ref!r}", value.raw)
        return plan_query_object(value.ref, value.raw, self.spec)

    def _take(self, page: list[Question]) -> list[str]:
        """Count a page's questions; the hashes of queries not seen before in this run."""
        new: list[str] = []
        for question in page:
            value, planned = question.value, question.planned
            self.progress.rows_read += value.rows
            if planned.error is not None:
                self.progress.rows_invalid += value.rows
                self.invalid.note(planned.error, value)
                continue
            self.rows_by_hash[planned.query_hash] += value.rows
            if planned.query_hash not in self.queries:
                assert planned.query is not None
                self.queries[planned.query_hash] = planned.query.with_id(None)
                new.append(planned.query_hash)
        return new

    async def _read(self, feed: asyncio.Queue[list[str] | None] | None = None) -> None:
        """Read and plan every page, then sort out what is answered. With a ``feed`` (a run that
        looks up while it reads) each page is sorted out as it comes and its hashes to ask go
        to the claimer at once."""
        try:
            async for values in self._pages(separately=feed is not None):
                # the query object planned, the value is kept without it (a run holds every distinct value)
                page = [Question(replace(v, raw=None), self._plan(v)) for v in values]
                self.questions += page
                new = self._take(page)
                if feed is not None:
                    await self._sort_out(page, new, feed)
                if not self.looking_up:
                    self.progress.tick(self.log)
            if feed is None:  # every page read: sort out all of them at once
                await self._sort_out(self.questions, list(self.queries), None)
            self.progress.lookups_while_reading = self.progress.lookups if feed is not None else 0
        finally:
            if feed is not None:
                await feed.put(None)
        self.progress.rows_unchanged = self.source.total_rows - self.progress.rows_read
        self.progress.rows_read = self.source.total_rows
        self.invalid.log(self.log, self.progress.label)

    async def _sort_out(self, page: list[Question], new: list[str],
                        feed: asyncio.Queue[list[str] | None] | None) -> None:
        """Hand the questions to the cache; note which new ones are answered already."""
        if not page:
            return
        await self.cache.register(page)
        answered = await self.cache.answered(new) if new else set()
        self.answered_before |= answered
        to_ask = [h for h in new if h not in answered]
        self.to_ask += to_ask
        self.progress.distinct_queries = len(self.to_ask)
        if feed is not None and to_ask:
            await feed.put(to_ask)

    async def _pages(self, *, separately: bool) -> AsyncIterator[list[SourceValue]]:
        async for values in self.source.pages(separately=separately):
            self.progress.pages += 1
            yield list(values)

    # Budget -------------------------------------------------------------------------------------------
    @property
    def price(self) -> int:
        return self.lookup.credits_per_query

    async def _remaining(self) -> int:
        """The account's remaining credits: one free statistic call per run, at most."""
        if self.remaining_credits is None:
            self.remaining_credits = int((await self.hook.get_statistic()).get("remaining_credits") or 0)
        return self.remaining_credits

    async def _decide(self, needed: int, *, mode: InsufficientCreditsMode | None = None) -> CreditBudget:
        return await decide_budget(needed, max_credits=self.options.max_credits,
                                   mode=mode or self.options.on_insufficient_credits,
                                   remaining=self._remaining if self.options.check_remaining_credits else None)

    async def _budget_while_reading(self) -> CreditBudget | None:
        """The budget of a run that looks up while it reads, or None when it must read first.

        Only country of origin (one request per name) gains from it, and only where the source
        reads on a connection of its own. The exact need is known only at the end of the
        reading, and nothing may be spent before it is checked: so the run decides on a bound,
        one query per source row, and reads first when even that bound does not fit.
        """
        if self.options.plan_only or self.lookup is not LookupKind.ORIGIN or not self.source.reads_while_writing:
            return None
        bound = await self.source.row_bound() * self.price
        trial = await self._decide(bound, mode="partial")  # a bound that does not fit means: read first
        return None if trial.short else trial

    def _log_plan(self, *, bound: int | None = None) -> None:
        p = self.progress
        if bound is not None:
            self.log.info("Plan for %s: looking up while reading; at most %d credits (one query per source row), "
                          "checked against the budget before anything is spent", p.label, bound)
            return
        if not self.to_ask and not p.rows_read - p.rows_unchanged:
            self.log.info("Plan for %s: all %d rows unchanged, nothing to look up", p.label, p.rows_unchanged)
            return
        mode = "plan only, nothing will be spent: " if self.options.plan_only else ""
        self.log.info("Plan for %s: %s%d rows to enrich (%d unchanged, %d invalid), %d distinct new queries "
                      "(%d credits), %d already answered in %s", p.label, mode, p.rows_read - p.rows_unchanged,
                      p.rows_unchanged, p.rows_invalid, len(self.to_ask), p.credits_needed,
                      len(self.answered_before), self.cache.name)

    # Claim, call, store ---------------------------------------------------------------------------------
    async def _ask(self, feed: asyncio.Queue[list[str] | None], budget: CreditBudget) -> None:
        """Claim ahead (a producer) while what was claimed is asked (the consumer)."""
        answerer = QueryAnswerer(self.hook, self.lookup, budget, self.progress)
        claimed: asyncio.Queue[tuple[Claim, list[str]]] = asyncio.Queue(maxsize=_CLAIMS_AHEAD)
        writeback = WriteBack(self.cache.store, interval=self.cache.store_every, batch=self.cache.store_batch,
                              on_stored=self._stored)
        producer = asyncio.create_task(self._claim(feed, claimed, budget))
        try:
            while True:
                getter = asyncio.ensure_future(claimed.get())
                await asyncio.wait({getter, producer}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    await self._send(*getter.result(), answerer, writeback)
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
            await writeback.drain()
            self.deferred |= answerer.deferred

    async def _claim(self, feed: asyncio.Queue[list[str] | None],
                     claimed: asyncio.Queue[tuple[Claim, list[str]]], budget: CreditBudget) -> None:
        pending: list[Claim] = []
        waiting: list[tuple[Claim, set[str]]] = []  # claims with hashes another run holds, and those hashes
        feeding = True
        while feeding or pending or waiting:
            if feeding and (not pending or not feed.empty()):
                try:  # while others' claims are waited for, look at them again every poll_seconds
                    hashes = await asyncio.wait_for(feed.get(), self.options.poll_seconds if waiting else None)
                except TimeoutError:
                    hashes = []
                if hashes is None:
                    feeding = False
                elif hashes:
                    pending += self.cache.plan_claims(hashes)
                    continue
                if not waiting:
                    continue
            if pending:
                claim, wanted = pending.pop(0), None
                if budget.exhausted(self.price):
                    self.deferred.update(claim.hashes)
                    continue
            else:
                if not feeding:
                    await asyncio.sleep(self.options.poll_seconds)
                claim, wanted = waiting.pop(0)
            outcome = await self.cache.claim(claim)
            asked = set(claim.hashes) if wanted is None else wanted
            self.answered_elsewhere |= (outcome.answered & asked) - self.answered_before - self.claimed
            if held := outcome.held_by_others & asked:
                waiting.append((claim, held))
            own = set(outcome.mine)
            mine = [h for h in claim.hashes if h in asked and h in own and h not in self.claimed]
            if mine:
                self.claimed.update(mine)
                await claimed.put((claim, mine))

    def _stored(self, answers: Mapping[str, Any], kept: set[str]) -> None:
        self.paid_here |= kept
        if len(kept) < len(answers):
            self.log.warning("%d answers came after their claims had expired and been taken over by another run: "
                             "raise lease_seconds", len(answers) - len(kept))

    async def _send(self, claim: Claim, mine: list[str], answerer: QueryAnswerer, writeback: WriteBack) -> None:
        answered: set[str] = set()
        try:
            async for chunk in answerer.answer({h: self.queries[h] for h in mine}):
                answered.update(chunk)
                await writeback.add(chunk)
        finally:
            if len(answered) < len(mine):  # not granted by the budget, or a failure: free them now
                await writeback.drain()
                await self.cache.release(claim)

    async def _renew_leases(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            await self.cache.renew()

    async def _report(self) -> None:
        """Progress lines while looking up: lookups done, credits, requests in flight, latency."""
        while True:
            await asyncio.sleep(self.progress.interval)
            limit = self.hook.concurrency
            self.progress.in_flight, self.progress.concurrency = limit.in_flight, limit.current
            self.progress.latency_ms = round((limit.latency or 0.0) * 1000, 1)
            self.log.info("Progress: %s", self.progress.lookup_line())

    # The run --------------------------------------------------------------------------------------------
    async def run(self) -> RunProgress:
        """Run every step; the progress holds the summary (also when a step raised)."""
        options = self.options
        self.log.info("Name Lookup service: %s", display_url(httpx.URL(self.hook.settings.base_url)).rstrip("/"))
        if not await self.source.prepare():
            self.log.info("Source %s is empty: nothing to enrich", self.source.label)
            self.progress.log_summary(self.log)
            return self.progress
        await self.sink.prepare(create=not options.plan_only)
        await self.cache.prepare(create=not options.plan_only)
        feed: asyncio.Queue[list[str] | None] = asyncio.Queue()
        budget = await self._budget_while_reading()
        reader: asyncio.Task[None] | None = None
        if budget is not None:
            self._log_plan(bound=budget.needed)
            reader = asyncio.create_task(self._read(feed))
        else:
            await self._read()
            self.progress.credits_needed = len(self.to_ask) * self.price
            self._log_plan()
            if options.plan_only:
                self._count_outcomes()
                self.progress.log_summary(self.log)
                return self.progress
            budget = await self._decide(self.progress.credits_needed)
            if budget.short:
                self.log.warning("Only %s of the %d credits needed may be spent (limited by %s); the rest is left "
                                 "for the next run", budget.allowance, budget.needed, budget.limited_by)
            feed.put_nowait(self.to_ask)
            feed.put_nowait(None)
        helpers = [asyncio.create_task(self._report())]
        if self.cache.lease_seconds:
            helpers.append(asyncio.create_task(self._renew_leases(self.cache.lease_seconds / 3)))
        self.looking_up = True
        failure: BaseException | None = None
        try:
            await self._ask(feed, budget)
            if reader is not None:
                await reader
                self.progress.credits_needed = len(self.to_ask) * self.price
                self._log_plan()
        except BaseException as err:
            failure = err
            raise
        finally:
            self.looking_up = False
            for task in (*helpers, reader):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            try:
                if self.claimed - self.paid_here:
                    await self.cache.release()
                await self.sink.fill(self._outcome())
            except BaseException as err:  # the first error is the one raised; a later one is logged
                if failure is None:
                    failure = err
                    raise
                self.log.error("While stopping: %s", err)
            finally:
                self._count_outcomes()
                if failure is not None and self.on_failure is not None:
                    self.on_failure(failure)
                self.progress.log_summary(self.log)
        return self.progress

    def _answered(self) -> set[str]:
        return self.answered_before | self.answered_elsewhere | self.paid_here

    def _outcome(self) -> RunOutcome:
        return RunOutcome(self.questions, self._answered(), set(self.paid_here), set(self.deferred))

    def _count_outcomes(self) -> None:
        p = self.progress
        answered = self._answered()
        p.rows_enriched = sum(self.rows_by_hash[h] for h in answered)
        p.cache_hits = sum(self.rows_by_hash[h] for h in answered - self.paid_here)
        p.rows_deferred = sum(self.rows_by_hash[h] for h in self.deferred - answered)
        p.absorb_call_stats(self.hook.stats)
        if self.statements is not None:
            p.statements = self.statements()
