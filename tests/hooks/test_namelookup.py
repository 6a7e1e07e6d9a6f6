"""NameLookupHook and NameLookupAsyncHook against in-process fakes (httpx.MockTransport).

Edge cases only: the same hooks are tested across a real socket against the emulator
in tests/test_hook_emulator.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from airflow_provider_namelookup.api import RawResponse, RetryPolicy, decode_json
from airflow_provider_namelookup.errors import (
    STATUS_CLASSES,
    STATUS_HTTP,
    NameLookupAuthError,
    NameLookupConnectionError,
    NameLookupLimitExceeded,
    NameLookupRateLimited,
    NameLookupServerError,
    NameLookupValidationError,
)
from airflow_provider_namelookup.hooks import sync as sync_hook_module
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook, NameLookupHook
from airflow_provider_namelookup.hooks.settings import ClientSettings
from airflow_provider_namelookup.models import result_view

TOKEN = "tok-6d1f0c2e-very-secret"
FAST = RetryPolicy(max_retries=3, backoff_base=0.001, backoff_max=0.01)


def problem(status_id: str, status: int | None = None) -> httpx.Response:
    status = status or STATUS_HTTP.get(status_id, 400)
    return httpx.Response(status, json={"status": status, "title": status_id,
                                        "type": f"https://svc/problem-details/{status_id}",
                                        "detail": f"{status_id} happened"})


def echo_result(query: dict[str, Any]) -> dict[str, Any]:
    return {"input": query, "gender": "female", "probability": 0.9, "result_found": True,
            "first_name": query.get("first_name"), "details": {"credits_used": 1, "samples": 3}}


class Service:
    """A scripted service: answers queued responses first, then echoes lookups."""

    def __init__(self, script: list[httpx.Response | Exception] | None = None,
                 max_batch: int = 100, shuffle: bool = False) -> None:
        self.script = list(script or [])
        self.max_batch = max_batch
        self.shuffle = shuffle
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.script:
            item = self.script.pop(0)
            if isinstance(item, Exception):
                raise item
            return item
        body = json.loads(request.content) if request.content else None
        if request.url.path == "/v2/statistic":
            return httpx.Response(200, json={"remaining_credits": 12, "is_limit_reached": False,
                                             "details": {"credits_used": 0}})
        if isinstance(body, list):
            if len(body) > self.max_batch:
                return problem("too-many-queries")
            results = [echo_result(q) for q in body]
            if self.shuffle:
                random.Random(7).shuffle(results)
            return httpx.Response(200, json=results)
        return httpx.Response(200, json=echo_result(body))

    @property
    def batch_sizes(self) -> list[int]:
        return [len(json.loads(r.content)) for r in self.requests if r.content.startswith(b"[")]


def make_hook(service: Callable[[httpx.Request], httpx.Response], **kwargs: Any) -> NameLookupHook:
    return NameLookupHook.for_url("http://svc.test", TOKEN, transport=httpx.MockTransport(service),
                                  retry=kwargs.pop("retry", FAST), **kwargs)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []
    monkeypatch.setattr(sync_hook_module.time, "sleep", recorded.append)
    return recorded


@pytest.mark.parametrize("status_id", sorted(STATUS_HTTP))
def test_every_service_error_raises_its_class(status_id: str, sleeps: list[float]) -> None:
    service = Service([problem(status_id)] * 10)
    with make_hook(service) as hook, pytest.raises(STATUS_CLASSES[status_id]) as info:
        hook.gender(first_name="Anna")
    assert info.value.status_id == status_id
    assert info.value.http_status == STATUS_HTTP[status_id]
    expected_attempts = FAST.max_retries + 1 if STATUS_HTTP[status_id] == 429 else 1
    assert len(service.requests) == expected_attempts


def test_5xx_is_retried_until_success(sleeps: list[float]) -> None:
    service = Service([httpx.Response(503, text="busy"), problem("http-500", 500)])
    with make_hook(service) as hook:
        assert hook.gender(first_name="Anna")["gender"] == "female"
    assert len(service.requests) == 3
    assert len(sleeps) == 2 and all(0 < s <= 0.01 for s in sleeps)
    assert hook.counters.retries == 2


def test_5xx_gives_up_after_max_retries(sleeps: list[float]) -> None:
    service = Service([httpx.Response(500, text="<html>oops</html>")] * 10)
    with make_hook(service) as hook, pytest.raises(NameLookupServerError):
        hook.get_statistic()
    assert len(service.requests) == FAST.max_retries + 1


def test_limit_exceeded_and_validation_errors_are_never_retried(sleeps: list[float]) -> None:
    for status_id in ("limit-exceeded", "invalid-country-code", "generic-error", "invalid-auth-token"):
        service = Service([problem(status_id)] * 5)
        with make_hook(service) as hook, pytest.raises(STATUS_CLASSES[status_id]):
            hook.gender(first_name="Anna")
        assert len(service.requests) == 1, status_id
    assert sleeps == []


def test_transport_errors_are_retried_and_counted(sleeps: list[float]) -> None:
    service = Service([httpx.ConnectError("refused"), httpx.ReadTimeout("slow"),
                       httpx.RemoteProtocolError("dropped")])
    with make_hook(service) as hook:
        results = hook.gender_batch(["Anna", "Ben"])
    assert [r["input"]["first_name"] for r in results] == ["Anna", "Ben"]
    assert len(service.requests) == 4
    # The read timeout and the dropped connection happened after sending: maybe charged.
    assert hook.counters.queries_maybe_charged_twice == 4


def test_transport_errors_give_up_with_a_connection_error(sleeps: list[float]) -> None:
    service = Service([httpx.ConnectError("refused")] * 10)
    with make_hook(service) as hook, pytest.raises(NameLookupConnectionError) as info:
        hook.get_statistic()
    assert info.value.retryable and not info.value.maybe_processed
    assert len(service.requests) == FAST.max_retries + 1


def test_retry_after_is_honoured(sleeps: list[float]) -> None:
    limited = httpx.Response(429, headers={"Retry-After": "0.25"}, json={"title": "rate-limited"})
    service = Service([limited, limited])
    with make_hook(service) as hook:
        hook.get_statistic()
    assert sleeps == [0.25, 0.25]


def test_retry_after_longer_than_allowed_raises_at_once(sleeps: list[float]) -> None:
    service = Service([httpx.Response(429, headers={"Retry-After": "3600"}, json={})] * 3)
    policy = RetryPolicy(max_retries=3, max_retry_after=60)
    with make_hook(service, retry=policy) as hook, pytest.raises(NameLookupRateLimited) as info:
        hook.get_statistic()
    assert info.value.retry_after == 3600 and sleeps == [] and len(service.requests) == 1


def test_backoff_grows_and_is_bounded() -> None:
    policy = RetryPolicy(max_retries=10, backoff_base=1, backoff_max=8, rng=random.Random(1))
    err = NameLookupServerError("http-503", "busy", http_status=503)
    delays = [policy.delay(n, err) for n in range(1, 11)]
    assert all(d is not None for d in delays)
    assert 0.5 <= delays[0] <= 1 and 4 <= delays[-1] <= 8  # type: ignore[operator]
    assert policy.delay(11, err) is None


def test_batches_are_at_most_batch_size_and_results_in_input_order() -> None:
    service = Service(shuffle=True)
    names = [f"name{i}" for i in range(250)]
    with make_hook(service) as hook:
        results = hook.gender_batch(names)
    assert service.batch_sizes == [100, 100, 50]
    assert [r["input"]["first_name"] for r in results] == names
    assert all("id" not in r["input"] for r in results)  # private matching tags are removed
    assert hook.counters.credits_used == 250


def test_caller_ids_are_kept_and_used_for_matching() -> None:
    service = Service(shuffle=True)
    queries = [{"first_name": f"n{i}", "id": 1000 + i} for i in range(20)] + ["plain"]
    with make_hook(service) as hook:
        results = hook.gender_batch(queries)
    assert [r["input"].get("id") for r in results] == [*range(1000, 1020), None]
    assert results[-1]["input"]["first_name"] == "plain"


def test_duplicate_ids_fall_back_to_position() -> None:
    service = Service()
    with make_hook(service) as hook:
        results = hook.gender_batch([{"first_name": "a", "id": 1}, {"first_name": "b", "id": 1}])
    assert [r["input"]["first_name"] for r in results] == ["a", "b"]


def test_too_many_queries_splits_and_remembers_the_size() -> None:
    service = Service(max_batch=30)
    with make_hook(service, batch_size=100) as hook:
        results = hook.gender_batch([f"n{i}" for i in range(160)])
    assert len(results) == 160 and hook.sizer.limit <= 30
    refused = [s for s in service.batch_sizes if s > 30]
    assert refused == [100, 50]  # only the first batch is refused, then halved once more
    assert sum(s for s in service.batch_sizes if s <= 30) == 160


def test_mismatched_answer_length_is_a_server_error() -> None:
    service = Service([httpx.Response(200, json=[echo_result({"first_name": "a"})])])
    with make_hook(service) as hook, pytest.raises(NameLookupServerError, match="1 results for 2"):
        hook.gender_batch(["a", "b"])


def test_non_json_success_is_a_server_error() -> None:
    service = Service([httpx.Response(200, text="<html>captive portal</html>")])
    with make_hook(service) as hook, pytest.raises(NameLookupServerError, match="not JSON"):
        hook.get_statistic()


@pytest.mark.parametrize("body", [b"\xff\xfe[]", b'{"remaining_credits": NaN}', b'{"remaining_credits": 1', b""])
def test_a_body_that_is_not_rfc_json_is_a_server_error(body: bytes) -> None:
    service = Service([httpx.Response(200, content=body)])
    with make_hook(service) as hook, pytest.raises(NameLookupServerError, match="not JSON"):
        hook.get_statistic()


def test_an_answer_decodes_to_plain_dicts_and_lists() -> None:
    answer = [{"input": {"first_name": "Zoë", "id": "h1"}, "gender": "female", "probability": 0.5,
               "details": {"credits_used": 1, "samples": 12345678901234567890}}]
    assert decode_json(RawResponse(200, json.dumps(answer, ensure_ascii=False).encode())) == answer
    assert decode_json(RawResponse(200, json.dumps(answer).encode())) == answer


def test_a_body_is_sent_as_httpx_json_would_send_it() -> None:
    queries = [{"first_name": "Zoë", "country": "DE", "id": 7}, {"full_name": "Jean Dupont", "id": "row-1"}]
    service = Service()
    with make_hook(service) as hook:
        hook.gender_batch(queries)
        hook.get_statistic()
    lookup, statistic = service.requests
    expected = httpx.Request("POST", "http://svc.test/v2/gender", json=queries)
    assert lookup.content == expected.content
    assert lookup.headers["Content-Type"] == "application/json"
    assert lookup.headers["Content-Length"] == str(len(expected.content))
    assert lookup.headers["Authorization"] == f"Bearer {TOKEN}"
    assert statistic.content == b"" and "Content-Type" not in statistic.headers


def test_tolerant_parsing_of_nulls_and_missing_fields() -> None:
    sparse = {"input": {"first_name": "Zz"}, "gender": None, "probability": None, "details": None,
              "first_name": None, "result_found": None}
    service = Service([httpx.Response(200, json=sparse), httpx.Response(200, json={})])
    with make_hook(service) as hook:
        view = result_view(hook.gender(first_name="Zz"))
        assert view["gender"] is None and view["credits_used"] == 0 and view["samples"] is None
        assert result_view(hook.country_of_origin(first_name="Zz"))["top_country"] is None
    assert result_view({"country_of_origin": [None, 3], "ethnicity": "x", "details": {"samples": "9"}}) \
        ["samples"] is None


def test_invalid_input_is_refused_before_any_request() -> None:
    service = Service()
    with make_hook(service) as hook:
        with pytest.raises(NameLookupValidationError, match="invalid-country-code"):
            hook.gender(first_name="Anna", country="XX")
        with pytest.raises(NameLookupValidationError, match="query 2: ") as info:
            hook.gender_batch(["a", "b", {"first_name": "c", "locale": "klingon"}])
        assert info.value.status_id == "invalid-locale"
        with pytest.raises(NameLookupValidationError, match="mandatory-parameter-missing"):
            hook.gender()
    assert service.requests == []


def test_bearer_header_and_missing_token() -> None:
    service = Service()
    with make_hook(service) as hook:
        hook.get_statistic()
    assert service.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"
    no_token = NameLookupHook(settings=ClientSettings(base_url="http://svc.test"),
                              transport=httpx.MockTransport(service))
    with pytest.raises(NameLookupAuthError, match="authorization-header-missing"):
        no_token.get_statistic()
    assert len(service.requests) == 1


def test_token_never_in_logs_messages_or_repr(caplog: pytest.LogCaptureFixture,
                                              capsys: pytest.CaptureFixture[str], sleeps: list[float]) -> None:
    caplog.set_level(logging.DEBUG)
    service = Service([httpx.Response(503, text="busy"), problem("invalid-auth-token"),
                       httpx.ReadError("boom")] * 3)
    hook = make_hook(service)
    messages = [repr(hook), repr(hook.settings), str(hook.settings)]
    for _ in range(3):
        with pytest.raises(Exception) as info:
            hook.gender_batch(["Anna", "Ben"])
        messages += [str(info.value), repr(info.value)]
    ok, message = make_hook(Service([problem("invalid-auth-token")])).test_connection()
    messages.append(message)
    out = capsys.readouterr()
    logs = caplog.text + out.out + out.err
    assert not ok and "Retrying in" in logs  # the retries were logged, without the token
    for text in [*messages, logs]:
        assert TOKEN not in text


@pytest.mark.parametrize("token", ["tok-secret-value\n", "tök-secret-value", "tok secret value", "tok\x01secret"])
def test_a_token_no_header_can_carry_is_refused_before_sending(token: str) -> None:
    service = Service()
    with NameLookupHook.for_url("http://svc.test", token, transport=httpx.MockTransport(service)) as hook, \
            pytest.raises(NameLookupAuthError, match="a character a header cannot carry") as info:
        hook.get_statistic()
    assert service.requests == [] and "secret" not in str(info.value)


def test_errors_from_the_service_name_where_they_came_from(monkeypatch: pytest.MonkeyPatch,
                                                           sleeps: list[float]) -> None:
    with make_hook(Service([problem("invalid-auth-token")])) as hook, pytest.raises(NameLookupAuthError) as info:
        hook.get_statistic()
    assert str(info.value) == "invalid-auth-token (HTTP 400) from http://svc.test:80: invalid-auth-token happened"
    monkeypatch.setenv("AIRFLOW_CONN_NL_NAMED", json.dumps({"conn_type": "namelookup", "host": "http://svc.test",
                                                            "password": TOKEN, "extra": {"max_retries": 1}}))
    named = NameLookupHook("nl_named", transport=httpx.MockTransport(Service([httpx.Response(503, text="busy")] * 2)))
    with pytest.raises(NameLookupServerError) as info:
        named.get_statistic()
    assert info.value.source == "connection 'nl_named'"
    assert str(info.value).endswith("; gave up after 2 attempts")
    with pytest.raises(NameLookupValidationError) as refused:
        named.gender(first_name="Anna", country="XX")
    assert refused.value.source is None  # checked here, not answered by the service
    assert TOKEN not in str(info.value) and TOKEN not in repr(refused.value)


def test_test_connection_uses_the_free_statistic_call() -> None:
    service = Service()
    ok, message = make_hook(service).test_connection()
    assert ok and "12 credits remaining" in message
    assert [r.url.path for r in service.requests] == ["/v2/statistic"]


def test_sign_up_sends_no_token_and_validates_first(monkeypatch: pytest.MonkeyPatch) -> None:
    service = Service([httpx.Response(200, json={"email": "me@example.com", "api_token": "new",
                                                 "status": "awaiting_activation"})])
    real_init = NameLookupHook.__init__

    def with_transport(self: NameLookupHook, *args: Any, **kwargs: Any) -> None:
        kwargs["transport"] = httpx.MockTransport(service)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(NameLookupHook, "__init__", with_transport)
    account = NameLookupHook.sign_up("me@example.com", accept_terms=True, base_url="http://svc.test")
    assert account["status"] == "awaiting_activation"
    request = service.requests[0]
    assert "Authorization" not in request.headers and request.url.path == "/v2/sign-up"
    assert json.loads(request.content) == {"email": "me@example.com", "accept_terms": True}
    with pytest.raises(NameLookupValidationError, match="terms-not-accepted"):
        NameLookupHook.sign_up("me@example.com", accept_terms=False, base_url="http://svc.test")
    assert len(service.requests) == 1


def test_settings_from_an_airflow_connection_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_NL_JSON", json.dumps({
        "conn_type": "namelookup", "host": "http://127.0.0.1:8765/", "password": TOKEN,
        "extra": {"timeout": "12", "batch_size": 40, "max_retries": 2}}))
    settings = NameLookupHook("nl_json").settings
    assert (settings.base_url, settings.token, settings.timeout, settings.batch_size,
            settings.retry.max_retries) == ("http://127.0.0.1:8765", TOKEN, 12.0, 40, 2)
    monkeypatch.setenv("AIRFLOW_CONN_NL_URI", f"namelookup://:{TOKEN}@127.0.0.1:8766?scheme=http")
    assert NameLookupHook("nl_uri").settings.base_url == "http://127.0.0.1:8766"
    monkeypatch.setenv("AIRFLOW_CONN_NL_DEFAULT_HOST", json.dumps({"conn_type": "namelookup", "password": "x"}))
    assert NameLookupHook("nl_default_host").settings.base_url == "https://gender-api.com"
    monkeypatch.setenv("AIRFLOW_CONN_NL_BAD", json.dumps({"conn_type": "namelookup", "extra": {"timeout": "soon"}}))
    with pytest.raises(ValueError, match="'timeout' must be a number"):
        NameLookupHook("nl_bad").settings  # noqa: B018


# Async hook ---------------------------------------------------------------------------------------

class SlowService(Service):
    """Answers arrays after a pause, tracking how many are in flight; fails on request."""

    def __init__(self, fail_on: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.in_flight = 0
        self.peak = 0
        self.fail_on = fail_on
        self.events: list[tuple[str, str]] = []

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            body = json.loads(request.content) if request.content else None
            first = body[0]["first_name"] if isinstance(body, list) else ""
            self.events.append(("start", first))
            await asyncio.sleep(0.005 if self.fail_on and first == self.fail_on else 0.03)
            if self.fail_on and isinstance(body, list) and body[0]["first_name"] == self.fail_on:
                self.requests.append(request)
                self.events.append(("fail", first))
                return problem("limit-exceeded")
            return self(request)
        finally:
            self.in_flight -= 1


def make_async_hook(service: SlowService, max_concurrency: int = 4) -> NameLookupAsyncHook:
    return NameLookupAsyncHook.for_url("http://svc.test", TOKEN, max_concurrency=max_concurrency,
                                       transport=httpx.MockTransport(service.handle), retry=FAST, batch_size=10)


async def test_async_batches_run_concurrently_and_come_back_in_order() -> None:
    service = SlowService(shuffle=True)
    async with make_async_hook(service, max_concurrency=3) as hook:
        names = [f"n{i}" for i in range(95)]
        results = await hook.gender_batch(names)
    assert [r["input"]["first_name"] for r in results] == names
    assert service.peak == 3 and len(service.requests) == 10


async def test_async_failure_keeps_the_answers_in_flight() -> None:
    service = SlowService(fail_on="n20")
    answered: list[str] = []
    async with make_async_hook(service, max_concurrency=4) as hook:
        with pytest.raises(NameLookupLimitExceeded):
            async for batch, results in hook.iter_gender_batches([f"n{i}" for i in range(100)]):
                answered += [r["input"]["first_name"] for r in results]
                assert [q.name for q in batch] == [r["input"]["first_name"] for r in results]
    # The third batch fails while three others are in flight: those are awaited and kept,
    # and no request starts after the failure.
    after_failure = service.events[service.events.index(("fail", "n20")):]
    assert [e for e in after_failure if e[0] == "start"] == []
    assert sorted(answered) == sorted(f"n{i}" for i in [*range(20), *range(30, 40)])
    assert len(service.requests) == 4


async def test_async_errors_of_concurrent_calls_name_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_NL_ASYNC_ERR", json.dumps({"conn_type": "namelookup", "host": "http://svc.test",
                                                                "password": TOKEN, "extra": {"batch_size": 10}}))
    service = SlowService(fail_on="n20")
    async with NameLookupAsyncHook("nl_async_err", transport=httpx.MockTransport(service.handle)) as hook:
        with pytest.raises(NameLookupLimitExceeded, match="from connection 'nl_async_err'"):
            await hook.gender_batch([f"n{i}" for i in range(40)])


async def test_async_single_calls_and_statistic() -> None:
    service = SlowService()
    async with make_async_hook(service) as hook:
        assert (await hook.gender(full_name="Theresa Miller"))["input"] == {"full_name": "Theresa Miller"}
        assert (await hook.get_statistic())["remaining_credits"] == 12
        assert (await hook.test_connection())[0]
        origins = [q.name async for q, _ in hook.iter_country_of_origin(["Anna", {"email": "a.b@c.de"}])]
    assert sorted(origins) == ["Anna", "a.b@c.de"]


async def test_async_connection_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_NL_ASYNC", json.dumps({
        "conn_type": "namelookup", "host": "http://svc.test", "password": TOKEN}))
    service = SlowService()
    hook = NameLookupAsyncHook("nl_async", transport=httpx.MockTransport(service.handle))
    assert (await hook.get_statistic())["remaining_credits"] == 12
    await hook.aclose()
    assert service.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize("echoed", [
    ["a", "b", "c"],            # in order: the usual answer
    ["c", "a", "b"],            # shuffled: matched by id
    [1, "b", "c"],              # an id of another type: request order kept
    ["a", "a", "c"],            # an id echoed twice: request order kept
    [None, "b", "c"],           # an id missing: request order kept
])
def test_results_are_matched_by_echoed_id_else_kept_in_request_order(echoed: list) -> None:
    from airflow_provider_namelookup.api import match_results

    payloads = [{"first_name": n, "id": n} for n in ("a", "b", "c")]
    answer = [{"input": {"id": e} if e is not None else {}, "n": n} for n, e in enumerate(echoed)]
    matched = match_results(payloads, answer)
    if echoed == ["c", "a", "b"]:
        assert [r["n"] for r in matched] == [1, 2, 0]
    else:
        assert matched == answer


def test_results_of_queries_with_the_same_id_stay_in_request_order() -> None:
    from airflow_provider_namelookup.api import match_results

    payloads = [{"first_name": "a", "id": 1}, {"first_name": "b", "id": 1}]
    answer = [{"input": {"id": 1}, "n": 0}, {"input": {"id": 1}, "n": 1}]
    assert match_results(payloads, answer) == answer
