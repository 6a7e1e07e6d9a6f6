"""Exceptions for every failure the Name Lookup Service (or the way to it) can produce.

Each status identifier of the spec's error table maps to exactly one class
(:data:`STATUS_CLASSES`) and one HTTP code (:data:`STATUS_HTTP`). Errors read
from the wire are built by :func:`error_from_response`, which understands
RFC 7807 problem details, legacy v1 bodies and bodies that are not JSON at all.

Example::

    >>> err = error_from_response(401, b'{"title": "limit-exceeded", "detail": "Limit exceeded."}')
    >>> type(err).__name__, err.status_id, err.http_status, err.retryable
    ('NameLookupLimitExceeded', 'limit-exceeded', 401, False)
    >>> err.source = "connection 'namelookup_local'"   # as a hook sets it
    >>> str(err)
    "limit-exceeded (HTTP 401) from connection 'namelookup_local': Limit exceeded."
"""

from __future__ import annotations

import json
from typing import Any


class NameLookupError(Exception):
    """Base of every error raised by this provider.

    :param status_id: the service's status identifier (``"invalid-country-code"``), or a
        ``transport-error`` / ``http-<code>`` identifier of ours when the service gave none.
    :param detail: human-readable explanation; never contains the API token.
    :param http_status: the HTTP status code, or ``None`` when no answer came back.
    :param field: the request field the error is about (``"country"``), when known.
    """

    retryable: bool = False
    """Whether sending the same request again may succeed (5xx, 429, no answer)."""
    source: str | None = None
    """Where the error came from, set by the hook that raised it: ``"connection 'namelookup_local'"``,
    or the base URL of a hook made with ``for_url``; shown by ``str``, never the token."""

    def __init__(
        self,
        status_id: str,
        detail: str,
        *,
        http_status: int | None = None,
        field: str | None = None,
    ) -> None:
        self.status_id = status_id
        self.detail = detail
        self.http_status = http_status
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" [{self.field}]" if self.field else ""
        code = f" (HTTP {self.http_status})" if self.http_status is not None else ""
        source = f" from {self.source}" if self.source else ""
        return f"{self.status_id}{code}{where}{source}: {self.detail}"

    def __repr__(self) -> str:
        # The message as it is now: the hooks add ``source`` (and a query's position) after creation.
        return f"{type(self).__name__}({str(self)!r})"

    def as_dict(self) -> dict[str, Any]:
        """The JSON-serialisable row error used in XCom and table sinks."""
        return {"status_id": self.status_id, "detail": self.detail, "field": self.field}


class NameLookupAuthError(NameLookupError):
    """The request carried no usable credentials (missing or invalid token or key)."""


class NameLookupLimitExceeded(NameLookupError):
    """The account has no credits left. Not an authentication problem; retrying does not help.

    :param upgrade_url: link to buy more credits, when the service sent one.
    """

    def __init__(self, status_id: str = "limit-exceeded", detail: str = "Limit exceeded.",
                 *, upgrade_url: str | None = None, **kwargs: Any) -> None:
        self.upgrade_url = upgrade_url
        kwargs.setdefault("http_status", 401)
        super().__init__(status_id, detail, **kwargs)


class NameLookupValidationError(NameLookupError):
    """The request broke an input rule; fix the input, do not retry."""


class NameLookupEndpointNotFound(NameLookupError):
    """The path does not exist: usually a wrong base URL in the connection's host."""


class NameLookupRateLimited(NameLookupError):
    """HTTP 429; retried by the hooks, raised once retries are exhausted.

    :param retry_after: seconds the service asked to wait, when it said.
    """

    retryable = True

    def __init__(self, status_id: str, detail: str, *, retry_after: float | None = None,
                 **kwargs: Any) -> None:
        self.retry_after = retry_after
        super().__init__(status_id, detail, **kwargs)


class NameLookupServerError(NameLookupError):
    """A 5xx answer, ``generic-error``, or an answer that could not be understood.

    Only 5xx answers are retried: ``generic-error`` comes with HTTP 400, and 4xx is never retried.
    """

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.http_status is not None and self.http_status >= 500


class NameLookupConnectionError(NameLookupError):
    """No answer came back (connection refused, reset, timed out) after every retry.

    :param maybe_processed: True when the request had been sent before the connection
        failed, so the service may have processed (and charged) it.
    """

    retryable = True

    def __init__(self, detail: str, *, maybe_processed: bool = False) -> None:
        self.maybe_processed = maybe_processed
        super().__init__("transport-error", detail)


