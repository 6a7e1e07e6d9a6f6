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

The run is the orchestration of five pieces, each a module: reading and planning
(:class:`~.reading.PagePlanner`), spending (:class:`~.spending.Spending`), claiming
(:class:`~.claiming.Claimer`), asking (:class:`~.asking.Asker`) and finishing
(:class:`~.finishing.Finisher`). What they share (the answer cache, the ledger, the counts, the
log and the price of a query) is one value, the run's :class:`~.state.RunState`, handed to each.

A run works in one of two modes. It **reads, then asks** (:meth:`LookupRun._read_then_ask`):
the whole source is read and planned, the exact need checked, then the lookups start. Or,
when the source reads on a connection of its own and a bound on the need fits the budget
(country of origin: one query per source row), it **asks while it reads**
(:meth:`LookupRun._ask_while_reading`): each page's new queries are claimed and asked as
soon as the page is planned.

Before step 1 the sink and the cache are looked for; what is missing is made only once the
budget is decided (step 3: after the whole source is read, or on the bound the first page gives
when the run asks while it reads) and the account's remaining credits were read (the budget's
statistic call, asked before the reading), so that a wrong token or a need beyond the budget
fails before any table exists. A run whose sink and cache exist calls the service only when it
has something to ask.

If a lookup fails (credits exhausted, network gone), the answers received are stored,
the sink is filled with them, the claims are released, and the error is raised: the next
run pays only for what is missing. Answers lost after their request was sent count against
``max_credits`` as charged (:mod:`.budget`): a run that could pass it by sending again stops
sending, keeps what it has, and fails (``on_insufficient_credits="fail"``) or says so and
leaves the rest for the next run (``partial``). ``plan_only`` stops after step 2, spending and
writing nothing.

Example::

    run = LookupRun(QueryRules(LookupKind.GENDER), source, cache, sink, async_hook, log, RunOptions(max_credits=500))
    progress = await run.run()
    progress.summary()["credits_used"]
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.asking import Asker
from airflow_provider_namelookup.engine.budget import CreditBudget
from airflow_provider_namelookup.engine.claiming import Claimer
from airflow_provider_namelookup.engine.finishing import Finisher
from airflow_provider_namelookup.engine.invalid import InvalidValues
from airflow_provider_namelookup.engine.ledger import Ledger, QueryState
from airflow_provider_namelookup.engine.options import RunOptions
from airflow_provider_namelookup.engine.plan import QueryRules
from airflow_provider_namelookup.engine.ports import (
    AnswerCache,
    LookupService,
    Question,
    QuestionSource,
    Sink,
    SourceValue,
    StatementCounts,
)
from airflow_provider_namelookup.engine.progress import RunProgress
from airflow_provider_namelookup.engine.queues import HashQueue
from airflow_provider_namelookup.engine.reading import PagePlanner
from airflow_provider_namelookup.engine.spending import Spending
from airflow_provider_namelookup.engine.state import RunState
from airflow_provider_namelookup.heap import older_objects_left_alone


