"""The one budget decision: need against max_credits and the remaining credits; the cut-off."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_namelookup.engine.budget import CreditBudget, decide_budget
from airflow_provider_namelookup.errors import NameLookupInsufficientCredits


def test_budget_fail_mode_refuses_before_spending() -> None:
    with pytest.raises(NameLookupInsufficientCredits) as info:
        CreditBudget.decide(needed=30, max_credits=None, remaining=20, mode="fail")
    assert (info.value.needed, info.value.available) == (30, 20)
    assert "needs 30 credits but only 20" in str(info.value) and "remaining" in str(info.value)
    with pytest.raises(NameLookupInsufficientCredits, match="max_credits=10"):
        CreditBudget.decide(needed=30, max_credits=10, remaining=100, mode="fail")


def test_budget_partial_mode_grants_what_fits() -> None:
    budget = CreditBudget.decide(needed=30, max_credits=None, remaining=9, mode="partial")
    assert budget.grant(4, cost=2) == 4
    assert budget.grant(4, cost=2) == 0  # 1 credit left, a query costs 2
    budget.refund(1, cost=2)
    assert budget.grant(4, cost=2) == 1 and budget.spent == 8


def test_budget_without_limits_is_unlimited() -> None:
    budget = CreditBudget.decide(needed=10**6, max_credits=None, remaining=None, mode="fail")
    assert budget.allowance is None and budget.grant(10**6, cost=2) == 10**6
    with pytest.raises(ValueError, match="on_insufficient_credits"):
        CreditBudget.decide(needed=1, max_credits=1, remaining=1, mode="maybe")  # type: ignore[arg-type]


def test_the_remaining_credits_are_read_only_when_something_is_needed() -> None:
    calls: list[int] = []

    async def remaining() -> int:
        calls.append(1)
        return 5

    nothing = asyncio.run(decide_budget(0, max_credits=None, mode="fail", remaining=remaining))
    assert calls == [] and nothing.allowance is None
    short = asyncio.run(decide_budget(8, max_credits=None, mode="partial", remaining=remaining))
    assert calls == [1] and short.short and short.allowance == 5 and short.limited_by.endswith("remaining credits")
    with pytest.raises(NameLookupInsufficientCredits):
        asyncio.run(decide_budget(8, max_credits=None, mode="fail", remaining=remaining))


def test_a_budget_is_exhausted_when_not_even_one_more_query_fits() -> None:
    budget = CreditBudget(allowance=5, needed=10)
    assert budget.grant(2, cost=2) == 2  # 4 of 5 spent: 1 credit left
    assert budget.exhausted(2) and not budget.exhausted(1)  # too little for an origin (2), enough for a gender
    assert not CreditBudget(allowance=None).exhausted(2)
