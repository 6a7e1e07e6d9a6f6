"""Hooks for the Name Lookup Service API v2: :class:`NameLookupHook` (sync) and
:class:`NameLookupAsyncHook` (async, for triggers and concurrent batches).

Both drive the same call definitions (:mod:`airflow_provider_namelookup.api`), so they
validate, batch, retry and parse identically; they differ only in how a request is
sent and how a wait is spent.

Retry policy (see :class:`~airflow_provider_namelookup.api.RetryPolicy`):

* retried: connection errors and timeouts, HTTP 5xx, HTTP 429 (``Retry-After`` is
  honoured, up to 120 s);
* never retried: any other 4xx, including ``limit-exceeded`` (HTTP 401: no credits
  left) and validation errors;
* ``max_retries`` (default 5) retries after the first attempt, waiting
  ``backoff_base * 2**n`` seconds (default base 0.5 s, at most 30 s) with jitter.

Concurrency (async hook): requests in flight adapt between 1 and ``max_concurrency``
(default 64; the ``max_concurrency`` connection extra or argument) with an AIMD
controller shared by all requests of the hook (:mod:`.concurrency`): they grow while
answers come back fast and clean, and shrink on 429, 5xx, timeouts and lost
connections; a ``Retry-After`` stops every new request until it has passed.

Every call has a connect timeout (default 5 s) and a read timeout (default 30 s). The
HTTP clients (HTTP/1.1, keep-alive) live per hook instance; close them with ``close()`` /
``aclose()`` or use the hook as a context manager. The async hook spreads its
``max_concurrency`` connections over clients of at most 2 connections each
(:class:`_Lanes`, one TLS context for all): httpx's pool scans every connection of a
client for each request, so one pool of 64 costs about three times the CPU per request
of eight pools of 8, and pools of 2 are cheaper still.
HTTP/2 (one connection) was measured too and did not beat that
(``benchmarks/http2_probe.py``). The token is sent only in the ``Authorization``
header: it never appears in logs, exception messages or ``repr()``, and a query that
carries it (as a name, id or hint) is refused before sending
(:mod:`airflow_provider_namelookup.token_guard`).

Errors say where they came from: an error from the service names the connection
(``invalid-auth-token (HTTP 400) from connection 'namelookup_local': ...``; a hook made
with :meth:`~_NameLookupBase.for_url` names its base URL), and a request that got no
answer names the URL tried and the cause (:mod:`.transport_errors`).

Example::

    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook

    with NameLookupHook("namelookup_default") as hook:
        hook.gender(first_name="Theresa", country="DE")["gender"]      # 'female'
        hook.gender_batch(["Anna", {"full_name": "John Smith"}])       # one request
        hook.get_statistic()["remaining_credits"]
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

import httpx
import msgspec
from airflow.providers.common.compat.sdk import BaseHook

from airflow_provider_namelookup import __version__
from airflow_provider_namelookup.api import (
    ApiRequest,
    BatchSizer,
    LostAnswers,
    RawResponse,
    RetryPolicy,
    Send,
    Sleep,
    Steps,
    as_query,
    gender_batch_call,
    origin_call,
    prepare_queries,
    signup_call,
    single_gender_call,
    statistic_call,
)
from airflow_provider_namelookup.contract import DEFAULT_BASE_URL, STATISTIC_PATH, LookupKind
from airflow_provider_namelookup.engine.ports import NetworkState, Result
from airflow_provider_namelookup.errors import (
    NameLookupAuthError,
    NameLookupConnectionError,
    NameLookupConnectionMisconfigured,
    NameLookupError,
    NameLookupInsufficientCredits,
    NameLookupValidationError,
    parse_retry_after,
)
from airflow_provider_namelookup.hooks.concurrency import ConcurrencyGate, ConcurrencyLimit, Outcome
from airflow_provider_namelookup.hooks.settings import ClientSettings
from airflow_provider_namelookup.hooks.sockets import idle_checked_transport
from airflow_provider_namelookup.hooks.transport_errors import cannot_succeed, describe, display_url
from airflow_provider_namelookup.metrics import CallCounters
from airflow_provider_namelookup.models import Query

_USER_AGENT = f"airflow-provider-namelookup/{__version__}"
_LANE_CONNECTIONS = 2
"""Connections per httpx client of the async hook. httpcore scans its whole pool on every
request start and end; pools of 2 cut the client's CPU per one-name request by ~15 %
against pools of 8 (country of origin sends one request per distinct name)."""
# Idle connections are dropped before common server idle timeouts (uvicorn's 5 s): reusing
# one as the server closes it loses a request that may have been charged.
_KEEPALIVE_SECONDS = 4.0
# Errors after which the request may have reached the service (and been charged).
_MAYBE_PROCESSED = (httpx.ReadError, httpx.ReadTimeout, httpx.RemoteProtocolError)


def _connection_error(exc: httpx.HTTPError, request: ApiRequest, settings: ClientSettings) -> NameLookupConnectionError:
    """The request's URL and the cause, e.g. ``no answer to GET http://127.0.0.1:1/v2/statistic:
    connection refused: nothing listens on 127.0.0.1:1 (...)``."""
    url = display_url(httpx.URL(settings.base_url + request.path))
    cause = describe(exc, secrets=(settings.token,) if settings.token else ())
    kind = NameLookupConnectionMisconfigured if cannot_succeed(exc) else NameLookupConnectionError
    return kind(f"no answer to {request.method} {url}: {cause}", maybe_processed=isinstance(exc, _MAYBE_PROCESSED))


def _from_the_service(err: NameLookupError) -> bool:
    """Whether an error came from the service or the way to it (not from checking the input first, nor
    from the run's budget)."""
    return not (isinstance(err, NameLookupValidationError | NameLookupInsufficientCredits)
                and err.http_status is None)


def _body(request: ApiRequest) -> bytes | None:
    """The request's JSON body as httpx's ``json=`` would send it (compact, UTF-8), encoded by msgspec
    in a tenth of the CPU; the service's payloads hold only text and integers (:class:`Query`).

    >>> _body(ApiRequest("POST", "/gender", [{"first_name": "Zoë", "id": 7}]))
    b'[{"first_name":"Zo\xc3\xab","id":7}]'
    """
    return None if request.json is None else msgspec.json.encode(request.json)


def _with_id(payload: dict[str, Any], id: str) -> dict[str, Any]:
    payload["id"] = id
    return payload


def _raw(response: httpx.Response) -> RawResponse:
    return RawResponse(response.status_code, response.content, response.headers.get("Retry-After"))


def _outcome(response: httpx.Response) -> tuple[Outcome, float | None]:
    """What an answer says about the service's load, and the ``Retry-After`` it asked for."""
    status = response.status_code
    if status == 429 or status >= 500:
        return Outcome.CONGESTED, parse_retry_after(response.headers.get("Retry-After"))
    return (Outcome.OK if 200 <= status < 300 else Outcome.NEUTRAL), None


class _Stopped(Exception):
    """A call ended, sending nothing more, because another call of the same lookups gave up for good."""


def _alike(error: BaseException, first: BaseException) -> bool:
    """Whether a later call's error says nothing the first one did not (the same kind, the same status)."""
    return error is first or (type(error) is type(first) and getattr(error, "status_id", None) ==
                              getattr(first, "status_id", None))


async def _pause(seconds: float, stop: asyncio.Event | None) -> bool:
    """Wait ``seconds``, unless ``stop`` is set first; whether it was."""
    if stop is None:
        await asyncio.sleep(seconds)
        return False
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True


class hook_or_class_method:
    """A method callable on the class or on an instance: it receives the class and the
    instance (None when called on the class), so one name serves both uses."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, instance: Any, owner: type) -> Callable[..., Any]:
        return functools.partial(self.func, owner, instance)


def _as_given(query: Query, result: dict[str, Any]) -> dict[str, Any]:
    """A result whose ``input`` echoes the query as the caller gave it (its hash was the id on the wire)."""
    return result if query.id is not None else {**result, "input": query.to_payload()}


def _query_from_fields(secrets: frozenset[str], **fields: Any) -> Query:
    return as_query({k: v for k, v in fields.items() if v is not None}, secrets=secrets)


class _Lanes:
    """The async hook's HTTP clients: ``connections`` split over clients of at most
    ``_LANE_CONNECTIONS`` connections each, made as they are needed (a statistic call makes one); each request
    goes to the least busy client.

    :param make: builds one client with the given number of connections.
    """

    def __init__(self, make: Callable[[int], httpx.AsyncClient], connections: int) -> None:
        count = math.ceil(connections / _LANE_CONNECTIONS)
        self.sizes = [connections // count + (1 if i < connections % count else 0) for i in range(count)]
        self._make = make
        self.clients = [make(self.sizes[0])]
        self.busy = [0]

    def least_busy(self) -> int:
        """The lane for the next request (a new one when every lane made so far is full)."""
        index = min(range(len(self.clients)), key=self.busy.__getitem__)
        if self.busy[index] >= self.sizes[index] and len(self.clients) < len(self.sizes):
            self.clients.append(self._make(self.sizes[len(self.clients)]))
            self.busy.append(0)
            return len(self.clients) - 1
        return index

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


class _NameLookupBase(BaseHook):
    """What both hooks share: the connection, settings and request preparation."""

    conn_name_attr = "namelookup_conn_id"
    default_conn_name = "namelookup_default"
    conn_type = "namelookup"
    hook_name = "Name Lookup"

    def __init__(self, namelookup_conn_id: str = default_conn_name, *,
                 settings: ClientSettings | None = None, max_concurrency: int | None = None,
                 transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__()
        self.namelookup_conn_id = namelookup_conn_id
        self.source = f"connection {namelookup_conn_id!r}"
        """What errors from the service name as where they came from (``for_url``: the base URL)."""
        self._settings = settings
        self._transport = transport
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        self._max_concurrency = max_concurrency
        self.counters = CallCounters(namelookup_conn_id)
        """What this hook's calls did: requests, retries, credits, the remaining credits it last read."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(namelookup_conn_id={self.namelookup_conn_id!r})"

    @classmethod
    def for_url(cls, base_url: str, token: str | None = None, *, max_concurrency: int | None = None,
                transport: Any = None, **settings: Any) -> Any:
        """A hook that reaches ``base_url`` directly, without an Airflow connection.

        :param settings: further :class:`ClientSettings` fields (``timeout``, ``retry``, ...).
        """
        if token:
            from airflow_provider_namelookup.secret_masking import mask_secret

            mask_secret(token)
        hook = cls(settings=ClientSettings(base_url=base_url.rstrip("/"), token=token, **settings),
                   max_concurrency=max_concurrency, transport=transport)
        hook.source = display_url(httpx.URL(hook.settings.base_url)).rstrip("/")
        return hook

    @cached_property
    def sizer(self) -> BatchSizer:
        return BatchSizer(self.settings.batch_size)

    @property
    def settings(self) -> ClientSettings:
        if self._settings is None:
            self._settings = ClientSettings.from_connection(self.get_connection(self.namelookup_conn_id))
        return self._settings

    @property
    def secrets(self) -> frozenset[str]:
        """Values no query may carry: the connection's token (refused before sending, see
        :mod:`airflow_provider_namelookup.token_guard`)."""
        token = self.settings.token
        return frozenset({token}) if token else frozenset()

    def _name_the_source(self, err: NameLookupError) -> None:
        """Let ``err`` name this hook's connection (or URL) when it came from the service."""
        if err.source is None and _from_the_service(err):
            err.source = self.source

    @property
    def max_concurrency(self) -> int:
        """The most requests in flight: the argument, else the connection's extra, else 64."""
        return self._ceiling(self.settings)

    def _ceiling(self, settings: ClientSettings) -> int:
        return self._max_concurrency if self._max_concurrency is not None else settings.max_concurrency

    @property
    def policy(self) -> RetryPolicy:
        return self.settings.retry

    def _timeout(self, settings: ClientSettings) -> httpx.Timeout:
        return httpx.Timeout(settings.timeout, connect=settings.connect_timeout)

    @cached_property
    def _tls(self) -> ssl.SSLContext:
        """One TLS context for all this hook's clients (loading the CA bundle costs 30-70 ms each)."""
        return httpx.create_ssl_context()

    async def _atls(self, settings: ClientSettings) -> None:
        """Make the TLS context of an ``https`` service on a thread, while the run's first statements go on."""
        if _speaks_tls(settings.base_url) and "_tls" not in self.__dict__:
            self.__dict__["_tls"] = await asyncio.to_thread(httpx.create_ssl_context)

    def _client_options(self, settings: ClientSettings, connections: int) -> dict[str, Any]:
        return {
            "transport": self._transport,
            "verify": self._tls if _speaks_tls(settings.base_url) else _no_tls_expected(),
            "base_url": settings.base_url,
            "timeout": self._timeout(settings),
            "headers": {"Accept": "application/json", "User-Agent": _USER_AGENT},
            "limits": httpx.Limits(max_connections=connections, max_keepalive_connections=connections,
                                   keepalive_expiry=_KEEPALIVE_SECONDS),
            "follow_redirects": False,
        }

    def _headers(self, request: ApiRequest, settings: ClientSettings) -> dict[str, str]:
        """The request's own headers: its body's type (see :func:`_body`) and the token."""
        typed = {"Content-Type": "application/json"} if request.json is not None else {}
        if not request.auth:
            return typed
        if not settings.token:
            raise NameLookupAuthError(
                "authorization-header-missing",
                "no API token: put it in the connection's password field (or give it to for_url)",
            )
        if not (settings.token.isascii() and settings.token.isprintable() and " " not in settings.token):
            # httpx would fail on it with a raw UnicodeEncodeError, h11 with a message quoting it.
            raise NameLookupAuthError(
                "invalid-auth-token",
                "the API token holds a character a header cannot carry (a space, a line break, a control or "
                "non-ASCII character, often copied along with it); it was not sent",
            )
        return {**typed, "Authorization": f"Bearer {settings.token}"}

    def _log_sleep(self, step: Sleep) -> None:
        self.log.warning("Retrying in %.2f s: %s", step.seconds, step.reason)

    def _gender_batches(self, queries: Iterable[dict[str, Any] | str | Query]) -> list[Sequence[Query]]:
        """The queries, validated and each with its id (its own, else its hash), in batches."""
        return self._batched(prepare_queries(queries, secrets=self.secrets))

    def _batched(self, prepared: Sequence[Query]) -> list[Sequence[Query]]:
        """Queries already validated (:func:`prepare_queries`), each with its id, in batches."""
        return self.sizer.chunks([q.with_identity(LookupKind.GENDER.value) for q in prepared])

    # Call definitions shared by both hooks.
    def _gender_steps(self, query: Query) -> Steps:
        return single_gender_call(query, self.policy, self.counters)

    def _batch_steps(self, batch: Sequence[Query]) -> Steps:
        return gender_batch_call([q.to_payload() for q in batch], self.sizer, self.policy, self.counters)

    def _origin_steps(self, query: Query) -> Steps:
        return origin_call(query.to_payload(), self.policy, self.counters)

    def _statistic_steps(self) -> Steps:
        return statistic_call(self.policy, self.counters)

    @staticmethod
    def _describe_statistic(statistic: dict[str, Any]) -> str:
        remaining = statistic.get("remaining_credits")
        return f"Connected to the Name Lookup Service: {remaining} credits remaining"


class NameLookupHook(_NameLookupBase):
    """Synchronous hook for the Name Lookup Service API v2.

    :param namelookup_conn_id: connection of type ``namelookup`` (token in ``password``,
        base URL in ``host``).
    :param settings: use these instead of reading the connection (see :meth:`for_url`).

    Example::

        hook = NameLookupHook()
        result = hook.gender(full_name="Theresa Miller")
        result["gender"], result["probability"]          # ('female', 0.98)
    """

    # The connection form for Airflow 3.1; 3.2 and later read it from the provider info
    # and never call these (they must sit on the registered class itself, not a base).
    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """The form's extra fields as wtforms fields (imported only when Airflow asks)."""
        from airflow_provider_namelookup.connection_form import form_widgets

        return form_widgets()

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Hidden, relabelled and prefilled standard fields of the form."""
        from airflow_provider_namelookup.connection_form import hook_field_behaviour

        return hook_field_behaviour()

    @cached_property
    def client(self) -> httpx.Client:
        """The pooled HTTP client (created on first use)."""
        return httpx.Client(**self._client_options(self.settings, connections=4))

    def get_conn(self) -> httpx.Client:
        """The pooled HTTP client (Airflow's hook convention); base URL and timeouts set,
        the token added per request by the hook's own calls."""
        return self.client

    def close(self) -> None:
        if "client" in self.__dict__:
            self.__dict__.pop("client").close()

    def __enter__(self) -> NameLookupHook:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _send(self, request: ApiRequest) -> RawResponse | NameLookupConnectionError:
        headers = self._headers(request, self.settings)
        started = time.monotonic()
        try:
            response = self.client.request(request.method, request.path, content=_body(request), headers=headers)
        except httpx.HTTPError as exc:
            self.counters.sent(request.path, None, time.monotonic() - started)
            return _connection_error(exc, request, self.settings)
        self.counters.sent(request.path, response.status_code, time.monotonic() - started)
        return _raw(response)

    def run(self, steps: Steps) -> Any:
        """Drive one call definition to its result (sending and sleeping as asked)."""
        try:
            step = next(steps)
            while True:
                if isinstance(step, Send):
                    step = steps.send(self._send(step.request))
                else:
                    self._log_sleep(step)
                    time.sleep(step.seconds)
                    step = steps.send(None)
        except StopIteration as done:
            return done.value
        except NameLookupError as err:
            self._name_the_source(err)
            raise

    def gender(self, *, first_name: str | None = None, full_name: str | None = None,
               email: str | None = None, country: str | None = None, locale: str | None = None,
               ip: str | None = None, id: int | str | None = None) -> dict[str, Any]:
        """Gender of one first name, full name or e-mail address (1 credit).

        :raises NameLookupValidationError: before sending, if the input breaks a rule.
        """
        query = _query_from_fields(self.secrets, first_name=first_name, full_name=full_name, email=email,
                                   country=country, locale=locale, ip=ip, id=id)
        return self.run(self._gender_steps(query))

    def iter_gender_batches(self, queries: Iterable[dict[str, Any] | str | Query]
                            ) -> Iterator[tuple[Sequence[Query], list[dict[str, Any]]]]:
        """Yield ``(queries, results)`` per array request, as each one is answered.

        Everything is validated before the first request. Each query travels with an id: its
        own, else its hash (:meth:`Query.identity`), and answers are matched by it. If a later
        request fails, the batches already yielded are kept by the caller: nothing answered is lost.
        """
        for batch in self._gender_batches(queries):
            yield batch, self.run(self._batch_steps(batch))

    def gender_batch(self, queries: Iterable[dict[str, Any] | str | Query]) -> list[dict[str, Any]]:
        """Gender of any number of queries, in input order (1 credit each); each result's
        ``input`` is the query as given.

        A string is a first name; a dict is a query object. Sent as arrays of at most the
        batch size; answers are matched to queries by ``id``.
        """
        given = prepare_queries(queries, secrets=self.secrets)
        results: list[dict[str, Any]] = []
        for batch in self._batched(given):
            results.extend(self.run(self._batch_steps(batch)))
        return [_as_given(query, result) for query, result in zip(given, results, strict=True)]

    def country_of_origin(self, *, first_name: str | None = None, full_name: str | None = None,
                          email: str | None = None, id: int | str | None = None) -> dict[str, Any]:
        """Countries of origin, language, meaning and ethnicity of a name (2 credits)."""
        query = _query_from_fields(self.secrets, first_name=first_name, full_name=full_name, email=email, id=id)
        return self.run(self._origin_steps(query))

    def iter_country_of_origin(self, queries: Iterable[dict[str, Any] | str | Query]
                               ) -> Iterator[tuple[Query, dict[str, Any]]]:
        """Yield ``(query, result)`` per country-of-origin lookup, one request each (2 credits each)."""
        for query in prepare_queries(queries, hints=LookupKind.ORIGIN.takes_hints, secrets=self.secrets):
            yield query, self.run(self._origin_steps(query))

    def get_statistic(self) -> dict[str, Any]:
        """Remaining credits and last month's usage (0 credits)."""
        return self.run(self._statistic_steps())

    def test_connection(self) -> tuple[bool, str]:
        """Check the token with the free statistic call."""
        try:
            return True, self._describe_statistic(self.get_statistic())
        except (NameLookupError, ValueError) as err:
            return False, str(err)

    @hook_or_class_method
    def sign_up(cls, hook: NameLookupHook | None, email: str, *, accept_terms: bool,
                newsletter: bool | None = None, locale: str | None = None,
                base_url: str | None = None) -> dict[str, Any]:
        """Create a free account; no token needed. Ask the user for consent first.

        Called on a hook, it signs up at that hook's service (its connection's host, e.g.
        the emulator); called on the class, at ``base_url`` (the public service by default).
        The answer holds ``api_token`` and ``password``: store the token in a connection's
        password field; it works once the e-mail address is confirmed.

        Example::

            NameLookupHook("namelookup_local").sign_up("me@example.com", accept_terms=True)
            NameLookupHook.sign_up("me@example.com", accept_terms=True)   # https://gender-api.com
        """
        if hook is not None and base_url is None:
            return hook.run(signup_call(email, accept_terms, newsletter, locale, hook.policy, hook.counters))
        with cls.for_url(base_url or DEFAULT_BASE_URL) as fresh:
            return fresh.run(signup_call(email, accept_terms, newsletter, locale, fresh.policy, fresh.counters))


class NameLookupAsyncHook(_NameLookupBase):
    """Asynchronous hook: the same calls as :class:`NameLookupHook`, awaited.

    Batches and country-of-origin lookups run concurrently over pooled
    ``httpx.AsyncClient`` instances (:class:`_Lanes`); how many at once adapts to the
    service (:attr:`concurrency`, between 1 and ``max_concurrency``). The connection is fetched without blocking the
    event loop.

    :param max_concurrency: the most requests in flight at once; default: the
        connection's ``max_concurrency`` extra, else 64.

    Example::

        async with NameLookupAsyncHook(max_concurrency=16) as hook:
            results = await hook.gender_batch(names)
            hook.concurrency.current, hook.concurrency.latency   # e.g. (16, 0.104)
    """

    _lanes: _Lanes | None = None
    _gate: ConcurrencyGate | None = None

    @property
    def concurrency(self) -> ConcurrencyLimit:
        """The controller of requests in flight, shared by every request of this hook."""
        if self._gate is None:
            self._gate = ConcurrencyGate(ConcurrencyLimit(self.max_concurrency))
        return self._gate.limit

    @property
    def gate(self) -> ConcurrencyGate:
        self.concurrency  # noqa: B018 (creates the gate)
        assert self._gate is not None
        return self._gate

    async def aget_settings(self) -> ClientSettings:
        if self._settings is None:
            from airflow.providers.common.compat.connection import get_async_connection

            conn = await get_async_connection(self.namelookup_conn_id, hook=self)
            self._settings = ClientSettings.from_connection(conn)
        return self._settings

    async def alanes(self) -> _Lanes:
        if self._lanes is None:
            settings = await self.aget_settings()
            await self._atls(settings)
            self._lanes = _Lanes(lambda size: httpx.AsyncClient(**self._async_client_options(settings, size)),
                                 self._ceiling(settings))
        return self._lanes

    def _async_client_options(self, settings: ClientSettings, connections: int) -> dict[str, Any]:
        """The client options, with httpx's transport checking its idle connections more cheaply
        (:mod:`.sockets`) unless a transport was given."""
        options = self._client_options(settings, connections)
        if options["transport"] is None:
            options["transport"] = idle_checked_transport(verify=options["verify"], limits=options["limits"])
        return options

    async def aclient(self) -> httpx.AsyncClient:
        """An HTTP client of this hook (the first of its :class:`_Lanes`)."""
        return (await self.alanes()).clients[0]

    async def get_async_conn(self) -> httpx.AsyncClient:
        """The pooled async HTTP client (the async counterpart of ``get_conn``)."""
        return await self.aclient()

    async def aclose(self) -> None:
        if self._lanes is not None:
            lanes, self._lanes = self._lanes, None
            await lanes.aclose()

    async def __aenter__(self) -> NameLookupAsyncHook:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _send(self, request: ApiRequest, stop: asyncio.Event | None = None
                    ) -> RawResponse | NameLookupConnectionError:
        lanes = await self.alanes()
        headers = self._headers(request, await self.aget_settings())
        gate = self.gate
        ticket = await gate.acquire(request.path, stop=stop)
        if ticket is None:  # the call's run stopped while it waited for a slot: nothing was sent
            raise _Stopped
        lane = lanes.least_busy()
        lanes.busy[lane] += 1
        started = time.monotonic()
        try:
            response = await lanes.clients[lane].request(request.method, request.path, content=_body(request),
                                                         headers=headers)
        except httpx.HTTPError as exc:
            gate.release(ticket, Outcome.CONGESTED)
            self.counters.sent(request.path, None, time.monotonic() - started)
            return _connection_error(exc, request, self.settings)
        except BaseException:
            gate.cancel(ticket)
            raise
        finally:
            lanes.busy[lane] -= 1
        round_trip = time.monotonic() - started
        self.counters.sent(request.path, response.status_code, round_trip)
        outcome, retry_after = _outcome(response)
        gate.release(ticket, outcome, retry_after=retry_after)
        if request.path == STATISTIC_PATH and outcome is Outcome.OK:  # a lone request, sent before the lookups
            gate.limit.far_away(round_trip)
        return _raw(response)

    async def run(self, steps: Steps, stop: asyncio.Event | None = None) -> Any:
        """Drive one call definition to its result (sending and sleeping as asked).

        :param stop: set when another call of the same lookups gave up for good: this one then sends
            nothing more (a request on its way is still answered; a wait for a slot or before a retry
            ends at once, raising :class:`_Stopped`).
        """
        await self.aget_settings()
        try:
            step = next(steps)
            while True:
                if isinstance(step, Send):
                    step = steps.send(await self._send(step.request, stop))
                    continue
                if stop is not None and stop.is_set():
                    raise _Stopped
                self._log_sleep(step)
                if await _pause(step.seconds, stop):
                    raise _Stopped
                step = steps.send(None)
        except StopIteration as done:
            return done.value
        except NameLookupError as err:
            self._name_the_source(err)
            raise
        finally:
            steps.close()

    async def _concurrently(self, calls: Sequence[Callable[[], Steps]]) -> AsyncIterator[tuple[int, Any]]:
        """Run calls as many at a time as the controller allows; yield ``(index, result)``
        as they end.

        On the first failure (a call that gave up for good) the others send nothing more: no new
        call starts, a call waiting for a slot or before a retry ends at once, and a request on its
        way is awaited and its result yielded (its credits are spent: its answer must not be lost)
        but not sent again if it fails; then the first error is raised.
        """
        pending = iter(range(len(calls)))
        running: dict[asyncio.Task[Any], int] = {}
        first_error: BaseException | None = None
        stop = asyncio.Event()
        await self.aget_settings()
        limit = self.concurrency

        def start_more() -> None:
            while len(running) < limit.current:
                index = next(pending, None)
                if index is None:
                    return
                running[asyncio.ensure_future(self.run(calls[index](), stop))] = index

        start_more()
        try:
            while running:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    index = running.pop(task)
                    error = task.exception()
                    if error is None:
                        yield index, task.result()
                        if first_error is None:
                            start_more()
                    elif first_error is None:
                        first_error = error
                        stop.set()
                        self.gate.wake_all()  # calls waiting for a slot see the stop
                    elif not (isinstance(error, _Stopped) or _alike(error, first_error)):
                        self.log.warning("Another call failed too: %s", error)
        finally:
            for task in running:
                task.cancel()
        if first_error is not None:
            raise first_error

    # The lookup run's service port (engine.ports.LookupService) ---------------------------------
    @property
    def shown_url(self) -> str:
        """The service's base URL as a log line may show it (no credentials)."""
        return display_url(httpx.URL(self.settings.base_url)).rstrip("/")

    def network(self) -> NetworkState:
        """Requests in flight now, how many are allowed, and the smoothed latency."""
        limit = self.concurrency
        return NetworkState(in_flight=limit.in_flight, allowed=limit.current,
                            latency_ms=round((limit.latency or 0.0) * 1000, 1))

    async def remaining_credits(self) -> int:
        """The account's remaining credits (one free statistic call)."""
        return int((await self.get_statistic()).get("remaining_credits") or 0)

    async def answers(self, lookup: LookupKind, queries: Mapping[str, Query], *,
                      lost_answers: LostAnswers | None = None) -> AsyncIterator[dict[str, Result]]:
        """Answers to the queries a lookup run planned, by their hash, as each request comes back.

        The queries were validated, with the connection's token refused, when they were planned
        (:mod:`airflow_provider_namelookup.engine.plan`): they are sent as they are, each with its
        hash as its id, gender ones in arrays. Up to :attr:`concurrency` requests are in flight; on
        a failure the answers of the requests in flight are yielded before the error is raised.

        :param queries: ``{hash: query}``.
        :param lost_answers: told of each answer lost after its request was sent, and asked before
            such a request is sent again (the run's budget, which may stop it).
        """
        await self.aget_settings()
        payloads = [_with_id(query.to_payload(), key) for key, query in queries.items()]
        if lookup is LookupKind.GENDER:
            batches = self.sizer.chunks(payloads)
            calls = [lambda batch=batch: gender_batch_call(batch, self.sizer, self.policy, self.counters, lost_answers)
                     for batch in batches]
            async for index, results in self._concurrently(calls):
                yield {payload["id"]: result for payload, result in zip(batches[index], results, strict=True)}
        else:
            calls = [lambda payload=payload: origin_call(payload, self.policy, self.counters, lost_answers)
                     for payload in payloads]
            async for index, result in self._concurrently(calls):
                yield {payloads[index]["id"]: result}

    async def gender(self, *, first_name: str | None = None, full_name: str | None = None,
                     email: str | None = None, country: str | None = None, locale: str | None = None,
                     ip: str | None = None, id: int | str | None = None) -> dict[str, Any]:
        """Gender of one first name, full name or e-mail address (1 credit)."""
        await self.aget_settings()
        query = _query_from_fields(self.secrets, first_name=first_name, full_name=full_name, email=email,
                                   country=country, locale=locale, ip=ip, id=id)
        return await self.run(self._gender_steps(query))

    async def iter_gender_batches(self, queries: Iterable[dict[str, Any] | str | Query]
                                  ) -> AsyncIterator[tuple[Sequence[Query], list[dict[str, Any]]]]:
        """Yield ``(queries, results)`` per array request as each is answered (any order).

        Up to :attr:`concurrency` requests are in flight. On a failure the requests in
        flight are still collected and yielded before the error is raised.
        """
        await self.aget_settings()
        async for _, batch, results in self._answered_batches(self._gender_batches(queries)):
            yield batch, results

    async def _answered_batches(self, batches: list[Sequence[Query]]
                                ) -> AsyncIterator[tuple[int, Sequence[Query], list[dict[str, Any]]]]:
        calls = [lambda batch=batch: self._batch_steps(batch) for batch in batches]
        async for index, results in self._concurrently(calls):
            yield index, batches[index], results

    async def gender_batch(self, queries: Iterable[dict[str, Any] | str | Query]) -> list[dict[str, Any]]:
        """Gender of any number of queries, in input order (1 credit each); each result's
        ``input`` is the query as given."""
        await self.aget_settings()
        given = prepare_queries(queries, secrets=self.secrets)
        batches = self._batched(given)
        starts = list(itertools.accumulate(map(len, batches), initial=0))
        results: list[dict[str, Any]] = [{} for _ in given]
        async for index, _, answered in self._answered_batches(batches):
            results[starts[index]:starts[index] + len(answered)] = answered
        return [_as_given(query, result) for query, result in zip(given, results, strict=True)]

    async def iter_country_of_origin(self, queries: Iterable[dict[str, Any] | str | Query]
                                     ) -> AsyncIterator[tuple[Query, dict[str, Any]]]:
        """Yield ``(query, result)`` per country-of-origin lookup, concurrently (2 credits each)."""
        await self.aget_settings()
        prepared = prepare_queries(queries, hints=LookupKind.ORIGIN.takes_hints, secrets=self.secrets)
        calls = [lambda q=q: self._origin_steps(q) for q in prepared]
        async for index, result in self._concurrently(calls):
            yield prepared[index], result

    async def country_of_origin(self, *, first_name: str | None = None, full_name: str | None = None,
                                email: str | None = None, id: int | str | None = None) -> dict[str, Any]:
        """Countries of origin, language, meaning and ethnicity of a name (2 credits)."""
        await self.aget_settings()
        query = _query_from_fields(self.secrets, first_name=first_name, full_name=full_name, email=email, id=id)
        return await self.run(self._origin_steps(query))

    async def get_statistic(self) -> dict[str, Any]:
        """Remaining credits and last month's usage (0 credits)."""
        return await self.run(self._statistic_steps())

    async def test_connection(self) -> tuple[bool, str]:
        """Check the token with the free statistic call."""
        try:
            return True, self._describe_statistic(await self.get_statistic())
        except (NameLookupError, ValueError) as err:
            return False, str(err)

    @hook_or_class_method
    async def sign_up(cls, hook: NameLookupAsyncHook | None, email: str, *, accept_terms: bool,
                      newsletter: bool | None = None, locale: str | None = None,
                      base_url: str | None = None) -> dict[str, Any]:
        """Create a free account; no token needed (see :meth:`NameLookupHook.sign_up`)."""
        if hook is not None and base_url is None:
            return await hook.run(signup_call(email, accept_terms, newsletter, locale, hook.policy,
                                              hook.counters))
        async with cls.for_url(base_url or DEFAULT_BASE_URL) as fresh:
            return await fresh.run(signup_call(email, accept_terms, newsletter, locale, fresh.policy,
                                               fresh.counters))


def _speaks_tls(base_url: str) -> bool:
    return not base_url.lower().startswith("http://")


@functools.cache
def _no_tls_expected() -> ssl.SSLContext:
    """The TLS context of a client of a plain ``http://`` service (the emulator): it never speaks
    TLS (redirects are not followed), so no CA bundle is loaded; should it ever try, no certificate
    is trusted (a client context verifies certificates and host names, with no trust anchors)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
