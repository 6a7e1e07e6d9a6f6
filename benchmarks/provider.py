"""The provider's way of enriching a table: ``SqlGenderLookupOperator.execute`` (or
``SqlCountryOfOriginOperator.execute``), as in a DAG.

A :mod:`benchmarks.child` job. The connections come from ``AIRFLOW_CONN_*`` environment
variables set by the parent (the ``namelookup_default`` service connection and the
warehouse), and the operator runs with its defaults (adaptive concurrency up to
``max_concurrency=64``), exactly as a DAG author would write it. The work is one
``execute({})``; it returns the run's summary (the operator's XCom). The warehouse hook is
made before the work (its Airflow provider imported, its connection read), as the
hand-written DAG opens its connection before its own. ``columns`` (the operator's argument) narrows
the target to some answer fields, as the hand-written DAG's (``gender``, ``probability``);
:func:`answer_fields` parses it from a command line.

Example::

    run_in_child("benchmarks.provider:enrich_customers", {"sql_conn_id": "bench_warehouse"},
                 env={**service.connection_env(), **sqlite_connection_env("bench_warehouse", db)},
                 log_path=log)
    enrich_customers({"sql_conn_id": "bench_warehouse", "columns": ["gender", "probability"]})
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.errors import InvalidArgument
from airflow_provider_namelookup.warehouse.schema import chosen_result_columns, result_columns

ANSWER_FIELDS = tuple(c.name for c in result_columns(LookupKind.GENDER))
"""Every answer field of the gender lookup, in the target's order: what the operator writes by default."""


def answer_fields(text: str) -> tuple[str, ...]:
    """An ``argparse`` type: comma-separated answer fields of the gender lookup (the operator's
    ``columns``), in the target's order; a name that is none is refused with the valid ones.

    >>> answer_fields("probability, gender")
    ('gender', 'probability')
    """
    try:
        return tuple(c.name for c in chosen_result_columns(
            LookupKind.GENDER, [n.strip() for n in text.split(",") if n.strip()]))
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def written_fields(columns: tuple[str, ...] | None) -> str:
    """What a provider's target holds besides its key and its own columns, for a report.

    >>> written_fields(("gender", "probability"))
    'gender, probability (columns=)'
    """
    if columns is None:
        return f"every answer field ({', '.join(ANSWER_FIELDS)})"
    return f"{', '.join(columns)} (columns=)"


def enrich_customers(params: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """Set up the operator over ``customers``; return its ``execute`` as the work.

    :param params: ``sql_conn_id`` (the warehouse connection); optional ``source_table``
        (default ``customers``), ``answers_table`` and ``columns`` (the answer fields the target
        holds, default every one).
    """
    from airflow_provider_namelookup.operators import SqlGenderLookupOperator

    operator = SqlGenderLookupOperator(task_id="enrich_customers", conn_id=params["sql_conn_id"],
                                       source_table=params.get("source_table", "customers"),
                                       answers_table=params.get("answers_table"), key_column="customer_id",
                                       name_column="first_name", country_column="country",
                                       columns=params.get("columns"))
    operator.get_db_hook()  # as the hand-written DAG opens its connection before its work: the hook made (cached)

    def work() -> dict[str, Any]:
        return dict(operator.execute({}))

    return work


def enrich_origins(params: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """Set up ``SqlCountryOfOriginOperator`` over ``customers``; return its ``execute`` as the work.

    :param params: ``sql_conn_id`` (the warehouse connection).
    """
    from airflow_provider_namelookup.operators import SqlCountryOfOriginOperator

    operator = SqlCountryOfOriginOperator(task_id="enrich_origins", conn_id=params["sql_conn_id"],
                                          source_table="customers", key_column="customer_id",
                                          name_column="first_name")
    operator.get_db_hook()  # the hook made before the work (see enrich_customers)

    def work() -> dict[str, Any]:
        return dict(operator.execute({}))

    return work
