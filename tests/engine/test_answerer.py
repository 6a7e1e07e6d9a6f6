"""The call step: what the budget grants is asked, the rest deferred, a failure keeps what came."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.answerer import QueryAnswerer
from airflow_provider_namelookup.engine.budget import CreditBudget
from airflow_provider_namelookup.engine.progress import RunProgress
from airflow_provider_namelookup.models import Query
from tests.engine.fakes import FakeService

QUERIES = {f"h{i}": Query("first_name", f"Name{i}") for i in range(5)}


async def _answers(answerer: QueryAnswerer) -> list[dict[str, object]]:
    return [chunk async for chunk in answerer.answer(QUERIES)]


def test_only_what_the_budget_grants_is_asked_and_the_rest_is_deferred() -> None:
    service, budget = FakeService(batch=2), CreditBudget(allowance=6, needed=10)
    answerer = QueryAnswerer(service, LookupKind.ORIGIN, budget, RunProgress(label="t"))  # 2 credits each
    chunks = asyncio.run(_answers(answerer))
    assert [sorted(c) for c in chunks] == [["h0", "h1"], ["h2"]]
    assert answerer.deferred == {"h3", "h4"} and budget.spent == 6
    assert answerer.progress.lookups == 3


def test_a_failure_yields_the_answers_first_and_refunds_what_was_not_answered() -> None:
    service, budget = FakeService(batch=2, fail_after=1), CreditBudget(allowance=100, needed=5)
    answerer = QueryAnswerer(service, LookupKind.GENDER, budget, RunProgress(label="t"))
    received: list[dict[str, object]] = []

    async def go() -> None:
        async for chunk in answerer.answer(QUERIES):
            received.append(chunk)

    with pytest.raises(RuntimeError, match="network is gone"):
        asyncio.run(go())
    assert [sorted(c) for c in received] == [["h0", "h1"]]
    assert budget.spent == 2  # the three never answered were given back
    assert service.asked == ["Name0", "Name1"]


def test_nothing_is_sent_when_nothing_is_granted() -> None:
    service = FakeService()
    answerer = QueryAnswerer(service, LookupKind.GENDER, CreditBudget(allowance=0, needed=5), RunProgress(label="t"))
    assert asyncio.run(_answers(answerer)) == [] and service.counters.requests == 0
    assert answerer.deferred == set(QUERIES)
