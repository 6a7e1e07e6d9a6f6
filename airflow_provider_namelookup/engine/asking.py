"""Ask and store: what this run won is sent to the service, its answers stored behind the lookups.

Claims are made ahead (:class:`~.claiming.Claimer`, a producer) while what was won is asked (the
consumer): the service answers a request at a time (:mod:`.answerer`), each answer goes to the
write-back (:mod:`.writeback`), and a claim not wholly answered (the budget, a failure) is given
back at once. While lookups run, progress lines are logged and the run's leases renewed.

Example::

    asker = Asker(service, LookupKind.GENDER, state, claimer)   # state: the run's RunState
    await asker.ask(to_claim, budget)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.answerer import QueryAnswerer
from airflow_provider_namelookup.engine.budget import CreditBudget
from airflow_provider_namelookup.engine.claiming import Claimer
from airflow_provider_namelookup.engine.ledger import HOLDING, QueryState
from airflow_provider_namelookup.engine.ports import Claim, LookupService
from airflow_provider_namelookup.engine.queues import HashQueue, WonQueue
from airflow_provider_namelookup.engine.state import RunState
from airflow_provider_namelookup.engine.writeback import WriteBack

_CLAIMS_AHEAD = 1
"""Claims made while the previous one is still being asked (so the next requests start at once)."""


class Asker:
    """Asks what a run won and stores the answers (see the module docstring).

    :param service: the service (the async hook).
    :param lookup: the run's lookup.
    :param state: the run's shared state (:class:`~.state.RunState`): answers are stored and claims
        given back in its cache, noted in its ledger, counted in its progress.
    :param claimer: makes the claims whose won hashes are asked.
    """

    def __init__(self, service: LookupService, lookup: LookupKind, state: RunState, claimer: Claimer) -> None:
        self.service = service
        self.lookup = lookup
        self.state = state
        self.claimer = claimer

    async def ask(self, to_claim: HashQueue, budget: CreditBudget) -> None:
        """Claim ahead (a producer) while what was claimed is asked (the consumer)."""
        answerer = QueryAnswerer(self.service, self.lookup, budget, self.state.progress)
        won: WonQueue = asyncio.Queue(maxsize=_CLAIMS_AHEAD)
        cache = self.state.cache
        writeback = WriteBack(cache.store, interval=cache.store_every, batch=cache.store_batch, on_stored=self._stored)
        claiming = asyncio.create_task(self.claimer.claim_all(to_claim, won, budget))
        try:
            while True:
                getter = asyncio.ensure_future(won.get())
                await asyncio.wait({getter, claiming}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    await self._send(*getter.result(), answerer, writeback)
                    continue
                getter.cancel()
                if won.empty():
                    break
            await claiming  # its error, if it failed
        finally:
            if not claiming.done():
                claiming.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await claiming
            await writeback.drain()

    def _stored(self, answers: Mapping[str, Any], kept: set[str]) -> None:
        self.state.ledger.move(kept, QueryState.PAID)
        if late := [h for h in answers if h not in kept]:
            self.state.ledger.move(late, QueryState.TAKEN_OVER)
            self.state.log.warning("%d answers came after their claims had expired and been taken over by another run: "
                             "raise lease_seconds", len(late))

    async def _send(self, claim: Claim, mine: list[str], answerer: QueryAnswerer, writeback: WriteBack) -> None:
        ledger = self.state.ledger
        ledger.move(mine, QueryState.ASKED)
        received = 0
        try:
            async for chunk in answerer.answer({h: ledger.query(h) for h in mine}):
                received += len(chunk)
                await writeback.add(chunk)
        finally:
            self.state.ledger.move(answerer.deferred, QueryState.DEFERRED)
            answerer.deferred.clear()
            if received < len(mine):  # not granted by the budget, or a failure: free them now
                await writeback.drain()
                await self.state.cache.release(claim)
                self.state.ledger.move(mine, QueryState.RELEASED, only_from=HOLDING)

    async def renew_leases(self, every: float) -> None:
        """Extend the run's leases every ``every`` seconds (until cancelled)."""
        while True:
            await asyncio.sleep(every)
            await self.state.cache.renew()

    async def report(self) -> None:
        """Progress lines while looking up: lookups done, credits, requests in flight, latency (until cancelled)."""
        while True:
            await asyncio.sleep(self.state.progress.interval)
            network = self.service.network()
            self.state.progress.in_flight, self.state.progress.concurrency = network.in_flight, network.allowed
            self.state.progress.latency_ms = network.latency_ms
            self.state.log.info("Progress: %s", self.state.progress.lookup_line())
