"""Per-token limits (requests in flight, requests per second): 429 with Retry-After, never charged."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest

from namelookup_emulator import EmulatorServer, FaultConfig, FaultInjector
from namelookup_emulator.limits import TokenLimiter, token_of
from tests.emulator.wire import assert_problem, bearer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def limiter_with(clock: Clock | None = None, **settings: object) -> TokenLimiter:
    faults = FaultInjector()
    faults.configure(**settings)
    return TokenLimiter(faults, clock or Clock())


def test_in_flight_limit_counts_each_token_apart() -> None:
    limiter = limiter_with(token_max_in_flight=2, token_retry_after=0.25)
    first, second = limiter.enter("a"), limiter.enter("a")
    assert limiter.enter("a").retry_after == 0.25
    assert limiter.enter("b").retry_after is None  # another token has its own count
    first.leave()
    first.leave()  # leaving twice frees one slot only
    assert limiter.enter("a").retry_after is None
    assert limiter.enter("a").retry_after == 0.25
    assert limiter.peak_in_flight == 2 and limiter.refused == 2
    second.leave()


def test_requests_per_second_is_a_token_bucket_with_one_second_of_burst() -> None:
    clock = Clock()
    limiter = limiter_with(clock, token_max_rps=4)
    assert [limiter.enter("a").retry_after for _ in range(4)] == [None] * 4
    assert limiter.enter("a").retry_after == 0.25  # the next request is allowed in 1/4 s
    clock.now += 0.25
    assert limiter.enter("a").retry_after is None
    assert limiter.enter("a").retry_after == 0.25


def test_requests_without_a_token_and_unlimited_configurations_pass() -> None:
    assert limiter_with(token_max_in_flight=1).enter(None).retry_after is None
    limiter = limiter_with()
    assert all(limiter.enter("a").retry_after is None for _ in range(1000))


@pytest.mark.parametrize(("headers", "query", "expected"), [
    ([(b"authorization", b"Bearer abc")], b"", "abc"),
    ([(b"authorization", b"bearer  abc ")], b"", "abc"),
    ([(b"authorization", b"Basic abc")], b"key=k", None),
    ([], b"key=k&x=1", "k"),
    ([], b"", None),
])
def test_the_token_is_read_like_the_service_reads_it(headers: list[tuple[bytes, bytes]], query: bytes,
                                                     expected: str | None) -> None:
    assert token_of({"type": "http", "headers": headers, "query_string": query}) == expected


@pytest.mark.parametrize("settings", [{"token_max_in_flight": 0}, {"token_max_in_flight": 1.5},
                                      {"token_max_in_flight": True}, {"token_max_rps": 0},
                                      {"token_max_rps": "fast"}, {"token_retry_after": -1}])
def test_invalid_limits_are_refused(settings: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(settings))):
        FaultConfig.from_json(settings)


async def test_a_token_over_its_in_flight_limit_gets_429_and_pays_nothing(
        emulator: EmulatorServer, make_account: Callable[..., str]) -> None:
    token, other = make_account(credits=100), make_account(credits=100)
    emulator.set_faults(latency_ms=300, token_max_in_flight=2, token_retry_after=0.5)
    assert httpx.delete(f"{emulator.url}/emulator/stats").json()["token_peak_in_flight"] == 0
    async with httpx.AsyncClient(base_url=emulator.url, timeout=10) as client:
        def origin(who: str) -> object:
            return client.post("/v2/country-of-origin", json={"first_name": "Giulia"}, headers=bearer(who))

        answers = await asyncio.gather(*(origin(token) for _ in range(3)), origin(other))
    statuses = sorted(a.status_code for a in answers[:3])
    assert statuses == [200, 200, 429] and answers[3].status_code == 200
    refused = next(a for a in answers if a.status_code == 429)
    body = assert_problem(refused, "too-many-requests", http_status=429)
    assert refused.headers["Retry-After"] == "0.5" and "nothing was charged" in body["detail"]
    assert emulator.state.remaining_credits(token) == 100 - 2 * 2
    stats = httpx.get(f"{emulator.url}/emulator/stats").json()
    assert stats["requests_limited"] == 1 and stats["credits_charged"] == 3 * 2
    assert stats["token_peak_in_flight"] == 2


def test_a_token_over_its_rate_gets_429_with_the_wait(emulator: EmulatorServer,
                                                      make_account: Callable[..., str]) -> None:
    token = make_account(credits=100)
    assert emulator.set_faults(token_max_rps=2)["token_max_rps"] == 2
    with httpx.Client(base_url=emulator.url, headers=bearer(token), timeout=10) as client:
        statuses = [client.post("/v2/gender", json={"first_name": "Anna"}).status_code for _ in range(3)]
        assert statuses == [200, 200, 429]
        refused = client.post("/v2/gender", json={"first_name": "Anna"})
        assert 0 < float(refused.headers["Retry-After"]) <= 0.5
        assert client.get("/v2/statistic").status_code == 429  # every /v2 call counts, free ones too
    assert emulator.state.remaining_credits(token) == 98
