"""Fixtures of the emulator tests: HTTP clients with fresh accounts."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from namelookup_emulator import EmulatorServer
from tests.emulator.wire import bearer


@pytest.fixture
def signups(emulator: EmulatorServer) -> Iterator[httpx.Client]:
    """An anonymous client; the sign-up attempt limit is forgotten before and after."""
    emulator.state.signup_limiter.reset()
    with httpx.Client(base_url=emulator.url, timeout=10) as client:
        yield client
    emulator.state.signup_limiter.reset()


@pytest.fixture
def client_for(emulator: EmulatorServer) -> Iterator[Callable[[str | None], httpx.Client]]:
    """``client_for(token)``: an httpx client on the emulator, authenticated when a token is given."""
    clients: list[httpx.Client] = []

    def make(token: str | None = None) -> httpx.Client:
        client = httpx.Client(base_url=emulator.url, headers=bearer(token) if token else None, timeout=10)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(client_for: Callable[[str | None], httpx.Client], make_account: Callable[..., str]) -> httpx.Client:
    """A client for a fresh account with 1000 credits; its token is ``client.token``."""
    token = make_account(credits=1000)
    http = client_for(token)
    http.token = token  # type: ignore[attr-defined]
    return http

