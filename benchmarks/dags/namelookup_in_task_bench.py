"""The in-task benchmark's DAGs: the provider's table operator and the hand-written ``@task`` in one DAG run.

Two DAGs, the same two tasks in either order (``bench_provider_first``, ``bench_handwritten_first``)
after a first ``warm_up`` task (see :func:`_warm_up`),
run by ``airflow dags test`` as a user would run them (:mod:`benchmarks.in_task`). What each task
does is timed inside the task, around exactly what a user's task does:

- ``provider``: ``SqlGenderLookupOperator.execute`` (its usage record, XCom summary, metrics and
  lineage included), timed by a subclass that wraps it;
- ``handwritten``: the whole ``@task`` body of :func:`benchmarks.handwritten.handwritten_dag`
  (opening the warehouse connection, ``SELECT DISTINCT``, arrays of 100 over one
  ``httpx.AsyncClient``, the temporary-table upsert), the token read from the same
  ``namelookup_default`` connection.

The run's conf names the table: ``{"conn_id", "table", "answers_table", "warehouse", "db", "in_flight"}``,
and may name the answer fields the provider's target holds: ``"columns"``, comma-separated (the
operator's ``columns``; without it, every one: :data:`EVERY_FIELD`).
Each task also counts the core-seconds its work kept busy (:func:`_cores_spent`): its own process's
CPU time, the emulator's (its process id in ``NAMELOOKUP_BENCH_EMULATOR_PID``) and the rest of the
machine's (the warehouse server, anything else), so that a report can say what a run costs the
machine beside how long it took.
With ``NAMELOOKUP_BENCH_PROFILE=<dir>`` set, the operator's ``execute`` is also profiled (cProfile)
into ``<dir>/execute_<run_id>.prof``, to account for the time inside a task.
The task instances' own durations (start to end, as Airflow records them) are read from the
metadata database afterwards.
"""

from __future__ import annotations

import cProfile
import importlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, BaseHook, task

from airflow_provider_namelookup.operators import SqlGenderLookupOperator
from benchmarks.provider import ANSWER_FIELDS

EVERY_FIELD = ",".join(ANSWER_FIELDS)
"""What ``columns`` renders to when the conf names none: every answer field, as the operator's default
(an empty text or ``None`` would render to a text that names no field, and fail)."""


def _cores_spent() -> Callable[[], dict[str, float]]:
    """Start counting; the function returned gives the core-seconds spent since: ``task`` (this
    process), ``emulator`` (0 when its process id is not given) and ``rest`` (the rest of the machine)."""
    from benchmarks.service import process_cpu_seconds, system_busy_seconds

    pid = int(os.environ.get("NAMELOOKUP_BENCH_EMULATOR_PID") or 0)

    def emulator() -> float:
        return process_cpu_seconds(pid) if pid else 0.0

    task, service, busy = time.process_time(), emulator(), system_busy_seconds()

    def spent() -> dict[str, float]:
        used = {"task": time.process_time() - task, "emulator": emulator() - service}
        return {**used, "rest": max(0.0, system_busy_seconds() - busy - sum(used.values()))}

    return spent


class TimedSqlGenderLookupOperator(SqlGenderLookupOperator):
    """``SqlGenderLookupOperator`` whose summary also holds how long ``execute`` took, in seconds, and the
    core-seconds it kept busy (``cores``, see :func:`_cores_spent`)."""

    def execute(self, context: Any) -> dict[str, Any]:
        profile_dir = os.environ.get("NAMELOOKUP_BENCH_PROFILE")
        profiler = cProfile.Profile() if profile_dir else None
        cores = _cores_spent()
        started = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        summary = super().execute(context)
        elapsed = time.perf_counter() - started
        spent = cores()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(Path(profile_dir or ".") / f"execute_{context['run_id']}.prof")
        return {**summary, "execute_seconds": elapsed, "cores": spent}


_DRIVERS = {"postgres": "psycopg", "sqlite": "sqlite3", "duckdb": "duckdb"}


def _warm_up(conf: dict[str, Any]) -> None:
    """The DAG run's first task: it takes the first task's extra time under ``airflow dags test`` and
    imports the warehouse's driver, which both measured tasks use, so that neither pays for what
    the other one already did in this process (in a deployment each task's process imports it)."""
    importlib.import_module(_DRIVERS[conf["warehouse"]])


def _handwritten(conf: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.handwritten import handwritten_dag

    cores = _cores_spent()
    started = time.perf_counter()
    service = BaseHook.get_connection("namelookup_default")
    params = {"warehouse": conf["warehouse"], "db": conf.get("db"), "table": conf["table"],
              "in_flight": int(conf.get("in_flight", 16)), "upsert": "join", "url": service.host,
              "token": service.password}
    value = handwritten_dag(params)()
    elapsed = time.perf_counter() - started
    return {**value, "execute_seconds": elapsed, "cores": cores()}


for dag_id, provider_first in (("bench_provider_first", True), ("bench_handwritten_first", False)):
    with DAG(dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False,
             tags=["namelookup", "benchmark"]) as dag:
        provider = TimedSqlGenderLookupOperator(
            task_id="provider", conn_id="{{ dag_run.conf['conn_id'] }}", source_table="{{ dag_run.conf['table'] }}",
            answers_table="{{ dag_run.conf['answers_table'] }}", key_column="customer_id",
            name_column="first_name", country_column="country",
            columns="{{ dag_run.conf.get('columns') or '" + EVERY_FIELD + "' }}")

        @task(task_id="warm_up")
        def warm_up(dag_run: Any = None) -> None:
            _warm_up(dict(dag_run.conf))

        @task(task_id="handwritten")
        def handwritten(dag_run: Any = None) -> dict[str, Any]:
            return _handwritten(dict(dag_run.conf))

        hand = handwritten()
        if provider_first:
            warm_up() >> provider >> hand
        else:
            warm_up() >> hand >> provider
    globals()[dag_id] = dag
