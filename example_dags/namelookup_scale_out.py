"""
### Scaling out: one big table, mapped shards, a pool

Enriches a large ``customers`` table with the gender of each first name through
**mapped task instances**, one per key range of the table. Airflow's executor spreads
them over its workers (Celery, Kubernetes, ...); the shards share the target table and
each distinct name is paid for once however many of them run at the same moment.

1. ``key_ranges`` splits the table's keys into ``shards`` ranges of equal width.
2. ``enrich_gender`` runs once per range (``.expand(where=...)``) in the ``namelookup``
   pool: the pool's slots cap how many shards call the service at once, whatever the
   number of workers (requests in flight ≤ slots × ``max_concurrency``).
3. ``report`` adds up the shards' summaries.

Params (``airflow dags trigger namelookup_scale_out --conf '{"table": "leads", "shards": 16}'``):

* ``table``: the source table (``customer_id`` key, ``first_name``, ``country``).
* ``shards``: how many mapped task instances to run.

Connections: ``namelookup_default`` (the API token) and ``namelookup_warehouse``
(any SQL connection; ``NAMELOOKUP_WAREHOUSE_CONN_ID`` names another one). Create the
pool first: ``airflow pools set namelookup 4 "Name Lookup API calls"``
(``NAMELOOKUP_POOL`` names another one).
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, BaseHook, Param, task

from airflow_provider_namelookup.operators import SqlGenderLookupOperator

WAREHOUSE = os.getenv("NAMELOOKUP_WAREHOUSE_CONN_ID", "namelookup_warehouse")
POOL = os.getenv("NAMELOOKUP_POOL", "namelookup")
TABLE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$"

with DAG(
    dag_id="namelookup_scale_out",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    params={
        "table": Param("customers", type="string", pattern=TABLE_NAME, description="the source table"),
        "shards": Param(8, type="integer", minimum=1, maximum=1024, description="mapped task instances"),
    },
    # A shard whose worker is lost is retried (after [core] default_task_retry_delay) on another one.
    default_args={"retries": 3},
    tags=["namelookup", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def key_ranges(**context: Any) -> list[str]:
        """``where`` filters splitting the table's keys into ``shards`` ranges of equal width."""
        table, shards = context["params"]["table"], int(context["params"]["shards"])
        hook = BaseHook.get_connection(WAREHOUSE).get_hook()
        low, high = hook.get_first(f"SELECT MIN(customer_id), MAX(customer_id) FROM {table}")
        if low is None:
            return []
        width = -(-(high - low + 1) // shards)  # ceiling: the last range ends at the highest key
        return [f"customer_id >= {start} AND customer_id < {start + width}"
                for start in range(low, high + 1, width)]

    enrich_gender = SqlGenderLookupOperator.partial(
        task_id="enrich_gender",
        conn_id=WAREHOUSE,
        source_table="{{ params.table }}",
        key_column="customer_id",
        name_column="first_name",
        country_column="country",
        pool=POOL,
    ).expand(where=key_ranges())

    @task
    def report(summaries: list[dict[str, Any]]) -> dict[str, Any]:
        """The shards' summaries added up."""
        fields = ("rows_read", "rows_enriched", "rows_invalid", "lookups", "credits_used", "requests")
        totals = {name: sum(int(summary.get(name) or 0) for summary in summaries) for name in fields}
        return {"shards": len(summaries), **totals}

    report(enrich_gender.output)
