"""What the sync and async hooks share: the connection and its settings, the token's header, the
HTTP clients' options, the call definitions they drive, and the errors they raise.

A hook is a driver of the sans-I/O call definitions of :mod:`airflow_provider_namelookup.api`: this
base prepares each request (validated queries, batches, the ``Authorization`` header) and turns a
failed one into a :class:`~airflow_provider_namelookup.errors.NameLookupConnectionError`; the
subclasses only send and wait (:mod:`airflow_provider_namelookup.hooks.sync`,
:mod:`airflow_provider_namelookup.hooks.asynchronous`).

Example::

    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook

    hook = NameLookupHook.for_url("http://127.0.0.1:8000", token)   # a NameLookupHookBase
    hook.settings.base_url, hook.max_concurrency                    # ('http://127.0.0.1:8000', 64)
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from typing import Any

import httpx
import msgspec
from airflow.providers.common.compat.sdk import BaseHook

from airflow_provider_namelookup import __version__
from airflow_provider_namelookup.api import (
    ApiRequest,
    BatchSizer,
    RawResponse,
    RetryPolicy,
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
from airflow_provider_namelookup.contract import DEFAULT_BASE_URL, LookupKind
from airflow_provider_namelookup.errors import (
    NameLookupAuthError,
    NameLookupConnectionError,
    NameLookupConnectionMisconfigured,
    NameLookupError,
    NameLookupInsufficientCredits,
    NameLookupValidationError,
)
from airflow_provider_namelookup.hooks.settings import ClientSettings
from airflow_provider_namelookup.hooks.transport_errors import cannot_succeed, describe, display_url
from airflow_provider_namelookup.metrics import CallCounters
from airflow_provider_namelookup.models import Query

_USER_AGENT = f"airflow-provider-namelookup/{__version__}"
# Idle connections are dropped before common server idle timeouts (uvicorn's 5 s): reusing
# one as the server closes it loses a request that may have been charged.
_KEEPALIVE_SECONDS = 4.0
# Errors after which the request may have reached the service (and been charged).
_MAYBE_PROCESSED = (httpx.ReadError, httpx.ReadTimeout, httpx.RemoteProtocolError)


def _from_the_service(err: NameLookupError) -> bool:
    """Whether an error came from the service or the way to it (not from checking the input first, nor
    from the run's budget)."""
    return not (isinstance(err, NameLookupValidationError | NameLookupInsufficientCredits)
                and err.http_status is None)


class hook_or_class_method:
    """A method callable on the class or on an instance: it receives the class and the
    instance (None when called on the class), so one name serves both uses."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, instance: Any, owner: type) -> Callable[..., Any]:
        return functools.partial(self.func, owner, instance)


class NameLookupHookBase(BaseHook):
    """What both hooks share: the connection, settings and request preparation; the subclasses
    :class:`~airflow_provider_namelookup.hooks.namelookup.NameLookupHook` and
    :class:`~airflow_provider_namelookup.hooks.namelookup.NameLookupAsyncHook` send and wait.

    Example::

        hook = NameLookupAsyncHook.for_url("http://127.0.0.1:8000", token, max_concurrency=8)
        hook.source, hook.max_concurrency      # ('http://127.0.0.1:8000', 8)
    """

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
        """The request's own headers: its body's type (see :meth:`_body`) and the token."""
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

    @staticmethod
    def _body(request: ApiRequest) -> bytes | None:
        """The request's JSON body as httpx's ``json=`` would send it (compact, UTF-8), encoded by msgspec
        in a tenth of the CPU; the service's payloads hold only text and integers (:class:`Query`).

        >>> NameLookupHookBase._body(ApiRequest("POST", "/gender", [{"first_name": "Zoë", "id": 7}]))
        b'[{"first_name":"Zo\\xc3\\xab","id":7}]'
        """
        return None if request.json is None else msgspec.json.encode(request.json)

    def _connection_error(self, exc: httpx.HTTPError, request: ApiRequest) -> NameLookupConnectionError:
        """The request's URL and the cause, e.g. ``no answer to GET http://127.0.0.1:1/v2/statistic:
        connection refused: nothing listens on 127.0.0.1:1 (...)``."""
        settings = self.settings
        url = display_url(httpx.URL(settings.base_url + request.path))
        cause = describe(exc, secrets=(settings.token,) if settings.token else ())
        kind = NameLookupConnectionMisconfigured if cannot_succeed(exc) else NameLookupConnectionError
        return kind(f"no answer to {request.method} {url}: {cause}", maybe_processed=isinstance(exc, _MAYBE_PROCESSED))

    @staticmethod
    def _raw(response: httpx.Response) -> RawResponse:
        return RawResponse(response.status_code, response.content, response.headers.get("Retry-After"))

    def _log_sleep(self, step: Sleep) -> None:
        self.log.warning("Retrying in %.2f s: %s", step.seconds, step.reason)

    def _query(self, **fields: Any) -> Query:
        """One query from a call's keyword arguments (those given), the token refused."""
        return as_query({k: v for k, v in fields.items() if v is not None}, secrets=self.secrets)

    @staticmethod
    def _as_given(query: Query, result: dict[str, Any]) -> dict[str, Any]:
        """A result whose ``input`` echoes the query as the caller gave it (its hash was the id on the wire)."""
        return result if query.id is not None else {**result, "input": query.to_payload()}

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

    def _signup_steps(self, email: str, accept_terms: bool, newsletter: bool | None, locale: str | None) -> Steps:
        return signup_call(email, accept_terms, newsletter, locale, self.policy, self.counters)

    @classmethod
    def _signup_hook(cls, base_url: str | None) -> Any:
        """A hook of its own for a sign-up called on the class: at ``base_url``, else the public service."""
        return cls.for_url(base_url or DEFAULT_BASE_URL)


def _speaks_tls(base_url: str) -> bool:
    return not base_url.lower().startswith("http://")


@functools.cache
def _no_tls_expected() -> ssl.SSLContext:
    """The TLS context of a client of a plain ``http://`` service (the emulator): it never speaks
    TLS (redirects are not followed), so no CA bundle is loaded; should it ever try, no certificate
    is trusted (a client context verifies certificates and host names, with no trust anchors)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
