"""Claim: the hashes to ask are claimed in the answer cache a group at a time; what this run wins
goes to the asking, what another run holds is looked at again until it is answered or taken over.

Example::

    claimer = Claimer(state, poll_seconds=1.0)   # state: the run's RunState
    await claimer.claim_all(to_claim, won, budget)     # to_claim: pages of hashes, then None
"""

from __future__ import annotations

import asyncio

from airflow_provider_namelookup.engine.budget import CreditBudget
from airflow_provider_namelookup.engine.ledger import TO_CLAIM, QueryState
from airflow_provider_namelookup.engine.ports import Claim
from airflow_provider_namelookup.engine.queues import HashQueue, WonQueue
from airflow_provider_namelookup.engine.state import RunState


class Claimer:
    """Claims a run's hashes (see the module docstring).

    :param state: the run's shared state (:class:`~.state.RunState`): claims are made in its cache,
        each outcome noted in its ledger, and a claim its budget cannot pay at its price is deferred.
    :param poll_seconds: how often claims other runs hold are looked at again.
    """

    def __init__(self, state: RunState, *, poll_seconds: float) -> None:
        self.state = state
        self.poll_seconds = poll_seconds

    async def claim_all(self, to_claim: HashQueue, won: WonQueue, budget: CreditBudget) -> None:
        """Claim the hashes that come in, a claim (chunk) at a time, and hand over what this run
        won; come back to claims whose queries other runs hold every ``poll_seconds``, until
        those are answered or taken over."""
        pending: list[Claim] = []
        waiting: list[Claim] = []
        reading = True
        while reading or pending or waiting:
            if reading and (not pending or not to_claim.empty()):
                try:  # while others' claims are waited for, look at them again every poll_seconds
                    hashes = await asyncio.wait_for(to_claim.get(), self.poll_seconds if waiting else None)
                except TimeoutError:
                    hashes = []
                if hashes is None:
                    reading = False
                elif hashes:
                    pending += self.state.cache.plan_claims(hashes)
                    continue
                if not waiting:
                    continue
            if pending:
                claim = pending.pop(0)
                if budget.exhausted(self.state.price):
                    self.state.ledger.move(claim.hashes, QueryState.DEFERRED, only_from=TO_CLAIM)
                    continue
            else:
                if not reading:
                    await asyncio.sleep(self.poll_seconds)
                claim = waiting.pop(0)
            mine = await self.settle(claim)
            state_of = self.state.ledger.state
            if any(state_of(h) is QueryState.HELD for h in claim.hashes):
                waiting.append(claim)
            if mine:
                await won.put((claim, mine))

    async def settle(self, claim: Claim) -> list[str]:
        """Claim ``claim`` in the cache and note what it found; the hashes this run now holds."""
        outcome = await self.state.cache.claim(claim)
        self.state.ledger.move(outcome.answered, QueryState.ANSWERED, only_from=TO_CLAIM)
        self.state.ledger.move(outcome.held_by_others, QueryState.HELD, only_from=TO_CLAIM)
        won = set(outcome.mine)
        return self.state.ledger.move([h for h in claim.hashes if h in won], QueryState.CLAIMED, only_from=TO_CLAIM)
