"""Lookup operators over XCom: a list of names or query objects in, aligned results out.

Example::

    from airflow_provider_namelookup.operators import GenderLookupOperator

    genders = GenderLookupOperator(
        task_id="genders",
        queries=["Theresa", {"full_name": "John Smith", "country": "US"}, {"email": "a.b@c.de"}],
        country="DE",                      # default hint for rows without one
    )
    # XCom: [{"gender": "female", ...}, {"gender": "male", ...}, {...}], one per input row;
    # a row that breaks a rule is {"error": {"status_id": ..., "detail": ..., "field": ...}}.

Rows from a SQL query pass through unchanged: ``query_field="name"`` picks the key of a
dict row (or the index of a tuple row, as ``SQLExecuteQueryOperator`` returns them) and
``name_kind`` says whether it holds a first name, a full name or an e-mail address.
Each distinct query is paid once, however many rows carry it. If the run fails midway
(credits exhausted, network gone), the answers received are kept in the task's state
store, so the task's retry pays only for what is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from airflow.sdk import Context

from airflow_provider_namelookup.enrichment.calls import QueryAnswerer, decide_budget
from airflow_provider_namelookup.enrichment.plan import (
    LookupKind,
    PlannedRow,
    RowSpec,
    distinct_queries,
    plan_query_object,
    plan_refused,
    plan_row,
)
from airflow_provider_namelookup.enrichment.progress import RunProgress
from airflow_provider_namelookup.errors import NameLookupError, NameLookupInsufficientCredits
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.operators.base import GenderHintsMixin, NameLookupOperatorBase

_STATE_KEY = "namelookup_answers"


class _XComLookupOperator(NameLookupOperatorBase):
    """Shared body of :class:`GenderLookupOperator` and :class:`CountryOfOriginOperator`.

    :param queries: list of first names (strings), query objects (dicts) or rows (templated).
    :param query_field: the key (or index) of a row holding the name; None when the items
        are names or query objects.
    """

    template_fields: Sequence[str] = ("queries", "max_credits")
    template_fields_renderers: ClassVar[dict[str, str]] = {"queries": "json"}

    def __init__(self, *, queries: Any, query_field: str | int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.queries = queries
        self.query_field = query_field

    def _items(self) -> list[Any]:
        if self.queries is None:
            return []
        if isinstance(self.queries, (str, bytes, Mapping)):
            raise ValueError("queries must be a list (of names, query objects or rows), "
                             f"got a single {type(self.queries).__name__}")
        return list(self.queries)

    def _plan_item(self, index: int, item: Any, spec: RowSpec) -> PlannedRow:
        field = self.query_field
        if isinstance(item, str):
            return plan_row(index, item, spec)
        if field is None:
            if isinstance(item, Mapping):
                return plan_query_object(index, item, spec)
            return plan_refused(index, item, spec, f"row {index} is a {type(item).__name__}; expected a name "
                                "or a query object (or set query_field to read rows)")
        if isinstance(item, Mapping):
            if field not in item:
                return plan_refused(index, item, spec, f"row {index} has no field {field!r}", str(field))
            return plan_row(index, item[field], spec, country=item.get("country"), locale=item.get("locale"),
                            ip=item.get("ip"), id=item.get("id"))
        if isinstance(item, Sequence) and isinstance(field, int) and -len(item) <= field < len(item):
            return plan_row(index, item[field], spec)
        return plan_refused(index, item, spec, f"row {index} has no field {field!r}", str(field))

    def _answers_from_state(self, context: Context) -> tuple[Any, dict[str, dict[str, Any]]]:
        store = context.get("task_state_store")
        if store is None:
            return None, {}
        try:
            saved = store.get(_STATE_KEY) or {}
        except Exception as err:  # a state store is a convenience, never a reason to fail
            self.log.warning("Could not read the task state store: %s", err)
            return None, {}
        return store, {str(k): v for k, v in saved.items() if isinstance(v, dict)} if isinstance(saved, Mapping) else {}

    async def _answer(self, distinct: dict[str, Query], answers: dict[str, dict[str, Any]],
                      progress: RunProgress) -> set[str]:
        async with self.async_hook() as hook:
            budget = await decide_budget(hook, len(distinct) * self.lookup.credits_per_query,
                                         max_credits=self.credit_limit, mode=self.on_insufficient_credits,
                                         check_remaining=self.check_remaining_credits)
            answerer = QueryAnswerer(hook, self.lookup, budget, progress)
            async for chunk in answerer.answer(distinct):
                answers.update(chunk)
            return answerer.deferred

    def execute(self, context: Context) -> list[dict[str, Any]]:
        spec = self.row_spec()
        planned = [self._plan_item(i, item, spec) for i, item in enumerate(self._items())]
        store, answers = self._answers_from_state(context)
        reused = bool(answers)
        if reused:
            self.log.info("Reusing %d answers saved by an earlier try of this task", len(answers))
        distinct = {h: q for h, q in distinct_queries(planned).items() if h not in answers}
        progress = RunProgress(label=self.task_id)
        progress.rows_read = len(planned)
        progress.distinct_queries = len(distinct)
        progress.credits_needed = len(distinct) * self.lookup.credits_per_query
        progress.rows_invalid = sum(1 for p in planned if p.error is not None)
        for row in planned:
            if row.error is not None:
                self.log.warning("Row %d is invalid and costs nothing: %s", row.ref, row.error)
        try:
            deferred = asyncio.run(self._answer(distinct, answers, progress))
        except NameLookupInsufficientCredits:
            raise
        except NameLookupError:
            self._save_answers(store, answers)
            self.log.error("Stopped after %d of %d distinct queries were answered; they are kept for the "
                           "task's next try. %s", len(answers), len(distinct), progress.line())
            raise
        if reused:
            store.delete(_STATE_KEY)
        progress.rows_deferred = sum(1 for p in planned if p.query_hash in deferred)
        progress.rows_enriched = sum(1 for p in planned if p.query_hash in answers)
        progress.cache_hits = progress.rows_enriched - progress.lookups
        self.log.info("Done: %s", progress.line())
        return [self._output(row, answers, deferred) for row in planned]

    def _save_answers(self, store: Any, answers: dict[str, dict[str, Any]]) -> None:
        if store is not None and answers:
            try:
                store.set(_STATE_KEY, answers)
            except Exception as err:
                self.log.warning("Could not save answers to the task state store: %s", err)

    @staticmethod
    def _output(row: PlannedRow, answers: dict[str, dict[str, Any]], deferred: set[str]) -> dict[str, Any]:
        if row.error is not None:
            return {"error": row.error.as_dict()}
        if row.query_hash in answers and row.query is not None:
            return {**answers[row.query_hash], "input": row.query.to_payload()}
        if row.query_hash in deferred:
            return {"error": {"status_id": "insufficient-credits", "field": None,
                              "detail": "not looked up: the credit budget was used up; run again later"}}
        return {"error": {"status_id": "not-answered", "field": None, "detail": "no answer was received"}}


class GenderLookupOperator(GenderHintsMixin, _XComLookupOperator):
    """Gender of each name in an XCom list (1 credit per distinct query).

    :param country: default ``country`` hint for rows without one (templated).
    :param locale: default ``locale`` hint, e.g. ``de_DE`` (templated).
    :param ip: default ``ip`` hint (templated).

    Example::

        GenderLookupOperator(task_id="genders", queries="{{ ti.xcom_pull('extract') }}",
                             query_field="name", name_kind="full_name", country="US")
    """

    lookup = LookupKind.GENDER
    template_fields: Sequence[str] = (*_XComLookupOperator.template_fields, *GenderHintsMixin.hint_fields)


class CountryOfOriginOperator(_XComLookupOperator):
    """Countries of origin, language of origin and ethnicity of each name (2 credits per distinct query).

    Example::

        CountryOfOriginOperator(task_id="origins", queries=["Giulia", "Sven", "Aiko"])
    """

    lookup = LookupKind.ORIGIN
