"""``make airflow2-deployment`` (``python -m scale_test.airflow2``): the example DAGs on a real Airflow 2.11.

The 3.x deployment (:mod:`scale_test.deployment`) in Airflow 2's shape: ``airflow webserver``,
``airflow scheduler`` (which parses the DAGs itself on 2.11), one ``airflow celery worker`` and
``airflow triggerer`` (the credit gate's sensor is deferrable),
the CeleryExecutor with Redis (a database number of its own, 12 by default) as its broker and a
PostgreSQL database of its own (created, then dropped) as metadata database and result backend.
Airflow 2.11 runs from a venv built from ``compat/af2.11-py3.11-deployment.txt`` (the version
matrix's 2.11 lock file plus the Celery provider, Redis and psycopg2), cached like the matrix's
venvs; the provider and the emulator are installed into it from this tree. The emulator runs as
a real HTTP server; both connections come from ``AIRFLOW_CONN_*`` environment variables.

What it checks, through the webserver's REST API (``/api/v1``, basic auth):

1. ``namelookup_credit_gate`` (the credit sensor, deferrable) succeeds and pays its five names
   once each: once with enough credits (the first poke passes), once asking for more than are
   left, so the sensor is deferred to ``airflow triggerer`` until the credits are topped up;
2. ``namelookup_warehouse_enrichment`` on an SQLite warehouse succeeds and pays each distinct
   query once (gender: name and country, 1 credit; origin: name alone, 2 credits), counted
   from the warehouse's rows with the service's validation rules, against what the emulator charged;
3. a second run of it, nothing changed, succeeds and pays nothing;
4. the webserver's ``/health`` says the metadata database, the scheduler and the triggerer are healthy.

Then everything it started is stopped (process groups and sessions; also on failure, Ctrl-C
or SIGTERM), ``pgrep`` must find nothing left, the database is dropped and the run's Redis keys
deleted. Logs stay in the run directory it prints. Exit code 0 when every check held.

Example::

    make airflow2-deployment
    .venv/bin/python -m scale_test.airflow2 --rows 500 --run-dir /tmp/af2
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import functools
import importlib.util
import json
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import httpx

from airflow_provider_namelookup.validation import validate_query
from namelookup_emulator.sample import customer_rows
from scale_test.deployment_base import DeploymentBase, free_port, wait_for
from scale_test.facts import count_queries, query_key
from scale_test.processes import Processes
from scale_test.warehouse import PostgresServer

ROOT = Path(__file__).resolve().parent.parent
ENRICHMENT_DAG_ID = "namelookup_warehouse_enrichment"
GATE_DAG_ID = "namelookup_credit_gate"
DAG_FILES = {dag_id: ROOT / "example_dags" / f"{dag_id}.py" for dag_id in (ENRICHMENT_DAG_ID, GATE_DAG_ID)}
GATE_NAMES = ("Giulia", "Lars", "Aiko", "Mateo", "Zainab")
"""The names the credit gate's ``lookup_names`` asks about (its DAG file holds them)."""
ORIGIN_PRICE = 2
LOCK_FILE = ROOT / "compat" / "af2.11-py3.11-deployment.txt"
TERMINAL_RUN_STATES = {"success", "failed"}
ADMIN = "admin"


@dataclass(frozen=True)
class Options:
    """Sizes and limits of one run.

    :param rows: customers in the SQLite warehouse.
    :param redis_db: the Redis database number of the broker.
    :param credits: credits of the emulator account.
    :param start_timeout: seconds for the webserver, the scheduler, the worker and the DAGs to come up.
    :param run_timeout: seconds each DAG run may take.
    """

    rows: int = 2_000
    redis_db: int = 12
    credits: int = 1_000_000
    start_timeout: float = 240.0
    run_timeout: float = 300.0


def expected_credits(pairs: Iterable[tuple[Any, Any]]) -> int:
    """Credits a correct enrichment of ``(first_name, country)`` rows pays: each distinct valid gender
    query (name and country) once, each distinct valid origin query (the name alone) once at its price.

    >>> expected_credits([("Anna", "DE"), ("anna", "de"), ("Anna", "FR"), ("", None)])
    4
    """
    pairs = list(pairs)
    origin = {query_key(name, None) for name, _ in pairs} - {None}  # the name alone: its hint is not asked
    return count_queries(pairs).distinct_queries + ORIGIN_PRICE * len(origin)


