"""The call step: answer distinct queries through the async hook, within the budget.

Example::

    answerer = QueryAnswerer(hook, LookupKind.GENDER, budget, progress)
    async for answered in answerer.answer({"<hash>": query, ...}):
        store(answered)                    # {hash: result}, batch by batch
    answerer.deferred                      # hashes left for the next run (budget)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from airflow_provider_namelookup.enrichment.budget import CreditBudget, InsufficientCreditsMode
from airflow_provider_namelookup.enrichment.plan import LookupKind
from airflow_provider_namelookup.enrichment.progress import RunProgress
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.models import Query


async def decide_budget(hook: NameLookupAsyncHook, needed: int, *, max_credits: int | None,
                        mode: InsufficientCreditsMode, check_remaining: bool,
                        remaining: int | None = None) -> CreditBudget:
    """The run's budget, checked before anything is spent (one free statistic call when
    something is needed and ``check_remaining``, unless ``remaining`` was read already);
    see :meth:`CreditBudget.decide`."""
    if needed and check_remaining and remaining is None:
        remaining = int((await hook.get_statistic()).get("remaining_credits") or 0)
    elif not check_remaining:
        remaining = None
    return CreditBudget.decide(needed=needed, max_credits=max_credits, remaining=remaining, mode=mode)


class QueryAnswerer:
    """Sends distinct queries as concurrent batches and yields their answers as they come.

    Queries the budget does not cover are not sent; their hashes are collected in
    :attr:`deferred`. If a call fails (credits exhausted, network gone), the answers of
    the calls already in flight are still yielded before the error propagates, so the
    caller can keep them.

    :param hook: the async hook (its ``max_concurrency`` bounds requests in flight).
    :param lookup: which endpoint to call.
    :param budget: the run's credit budget.
    :param progress: the run's counters (lookups, credits, requests).
    """

    def __init__(self, hook: NameLookupAsyncHook, lookup: LookupKind, budget: CreditBudget,
                 progress: RunProgress) -> None:
        self.hook = hook
        self.lookup = lookup
        self.budget = budget
        self.progress = progress
        self.deferred: set[str] = set()

    async def answer(self, queries: Mapping[str, Query]) -> AsyncIterator[dict[str, dict[str, Any]]]:
        cost = self.lookup.credits_per_query
        items = list(queries.items())
        allowed = self.budget.grant(len(items), cost=cost)
        self.deferred.update(h for h, _ in items[allowed:])
        to_send = {self._sent_form(q).cache_key: h for h, q in items[:allowed]}
        answered = 0
        try:
            async for chunk in self._results([q for _, q in items[:allowed]], to_send):
                answered += len(chunk)
                self.progress.lookups += len(chunk)
                yield chunk
        finally:
            self.budget.refund(len(to_send) - answered, cost=cost)
            self.progress.credits_used = self.hook.stats.credits_used
            self.progress.absorb_call_stats(self.hook.stats)

    def _sent_form(self, query: Query) -> Query:
        return query if self.lookup.takes_hints else query.without_hints()

    async def _results(self, queries: list[Query], hashes: dict[str, str]
                       ) -> AsyncIterator[dict[str, dict[str, Any]]]:
        """Answers by query hash (``hashes``: the hash of each query by its cache key, as sent)."""
        if not queries:
            return
        if self.lookup is LookupKind.GENDER:
            async for batch, results in self.hook.iter_gender_batches(queries):
                yield {hashes[q.cache_key]: r for q, r in zip(batch, results, strict=True)}
        else:
            async for query, result in self.hook.iter_country_of_origin(queries):
                yield {hashes[query.cache_key]: result}
