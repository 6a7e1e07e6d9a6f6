"""``make airflow2-deployment``'s clean-up, checked without Airflow 2.11: a stand-in ``airflow`` command.

The deployment is brought up with a venv whose ``bin/airflow`` answers ``db migrate`` and
``users create`` and otherwise forks a grandchild into a process group of its own (as
Airflow's task runner and gunicorn's workers do) and waits; the real emulator starts beside
it. The start then fails as a real one can (the webserver never answers; a component dies),
and everything it started must be gone, its metadata database with it.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from scale_test.airflow2 import Airflow2Deployment

# scale_test.airflow2 reaches PostgreSQL through psycopg2 (the [test] extra): imported in the tests, so that
# the version matrix's venvs, which lack it, still collect this file (as tests/test_scale_harness.py does)

FAKE_AIRFLOW = """#!{python}
import os, subprocess, sys, time
if sys.argv[1:3] in (["db", "migrate"], ["users", "create"]):
    raise SystemExit(0)
if sys.argv[1] == {dies!r}:
    raise SystemExit(3)
subprocess.Popen([sys.executable, "-c", "import os, time; os.setpgid(0, 0); time.sleep(120)"])
print("started", flush=True)
time.sleep(120)
"""


def fake_venv(where: Path, dies: str = "") -> Path:
    (where / "bin").mkdir(parents=True)
    airflow = where / "bin" / "airflow"
    airflow.write_text(FAKE_AIRFLOW.format(python=sys.executable, dies=dies))
    airflow.chmod(0o755)
    return where


def database_exists(deployment: Airflow2Deployment) -> bool:
    conn = deployment.server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (deployment.meta_db,))
            return cur.fetchone() is not None
    finally:
        conn.close()


@pytest.mark.database
@pytest.mark.usefixtures("postgres_warehouse")  # skips, or fails in CI, when PostgreSQL is not reachable
@pytest.mark.parametrize(("dies", "error", "message"), [
    ("", TimeoutError, "the webserver, the scheduler and the triggerer"),  # the webserver never answers
    ("scheduler", RuntimeError, r"scheduler \(code 3\)"),
])
def test_a_failed_start_stops_everything_it_started(tmp_path: Path, dies: str, error: type[Exception],
                                                    message: str) -> None:
    from scale_test.airflow2 import Airflow2Deployment, Options

    deployment = Airflow2Deployment(tmp_path / "run", fake_venv(tmp_path / "venv", dies),
                                    Options(start_timeout=3, redis_db=12))
    logged: list[str] = []
    with pytest.raises(error, match=message):
        deployment.start(logged.append)
    assert len(deployment.processes.sessions) == 5 and not deployment.processes.started  # emulator and 4 of Airflow
    assert deployment.processes.leftovers() == []
    assert not database_exists(deployment)
    assert not any("processes left" in line for line in logged), logged  # the stop itself got them all
    assert (deployment.log_dir / "emulator.log").exists() and (deployment.log_dir / "scheduler.log").exists()


@pytest.mark.database
@pytest.mark.usefixtures("postgres_warehouse")
def test_ctrl_c_while_starting_stops_everything_started(tmp_path: Path) -> None:
    from scale_test.airflow2 import Airflow2Deployment, Options

    deployment = Airflow2Deployment(tmp_path / "run", fake_venv(tmp_path / "venv"), Options(redis_db=12))

    def interrupted_once_all_started(message: str) -> None:
        if message.startswith("started emulator"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        deployment.start(interrupted_once_all_started)
    assert len(deployment.processes.sessions) == 5 and deployment.processes.leftovers() == []
    assert not database_exists(deployment)


def test_the_environment_holds_nothing_of_this_interpreters_venv(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from scale_test.airflow2 import Airflow2Deployment

    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("VIRTUAL_ENV", "/work/main/.venv")
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    env = Airflow2Deployment(tmp_path, tmp_path / "venv").env()
    assert "PYTHONPATH" not in env and "VIRTUAL_ENV" not in env
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["PATH"].split(":")[0] == str(tmp_path / "venv" / "bin")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
    assert env["AIRFLOW__CELERY__BROKER_URL"] == "redis://127.0.0.1:6379/12"


def test_the_expected_credits_count_each_distinct_query_once(tmp_path: Path) -> None:
    """Gender queries by name and country (1 credit), origin queries by name alone (2 credits), invalid rows
    free; the credit gate's names are the ones its DAG file asks about."""
    from scale_test.airflow2 import (
        DAG_FILES,
        GATE_DAG_ID,
        GATE_NAMES,
        build_warehouse,
        expected_credits,
        expected_credits_of_gate,
    )

    pairs = build_warehouse(tmp_path / "warehouse.db", 400)
    with sqlite3.connect(tmp_path / "warehouse.db") as db:
        assert db.execute("SELECT COUNT(*) FROM customers").fetchone() == (400,)
    assert expected_credits(pairs + pairs) == expected_credits(pairs)
    assert expected_credits([("Anna", "DE"), (" anna", "de"), ("Anna", None), ("", "DE"), ("x" * 51, None)]) == 4
    gate = DAG_FILES[GATE_DAG_ID].read_text()
    assert all(f'"{name}"' in gate for name in GATE_NAMES) and expected_credits_of_gate() == len(GATE_NAMES)
