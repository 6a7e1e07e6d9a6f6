"""
### Ask before a large spend

The enrichment of a ``customers`` table, gated by a person when it would cost much:

1. ``plan`` counts what the run would spend (``plan_only``: no credit, nothing written).
2. ``review`` reads the account's remaining credits (one free statistic call) and a
   sample of the rows; a plan under ``auto_approve_below`` credits (a DAG param, 500 by
   default; a plan of 0 always) goes straight to ``auto_approved``, a larger one to ``approve``.
   Whoever triggers a run may lower ``auto_approve_below`` in its conf (ask about smaller
   spends too), never raise it above ``AUTO_APPROVE_CEILING`` (env
   ``NAMELOOKUP_AUTO_APPROVE_CEILING``, 500 by default): the param's ``maximum`` refuses such a
   run, and ``review`` holds to the ceiling whatever it is handed.
3. ``approve`` is Airflow's human-in-the-loop ``ApprovalOperator`` (Airflow 3.1+): the
   Required Actions page shows the cost, the credits left and the sample. *Approve*
   starts the paying run; *Reject* skips it, and nothing is spent.
4. ``enrich`` spends at most what was planned (``max_credits``): rows added since the plan
   wait for the next run instead of raising the bill behind the approver's back. The amount
   binds the DAG run, not one try (``max_credits_scope="dag_run"``): a retry, or a clear and a
   new run of ``enrich``, spends only what earlier tries left of it.

Connections: ``namelookup_default`` (type ``namelookup``, the API token in *password*) and
the warehouse ``namelookup_warehouse`` (``NAMELOOKUP_WAREHOUSE_CONN_ID`` to use another;
``NAMELOOKUP_CUSTOMERS_TABLE`` names the table, ``customers`` by default).
"""

from __future__ import annotations

import os
from contextlib import closing
from datetime import timedelta
from typing import Any

import pendulum
from airflow import __version__ as airflow_version
from airflow.providers.common.compat.sdk import (
    DAG,
    AirflowFailException,
    AirflowOptionalProviderFeatureException,
    BaseHook,
    Param,
    task,
)

from airflow_provider_namelookup.hooks.namelookup import NameLookupHook
from airflow_provider_namelookup.operators import SqlGenderLookupOperator
from airflow_provider_namelookup.warehouse.identifiers import check_identifier

try:
    from airflow.providers.standard.operators.hitl import ApprovalOperator
except (ImportError, AirflowOptionalProviderFeatureException) as missing:  # the latter: Airflow < 3.1
    # The DAG still parses (and runs whatever needs no approval); asking a person fails, and nothing is spent.
    ApprovalOperator = None  # type: ignore[misc, assignment]
    NO_APPROVAL = (
        "namelookup_approved_enrichment needs Airflow's human-in-the-loop ApprovalOperator "
        "(apache-airflow-providers-standard with operators.hitl, on Airflow 3.1 or later) to ask before a large "
        f"spend, which cannot be imported here (Airflow {airflow_version}): {missing}. Upgrade "
        "apache-airflow-providers-standard (and Airflow to 3.1+), or use the namelookup_warehouse_enrichment "
        "example, which waits for credits without asking anyone."
    )

WAREHOUSE = os.getenv("NAMELOOKUP_WAREHOUSE_CONN_ID", "namelookup_warehouse")
CUSTOMERS = os.getenv("NAMELOOKUP_CUSTOMERS_TABLE", "customers")
SAMPLE_ROWS = 10
AUTO_APPROVE_CEILING = int(os.getenv("NAMELOOKUP_AUTO_APPROVE_CEILING", "500"))

with DAG(
    dag_id="namelookup_approved_enrichment",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    params={"auto_approve_below": Param(AUTO_APPROVE_CEILING, type="integer", minimum=0,
                                        maximum=AUTO_APPROVE_CEILING,
                                        description="Plans under this many credits run without asking "
                                                    f"(at most {AUTO_APPROVE_CEILING}).")},
    tags=["namelookup", "example"],
    doc_md=__doc__,
) as dag:
    source = {"conn_id": WAREHOUSE, "source_table": CUSTOMERS, "key_column": "customer_id",
              "name_column": "first_name", "country_column": "country"}

    plan = SqlGenderLookupOperator(task_id="plan", plan_only=True, **source)

    @task.branch(task_id="review")
    def review(plan: dict[str, Any], params: dict[str, Any], ti: Any = None) -> str:
        """Put the cost, the credits left and a sample of rows before the approver; pick the branch."""
        cost = int(plan["credits_needed"])
        remaining = int(NameLookupHook().get_statistic()["remaining_credits"])
        warehouse = BaseHook.get_connection(WAREHOUSE).get_hook()
        table = check_identifier(CUSTOMERS, "NAMELOOKUP_CUSTOMERS_TABLE", qualified=True)
        with closing(warehouse.get_conn()) as conn, closing(conn.cursor()) as cursor:
            cursor.execute(f"SELECT customer_id, first_name, country FROM {table} ORDER BY customer_id")
            sample = cursor.fetchmany(SAMPLE_ROWS)
        lines = [f"**{cost} credits** to enrich `{table}`: {plan['distinct_queries']} distinct new queries "
                 f"over {plan['rows_read']} rows read ({plan['cache_hits']} already answered, free).",
                 "",
                 f"The account has **{remaining} credits** left; {remaining - cost} after this run.",
                 "", f"First rows of `{table}`:", "", "| customer_id | first_name | country |", "|---|---|---|",
                 *(f"| {key} | {name} | {country or ''} |" for key, name, country in sample)]
        ti.xcom_push(key="body", value="\n".join(lines))
        ti.xcom_push(key="cost", value=cost)
        limit = min(int(params["auto_approve_below"]), AUTO_APPROVE_CEILING)
        return "auto_approved" if cost == 0 or cost < limit else "approve"

    approve: Any
    if ApprovalOperator is not None:
        approve = ApprovalOperator(
            task_id="approve",
            subject="Spend {{ ti.xcom_pull(task_ids='review', key='cost') }} Name Lookup credits on "
                    f"{CUSTOMERS}?",
            body="{{ ti.xcom_pull(task_ids='review', key='body') }}",
            response_timeout=timedelta(days=2),  # unanswered: the run fails, nothing is spent
        )
    else:
        @task(task_id="approve")
        def cannot_ask() -> None:
            raise AirflowFailException(NO_APPROVAL)

        approve = cannot_ask()

    @task(task_id="auto_approved")
    def go_without_asking() -> None:
        """Under the limit: nobody is asked."""

    auto_approved = go_without_asking()

    enrich = SqlGenderLookupOperator(
        task_id="enrich",
        max_credits="{{ ti.xcom_pull(task_ids='plan')['credits_needed'] }}",
        max_credits_scope="dag_run",
        on_insufficient_credits="partial",
        trigger_rule="none_failed_min_one_success",
        **source,
    )

    review(plan.output) >> [approve, auto_approved]
    [approve, auto_approved] >> enrich
