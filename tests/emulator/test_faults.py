"""Fault injection as a client sees it, over a real socket, and the counters that record it."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from namelookup_emulator import EmulatorServer, FaultConfig
from tests.emulator.wire import assert_problem, bearer

Factory = Callable[[str | None], httpx.Client]


@pytest.fixture
def admin(client_for: Factory, emulator: EmulatorServer) -> httpx.Client:
    emulator.state.stats.reset()
    return client_for(None)


def _lookup(emulator: EmulatorServer, token: str, body: object = None) -> httpx.Response:
    """One request on a fresh connection, so a dropped one cannot affect the next."""
    with httpx.Client(base_url=emulator.url, headers=bearer(token), timeout=10) as client:
        return client.post("/v2/gender", json=body or {"first_name": "Anna"})


def test_faults_are_off_by_default_and_configurable_over_http(admin: httpx.Client) -> None:
    assert admin.get("/emulator/faults").json() == FaultConfig().to_json()
    settings = {"error_500": 0.1, "error_503": 0.2, "rate_limit_429": 0.3, "retry_after": 0.05,
                "latency_ms": [1, 3], "drop_before": 0.1, "drop_after": 0.5, "seed": 7}
    assert admin.put("/emulator/faults", json=settings).json() == {**FaultConfig().to_json(), **settings}
    assert admin.put("/emulator/faults", json={"error_503": 1}).json() == {**FaultConfig().to_json(), "error_503": 1}
    assert admin.delete("/emulator/faults").json() == FaultConfig().to_json()


@pytest.mark.parametrize("settings", [
    {"error_500": 1.5}, {"error_500": 0.6, "error_503": 0.6}, {"drop_after": -0.1}, {"latency_ms": [5, 1]},
    {"latency_ms": "fast"}, {"retry_after": -1}, {"unknown": 1}, {"seed": "x"}, {"error_500": True},
    {"after_credits": -1}, {"after_credits": 2.5}, {"after_credits": True},
])
def test_invalid_fault_settings_are_refused(admin: httpx.Client, settings: dict[str, object]) -> None:
    assert_problem(admin.put("/emulator/faults", json=settings), "generic-error")
    assert admin.get("/emulator/faults").json() == FaultConfig().to_json()


def test_error_500(emulator: EmulatorServer, admin: httpx.Client, make_account: Callable[..., str]) -> None:
    token = make_account(credits=5)
    admin.put("/emulator/faults", json={"error_500": 1})
    assert_problem(_lookup(emulator, token), "generic-error", http_status=500)
    assert emulator.state.remaining_credits(token) == 5
    assert admin.get("/emulator/stats").json()["faults"]["error_500"] == 1


def test_error_503_is_a_proxy_page(emulator: EmulatorServer, admin: httpx.Client,
                                   make_account: Callable[..., str]) -> None:
    token = make_account(credits=5)
    admin.put("/emulator/faults", json={"error_503": 1})
    response = _lookup(emulator, token)
    assert response.status_code == 503 and response.headers["content-type"].startswith("text/html")
    assert "503 Service Temporarily Unavailable" in response.text
    assert emulator.state.remaining_credits(token) == 5


def test_rate_limit_429_with_fractional_retry_after(emulator: EmulatorServer, admin: httpx.Client,
                                                    make_account: Callable[..., str]) -> None:
    token = make_account(credits=5)
    admin.put("/emulator/faults", json={"rate_limit_429": 1, "retry_after": 0.05})
    response = _lookup(emulator, token)
    assert response.status_code == 429 and response.headers["Retry-After"] == "0.05"
    assert response.json()["title"] == "too-many-requests"
    emulator.state.faults.configure(rate_limit_429=1, retry_after=2)
    assert _lookup(emulator, token).headers["Retry-After"] == "2"
    assert emulator.state.remaining_credits(token) == 5


def test_latency_fixed_and_range(emulator: EmulatorServer, make_account: Callable[..., str]) -> None:
    token = make_account(credits=5)
    emulator.state.faults.configure(latency_ms=150)
    started = time.perf_counter()
    assert _lookup(emulator, token).status_code == 200
    assert time.perf_counter() - started >= 0.15
    emulator.state.faults.configure(latency_ms=(50, 80))
    started = time.perf_counter()
    assert _lookup(emulator, token).status_code == 200
    assert time.perf_counter() - started >= 0.05


def test_drop_before_processing_charges_nothing(emulator: EmulatorServer, admin: httpx.Client,
                                                make_account: Callable[..., str]) -> None:
    token = make_account(credits=5)
    admin.put("/emulator/faults", json={"drop_before": 1})
    with pytest.raises(httpx.TransportError):
        _lookup(emulator, token)
    admin.delete("/emulator/faults")
    assert emulator.state.remaining_credits(token) == 5
    stats = admin.get("/emulator/stats").json()
    assert stats["faults"]["drop_before"] == 1 and stats["credits_charged"] == 0


def test_drop_after_charging_loses_a_paid_answer(emulator: EmulatorServer, admin: httpx.Client,
                                                 make_account: Callable[..., str]) -> None:
    token = make_account(credits=10)
    admin.put("/emulator/faults", json={"drop_after": 1})
    with pytest.raises(httpx.TransportError):
        _lookup(emulator, token, [{"first_name": "Anna"}] * 3)
    admin.delete("/emulator/faults")
    assert _lookup(emulator, token, [{"first_name": "Anna"}] * 3).status_code == 200
    assert emulator.state.remaining_credits(token) == 4
    stats = admin.get("/emulator/stats").json()
    assert stats["faults"]["drop_after"] == 1
    assert stats["answers_lost_after_charge"] == 1 and stats["credits_lost_after_charge"] == 3
    assert stats["credits_charged"] == 6 and stats["queries_processed"] == 6


def test_drop_after_a_refused_request_loses_nothing_paid(emulator: EmulatorServer, admin: httpx.Client,
                                                         make_account: Callable[..., str]) -> None:
    token = make_account(credits=10)
    emulator.state.faults.configure(drop_after=1)
    with pytest.raises(httpx.TransportError):
        _lookup(emulator, token, {"first_name": ""})
    stats = admin.get("/emulator/stats").json()
    assert stats["faults"]["drop_after"] == 1 and stats["answers_lost_after_charge"] == 0


def test_faults_wait_for_the_credits_charged_since_the_stats_reset(
        emulator: EmulatorServer, admin: httpx.Client, make_account: Callable[..., str]) -> None:
    token = make_account(credits=20)
    admin.put("/emulator/faults", json={"error_500": 1, "drop_after": 1, "after_credits": 5})
    assert _lookup(emulator, token, [{"first_name": "Anna"}] * 3).status_code == 200  # 3 charged: under 5
    assert _lookup(emulator, token, [{"first_name": "Anna"}] * 3).status_code == 200  # 3 < 5 when drawn: 6
    assert_problem(_lookup(emulator, token), "generic-error", http_status=500)
    assert emulator.state.remaining_credits(token) == 14
    admin.delete("/emulator/stats")
    admin.put("/emulator/faults", json={"drop_after": 1, "after_credits": 1})
    assert _lookup(emulator, token).status_code == 200  # the reset started the count again
    with pytest.raises(httpx.TransportError):
        _lookup(emulator, token)
    stats = admin.get("/emulator/stats").json()
    assert stats["faults"]["drop_after"] == 1 and stats["credits_charged"] == 2


def test_faults_spare_the_admin_endpoints(emulator: EmulatorServer, admin: httpx.Client) -> None:
    emulator.state.faults.configure(error_500=0.5, drop_before=0.5)
    for _ in range(10):
        assert admin.get("/emulator/stats").status_code == 200


def test_a_seed_repeats_the_same_faults(emulator: EmulatorServer, make_account: Callable[..., str]) -> None:
    token = make_account(credits=100)

    def run() -> list[int]:
        emulator.state.faults.configure(error_500=0.3, error_503=0.3, seed=1234)
        return [_lookup(emulator, token).status_code for _ in range(20)]

    first = run()
    assert first == run()
    assert {200, 500, 503} <= set(first)


def test_shares_are_roughly_honoured_and_counted(emulator: EmulatorServer, admin: httpx.Client,
                                                 make_account: Callable[..., str]) -> None:
    token = make_account(credits=1000)
    emulator.state.faults.configure(error_503=0.25, rate_limit_429=0.25, retry_after=0.01, seed=99)
    with httpx.Client(base_url=emulator.url, headers=bearer(token), timeout=10) as client:
        statuses = [client.post("/v2/gender", json={"first_name": "Anna"}).status_code for _ in range(200)]
    stats = admin.get("/emulator/stats").json()
    assert stats["requests"] == 200
    assert stats["faults"]["error_503"] == statuses.count(503) and 25 <= statuses.count(503) <= 75
    assert stats["faults"]["rate_limit_429"] == statuses.count(429) and 25 <= statuses.count(429) <= 75
    assert stats["responses_by_status"]["200"] == statuses.count(200)
    assert emulator.state.remaining_credits(token) == 1000 - statuses.count(200)
