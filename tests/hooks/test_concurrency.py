"""The adaptive concurrency controller's rules, on a hand-driven clock, and its gate."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest

from airflow_provider_namelookup.api import RetryPolicy
from airflow_provider_namelookup.hooks.concurrency import (
    DEFAULT_MAX_CONCURRENCY,
    ConcurrencyGate,
    ConcurrencyLimit,
    Outcome,
    Ticket,
)
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.hooks.settings import ClientSettings


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fill(limit: ConcurrencyLimit, path: str = "/v2/x") -> list[Ticket]:
    """Start requests until the limit refuses one."""
    tickets = []
    while (ticket := limit.try_start(path)) is not None:
        tickets.append(ticket)
    return tickets


def round_trip(limit: ConcurrencyLimit, clock: Clock, outcome: Outcome = Outcome.OK,
               seconds: float = 0.1) -> int:
    """Fill the limit, let every request come back after ``seconds``; return how many went."""
    tickets = fill(limit)
    clock.now += seconds
    for ticket in tickets:
        limit.finish(ticket, outcome)
    return len(tickets)


def test_slow_start_doubles_the_limit_each_round_trip_up_to_32_then_adds_about_16() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=96, initial=4, clock=clock)
    sent = [round_trip(limit, clock) for _ in range(8)]
    assert sent[:4] == [4, 8, 16, 32]  # doubling
    assert all(b - a == 16 for a, b in itertools.pairwise(sent[3:-1]))  # limited (RFC 3742)
    assert sent[-1] == 96 and limit.current == 96 and limit.peak_in_flight == 96


def test_by_default_a_run_starts_at_32_and_reaches_64_in_two_round_trips() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(clock=clock)
    assert [round_trip(limit, clock) for _ in range(3)] == [32, 48, 64]


@pytest.mark.parametrize("round_trip_seconds, first_waves", [(0.1, [64, 64]), (0.04, [64, 64]), (0.01, [32, 48])])
def test_a_far_service_is_asked_from_64_at_once(round_trip_seconds: float, first_waves: list[int]) -> None:
    """Over a WAN a window of 32 leaves the link idle for a round trip; near, the service's work is the limit."""
    clock = Clock()
    limit = ConcurrencyLimit(clock=clock)
    limit.far_away(round_trip_seconds)
    assert [round_trip(limit, clock) for _ in range(2)] == first_waves


def test_only_a_run_still_in_slow_start_is_widened_and_never_above_its_ceiling() -> None:
    clock = Clock()
    narrow = ConcurrencyLimit(ceiling=40, clock=clock)
    assert narrow.current == 32 and narrow.far_away(0.1) and narrow.current == 40
    congested = ConcurrencyLimit(clock=clock)
    round_trip(congested, clock, Outcome.CONGESTED)
    assert not congested.far_away(0.1) and congested.current < 32


def test_the_limit_never_passes_the_ceiling_nor_falls_below_one() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=6, initial=4, clock=clock)
    for _ in range(10):
        round_trip(limit, clock)
    assert limit.current == 6
    for _ in range(20):
        round_trip(limit, clock, Outcome.CONGESTED)
    assert limit.current == 1 and limit.limit == 1.0
    assert ConcurrencyLimit(ceiling=2, initial=4).current == 2


def test_congestion_multiplies_the_limit_by_0_7_once_per_round_trip() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=64, initial=20, clock=clock)
    tickets = fill(limit)
    clock.now += 0.1
    for ticket in tickets:  # twenty 429s from one burst: one decrease, not twenty
        limit.finish(ticket, Outcome.CONGESTED)
    assert limit.limit == pytest.approx(14.0) and limit.decreases == 1 and not limit.slow_start
    round_trip(limit, clock, Outcome.CONGESTED)  # sent after the decrease: decreases again
    assert limit.limit == pytest.approx(9.8) and limit.decreases == 2


def test_after_congestion_the_limit_grows_by_about_one_per_round_trip() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=64, initial=10, clock=clock)
    round_trip(limit, clock, Outcome.CONGESTED)
    assert limit.current == 7
    for _ in range(5):
        round_trip(limit, clock)
    assert 11 <= limit.limit <= 12  # about 7 + 5 round trips, not slow start's doubling


