"""Why a request got no answer, in words a user can act on.

httpx raises a few broad exceptions (``ConnectError``, ``ReadTimeout``, ...) and keeps the
real cause in their chain: ``ConnectionRefusedError`` for a stopped service or a wrong
port, ``ssl.SSLError`` for https spoken to a plain-HTTP server, ``socket.gaierror`` for a
host name that does not resolve. :func:`describe` finds that cause (the async client wraps
it once more, in an exception group) and says it in one short sentence; :func:`display_url`
writes the address tried with its port, and never with a user or password;
:func:`cannot_succeed` says whether sending again could ever get an answer.

Example::

    >>> import httpx

from airflow_provider_namelookup.token_guard import mask_secrets
    >>> request = httpx.Request("GET", "http://127.0.0.1:1/v2/statistic")
    >>> try:
    ...     raise httpx.ConnectError("[Errno 111] Connection refused") from ConnectionRefusedError(111, "refused")
    ... except httpx.ConnectError as exc:
    ...     exc.request = request
    ...     describe(exc)
    'connection refused: nothing listens on 127.0.0.1:1 (is the service running, and is the port right?)'
    >>> display_url(httpx.URL("https://user:pw@gender-api.com/v2/gender"))
    'https://gender-api.com:443/v2/gender'
    >>> refused = httpx.ConnectError("[Errno 111] Connection refused")
    >>> refused.__cause__ = ConnectionRefusedError(111, "refused")
    >>> cannot_succeed(refused)  # the service may be listening in a moment: retried
    False
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Collection, Iterator
from typing import TypeVar

import httpx

from airflow_provider_namelookup.token_guard import mask_secrets

_E = TypeVar("_E", bound=BaseException)

_DEFAULT_PORTS = {"http": 80, "https": 443}
_PLAIN_HTTP_ANSWERS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "HTTP_REQUEST",
                                 "PACKET_LENGTH_TOO_LONG"})
"""OpenSSL's reasons when the bytes that came back to a TLS hello were plain HTTP."""
_NO_SUCH_HOST = frozenset(code for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None))
                          if code is not None)
"""The resolver's answers that a host name has no address (not that it could not ask for now)."""
_MIN_SCRUBBED = 5
"""Secrets shorter than this (toy tokens) are not cut out of messages: they would cut up words."""


def display_url(url: httpx.URL) -> str:
    """Scheme, host, port (the default one written out) and path: where a request went."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    port = url.port or _DEFAULT_PORTS.get(url.scheme)
    return f"{url.scheme}://{host}:{port}{url.path}"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception and everything behind it: causes, contexts and members of exception groups."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
        if isinstance(current, BaseExceptionGroup):
            todo += list(current.exceptions)


def _first(exc: BaseException, kind: type[_E]) -> _E | None:
    return next((e for e in _causes(exc) if isinstance(e, kind)), None)


def _seconds(request: httpx.Request | None, which: str) -> str:
    value = (request.extensions.get("timeout") or {}).get(which) if request is not None else None
    return f"{value:g} s" if isinstance(value, int | float) else "the timeout"


def _request_of(exc: httpx.HTTPError) -> httpx.Request | None:
    try:
        return exc.request
    except RuntimeError:  # httpx raises it when no request was attached
        return None


def describe(exc: httpx.HTTPError, *, secrets: Collection[str] = ()) -> str:
    """The cause of ``exc`` in one sentence; anything quoted from it has ``secrets`` cut out."""
    request = _request_of(exc)
    url = request.url if request is not None else None
    where = f"{url.host}:{url.port or _DEFAULT_PORTS.get(url.scheme)}" if url is not None else "the server"
    if (untrusted := _first(exc, ssl.SSLCertVerificationError)) is not None:
        return f"TLS certificate of {where} not accepted: {untrusted.verify_message}"
    if (tls := _first(exc, ssl.SSLError)) is not None:
        reason = getattr(tls, "reason", None) or type(tls).__name__
        fix = f"set ?scheme=http on the connection (its scheme extra), or use http://{where}"
        if reason in _PLAIN_HTTP_ANSWERS:
            return (f"TLS handshake failed ({reason}): {where} answered in plain HTTP, not https; "
                    f"for a plain-HTTP service such as the emulator, {fix}")
        return f"TLS handshake with {where} failed ({reason}); if it speaks plain HTTP (as the emulator does), {fix}"
    if (unresolved := _first(exc, socket.gaierror)) is not None:
        host = url.host if url is not None else "the host"
        return f"host name {host!r} not resolved ({unresolved.strerror or 'no address'})"
    if _first(exc, ConnectionRefusedError) is not None:
        return f"connection refused: nothing listens on {where} (is the service running, and is the port right?)"
    if isinstance(exc, httpx.ConnectTimeout):
        return f"no connection to {where} within {_seconds(request, 'connect')} (connect timeout)"
    if isinstance(exc, httpx.ReadTimeout):
        return f"no answer within {_seconds(request, 'read')} (read timeout); the request may have been processed"
    if isinstance(exc, httpx.WriteTimeout):
        return f"the request could not be sent within {_seconds(request, 'write')} (write timeout)"
    if isinstance(exc, httpx.PoolTimeout):
        return f"no free connection within {_seconds(request, 'pool')} (pool timeout)"
    if isinstance(exc, httpx.RemoteProtocolError) and "without sending a response" in str(exc):
        return "the server closed the connection without an answer"
    if _first(exc, ConnectionResetError) is not None:
        return "the server reset the connection"
    if (os_error := _first(exc, OSError)) is not None and os_error.errno:
        return f"{os.strerror(os_error.errno)} ({where})"
    return f"{type(exc).__name__}: {scrub(str(exc), secrets)}"


def cannot_succeed(exc: httpx.HTTPError) -> bool:
    """Whether no retry of the request can get an answer, because the connection as it is
    configured is wrong, not the network or the service for now:

    - a TLS handshake answered in plain HTTP (https to a plain-HTTP port such as the
      emulator's: a forgotten ``?scheme=http``);
    - a certificate the client does not trust (self-signed, expired, another host's):
      it does not change between retries seconds apart;
    - a host name that does not exist (``EAI_NONAME``, ``EAI_NODATA``).

    Retried as before: every other TLS failure (a handshake cut short may be a server
    under load), a resolver that could not answer for now (``EAI_AGAIN``), refused or
    reset connections and timeouts.
    """
    if _first(exc, ssl.SSLCertVerificationError) is not None:
        return True
    if (tls := _first(exc, ssl.SSLError)) is not None:
        return getattr(tls, "reason", None) in _PLAIN_HTTP_ANSWERS
    unresolved = _first(exc, socket.gaierror)
    return unresolved is not None and unresolved.errno in _NO_SUCH_HOST


def scrub(text: str, secrets: Collection[str]) -> str:
    r"""``text`` with every secret of at least 5 characters replaced by ``***``, as it is and
    as a ``repr`` of it (text or bytes) would write it.

    >>> scrub("Illegal header value b'Bearer abc\\nsecret-123'", {"abc\nsecret-123"})
    "Illegal header value b'Bearer ***'"
    """
    return mask_secrets(text, secrets, min_length=_MIN_SCRUBBED)
