"""Credit accounting for one run: the one decision of what may be spent, and the cut-off.

A run knows what it needs before it spends anything: the sum of the prices of its new
queries (or, when it starts looking up while it still reads, a bound on that sum). That
need is checked once, here, against the operator's ``max_credits`` and the account's
remaining credits; :meth:`CreditBudget.grant` is then the only place where a run is cut
short.

Example::

    >>> budget = CreditBudget.decide(needed=30, max_credits=20, remaining=100, mode="partial")
    >>> budget.allowance, budget.limited_by
    (20, 'max_credits=20')
    >>> budget.grant(15, cost=1), budget.grant(15, cost=1), budget.spent
    (15, 5, 20)
    >>> CreditBudget.decide(needed=30, max_credits=None, remaining=None, mode="fail").allowance is None
    True
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from airflow_provider_namelookup.errors import NameLookupInsufficientCredits, NameLookupOverBudget

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
    """

    allowance: int | None = None
    limited_by: str = "nothing"
    needed: int = 0
    spent: int = 0

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
        return cls(allowance=available, limited_by=label, needed=needed)

    @property
    def short(self) -> bool:
        """Whether less may be spent than was needed."""
        return self.allowance is not None and self.allowance < self.needed

    def grant(self, queries: int, *, cost: int) -> int:
        """How many of ``queries`` (each costing ``cost``) may be sent now; books them as spent."""
        allowed = queries if self.allowance is None else max(0, min(queries, (self.allowance - self.spent) // cost))
        self.spent += allowed * cost
        return allowed

    def exhausted(self, cost: int) -> bool:
        """Not even one more query costing ``cost`` may be sent."""
        return self.allowance is not None and self.allowance - self.spent < cost

    def refund(self, queries: int, *, cost: int) -> None:
        """Give back credits booked for queries that were never answered."""
        self.spent -= queries * cost


async def decide_budget(needed: int, *, max_credits: int | None, mode: InsufficientCreditsMode,
                        remaining: Callable[[], Awaitable[int]] | None) -> CreditBudget:
    """The run's budget: :meth:`CreditBudget.decide`, reading the account's remaining credits
    (``remaining``, one free statistic call) only when something is needed and it is asked for."""
    left = await remaining() if needed and remaining is not None else None
    return CreditBudget.decide(needed=needed, max_credits=max_credits, remaining=left, mode=mode)
