"""Shared fixtures: the local Name Lookup emulator and accounts on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from namelookup_emulator import EmulatorServer


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
