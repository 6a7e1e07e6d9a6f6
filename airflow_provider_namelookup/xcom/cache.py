"""The answer cache of a list run: a dict in memory, seeded with what an earlier try paid for.

Nobody else shares it, so every claim is this run's and nothing needs a lease. When the
run fails, :attr:`MemoryAnswerCache.answers` holds everything paid for so far: the XCom
operators save it for the task's next try
(:mod:`~airflow_provider_namelookup.operators.retry_stash`).

Example::

    >>> import asyncio
    >>> cache = MemoryAnswerCache({"h1": {"gender": "female"}})
    >>> asyncio.run(cache.answered(["h1", "h2"]))
    {'h1'}
    >>> [c.hashes for c in cache.plan_claims(["h2", "h3"])]
    [['h2', 'h3']]
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.engine.ports import ClaimOutcome, Question, Result


@dataclass
class WholeClaim:
    """Everything asked at once."""

    hashes: list[str]


class MemoryAnswerCache:
    """Answers by query hash.

    :param saved: answers kept by an earlier try of the same task instance.
    """

    name = "the answers saved by earlier tries"
    lease_seconds: float | None = None
    store_every = 0.0
    store_batch = 1

    def __init__(self, saved: Mapping[str, Result] | None = None) -> None:
        self.answers: dict[str, Result] = dict(saved or {})
        self.fresh = not self.answers
        self.reused = len(self.answers)

    async def prepare(self, *, create: bool) -> bool:
        return True

    async def register(self, questions: Sequence[Question]) -> None:
        return None

    async def answered(self, hashes: Collection[str]) -> set[str]:
        return {h for h in hashes if h in self.answers}

    def plan_claims(self, hashes: Sequence[str]) -> list[WholeClaim]:
        return [WholeClaim(list(hashes))] if hashes else []

    async def claim(self, claim: Any) -> ClaimOutcome:
        return ClaimOutcome(mine=list(claim.hashes))

    async def store(self, answers: Mapping[str, Result]) -> set[str]:
        self.answers.update(answers)
        return set(answers)

    async def release(self, claim: Any = None) -> None:
        return None

    async def renew(self) -> None:
        return None

    async def keep_lost(self, credits: int) -> None:
        """Nothing: an XCom operator's ``max_credits`` is each try's own."""
        return None

    async def close(self) -> None:
        return None
