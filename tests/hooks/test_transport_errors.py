"""Causes of transport errors that a loopback test cannot produce on demand (a connect timeout,
an untrusted certificate, an unreachable network), and what a message may quote. The common
causes are tested across real sockets in tests/test_hook_errors.py."""

from __future__ import annotations

import errno
import ssl

import httpx
import pytest

from airflow_provider_namelookup.hooks.transport_errors import describe, display_url

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
