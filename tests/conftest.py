"""Shared fixtures: the local Name Lookup emulator and accounts on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_1_PLUS
from namelookup_emulator import EmulatorServer

# Left out where they cannot run (make test-compat's af2.11 and af3.0 targets): the credits view, registered
# from Airflow 3.1 on (tests/plugins/test_older_airflow.py checks it stays away before), and on Airflow 2
# the Task SDK's structured task logs.
NEED_AIRFLOW_3_1 = ["plugins/test_credits_*.py", "plugins/test_view_errors.py", "plugins/auth_manager.py"]
NEED_AIRFLOW_3 = ["operators/test_warehouse_concurrency.py", "operators/test_xcom_failure_paths.py"]
collect_ignore_glob = ([] if AIRFLOW_V_3_1_PLUS else NEED_AIRFLOW_3_1) + ([] if AIRFLOW_V_3_0_PLUS else NEED_AIRFLOW_3)


@pytest.fixture(scope="session")
def emulator() -> Iterator[EmulatorServer]:
    """One emulator for the session: uvicorn in a thread on a free loopback port, in-memory DB."""
    with EmulatorServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _emulator_faults_off(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test that uses the emulator starts and ends with fault injection off."""
    if "emulator" not in request.fixturenames:
        yield
        return
    server: EmulatorServer = request.getfixturevalue("emulator")
    server.state.faults.reset()
    yield
    server.state.faults.reset()


@pytest.fixture
def make_account(emulator: EmulatorServer) -> Callable[..., str]:
    """``make_account(credits=100) -> token``: an activated account, made through the admin API."""

    def make(credits: int = 100) -> str:
        return emulator.create_account(credits=credits)

    return make
