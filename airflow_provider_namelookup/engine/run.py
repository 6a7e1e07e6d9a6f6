"""The one lookup run, for every source and sink: read → plan → already answered? → budget →
claim → ask → store → fill.

1. **Read and plan** — the source yields its distinct values page by page (a table's new
   and changed rows only, grouped in the warehouse; a list's items). Each is planned once
   (:mod:`.plan`): a query with its hash, or the rule it broke (it costs nothing). Every
   distinct query has one entry in the run's :class:`~.ledger.Ledger`.
2. **Already answered?** — the answer cache knows which hashes have an answer; the rest,
   priced (:class:`~airflow_provider_namelookup.contract.LookupKind`), is the run's need.
3. **Budget** — the need is checked once against ``max_credits`` and the account's
   remaining credits (:func:`.budget.decide_budget`).
4. **Claim, ask, store** — the hashes to ask are claimed in the cache a group at a time
   (another run's claims are waited for, not paid again), sent to the service (the
   :class:`~.ports.LookupService` port, which the async hook fills) with the hash as each
   query's id (:mod:`.answerer`), and their answers stored behind the lookups
   (:mod:`.writeback`). What the budget does not cover is released.
5. **Fill** — the sink writes every row whose question is answered or invalid.

A run works in one of two modes. It **reads, then asks** (:meth:`LookupRun._read_then_ask`):
the whole source is read and planned, the exact need checked, then the lookups start. Or,
when the source reads on a connection of its own and a bound on the need fits the budget
(country of origin: one query per source row), it **asks while it reads**
(:meth:`LookupRun._ask_while_reading`): each page's new queries are claimed and asked as
soon as the page is planned.

If a lookup fails (credits exhausted, network gone), the answers received are stored,
the sink is filled with them, the claims are released, and the error is raised: the next
run pays only for what is missing. ``plan_only`` stops after step 2, spending and
writing nothing.

Example::

    run = LookupRun(QueryRules(LookupKind.GENDER), source, cache, sink, async_hook, log, RunOptions(max_credits=500))
    progress = await run.run()
    progress.summary()["credits_used"]
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.answerer import QueryAnswerer
from airflow_provider_namelookup.engine.budget import CreditBudget, InsufficientCreditsMode, decide_budget
from airflow_provider_namelookup.engine.invalid import InvalidValues
from airflow_provider_namelookup.engine.ledger import ANSWERED_STATES, HOLDING, TO_CLAIM, Ledger, QueryState
from airflow_provider_namelookup.engine.plan import QueryRules, plan_value
from airflow_provider_namelookup.engine.ports import (
    AnswerCache,
    Claim,
    LookupService,
    Question,
    QuestionSource,
    Result,
    RunOutcome,
    Sink,
    SourceValue,
    StatementCounts,
)
from airflow_provider_namelookup.engine.progress import RunProgress
from airflow_provider_namelookup.engine.writeback import WriteBack

_CLAIMS_AHEAD = 1
"""Claims made while the previous one is still being asked (so the next requests start at once)."""

HashQueue = asyncio.Queue[list[str] | None]
"""Hashes to claim, a page at a time; None when the source is read to its end."""


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
    :param spent_earlier: what earlier executions covered by the same ``max_credits`` spent (the
        earlier tries of the task instance in its DAG run, when ``max_credits_scope`` is
        ``dag_run``): ``max_credits`` bounds them and this run together. Read once, when the
        budget is decided; None: ``max_credits`` is this run's alone.
    """

    max_credits: int | None = None
    on_insufficient_credits: InsufficientCreditsMode = "fail"
    check_remaining_credits: bool = True
    plan_only: bool = False
    progress_interval: float = 15.0
    poll_seconds: float = 1.0
    spent_earlier: Callable[[], Awaitable[int]] | None = None


