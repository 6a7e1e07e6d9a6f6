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
for any reason (credits exhausted, network gone, ``execution_timeout``, SIGTERM), the
answers received are kept for the task instance
(:mod:`~airflow_provider_namelookup.operators.answer_store`), so its retry pays only for
what is missing. Errors no retry can fix (invalid token, a request the service rejects)
fail the task at once, without spending its retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from airflow.sdk import Context

from airflow_provider_namelookup.engine.plan import LookupKind
from airflow_provider_namelookup.engine.run import LookupRun
from airflow_provider_namelookup.lists import as_item_list, list_run
from airflow_provider_namelookup.lists.cache import MemoryAnswers
from airflow_provider_namelookup.lists.sink import ListResults
from airflow_provider_namelookup.operators.answer_store import (
    AnswerStore,
    answer_store_for,
    fate_of_kept_answers,
    tries_left,
)
from airflow_provider_namelookup.operators.base import (
    GenderHintsMixin,
    NameLookupOperatorBase,
    fail_without_retry_on_unfixable_errors,
    is_unfixable,
)
from airflow_provider_namelookup.usage.recorder import records_usage


class _XComLookupOperator(NameLookupOperatorBase):
    """Shared body of :class:`GenderLookupOperator` and :class:`CountryOfOriginOperator`:
    the Airflow end of a list run (:func:`~airflow_provider_namelookup.lists.list_run`).

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
        self._run: LookupRun | None = None
        self._store: AnswerStore | None = None

    @property
    def _answers(self) -> MemoryAnswers:
        assert self._run is not None
        return self._run.cache  # type: ignore[return-value]

    @records_usage
    def execute(self, context: Context) -> list[dict[str, Any]]:
        store = answer_store_for(context, self.log)
        saved = store.load()
        items = as_item_list(self.queries)
        self._store = store
        if saved:
            self.log.info("Reusing %d answers saved by an earlier try of this task (%s)", len(saved), store.where)
        with fail_without_retry_on_unfixable_errors():
            asyncio.run(self._lookup(items, saved, context))
        if saved:
            store.clear()
        assert self._run is not None
        sink = self._run.sink
        assert isinstance(sink, ListResults)
        return sink.results

    async def _lookup(self, items: list[Any], saved: dict[str, dict[str, Any]], context: Context) -> None:
        async with self.async_hook() as hook:
            self._run = run = list_run(self.row_spec(), items, hook, self.log, self.run_options(),
                                       query_field=self.query_field, saved=saved, label=self.task_id)
            self.usage.follow(run.progress)
            assert self._store is not None
            store = self._store
            run.on_failure = lambda err: self._keep_answers(run, store, err, context)  # any error, timeouts too
            await run.run()

    def _keep_answers(self, run: LookupRun, store: AnswerStore, error: BaseException, context: Context) -> None:
        answers = self._answers
        answered = len(answers.answers) - answers.reused
        asked = len(run.to_ask)
        if not answers.answers:
            self.log.error("Stopped before any of %d distinct queries was answered; nothing was paid for.", asked)
        elif not store.save(answers.answers):
            self.log.error("Stopped after %d of %d distinct queries were answered; the answers could not be "
                           "kept (%s), so the next try pays for them again.", answered, asked, store.where)
        else:
            retry_coming = tries_left(context) and not is_unfixable(error)
            self.log.error("Stopped after %d of %d distinct queries were answered (%d answers saved in %s); %s.",
                           answered, asked, len(answers.answers), store.where,
                           fate_of_kept_answers(retry_coming=retry_coming, where=store.where))

    def on_kill(self) -> None:
        """Airflow kills the task (SIGTERM, timeout): save the answers already paid for, and the usage record."""
        if self._run is not None and self._store is not None and self._store.save(self._answers.answers):
            self.log.warning("Killed: %d answers saved in %s for the next try", len(self._answers.answers),
                             self._store.where)
        super().on_kill()


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
