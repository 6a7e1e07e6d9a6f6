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
(:mod:`~airflow_provider_namelookup.operators.retry_stash`), so its retry pays only for
what is missing. Errors no retry can fix (invalid token, a request the service rejects)
fail the task at once, without spending its retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from airflow.providers.common.compat.sdk import Context

from airflow_provider_namelookup.engine.plan import LookupKind
from airflow_provider_namelookup.heap import leaves_older_objects_alone
from airflow_provider_namelookup.operators.base import (
    GenderHintsMixin,
    NameLookupOperatorBase,
    fail_without_retry_on_unfixable_errors,
)
from airflow_provider_namelookup.operators.retry_stash import (
    RetryStash,
    fate_of_kept_answers,
    retry_stash_for,
    tries_left,
)
from airflow_provider_namelookup.usage.recorder import records_usage
from airflow_provider_namelookup.xcom import ListRun, as_item_list, list_run


class _XComLookupOperator(NameLookupOperatorBase):
    """Shared body of :class:`GenderLookupOperator` and :class:`CountryOfOriginOperator`:
    the Airflow end of a list run (:func:`~airflow_provider_namelookup.xcom.list_run`).

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
        self._run: ListRun | None = None
        self._stash: RetryStash | None = None

    @leaves_older_objects_alone
    @records_usage
    def execute(self, context: Context) -> list[dict[str, Any]]:
        with fail_without_retry_on_unfixable_errors(self.unfixable_errors):
            stash = self._stash = retry_stash_for(context, self.log, self.client_settings.token)
            saved = stash.load()
            items = as_item_list(self.queries)
            if saved:
                self.log.info("Reusing %d answers saved by an earlier try of this task (%s)", len(saved), stash.where)
            results = asyncio.run(self._lookup(items, saved, stash, context))
        if saved:
            stash.clear()
        return results

    async def _lookup(self, items: list[Any], saved: dict[str, dict[str, Any]], stash: RetryStash,
                      context: Context) -> list[dict[str, Any]]:
        async with self.async_hook() as hook:
            self._run = run = list_run(
                self.query_rules(), items, hook, self.log, self.run_options(), query_field=self.query_field,
                saved=saved, label=self.task_id,
                on_failure=lambda err, failed: self._keep_answers(failed, stash, err, context))  # timeouts too
            self.usage.follow(run.progress)
            await run.run()
            return run.results

    def _keep_answers(self, run: ListRun, stash: RetryStash, error: BaseException, context: Context) -> None:
        if not run.answers:
            lost = run.progress.credits_maybe_charged
            self.log.error("Stopped before any of %d distinct queries was answered; %s.", run.to_ask,
                           f"{lost} credits may have been charged for answers lost on the way" if lost
                           else "nothing was paid for")
        elif not stash.save(run.answers):
            self.log.error("Stopped after %d of %d distinct queries were answered; the answers could not be "
                           "kept (%s), so the next try pays for them again.", run.answered_here, run.to_ask,
                           stash.where)
        else:
            retry_coming = tries_left(context) and not self.is_unfixable(error)
            self.log.error("Stopped after %d of %d distinct queries were answered (%d answers saved in %s); %s.",
                           run.answered_here, run.to_ask, len(run.answers), stash.where,
                           fate_of_kept_answers(retry_coming=retry_coming, where=stash.where))

    def on_kill(self) -> None:
        """Airflow kills the task (SIGTERM, timeout): save the answers already paid for, and the usage record."""
        if self._run is not None and self._stash is not None and self._stash.save(self._run.answers):
            self.log.warning("Killed: %d answers saved in %s for the next try", len(self._run.answers),
                             self._stash.where)
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
