"""Lookup operators over SQL tables: read a source in pages, enrich, upsert a target table.

Example::

    from airflow_provider_namelookup.operators import SqlGenderLookupOperator

    SqlGenderLookupOperator(
        task_id="enrich_customers",
        sql_conn_id="warehouse",             # any common-sql connection: sqlite, postgres, mysql...
        source_table="customers",
        key_column="customer_id",
        name_column="first_name",
        country_column="country",            # optional per-row hint
        where="signup_date >= '{{ ds }}'",   # optional, templated
        max_credits=500,
    )
    # writes customers_gender(customer_id, gender, probability, ..., status, error,
    # credits_used, query_hash, enriched_at); XCom: the run's summary.

Runs are incremental: a row already enriched with the same normalised query is
skipped, a changed name is looked up again, and an answer already in the warehouse's
shared answers table (``namelookup_answers``: any table, any run, any task instance)
is reused instead of paid for. Any number of task instances may run at once (mapped
``where`` shards, several tables): each distinct query is paid once. See
:mod:`airflow_provider_namelookup.tables.run` for the steps and the failure rules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any, ClassVar

from airflow.sdk import BaseHook, Context

from airflow_provider_namelookup.enrichment.plan import LookupKind
from airflow_provider_namelookup.operators.base import (
    GenderHintsMixin,
    NameLookupOperatorBase,
    fail_without_retry_on_unfixable_errors,
)
from airflow_provider_namelookup.tables.answers import DEFAULT_ANSWERS_TABLE, AnswersTable
from airflow_provider_namelookup.tables.run import TableJob, run_table_job
from airflow_provider_namelookup.tables.session import WarehouseSession
from airflow_provider_namelookup.tables.source import TableSource
from airflow_provider_namelookup.tables.target import TargetTable


def default_answers_table() -> str:
    """``[namelookup] answers_table`` of the Airflow configuration (env
    ``AIRFLOW__NAMELOOKUP__ANSWERS_TABLE``), else ``namelookup_answers``."""
    try:
        from airflow.configuration import conf

        return str(conf.get("namelookup", "answers_table", fallback=DEFAULT_ANSWERS_TABLE))
    except ImportError:  # pragma: no cover - a Task SDK-only worker
        import os

        return os.environ.get("AIRFLOW__NAMELOOKUP__ANSWERS_TABLE", DEFAULT_ANSWERS_TABLE)


class _SqlLookupOperator(NameLookupOperatorBase):
    """Shared body of the table operators.

    :param sql_conn_id: a connection whose hook is a common-sql ``DbApiHook``.
    :param source_table: the table to enrich (``table`` or ``schema.table``), or use ``sql``.
    :param sql: a SELECT to enrich instead of a table (templated); it must return the key,
        name and (optional) country columns.
    :param key_column: unique, non-null key of the source (the target's primary key).
    :param name_column: column holding the name.
    :param country_column: optional column with a per-row country hint (gender lookups).
    :param where: optional SQL filter (templated), e.g. to split a big table across mapped tasks.
    :param target_table: where results go (templated); default ``<source>_gender`` / ``<source>_origin``.
    :param answers_table: the warehouse's shared answers table (cache and work claims of every
        run that uses it); default ``[namelookup] answers_table`` or ``namelookup_answers``.
    :param max_age: answers older than this (a ``timedelta`` or seconds) are looked up again,
        and rows enriched before it are rewritten; default: answers never expire.
    :param lease_seconds: how long a claim on a query holds unrenewed: a task that dies
        blocks the others' work on its queries for at most this long.
    :param page_size: distinct values read from the warehouse at a time.
    :param progress_interval: seconds between progress lines in the log.
    :param plan_only: only count what the run would need (``credits_needed`` in the summary);
        spend, create and write nothing. Handy before a :class:`NameLookupCreditsSensor`.
    :param hook_params: extra keyword arguments for the warehouse hook (e.g. ``{"schema": "dwh"}``).
    """

    target_suffix: ClassVar[str]
    template_fields: Sequence[str] = ("source_table", "sql", "where", "target_table", "answers_table",
                                      "max_credits")
    template_ext: Sequence[str] = (".sql",)
    template_fields_renderers: ClassVar[dict[str, str]] = {"sql": "sql", "where": "sql"}

    def __init__(self, *, sql_conn_id: str, key_column: str, name_column: str, source_table: str | None = None,
                 sql: str | None = None, country_column: str | None = None,
                 where: str | None = None, target_table: str | None = None, answers_table: str | None = None,
                 max_age: timedelta | float | None = None, lease_seconds: float = 60.0,
                 page_size: int = 10_000, progress_interval: float = 15.0, plan_only: bool = False,
                 hook_params: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if (source_table is None) == (sql is None):
            raise ValueError("give exactly one of source_table and sql")
        if sql is not None and target_table is None:
            raise ValueError("target_table is required when the source is a sql query")
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, got {lease_seconds!r}")
        if isinstance(max_age, (int, float)) and not isinstance(max_age, bool):
            max_age = timedelta(seconds=max_age)
        if max_age is not None and (not isinstance(max_age, timedelta) or max_age <= timedelta(0)):
            raise ValueError(f"max_age must be a positive timedelta or number of seconds, got {max_age!r}")
        self.sql_conn_id = sql_conn_id
        self.source_table = source_table
        self.sql = sql
        self.key_column = key_column
        self.name_column = name_column
        self.country_column = country_column
        self.where = where
        self.target_table = target_table
        self.answers_table = answers_table
        self.max_age = max_age
        self.lease_seconds = lease_seconds
        self.hook_params = hook_params or {}
        self.page_size = page_size
        self.progress_interval = progress_interval
        self.plan_only = plan_only

    @property
    def target_name(self) -> str:
        return self.target_table or f"{self.source_table}_{self.target_suffix}"

    @cached_property
    def db_hook(self) -> Any:
        """The warehouse's common-sql ``DbApiHook`` (made once per task instance)."""
        from airflow.providers.common.sql.hooks.sql import DbApiHook

        hook = BaseHook.get_connection(self.sql_conn_id).get_hook(hook_params=self.hook_params)
        if not isinstance(hook, DbApiHook):
            raise ValueError(f"connection {self.sql_conn_id!r} is not a SQL connection "
                             f"(its hook is {type(hook).__name__}, not a common-sql DbApiHook)")
        return hook

    def get_db_hook(self) -> Any:
        return self.db_hook

    def build_job(self, session: WarehouseSession) -> TableJob:
        source = TableSource(session, table=self.source_table, sql=self.sql, key_column=self.key_column,
                             name_column=self.name_column,
                             country_column=self.country_column if self.lookup.takes_hints else None,
                             where=self.where)
        target = TargetTable(session, self.target_name, self.key_column, self.lookup)
        answers = AnswersTable(session, self.answers_table or default_answers_table())
        return TableJob(session, source, target, answers, self.row_spec(), page_size=self.page_size,
                        max_credits=self.credit_limit, on_insufficient_credits=self.on_insufficient_credits,
                        check_remaining_credits=self.check_remaining_credits,
                        progress_interval=self.progress_interval, plan_only=self.plan_only,
                        max_age=self.max_age, lease_seconds=self.lease_seconds)

    def execute(self, context: Context) -> dict[str, Any]:
        session = WarehouseSession(self.db_hook)
        try:
            job = self.build_job(session)

            async def run() -> dict[str, Any]:
                async with self.async_hook() as hook:
                    return await run_table_job(job, hook, self.log)

            with fail_without_retry_on_unfixable_errors():
                summary = asyncio.run(run())
        finally:
            session.shutdown()
        summary.update(source=job.source.label, target=job.target.name, answers_table=job.answers.name,
                       plan_only=self.plan_only)
        return summary

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Source and target tables as OpenLineage datasets (only when openlineage is installed)."""
        try:
            from airflow.providers.common.compat.openlineage.facet import Dataset
            from airflow.providers.openlineage.extractors import OperatorLineage
        except ImportError:
            return None
        hook = self.get_db_hook()
        connection = hook.get_connection(self.sql_conn_id)
        info = hook.get_openlineage_database_info(connection)
        scheme = getattr(info, "scheme", None) or hook.dialect_name
        authority = getattr(info, "authority", None) or connection.host or ""
        namespace = f"{scheme}://{authority}" if authority else f"{scheme}://{connection.schema or 'default'}"
        inputs = [Dataset(namespace=namespace, name=self.source_table)] if self.source_table else []
        return OperatorLineage(inputs=inputs, outputs=[Dataset(namespace=namespace, name=self.target_name)])


class SqlGenderLookupOperator(GenderHintsMixin, _SqlLookupOperator):
    """Enrich a table with the gender of a name column (1 credit per distinct new query).

    :param country: default country hint for rows whose country column is empty.
    :param locale: default locale hint.
    :param ip: default ip hint.
    """

    lookup = LookupKind.GENDER
    target_suffix = "gender"
    template_fields: Sequence[str] = (*_SqlLookupOperator.template_fields, *GenderHintsMixin.hint_fields)


class SqlCountryOfOriginOperator(_SqlLookupOperator):
    """Enrich a table with countries of origin, language and ethnicity (2 credits per distinct new query).

    The full answer (25 countries, the ethnic-group distribution) is kept in ``result_json``.
    """

    lookup = LookupKind.ORIGIN
    target_suffix = "origin"
