"""The call step: answer distinct queries through the async hook, within the budget.

A query's identity is its hash from the plan (:func:`~.plan.query_hash`), from the source
to the sink: it travels as the query's ``id`` on the wire, so an answer comes back under
the hash of its question, with no second mapping.

Example::

    answerer = QueryAnswerer(hook, LookupKind.GENDER, budget, progress)
    async for answered in answerer.answer({"<hash>": query, ...}):
        store(answered)                    # {hash: result}, batch by batch
    answerer.deferred                      # hashes left for the next run (budget)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.budget import CreditBudget
from airflow_provider_namelookup.engine.progress import RunProgress
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.models import Query


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
        """Answers by query hash, as each request comes back.

        :param queries: the queries to ask, by hash (as the plan made them: no id).
        """
        cost = self.lookup.credits_per_query
        items = list(queries.items())
        allowed = self.budget.grant(len(items), cost=cost)
        self.deferred.update(h for h, _ in items[allowed:])
        tagged = [query.with_id(query_hash) for query_hash, query in items[:allowed]]  # the hash is its id
        answered = 0
        try:
            async for chunk in self._results(tagged):
                answered += len(chunk)
                self.progress.lookups += len(chunk)
                self.progress.absorb_call_stats(self.hook.stats)
                yield chunk
        finally:
            self.budget.refund(len(tagged) - answered, cost=cost)
            self.progress.absorb_call_stats(self.hook.stats)

    async def _results(self, queries: list[Query]) -> AsyncIterator[dict[str, dict[str, Any]]]:
        if not queries:
            return
        if self.lookup is LookupKind.GENDER:
            async for batch, results in self.hook.iter_gender_batches(queries):
                yield {str(q.id): r for q, r in zip(batch, results, strict=True)}
        else:
            async for query, result in self.hook.iter_country_of_origin(queries):
                yield {str(query.id): result}
