"""Lookup operators over SQL tables: read a source in pages, enrich, upsert a target table.

Example::

    from airflow_provider_namelookup.operators import SqlGenderLookupOperator

    SqlGenderLookupOperator(
        task_id="enrich_customers",
        conn_id="warehouse",                 # a common-sql connection of a supported warehouse
        source_table="customers",
        key_column="customer_id",
        name_column="first_name",
        last_name_column="last_name",        # optional: looked up with the first name as one full name
        country_column="country",            # optional per-row hint
        where="signup_date >= '{{ ds }}'",   # optional, templated
        max_credits=500,
        columns=["gender", "probability"],   # optional: the answer fields to keep (default: all)
    )
    # writes customers_gender(customer_id, gender, probability, status, error, credits_used,
    # query_hash, enriched_at, query_spec, source_name, ...); XCom: the run's summary.

Runs are incremental: a row already enriched with the same normalised query is
skipped, a changed name is looked up again, and an answer already in the warehouse's
answers table (by default the DAG's own, ``namelookup_answers_<dag_id>``: any table, any
run, any task instance of the DAG; :func:`default_answers_table`) is reused instead of paid
for. Any number of task instances may run at once (mapped ``where`` shards, several tables):
each distinct query is paid once. See
:mod:`airflow_provider_namelookup.engine.run` for the steps and the failure rules, and
:mod:`airflow_provider_namelookup.warehouse` for how a table is read and written.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, ClassVar

from airflow.providers.common.compat.sdk import Context
from airflow.providers.common.sql.operators.sql import BaseSQLOperator

from airflow_provider_namelookup.engine.plan import LookupKind, QueryRules
from airflow_provider_namelookup.heap import leaves_older_objects_alone
from airflow_provider_namelookup.operators.base import (
    UNFIXABLE_BY_RETRY,
    GenderHintsMixin,
    NameLookupOperatorBase,
    fail_without_retry_on_unfixable_errors,
)
from airflow_provider_namelookup.operators.sql_hook import sql_hook, warehouse_hook
from airflow_provider_namelookup.usage.recorder import records_usage
from airflow_provider_namelookup.warehouse import DEFAULT_ANSWERS_TABLE, TableRunSpec, spender_of, table_run
from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError
from airflow_provider_namelookup.warehouse.dialects import UnsupportedWarehouse
from airflow_provider_namelookup.warehouse.erasure import period
from airflow_provider_namelookup.warehouse.identifiers import check_identifier
from airflow_provider_namelookup.warehouse.schema import chosen_result_columns
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.source import TableSource

MAX_CREDITS_SCOPES = ("try", "dag_run")


def default_answers_table(dag_id: str | None = None) -> str:
    """``[namelookup] answers_table`` of the Airflow configuration (env
    ``AIRFLOW__NAMELOOKUP__ANSWERS_TABLE``) where it is set, else the DAG's own
    (:func:`answers_table_of_dag`); ``namelookup_answers`` outside a DAG.

    An answers table holds people's names (or their pseudonyms) and answers: sharing one across DAGs,
    and so across the teams that own them, is a choice made by naming it (``answers_table=`` or the
    configuration), not a default."""
    from airflow.providers.common.compat.sdk import conf

    configured = conf.get("namelookup", "answers_table", fallback=None)
    if configured:
        return str(configured)
    return answers_table_of_dag(dag_id) if dag_id else DEFAULT_ANSWERS_TABLE


def answers_table_of_dag(dag_id: str) -> str:
    """The default answers table of DAG ``dag_id``: ``namelookup_answers_`` and the DAG id in lower case,
    each character that is no letter, digit or ``_`` as ``_``; a name over 63 characters (PostgreSQL's
    most) is cut and ends in a hash of the whole id, so that two long ids do not meet.

    >>> answers_table_of_dag("Customers.Daily-Enrichment")
    'namelookup_answers_customers_daily_enrichment'
    >>> len(answers_table_of_dag("x" * 200)), answers_table_of_dag("x" * 200) == answers_table_of_dag("x" * 199)
    (63, False)
    """
    name = f"{DEFAULT_ANSWERS_TABLE}_{re.sub(r'[^a-z0-9_]', '_', dag_id.lower())}"
    if len(name) > _LONGEST_NAME:
        name = f"{name[:_LONGEST_NAME - 9]}_{hashlib.sha256(dag_id.encode()).hexdigest()[:8]}"
    return name


_LONGEST_NAME = 63


def _templated(value: Any) -> bool:
    """A value (or a list's item) holding Jinja, checked once rendered."""
    items = [value] if isinstance(value, str) or not isinstance(value, Sequence) else value
    return any(isinstance(item, str) and "{{" in item for item in items)


class _SqlLookupOperator(NameLookupOperatorBase, BaseSQLOperator):
    """Shared body of the table operators, a common-sql ``BaseSQLOperator``.

    :param conn_id: a connection whose hook is a common-sql ``DbApiHook`` (templated);
        ``sql_conn_id`` is the same, the name of earlier releases.
    :param sql_conn_id: ``conn_id`` by its name in earlier releases (give one of the two).
    :param database: the database (schema) to use instead of the connection's (templated).
    :param hook_params: extra keyword arguments for the warehouse hook (templated).
    :param source_table: the table to enrich (``table`` or ``schema.table``), or use ``sql``.
    :param sql: a SELECT to enrich instead of a table (templated); it must return the key,
        name and (optional) country columns.
    :param key_column: unique, non-null key of the source (the target's primary key).
    :param name_column: column holding the name.
    :param last_name_column: optional column holding each row's last name, beside the first name in
        ``name_column`` (``name_kind`` stays ``first_name``): a row with both is looked up as one full
        name, ``"<first> <last>"`` (each distinct full name paid once); a NULL or blank last name
        leaves the first name alone, looked up as a first name; a row without a first name is
        invalid whatever its last name. A changed last name is looked up again on the next run.
    :param country_column: optional column with a per-row country hint (gender lookups).
    :param where: optional SQL filter (templated), e.g. to split a big table across mapped tasks.
    :param target_table: where results go (templated); default ``<source>_gender`` / ``<source>_origin``.
    :param answers_table: the warehouse's shared answers table (cache and work claims of every
        run that uses it); default ``[namelookup] answers_table`` where it is set, else the DAG's own,
        ``namelookup_answers_<dag_id>`` (:func:`default_answers_table`).
    :param max_age: answers older than this (a ``timedelta`` or seconds) are looked up again,
        and rows enriched before it are rewritten; default: answers never expire.
    :param retention: answers stored in ``answers_table`` longer ago than this (a ``timedelta``, seconds or
        an ISO-8601 duration such as ``"P90D"``) are deleted when the run starts, whichever run stored
        them; default: kept until erased (:class:`SqlNameLookupErasureOperator`).
    :param lease_seconds: how long a claim on a query holds unrenewed: a task that dies
        blocks the others' work on its queries for at most this long.
    :param page_size: distinct values read from the warehouse at a time.
    :param progress_interval: seconds between progress lines in the log.
    :param plan_only: only count what the run would need (``credits_needed`` in the summary);
        spend, create and write nothing. Handy before a :class:`NameLookupCreditsSensor`.
    :param columns: the answer fields the target holds (templated), a list or comma-separated text
        such as ``["gender", "probability"]``; default: every one of the lookup's
        (:func:`~airflow_provider_namelookup.warehouse.schema.result_columns`). The key and the
        provider's own columns (``status``, ``error``, ``credits_used``, ``query_hash``,
        ``enriched_at``, ``query_spec``, ``source_name`` and the other raw values) are always there:
        reruns compare and price by them. A name that is no answer field fails when the DAG is
        parsed (once rendered, when templated); an existing target with other answer columns fails
        before anything is spent.
    :param max_credits_scope: what ``max_credits`` bounds: ``try`` (default), each execution on its
        own; ``dag_run``, every try and every clear of this task instance in its DAG run together
        (what they spent is read from the answers they stored), so that an approved amount is
        spent once however often the task runs (see the approval example DAG).
    """

    target_suffix: ClassVar[str]
    unfixable_errors: ClassVar[tuple[type[Exception], ...]] = (
        *UNFIXABLE_BY_RETRY, WarehouseInputError, UnsupportedWarehouse)
    template_fields: Sequence[str] = (*BaseSQLOperator.template_fields, "source_table", "sql", "where",
                                      "target_table", "answers_table", "max_credits", "columns")
    template_ext: Sequence[str] = (".sql",)
    template_fields_renderers: ClassVar[dict[str, str]] = {"sql": "sql", "where": "sql"}

    def __init__(self, *, key_column: str, name_column: str, conn_id: str | None = None,
                 sql_conn_id: str | None = None, source_table: str | None = None, sql: str | None = None,
                 country_column: str | None = None, last_name_column: str | None = None,
                 where: str | None = None, target_table: str | None = None,
                 answers_table: str | None = None, max_age: timedelta | float | None = None,
                 retention: timedelta | float | str | None = None,
                 lease_seconds: float = 60.0, page_size: int = 10_000, progress_interval: float = 15.0,
                 plan_only: bool = False, max_credits_scope: str = "try",
                 columns: Sequence[str] | str | None = None, **kwargs: Any) -> None:
        if conn_id and sql_conn_id and conn_id != sql_conn_id:
            raise ValueError("give conn_id or sql_conn_id (its earlier name), not both")
        if not (conn_id or sql_conn_id):
            raise ValueError("conn_id is required: the connection of the warehouse holding the table")
        super().__init__(conn_id=conn_id or sql_conn_id, **kwargs)
        if (source_table is None) == (sql is None):
            raise ValueError("give exactly one of source_table and sql")
        if sql is not None and target_table is None:
            raise ValueError("target_table is required when the source is a sql query")
        if max_credits_scope not in MAX_CREDITS_SCOPES:
            raise ValueError(f"max_credits_scope must be one of {', '.join(MAX_CREDITS_SCOPES)}, "
                             f"got {max_credits_scope!r}")
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, got {lease_seconds!r}")
        if isinstance(max_age, (int, float)) and not isinstance(max_age, bool):
            max_age = timedelta(seconds=max_age)
        if max_age is not None and (not isinstance(max_age, timedelta) or max_age <= timedelta(0)):
            raise ValueError(f"max_age must be a positive timedelta or number of seconds, got {max_age!r}")
        for argument, column in (("key_column", key_column), ("name_column", name_column),
                                 ("country_column", country_column), ("last_name_column", last_name_column)):
            if column is not None:
                check_identifier(column, argument)  # not templated: a bad name fails when the DAG is parsed
        if last_name_column is not None:
            QueryRules(self.lookup, self.name_kind, last_names=True)  # a name_kind it cannot go with fails now
        self.source_table = source_table
        self.sql = sql
        self.key_column = key_column
        self.name_column = name_column
        self.country_column = country_column
        self.last_name_column = last_name_column
        self.where = where
        self.target_table = target_table
        self.answers_table = answers_table
        self.max_age = max_age
        self.retention = period(retention, "retention")
        self.lease_seconds = lease_seconds
        self.page_size = page_size
        self.progress_interval = progress_interval
        self.plan_only = plan_only
        self.max_credits_scope = max_credits_scope
        self.columns = columns
        if not _templated(columns):
            self.chosen_columns  # noqa: B018 - a column that is no answer field fails when the DAG is parsed

    @property
    def sql_conn_id(self) -> str | None:
        """The warehouse connection (``conn_id``), by its name in earlier releases."""
        return self.conn_id

    def get_db_hook(self) -> Any:
        """The warehouse's common-sql hook (``DatabricksSqlHook`` on a ``databricks`` connection, whose
        own hook is the REST API's)."""
        if "_sql_hook" not in self.__dict__:
            self.__dict__["_sql_hook"] = sql_hook(str(self.conn_id), self.hook_params)
        return self.__dict__["_sql_hook"] or super().get_db_hook()

    def warehouse_hook(self) -> Any:
        """The warehouse's common-sql hook; a connection that can never give one (its provider not
        installed, or no warehouse's) fails with what to change (no retry changes it)."""
        return warehouse_hook(self.get_db_hook, str(self.conn_id))

    @property
    def identifies_people(self) -> bool:
        """An e-mail or a full name, or a first name read with its last name (a full name)."""
        return super().identifies_people or self.last_name_column is not None

    def query_rules(self) -> QueryRules:
        rules = super().query_rules()
        return replace(rules, last_names=True) if self.last_name_column else rules

    @property
    def chosen_columns(self) -> tuple[str, ...] | None:
        """``columns`` (as rendered) checked, in the target's order; None: every answer field."""
        if self.columns is None:
            return None
        given = self.columns.split(",") if isinstance(self.columns, str) else self.columns
        names = [n.strip() if isinstance(n, str) else n for n in given]
        return tuple(c.name for c in chosen_result_columns(self.lookup, [n for n in names if n != ""]))

    @property
    def target_name(self) -> str:
        return self.target_table or f"{self.source_table}_{self.target_suffix}"

    def table_run_spec(self, session: WarehouseSession, context: Context | None = None) -> TableRunSpec:
        source = TableSource(session.dialect, table=self.source_table, sql=self.sql, key_column=self.key_column,
                             name_column=self.name_column,
                             country_column=self.country_column if self.lookup.takes_hints else None,
                             where=self.where, secrets=self.forbidden_values,
                             last_name_column=self.last_name_column)
        ti = (context or {}).get("ti")
        spender = spender_of(ti.dag_id, ti.run_id, ti.task_id, ti.map_index if ti.map_index is not None else -1) \
            if ti is not None and getattr(ti, "run_id", None) else ""
        if self.max_credits_scope == "dag_run" and not spender:
            raise ValueError("max_credits_scope='dag_run' needs a task instance (a DAG run) to count earlier tries of")
        return TableRunSpec(source=source, target=self.target_name,
                            answers=self.answers_table or default_answers_table(self._dag_id(context)),
                            rules=self.query_rules(),
                            page_size=self.page_size, max_age=self.max_age, lease_seconds=self.lease_seconds,
                            spender=spender, max_credits_covers_earlier_tries=self.max_credits_scope == "dag_run",
                            retention=self.retention, columns=self.chosen_columns)

    def _dag_id(self, context: Context | None) -> str | None:
        """The DAG this task runs in (its default answers table's)."""
        ti = (context or {}).get("ti")
        return getattr(ti, "dag_id", None) or (self.dag_id if self.has_dag() else None)

    @leaves_older_objects_alone
    @records_usage
    def execute(self, context: Context) -> dict[str, Any]:
        with fail_without_retry_on_unfixable_errors(self.unfixable_errors):
            session = WarehouseSession(self.warehouse_hook())
            try:
                job = self.table_run_spec(session, context)
                summary = asyncio.run(self._run(session, job))
            finally:
                session.shutdown()
        summary.update(source=job.source.label, target=job.target, answers_table=job.answers,
                       plan_only=self.plan_only)
        return summary

    async def _run(self, session: WarehouseSession, job: TableRunSpec) -> dict[str, Any]:
        async with self.async_hook() as hook:
            run = table_run(session, job, hook, self.log, self.run_options(
                plan_only=self.plan_only, progress_interval=self.progress_interval))
            self.usage.follow(run.state.progress)
            await run.run()
            return run.state.progress.summary()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Source and target tables as OpenLineage datasets (only when openlineage is installed)."""
        try:
            from airflow.providers.common.compat.openlineage.facet import Dataset
            from airflow.providers.openlineage.extractors import OperatorLineage
        except ImportError:
            return None
        hook = self.get_db_hook()
        connection = hook.get_connection(self.conn_id)
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