def test_slow_answers_stop_the_growth_without_shrinking() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=64, initial=4, clock=clock)
    round_trip(limit, clock, seconds=0.1)
    round_trip(limit, clock, seconds=0.1)
    assert limit.current == 16
    round_trip(limit, clock, seconds=0.3)  # three times the quickest: the service is queueing
    assert limit.current == 16 and not limit.slow_start and limit.decreases == 0


def test_latency_is_compared_per_path() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=64, initial=1, clock=clock)
    ticket = limit.try_start("/v2/statistic")
    assert ticket is not None
    clock.now += 0.01
    limit.finish(ticket, Outcome.OK)
    for _ in range(3):  # a 100-name batch takes ten times the free statistic call: still fast
        tickets = fill(limit, "/v2/gender")
        clock.now += 0.1
        for ticket in tickets:
            limit.finish(ticket, Outcome.OK)
    assert limit.slow_start and limit.current > 2


def test_other_4xx_answers_change_nothing() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=64, initial=8, clock=clock)
    round_trip(limit, clock, Outcome.NEUTRAL)
    assert limit.limit == 8.0 and limit.slow_start and limit.decreases == 0


def test_the_limit_grows_only_while_it_is_used() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=64, initial=8, clock=clock)
    for _ in range(10):  # one request at a time proves nothing about room for more
        ticket = limit.try_start()
        assert ticket is not None
        clock.now += 0.1
        limit.finish(ticket, Outcome.OK)
    assert limit.limit == 8.0


def test_retry_after_stops_every_new_request_until_it_has_passed() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=64, initial=8, clock=clock)
    tickets = [limit.try_start(), limit.try_start()]
    assert tickets[0] is not None
    limit.finish(tickets[0], Outcome.CONGESTED, retry_after=2.0)
    assert limit.in_flight < limit.current  # a slot is free, but the pause holds it
    assert limit.try_start() is None and limit.pause_left() == 2.0
    clock.now += 2.0
    assert limit.try_start() is not None


def test_mean_in_flight_is_weighted_by_time() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=64, initial=4, clock=clock)
    tickets = fill(limit)  # 4 in flight for one second, then none for one second
    clock.now += 1.0
    for ticket in tickets:
        limit.finish(ticket, Outcome.NEUTRAL)
    clock.now += 1.0
    assert limit.mean_in_flight() == pytest.approx(2.0)


@pytest.mark.parametrize("kwargs", [{"ceiling": 0}, {"decrease": 1.0}, {"decrease": 0.0},
                                    {"latency_tolerance": 0.5}])
def test_bad_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs)).replace("ceiling", "max_concurrency")):
        ConcurrencyLimit(**kwargs)  # type: ignore[arg-type]


async def test_the_gate_makes_waiters_wait_and_wakes_them_as_slots_free_up() -> None:
    gate = ConcurrencyGate(ConcurrencyLimit(ceiling=2, initial=2))
    first, second = await gate.acquire(), await gate.acquire()
    third = asyncio.ensure_future(gate.acquire())
    await asyncio.sleep(0.01)
    assert not third.done()
    gate.release(first, Outcome.OK)
    assert isinstance(await asyncio.wait_for(third, 1), Ticket)
    assert gate.limit.in_flight == 2
    gate.release(second, Outcome.OK)
    gate.release(third.result(), Outcome.OK)


async def test_a_woken_waiter_that_is_cancelled_passes_its_slot_on() -> None:
    gate = ConcurrencyGate(ConcurrencyLimit(ceiling=1, initial=1))
    held = await gate.acquire()
    leaving = asyncio.ensure_future(gate.acquire())
    staying = asyncio.ensure_future(gate.acquire())
    await asyncio.sleep(0.01)
    gate.release(held, Outcome.OK)  # wakes `leaving`, which is cancelled before it takes the slot
    leaving.cancel()
    ticket = await asyncio.wait_for(staying, 1)
    assert gate.limit.in_flight == 1
    gate.release(ticket, Outcome.OK)


