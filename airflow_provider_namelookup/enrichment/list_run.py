"""One lookup run over a list (the XCom path): plan the rows, answer the distinct queries
not answered yet, and give back a result per row, aligned with the input.

The table path has its run in :mod:`~airflow_provider_namelookup.tables.run`; this is the
same flow with a list as source and sink, so the XCom operators are thin ends. It knows no
Airflow: the caller hands in the answers saved by an earlier try and keeps
:attr:`ListRun.answers` if the run fails (they hold everything already paid for).

Example::

    run = ListRun(RowSpec(LookupKind.GENDER), ["Anna", "anna", {"full_name": "John Smith"}])
    async with NameLookupAsyncHook.for_url(url, token) as hook:
        await run.answer(hook)             # 2 distinct queries, 2 credits
    run.results()                          # 3 results, in input order
    run.progress.log_summary(log)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_namelookup.enrichment.budget import InsufficientCreditsMode
from airflow_provider_namelookup.enrichment.calls import QueryAnswerer, decide_budget
from airflow_provider_namelookup.enrichment.plan import (
    PlannedRow,
    RowSpec,
    distinct_queries,
    plan_query_object,
    plan_refused,
    plan_row,
)
from airflow_provider_namelookup.enrichment.progress import RunProgress
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook


def as_item_list(queries: Any) -> list[Any]:
    """The items of ``queries`` (a list of names, query objects or rows); None is empty.

    :raises ValueError: for a single string, bytes or mapping instead of a list.
    """
    if queries is None:
        return []
    if isinstance(queries, (str, bytes, Mapping)):
        raise ValueError("queries must be a list (of names, query objects or rows), "
                         f"got a single {type(queries).__name__}")
    return list(queries)


def plan_item(index: int, item: Any, spec: RowSpec, query_field: str | int | None) -> PlannedRow:
    """Plan one list item: a bare name, a query object, or a row read at ``query_field``."""
    if isinstance(item, str):
        return plan_row(index, item, spec)
    if query_field is None:
        if isinstance(item, Mapping):
            return plan_query_object(index, item, spec)
        return plan_refused(index, item, spec, f"row {index} is a {type(item).__name__}; expected a name "
                            "or a query object (or set query_field to read rows)")
    if isinstance(item, Mapping):
        if query_field not in item:
            return plan_refused(index, item, spec, f"row {index} has no field {query_field!r}", str(query_field))
        return plan_row(index, item[query_field], spec, country=item.get("country"), locale=item.get("locale"),
                        ip=item.get("ip"), id=item.get("id"))
    if isinstance(item, Sequence) and isinstance(query_field, int) and -len(item) <= query_field < len(item):
        return plan_row(index, item[query_field], spec)
    return plan_refused(index, item, spec, f"row {index} has no field {query_field!r}", str(query_field))


class ListRun:
    """A lookup run over a list of items.

    :param spec: how rows are read (lookup kind, name kind, default hints, secrets).
    :param items: names, query objects or rows.
    :param query_field: the key (or index) of a row holding the name; None for names and
        query objects.
    :param saved: answers (by query hash) saved by an earlier try; they are not paid again.
    :param label: what is enriched, for the summary line.
    """

    def __init__(self, spec: RowSpec, items: Sequence[Any], query_field: str | int | None = None, *,
                 saved: Mapping[str, dict[str, Any]] | None = None, label: str = "list") -> None:
        self.spec = spec
        self.planned = [plan_item(i, item, spec, query_field) for i, item in enumerate(items)]
        self.answers: dict[str, dict[str, Any]] = dict(saved or {})
        self.reused = len(self.answers)
        self.distinct = {h: q for h, q in distinct_queries(self.planned).items() if h not in self.answers}
        self.deferred: set[str] = set()
        self.progress = RunProgress(label=label)
        self.progress.rows_read = len(self.planned)
        self.progress.distinct_queries = len(self.distinct)
        self.progress.credits_needed = len(self.distinct) * spec.lookup.credits_per_query
        self.progress.rows_invalid = sum(1 for p in self.planned if p.error is not None)

    @property
    def invalid_rows(self) -> list[PlannedRow]:
        """Rows refused by the plan (they cost nothing)."""
        return [p for p in self.planned if p.error is not None]

    async def answer(self, hook: NameLookupAsyncHook, *, max_credits: int | None = None,
                     mode: InsufficientCreditsMode = "fail", check_remaining: bool = True) -> None:
        """Look up the distinct queries not answered yet, within the budget.

        Answers land in :attr:`answers` batch by batch, so a failure midway keeps every
        answer received before it.

        :raises NameLookupInsufficientCredits: in ``fail`` mode when the need exceeds the budget.
        :raises NameLookupError: when a call fails (after the calls in flight delivered).
        """
        budget = await decide_budget(hook, self.progress.credits_needed, max_credits=max_credits, mode=mode,
                                     check_remaining=check_remaining)
        answerer = QueryAnswerer(hook, self.spec.lookup, budget, self.progress)
        try:
            async for chunk in answerer.answer(self.distinct):
                self.answers.update(chunk)
        finally:
            self.deferred = answerer.deferred

    def results(self) -> list[dict[str, Any]]:
        """One result per input item, in input order; the counters are completed."""
        self.progress.rows_deferred = sum(1 for p in self.planned if p.query_hash in self.deferred)
        self.progress.rows_enriched = sum(1 for p in self.planned if p.query_hash in self.answers)
        self.progress.cache_hits = self.progress.rows_enriched - self.progress.lookups
        return [self._output(row) for row in self.planned]

    def _output(self, row: PlannedRow) -> dict[str, Any]:
        if row.error is not None:
            return {"error": row.error.as_dict()}
        if row.query_hash in self.answers and row.query is not None:
            return {**self.answers[row.query_hash], "input": row.query.to_payload()}
        if row.query_hash in self.deferred:
            return {"error": {"status_id": "insufficient-credits", "field": None,
                              "detail": "not looked up: the credit budget was used up; run again later"}}
        return {"error": {"status_id": "not-answered", "field": None, "detail": "no answer was received"}}
