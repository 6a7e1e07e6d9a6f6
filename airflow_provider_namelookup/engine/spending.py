"""What a run may spend: the account's remaining credits (asked once, maybe ahead) and
``max_credits`` (less what earlier tries spent), checked against the need once.

Example::

    spending = Spending(service, options, source, state)   # state: the run's RunState
    await spending.will_create()                     # a first run: on its way while the source is read
    budget = await spending.decide(needed=40)        # CreditBudget: allowance, short, limited_by
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from airflow_provider_namelookup.engine.budget import CreditBudget, InsufficientCreditsMode, decide_budget
from airflow_provider_namelookup.engine.options import RunOptions
from airflow_provider_namelookup.engine.ports import LookupService, QuestionSource
from airflow_provider_namelookup.engine.state import RunState


@dataclass
class Spending:
    """The budget of one run (see the module docstring).

    :param service: asked for the account's remaining credits (a free call).
    :param options: ``max_credits``, what earlier tries spent, the mode when short.
    :param source: its bound on the need decides whether a run may ask while it reads.
    :param state: the run's shared state (:class:`~.state.RunState`): a fresh cache (its first run)
        makes the remaining credits worth asking ahead; the price of a query; the log.
    """

    service: LookupService
    options: RunOptions
    source: QuestionSource
    state: RunState
    remaining_credits: int | None = None
    _remaining_asked: asyncio.Task[int] | None = field(default=None, repr=False)
    _spent_earlier: int | None = None

    async def remaining(self) -> int:
        """The account's remaining credits: one free statistic call per run, at most (asked
        ahead, while the source is read, when the cache is fresh: see :meth:`ask_remaining_ahead`)."""
        if self.remaining_credits is None:
            asked, self._remaining_asked = self._remaining_asked, None
            self.remaining_credits = await (asked or self.service.remaining_credits())
        return self.remaining_credits

    async def will_create(self) -> None:
        """The run will make its sink or cache (a table) once its first page is read: start the
        statistic call now, so that its round trip overlaps the reading (:meth:`before_creating`
        waits for it)."""
        await self._ask_ahead()

    async def before_creating(self) -> None:
        """The run is about to make its sink or cache (a table): have the remaining credits read
        (asked ahead by :meth:`will_create`), so that a wrong token fails before anything is made
        (the budget uses the answer: no second call). ``check_remaining_credits=False`` skips it:
        the first lookup then finds the token wrong."""
        if self.options.check_remaining_credits and not self.options.plan_only:
            await self.remaining()

    async def ask_remaining_ahead(self) -> None:
        """Start the statistic call now when it is sure to be needed: the budget is checked
        against the account and the cache holds no answer yet (its first run), so every valid
        question is new. Over a WAN this takes a round trip off the run; a cache that may
        answer everything is not asked ahead (its run may need no call at all)."""
        if self.state.cache.fresh:  # an answer cache that starts empty (the XCom operators' on a first try)
            await self._ask_ahead()

    async def _ask_ahead(self) -> None:
        """Start the statistic call, unless it is not to be made or already asked."""
        if self.options.check_remaining_credits and not self.options.plan_only and self.remaining_credits is None \
                and self._remaining_asked is None:
            self._remaining_asked = asyncio.ensure_future(self.service.remaining_credits())
            await asyncio.sleep(0)  # on its way before the reading takes the loop

    async def forget_remaining_ahead(self) -> None:
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
            self.state.log.info("max_credits=%d covers every try of this task in its DAG run: %d spent by earlier "
                                "tries, %d left for this one", limit, self._spent_earlier,
                                max(0, limit - self._spent_earlier))
        return max(0, limit - self._spent_earlier)

    async def decide(self, needed: int, *, mode: InsufficientCreditsMode | None = None) -> CreditBudget:
        """The budget of a need of ``needed`` credits."""
        return await decide_budget(needed, max_credits=await self._max_credits(),
                                   mode=mode or self.options.on_insufficient_credits,
                                   remaining=self.remaining if self.options.check_remaining_credits else None)

    async def while_reading(self, first_page: int) -> CreditBudget | None:
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
        trial = await self.decide(bound * self.state.price, mode="partial")  # a bound that does not fit: read first
        return None if trial.short else trial