class NameLookupConnectionMisconfigured(NameLookupConnectionError):
    """No answer can ever come with the connection as it is (https to a plain-HTTP port, a
    certificate the client does not trust, a host name that does not exist): neither the
    hooks nor Airflow retry it."""

    retryable = False


class InvalidArgument(ValueError):
    """An argument of an operator or sensor, as templated at run time, breaks its rule
    (``max_credits="{{ params.budget }}"`` rendered as ``"many"``): every retry renders it the same
    way, so the operators and the sensor fail at once, without Airflow's retries. (Arguments that
    are not templated are checked when the DAG is parsed.)"""


UNFIXABLE_SERVICE_ERRORS: tuple[type[NameLookupError], ...] = (
    NameLookupAuthError, NameLookupEndpointNotFound, NameLookupValidationError, NameLookupConnectionMisconfigured)
"""What the service (or the way to it) says that the same request meets again however long one
waits: a missing or invalid token, a wrong base URL, a request rejected as a whole, a connection
that can never be answered as configured. Not credits used up: they can be bought."""


def what_to_change(err: BaseException) -> str:
    """What to change so that the next run succeeds, for an error whose message does not say it
    already (the service's answer to a wrong token or base URL names no field of the connection).

    >>> err = NameLookupAuthError("invalid-auth-token", "The bearer token is invalid.", http_status=400)
    >>> err.source = "connection 'namelookup_default'"
    >>> what_to_change(err)
    "; fix the API token: the password of connection 'namelookup_default'"
    """
    where = getattr(err, "source", None) or "the namelookup connection"
    if isinstance(err, NameLookupAuthError):
        return f"; fix the API token: the password of {where}"
    if isinstance(err, NameLookupEndpointNotFound):
        return f"; fix the service's base URL: the host of {where}"
    return ""


def with_what_to_change(err: BaseException) -> str:
    """``err``'s message and :func:`what_to_change` (one sentence: its full stop dropped)."""
    advice = what_to_change(err)
    return f"{str(err).rstrip().rstrip('.')}{advice}" if advice else str(err)


_AUTH = NameLookupAuthError
_VALID = NameLookupValidationError

# status identifier -> (HTTP code, class): the spec's error table, complete.
_STATUS_TABLE: dict[str, tuple[int, type[NameLookupError]]] = {
    "endpoint-not-found": (404, NameLookupEndpointNotFound),
    "limit-exceeded": (401, NameLookupLimitExceeded),
    "parameter-first-name-invalid": (400, _VALID),
    "parameter-full-name-invalid": (400, _VALID),
    "parameter-email-invalid": (400, _VALID),
    "key-parameter-missing": (400, _AUTH),
    "invalid-key": (400, _AUTH),
    "invalid-country-code": (400, _VALID),
    "invalid-ip-address": (400, _VALID),
    "generic-error": (400, NameLookupServerError),
    "invalid-json": (400, _VALID),
    "invalid-locale": (400, _VALID),
    "invalid-id": (400, _VALID),
    "mandatory-parameter-missing": (400, _VALID),
    "content-type-missing": (400, _VALID),
    "missing-json": (400, _VALID),
    "too-many-queries": (400, _VALID),
    "too-many-queries-api-key": (400, _VALID),
    "authorization-header-missing": (400, _AUTH),
    "invalid-auth-token": (400, _AUTH),
    "email-invalid": (400, _VALID),
    "password-invalid": (400, _AUTH),
    "label-invalid": (400, _VALID),
    "email-account-not-found": (400, _VALID),
    "invalid-list-of-names": (400, _VALID),
    "terms-not-accepted": (400, _VALID),
    "email-already-registered": (400, _VALID),
    "signup-rate-limit": (429, NameLookupRateLimited),
    "signup-email-rejected": (400, _VALID),
}

STATUS_HTTP: dict[str, int] = {sid: code for sid, (code, _) in _STATUS_TABLE.items()}
"""Status identifier → HTTP code, as the spec's error table gives it."""

STATUS_CLASSES: dict[str, type[NameLookupError]] = {sid: cls for sid, (_, cls) in _STATUS_TABLE.items()}
"""Status identifier → the one exception class that represents it."""


