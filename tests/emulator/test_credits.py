"""Credit arithmetic, exhaustion, monthly usage and concurrent spending, across a real socket."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import httpx
import pendulum
import pytest

from namelookup_emulator import EmulatorServer
from tests.emulator.wire import assert_problem, bearer, remaining

Factory = Callable[[str | None], httpx.Client]


def _account(client_for: Factory, make_account: Callable[..., str], credits: int) -> httpx.Client:
    return client_for(make_account(credits=credits))


def test_each_call_costs_what_it_reports(client_for: Factory, make_account: Callable[..., str]) -> None:
    client = _account(client_for, make_account, 20)
    single = client.post("/v2/gender", json={"first_name": "Anna"}).json()
    assert single["details"]["credits_used"] == 1 and remaining(client) == 19
    batch = client.post("/v2/gender", json=[{"first_name": "Anna"}, {"full_name": "Bob Dylan"},
                                            {"email": "carl@example.com"}, {"first_name": "Xqzvbn"}]).json()
    assert sum(r["details"]["credits_used"] for r in batch) == 4 and remaining(client) == 15
    origin = client.post("/v2/country-of-origin", json={"first_name": "Anna"}).json()
    assert origin["details"]["credits_used"] == 2 and remaining(client) == 13
    statistic = client.get("/v2/statistic").json()
    assert statistic["details"]["credits_used"] == 0 and statistic["remaining_credits"] == 13


def test_refused_requests_cost_nothing(client_for: Factory, make_account: Callable[..., str]) -> None:
    client = _account(client_for, make_account, 5)
    client.post("/v2/gender", json={"first_name": ""})
    client.post("/v2/gender", json=[{"first_name": "Anna"}, {"first_name": "Bob", "locale": "??"}])
    client.post("/v2/gender", content=b"{", headers={"Content-Type": "application/json"})
    client.post("/v2/gender/nope", json={"first_name": "Anna"})
    client.post("/v2/country-of-origin", json={"first_name": "Anna", "id": 1.5})
    assert remaining(client) == 5


def test_exhaustion_is_limit_exceeded_and_refuses_whole_arrays(client_for: Factory,
                                                               make_account: Callable[..., str]) -> None:
    client = _account(client_for, make_account, 3)
    refused = assert_problem(client.post("/v2/gender", json=[{"first_name": "Anna"}] * 4), "limit-exceeded")
    assert refused["upgrade_url"].startswith("http://127.0.0.1:")
    assert httpx.get(refused["upgrade_url"]).status_code == 200
    assert remaining(client) == 3
    assert client.post("/v2/gender", json=[{"first_name": "Anna"}] * 2).status_code == 200
    assert_problem(client.post("/v2/country-of-origin", json={"first_name": "Anna"}), "limit-exceeded")
    assert remaining(client) == 1
    assert client.post("/v2/gender", json={"first_name": "Anna"}).status_code == 200
    statistic = client.get("/v2/statistic").json()
    assert statistic["remaining_credits"] == 0 and statistic["is_limit_reached"] is True
    assert_problem(client.post("/v2/gender", json={"first_name": "Anna"}), "limit-exceeded")
    assert client.get("/v2/statistic").status_code == 200


def test_top_up_restores_service(client_for: Factory, make_account: Callable[..., str],
                                 emulator: EmulatorServer) -> None:
    token = make_account(credits=0)
    client = client_for(token)
    assert_problem(client.post("/v2/gender", json={"first_name": "Anna"}), "limit-exceeded")
    assert emulator.top_up(token, 2) == 2
    assert client.post("/v2/gender", json={"first_name": "Anna"}).status_code == 200
    assert remaining(client) == 1


@pytest.fixture
def clock(emulator: EmulatorServer, client_for: Factory) -> Iterator[Callable[[pendulum.DateTime | None], None]]:
    """``clock(moment)`` freezes the emulator's month clock over HTTP; real time again afterwards."""
    admin = client_for(None)

    def move(moment: pendulum.DateTime | None) -> None:
        if moment is None:
            assert admin.delete("/emulator/clock").json()["frozen"] is False
        else:
            assert admin.put("/emulator/clock", json={"now": moment.to_iso8601_string()}).json()["frozen"]

    yield move
    emulator.state.store.freeze_clock(None)


