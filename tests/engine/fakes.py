"""In-process doubles behind the engine's ports, for edge cases no emulator run can stage on cue:
another run holding a claim and answering it later, a lease that expires, a service that fails
after some answers. The end-to-end runs stay on the real emulator (tests/engine/test_run.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.ports import ClaimOutcome, NetworkState, Result, RunOutcome
from airflow_provider_namelookup.metrics import CallCounters
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.xcom.cache import MemoryAnswerCache


class FakeService:
    """Answers every query with ``{"gender": ..., "asked": query.name}``, a request per ``batch``.

    :param fail_after: raise ``failure`` once this many requests were answered.
    :param remaining: the account's remaining credits.
    """

    shown_url = "http://service.test"

    def __init__(self, *, batch: int = 2, fail_after: int | None = None, failure: BaseException | None = None,
                 remaining: int = 1_000) -> None:
        self.counters = CallCounters("fake")
        self.batch = batch
        self.fail_after = fail_after
        self.failure = failure or RuntimeError("the network is gone")
        self.remaining = remaining
        self.asked: list[str] = []
        self.statistic_calls: list[int] = []

    def network(self) -> NetworkState:
        return NetworkState(in_flight=0, allowed=4, latency_ms=1.0)

    async def remaining_credits(self) -> int:
        self.statistic_calls.append(len(self.asked))  # how many queries had been asked when it was called
        await asyncio.sleep(0)
        return self.remaining

    async def answers(self, lookup: LookupKind, queries: Mapping[str, Query], *,
                      lost_answers: Any = None) -> AsyncIterator[dict[str, Result]]:
        items = list(queries.items())
        for start in range(0, len(items), self.batch):
            if self.fail_after is not None and self.counters.requests >= self.fail_after:
                raise self.failure
            await asyncio.sleep(0)
            self.counters.requests += 1
            chunk = items[start:start + self.batch]
            self.counters.credits_used += len(chunk) * lookup.credits_per_query
            self.asked += [query.name for _, query in chunk]
            yield {h: {"gender": "female", "asked": query.name} for h, query in chunk}


@dataclass
class Claim:
    hashes: list[str]


@dataclass
class FakeCache(MemoryAnswerCache):
    """A shared answers table in memory: ``others`` are hashes another run holds, each answered
    (``answered_later``) or given up (``expires``) after that many claims looked at it (the
    in-memory cache's reads, a claim protocol of its own)."""

    answers: dict[str, Result] = field(default_factory=dict)
    others: dict[str, int] = field(default_factory=dict)
    answered_later: set[str] = field(default_factory=set)
    claim_size: int = 2
    name: str = "the fake answers table"
    lease_seconds: float | None = 60.0
    store_every: float = 0.0
    fresh: bool = False
    store_batch: int = 1
    stored: list[set[str]] = field(default_factory=list)
    released: list[list[str] | None] = field(default_factory=list)
    claims: int = 0
    mine: set[str] = field(default_factory=set)
    taken_back: set[str] = field(default_factory=set)
    closed: bool = False

    def plan_claims(self, hashes: Sequence[str]) -> list[Claim]:  # type: ignore[override]
        return [Claim(list(hashes[i:i + self.claim_size])) for i in range(0, len(hashes), self.claim_size)]

    async def claim(self, claim: Any) -> ClaimOutcome:
        self.claims += 1
        outcome = ClaimOutcome()
        for h in claim.hashes:
            if h in self.answers:
                outcome.answered.add(h)
            elif h in self.others:
                self.others[h] -= 1
                if self.others[h] > 0:
                    outcome.held_by_others.add(h)
                    continue
                del self.others[h]
                if h in self.answered_later:
                    self.answers[h] = {"gender": "male", "by": "another run"}
                    outcome.answered.add(h)
                else:  # its lease expired: this claim takes it over
                    self.mine.add(h)
                    outcome.mine.append(h)
            else:
                self.mine.add(h)
                outcome.mine.append(h)
        return outcome

    async def store(self, answers: Mapping[str, Result]) -> set[str]:
        kept = {h for h in answers if h in self.mine and h not in self.taken_back}
        self.answers.update({h: answers[h] for h in kept})
        self.mine -= kept
        self.stored.append(kept)
        return kept

    async def release(self, claim: Any = None) -> None:
        hashes = None if claim is None else list(claim.hashes)
        self.released.append(hashes)
        self.mine -= set(self.mine if hashes is None else hashes)

    async def renew(self) -> None:
        return None

    async def close(self) -> None:
        self.closed = True


@dataclass
class FakeSink:
    outcomes: list[RunOutcome] = field(default_factory=list)

    async def prepare(self, *, create: bool) -> bool:
        return True

    async def fill(self, outcome: RunOutcome) -> None:
        self.outcomes.append(outcome)
