"""The labelled people of ``labelled.py`` looked up once per session against the emulator; an
api-server for the approval DAG's tests; the credits view's headless browser for the report."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from airflow_provider_namelookup.hooks.namelookup import NameLookupHook
from airflow_provider_namelookup.models import result_view
from tests.evaluation.labelled import classes, labelled_people
from tests.plugins.conftest import ROOT, ApiServer, _stop, free_port
from tests.plugins.test_credits_page import browser  # noqa: F401  (fixture: Debian's chromium, headless)


@pytest.fixture(scope="session")
def looked_up(emulator: Any) -> list[dict[str, Any]]:
    """400 labelled people with the emulator's answers beside them (the hook pays each query it sends)."""
    people = labelled_people(400, seed=3)
    token = emulator.create_account(credits=1_000)
    answers = NameLookupHook.for_url(emulator.url, token).gender_batch(
        [{"first_name": p["first_name"], "country": p["country"]} for p in people])
    assert 1_000 - emulator.state.remaining_credits(token) == len(people)
    return [{**person, **result_view(answer), "class": kind}
            for person, answer, kind in zip(people, answers, classes(people), strict=True)]


@pytest.fixture(scope="module")
def api_server(airflow_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """A real ``airflow api-server`` on the session's metadata database (simple auth manager: users
    ``admin`` and ``viewer``), for this directory's module that needs it and stopped after it, so that
    it never runs beside the credits view's own (``tests/plugins/conftest.py``)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    home = Path(os.environ["AIRFLOW_HOME"])
    log = tmp_path_factory.mktemp("approval-api-server") / "api-server.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,viewer:viewer",
        "AIRFLOW__API_AUTH__JWT_SECRET": uuid.uuid4().hex,
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__API__WORKERS": "1",
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