def test_usage_last_month_is_tracked(client_for: Factory, make_account: Callable[..., str],
                                     clock: Callable[[pendulum.DateTime | None], None]) -> None:
    client = _account(client_for, make_account, 50)
    now = pendulum.now("UTC")
    last_month = now.start_of("month").subtract(days=10)
    fresh = client.get("/v2/statistic").json()
    assert fresh["usage_last_month"] == {"date": last_month.format("YYYY-MM"), "credits_used": 0}

    clock(last_month)
    client.post("/v2/gender", json=[{"first_name": "Anna"}] * 3)
    client.post("/v2/country-of-origin", json={"first_name": "Anna"})
    clock(None)
    client.post("/v2/gender", json={"first_name": "Anna"})

    statistic = client.get("/v2/statistic").json()
    assert statistic["usage_last_month"] == {"date": last_month.format("YYYY-MM"), "credits_used": 5}
    assert statistic["remaining_credits"] == 44


def test_usage_last_month_can_be_seeded(client_for: Factory, make_account: Callable[..., str]) -> None:
    token = make_account(credits=10)
    admin = client_for(None)
    month = pendulum.now("UTC").start_of("month").subtract(months=1).format("YYYY-MM")
    seeded = admin.post("/emulator/accounts/usage", json={"api_token": token, "month": month, "credits_used": 77})
    assert seeded.status_code == 200
    assert client_for(token).get("/v2/statistic").json()["usage_last_month"] == {"date": month, "credits_used": 77}
    assert_problem(admin.post("/emulator/accounts/usage", json={"api_token": token, "month": "2024-13"}),
                   "generic-error")


def test_a_new_month_restores_the_allowance(client_for: Factory, make_account: Callable[..., str],
                                            clock: Callable[[pendulum.DateTime | None], None]) -> None:
    client = _account(client_for, make_account, 4)
    client.post("/v2/gender", json=[{"first_name": "Anna"}] * 4)
    assert client.get("/v2/statistic").json()["is_limit_reached"] is True
    next_month = pendulum.now("UTC").start_of("month").add(months=1, days=2)
    clock(next_month)
    statistic = client.get("/v2/statistic").json()
    assert statistic["remaining_credits"] == 4
    assert statistic["usage_last_month"] == {"date": pendulum.now("UTC").format("YYYY-MM"), "credits_used": 4}


def test_fifty_threads_never_overdraw_thirty_credits(emulator: EmulatorServer,
                                                     make_account: Callable[..., str]) -> None:
    token = make_account(credits=30)
    start = threading.Barrier(50)
    statuses: list[int] = []
    lock = threading.Lock()

    def spend() -> None:
        with httpx.Client(base_url=emulator.url, headers=bearer(token), timeout=30) as client:
            start.wait()
            status = client.post("/v2/gender", json={"first_name": "Anna"}).status_code
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=spend) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] * 30 + [401] * 20
    assert emulator.state.remaining_credits(token) == 0


async def test_concurrent_arrays_are_charged_all_or_nothing(emulator: EmulatorServer,
                                                            make_account: Callable[..., str]) -> None:
    token = make_account(credits=30)
    async with httpx.AsyncClient(base_url=emulator.url, headers=bearer(token), timeout=30,
                                 limits=httpx.Limits(max_connections=50)) as client:
        responses = await asyncio.gather(*(
            client.post("/v2/gender", json=[{"first_name": "Anna", "id": i}] * 4) for i in range(40)))
    ok = [r for r in responses if r.status_code == 200]
    assert len(ok) == 7
    assert all(r.status_code == 401 and r.json()["title"] == "limit-exceeded" for r in responses if r not in ok)
    assert emulator.state.remaining_credits(token) == 2