class LookupRun:
    """One run; see the module docstring for its steps, modes and pieces.

    :param rules: how values become queries (lookup, name kind, default hints, secrets).
    :param service: the service (the async hook).
    :param label: what is enriched, for log lines (default: the source's label).
    :param statements: what the run's SQL statements were, read for the summary (a warehouse's
        counts; None for a list).
    :param on_failure: called with the error, the number of distinct queries this run paid for and
        the credits its lost answers may have cost (:mod:`.budget`) when a step fails, after the
        answers are kept and the sink is filled, before the summary (which stays the last line of
        the log).
    """

    def __init__(self, rules: QueryRules, source: QuestionSource, cache: AnswerCache, sink: Sink,
                 service: LookupService, log: logging.Logger | Any, options: RunOptions | None = None, *,
                 label: str | None = None, statements: StatementCounts | None = None,
                 on_failure: Callable[[BaseException, int, int], None] | None = None) -> None:
        self.lookup: LookupKind = rules.lookup
        self.source = source
        self.sink = sink
        self.service = service
        self.options = options = options or RunOptions()
        progress = RunProgress(label=label or source.label, interval=options.progress_interval,
                               reads_pages=getattr(source, "reads_pages", False), calls=service.counters)
        self.state = state = RunState(cache, Ledger(), progress, log, self.lookup.credits_per_query)
        """What the run's pieces share, handed to each."""
        self.planner = PagePlanner(rules, source, state, log_values=options.log_values)
        self.spending = Spending(service, options, source, state)
        claimer = Claimer(state, poll_seconds=options.poll_seconds)
        self.asker = Asker(service, self.lookup, state, claimer)
        self.finisher = Finisher(self.planner, sink, self.spending, state, plan_only=options.plan_only,
                                 statements=statements, on_failure=on_failure)
        self._made = False
        """The sink and the cache this run had to make are made."""

    @property
    def questions(self) -> list[Question]:
        """Every planned value, in the order read (the sink's input)."""
        return self.planner.questions

    @property
    def to_ask(self) -> list[str]:
        """The hashes no answer was found for when they were read: the run's need."""
        return self.planner.to_ask

    @property
    def invalid(self) -> InvalidValues:
        return self.planner.invalid

    def _log_plan(self, *, bound: int | None = None) -> None:
        p, log = self.state.progress, self.state.log
        if bound is not None:
            log.info("Plan for %s: looking up while reading; at most %d credits (every distinct value a new "
                     "query), checked against the budget before anything is spent", p.label, bound)
            return
        if not self.to_ask and not p.rows_read - p.rows_unchanged:
            log.info("Plan for %s: all %d rows unchanged, nothing to look up", p.label, p.rows_unchanged)
            return
        mode = "plan only, nothing will be spent: " if self.options.plan_only else ""
        log.info("Plan for %s: %s%d rows to enrich (%d unchanged, %d invalid), %d distinct new queries "
                 "(%d credits), %d already answered in %s", p.label, mode, p.rows_read - p.rows_unchanged,
                 p.rows_unchanged, p.rows_invalid, len(self.to_ask), p.credits_needed,
                 self.state.ledger.count(QueryState.CACHED), self.state.cache.name)

    # The run's two modes ------------------------------------------------------------------------------------
    async def _pages(self) -> AsyncGenerator[Sequence[SourceValue]]:
        """The source's pages, counted (read on a connection of the source's own where it has one,
        so that lookups may go on between pages)."""
        own = self.source.reads_while_writing and not self.options.plan_only
        async with contextlib.aclosing(self.source.pages(own_connection=own)) as pages:
            async for values in pages:
                self.state.progress.pages += 1
                yield values

    async def _read_then_ask(self, pages: AsyncIterator[Sequence[SourceValue]], *, making: bool) -> None:
        """Read and plan everything, check the exact need, make what is missing (``making``), then ask."""
        await self.planner.read(pages)
        self.state.progress.credits_needed = len(self.to_ask) * self.state.price
        self._log_plan()
        if self.options.plan_only:
            return
        budget = await self.spending.decide(self.state.progress.credits_needed)
        if making:
            await self._make_sink_and_cache()
        if budget.short:
            self.state.log.warning("Only %s of the %d credits needed may be spent (limited by %s); the rest is "
                                   "left for the next run", budget.allowance, budget.needed, budget.limited_by)
        to_claim: HashQueue = asyncio.Queue()
        to_claim.put_nowait(self.to_ask)
        to_claim.put_nowait(None)
        await self._looking_up(self.asker.ask(to_claim, budget))
        self._if_stopped(budget)

    async def _ask_while_reading(self, budget: CreditBudget, pages: AsyncIterator[Sequence[SourceValue]]) -> None:
        """Ask each page's new queries while the next pages are read (within a budget decided on a bound)."""
        self._log_plan(bound=budget.needed)
        to_claim: HashQueue = asyncio.Queue()
        # the lookups' progress lines (the asker's report) replace the reading's while both go on
        reader = asyncio.create_task(self.planner.read(pages, to_claim, tell_progress=False))
        try:
            await self._looking_up(self.asker.ask(to_claim, budget))
            await reader
        finally:
            if not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        self.state.progress.credits_needed = len(self.to_ask) * self.state.price
        self._log_plan()
        self._if_stopped(budget)

    def _if_stopped(self, budget: CreditBudget) -> None:
        """The run stopped sending before ``max_credits`` (answers lost on the way may have been
        charged): an error with ``on_insufficient_credits="fail"``, else one warning; either way what
        was answered is kept and the rest waits for the next run."""
        if budget.stopped is None:
            return
        if self.options.on_insufficient_credits == "fail":
            raise budget.stopped
        self.state.log.warning("Name Lookup: %s", budget.stopped.detail)

    async def _looking_up(self, asking: Any) -> None:
        """Await ``asking`` with the helpers of the lookups beside it: progress lines and lease renewals."""
        helpers = [asyncio.create_task(self.asker.report())]
        if self.state.cache.lease_seconds:
            helpers.append(asyncio.create_task(self.asker.renew_leases(self.state.cache.lease_seconds / 3)))
        try:
            await asking
        finally:
            for task in helpers:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def run(self) -> RunProgress:
        """Run every step; the progress holds the summary (also when a step raised)."""
        with older_objects_left_alone():
            return await self._run()

    async def _run(self) -> RunProgress:
        self.state.log.info("Name Lookup service: %s", self.service.shown_url)
        if not await self.source.prepare():
            self.state.log.info("Source %s is empty: nothing to enrich", self.source.label)
            self.state.progress.log_summary(self.state.log)
            return self.state.progress
        making = await self._look_for_sink_and_cache()
        if making:
            await self.spending.will_create()
        else:
            await self.spending.ask_remaining_ahead()
        failure: BaseException | None = None
        source_pages = self._pages()
        pages = source_pages
        try:
            first = await anext(pages, None)  # the first page says how many distinct values there are
            if first is not None:
                self.planner.plan_ahead(first)  # while the statistic call of a first run is on its way
        except BaseException:
            await source_pages.aclose()  # nothing was made or spent: nothing to finish
            await self.spending.forget_remaining_ahead()
            raise
        try:
            pages = _then(first, source_pages)
            budget = await self.spending.while_reading(len(first) if first is not None else 0)
            if budget is None:
                await self._read_then_ask(pages, making=making)
            else:
                if making:  # made before the first claim
                    await self._make_sink_and_cache()
                await self._ask_while_reading(budget, pages)
        except BaseException as err:
            failure = err
            raise
        finally:
            # closed now, not by the loop at its end: a reader's second connection is given back at
            # once, and two finalizers never close the same generator at the same time
            await pages.aclose()
            await source_pages.aclose()
            # a sink still to be made when the run stopped (a budget refusal) is not made to hold its rows
            await self.finisher.finish(failure, fill=not making or self._made)
        return self.state.progress

    async def _look_for_sink_and_cache(self) -> bool:
        """Look for the sink and the cache (nothing is written); True when one must be made.

        What is missing (a first run) is made only once the budget is decided and the service took
        the token (:meth:`_make_sink_and_cache`): the account's remaining credits, the statistic call
        the budget needs anyway, are asked for now and read before anything is made, so a wrong token
        or a need beyond the budget fails before any table exists, and the call's round trip overlaps
        the reading of the first page. A run whose sink and cache exist asks nothing here (a rerun
        that needs no lookup sends no request at all); before its first lookup the budget's
        statistic call checks the token."""
        ready = [await self.sink.prepare(create=False), await self.state.cache.prepare(create=False)]
        return not all(ready) and not self.options.plan_only

    async def _make_sink_and_cache(self) -> None:
        """Once the statistic call answered (:meth:`.Spending.before_creating`), make what is missing."""
        await self.spending.before_creating()
        await self.sink.prepare(create=True)
        await self.state.cache.prepare(create=True)
        self._made = True



async def _then(first: Sequence[SourceValue] | None,
                rest: AsyncGenerator[Sequence[SourceValue]]) -> AsyncGenerator[Sequence[SourceValue]]:
    """``first`` (when there was one), then the rest."""
    async with contextlib.aclosing(rest) as pages:
        if first is not None:
            yield first
        async for page in pages:
            yield page
