"""
### Scheduled warehouse enrichment

Every day, the rows of a ``customers`` table get a gender and a country of origin.
Runs are incremental: a row already enriched with the same name is skipped, a changed
name is looked up again, and a name answered before (for any row) is reused from the
target table, so each distinct name is paid for once, ever.

1. ``plan_gender`` / ``plan_origin`` count the credits today's run needs, spending nothing.
2. ``wait_for_credits`` holds the run until the account has that many credits left
   (reschedule mode: no worker slot is held while waiting).
3. ``enrich_gender`` and ``enrich_origin`` write ``customers_gender`` and
   ``customers_origin`` (status, error, credits_used, enriched_at per row).

Connections:

* ``namelookup_default``: type ``namelookup``, the API token in *password*.
* ``namelookup_warehouse``: any SQL connection (SQLite in the demo). Set the
  ``NAMELOOKUP_WAREHOUSE_CONN_ID`` environment variable to point the DAG at another
  one, for instance a PostgreSQL connection.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.providers.common.compat.sdk import DAG, Asset

from airflow_provider_namelookup.operators import SqlCountryOfOriginOperator, SqlGenderLookupOperator
from airflow_provider_namelookup.sensors import NameLookupCreditsSensor

WAREHOUSE = os.getenv("NAMELOOKUP_WAREHOUSE_CONN_ID", "namelookup_warehouse")
CUSTOMERS = os.getenv("NAMELOOKUP_CUSTOMERS_TABLE", "customers")

with DAG(
    dag_id="namelookup_warehouse_enrichment",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=10)},
    tags=["namelookup", "example"],
    doc_md=__doc__,
) as dag:
    # The columns of the source table; the country column localises gender lookups.
    source = {"conn_id": WAREHOUSE, "source_table": CUSTOMERS, "key_column": "customer_id",
              "name_column": "first_name"}

    # [START howto_sensor_namelookup_credits_after_plan]
    plan_gender = SqlGenderLookupOperator(task_id="plan_gender", country_column="country", plan_only=True,
                                          **source)
    plan_origin = SqlCountryOfOriginOperator(task_id="plan_origin", plan_only=True, **source)

    wait_for_credits = NameLookupCreditsSensor(
        task_id="wait_for_credits",
        min_credits="{{ ti.xcom_pull(task_ids='plan_gender')['credits_needed']"
                    " + ti.xcom_pull(task_ids='plan_origin')['credits_needed'] }}",
        mode="reschedule",
        poke_interval=15 * 60,
        timeout=12 * 3600,
    )
    # [END howto_sensor_namelookup_credits_after_plan]

    enrich_gender = SqlGenderLookupOperator(
        task_id="enrich_gender",
        country_column="country",
        outlets=[Asset(f"{WAREHOUSE}.{CUSTOMERS}_gender")],
        **source,
    )
    enrich_origin = SqlCountryOfOriginOperator(
        task_id="enrich_origin",
        outlets=[Asset(f"{WAREHOUSE}.{CUSTOMERS}_origin")],
        **source,
    )

    [plan_gender, plan_origin] >> wait_for_credits >> enrich_gender >> enrich_origin
