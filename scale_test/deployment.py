"""A real Airflow deployment on this machine: CeleryExecutor, two workers, PostgreSQL, Redis.

What :meth:`Deployment.start` brings up, in this order (each process in its own session,
its log in ``<run_dir>/logs``):

1. two PostgreSQL databases with unique names: the **metadata database** (also the
   Celery result backend) and the **warehouse**; ``airflow db migrate``;
2. the **emulator** of the Name Lookup service, one account with plenty of credits;
3. the **api-server** (REST API, UI and the execution API the tasks talk to);
4. the **scheduler** (with the CeleryExecutor) and the **dag-processor**, which parses
   a DAGs folder holding only the two example DAGs the scenarios run (:data:`DAG_FILES`:
   ``namelookup_scale_out`` and ``namelookup_approved_enrichment``); the scheduler creates
   no scheduled runs (``[scheduler] use_job_schedule`` off: the approval DAG is
   ``@daily``), only the runs the scenarios trigger;
5. **two Celery workers** (``airflow celery worker``), separate processes with their own
   Celery node names, log-server ports and host names, consuming a queue of their own
   on Redis (a database number of its own, 13 by default);
6. the ``namelookup`` pool, and both DAGs unpaused.

The approval DAG reads its settings from the deployment's environment, when it is parsed:
the auto-approve ceiling (``NAMELOOKUP_AUTO_APPROVE_CEILING``, low, so a plan needs a
person), the warehouse connection and the table; and it runs with ``[core]
default_task_retries`` (one retry) as it sets none of its own (the scale-out DAG sets 3).

:meth:`Deployment.stop` stops every process group, checks with ``pgrep`` that nothing
is left, drops both databases and deletes the run's Redis keys.

Example::

    with Deployment(Path("/tmp/run"), DeploymentOptions()) as deployment:
        run_id = deployment.trigger({"table": "customers", "shards": 8})
        deployment.wait_for_run(run_id, timeout=300)
        deployment.task_tries(run_id)        # every try, with the host it ran on
        run_id = deployment.trigger({}, dag_id=APPROVAL_DAG_ID)
        deployment.answer_approval(run_id, "approve", "Approve", dag_id=APPROVAL_DAG_ID)
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import httpx

from scale_test.deployment_base import DeploymentBase, free_port, wait_for
from scale_test.hostname import HOSTNAME_ENV
from scale_test.processes import Processes
from scale_test.warehouse import PostgresServer, Warehouse

ROOT = Path(__file__).resolve().parent.parent
DAG_ID = "namelookup_scale_out"
APPROVAL_DAG_ID = "namelookup_approved_enrichment"
DAG_FILES = {dag_id: ROOT / "example_dags" / f"{dag_id}.py" for dag_id in (DAG_ID, APPROVAL_DAG_ID)}
"""The DAGs deployed (copied from this tree's ``example_dags``), by their ids (each file is named after its DAG)."""
CUSTOMERS_TABLE = "customers"
POOL = "namelookup"
WAREHOUSE_CONN_ID = "namelookup_warehouse"
TERMINAL_RUN_STATES = {"success", "failed"}


@dataclass(frozen=True)
class DeploymentOptions:
    """How big the deployment is and how fast it notices a lost worker.

    :param workers: Celery workers (separate processes).
    :param concurrency: task slots per worker.
    :param pool_slots: slots of the ``namelookup`` pool.
    :param redis_db: the Redis database number of the broker.
    :param heartbeat_timeout: seconds without a heartbeat before the scheduler fails a task try
        (``[scheduler] task_instance_heartbeat_timeout``; Airflow's default is 300).
    :param retry_delay: seconds before a failed try is retried (``[core] default_task_retry_delay``).
    :param retries: retries of a task that sets none (``[core] default_task_retries``): the approval DAG's.
    :param auto_approve_ceiling: the approval DAG's ``NAMELOOKUP_AUTO_APPROVE_CEILING``: plans of this many
        credits or more wait for a person.
    :param credits: credits of the emulator account.
    """

    workers: int = 2
    concurrency: int = 2
    pool_slots: int = 4
    redis_db: int = 13
    heartbeat_timeout: int = 30
    retry_delay: int = 5
    retries: int = 1
    auto_approve_ceiling: int = 100
    credits: int = 10_000_000


class TaskTry(NamedTuple):
    """One try of one task instance: a row of the metadata database's ``task_instance`` table, as read."""

    task_id: str
    map_index: int
    try_number: int
    state: str | None
    hostname: str | None


class Deployment(DeploymentBase):
    """Airflow with the CeleryExecutor and two workers, the emulator and a PostgreSQL warehouse.

    :param run_dir: where ``AIRFLOW_HOME``, the DAGs folder and ``logs/`` go (kept afterwards).
    :param options: sizes and timeouts.
    """

    def __init__(self, run_dir: Path, options: DeploymentOptions, *, server: PostgresServer | None = None) -> None:
        super().__init__()
        self.options, self.redis_db, self.dag_files = options, options.redis_db, DAG_FILES
        self.server = server or PostgresServer()
        run = uuid.uuid4().hex[:8]
        self.meta_db = f"nl_scale_meta_{run}"
        self.warehouse_db = f"nl_scale_wh_{run}"
        self.queue = f"nl_scale_{run}"
        self.run_dir = run_dir
        self.home = run_dir / "airflow"
        self.dags = run_dir / "dags"
        self.log_dir = run_dir / "logs"
        self.api_port, self.emulator_port = free_port(), free_port()
        self.workers = [f"worker-{i + 1}" for i in range(options.workers)]
        self.token = secrets.token_urlsafe(24)
        self._jwt_secret, self._api_secret = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.processes = Processes(self.log_dir, self.env())
        self.warehouse = Warehouse(self.server, self.warehouse_db)
        self._api_token: str | None = None

    # configuration ---------------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def env(self) -> dict[str, str]:
        """The environment every process of the deployment shares."""
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "NAMELOOKUP_"))}
        return {
            **inherited,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            **self.celery_env(self.meta_db),
            # Tasks reach the execution API here; a wrong port fails every task with "connection refused".
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.api_url}/execution/",
            # Every component signs or checks the tasks' tokens with this secret: it must be shared.
            "AIRFLOW__API_AUTH__JWT_SECRET": self._jwt_secret,
            "AIRFLOW__API__SECRET_KEY": self._api_secret,
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": "scale_test.hostname.worker_hostname",
            "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": str(self.options.retry_delay),
            "AIRFLOW__CORE__DEFAULT_TASK_RETRIES": str(self.options.retries),
            # Only triggered runs: unpausing the @daily approval DAG would otherwise start a scheduled run.
            "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(self.options.heartbeat_timeout),
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "120",
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            "AIRFLOW_CONN_NAMELOOKUP_DEFAULT": (
                f'{{"conn_type": "namelookup", "host": "{self.emulator_url}", "password": "{self.token}"}}'),
            f"AIRFLOW_CONN_{WAREHOUSE_CONN_ID.upper()}": self.server.airflow_connection(self.warehouse_db),
            # Read by the approval DAG when it is parsed (a trigger's conf cannot raise the ceiling).
            "NAMELOOKUP_AUTO_APPROVE_CEILING": str(self.options.auto_approve_ceiling),
            "NAMELOOKUP_WAREHOUSE_CONN_ID": WAREHOUSE_CONN_ID,
            "NAMELOOKUP_CUSTOMERS_TABLE": CUSTOMERS_TABLE,
        }

    # start and stop --------------------------------------------------------------------------

    def _start(self, log: Callable[[str], None]) -> None:
        for folder in (self.home, self.dags, self.log_dir):
            folder.mkdir(parents=True, exist_ok=True)
        for dag_file in DAG_FILES.values():
            shutil.copy(dag_file, self.dags / dag_file.name)
        for database in (self.meta_db, self.warehouse_db):
            self.create_database(database)
        log(f"databases {self.meta_db} (metadata, Celery results) and {self.warehouse_db} (warehouse) created")
        started = time.monotonic()
        with (self.log_dir / "db-migrate.log").open("wb") as out:
            subprocess.run([_airflow(), "db", "migrate"], env=self.processes.env, stdout=out,
                           stderr=subprocess.STDOUT, check=True, timeout=300)
        log(f"metadata database migrated in {time.monotonic() - started:.0f} s")

        python = sys.executable
        self.processes.start("emulator", [python, "-m", "namelookup_emulator", "--port",
                                          str(self.emulator_port), "--seed-credits", str(self.options.credits),
                                          "--log-level", "warning"],
                             env={"NAMELOOKUP_EMULATOR_SEED_TOKEN": self.token})
        self.processes.start("api-server", [_airflow(), "api-server", "--host", "127.0.0.1",
                                            "--port", str(self.api_port)])
        self.processes.start("scheduler", [_airflow(), "scheduler"])
        self.processes.start("dag-processor", [_airflow(), "dag-processor"])
        for name in self.workers:
            self.processes.start(name, [_airflow(), "celery", "worker", "--celery-hostname", f"{name}@%h",
                                        "--concurrency", str(self.options.concurrency), "--queues", self.queue,
                                        "--without-gossip", "--without-mingle"],
                                 env={HOSTNAME_ENV: name, "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port())})
        log(f"started emulator, api-server (port {self.api_port}), scheduler, dag-processor and "
            f"{len(self.workers)} Celery workers on queue {self.queue} ({self.broker_url})")

        check = self.processes.check_alive
        wait_for(lambda: httpx.get(f"{self.emulator_url}/emulator/health", timeout=5).is_success,
                 timeout=60, what="the emulator", check=check)
        wait_for(self._components_healthy, timeout=180, what="api-server, scheduler and dag-processor",
                 check=check, interval=1)
        for name in self.workers:
            wait_for(functools.partial(self._worker_ready, name), timeout=120, what=f"Celery {name}", check=check,
                     interval=1)
        for dag_id in DAG_FILES:
            wait_for(functools.partial(self.parsed, dag_id), timeout=120,
                     what=f"the dag-processor to parse {dag_id}", check=check, interval=1)
        self.api("POST", "/api/v2/pools", json={"name": POOL, "slots": self.options.pool_slots,
                                               "description": "Name Lookup API calls"})
        for dag_id in DAG_FILES:
            self.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
        log(f"all up in {time.monotonic() - started:.0f} s after the migration began; pool {POOL!r} has "
            f"{self.options.pool_slots} slots")

    # the REST API ----------------------------------------------------------------------------

    def _api_base(self) -> str:
        return self.api_url

    def _auth_headers(self) -> dict[str, str]:
        """The api-server's JWT (``/auth/token``; every user is an admin in this deployment), fetched once."""
        if self._api_token is None:
            answer = httpx.get(f"{self.api_url}/auth/token", timeout=30)
            answer.raise_for_status()
            self._api_token = answer.json()["access_token"]
        return {"Authorization": f"Bearer {self._api_token}"}

    def _worker_ready(self, name: str) -> bool:
        return " ready." in self.processes.tail(name, 400)  # Celery logs "celery@<node> ready."

    def _components_healthy(self) -> bool:
        health = httpx.get(f"{self.api_url}/api/v2/monitor/health", timeout=10).json()
        return all((health.get(part) or {}).get("status") == "healthy"
                   for part in ("metadatabase", "scheduler", "dag_processor"))

    def trigger(self, conf: dict[str, Any], *, dag_id: str = DAG_ID) -> str:
        """Start a run of ``dag_id`` (the scale-out DAG by default); its run id."""
        run = self.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})
        return str(run["dag_run_id"])

    def run_state(self, run_id: str, *, dag_id: str = DAG_ID) -> str:
        return str(self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")["state"])

    def wait_for_run(self, run_id: str, timeout: float, *, dag_id: str = DAG_ID) -> str:
        """Wait until the run succeeds or fails; its final state."""
        return str(wait_for(lambda: (state := self.run_state(run_id, dag_id=dag_id)) in TERMINAL_RUN_STATES and state,
                            timeout=timeout, what=f"DAG run {run_id} of {dag_id}", interval=2))

    def approval_request(self, run_id: str, task_id: str, *, dag_id: str = DAG_ID) -> dict[str, Any] | None:
        """The human-in-the-loop request of a task instance (``GET .../hitlDetails``), None before it asks."""
        return self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/-1/hitlDetails",
                        allow=(404,))

    def answer_approval(self, run_id: str, task_id: str, option: str, *, dag_id: str = DAG_ID) -> dict[str, Any]:
        """Answer a task's human-in-the-loop request with ``option`` (e.g. ``Approve``), as the Required
        Actions page does (``PATCH .../taskInstances/{task_id}/-1/hitlDetails``); the recorded answer."""
        return dict(self.api("PATCH", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/-1/hitlDetails",
                             json={"chosen_options": [option]}))

    def clear_task(self, run_id: str, task_id: str, *, dag_id: str = DAG_ID) -> list[dict[str, Any]]:
        """Clear one task instance of a finished run, as "Clear" in the UI does (not a dry run; the run is
        set running again); the task instances cleared."""
        cleared = self.api("POST", f"/api/v2/dags/{dag_id}/clearTaskInstances",
                           json={"dry_run": False, "dag_run_id": run_id, "task_ids": [task_id],
                                 "only_failed": False, "reset_dag_runs": True})
        return list(cleared["task_instances"])

    # the metadata database and the emulator -----------------------------------------------------

    def task_tries(self, run_id: str, *, dag_id: str = DAG_ID) -> list[TaskTry]:
        """Every try of every task instance of the run (earlier tries from ``task_instance_history``)."""
        conn = self.server.connect(self.meta_db)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT task_id, map_index, try_number, state, hostname FROM task_instance "
                            "WHERE dag_id = %(dag)s AND run_id = %(run)s UNION ALL "
                            "SELECT task_id, map_index, try_number, state, hostname FROM task_instance_history "
                            "WHERE dag_id = %(dag)s AND run_id = %(run)s ORDER BY 1, 2, 3",
                            {"dag": dag_id, "run": run_id})
                return [TaskTry(*row) for row in cur.fetchall()]
        finally:
            conn.close()

    def xcom(self, run_id: str, task_id: str, map_index: int = -1, *, dag_id: str = DAG_ID) -> Any:
        """The ``return_value`` XCom of a task instance (its last try), or None."""
        entry = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/"
                         f"return_value?map_index={map_index}", allow=(404,))
        value = None if entry is None else entry.get("value")
        return json.loads(value) if isinstance(value, str) else value  # stored as JSON; a string holds JSON text

    def task_log(self, run_id: str, attempt: TaskTry, *, dag_id: str = DAG_ID) -> Path:
        """Where the log of one try is written (``[logging] base_log_folder``'s default layout)."""
        index = f"map_index={attempt.map_index}" if attempt.map_index >= 0 else ""
        return (self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={attempt.task_id}" / index
                / f"attempt={attempt.try_number}.log")

    def usage_of(self, task_id: str, *, dag_id: str = DAG_ID) -> dict[str, Any]:
        """What the credits view's API (``GET /namelookup/api/usage``, served by the api-server's
        plugin from the workers' usage records) says ``task_id`` of ``dag_id`` spent today."""
        report = self.api("GET", "/namelookup/api/usage?days=1")
        rows = [t for t in report["tasks"] if t["dag_id"] == dag_id and t["task_id"] == task_id]
        return rows[0] if rows else {"credits_used": 0, "requests": 0, "tries": 0}


def _airflow() -> str:
    """The ``airflow`` command of this interpreter's environment."""
    return str(Path(sys.executable).with_name("airflow"))
