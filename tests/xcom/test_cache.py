"""The list run's cache: answers in memory, seeded from an earlier try, every claim its own."""

from __future__ import annotations

import asyncio

from airflow_provider_namelookup.xcom.cache import MemoryAnswerCache


def test_saved_answers_count_as_answered_and_everything_else_is_this_run_s() -> None:
    cache = MemoryAnswerCache({"h1": {"gender": "female"}})
    assert cache.reused == 1 and cache.lease_seconds is None and cache.store_every == 0
    assert asyncio.run(cache.answered(["h1", "h2"])) == {"h1"}
    (claim,) = cache.plan_claims(["h2", "h3"])
    assert asyncio.run(cache.claim(claim)).mine == ["h2", "h3"] and cache.plan_claims([]) == []
    assert asyncio.run(cache.store({"h2": {"gender": "male"}})) == {"h2"}
    assert set(cache.answers) == {"h1", "h2"}
