"""Credit accounting for one run: what the plan needs against what may be spent.

Example::

    >>> budget = CreditBudget.decide(needed=30, max_credits=20, remaining=100, mode="partial")
    >>> budget.allowance, budget.limited_by
    (20, 'max_credits=20')
    >>> budget.grant(15, cost=1), budget.grant(15, cost=1), budget.spent
    (15, 5, 20)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from airflow_provider_namelookup.errors import NameLookupInsufficientCredits

InsufficientCreditsMode = Literal["fail", "partial"]
MODES: tuple[str, ...] = ("fail", "partial")


@dataclass
class CreditBudget:
    """How many credits a run may still spend.

    :param allowance: credits the run may spend in all, None for no limit.
    :param limited_by: what set the allowance (for messages).
    """

    allowance: int | None = None
    limited_by: str = "nothing"
    spent: int = 0

    @classmethod
    def decide(cls, *, needed: int, max_credits: int | None, remaining: int | None,
               mode: InsufficientCreditsMode) -> CreditBudget:
        """Check the plan's need before anything is spent.

        :param needed: credits the plan needs (distinct queries times their price).
        :param max_credits: the operator's budget, None for none.
        :param remaining: the account's remaining credits (statistic call), None if unchecked.
        :param mode: ``fail`` raises when the need exceeds what is available; ``partial``
            spends what it may and leaves the rest for the next run.
        :raises NameLookupInsufficientCredits: in ``fail`` mode when the need is too big.
        """
        if mode not in MODES:
            raise ValueError(f"on_insufficient_credits must be one of {', '.join(MODES)}, got {mode!r}")
        limits = [(v, label) for v, label in ((max_credits, f"max_credits={max_credits}"),
                                              (remaining, f"the account's {remaining} remaining credits"))
                  if v is not None]
        if not limits:
            return cls()
        available, label = min(limits, key=lambda item: item[0])
        if needed > available and mode == "fail":
            raise NameLookupInsufficientCredits(
                f"this run needs {needed} credits but only {available} are available (limited by {label}); "
                "nothing was spent. Raise max_credits, buy credits, or set on_insufficient_credits='partial'.",
                needed=needed, available=available)
        return cls(allowance=available, limited_by=label)

    def grant(self, queries: int, *, cost: int) -> int:
        """How many of ``queries`` (each costing ``cost``) may be sent now; books them as spent."""
        allowed = queries if self.allowance is None else max(0, min(queries, (self.allowance - self.spent) // cost))
        self.spent += allowed * cost
        return allowed

    def refund(self, queries: int, *, cost: int) -> None:
        """Give back credits booked for queries that were never answered."""
        self.spent -= queries * cost