async def test_a_retry_after_pause_holds_the_gate() -> None:
    gate = ConcurrencyGate(ConcurrencyLimit(ceiling=4, initial=4))
    ticket = await gate.acquire()
    gate.release(ticket, Outcome.CONGESTED, retry_after=0.2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    gate.release(await gate.acquire(), Outcome.OK)
    assert loop.time() - started >= 0.19


# The controller inside the async hook (in-process transport: edge cases only).

def test_the_ceiling_comes_from_the_argument_else_the_connection_else_the_default() -> None:
    settings = ClientSettings(base_url="http://svc.test", token="t", max_concurrency=12)
    assert NameLookupAsyncHook(settings=settings).max_concurrency == 12
    assert NameLookupAsyncHook(settings=settings, max_concurrency=3).max_concurrency == 3
    assert NameLookupAsyncHook(settings=ClientSettings()).max_concurrency == DEFAULT_MAX_CONCURRENCY == 64
    with pytest.raises(ValueError, match="max_concurrency"):
        ClientSettings.from_parts(host="h", port=None, password="t", extra={"max_concurrency": 0})
    with pytest.raises(ValueError, match="max_concurrency"):
        NameLookupAsyncHook(max_concurrency=0)


async def test_server_errors_shrink_the_hooks_concurrency_and_clean_answers_grow_it() -> None:
    calls = {"n": 0}

    async def handle(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        await asyncio.sleep(0.002)
        if calls["n"] > 100 and calls["n"] % 10 == 0:
            return httpx.Response(503, text="<html>busy</html>")
        return httpx.Response(200, json={"input": {"first_name": "Anna"}, "gender": "female",
                                         "details": {"credits_used": 2}})

    hook = NameLookupAsyncHook.for_url("http://svc.test", "t", max_concurrency=32,
                                       transport=httpx.MockTransport(handle),
                                       retry=RetryPolicy(backoff_base=0.001))
    async with hook:
        answered = [r async for _, r in hook.iter_country_of_origin([f"Name{chr(97 + i % 26)}" for i in range(200)])]
    assert len(answered) == 200
    assert hook.concurrency.decreases >= 1
    assert 4 < hook.concurrency.peak_in_flight <= 32  # grew from 4 while clean, never past the ceiling
    assert hook.concurrency.current < hook.concurrency.peak_in_flight  # shrank once 503s came
    network = hook.network()
    assert network.allowed == hook.concurrency.current and network.latency_ms >= 0 and network.in_flight == 0


def test_progress_lines_show_the_concurrency_and_latency_once_requests_were_answered() -> None:
    from airflow_provider_namelookup.engine.progress import RunProgress
    from airflow_provider_namelookup.metrics import CallCounters

    calls = CallCounters("namelookup_default")
    progress = RunProgress(label="customers -> customers_origin", calls=calls)
    assert "in flight" not in progress.lookup_line()
    calls.requests = 10
    progress.concurrency, progress.latency_ms = 23, 104.4
    assert progress.lookup_line().endswith(", 10 requests, 0 requests in flight (up to 23 allowed), latency 104 ms")
    assert "concurrency" not in progress.summary() and progress.summary()["requests"] == 10


async def test_the_connections_are_spread_over_clients_of_at_most_two() -> None:
    from airflow_provider_namelookup.hooks.lanes import ClientLanes

    sizes: list[int] = []

    def make(size: int) -> httpx.AsyncClient:
        sizes.append(size)
        return httpx.AsyncClient()

    lanes = ClientLanes(make, 5)
    assert lanes.sizes == [2, 2, 1] and sizes == [2]  # one client until more are needed
    for _ in range(2):
        lanes.busy[lanes.least_busy()] += 1
    assert lanes.least_busy() == 1 and sizes == [2, 2]
    lanes.busy[1], lanes.busy[0] = 2, 1
    assert lanes.least_busy() == 0
    await lanes.aclose()
    assert ClientLanes(lambda size: httpx.AsyncClient(), 1).sizes == [1]


async def test_the_hook_opens_lanes_as_requests_in_flight_grow_and_closes_them_all() -> None:
    async def handle(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.005)
        return httpx.Response(200, json={"input": {"first_name": "Anna"}, "details": {"credits_used": 2}})

    hook = NameLookupAsyncHook.for_url("http://svc.test", "t", max_concurrency=24,
                                       transport=httpx.MockTransport(handle))
    async with hook:
        assert (await hook.get_statistic()) and len((await hook.alanes()).clients) == 1
        lanes = await hook.alanes()
        assert len([r async for _, r in hook.iter_country_of_origin(["Anna"] * 300)]) == 300
    assert hook.concurrency.peak_in_flight > 16 and len(lanes.clients) == 12  # 24 connections, 2 a client
    assert hook._lanes is None and all(client.is_closed for client in lanes.clients)
