"""The service as a pseudonymising run sees it: every answer's echoes of the name already hashed.

The service echoes what it was asked (``input``, ``first_name``, ``last_name``, the sanitized
names); a run with ``pseudonymise=True`` replaces them with their pseudonyms as each answer
arrives, before any cache, retry stash, table or XCom sees it.

Example::

    service = PseudonymisingService(async_hook, Pseudonymiser(key))
    run = LookupRun(rules, source, cache, sink, service, log)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from airflow_provider_namelookup.api import LostAnswers
from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.ports import CallCounts, LookupService, NetworkState, Result
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.personal.pseudonym import Pseudonymiser


class PseudonymisingService:
    """``service`` whose answers come with their echoes pseudonymised (everything else as it is).

    :param service: the service (the async hook).
    :param pseudonymiser: the run's key.
    """

    def __init__(self, service: LookupService, pseudonymiser: Pseudonymiser) -> None:
        self.service = service
        self.pseudonymiser = pseudonymiser

    @property
    def counters(self) -> CallCounts:
        return self.service.counters

    @property
    def shown_url(self) -> str:
        return self.service.shown_url

    def network(self) -> NetworkState:
        return self.service.network()

    async def remaining_credits(self) -> int:
        return await self.service.remaining_credits()

    async def answers(self, lookup: LookupKind, queries: Mapping[str, Query], *,
                      lost_answers: LostAnswers | None = None) -> AsyncIterator[dict[str, Result]]:
        hidden = self.pseudonymiser.result
        async for chunk in self.service.answers(lookup, queries, lost_answers=lost_answers):
            yield {h: hidden(result) for h, result in chunk.items()}

    def __getattr__(self, name: str) -> Any:  # what else a run's helpers read of the hook
        return getattr(self.service, name)
