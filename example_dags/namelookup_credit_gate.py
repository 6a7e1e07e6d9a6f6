"""
### Credit-gated workflow

Downstream work only starts when the account has enough credits left. The gate
checks for a while, then soft-fails (the task is *skipped*, not failed): the paid
work is skipped with it, and a cheap branch reports the shortfall instead. The next
scheduled run tries again.

Set the threshold per run with the ``min_credits`` param.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_namelookup.operators import GenderLookupOperator
from airflow_provider_namelookup.sensors import NameLookupCreditsSensor

with DAG(
    dag_id="namelookup_credit_gate",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={"min_credits": 50},
    tags=["namelookup", "example"],
    doc_md=__doc__,
) as dag:
    gate = NameLookupCreditsSensor(
        task_id="enough_credits",
        min_credits="{{ params.min_credits }}",
        deferrable=True,          # wait on the triggerer, not in a worker slot
        poke_interval=60,
        timeout=10 * 60,
        soft_fail=True,           # not enough credits: skip the paid branch, do not fail the run
    )

    lookup = GenderLookupOperator(
        task_id="lookup_names",
        queries=["Giulia", "Lars", "Aiko", "Mateo", "Zainab"],
        max_credits="{{ params.min_credits }}",
    )

    @task(trigger_rule="all_skipped")
    def report_shortfall(**context: Any) -> str:
        message = f"Fewer than {context['params']['min_credits']} credits left: lookups postponed"
        print(message)
        return message

    gate >> lookup
    gate >> report_shortfall()
