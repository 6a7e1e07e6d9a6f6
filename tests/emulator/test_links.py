"""Links come from configuration, not from the request: the activation link, ``docs_url``,
``upgrade_url``, the map URL and every problem ``type`` name the listening address or the
configured public URL, whatever Host or X-Forwarded-* header a request sends."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator

import httpx
import pytest

from namelookup_emulator import EmulatorConfig, EmulatorProcess, EmulatorServer
from namelookup_emulator.links import PUBLIC_URL_ENV
from tests.emulator.wire import bearer

FOREIGN = {"Host": "evil.example:666", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https",
           "X-Forwarded-Port": "666", "Forwarded": "host=evil.example;proto=https"}


def _links(url: str, token: str, headers: dict[str, str]) -> list[str]:
    """Every link the emulator writes, asked for with ``headers``."""
    email = f"links.{secrets.token_hex(4)}@example.com"
    with httpx.Client(base_url=url, headers=headers, timeout=10) as client:
        account = client.post("/v2/sign-up", json={"email": email, "accept_terms": True}).json()
        outbox = httpx.get(f"{url}/emulator/outbox", params={"email": email}).json()
        origin = client.post("/v2/country-of-origin", json={"first_name": "Giulia"}, headers=bearer(token)).json()
        httpx.post(f"{url}/emulator/accounts/credits", json={"api_token": token, "remaining": 0})
        limit = client.post("/v2/gender", json={"first_name": "Anna"}, headers=bearer(token)).json()
        invalid = client.post("/v2/gender", content=b"{", headers={"Content-Type": "application/json"}).json()
        missing = client.get("/v2/nothing-here").json()
        upgrade = client.get("/emulator/upgrade").text
    assert limit["title"] == "limit-exceeded"
    upgrade_links = [word for word in upgrade.split() if word.startswith("http")]
    assert upgrade_links
    return [account["docs_url"], outbox[0]["link"], origin["country_of_origin_map_url"], limit["upgrade_url"],
            limit["type"], invalid["type"], missing["type"], *upgrade_links,
            *(line.rsplit(" ", 1)[-1] for line in outbox[0]["body"].splitlines() if "http" in line)]


def test_a_foreign_host_does_not_move_the_links(emulator: EmulatorServer) -> None:
    emulator.state.signup_limiter.reset()
    token = emulator.create_account(credits=10)
    links = _links(emulator.url, token, FOREIGN)
    assert links and all(link.startswith(f"{emulator.url}/") for link in links), links


def test_a_foreign_host_does_not_move_the_links_of_injected_faults(emulator: EmulatorServer) -> None:
    token = emulator.create_account(credits=10)
    for fault in ("error_500", "rate_limit_429"):
        emulator.set_faults(**{fault: 1})
        answer = httpx.get(f"{emulator.url}/v2/statistic", headers={**bearer(token), **FOREIGN}).json()
        assert answer["type"].startswith(f"{emulator.url}/"), answer
    emulator.set_faults(token_max_rps=0.001)  # the first request passes, the second is refused
    httpx.get(f"{emulator.url}/v2/statistic", headers=bearer(token))
    answer = httpx.get(f"{emulator.url}/v2/statistic", headers={**bearer(token), **FOREIGN}).json()
    assert answer["title"] == "too-many-requests" and answer["type"].startswith(f"{emulator.url}/"), answer


@pytest.mark.parametrize("public_url", ["https://names.example.test", "https://names.example.test/emu/",
                                        "http://[2001:db8::5]:8080/a/b"])
def test_links_name_the_public_url_when_one_is_configured(public_url: str) -> None:
    with EmulatorServer(EmulatorConfig(public_url=public_url)) as server:
        token = server.create_account(credits=10)
        links = _links(server.url, token, FOREIGN)
    base = public_url.rstrip("/")
    assert all(link.startswith(f"{base}/") for link in links), links
    assert f"{base}/emulator/docs" in links


@pytest.mark.parametrize("bad", ["names.example.test", "ftp://names.example.test", "http://", "http://x/?a=1",
                                 "http://x/#top", "http://user:pw@x", "http://x:99999", "http://ex ample.test",
                                 "javascript:alert(1)"])
def test_a_public_url_must_be_a_plain_http_url(bad: str) -> None:
    with pytest.raises(ValueError, match="public URL"):
        EmulatorConfig(public_url=bad)


def _docs_url(process: EmulatorProcess) -> str:
    email = f"cli.{secrets.token_hex(4)}@example.com"
    answer = httpx.post(f"{process.url}/v2/sign-up", json={"email": email, "accept_terms": True},
                        headers={"Host": "evil.example"})
    return str(answer.json()["docs_url"])


@pytest.fixture
def no_public_url_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    monkeypatch.delenv(PUBLIC_URL_ENV, raising=False)
    yield lambda value: monkeypatch.setenv(PUBLIC_URL_ENV, value)


def test_the_cli_takes_the_public_url_from_its_flag_or_the_environment(
        no_public_url_env: Callable[[str], None]) -> None:
    with EmulatorProcess() as process:
        assert _docs_url(process) == f"{process.url}/emulator/docs"
    no_public_url_env("http://from-env.example.test:8000")
    with EmulatorProcess() as process:
        assert _docs_url(process) == "http://from-env.example.test:8000/emulator/docs"
    with EmulatorProcess(["--public-url", "https://from-flag.example.test/"]) as process:
        assert _docs_url(process) == "https://from-flag.example.test/emulator/docs"


def test_the_cli_refuses_a_bad_public_url(capsys: pytest.CaptureFixture[str]) -> None:
    from namelookup_emulator.cli import main

    assert main(["--port", "0", "--public-url", "ftp://x"]) == 2
    assert "public URL" in capsys.readouterr().err


def test_forwarded_headers_do_not_change_the_client_address(emulator: EmulatorServer) -> None:
    """The sign-up limit counts per client address; X-Forwarded-For from any local process must not reset it."""
    emulator.state.signup_limiter.configure(max_attempts=1, window_seconds=60)
    try:
        for number in range(2):
            answer = httpx.post(f"{emulator.url}/v2/sign-up",
                                json={"email": f"fwd.{secrets.token_hex(4)}@example.com", "accept_terms": True},
                                headers={"X-Forwarded-For": f"203.0.113.{number}"})
            assert answer.status_code == (200 if number == 0 else 429), answer.text
    finally:
        emulator.state.signup_limiter.configure(max_attempts=20, window_seconds=600)


def test_the_served_docs_say_where_links_point_and_who_may_call(emulator: EmulatorServer) -> None:
    docs = httpx.get(f"{emulator.url}/emulator/docs").text
    for decision in ("--public-url", PUBLIC_URL_ENV, "Links come from configuration", "``Origin``",
                     "``Host`` names this machine", "application/json", "--header-timeout", "--body-timeout",
                     "408", "client_disconnects", "LDH", "ASCII only", "case-folded with"):
        assert decision in docs, decision
