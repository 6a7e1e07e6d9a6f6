"""The hooks across a real socket against the emulator, configured the way users do it:
an ``AIRFLOW_CONN_NAMELOOKUP_DEFAULT`` environment variable."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from airflow_provider_namelookup.api import RetryPolicy
from airflow_provider_namelookup.errors import (
    NameLookupAuthError,
    NameLookupEndpointNotFound,
    NameLookupError,
    NameLookupLimitExceeded,
    NameLookupServerError,
    NameLookupValidationError,
)
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook, NameLookupHook

pytestmark = pytest.mark.compat


@pytest.fixture
def hook(namelookup: Any) -> Iterator[NameLookupHook]:
    with NameLookupHook() as hook:
        yield hook


def test_every_endpoint_through_the_connection(hook: NameLookupHook, namelookup: Any) -> None:
    single = hook.gender(first_name="Theresa", country="DE", id=7)
    assert (single["gender"], single["input"]["id"], single["details"]["country"]) == ("female", 7, "DE")
    assert hook.gender(full_name="John Smith")["last_name"] == "Smith"
    assert hook.gender(email="theresa.miller14@example.com")["first_name"] == "Theresa"
    origin = hook.country_of_origin(first_name="Giulia")
    assert origin["country_of_origin"][0]["country"] == "IT" and origin["details"]["credits_used"] == 2
    statistic = hook.get_statistic()
    assert statistic["remaining_credits"] == 100 - 5 and statistic["details"]["credits_used"] == 0
    assert hook.test_connection() == (True, "Connected to the Name Lookup Service: 95 credits remaining")
    assert hook.counters.credits_used == 5


def test_gender_batch_over_the_wire(hook: NameLookupHook, namelookup: Any, emulator: Any) -> None:
    namelookup.set_credits(1000)
    before = emulator.stats()["requests"]
    names = [f"Name{i}" for i in range(230)] + [{"first_name": "Andrea", "country": "IT", "id": "x"}]
    results = hook.gender_batch(names)
    assert [r["input"]["first_name"] for r in results[:230]] == names[:230]
    assert results[-1]["input"] == {"first_name": "Andrea", "country": "IT", "id": "x"}
    assert results[-1]["gender"] == "male"
    assert emulator.stats()["requests"] - before == 3  # 100 + 100 + 31
    assert namelookup.remaining() == 1000 - 231


def test_sign_up_activation_then_lookup(emulator: Any) -> None:
    account = NameLookupHook.sign_up("new.user@example.org", accept_terms=True, locale="de",
                                     base_url=emulator.url)
    assert account["status"] == "awaiting_activation" and account["free_requests_per_month"] == 100
    token = account["api_token"]
    pending = NameLookupHook.for_url(emulator.url, token)
    with pytest.raises(NameLookupAuthError):
        pending.get_statistic()
    (mail,) = emulator.outbox("new.user@example.org")
    assert httpx.get(mail["link"]).status_code == 200
    assert pending.get_statistic()["remaining_credits"] == 100
    with pytest.raises(NameLookupValidationError, match="email-already-registered"):
        NameLookupHook.sign_up("new.user@example.org", accept_terms=True, base_url=emulator.url)


def test_sign_up_on_a_hook_uses_its_connections_host(namelookup: Any, emulator: Any) -> None:
    """The obvious call (a hook made for the emulator's connection) signs up at the emulator,
    not at the public service; sync and async alike."""
    with NameLookupHook() as hook:
        account = hook.sign_up("hook.user@example.org", accept_terms=True)
        assert account["status"] == "awaiting_activation"
        assert isinstance(hook.get_conn(), httpx.Client) and hook.get_conn() is hook.client
        assert str(hook.get_conn().base_url).rstrip("/") == emulator.url

    async def async_sign_up() -> dict[str, Any]:
        async with NameLookupAsyncHook() as hook:
            assert await hook.get_async_conn() is await hook.aclient()
            return await hook.sign_up("async.hook.user@example.org", accept_terms=True)

    assert asyncio.run(async_sign_up())["status"] == "awaiting_activation"
    assert emulator.outbox("hook.user@example.org") and emulator.outbox("async.hook.user@example.org")
    # The class-level call still works without a connection, at the base_url it is given.
    asyncio.run(NameLookupAsyncHook.sign_up("class.user@example.org", accept_terms=True, base_url=emulator.url))
    assert emulator.outbox("class.user@example.org")


def test_service_errors_over_the_wire(emulator: Any, make_account: Any) -> None:
    with pytest.raises(NameLookupAuthError, match="invalid-auth-token"):
        NameLookupHook.for_url(emulator.url, "not-a-token").get_statistic()
    with pytest.raises(NameLookupEndpointNotFound):
        NameLookupHook.for_url(emulator.url + "/nowhere", make_account()).get_statistic()
    poor = NameLookupHook.for_url(emulator.url, make_account(credits=1))
    poor.gender(first_name="Anna")
    with pytest.raises(NameLookupLimitExceeded) as info:
        poor.gender(first_name="Ben")
    assert info.value.http_status == 401 and info.value.upgrade_url
    with pytest.raises(NameLookupLimitExceeded):
        poor.country_of_origin(first_name="Ben")


def test_retries_through_injected_faults(emulator: Any, make_account: Any) -> None:
    hook = NameLookupHook.for_url(emulator.url, make_account(credits=1000),
                                  retry=RetryPolicy(max_retries=8, backoff_base=0.005))
    emulator.set_faults(error_500=0.2, error_503=0.2, rate_limit_429=0.1, retry_after=0.01, seed=3)
    results = hook.gender_batch([f"Name{i}" for i in range(400)])
    assert len(results) == 400 and hook.counters.retries > 0
    assert hook.counters.credits_used == 400 and emulator.state.remaining_credits(hook.settings.token) == 600


def test_answers_lost_after_charge_are_counted(emulator: Any, make_account: Any) -> None:
    token = make_account(credits=1000)
    hook = NameLookupHook.for_url(emulator.url, token, batch_size=25,
                                  retry=RetryPolicy(max_retries=10, backoff_base=0.005))
    lost_before = emulator.stats()["credits_lost_after_charge"]  # the emulator is shared by the session
    emulator.set_faults(drop_after=0.3, drop_before=0.1, seed=11)
    results = hook.gender_batch([f"Name{i}" for i in range(500)])
    assert len(results) == 500
    lost = emulator.stats()["credits_lost_after_charge"] - lost_before
    spent = 1000 - emulator.state.remaining_credits(token)
    assert lost > 0 and spent == 500 + lost
    assert hook.counters.queries_maybe_charged_twice >= lost


async def test_async_hook_over_the_wire(namelookup: Any, emulator: Any) -> None:
    namelookup.set_credits(1000)
    async with NameLookupAsyncHook(max_concurrency=4) as hook:
        results = await hook.gender_batch([f"Name{i}" for i in range(450)])
        origin = await hook.country_of_origin(full_name="Giulia Rossi")
        statistic = await hook.get_statistic()
    assert len(results) == 450 and origin["country_of_origin"][0]["country"] == "IT"
    assert statistic["remaining_credits"] == 1000 - 450 - 2


def test_token_never_in_logs_of_failing_calls(emulator: Any, make_account: Any, caplog: pytest.LogCaptureFixture,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    token = make_account(credits=1)
    os.environ["AIRFLOW_CONN_NL_SECRET"] = json.dumps({"conn_type": "namelookup", "host": emulator.url,
                                                       "password": token, "extra": {"max_retries": 2}})
    try:
        emulator.set_faults(error_503=1.0)
        with NameLookupHook("nl_secret") as hook, pytest.raises(NameLookupError) as info:
            hook.get_statistic()
        emulator.set_faults()
        with NameLookupHook("nl_secret") as hook:
            hook.gender(first_name="Anna")
            with pytest.raises(NameLookupLimitExceeded) as limit:
                hook.gender_batch(["Ben", "Carla"])
            asyncio.run(NameLookupAsyncHook("nl_secret").test_connection())
    finally:
        os.environ.pop("AIRFLOW_CONN_NL_SECRET")
    out = capsys.readouterr()
    for text in (caplog.text, out.out, out.err, str(info.value), repr(limit.value), str(limit.value)):
        assert token not in text


async def test_once_a_lookup_gives_up_for_good_the_others_send_nothing_more(
        emulator: Any, make_account: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 48, item 6: every request fails (HTTP 503) at 200-500 ms. Once one lookup has given up
    after its four attempts, the others end at once: those waiting for a slot or before a retry send
    nothing more, and a request on its way is waited for (at most its 500 ms) but not sent again.
    Before, their remaining attempts went out one at a time (the failures had brought the requests
    allowed in flight down to one or two): seconds more for nothing (45 s for a whole try in the audit)."""
    token = make_account(credits=1_000)
    hook = NameLookupAsyncHook.for_url(emulator.url, token, max_concurrency=8,
                                       retry=RetryPolicy(max_retries=3, backoff_base=0.01))
    loop = asyncio.get_running_loop()
    gave_up: list[float] = []
    drive = hook.run

    async def run(*args: Any) -> Any:  # the moment the first lookup gives up, seen from the hook's own driver
        try:
            return await drive(*args)
        except NameLookupServerError:
            gave_up.append(loop.time())
            raise

    hook.run = run  # type: ignore[method-assign]
    emulator.set_faults(error_503=1.0, latency_ms=[200, 500], seed=5)
    async with hook:
        with pytest.raises(NameLookupServerError, match="gave up after 4 attempts"):
            async for _ in hook.iter_country_of_origin([f"Name{i:02d}" for i in range(20)]):
                pass
    ended = loop.time()
    emulator.set_faults()
    assert ended - gave_up[0] < 0.8, f"{ended - gave_up[0]:.1f} s after the first lookup gave up"
    assert "Another call failed too" not in caplog.text  # a last attempt on its way failing alike is no news