class LookupRun:
    """One run; see the module docstring for its steps and modes.

    :param rules: how values become queries (lookup, name kind, default hints, secrets).
    :param service: the service (the async hook).
    :param label: what is enriched, for log lines (default: the source's label).
    :param statements: what the run's SQL statements were, read for the summary (a warehouse's
        counts; None for a list).
    :param on_failure: called with the error and the number of distinct queries this run paid for
        when a step fails, after the answers are kept and the sink is filled, before the summary
        (which stays the last line of the log).
    """

    def __init__(self, rules: QueryRules, source: QuestionSource, cache: AnswerCache, sink: Sink,
                 service: LookupService, log: logging.Logger | Any, options: RunOptions | None = None, *,
                 label: str | None = None, statements: StatementCounts | None = None,
                 on_failure: Callable[[BaseException, int], None] | None = None) -> None:
        self.rules = rules
        self.lookup: LookupKind = rules.lookup
        self.source = source
        self.cache = cache
        self.sink = sink
        self.service = service
        self.log = log
        self.options = options or RunOptions()
        self.statements = statements
        self.on_failure = on_failure
        self.progress = RunProgress(label=label or source.label, interval=self.options.progress_interval,
                                    reads_pages=getattr(source, "reads_pages", False), calls=service.counters)
        self.ledger = Ledger()
        self.questions: list[Question] = []
        """Every planned value, in the order read (the sink's input)."""
        self.to_ask: list[str] = []
        """The hashes no answer was found for when they were read: the run's need."""
        self.invalid = InvalidValues(rules.secrets)
        self.remaining_credits: int | None = None
        self._remaining_asked: asyncio.Task[int] | None = None
        self._spent_earlier: int | None = None
        self.looking_up = False

    @property
    def price(self) -> int:
        return self.lookup.credits_per_query

    # Read and plan ----------------------------------------------------------------------------------------
    def _plan_page(self, values: Sequence[SourceValue]) -> tuple[list[Question], list[str]]:
        """Plan a page's values and count them; the page's questions and its hashes new to the run
        (the ledger keeps each query without the caller's id: its hash is the id on the wire)."""
        page = [plan_value(value, self.rules) for value in values]
        self.questions += page
        new: list[str] = []
        for question in page:
            self.progress.rows_read += question.rows
            if question.query is None:
                assert question.error is not None
                self.progress.rows_invalid += question.rows
                self.invalid.note(question.error, question)
            elif self.ledger.add(question.query_hash, question.query.with_id(None), rows=question.rows):
                new.append(question.query_hash)
        return page, new

    async def _find_answered(self, page: list[Question], new: list[str]) -> list[str]:
        """Hand the questions to the cache; mark the new hashes it has an answer for; the others."""
        if not page:
            return []
        await self.cache.register(page)
        answered = await self.cache.answered(new) if new else set()
        self.ledger.move(answered, QueryState.CACHED)
        to_ask = [h for h in new if h not in answered]
        self.to_ask += to_ask
        self.progress.distinct_queries = len(self.to_ask)
        return to_ask

    async def _read(self, pages: AsyncIterator[Sequence[SourceValue]], to_claim: HashQueue | None = None) -> None:
        """Plan every page (the first one was read already). Without ``to_claim`` the pages are
        sorted out together at the end (one registration); with it each page is sorted out as it
        comes, and its hashes to ask go to the claimer at once."""
        try:
            async for values in pages:
                page, new = self._plan_page(values)
                if to_claim is not None and (to_ask := await self._find_answered(page, new)):
                    await to_claim.put(to_ask)
                if not self.looking_up:
                    self.progress.tick(self.log)
            if to_claim is None:
                await self._find_answered(self.questions, self.ledger.hashes(QueryState.NEW))
            self.progress.lookups_while_reading = self.progress.lookups if to_claim is not None else 0
        finally:
            if to_claim is not None:
                await to_claim.put(None)
        self.progress.rows_unchanged = self.source.total_rows - self.progress.rows_read
        self.progress.rows_read = self.source.total_rows
        self.invalid.log(self.log, self.progress.label)

    # Budget -----------------------------------------------------------------------------------------------
    async def _remaining(self) -> int:
        """The account's remaining credits: one free statistic call per run, at most (asked
        ahead, while the source is read, when the cache is fresh: see :meth:`_ask_remaining_ahead`)."""
        if self.remaining_credits is None:
            asked, self._remaining_asked = self._remaining_asked, None
            self.remaining_credits = await (asked or self.service.remaining_credits())
        return self.remaining_credits

    async def _ask_remaining_ahead(self) -> None:
        """Start the statistic call now when it is sure to be needed: the budget is checked
        against the account and the cache holds no answer yet (its first run), so every valid
        question is new. Over a WAN this takes a round trip off the run; a cache that may
        answer everything is not asked ahead (its run may need no call at all)."""
        if self.cache.fresh and self.options.check_remaining_credits and not self.options.plan_only:
            self._remaining_asked = asyncio.ensure_future(self.service.remaining_credits())
            await asyncio.sleep(0)  # on its way before the reading takes the loop

    async def _forget_remaining_ahead(self) -> None:
        """A statistic call asked ahead and never needed (nothing valid to ask): ended quietly."""
        asked, self._remaining_asked = self._remaining_asked, None
        if asked is not None:
            asked.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # its error no longer matters
                await asked

    async def _max_credits(self) -> int | None:
        """``max_credits`` less what the executions it also covers spent (read once per run)."""
        limit, earlier = self.options.max_credits, self.options.spent_earlier
        if limit is None or earlier is None:
            return limit
        if self._spent_earlier is None:
            self._spent_earlier = await earlier()
            self.log.info("max_credits=%d covers every try of this task in its DAG run: %d spent by earlier tries, "
                          "%d left for this one", limit, self._spent_earlier, max(0, limit - self._spent_earlier))
        return max(0, limit - self._spent_earlier)

    async def _decide(self, needed: int, *, mode: InsufficientCreditsMode | None = None) -> CreditBudget:
        return await decide_budget(needed, max_credits=await self._max_credits(),
                                   mode=mode or self.options.on_insufficient_credits,
                                   remaining=self._remaining if self.options.check_remaining_credits else None)

    async def _budget_while_reading(self, first_page: int) -> CreditBudget | None:
        """The budget of a run that asks while it reads (decided once the first page, of
        ``first_page`` values, is read), or None when it must read first.

        The exact need is known only at the end of the reading, and nothing may be spent before it
        is checked: so the run decides on a bound, every distinct value of the source (the first
        page says how many there are) a new query, and reads first when even that bound does not
        fit, when the source asks it to (its pages cost statements a cloud warehouse bills), or
        when the first page holds every value (nothing to overlap: the exact need, often 0,
        saves the statistic call a bound costs).
        """
        bound = self.source.distinct_bound
        if self.options.plan_only or not self.source.asks_while_reading or bound is None or bound <= first_page:
            return None
        trial = await self._decide(bound * self.price, mode="partial")  # a bound that does not fit: read first
        return None if trial.short else trial

    def _log_plan(self, *, bound: int | None = None) -> None:
        p = self.progress
        if bound is not None:
            self.log.info("Plan for %s: looking up while reading; at most %d credits (every distinct value a new "
                          "query), checked against the budget before anything is spent", p.label, bound)
            return
        if not self.to_ask and not p.rows_read - p.rows_unchanged:
            self.log.info("Plan for %s: all %d rows unchanged, nothing to look up", p.label, p.rows_unchanged)
            return
        mode = "plan only, nothing will be spent: " if self.options.plan_only else ""
        self.log.info("Plan for %s: %s%d rows to enrich (%d unchanged, %d invalid), %d distinct new queries "
                      "(%d credits), %d already answered in %s", p.label, mode, p.rows_read - p.rows_unchanged,
                      p.rows_unchanged, p.rows_invalid, len(self.to_ask), p.credits_needed,
                      self.ledger.count(QueryState.CACHED), self.cache.name)

    # Claim, ask, store ---------------------------------------------------------------------------------------
    async def _ask(self, to_claim: HashQueue, budget: CreditBudget) -> None:
        """Claim ahead (a producer) while what was claimed is asked (the consumer)."""
        answerer = QueryAnswerer(self.service, self.lookup, budget, self.progress)
        claimed: asyncio.Queue[tuple[Claim, list[str]]] = asyncio.Queue(maxsize=_CLAIMS_AHEAD)
        writeback = WriteBack(self.cache.store, interval=self.cache.store_every, batch=self.cache.store_batch,
                              on_stored=self._stored)
        claimer = asyncio.create_task(self._claim(to_claim, claimed, budget))
        try:
            while True:
                getter = asyncio.ensure_future(claimed.get())
                await asyncio.wait({getter, claimer}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    await self._send(*getter.result(), answerer, writeback)
                    continue
                getter.cancel()
                if claimed.empty():
                    break
            await claimer  # its error, if it failed
        finally:
            if not claimer.done():
                claimer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await claimer
            await writeback.drain()

    async def _claim(self, to_claim: HashQueue, claimed: asyncio.Queue[tuple[Claim, list[str]]],
                     budget: CreditBudget) -> None:
        """Claim the hashes that come in, a claim (chunk) at a time, and hand over what this run
        won; come back to claims whose queries other runs hold every ``poll_seconds``, until
        those are answered or taken over."""
        pending: list[Claim] = []
        waiting: list[Claim] = []
        reading = True
        while reading or pending or waiting:
            if reading and (not pending or not to_claim.empty()):
                try:  # while others' claims are waited for, look at them again every poll_seconds
                    hashes = await asyncio.wait_for(to_claim.get(), self.options.poll_seconds if waiting else None)
                except TimeoutError:
                    hashes = []
                if hashes is None:
                    reading = False
                elif hashes:
                    pending += self.cache.plan_claims(hashes)
                    continue
                if not waiting:
                    continue
            if pending:
                claim = pending.pop(0)
                if budget.exhausted(self.price):
                    self.ledger.move(claim.hashes, QueryState.DEFERRED, only_from=TO_CLAIM)
                    continue
            else:
                if not reading:
                    await asyncio.sleep(self.options.poll_seconds)
                claim = waiting.pop(0)
            mine = await self._settle(claim)
            if any(self.ledger.state(h) is QueryState.HELD for h in claim.hashes):
                waiting.append(claim)
            if mine:
                await claimed.put((claim, mine))

    async def _settle(self, claim: Claim) -> list[str]:
        """Claim ``claim`` in the cache and note what it found; the hashes this run now holds."""
        outcome = await self.cache.claim(claim)
        self.ledger.move(outcome.answered, QueryState.ANSWERED, only_from=TO_CLAIM)
        self.ledger.move(outcome.held_by_others, QueryState.HELD, only_from=TO_CLAIM)
        won = set(outcome.mine)
        return self.ledger.move([h for h in claim.hashes if h in won], QueryState.CLAIMED, only_from=TO_CLAIM)

    def _stored(self, answers: Mapping[str, Any], kept: set[str]) -> None:
        self.ledger.move(kept, QueryState.PAID)
        if late := [h for h in answers if h not in kept]:
            self.ledger.move(late, QueryState.TAKEN_OVER)
            self.log.warning("%d answers came after their claims had expired and been taken over by another run: "
                             "raise lease_seconds", len(late))

    async def _send(self, claim: Claim, mine: list[str], answerer: QueryAnswerer, writeback: WriteBack) -> None:
        self.ledger.move(mine, QueryState.ASKED)
        received = 0
        try:
            async for chunk in answerer.answer({h: self.ledger.query(h) for h in mine}):
                received += len(chunk)
                await writeback.add(chunk)
        finally:
            self.ledger.move(answerer.deferred, QueryState.DEFERRED)
            answerer.deferred.clear()
            if received < len(mine):  # not granted by the budget, or a failure: free them now
                await writeback.drain()
                await self.cache.release(claim)
                self.ledger.move(mine, QueryState.RELEASED, only_from=HOLDING)

    async def _renew_leases(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            await self.cache.renew()

    async def _report(self) -> None:
        """Progress lines while looking up: lookups done, credits, requests in flight, latency."""
        while True:
            await asyncio.sleep(self.progress.interval)
            network = self.service.network()
            self.progress.in_flight, self.progress.concurrency = network.in_flight, network.allowed
            self.progress.latency_ms = network.latency_ms
            self.log.info("Progress: %s", self.progress.lookup_line())

    # The run's two modes ------------------------------------------------------------------------------------
    async def _pages(self) -> AsyncGenerator[Sequence[SourceValue]]:
        """The source's pages, counted (read on a connection of the source's own where it has one,
        so that lookups may go on between pages)."""
        own = self.source.reads_while_writing and not self.options.plan_only
        async with contextlib.aclosing(self.source.pages(own_connection=own)) as pages:
            async for values in pages:
                self.progress.pages += 1
                yield values

    async def _read_then_ask(self, pages: AsyncIterator[Sequence[SourceValue]]) -> None:
        """Read and plan everything, check the exact need, then ask."""
        await self._read(pages)
        self.progress.credits_needed = len(self.to_ask) * self.price
        self._log_plan()
        if self.options.plan_only:
            return
        budget = await self._decide(self.progress.credits_needed)
        if budget.short:
            self.log.warning("Only %s of the %d credits needed may be spent (limited by %s); the rest is left "
                             "for the next run", budget.allowance, budget.needed, budget.limited_by)
        to_claim: HashQueue = asyncio.Queue()
        to_claim.put_nowait(self.to_ask)
        to_claim.put_nowait(None)
        await self._looking_up(self._ask(to_claim, budget))

    async def _ask_while_reading(self, budget: CreditBudget, pages: AsyncIterator[Sequence[SourceValue]]) -> None:
        """Ask each page's new queries while the next pages are read (within a budget decided on a bound)."""
        self._log_plan(bound=budget.needed)
        to_claim: HashQueue = asyncio.Queue()
        reader = asyncio.create_task(self._read(pages, to_claim))
        try:
            await self._looking_up(self._ask(to_claim, budget))
            await reader
        finally:
            if not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        self.progress.credits_needed = len(self.to_ask) * self.price
        self._log_plan()

    async def _looking_up(self, asking: Any) -> None:
        """Await ``asking`` with the helpers of the lookups beside it: progress lines and lease renewals."""
        helpers = [asyncio.create_task(self._report())]
        if self.cache.lease_seconds:
            helpers.append(asyncio.create_task(self._renew_leases(self.cache.lease_seconds / 3)))
        self.looking_up = True
        try:
            await asking
        finally:
            self.looking_up = False
            for task in helpers:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def run(self) -> RunProgress:
        """Run every step; the progress holds the summary (also when a step raised)."""
        with _older_objects_left_alone():
            return await self._run()

    async def _run(self) -> RunProgress:
        self.log.info("Name Lookup service: %s", self.service.shown_url)
        if not await self.source.prepare():
            self.log.info("Source %s is empty: nothing to enrich", self.source.label)
            self.progress.log_summary(self.log)
            return self.progress
        await self.sink.prepare(create=not self.options.plan_only)
        await self.cache.prepare(create=not self.options.plan_only)
        await self._ask_remaining_ahead()
        failure: BaseException | None = None
        source_pages = self._pages()
        pages = source_pages
        try:
            first = await anext(pages, None)  # the first page says how many distinct values there are
            pages = _then(first, source_pages)
            budget = await self._budget_while_reading(len(first) if first is not None else 0)
            if budget is None:
                await self._read_then_ask(pages)
            else:
                await self._ask_while_reading(budget, pages)
        except BaseException as err:
            failure = err
            raise
        finally:
            # closed now, not by the loop at its end: a reader's second connection is given back at
            # once, and two finalizers never close the same generator at the same time
            await pages.aclose()
            await source_pages.aclose()
            await self._finish(failure)
        return self.progress

    async def _finish(self, failure: BaseException | None) -> None:
        """Give back the claims not answered, fill the sink, close the cache and log the summary (also
        after a failure: the first error is the one raised, a later one is logged)."""
        try:
            try:
                if not self.options.plan_only:
                    if self.ledger.count(*HOLDING):
                        await self.cache.release()
                        self.ledger.move(self.ledger.hashes(*HOLDING), QueryState.RELEASED)
                    await self.sink.fill(self.outcome())
            finally:
                await self._forget_remaining_ahead()
                await self.cache.close()
        except BaseException as err:
            if failure is None:
                failure = err
                raise
            self.log.error("While stopping: %s", err)
        finally:
            self._count_outcomes()
            if failure is not None and self.on_failure is not None:
                self.on_failure(failure, self.ledger.count(QueryState.PAID))
            self.progress.log_summary(self.log)

    # Outcome ------------------------------------------------------------------------------------------------
    def outcome(self) -> RunOutcome:
        """What the run learned, for its sink."""
        return RunOutcome(self.questions, set(self.ledger.hashes(*ANSWERED_STATES)),
                          set(self.ledger.hashes(QueryState.PAID)), set(self.ledger.hashes(QueryState.DEFERRED)))

    def paid_answers(self, answers: Mapping[str, Result]) -> dict[str, Result]:
        """Those of ``answers`` (an answer cache's) this run paid for."""
        return {h: answers[h] for h in self.ledger.hashes(QueryState.PAID) if h in answers}

    def _count_outcomes(self) -> None:
        p, ledger = self.progress, self.ledger
        p.rows_enriched = ledger.rows(*ANSWERED_STATES)
        p.cache_hits = ledger.rows(QueryState.CACHED, QueryState.ANSWERED)
        p.rows_deferred = ledger.rows(QueryState.DEFERRED)
        if self.statements is not None:
            p.statements, p.store_statements = self.statements.statements, self.statements.store_statements


async def _then(first: Sequence[SourceValue] | None,
                rest: AsyncGenerator[Sequence[SourceValue]]) -> AsyncGenerator[Sequence[SourceValue]]:
    """``first`` (when there was one), then the rest."""
    async with contextlib.aclosing(rest) as pages:
        if first is not None:
            yield first
        async for page in pages:
            yield page


@contextlib.contextmanager
def _older_objects_left_alone() -> Iterator[None]:
    """While a run plans tens of thousands of values, the garbage collector's passes would walk
    every object the process made before it (Airflow's: hundreds of thousands) again and again:
    measured, that was a third of a 20,000-row run's time before its first lookup. The objects
    that exist when the run starts are set aside (``gc.freeze``) and given back at its end."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
