"""The call step: answer distinct queries through the service, within the budget.

A query's identity is its hash from the plan (:func:`~.plan.query_hash`), from the source
to the sink: it travels as the query's ``id`` on the wire, so an answer comes back under
the hash of its question, with no second mapping.

Example::

    answerer = QueryAnswerer(service, LookupKind.GENDER, budget, progress)
    async for answered in answerer.answer({"<hash>": query, ...}):
        store(answered)                    # {hash: result}, batch by batch
    answerer.deferred                      # hashes left for the next run (budget)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.budget import CreditBudget
from airflow_provider_namelookup.engine.ports import LookupService, Result
from airflow_provider_namelookup.engine.progress import RunProgress
from airflow_provider_namelookup.errors import NameLookupBudgetReached
from airflow_provider_namelookup.models import Query


class QueryAnswerer:
    """Sends distinct queries as concurrent batches and yields their answers as they come.

    Queries the budget does not cover are not sent; their hashes are collected in
    :attr:`deferred`. If a call fails (credits exhausted, network gone), the answers of
    the calls already in flight are still yielded before the error propagates, so the
    caller can keep them. The budget hears of every answer lost after its request was sent
    (it may have been charged); when it stops the run before ``max_credits``
    (:attr:`~.budget.CreditBudget.stopped`), what was not answered is deferred too, and the
    run decides what the stop means (:meth:`~.run.LookupRun.run`).

    :param service: the service (the async hook).
    :param lookup: which endpoint to call.
    :param budget: the run's credit budget.
    :param progress: the run's counters (lookups).
    """

    def __init__(self, service: LookupService, lookup: LookupKind, budget: CreditBudget,
                 progress: RunProgress) -> None:
        self.service = service
        self.lookup = lookup
        self.budget = budget
        self.progress = progress
        self.deferred: set[str] = set()

    async def answer(self, queries: Mapping[str, Query]) -> AsyncIterator[dict[str, Result]]:
        """Answers by query hash, as each request comes back.

        :param queries: the queries to ask, by hash (as the plan made them: no id).
        """
        cost = self.lookup.credits_per_query
        items = list(queries.items())
        allowed = self.budget.grant(len(items), cost=cost)
        self.deferred.update(h for h, _ in items[allowed:])
        answered: set[str] = set()
        try:
            if allowed:
                async for chunk in self.service.answers(self.lookup, dict(items[:allowed]), lost_answers=self.budget):
                    answered.update(chunk)
                    self.progress.lookups += len(chunk)
                    yield chunk
        except NameLookupBudgetReached:
            self.deferred.update(h for h, _ in items[:allowed] if h not in answered)
        finally:
            self.budget.refund(allowed - len(answered), cost=cost)
