"""What both real deployments share: bring-up that cleans up after itself, stop, the emulator, the REST API.

:class:`~scale_test.deployment.Deployment` (Airflow 3: api-server, dag-processor, two workers)
and :class:`~scale_test.airflow2.Airflow2Deployment` (Airflow 2.11: webserver, triggerer, one
worker) differ in their components and their REST API's version and login; the rest is here:

- :meth:`DeploymentBase.start` calls the subclass's ``_start`` and, on any failure (Ctrl-C
  too), stops what was started and re-raises; :meth:`DeploymentBase.stop` stops every process
  group, waits for orphans to be reaped, kills and reports what ``pgrep`` still finds, drops
  the databases the run created and deletes its Redis keys;
- :meth:`DeploymentBase.api` calls the REST API (``/api/v1`` or ``/api/v2``) with the
  subclass's login, and :meth:`DeploymentBase.parsed` tells whether a DAG is known yet,
  failing at once on an import error of its file;
- the emulator's admin calls: its counters, its faults, a top-up.

Example::

    class MyDeployment(DeploymentBase):
        api_version = "v2"
        def _start(self, log): ...
        def _auth_headers(self): return {"Authorization": "Bearer ..."}
    with MyDeployment(...) as deployment:       # stop() on leaving, whatever happened
        deployment.emulator_stats()["credits_charged"]
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Self

import httpx

from scale_test.processes import Processes
from scale_test.warehouse import PostgresServer


def free_port() -> int:
    """A TCP port nobody listens on right now (the kernel's choice)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(condition: Callable[[], Any], *, timeout: float, what: str, interval: float = 0.5,
             check: Callable[[], None] | None = None) -> Any:
    """Poll ``condition`` until it returns something truthy; raise ``TimeoutError`` naming ``what``.

    :param check: called on every round, e.g. to fail at once when a process died.
    """
    deadline = time.monotonic() + timeout
    while True:
        if check is not None:
            check()
        with contextlib.suppress(httpx.TransportError):
            value = condition()
            if value:
                return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


REAP_SECONDS = 10.0
"""How long :meth:`DeploymentBase.stop` waits for killed orphans to be reaped before it kills what is left."""


