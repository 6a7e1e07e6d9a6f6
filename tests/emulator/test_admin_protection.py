"""A web page cannot drive the admin endpoints: what a cross-site form, a fetch from another
origin and a DNS-rebinding page send is refused, across a real socket."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import httpx
import pytest

from namelookup_emulator import EmulatorConfig, EmulatorServer
from tests.emulator.wire import assert_problem


def _port(server: EmulatorServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


@pytest.fixture
def account(emulator: EmulatorServer) -> str:
    return emulator.create_account(credits=5)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", None])
@pytest.mark.parametrize("origin", ["http://evil.example", None])
def test_a_cross_site_form_cannot_top_up_or_create_accounts(emulator: EmulatorServer, account: str,
                                                            content_type: str | None, origin: str | None) -> None:
    """What a form or a no-cors fetch of any page sends: a "simple" content type, with its Origin."""
    headers = {k: v for k, v in {"Content-Type": content_type, "Origin": origin}.items() if v is not None}
    token = f"created-by-a-web-page-{secrets.token_hex(4)}"
    top_up = httpx.post(f"{emulator.url}/emulator/accounts/credits", headers=headers,
                        content=json.dumps({"api_token": account, "add": 1_000_000}))
    create = httpx.post(f"{emulator.url}/emulator/accounts", headers=headers,
                        content=json.dumps({"api_token": token, "credits": 1_000_000}))
    for answer in (top_up, create):
        if origin is None:
            body = assert_problem(answer, "content-type-missing")
            assert "application/json" in body["detail"]
        else:
            body = assert_problem(answer, "generic-error", http_status=403)
            assert "evil.example" in body["detail"]
    assert emulator.state.remaining_credits(account) == 5
    with pytest.raises(KeyError):
        emulator.state.account(token)


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:3000", "https://127.0.0.1:{port}",
                                    "http://127.0.0.1.evil.example:{port}"])
def test_a_foreign_origin_is_refused_on_every_admin_route(emulator: EmulatorServer, account: str,
                                                          origin: str) -> None:
    origin = origin.format(port=_port(emulator))
    headers = {"Origin": origin}
    for method, path, body in [("POST", "accounts/credits", {"api_token": account, "add": 50}),
                               ("POST", "accounts", {}), ("PUT", "faults", {"error_500": 1}),
                               ("DELETE", "stats", None), ("GET", "outbox", None),
                               ("PUT", "clock", {"now": "2030-01-01"})]:
        answer = httpx.request(method, f"{emulator.url}/emulator/{path}", json=body, headers=headers)
        assert_problem(answer, "generic-error", http_status=403)
    assert emulator.state.remaining_credits(account) == 5
    assert not emulator.state.faults.config.error_500
    assert not emulator.state.store.clock_frozen


def test_the_emulators_own_origin_may_call(emulator: EmulatorServer, account: str) -> None:
    port = _port(emulator)
    for host, origin in [(f"127.0.0.1:{port}", emulator.url), (f"localhost:{port}", f"http://localhost:{port}"),
                         (f"LOCALHOST:{port}", f"http://localhost:{port}")]:
        answer = httpx.post(f"{emulator.url}/emulator/accounts/credits", json={"api_token": account, "add": 1},
                            headers={"Origin": origin, "Host": host})
        assert answer.status_code == 200, answer.text
    assert emulator.state.remaining_credits(account) == 8


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1.evil.example:{port}",
                                  "localhost.evil.example", "0.0.0.0:{port}", "10.1.2.3:{port}"])
def test_a_foreign_host_is_refused_on_admin_routes(emulator: EmulatorServer, account: str, host: str) -> None:
    """A DNS-rebinding page reaches 127.0.0.1 under its own name: the Host header gives it away."""
    signed_up = f"rebinding.{secrets.token_hex(4)}@example.com"
    emulator.state.signup_limiter.reset()
    assert httpx.post(f"{emulator.url}/v2/sign-up", json={"email": signed_up, "accept_terms": True}).status_code == 200
    headers = {"Host": host.format(port=_port(emulator))}
    outbox = httpx.get(f"{emulator.url}/emulator/outbox", headers=headers)
    assert_problem(outbox, "generic-error", http_status=403)
    assert "activate" not in outbox.text and signed_up not in outbox.text
    assert_problem(httpx.post(f"{emulator.url}/emulator/accounts/credits", json={"api_token": account, "add": 1},
                              headers=headers), "generic-error", http_status=403)
    assert_problem(httpx.delete(f"{emulator.url}/emulator/faults", headers=headers), "generic-error", http_status=403)
    assert emulator.state.remaining_credits(account) == 5


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "127.0.0.1", "localhost:{port}", "127.1.2.3:{port}",
                                  "[::1]:{port}", "LocalHost"])
def test_loopback_hosts_with_any_port_reach_admin_routes(emulator: EmulatorServer, host: str) -> None:
    answer = httpx.get(f"{emulator.url}/emulator/stats", headers={"Host": host.format(port=_port(emulator))})
    assert answer.status_code == 200, answer.text


def test_public_pages_answer_any_host(emulator: EmulatorServer) -> None:
    """Health, docs, the upgrade page, the map and activation links hold nothing to protect."""
    for path in ("health", "docs", "upgrade", "map?name=Anna"):
        assert httpx.get(f"{emulator.url}/emulator/{path}", headers={"Host": "evil.example"}).status_code == 200


@pytest.fixture
def published() -> Iterator[EmulatorServer]:
    with EmulatorServer(EmulatorConfig(public_url="http://names.example.test:9000")) as server:
        yield server


def test_the_host_of_the_public_url_reaches_admin_routes(published: EmulatorServer) -> None:
    token = published.create_account(credits=1)
    for host in ("names.example.test:9000", "NAMES.example.test", f"127.0.0.1:{_port(published)}"):
        answer = httpx.post(f"{published.url}/emulator/accounts/credits", json={"api_token": token, "add": 1},
                            headers={"Host": host, "Origin": "http://names.example.test:9000"})
        assert answer.status_code == 200, (host, answer.text)
    refused = httpx.get(f"{published.url}/emulator/outbox", headers={"Host": "other.example.test"})
    assert refused.status_code == 403 and refused.json()["title"] == "generic-error"
    assert refused.json()["type"].startswith("http://names.example.test:9000/")


def test_with_an_admin_token_a_foreign_host_is_still_refused() -> None:
    config = EmulatorConfig(admin_token="admin-secret-for-tests")
    with EmulatorServer(config) as server:
        admin = {"X-Emulator-Admin-Token": "admin-secret-for-tests"}
        assert httpx.get(f"{server.url}/emulator/stats", headers=admin).status_code == 200
        assert_problem(httpx.get(f"{server.url}/emulator/stats", headers={**admin, "Host": "evil.example"}),
                       "generic-error", http_status=403)


def test_the_admin_helpers_reach_the_admin_routes(emulator: EmulatorServer) -> None:
    """EmulatorServer's and EmulatorProcess's helpers send JSON from loopback, as the tests,
    benchmarks, scale test and demo do."""
    token = emulator.create_account(credits=2)
    assert emulator.top_up(token, 3) == 5
    assert emulator.set_faults(latency_ms=0)["latency_ms"] == 0
    assert emulator.set_faults()["error_500"] == 0
    assert isinstance(emulator.stats()["requests"], int) and isinstance(emulator.outbox(), list)
    assert httpx.delete(f"{emulator.url}/emulator/stats").status_code == 200  # scale_test: DELETE, no body
