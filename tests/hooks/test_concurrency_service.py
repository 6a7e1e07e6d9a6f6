"""The async hook's adaptive concurrency against a real limit: the emulator as its own
process, with a network-like latency and a per-token limit of requests in flight."""

from __future__ import annotations

import itertools
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from namelookup_emulator import EmulatorProcess

TOKEN = "adaptive-concurrency-token"
LIMIT = 32
CREDITS = 100_000


def distinct_names(count: int) -> list[str]:
    """``count`` different valid first names (Aab, Aac, ...)."""
    letters = string.ascii_lowercase
    return [f"A{a}{b}{c}" for a, b, c in itertools.islice(itertools.product(letters, repeat=3), count)]


@pytest.fixture(scope="module")
def limited_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorProcess]:
    """The CLI's own flags set the latency and the limit (0.05 s Retry-After keeps the test short)."""
    db = Path(tmp_path_factory.mktemp("limited")) / "emulator.db"
    args = ["--db", str(db), "--latency-ms", "200-300", "--token-max-in-flight", str(LIMIT),
            "--token-retry-after", "0.05"]
    with EmulatorProcess(args, seed_token=TOKEN, seed_credits=CREDITS) as process:
        yield process


async def test_origin_lookups_approach_the_limit_with_few_429s_and_pay_nothing_twice(
        limited_service: EmulatorProcess) -> None:
    faults = limited_service._admin("GET", "faults")
    assert faults["token_max_in_flight"] == LIMIT and faults["latency_ms"] == [200, 300]
    # Slow start's first overshoot costs up to about LIMIT refused requests once per run (one
    # round trip of doubling past the limit); the 2 % share is measured over a run long enough
    # (4,000 lookups, about 35 s) for the steady state to dominate, not over that start-up alone.
    names = distinct_names(4000)
    before = limited_service._admin("DELETE", "stats")
    assert before["requests"] == 0
    hook = NameLookupAsyncHook.for_url(limited_service.url, TOKEN)  # default ceiling: 64
    async with hook:
        answered = {query.name: result async for query, result in hook.iter_country_of_origin(names)}
    stats = limited_service.stats()
    refused = stats["responses_by_status"].get("429", 0)
    controller = hook.concurrency
    print(f"{refused} of {stats['requests']} requests refused with 429; {controller.mean_in_flight():.1f} in flight "
          f"on average against a limit of {LIMIT}")
    # finishes, with every name answered once and paid once
    assert sorted(answered) == sorted(names)
    assert CREDITS - limited_service.top_up(TOKEN, 0) == 2 * len(names) == stats["credits_charged"]
    # keeps its 429 share small
    assert stats["requests"] == len(names) + refused
    assert refused / stats["requests"] <= 0.02, (refused, stats["requests"])
    # approaches the limit: in flight on average near it, never above it at the service
    assert stats["token_peak_in_flight"] <= LIMIT
    assert controller.mean_in_flight() >= 0.6 * LIMIT, controller.mean_in_flight()
    assert controller.decreases >= 1 and controller.current <= LIMIT + 1, vars(controller)


async def test_without_a_limit_the_hook_grows_to_its_ceiling(limited_service: EmulatorProcess) -> None:
    limited_service.set_faults(latency_ms=[200, 300])
    try:
        hook = NameLookupAsyncHook.for_url(limited_service.url, TOKEN, max_concurrency=48)
        async with hook:
            count = sum([1 async for _ in hook.iter_country_of_origin(distinct_names(1500))])
    finally:
        limited_service.set_faults(latency_ms=[200, 300], token_max_in_flight=LIMIT, token_retry_after=0.05)
    assert count == 1500
    assert hook.concurrency.peak_in_flight == 48 and hook.concurrency.decreases == 0


@pytest.mark.parametrize("latency_ms, first_wave", [([200, 300], 64), ([0, 0], 32)], ids=["far", "near"])
async def test_a_statistic_call_from_a_far_service_starts_the_lookups_at_64(
        limited_service: EmulatorProcess, latency_ms: list[int], first_wave: int) -> None:
    """The statistic call a run sends before its lookups measures the distance: 200 ms away, the
    first wave is 64 requests (one round trip for 6,400 names); on loopback it stays 32."""
    limited_service.set_faults(latency_ms=latency_ms)
    try:
        hook = NameLookupAsyncHook.for_url(limited_service.url, TOKEN)
        async with hook:
            await hook.get_statistic()
            assert hook.concurrency.current == first_wave
            answered = await hook.gender_batch(distinct_names(first_wave * 100))
    finally:
        limited_service.set_faults(latency_ms=[200, 300], token_max_in_flight=LIMIT, token_retry_after=0.05)
    assert len(answered) == first_wave * 100
    assert hook.concurrency.peak_in_flight == first_wave