class DeploymentBase:
    """A real Airflow deployment's lifecycle and the calls every scenario makes; subclasses bring it up.

    Subclasses set :attr:`processes`, :attr:`server`, :attr:`emulator_port`, :attr:`token`,
    :attr:`queue`, :attr:`redis_db` and :attr:`dag_files` in their constructor, and implement
    :meth:`_start`, :meth:`_api_base` and :meth:`_auth_headers` (and :meth:`_clean_redis` when the
    driving interpreter has no ``redis`` client).
    """

    api_version = "v2"
    processes: Processes
    server: PostgresServer
    emulator_port: int
    token: str
    queue: str
    redis_db: int
    dag_files: Mapping[str, Path]

    def __init__(self) -> None:
        self._created: list[str] = []

    @property
    def emulator_url(self) -> str:
        return f"http://127.0.0.1:{self.emulator_port}"

    @property
    def broker_url(self) -> str:
        return f"redis://127.0.0.1:6379/{self.redis_db}"

    def celery_env(self, meta_db: str) -> dict[str, str]:
        """The CeleryExecutor's settings: Redis as broker, the metadata database as result backend, one queue."""
        return {
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.server.sqlalchemy_url(meta_db),
            "AIRFLOW__CELERY__BROKER_URL": self.broker_url,
            "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + self.server.sqlalchemy_url(meta_db, "postgresql"),
            "AIRFLOW__CELERY__WORKER_PREFETCH_MULTIPLIER": "1",
            "AIRFLOW__OPERATORS__DEFAULT_QUEUE": self.queue,
        }

    def create_database(self, name: str) -> None:
        """Create a PostgreSQL database that :meth:`stop` drops."""
        self.server.create(name)
        self._created.append(name)

    # start and stop --------------------------------------------------------------------------

    def start(self, log: Callable[[str], None] = print) -> Self:
        """Bring everything up; on any failure (Ctrl-C too), stop what was started and re-raise."""
        try:
            self._start(log)
        except BaseException:
            self.stop(log)
            raise
        return self

    def _start(self, log: Callable[[str], None]) -> None:
        raise NotImplementedError

    def stop(self, log: Callable[[str], None] = print) -> list[str]:
        """Stop every process (their sessions), drop the databases, delete the run's Redis keys;
        return what ``pgrep`` still found after stopping (killed then; should be [])."""
        self.processes.stop_all()
        # An orphaned grandchild killed with its session is a zombie until init reaps it: give it a moment.
        deadline = time.monotonic() + REAP_SECONDS
        while (left := self.processes.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.2)
        if left:
            log("processes left after stopping (killing them): " + "; ".join(left))
            for line in left:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(line.split()[0]), signal.SIGKILL)
        for database in reversed(self._created):
            try:
                self.server.drop(database)
            except Exception as err:
                log(f"could not drop database {database}: {err}")
        self._created.clear()
        try:
            self._clean_redis()
        except Exception as err:
            log(f"could not clean Redis db {self.redis_db}: {str(err).strip()[-300:]}")
        return left

    def _clean_redis(self) -> None:
        """Delete this run's queue and the unacknowledged messages of tasks killed with their worker."""
        import redis

        client = redis.Redis.from_url(self.broker_url, socket_timeout=5)
        for key in client.scan_iter(match=f"*{self.queue}*"):
            client.delete(key)
        for tag, message in client.hgetall("unacked").items():
            if self.queue.encode() in message:
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # the REST API ----------------------------------------------------------------------------

    def _api_base(self) -> str:
        raise NotImplementedError

    def _auth_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def api(self, method: str, path: str, *, json: Any = None, allow: tuple[int, ...] = ()) -> Any:
        """Call the REST API (``path`` from ``/api/...`` on) as an admin; None for an allowed error status."""
        response = httpx.request(method, f"{self._api_base()}{path}", json=json, timeout=30,
                                 headers=self._auth_headers())
        if response.status_code in allow:
            return None
        if response.is_error:
            raise RuntimeError(f"{method} {path}: HTTP {response.status_code}: {response.text[:500]}")
        return response.json() if response.content else {}

    def parsed(self, dag_id: str) -> bool:
        """Whether ``dag_id`` is known; an import error of its file fails at once, naming it."""
        api = f"/api/{self.api_version}"
        if self.api("GET", f"{api}/dags/{dag_id}", allow=(404,)) is not None:
            return True
        errors = self.api("GET", f"{api}/importErrors")["import_errors"]
        name = self.dag_files[dag_id].name
        broken = [e for e in errors if Path(str(e.get("filename"))).name == name]
        if broken:
            raise RuntimeError(f"{name} does not import: {broken[0].get('stack_trace', '')[-800:]}")
        return False

    # the emulator ----------------------------------------------------------------------------

    def emulator_stats(self) -> dict[str, Any]:
        """The emulator's counters (``/emulator/stats``): requests, queries and credits charged."""
        answer = httpx.get(f"{self.emulator_url}/emulator/stats", timeout=10)
        answer.raise_for_status()
        return dict(answer.json())

    def credits_charged(self) -> int:
        return int(self.emulator_stats()["credits_charged"])

    def reset_emulator_stats(self) -> None:
        httpx.delete(f"{self.emulator_url}/emulator/stats", timeout=10).raise_for_status()

    def set_emulator_faults(self, faults: dict[str, Any]) -> None:
        """Replace the emulator's fault injection (``{}``: none), e.g. ``{"latency_ms": [100, 300]}``."""
        httpx.put(f"{self.emulator_url}/emulator/faults", json=faults, timeout=10).raise_for_status()

    def top_up(self, credits: int) -> int:
        """Add ``credits`` to the account (the emulator's admin API); the credits left."""
        answer = httpx.post(f"{self.emulator_url}/emulator/accounts/credits",
                            json={"api_token": self.token, "add": credits}, timeout=10)
        answer.raise_for_status()
        return int(answer.json()["remaining_credits"])
