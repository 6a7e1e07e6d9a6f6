"""Causes of transport errors that a loopback test cannot produce on demand (a connect timeout,
an untrusted certificate, an unreachable network), and what a message may quote. The common
causes are tested across real sockets in tests/test_hook_errors.py."""

from __future__ import annotations

import errno
import socket
import ssl
from typing import Any

import httpx
import pytest

from airflow_provider_namelookup.hooks.transport_errors import cannot_succeed, describe, display_url

URL = "https://svc.test/v2/gender"


def _raised(exc: httpx.HTTPError, cause: BaseException | None = None, *,
            timeout: httpx.Timeout | None = None) -> httpx.HTTPError:
    request = httpx.Request("POST", URL, extensions={"timeout": (timeout or httpx.Timeout(30, connect=5)).as_dict()})
    exc.request = request
    exc.__cause__ = cause
    return exc


def _untrusted() -> ssl.SSLCertVerificationError:
    err = ssl.SSLCertVerificationError(1, "certificate verify failed")
    err.verify_message = "self-signed certificate"
    return err


@pytest.mark.parametrize(("exc", "expected"), [
    (_raised(httpx.ConnectTimeout("timed out"), timeout=httpx.Timeout(30, connect=2.5)),
     "no connection to svc.test:443 within 2.5 s (connect timeout)"),
    (_raised(httpx.ReadTimeout("timed out")), "no answer within 30 s (read timeout); the request may have been"),
    (_raised(httpx.WriteTimeout("timed out")), "could not be sent within 30 s (write timeout)"),
    (_raised(httpx.PoolTimeout("timed out")), "no free connection within 30 s (pool timeout)"),
    (_raised(httpx.ConnectError("x"), _untrusted()), "TLS certificate of svc.test:443 not accepted: self-signed"),
    (_raised(httpx.ConnectError("x"), ssl.SSLEOFError(8, "EOF occurred in violation of protocol")),
     "TLS handshake with svc.test:443 failed (SSLEOFError); if it speaks plain HTTP"),
    (_raised(httpx.ReadError("x"), ConnectionResetError(errno.ECONNRESET, "reset")), "the server reset the connection"),
    (_raised(httpx.ConnectError("x"), OSError(errno.ENETUNREACH, "unreachable")),
     "Network is unreachable (svc.test:443)"),
    (_raised(httpx.ConnectError("x"), BaseExceptionGroup("all failed", [ConnectionRefusedError(111, "no")])),
     "connection refused: nothing listens on svc.test:443"),
    (_raised(httpx.RemoteProtocolError("illegal status line: b'SSH-2.0'")),
     "RemoteProtocolError: illegal status line: b'SSH-2.0'"),
])
def test_each_cause_in_one_sentence(exc: httpx.HTTPError, expected: str) -> None:
    assert expected in describe(exc)


def test_nothing_quoted_carries_the_token_in_any_spelling() -> None:
    token = "abc\nsecret-tok\xe9n-123"
    message = describe(_raised(httpx.LocalProtocolError(f"Illegal header value {f'Bearer {token}'.encode()!r}")),
                       secrets={token})
    assert message.startswith("LocalProtocolError: Illegal header value") and "***" in message
    assert "secret-tok" not in message


def test_without_a_request_the_cause_is_still_named() -> None:
    assert describe(httpx.ConnectError("x")).startswith("ConnectError: x")
    err = httpx.ConnectError("y")
    err.__cause__ = ConnectionRefusedError(111, "no")
    assert describe(err) == ("connection refused: nothing listens on the server (is the service running, "
                             "and is the port right?)")


def test_urls_name_their_port_and_never_a_password() -> None:
    assert display_url(httpx.URL("http://u:pw@[::1]:8765/v2/statistic")) == "http://[::1]:8765/v2/statistic"
    assert display_url(httpx.URL("https://gender-api.com")) == "https://gender-api.com:443/"


# Mistakes no retry can fix fail at once (issue 25, item 7) --------------------------------------------------

class _PlainHttp:
    """A real plain-HTTP server on loopback (the standard library's), counting the connections it accepts."""

    def __init__(self) -> None:
        import http.server
        import threading

        accepted = self.accepted = [0]

        class Handler(http.server.BaseHTTPRequestHandler):
            def handle(self) -> None:
                accepted[0] += 1
                super().handle()

            def do_GET(self) -> None:
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def plain_http() -> Any:
    server = _PlainHttp()
    yield server
    server.close()


def test_tls_to_a_plain_http_port_is_a_mistake_no_retry_can_fix(plain_http: _PlainHttp) -> None:
    """The real handshake's error (WRONG_VERSION_NUMBER, or RECORD_LAYER_FAILURE on OpenSSL 3.2+)."""
    with pytest.raises(httpx.ConnectError) as info:
        httpx.get(f"https://127.0.0.1:{plain_http.port}/v2/statistic", timeout=5)
    assert cannot_succeed(info.value)
    assert "answered in plain HTTP" in describe(info.value)


@pytest.mark.parametrize("hook_kind", ["sync", "async"])
def test_the_hooks_do_not_retry_tls_to_a_plain_http_port(hook_kind: str, plain_http: _PlainHttp,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    """Retried six times (about 11 s) before; one handshake now, and the message at once."""
    import asyncio

    from airflow_provider_namelookup.errors import NameLookupConnectionError, NameLookupConnectionMisconfigured
    from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook, NameLookupHook

    url = f"https://127.0.0.1:{plain_http.port}"
    with pytest.raises(NameLookupConnectionError) as info:
        if hook_kind == "sync":
            with NameLookupHook.for_url(url, "tok-unused-here") as hook:
                hook.get_statistic()
        else:
            async def call() -> None:
                async with NameLookupAsyncHook.for_url(url, "tok-unused-here") as hook:
                    await hook.get_statistic()

            asyncio.run(call())
    assert isinstance(info.value, NameLookupConnectionMisconfigured) and not info.value.retryable
    assert "answered in plain HTTP" in str(info.value) and "gave up after" not in str(info.value)
    assert plain_http.accepted[0] == 1
    assert "Retrying in" not in caplog.text


@pytest.mark.parametrize(("cause", "never"), [
    (ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"), False),  # no reason attribute set
    (_untrusted(), True),
    (ssl.SSLEOFError(8, "EOF occurred in violation of protocol"), False),  # cut short: may pass next time
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), True),
    (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"), False),
    (ConnectionRefusedError(111, "refused"), False),
    (ConnectionResetError(104, "reset"), False),
])
def test_which_causes_can_never_succeed(cause: BaseException, never: bool) -> None:
    assert cannot_succeed(_raised(httpx.ConnectError("x"), cause)) is never


def test_a_plain_http_answer_is_known_by_its_reason() -> None:
    for reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE"):
        err = ssl.SSLError(1, reason.lower())
        err.reason = reason
        assert cannot_succeed(_raised(httpx.ConnectError("x"), err))
