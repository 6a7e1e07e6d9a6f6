"""Credit accounting for one run: the one decision of what may be spent, and the cut-off.

A run knows what it needs before it spends anything: the sum of the prices of its new
queries (or, when it starts looking up while it still reads, a bound on that sum). That
need is checked once, here, against the operator's ``max_credits`` and the account's
remaining credits; :meth:`CreditBudget.grant` is then the only place where a run is cut
short, and :meth:`CreditBudget.before_resend` the only place where a request whose answer was
lost is stopped.

An answer lost after its request was sent (a connection reset, a read timeout) may have been
charged, and the service has no idempotency key: sending the request again may charge it
again. The budget counts every such answer as charged (:attr:`CreditBudget.maybe_charged`), so
that what the service may have charged never passes ``max_credits``: a request is granted, or
sent again, only while the credits charged or maybe charged, those of the requests on their way
included, stay within it. Once it could not be, the run stops sending (:attr:`CreditBudget.stopped`).
The account's remaining credits bound what is granted, not what is sent again: the service
refuses what the account cannot pay (``limit-exceeded``), so no answer is paid past them.

Example::

    >>> budget = CreditBudget.decide(needed=30, max_credits=20, remaining=100, mode="partial")
    >>> budget.allowance, budget.limited_by
    (20, 'max_credits=20')
    >>> budget.grant(15, cost=1), budget.grant(15, cost=1), budget.spent
    (15, 5, 20)
    >>> CreditBudget.decide(needed=30, max_credits=None, remaining=None, mode="fail").allowance is None
    True
    >>> lossy = CreditBudget.decide(needed=40, max_credits=40, remaining=None, mode="fail")
    >>> lossy.grant(40, cost=1), lossy.lost(40)
    (40, None)
    >>> lossy.before_resend(40)  # sending it again could charge 80
    Traceback (most recent call last):
    ...
    airflow_provider_namelookup.errors.NameLookupBudgetReached: insufficient-credits: stopped before max_credits=40: ...
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from airflow_provider_namelookup.errors import (
    NameLookupBudgetReached,
    NameLookupInsufficientCredits,
    NameLookupOverBudget,
)

InsufficientCreditsMode = Literal["fail", "partial"]
MODES: tuple[str, ...] = ("fail", "partial")


def check_mode(mode: str) -> InsufficientCreditsMode:
    """``mode`` if it is one of :data:`MODES`, else a ValueError naming the parameter."""
    if mode not in MODES:
        raise ValueError(f"on_insufficient_credits must be one of {', '.join(MODES)}, got {mode!r}")
    return mode  # type: ignore[return-value]


@dataclass
class CreditBudget:
    """How many credits a run may still spend.

    :param allowance: credits the run may spend in all, None for no limit.
    :param limited_by: what set the allowance (for messages).
    :param needed: what the decision was taken for (the need, or its bound).
    :param max_credits: ``max_credits`` (less what earlier tries spent): what the service may charge
        this run in all, lost answers included; None for no limit.
    """

    allowance: int | None = None
    limited_by: str = "nothing"
    needed: int = 0
    max_credits: int | None = None
    spent: int = 0
    """Credits of the queries granted (answered, or on their way) and not given back."""
    maybe_charged: int = 0
    """Credits of answers lost after their request was sent: the service may have charged them."""
    stopped: NameLookupBudgetReached | None = None
    """Why the run stopped sending before ``max_credits``, once it did."""

    @classmethod
    def decide(cls, *, needed: int, max_credits: int | None, remaining: int | None,
               mode: InsufficientCreditsMode) -> CreditBudget:
        """Check the need before anything is spent.

        :param needed: credits the run needs (the sum of its new queries' prices), or a
            bound on them when it looks up while still reading.
        :param max_credits: the operator's budget, None for none.
        :param remaining: the account's remaining credits (statistic call), None if unchecked.
        :param mode: ``fail`` raises when the need exceeds what is available; ``partial``
            spends what it may and leaves the rest for the next run.
        :raises NameLookupInsufficientCredits: in ``fail`` mode when the need is too big
            (:class:`~airflow_provider_namelookup.errors.NameLookupOverBudget` when it is more than
            ``max_credits``: no retry can fix that).
        """
        check_mode(mode)
        limits = [(v, label) for v, label in ((max_credits, f"max_credits={max_credits}"),
                                              (remaining, f"the account's {remaining} remaining credits"))
                  if v is not None]
        if not limits:
            return cls(needed=needed)
        available, label = min(limits, key=lambda item: item[0])
        if needed > available and mode == "fail":
            refusal = NameLookupOverBudget if max_credits is not None and needed > max_credits else \
                NameLookupInsufficientCredits
            raise refusal(
                f"this run needs {needed} credits but only {available} are available (limited by {label}); "
                "nothing was spent. Raise max_credits, buy credits, or set on_insufficient_credits='partial'.",
                needed=needed, available=available)
        return cls(allowance=available, limited_by=label, needed=needed, max_credits=max_credits)

    @property
    def short(self) -> bool:
        """Whether less may be spent than was needed."""
        return self.allowance is not None and self.allowance < self.needed

    def _room(self) -> int | None:
        """Credits that may still be granted (None: no limit): within the allowance, and within
        ``max_credits`` with the lost answers counted."""
        if self.stopped is not None:
            return 0
        if self.allowance is None:
            return None
        room = self.allowance - self.spent
        if self.max_credits is not None:
            room = min(room, self.max_credits - self.spent - self.maybe_charged)
        return max(0, room)

    def grant(self, queries: int, *, cost: int) -> int:
        """How many of ``queries`` (each costing ``cost``) may be sent now; books them as spent. When
        answers lost on the way are what keeps some of them back, the run stops sending."""
        room = self._room()
        allowed = queries if room is None else min(queries, room // cost)
        if allowed < queries and self.stopped is None and self.maybe_charged and \
                self.allowance is not None and (self.allowance - self.spent) // cost > allowed:
            self.stopped = self._stop(f"the next requests, of {queries * cost} credits, could take what the "
                                      f"service may have charged past max_credits={self.max_credits}",
                                      needed=queries * cost)
            allowed = 0
        self.spent += allowed * cost
        return allowed

    def exhausted(self, cost: int) -> bool:
        """Not even one more query costing ``cost`` may be sent (or the run stopped sending)."""
        room = self._room()
        return room is not None and room < cost

    def refund(self, queries: int, *, cost: int) -> None:
        """Give back credits booked for queries that were never answered."""
        self.spent -= queries * cost

    # What lost answers may have cost (the hooks' LostAnswers) ---------------------------------------------------
    def lost(self, credits: int) -> None:
        """An answer worth ``credits`` was lost after its request was sent: count them as charged."""
        self.maybe_charged += credits

    def before_resend(self, credits: int) -> None:
        """A request whose answer was lost (its credits in :attr:`maybe_charged`; those of the attempt
        to come still in :attr:`spent`) is about to be sent again.

        :raises NameLookupBudgetReached: when the run stopped sending, or when that attempt, charged
            too, could take the total past ``max_credits``.
        """
        if self.stopped is not None:
            raise self.stopped
        if self.max_credits is not None and self.spent + self.maybe_charged > self.max_credits:
            self.stopped = self._stop(f"sending a request of {credits} credits again could charge it twice (the "
                                      "service has no idempotency key) and take the total past "
                                      f"max_credits={self.max_credits}", needed=credits)
            raise self.stopped

    def _stop(self, why: str, *, needed: int) -> NameLookupBudgetReached:
        return NameLookupBudgetReached(
            f"stopped before max_credits={self.max_credits}: {self.maybe_charged} credits may have been charged for "
            f"answers lost after their request was sent, beside {self.spent} for answers received or on their way; "
            f"{why}, so nothing more is sent and what is not answered is left for the next run",
            needed=needed, available=max(0, (self.max_credits or 0) - self.spent - self.maybe_charged),
            maybe_charged=self.maybe_charged)


async def decide_budget(needed: int, *, max_credits: int | None, mode: InsufficientCreditsMode,
                        remaining: Callable[[], Awaitable[int]] | None) -> CreditBudget:
    """The run's budget: :meth:`CreditBudget.decide`, reading the account's remaining credits
    (``remaining``, one free statistic call) only when something is needed and it is asked for."""
    left = await remaining() if needed and remaining is not None else None
    return CreditBudget.decide(needed=needed, max_credits=max_credits, remaining=left, mode=mode)