def _class_for_http(http_status: int | None) -> type[NameLookupError]:
    if http_status is None:
        return NameLookupError
    if http_status == 429:
        return NameLookupRateLimited
    if http_status >= 500:
        return NameLookupServerError
    if http_status == 404:
        return NameLookupEndpointNotFound
    if http_status in (401, 403):
        return NameLookupAuthError
    return NameLookupError


def _identifier_from(body: dict[str, Any]) -> str | None:
    """Find the status identifier the way the wire notes say: title, type tail, errmsg, error."""
    title = body.get("title")
    if isinstance(title, str) and title in STATUS_HTTP:
        return title
    type_uri = body.get("type")
    if isinstance(type_uri, str) and type_uri.rstrip("/"):
        tail = type_uri.rstrip("/").rsplit("/", 1)[-1]
        if tail in STATUS_HTTP:
            return tail
    for key in ("title", "errmsg", "error", "status_id"):
        value = body.get(key)
        if isinstance(value, str) and value.strip() and " " not in value.strip():
            return value.strip()
    return None


def _detail_from(body: dict[str, Any]) -> str | None:
    for key in ("detail", "errmsg", "message", "error", "title"):
        value = body.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    import pendulum

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (pendulum.instance(when) - pendulum.now("UTC")).total_seconds())


def error_from_response(
    http_status: int,
    body: bytes | str | None,
    *,
    retry_after: str | None = None,
) -> NameLookupError:
    """Turn an error answer into the matching exception; never raises itself.

    :param http_status: the answer's HTTP code.
    :param body: the raw body (JSON problem details, a v1 body, HTML, or nothing).
    :param retry_after: the ``Retry-After`` header, if any.
    """
    parsed: Any = None
    if body:
        try:
            parsed = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            parsed = None
    status_id: str | None = None
    detail: str | None = None
    upgrade_url: str | None = None
    if isinstance(parsed, dict):
        status_id = _identifier_from(parsed)
        detail = _detail_from(parsed)
        url = parsed.get("upgrade_url")
        upgrade_url = url if isinstance(url, str) else None
    elif body:
        detail = f"the service answered HTTP {http_status} with a body that is not JSON problem details"
    if detail is None:
        detail = f"the service answered HTTP {http_status} with no explanation"
    if status_id is None:
        status_id = f"http-{http_status}"
        cls = _class_for_http(http_status)
        if cls is NameLookupError and not isinstance(parsed, dict):
            cls = NameLookupServerError  # an unreadable answer (a proxy's HTML page, say)
    else:
        cls = STATUS_CLASSES.get(status_id) or _class_for_http(http_status)
    if cls is NameLookupLimitExceeded:
        return NameLookupLimitExceeded(status_id, detail, upgrade_url=upgrade_url, http_status=http_status)
    if cls is NameLookupRateLimited:
        return NameLookupRateLimited(status_id, detail, retry_after=parse_retry_after(retry_after),
                                     http_status=http_status)
    return cls(status_id, detail, http_status=http_status)


class NameLookupInsufficientCredits(NameLookupError):
    """A run needs more credits than its budget or the account allows; nothing was spent.

    Raised by the operators before the first lookup (status ``insufficient-credits``, an
    identifier of this provider, not of the service).
    """

    def __init__(self, detail: str, *, needed: int, available: int) -> None:
        self.needed = needed
        self.available = available
        super().__init__("insufficient-credits", detail)


class NameLookupBudgetReached(NameLookupInsufficientCredits):
    """A run stopped sending before ``max_credits``: answers lost after their request was sent may
    have been charged (the service has no idempotency key), and sending such a request again, or the
    next one, could take what was charged past it. What was answered is kept; the rest is left for
    the next run (raised when ``on_insufficient_credits="fail"``, else only logged).

    :param maybe_charged: credits of the answers lost on the way.
    """

    def __init__(self, detail: str, *, needed: int, available: int, maybe_charged: int) -> None:
        self.maybe_charged = maybe_charged
        super().__init__(detail, needed=needed, available=available)


class NameLookupOverBudget(NameLookupInsufficientCredits):
    """The run needs more than its ``max_credits`` (less what earlier tries spent, with
    ``max_credits_scope="dag_run"``) allows: every retry of the task meets the same budget, so the
    operators fail at once, without Airflow's retries. A need beyond the account's remaining credits
    alone is a :class:`NameLookupInsufficientCredits` and is retried (credits can be bought meanwhile)."""
