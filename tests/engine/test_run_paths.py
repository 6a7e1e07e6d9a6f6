"""The run's claim-waiting, write-back and release paths, with doubles behind its ports
(tests/engine/fakes.py): another run's claims, expiring leases, failures on cue."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.ledger import QueryState
from airflow_provider_namelookup.engine.plan import QueryRules, plan_name
from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.engine.run import LookupRun, RunOptions
from airflow_provider_namelookup.xcom.source import ListQuestions
from tests.engine.fakes import FakeCache, FakeService, FakeSink

GENDER = QueryRules(LookupKind.GENDER)
NAMES = ["Anna", "Ben", "Carla", "Dora", "Emil"]


def hash_of(name: str) -> str:
    return plan_name(name, GENDER).query_hash


def make_run(cache: FakeCache, service: FakeService, names: list[str] = NAMES,
             **options: Any) -> tuple[LookupRun, FakeSink]:
    sink = FakeSink()
    lookup = LookupRun(GENDER, ListQuestions(names, GENDER), cache, sink, service, logging.getLogger("test.paths"),
                       RunOptions(poll_seconds=0.01, **options))
    return lookup, sink


def run(cache: FakeCache, service: FakeService, names: list[str] = NAMES, **options: Any) -> tuple[LookupRun, FakeSink]:
    lookup, sink = make_run(cache, service, names, **options)
    asyncio.run(lookup.run())
    return lookup, sink


def test_a_query_another_run_holds_is_waited_for_and_never_paid_here() -> None:
    ben = hash_of("Ben")
    cache = FakeCache(others={ben: 3}, answered_later={ben})
    service = FakeService()
    lookup, sink = run(cache, service)
    assert service.asked == ["Anna", "Carla", "Dora", "Emil"]  # Ben was the other run's to pay
    assert lookup.state.ledger.state(ben) is QueryState.ANSWERED
    assert cache.claims > len(cache.plan_claims(NAMES))  # Ben's claim was looked at again until answered
    summary = lookup.state.progress.summary()
    assert (summary["credits_used"], summary["cache_hits"], summary["rows_enriched"]) == (4, 1, 5)
    assert ben in sink.outcomes[0].answered and ben not in sink.outcomes[0].paid_here


def test_a_claim_whose_lease_expired_is_taken_over_and_asked() -> None:
    ben = hash_of("Ben")
    cache = FakeCache(others={ben: 2})  # the other run died: its claim expires, nobody answers it
    service = FakeService()
    lookup, sink = run(cache, service)
    assert sorted(service.asked) == sorted(NAMES) and service.asked[-1] == "Ben"
    assert lookup.state.ledger.state(ben) is QueryState.PAID and ben in cache.answers
    assert sink.outcomes[0].paid_here == {hash_of(n) for n in NAMES}


def test_a_failure_keeps_what_was_answered_releases_the_claims_and_still_fills_the_sink() -> None:
    cache = FakeCache(claim_size=10)
    lookup, sink = make_run(cache, FakeService(batch=2, fail_after=1))
    with pytest.raises(RuntimeError, match="network is gone"):
        asyncio.run(lookup.run())
    paid = {hash_of("Anna"), hash_of("Ben")}
    assert set().union(*cache.stored) == set(cache.answers) == paid  # the answers received were stored
    assert cache.released and not cache.mine  # every claim not answered was given back
    assert set(lookup.state.ledger.hashes(QueryState.PAID)) == paid
    assert set(lookup.state.ledger.hashes(QueryState.RELEASED)) == {hash_of(n) for n in NAMES} - paid
    assert sink.outcomes and sink.outcomes[0].paid_here == sink.outcomes[0].answered == paid


def test_the_budget_defers_what_it_does_not_cover_and_gives_back_those_claims() -> None:
    cache = FakeCache(claim_size=2)
    service = FakeService(batch=2)
    lookup, sink = run(cache, service, max_credits=3, on_insufficient_credits="partial")
    assert len(service.asked) == 3 and service.counters.credits_used == 3
    deferred = set(lookup.state.ledger.hashes(QueryState.DEFERRED))
    assert len(deferred) == 2 and deferred == sink.outcomes[0].deferred
    assert not cache.mine  # the deferred queries' claims were released, none is left held
    assert lookup.state.progress.summary()["rows_deferred"] == 2


def test_an_answer_that_comes_after_its_claim_was_taken_over_is_not_counted_as_paid(
        caplog: pytest.LogCaptureFixture) -> None:
    anna = hash_of("Anna")
    cache = FakeCache(taken_back={anna})
    with caplog.at_level(logging.WARNING, logger="test.paths"):
        lookup, sink = run(cache, FakeService())
    assert lookup.state.ledger.state(anna) is QueryState.TAKEN_OVER
    assert anna not in sink.outcomes[0].answered and anna not in cache.answers
    assert any("taken over by another run: raise lease_seconds" in r.getMessage() for r in caplog.records)


def test_plan_only_spends_claims_and_fills_nothing() -> None:
    cache = FakeCache()
    service = FakeService()
    lookup, sink = run(cache, service, plan_only=True)
    assert service.asked == [] and cache.claims == 0 and not sink.outcomes
    assert lookup.state.progress.summary()["credits_needed"] == len(NAMES)


def test_a_fresh_cache_asks_the_remaining_credits_ahead_and_once() -> None:
    rows_read_when_asked: list[int] = []

    class Watched(FakeService):
        async def remaining_credits(self) -> int:
            rows_read_when_asked.append(lookup.state.progress.rows_read)
            return await super().remaining_credits()

    service = Watched()
    lookup, _ = run_later = make_run(FakeCache(fresh=True), service)
    asyncio.run(lookup.run())
    assert rows_read_when_asked == [0]  # asked before the source was read, and only once
    assert len(service.asked) == len(NAMES) and run_later[1].outcomes


def test_a_fresh_cache_with_nothing_valid_to_ask_ends_its_early_statistic_call_quietly(
        caplog: pytest.LogCaptureFixture) -> None:
    service = FakeService()
    lookup, _ = run(FakeCache(fresh=True), service, names=["", "x" * 60])
    assert service.asked == [] and lookup.state.progress.rows_invalid == 2
    assert "Task exception was never retrieved" not in caplog.text


def test_a_cache_that_may_hold_answers_is_not_asked_ahead_and_needs_no_call_when_it_does() -> None:
    cache = FakeCache(answers={hash_of(name): {"gender": "female"} for name in NAMES})
    service = FakeService()
    run(cache, service)
    assert service.statistic_calls == [] and service.asked == []


class PagedNames(ListQuestions):
    """The names a page each, a little apart: a source a run may ask while it reads."""

    asks_while_reading = True

    async def pages(self, *, own_connection: bool = False) -> AsyncGenerator[list[SourceValue]]:
        for value in self.values():
            await asyncio.sleep(0.01)
            yield [value]


@pytest.mark.parametrize(("plan_only", "reading_lines"), [(False, False), (True, True)])
def test_while_lookups_run_beside_the_reading_only_their_progress_lines_are_logged(
        caplog: pytest.LogCaptureFixture, plan_only: bool, reading_lines: bool) -> None:
    """Asking while reading, the reading tells no progress of its own (the lookups' lines say it all);
    reading first (here: plan only), it does."""
    lookup = LookupRun(GENDER, PagedNames(NAMES, GENDER), FakeCache(), FakeSink(), FakeService(),
                       logging.getLogger("test.paths"),
                       RunOptions(poll_seconds=0.01, progress_interval=0.001, plan_only=plan_only))
    with caplog.at_level(logging.INFO, logger="test.paths"):
        asyncio.run(lookup.run())
    progress = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Progress:")]
    assert any("pages read" in line for line in progress) is reading_lines, progress
    assert any("lookups done" in line for line in progress) is not plan_only, progress
