"""The in-task benchmark's DAGs: the provider's table operator and the hand-written ``@task`` in one DAG run.

Two DAGs, the same two tasks in either order (``bench_provider_first``, ``bench_handwritten_first``),
run by ``airflow dags test`` as a user would run them (:mod:`benchmarks.in_task`). What each task
does is timed inside the task, around exactly what a user's task does:

- ``provider``: ``SqlGenderLookupOperator.execute`` (its usage record, XCom summary, metrics and
  lineage included), timed by a subclass that wraps it;
- ``handwritten``: the whole ``@task`` body of :func:`benchmarks.handwritten.handwritten_dag`
  (opening the warehouse connection, ``SELECT DISTINCT``, arrays of 100 over one
  ``httpx.AsyncClient``, the temporary-table upsert), the token read from the same
  ``namelookup_default`` connection.

The run's conf names the table: ``{"conn_id", "table", "answers_table", "warehouse", "db", "in_flight"}``.
The task instances' own durations (start to end, as Airflow records them) are read from the
metadata database afterwards.
"""

from __future__ import annotations

import time
from typing import Any

import pendulum
from airflow.sdk import DAG, BaseHook, task

from airflow_provider_namelookup.operators import SqlGenderLookupOperator


class TimedSqlGenderLookupOperator(SqlGenderLookupOperator):
    """``SqlGenderLookupOperator`` whose summary also holds how long ``execute`` took, in seconds."""

    def execute(self, context: Any) -> dict[str, Any]:
        started = time.perf_counter()
        summary = super().execute(context)
        return {**summary, "execute_seconds": time.perf_counter() - started}


def _handwritten(conf: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.handwritten import handwritten_dag

    started = time.perf_counter()
    service = BaseHook.get_connection("namelookup_default")
    params = {"warehouse": conf["warehouse"], "db": conf.get("db"), "table": conf["table"],
              "in_flight": int(conf.get("in_flight", 16)), "upsert": "join", "url": service.host,
              "token": service.password}
    value = handwritten_dag(params)()
    return {**value, "execute_seconds": time.perf_counter() - started}


for dag_id, provider_first in (("bench_provider_first", True), ("bench_handwritten_first", False)):
    with DAG(dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False,
             tags=["namelookup", "benchmark"]) as dag:
        provider = TimedSqlGenderLookupOperator(
            task_id="provider", conn_id="{{ dag_run.conf['conn_id'] }}", source_table="{{ dag_run.conf['table'] }}",
            answers_table="{{ dag_run.conf['answers_table'] }}", key_column="customer_id",
            name_column="first_name", country_column="country")

        @task(task_id="handwritten")
        def handwritten(dag_run: Any = None) -> dict[str, Any]:
            return _handwritten(dict(dag_run.conf))

        hand = handwritten()
        if provider_first:
            provider >> hand
        else:
            hand >> provider
    globals()[dag_id] = dag
