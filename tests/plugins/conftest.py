"""A real Airflow api-server with the provider's plugin, on the session's metadata database.

Started once per session when a test asks for it (``airflow api-server`` in its own process
group, on a free loopback port, one worker, the simple auth manager with a user of each role,
``admin``, ``op``, ``user`` and ``viewer``, and two viewers more: ``limited``, who may read one
DAG, and ``outsider``, whom the auth manager does not let open the view), and stopped with its
whole process group at the end. DAGs run with
``dag.test()`` in the test process write to the same SQLite database the server reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from namelookup_emulator import EmulatorServer
from scale_test.processes import group_alive
from tests.support import free_port

ROOT = Path(__file__).resolve().parents[2]
USERS = {"admin": "admin", "op": "op", "user": "user", "viewer": "viewer", "limited": "viewer", "outsider": "viewer"}
MINE, THEIRS = "crm_enrich_contacts", "marketing_score_leads"
"""DAG ids of the view's tests: the user ``limited`` may read only MINE."""
UI_CONN, DOWN_CONN = "namelookup_prod", "namelookup_eu_mirror"


@dataclass
class ApiServer:
    url: str
    home: Path
    log: Path
    process: subprocess.Popen[bytes]
    tokens: dict[str, str] = field(default_factory=dict)

    def password(self, user: str) -> str:
        return json.loads((self.home / "simple_auth_manager_passwords.json.generated").read_text())[user]

    def token(self, user: str) -> str:
        """A JWT of ``user``, as ``POST /auth/token`` gives it (the UI keeps it in the ``_token`` cookie)."""
        if user not in self.tokens:
            answer = httpx.post(f"{self.url}/auth/token", json={"username": user, "password": self.password(user)},
                                timeout=30)
            answer.raise_for_status()
            self.tokens[user] = answer.json()["access_token"]
        return self.tokens[user]

    def get(self, path: str, user: str | None = None, headers: dict[str, str] | None = None,
            **kwargs: Any) -> httpx.Response:
        """``GET path`` as ``user`` (a Bearer JWT), or anonymously."""
        headers = {**(headers or {}), **({"Authorization": f"Bearer {self.token(user)}"} if user else {})}
        return httpx.get(f"{self.url}{path}", headers=headers, timeout=60, **kwargs)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


def records(dag_id: str) -> list[Any]:
    """The DAG's usage records, read as the api-server reads them (those a try of the provider's operators wrote)."""
    from airflow.utils.session import create_session

    from airflow_provider_namelookup.usage import store
    from airflow_provider_namelookup.usage.trust import trusted

    with create_session() as session:
        every = [r for r in store.read(session, since=datetime(2000, 1, 1, tzinfo=UTC)) if r.dag_id == dag_id]
        return trusted(session, every, now=datetime.now(UTC))


def spend(dags_folder: Path, dag_id: str, names: list[str]) -> Any:
    """Run a DAG that spends credits on the view's connection (gender and country of origin)."""
    from tests.support import write_dag

    dag = write_dag(dags_folder, f"""
        GenderLookupOperator(task_id="genders", queries={names!r}, namelookup_conn_id={UI_CONN!r})
        CountryOfOriginOperator(task_id="origins", queries={names[:2]!r}, namelookup_conn_id={UI_CONN!r})
    """, dag_id=dag_id)
    assert str(dag.run().state) == "success"
    return dag


def _add_connection(conn_id: str, host: str, token: str) -> None:
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session

    with create_session() as session:
        existing = session.query(Connection).filter(Connection.conn_id == conn_id).one_or_none()
        if existing is not None:
            session.delete(existing)
            session.flush()
        session.add(Connection(conn_id=conn_id, conn_type="namelookup", host=host, password=token))


@pytest.fixture(scope="session")
def ui_emulator() -> Iterator[EmulatorServer]:
    """The service behind the view's connection (its own, so its counters are the view's alone)."""
    with EmulatorServer() as server:
        yield server


@pytest.fixture(scope="session")
def ui_account(ui_emulator: EmulatorServer, airflow_db: Path) -> str:
    """The token of the account behind ``UI_CONN`` (a connection in the metadata database), and a
    second connection ``DOWN_CONN`` whose service never answers."""
    token = ui_emulator.create_account(credits=5000)
    _add_connection(UI_CONN, ui_emulator.url, token)
    _add_connection(DOWN_CONN, f"http://127.0.0.1:{free_port()}", f"down-{uuid.uuid4().hex}")
    return token


@contextlib.contextmanager
def running_api_server(log_dir: Path, users: str, **env: str) -> Iterator[ApiServer]:
    """A real ``airflow api-server`` on the session's metadata database (simple auth manager with
    ``users``, ``name:role,...``; ``env`` adds settings), answering its health check, stopped with
    everything it started on the way out."""
    home = Path(os.environ["AIRFLOW_HOME"])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = log_dir / "api-server.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": users,
        "AIRFLOW__API_AUTH__JWT_SECRET": uuid.uuid4().hex,
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__API__WORKERS": "1",
        **env,
    }
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "airflow", "api-server", "--host", "127.0.0.1",
                                    "--port", str(port)], env=env, cwd=home, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = ApiServer(url, home, log, process)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, f"the api-server exited:\n{server.log_tail()}"
            try:
                if httpx.get(f"{url}/api/v2/monitor/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"the api-server did not answer in 120 s:\n{server.log_tail()}"
            time.sleep(0.5)
        yield server
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def api_server(airflow_db: Path, ui_account: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_api_server(tmp_path_factory.mktemp("api-server"), ",".join(f"{u}:{r}" for u, r in USERS.items()),
                            AIRFLOW__CORE__AUTH_MANAGER="tests.plugins.auth_manager.DagRestrictedAuthManager",
                            NAMELOOKUP_TEST_LIMITED_USERS="limited", NAMELOOKUP_TEST_READABLE_DAGS=MINE,
                            NAMELOOKUP_TEST_NO_VIEW_USERS="outsider") as server:
        yield server


@pytest.fixture(scope="session")
def spent(airflow_db: Path, api_server: ApiServer, ui_emulator: EmulatorServer, ui_account: str) -> dict[str, Any]:
    """Both DAGs of the view's tests ran once: ``MINE`` and ``THEIRS`` spent 7 credits each on the
    view's connection. Returns the account's remaining credits."""
    spend(airflow_db, MINE, ["Anna", "Theresa", "John", "anna"])
    spend(airflow_db, THEIRS, ["Giulia", "Sven", "Aiko"])
    return {"remaining": ui_emulator.state.remaining_credits(ui_account)}


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the api-server and every process it started (its process group): SIGTERM, then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        if not group_alive(process.pid):
            break
        os.killpg(process.pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            process.poll()  # reap the leader
            if not group_alive(process.pid):
                break
            time.sleep(0.2)
    process.wait(10)
