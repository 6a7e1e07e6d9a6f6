"""What a user sees when a call goes wrong, across real sockets (issue 19, client items).

A stopped port, https spoken to the plain-HTTP emulator, a name that does not resolve, a
server that never answers or hangs up: each error names the URL tried and the cause. An
error from the service names the connection it came from. The connection's own token, a
bare string given as a batch and a lone surrogate are refused before anything is sent.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_namelookup.errors import (
    NameLookupAuthError,
    NameLookupConnectionError,
    NameLookupLimitExceeded,
    NameLookupValidationError,
)
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook, NameLookupHook
from tests.support import free_port

FAST = {"max_retries": 1, "backoff_base": 0.01}


class _Silent:
    """A TCP server on loopback that accepts and then never answers (``hang_up``: closes at once)."""

    def __init__(self, hang_up: bool = False) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.hang_up = hang_up
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.hang_up:
                conn.recv(65536)
                conn.close()
            else:
                self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent() -> Iterator[_Silent]:
    server = _Silent()
    yield server
    server.close()


@pytest.fixture
def hanging_up() -> Iterator[_Silent]:
    server = _Silent(hang_up=True)
    yield server
    server.close()


def _statistic(url: str, hook_kind: str, **settings: Any) -> NameLookupConnectionError:
    """Call the free statistic endpoint at ``url`` with the sync or async hook; return its error."""
    settings = {"retry": _policy(), **settings}
    if hook_kind == "sync":
        with NameLookupHook.for_url(url, "tok-unused-here", **settings) as hook, \
                pytest.raises(NameLookupConnectionError) as info:
            hook.get_statistic()
        return info.value

    async def call() -> None:
        async with NameLookupAsyncHook.for_url(url, "tok-unused-here", **settings) as hook:
            await hook.get_statistic()

    with pytest.raises(NameLookupConnectionError) as info:
        asyncio.run(call())
    return info.value


def _policy() -> Any:
    from airflow_provider_namelookup.api import RetryPolicy

    return RetryPolicy(**FAST)


HOOKS = pytest.mark.parametrize("hook_kind", ["sync", "async"])
PROMPT = 15.0
"""Seconds within which a call with the test's retry policy fails: its waits are a fraction of a
second, the rest is margin for a machine whose cores are busy with other work (issue 36)."""


# Item 1: connection failures name the address and the cause -----------------------------------------

@HOOKS
def test_a_stopped_port_says_connection_refused_and_where(hook_kind: str) -> None:
    port = free_port()  # nothing listens on it
    started = time.monotonic()
    err = _statistic(f"http://127.0.0.1:{port}", hook_kind)
    message = str(err)
    assert f"GET http://127.0.0.1:{port}/v2/statistic" in message
    assert "connection refused" in message
    assert "after 2 attempts" in message
    assert not err.maybe_processed
    took = time.monotonic() - started
    # promptly, not in the seconds a longer retry policy would wait: a margin for a busy machine
    assert took < PROMPT, f"two attempts took {took:.1f} s"


@HOOKS
def test_https_to_the_plain_http_emulator_says_to_set_scheme_http(hook_kind: str, emulator: Any) -> None:
    url = emulator.url.replace("http://", "https://")
    message = str(_statistic(url, hook_kind))
    assert f"GET {url}/v2/statistic" in message
    assert "TLS" in message and "plain HTTP" in message
    assert "?scheme=http" in message


@HOOKS
def test_an_unresolvable_host_says_the_name_was_not_resolved(hook_kind: str) -> None:
    message = str(_statistic("http://nonexistent.invalid:8765", hook_kind))
    assert "GET http://nonexistent.invalid:8765/v2/statistic" in message
    assert "'nonexistent.invalid' not resolved" in message


@HOOKS
def test_a_silent_server_is_a_read_timeout_that_may_have_been_charged(hook_kind: str, silent: _Silent) -> None:
    started = time.monotonic()
    err = _statistic(f"http://127.0.0.1:{silent.port}", hook_kind, timeout=0.2)
    message = str(err)
    assert f"GET http://127.0.0.1:{silent.port}/v2/statistic" in message
    assert "no answer within 0.2 s (read timeout)" in message
    assert err.maybe_processed
    took = time.monotonic() - started
    # promptly, not in the seconds a longer retry policy would wait: a margin for a busy machine
    assert took < PROMPT, f"two attempts took {took:.1f} s"


@HOOKS
def test_a_server_that_hangs_up_says_so(hook_kind: str, hanging_up: _Silent) -> None:
    message = str(_statistic(f"http://127.0.0.1:{hanging_up.port}", hook_kind))
    assert f"GET http://127.0.0.1:{hanging_up.port}/v2/statistic" in message
    assert "closed the connection without an answer" in message


def test_a_connection_without_scheme_names_itself_and_the_fix(monkeypatch: pytest.MonkeyPatch,
                                                              emulator: Any) -> None:
    """The user's mistake from the issue: the emulator's host and port in a connection URI,
    without ``?scheme=http``."""
    host_port = emulator.url.removeprefix("http://")
    monkeypatch.setenv("AIRFLOW_CONN_NAMELOOKUP_LOCAL",
                       f"namelookup://:tok-unused-here@{host_port}?max_retries=1&backoff_base=0.01")
    ok, message = NameLookupHook("namelookup_local").test_connection()
    assert not ok
    assert "'namelookup_local'" in message and f"https://{host_port}/v2/statistic" in message
    assert "?scheme=http" in message and "tok-unused-here" not in message


# Item 3: an error from the service names the connection ----------------------------------------------

def test_a_service_error_names_the_connection_never_the_token(monkeypatch: pytest.MonkeyPatch,
                                                              emulator: Any) -> None:
    token = "not-a-token-of-this-emulator-0123456789"
    monkeypatch.setenv("AIRFLOW_CONN_NAMELOOKUP_LOCAL", f"namelookup://:{token}@{emulator.url.removeprefix('http://')}"
                                                        "?scheme=http")
    with NameLookupHook("namelookup_local") as hook, pytest.raises(NameLookupAuthError) as info:
        hook.get_statistic()
    assert info.value.status_id == "invalid-auth-token"
    assert "connection 'namelookup_local'" in str(info.value)
    assert token not in str(info.value) and token not in repr(info.value)

    async def call() -> None:
        async with NameLookupAsyncHook("namelookup_local") as hook:
            await hook.get_statistic()

    with pytest.raises(NameLookupAuthError, match="connection 'namelookup_local'"):
        asyncio.run(call())


def test_a_hook_made_for_a_url_names_the_url(emulator: Any, make_account: Any) -> None:
    token = make_account(credits=0)
    with NameLookupHook.for_url(emulator.url, token) as hook, pytest.raises(NameLookupLimitExceeded) as info:
        hook.gender(first_name="Anna")
    assert emulator.url in str(info.value) and token not in str(info.value)


# Item 10: the connection's own token is refused before sending ----------------------------------------

def _sent_nothing(emulator: Any, namelookup: Any, before: int) -> bool:
    return emulator.stats()["requests"] == before and namelookup.remaining() == 100


@pytest.mark.parametrize("field", ["first_name", "full_name", "email_local_part", "id", "country", "locale", "ip"])
def test_the_token_is_refused_in_any_field_before_sending(field: str, namelookup: Any, emulator: Any) -> None:
    token = namelookup.token
    fields: dict[str, Any] = {"first_name": "Anna"}
    if field == "email_local_part":
        fields = {"email": f"{token}@example.com"}
    elif field in ("first_name", "full_name", "id", "country", "locale", "ip"):
        fields = {**({} if field in ("first_name", "full_name") else fields), field: token}
    before = emulator.stats()["requests"]
    with NameLookupHook() as hook, pytest.raises(NameLookupValidationError) as info:
        hook.gender(**fields)
    assert info.value.field == ("email" if field == "email_local_part" else field)
    assert token not in str(info.value) and token not in repr(info.value)
    assert "API token" in info.value.detail
    assert _sent_nothing(emulator, namelookup, before)


def test_the_token_is_refused_in_batches_and_origin_sync_and_async(namelookup: Any, emulator: Any) -> None:
    token = namelookup.token
    before = emulator.stats()["requests"]
    with NameLookupHook() as hook:
        with pytest.raises(NameLookupValidationError, match="query 1: ") as info:
            hook.gender_batch(["Anna", {"first_name": "Ben", "country": token}])
        assert token not in str(info.value)
        with pytest.raises(NameLookupValidationError):
            list(hook.iter_country_of_origin([f"Anna {token}"]))
        with pytest.raises(NameLookupValidationError):
            hook.country_of_origin(full_name=f"Anna {token}")

    async def calls() -> None:
        async with NameLookupAsyncHook() as hook:
            with pytest.raises(NameLookupValidationError, match="holds the connection's API token"):
                await hook.gender(first_name=token)
            with pytest.raises(NameLookupValidationError):
                await hook.gender_batch([{"first_name": "Anna", "id": token}])
            with pytest.raises(NameLookupValidationError):
                [_ async for _ in hook.iter_country_of_origin([{"full_name": f"x {token}"}])]

    asyncio.run(calls())
    assert _sent_nothing(emulator, namelookup, before)


# Item 11: a bare string is not a batch --------------------------------------------------------------

def test_a_bare_string_given_as_a_batch_is_a_type_error(namelookup: Any, emulator: Any) -> None:
    before = emulator.stats()["requests"]
    with NameLookupHook() as hook:
        with pytest.raises(TypeError, match="list of queries"):
            hook.gender_batch("Anna")
        with pytest.raises(TypeError, match="list of queries"):
            list(hook.iter_country_of_origin("Anna"))
        with pytest.raises(TypeError, match="list of queries"):
            hook.gender_batch({"first_name": "Anna"})

    async def call() -> None:
        async with NameLookupAsyncHook() as hook:
            with pytest.raises(TypeError, match="list of queries"):
                await hook.gender_batch("Anna")

    asyncio.run(call())
    assert _sent_nothing(emulator, namelookup, before)


# Item 12: a lone surrogate is a validation error naming the field ------------------------------------

@pytest.mark.parametrize(("fields", "field"), [
    ({"first_name": "Anna", "id": "row-\ud800"}, "id"),
    ({"first_name": "An\udc00na"}, "first_name"),
    ({"full_name": "\ud800"}, "full_name"),
])
def test_a_lone_surrogate_is_refused_naming_the_field(fields: dict[str, Any], field: str, namelookup: Any,
                                                       emulator: Any) -> None:
    before = emulator.stats()["requests"]
    with NameLookupHook() as hook, pytest.raises(NameLookupValidationError) as info:
        hook.gender(**fields)
    assert info.value.field == field
    if field == "id":
        assert "surrogate" in info.value.detail
    assert _sent_nothing(emulator, namelookup, before)
