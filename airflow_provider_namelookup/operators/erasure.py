"""Erase people from what the table operators wrote, and apply retention to the answers table.

Example (a right-to-erasure request: two customers by key, one person by e-mail address)::

    from airflow_provider_namelookup.operators import SqlNameLookupErasureOperator

    SqlNameLookupErasureOperator(
        task_id="erase",
        conn_id="warehouse",
        answers_table="namelookup_answers",
        target_tables=["customers_gender"],
        key_column="customer_id",
        keys=[17, 42],                       # or a callable of the context returning them
        values=["anna.miller@example.com"],
        name_kind="email",
        older_than="P400D",                  # also: answers stored longer ago are deleted
    )
    # XCom: {'target_rows': {'customers_gender': 3}, 'target_rows_erased': 3, 'answers_erased': 3, ...}

See :mod:`airflow_provider_namelookup.warehouse.erasure` for what is found and how, and the
documentation's "Personal data" page.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from airflow.providers.common.compat.sdk import Context
from airflow.providers.common.sql.operators.sql import BaseSQLOperator

from airflow_provider_namelookup.operators.base import UNFIXABLE_BY_RETRY, fail_without_retry_on_unfixable_errors
from airflow_provider_namelookup.operators.sql_hook import sql_hook, warehouse_hook
from airflow_provider_namelookup.personal.pseudonym import DEFAULT_PSEUDONYMISATION_CONN_ID, pseudonymisation_key
from airflow_provider_namelookup.warehouse.diagnosis import WarehouseInputError
from airflow_provider_namelookup.warehouse.dialects import UnsupportedWarehouse
from airflow_provider_namelookup.warehouse.erasure import Erasure, erase, period
from airflow_provider_namelookup.warehouse.session import WarehouseSession

People = Sequence[Any] | Callable[[Context], Sequence[Any]]


class SqlNameLookupErasureOperator(BaseSQLOperator):
    """Remove people from the target tables and their answers from the answers table.

    The people are named by the source key of their rows (``keys``) and/or by a value they were
    looked up by (``values``, of ``name_kind``: by value, whatever hints their queries carried).
    Their rows are deleted from each of ``target_tables``, and the answers of their questions are
    erased from ``answers_table`` so that no run, not even one in flight, brings them back; a run
    that starts later looks them up again if they are still in the source. Idempotent: erasing the
    same people again removes nothing. It logs and returns counts, never a key or a value.

    :param conn_id: the warehouse's connection (templated).
    :param answers_table: the answers table the targets were enriched through.
    :param target_tables: the target tables holding the people's rows.
    :param keys: source keys of the people's rows, or a callable of the task's context returning them
        (not templated: rendered fields are kept in Airflow's database, in clear).
    :param values: values the people were looked up by (first names, full names or e-mail addresses,
        as ``name_kind`` says), or a callable returning them.
    :param name_kind: what ``values`` are: ``first_name`` (default), ``full_name`` or ``email``.
    :param key_column: the targets' key column (the source's key); required with ``keys`` or ``values``.
    :param older_than: also delete every answer stored longer ago than this (a ``timedelta``, seconds or
        an ISO-8601 duration such as ``"P30D"``): retention, on its own or with an erasure.
    :param pseudonymised: the tables hold pseudonyms of values (``pseudonymise=True`` runs): values are
        matched by their pseudonym, made with the key of ``pseudonymisation_conn_id``. Default (None): as
        the lookup operators' ``pseudonymise`` default, on for ``email`` and ``full_name``.
    :param pseudonymisation_conn_id: the Airflow connection whose password is the pseudonymisation key.
    :param database: the database (schema) to use instead of the connection's (templated).
    :param hook_params: extra keyword arguments for the warehouse hook (templated).
    """

    template_fields: Sequence[str] = (*BaseSQLOperator.template_fields, "answers_table", "target_tables")
    unfixable_errors: tuple[type[Exception], ...] = (*UNFIXABLE_BY_RETRY, WarehouseInputError, UnsupportedWarehouse,
                                                     ValueError)

    def __init__(self, *, conn_id: str, answers_table: str, target_tables: Sequence[str] = (),
                 keys: People = (), values: People = (), name_kind: str = "first_name",
                 key_column: str | None = None, older_than: timedelta | float | str | None = None,
                 pseudonymised: bool | None = None,
                 pseudonymisation_conn_id: str = DEFAULT_PSEUDONYMISATION_CONN_ID, **kwargs: Any) -> None:
        super().__init__(conn_id=conn_id, **kwargs)
        if isinstance(target_tables, str):
            target_tables = [target_tables]
        self.answers_table = answers_table
        self.target_tables = list(target_tables)
        self.keys = keys
        self.values = values
        self.name_kind = name_kind
        self.key_column = key_column
        self.older_than = period(older_than, "older_than")
        self.pseudonymised = name_kind in ("email", "full_name") if pseudonymised is None else pseudonymised
        self.pseudonymisation_conn_id = pseudonymisation_conn_id
        for argument, given in (("keys", keys), ("values", values)):
            if isinstance(given, str | bytes) or not (callable(given) or isinstance(given, Sequence)):
                raise ValueError(f"{argument} must be a list, or a callable of the context returning one; "
                                 f"got {type(given).__name__}")
        if not callable(keys) and not callable(values):  # a mistake fails when the DAG is parsed
            self.request(list(keys), list(values), rendered=False)

    def request(self, keys: Sequence[Any], values: Sequence[Any], key: bytes | None = None, *,
                rendered: bool = True) -> Erasure:
        """The erasure this task carries out (checked: errors name the argument and the rule, never a
        value); before rendering, a templated table name is checked once it is rendered."""
        def table(name: str) -> str:
            return name if rendered or "{{" not in name else "rendered_later"

        return Erasure(answers_table=table(self.answers_table),
                       target_tables=tuple(table(t) for t in self.target_tables), keys=tuple(keys),
                       values=tuple(values), name_kind=self.name_kind, key_column=self.key_column,
                       older_than=self.older_than, pseudonym_key=key)

    def get_db_hook(self) -> Any:
        if "_sql_hook" not in self.__dict__:
            self.__dict__["_sql_hook"] = sql_hook(str(self.conn_id), self.hook_params)
        return self.__dict__["_sql_hook"] or super().get_db_hook()

    def _people(self, given: People, argument: str, context: Context) -> list[Any]:
        people = given(context) if callable(given) else given
        if isinstance(people, str | bytes) or not isinstance(people, Sequence):
            raise ValueError(f"{argument}: the callable must return a list, got {type(people).__name__}")
        return list(people)

    def execute(self, context: Context) -> dict[str, Any]:
        with fail_without_retry_on_unfixable_errors(self.unfixable_errors):
            key = pseudonymisation_key(self.pseudonymisation_conn_id) if self.pseudonymised else None
            request = self.request(self._people(self.keys, "keys", context),
                                   self._people(self.values, "values", context), key)
            session = WarehouseSession(warehouse_hook(self.get_db_hook, str(self.conn_id)))
            try:
                counts = asyncio.run(session.run_retrying(erase, session, request))
            finally:
                session.shutdown()
        result = counts.as_dict()
        self.log.info("Erased %d target rows (%s) and %d answers from %s for %d keys and %d values; %d answers "
                      "older than the retention period and %d expired tombstones deleted",
                      result["target_rows_erased"], ", ".join(f"{t}: {n}" for t, n in counts.target_rows.items()),
                      counts.answers_erased, self.answers_table, counts.keys_asked, counts.values_asked,
                      counts.answers_expired, counts.tombstones_removed)
        return result