def build_warehouse(path: Path, rows: int, seed: int = 2026) -> list[tuple[Any, Any]]:
    """The ``customers`` table of the example DAG in a new SQLite file; its ``(first_name, country)`` pairs."""
    data = list(customer_rows(rows, seed=seed))
    db = sqlite3.connect(path)
    try:
        db.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT)")
        db.executemany("INSERT INTO customers VALUES (?, ?, ?)", data)
        db.commit()
    finally:
        db.close()
    return [(name, country) for _, name, country in data]


def _compat_matrix() -> Any:
    """compat/matrix.py, the version matrix's script (not a package), as a module."""
    spec = importlib.util.spec_from_file_location("compat_matrix", ROOT / "compat" / "matrix.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # its dataclasses look it up there
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def airflow2_venv(log: Callable[[str], None]) -> Iterator[Path]:
    """The cached Airflow 2.11 venv of :data:`LOCK_FILE` (built on first use), with this tree's provider
    and emulator installed (editable, ``--no-deps``), as the version matrix builds its venvs; locked
    until the block ends, so that another checkout does not install its tree into it meanwhile."""
    matrix = _compat_matrix()
    target = matrix.Target("af2.11-py3.11-deployment", "3.11", "2.11.2")
    where = matrix.venv_dir(target)
    if not (where / ".complete").exists():
        log(f"building the Airflow 2.11 venv from {LOCK_FILE.name} (once; a few minutes): {where}")
    matrix.CACHE.mkdir(parents=True, exist_ok=True)
    with open(matrix.CACHE / f"{target.name}.lock", "w") as guard, tempfile.TemporaryFile("w+") as out:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            venv = matrix.ensure_venv(target, out)
            matrix.pip(venv, "install", "--no-deps", "-e", matrix.EMULATOR, "-e", ROOT, out=out)
            matrix.pip(venv, "check", out=out)
        except subprocess.CalledProcessError:
            out.seek(0)
            raise SystemExit(f"could not prepare the Airflow 2.11 venv {where}:\n{out.read()[-3000:]}") from None
        finally:
            # The editable install's metadata in the tree would have Airflow load the plugin twice.
            shutil.rmtree(ROOT / "airflow_provider_namelookup.egg-info", ignore_errors=True)
            shutil.rmtree(matrix.EMULATOR / "namelookup_emulator.egg-info", ignore_errors=True)
        yield Path(venv)


@dataclass
class Airflow2Deployment(DeploymentBase):
    """Airflow 2.11 with the CeleryExecutor: webserver, scheduler, triggerer, one Celery worker, the emulator.

    :param run_dir: where ``AIRFLOW_HOME``, the DAGs folder, the warehouse and ``logs/`` go (kept).
    :param venv: the Airflow 2.11 venv (its ``bin/airflow`` runs every Airflow component).
    :param options: sizes and limits.
    """

    run_dir: Path
    venv: Path
    options: Options = field(default_factory=Options)
    server: PostgresServer = field(default_factory=PostgresServer)

    api_version = "v1"

    def __post_init__(self) -> None:
        super().__init__()
        self.redis_db, self.dag_files = self.options.redis_db, DAG_FILES
        run = uuid.uuid4().hex[:8]
        self.meta_db = f"nl_af2_meta_{run}"
        self.queue = f"nl_af2_{run}"
        self.home = self.run_dir / "airflow"
        self.dags = self.run_dir / "dags"
        self.log_dir = self.run_dir / "logs"
        self.warehouse = self.run_dir / "warehouse.db"
        self.web_port, self.emulator_port = free_port(), free_port()
        self.token = secrets.token_urlsafe(24)
        self.password = secrets.token_urlsafe(16)
        self._secret_key = secrets.token_urlsafe(32)
        self.processes = Processes(self.log_dir, self.env())

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def airflow(self) -> str:
        return str(self.venv / "bin" / "airflow")

    def env(self) -> dict[str, str]:
        """The environment every Airflow process shares (nothing of this interpreter's venv or tree)."""
        inherited = {k: v for k, v in os.environ.items()
                     if not k.startswith(("AIRFLOW", "NAMELOOKUP_", "PYTHON", "VIRTUAL_ENV"))}
        return {
            **inherited,
            "PATH": os.pathsep.join([str(self.venv / "bin"), inherited.get("PATH", "/usr/bin:/bin")]),
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            **self.celery_env(self.meta_db),
            # The webserver reads task logs from the worker's log server, signed with this key.
            "AIRFLOW__WEBSERVER__SECRET_KEY": self._secret_key,
            "AIRFLOW__WEBSERVER__WORKERS": "1",
            "AIRFLOW__WEBSERVER__WORKER_REFRESH_BATCH_SIZE": "0",  # no rolling gunicorn restarts
            "AIRFLOW__API__AUTH_BACKENDS": "airflow.providers.fab.auth_manager.api.auth.backend.basic_auth",
            # Only triggered runs: unpausing the @daily and @hourly examples would otherwise start runs.
            "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False",
            "AIRFLOW__SCHEDULER__PARSING_PROCESSES": "1",
            "AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL": "10",
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW_CONN_NAMELOOKUP_DEFAULT": json.dumps(
                {"conn_type": "namelookup", "host": self.emulator_url, "password": self.token}),
            "AIRFLOW_CONN_NAMELOOKUP_WAREHOUSE": json.dumps({"conn_type": "sqlite", "host": str(self.warehouse)}),
        }

    # start and stop --------------------------------------------------------------------------

    def _start(self, log: Callable[[str], None]) -> None:
        for folder in (self.home, self.dags, self.log_dir):
            folder.mkdir(parents=True, exist_ok=True)
        for dag_file in DAG_FILES.values():
            shutil.copy(dag_file, self.dags / dag_file.name)
        self.create_database(self.meta_db)
        started = time.monotonic()
        self._airflow_cli("db-migrate", ["db", "migrate"])
        self._airflow_cli("users-create", ["users", "create", "--username", ADMIN, "--password", self.password,
                                           "--role", "Admin", "--email", "admin@example.com",
                                           "--firstname", "Ad", "--lastname", "Min"])
        log(f"metadata database {self.meta_db} created and migrated, admin user added in "
            f"{time.monotonic() - started:.0f} s")

        self.processes.start("emulator", [sys.executable, "-m", "namelookup_emulator", "--port",
                                          str(self.emulator_port), "--seed-credits", str(self.options.credits),
                                          "--log-level", "warning"],
                             env={"NAMELOOKUP_EMULATOR_SEED_TOKEN": self.token}, cwd=self.run_dir)
        self.processes.start("webserver", [self.airflow, "webserver", "--hostname", "127.0.0.1",
                                           "--port", str(self.web_port)], cwd=self.run_dir)
        self.processes.start("scheduler", [self.airflow, "scheduler"], cwd=self.run_dir)
        self.processes.start("triggerer", [self.airflow, "triggerer"], cwd=self.run_dir)
        self.processes.start("worker", [self.airflow, "celery", "worker", "--celery-hostname", "worker-1@%h",
                                        "--concurrency", "2", "--queues", self.queue,
                                        "--without-gossip", "--without-mingle"], cwd=self.run_dir)
        log(f"started emulator, webserver (port {self.web_port}), scheduler, triggerer and a Celery worker on queue "
            f"{self.queue} ({self.broker_url})")

        timeout, check = self.options.start_timeout, self.processes.check_alive
        wait_for(lambda: httpx.get(f"{self.emulator_url}/emulator/health", timeout=5).is_success,
                 timeout=60, what="the emulator", check=check)
        wait_for(self.healthy, timeout=timeout, what="the webserver, the scheduler and the triggerer", check=check,
                 interval=1)
        wait_for(lambda: " ready." in self.processes.tail("worker", 400), timeout=timeout,
                 what="the Celery worker", check=check, interval=1)
        for dag_id in DAG_FILES:
            wait_for(functools.partial(self.parsed, dag_id), timeout=timeout,
                     what=f"the scheduler to parse {dag_id}", check=check, interval=1)
            self.api("PATCH", f"/api/v1/dags/{dag_id}?update_mask=is_paused", json={"is_paused": False})
        log(f"all up and both DAGs unpaused {time.monotonic() - started:.0f} s after the migration began")

    def _airflow_cli(self, name: str, args: list[str]) -> None:
        with (self.log_dir / f"{name}.log").open("wb") as out:
            done = subprocess.run([self.airflow, *args], env=self.processes.env, stdout=out,
                                  stderr=subprocess.STDOUT, cwd=self.run_dir, check=False, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args[:2])} failed (exit {done.returncode}): "
                               f"{self.processes.tail(name, 15)}")

    def _clean_redis(self) -> None:
        """Delete this run's Celery queue and its keys, with the Airflow venv's ``redis`` client (Celery's)."""
        script = ("import redis, sys; client = redis.Redis.from_url(sys.argv[1], socket_timeout=5)\n"
                  "for key in client.scan_iter(match=f'*{sys.argv[2]}*'): client.delete(key)")
        done = subprocess.run([str(self.venv / "bin" / "python"), "-c", script, self.broker_url, self.queue],
                              capture_output=True, text=True, check=False, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)

    # the webserver's REST API and health -------------------------------------------------------

    def _api_base(self) -> str:
        return self.web_url

    def _auth_headers(self) -> dict[str, str]:
        """Basic auth as the admin user the start created (``[api] auth_backends``)."""
        return {"Authorization": "Basic " + base64.b64encode(f"{ADMIN}:{self.password}".encode()).decode()}

    def health(self) -> dict[str, Any]:
        """The webserver's ``/health`` (no login needed)."""
        return dict(httpx.get(f"{self.web_url}/health", timeout=10).json())

    def healthy(self) -> bool:
        health = self.health()
        return all((health.get(part) or {}).get("status") == "healthy"
                   for part in ("metadatabase", "scheduler", "triggerer"))

    def trigger(self, dag_id: str, conf: dict[str, Any] | None = None) -> str:
        return str(self.api("POST", f"/api/v1/dags/{dag_id}/dagRuns", json={"conf": conf or {}})["dag_run_id"])

    def wait_for_run(self, dag_id: str, run_id: str) -> str:
        """Wait until the run succeeds or fails (a dead component fails at once); its final state."""
        def finished() -> str | None:
            state = str(self.api("GET", f"/api/v1/dags/{dag_id}/dagRuns/{run_id}")["state"])
            return state if state in TERMINAL_RUN_STATES else None

        return str(wait_for(finished, timeout=self.options.run_timeout, what=f"run {run_id} of {dag_id}",
                            interval=2, check=self.processes.check_alive))

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        instances = self.api("GET", f"/api/v1/dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
        return {ti["task_id"]: ti["state"] for ti in instances}


# the run ------------------------------------------------------------------------------------------

STARTED = time.monotonic()


def log(message: str) -> None:
    print(f"[airflow2 +{time.monotonic() - STARTED:5.0f}s] {message}", flush=True)


@dataclass
class Outcome:
    """What one run found: the checks that failed, and timings for the summary."""

    failures: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def expect(self, condition: bool, failure: str) -> None:
        if not condition:
            self.failures.append(failure)
            log(f"expectation broken: {failure}")


def run_dag(deployment: Airflow2Deployment, dag_id: str, label: str, expected: int, outcome: Outcome, *,
            conf: dict[str, Any] | None = None, meanwhile: Callable[[str], None] | None = None) -> None:
    """Trigger ``dag_id``, wait for it, and check its state and the credits it paid.

    :param meanwhile: called with the run id once the run is triggered (e.g. to top the credits up).
    """
    before = deployment.credits_charged()
    started = time.monotonic()
    run_id = deployment.trigger(dag_id, conf)
    if meanwhile is not None:
        meanwhile(run_id)
    state = deployment.wait_for_run(dag_id, run_id)
    seconds = outcome.timings[label] = round(time.monotonic() - started, 1)
    paid = deployment.credits_charged() - before
    tasks = deployment.task_states(dag_id, run_id)
    log(f"{label}: {state} in {seconds:.0f} s, {paid:,} credits paid (expected {expected:,}); tasks: "
        + ", ".join(f"{task}={task_state}" for task, task_state in sorted(tasks.items())))
    outcome.expect(state == "success", f"{label}: run {run_id} ended {state}: {tasks}")
    outcome.expect(paid == expected, f"{label}: paid {paid:,} credits, expected {expected:,}")


def scenario(deployment: Airflow2Deployment, pairs: list[tuple[Any, Any]], outcome: Outcome) -> None:
    run_dag(deployment, GATE_DAG_ID, "credit gate", expected_credits_of_gate(), outcome)
    run_dag(deployment, GATE_DAG_ID, "credit gate, deferred until a top-up", expected_credits_of_gate(), outcome,
            conf={"min_credits": deployment.top_up(0) + 500},
            meanwhile=functools.partial(top_up_once_deferred, deployment))
    run_dag(deployment, ENRICHMENT_DAG_ID, "enrichment, first run", expected_credits(pairs), outcome)
    run_dag(deployment, ENRICHMENT_DAG_ID, "enrichment, second run (nothing changed)", 0, outcome)
    health = deployment.health()
    log("webserver /health: " + ", ".join(f"{k}={(v or {}).get('status')}" for k, v in sorted(health.items())))
    outcome.expect(deployment.healthy(), f"the webserver's /health is not healthy: {health}")


def top_up_once_deferred(deployment: Airflow2Deployment, run_id: str) -> None:
    """Wait until the gate's sensor is deferred to the triggerer (it asked for more credits than are
    left), then add enough credits: the trigger fires and the run goes on."""
    def deferred() -> bool:
        state = deployment.task_states(GATE_DAG_ID, run_id).get("enough_credits")
        if state in ("success", "skipped", "failed", "upstream_failed"):
            raise RuntimeError(f"the gate's sensor ended {state} instead of waiting for credits")
        return state == "deferred"

    wait_for(deferred, timeout=120, what="the gate's sensor to be deferred", interval=1,
             check=deployment.processes.check_alive)
    log(f"the gate's sensor is deferred to the triggerer; {deployment.top_up(1_000):,} credits left after a top-up")


def expected_credits_of_gate() -> int:
    """The gate's lookups: gender queries of its names, without a country."""
    return len({validate_query({"first_name": name}).cache_key for name in GATE_NAMES})


def _terminate(signum: int, frame: Any) -> NoReturn:
    raise SystemExit(128 + signum)  # unwinds through the `finally` that stops everything


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scale_test.airflow2", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=Options.rows, help="customers in the warehouse (%(default)s)")
    parser.add_argument("--run-dir", type=Path, default=None, help="where logs go (default: a new temp dir)")
    parser.add_argument("--venv", type=Path, default=None,
                        help=f"an Airflow 2.11 venv to use (default: the cached one of {LOCK_FILE.name})")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="namelookup-airflow2-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    log(f"run directory (logs): {run_dir}")
    outcome = Outcome()
    deployment: Airflow2Deployment | None = None
    left: list[str] = []
    holding = contextlib.ExitStack()
    try:
        venv = args.venv or holding.enter_context(airflow2_venv(log))
        version = subprocess.run([str(venv / "bin" / "python"), "-c", "import airflow; print(airflow.__version__)"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        outcome.timings["venv"] = round(time.monotonic() - STARTED, 1)
        log(f"Airflow {version} from {venv}")
        pairs = build_warehouse(run_dir / "warehouse.db", args.rows)
        deployment = Airflow2Deployment(run_dir, venv, Options(rows=args.rows))
        started = time.monotonic()
        deployment.start(log)
        outcome.timings["start"] = round(time.monotonic() - started, 1)
        scenario(deployment, pairs, outcome)
    except BaseException as exc:  # also KeyboardInterrupt and SystemExit: report, then clean up
        outcome.failures.insert(0, f"aborted: {type(exc).__name__}: {exc}")
        log(f"aborted: {type(exc).__name__}: {exc}")
    finally:
        if deployment is not None:
            started = time.monotonic()
            left = deployment.stop(log)
            outcome.timings["stop"] = round(time.monotonic() - started, 1)
            log("stopped everything; pgrep finds nothing left" if not left
                else f"{len(left)} processes had to be killed after stopping")
        holding.close()
    if left:
        outcome.failures.append(f"processes left after stopping: {left}")
    total = time.monotonic() - STARTED
    log("timings: " + ", ".join(f"{k} {v:.0f} s" for k, v in outcome.timings.items()) + f"; total {total:.0f} s")
    if outcome.failures:
        if deployment is not None:
            _print_logs(deployment)
        log("FAILED:\n  " + "\n  ".join(outcome.failures))
        return 1
    log(f"passed in {total:.0f} s")
    return 0


def _print_logs(deployment: Airflow2Deployment) -> None:
    """The tails of the components' logs, the emulator's token masked (it prints it when it starts)."""
    for name in ("scheduler", "worker", "webserver", "emulator", "db-migrate", "users-create"):
        tail = deployment.processes.tail(name, 25).replace(deployment.token, "***")
        if tail:
            print(f"----- {deployment.log_dir / (name + '.log')} (last 25 lines) -----\n{tail}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
