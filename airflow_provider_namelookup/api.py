"""The service's wire protocol without I/O: requests, answers, retries and batching.

Every call is written once, as a generator of *steps*: it yields :class:`Send` (please
send this request and give me the outcome) and :class:`Sleep` (please wait before the
next attempt), and returns the decoded answer. The sync hook drives these generators
with ``httpx.Client`` and ``time.sleep``; the async hook with ``httpx.AsyncClient`` and
``asyncio.sleep``. Request building, error parsing, the retry policy, batching, the
``too-many-queries`` split and matching answers to queries therefore exist once.

Example (driving a call by hand, as the hooks do)::

    >>> steps = statistic_call(RetryPolicy(), CallStats())
    >>> step = next(steps)
    >>> step.request.method, step.request.path
    ('GET', '/v2/statistic')
    >>> try:
    ...     steps.send(RawResponse(200, b'{"remaining_credits": 42}'))
    ... except StopIteration as done:
    ...     done.value["remaining_credits"]
    42
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_namelookup.contract import (
    BACKOFF_MAX_SECONDS,
    CLIENT_DEFAULTS,
    GENDER_PATH,
    MAX_QUERIES_PER_REQUEST,
    MAX_RETRY_AFTER_SECONDS,
    ORIGIN_PATH,
    SIGNUP_PATH,
    STATISTIC_PATH,
)
from airflow_provider_namelookup.errors import (
    NameLookupConnectionError,
    NameLookupError,
    NameLookupServerError,
    NameLookupValidationError,
    error_from_response,
)
from airflow_provider_namelookup.models import Query, credits_used
from airflow_provider_namelookup.token_guard import refuse_secret_in, validate_query_without_secrets
from airflow_provider_namelookup.validation import NAME_STATUS, validate_signup

DEFAULT_BATCH_SIZE = MAX_QUERIES_PER_REQUEST


@dataclass(frozen=True)
class ApiRequest:
    """One HTTP request to the service.

    :param queries: how many lookups the request carries (for statistics and logs).
    """

    method: str
    path: str
    json: Any = None
    auth: bool = True
    queries: int = 0


@dataclass(frozen=True)
class RawResponse:
    """What came back: status, raw body and the ``Retry-After`` header."""

    status: int
    content: bytes
    retry_after: str | None = None


@dataclass(frozen=True)
class Send:
    request: ApiRequest


@dataclass(frozen=True)
class Sleep:
    seconds: float
    reason: str


Step = Send | Sleep
Outcome = RawResponse | NameLookupConnectionError | None
Steps = Generator[Step, Outcome, Any]


@dataclass
class CallStats:
    """Counters kept across all calls of one hook (one per task run, typically).

    ``queries_maybe_charged_twice`` counts the lookups of requests that were sent but
    whose answer was lost (connection reset, read timeout) and were then retried: the
    service may have charged them twice. ``concurrency`` and ``latency_ms`` are the
    async hook's requests allowed in flight and smoothed latency after its last answer.
    """

    requests: int = 0
    retries: int = 0
    queries_sent: int = 0
    credits_used: int = 0
    queries_maybe_charged_twice: int = 0
    concurrency: int = 0
    latency_ms: float = 0.0

    def as_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "queries_sent": self.queries_sent,
            "credits_used": self.credits_used,
            "queries_maybe_charged_twice": self.queries_maybe_charged_twice,
        }


@dataclass(frozen=True)
class RetryPolicy:
    """When to send a request again, and after how long.

    Retried: no answer at all (connection refused or reset, timeouts), HTTP 5xx, and
    HTTP 429. Never retried: every other 4xx, including ``limit-exceeded`` (401) and
    validation errors, since the same request would fail the same way.

    The wait before retry *n* (1-based) is ``min(backoff_max, backoff_base * 2**(n-1))``
    with equal jitter (half fixed, half random), so concurrent clients spread out. A 429
    with ``Retry-After`` waits exactly what the service asked, unless that exceeds
    ``max_retry_after``, in which case the error is raised at once.

    :param max_retries: retries after the first attempt (0 disables retrying).
    :param backoff_base: seconds before the first retry (before jitter).
    :param backoff_max: upper bound of one wait.
    :param max_retry_after: longest ``Retry-After`` the client agrees to wait.
    """

    max_retries: int = int(CLIENT_DEFAULTS["max_retries"])
    backoff_base: float = CLIENT_DEFAULTS["backoff_base"]
    backoff_max: float = BACKOFF_MAX_SECONDS
    max_retry_after: float = MAX_RETRY_AFTER_SECONDS
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay(self, attempt: int, error: NameLookupError) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None to give up and raise."""
        if not error.retryable or attempt > self.max_retries:
            return None
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        ceiling = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)


def decode_json(response: RawResponse) -> Any:
    try:
        return json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        raise NameLookupServerError(
            "invalid-answer", "the service answered with a body that is not JSON",
            http_status=response.status) from None


def exchange(request: ApiRequest, policy: RetryPolicy, stats: CallStats) -> Steps:
    """Send one request with retries; return its decoded JSON or raise its error."""
    attempt = 0
    while True:
        attempt += 1
        stats.requests += 1
        stats.queries_sent += request.queries
        outcome = yield Send(request)
        if isinstance(outcome, RawResponse) and 200 <= outcome.status < 300:
            return decode_json(outcome)
        if isinstance(outcome, NameLookupConnectionError):
            error: NameLookupError = outcome
        elif isinstance(outcome, RawResponse):
            error = error_from_response(outcome.status, outcome.content, retry_after=outcome.retry_after)
        else:
            raise RuntimeError("a step driver must answer Send with a RawResponse or a connection error")
        wait = policy.delay(attempt, error)
        if wait is None:
            if attempt > 1:
                error.detail = f"{error.detail}; gave up after {attempt} attempts"
            raise error
        if isinstance(error, NameLookupConnectionError) and error.maybe_processed:
            stats.queries_maybe_charged_twice += request.queries
        stats.retries += 1
        yield Sleep(wait, f"{request.method} {request.path} failed ({error}); "
                          f"attempt {attempt + 1} of {policy.max_retries + 1}")


def _count_credits(stats: CallStats, answer: Any) -> None:
    results = answer if isinstance(answer, list) else [answer]
    stats.credits_used += sum(credits_used(r) for r in results if isinstance(r, Mapping))


def as_query(item: Any, *, hints: bool = True, index: int | None = None,
             secrets: Collection[str] = ()) -> Query:
    """A :class:`Query` from a Query, a query dict or a bare string (a first name).

    :param secrets: values no query may carry (the connection's token), see
        :mod:`airflow_provider_namelookup.token_guard`.
    :raises NameLookupValidationError: naming the position when ``index`` is given.
    """
    try:
        if isinstance(item, Query):
            return _sendable(refuse_secret_in(item if hints else item.without_hints(), secrets))
        raw = {"first_name": item} if isinstance(item, str) else item
        return _sendable(validate_query_without_secrets(raw, hints=hints, secrets=secrets))
    except NameLookupValidationError as err:
        if index is not None:
            err.detail = f"query {index}: {err.detail}"
        raise


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _sendable(query: Query) -> Query:
    """``query``, unless a name or id holds a lone surrogate, which UTF-8 (so the request body)
    cannot carry. The service's rules refuse one in a name, and the emulator echoes one in an
    id; the client cannot send it at all.

    >>> _sendable(Query("first_name", "Anna", id="row-\\ud800"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    NameLookupValidationError: invalid-id [id]: id holds a lone surrogate (U+D800 to U+DFFF), ...
    """
    for field_name, value in ((query.kind, query.name), ("id", query.id)):
        if isinstance(value, str) and not value.isascii() and _LONE_SURROGATE.search(value):
            status = "invalid-id" if field_name == "id" else NAME_STATUS[query.kind]
            raise NameLookupValidationError(
                status, f"{field_name} holds a lone surrogate (U+D800 to U+DFFF), which UTF-8 cannot carry; "
                        "it cannot be sent", field=field_name)
    return query


def single_gender_call(query: Query, policy: RetryPolicy, stats: CallStats) -> Steps:
    answer = yield from exchange(ApiRequest("POST", GENDER_PATH, query.to_payload(), queries=1),
                                 policy, stats)
    if isinstance(answer, list) and len(answer) == 1:
        answer = answer[0]
    if not isinstance(answer, dict):
        raise NameLookupServerError("invalid-answer", "a gender lookup answered something else than an object")
    _count_credits(stats, answer)
    return answer


def origin_call(query: Query, policy: RetryPolicy, stats: CallStats) -> Steps:
    """One country-of-origin lookup (the query as validated for it: without hints)."""
    answer = yield from exchange(ApiRequest("POST", ORIGIN_PATH, query.to_payload(), queries=1), policy, stats)
    if not isinstance(answer, dict):
        raise NameLookupServerError("invalid-answer", "country of origin answered something else than an object")
    _count_credits(stats, answer)
    return answer


def statistic_call(policy: RetryPolicy, stats: CallStats) -> Steps:
    answer = yield from exchange(ApiRequest("GET", STATISTIC_PATH), policy, stats)
    if not isinstance(answer, dict):
        raise NameLookupServerError("invalid-answer", "the statistic answered something else than an object")
    return answer


def signup_call(email: str, accept_terms: bool, newsletter: bool | None, locale: str | None,
                policy: RetryPolicy, stats: CallStats) -> Steps:
    payload = validate_signup(email, accept_terms, newsletter, locale)
    answer = yield from exchange(ApiRequest("POST", SIGNUP_PATH, payload, auth=False), policy, stats)
    if not isinstance(answer, dict):
        raise NameLookupServerError("invalid-answer", "sign-up answered something else than an object")
    return answer


class BatchSizer:
    """The largest array the service accepts, learned from ``too-many-queries`` answers.

    Shared by all batches of one hook, so after one split every later batch is sent at
    the size that worked.
    """

    def __init__(self, limit: int = DEFAULT_BATCH_SIZE) -> None:
        if limit < 1:
            raise ValueError("batch size must be at least 1")
        self.limit = limit

    def chunks(self, items: Sequence[Query]) -> list[Sequence[Query]]:
        return [items[i:i + self.limit] for i in range(0, len(items), self.limit)]


def _id_key(value: Any) -> tuple[str, Any]:
    return type(value).__name__, value


def match_results(queries: Sequence[Query], answer: Any) -> list[dict[str, Any]]:
    """Order an array answer like its request: by echoed ``input.id`` when every query
    carries a distinct id (the engine sends each query's hash as its id), else by position."""
    if not isinstance(answer, list) or not all(isinstance(r, dict) for r in answer):
        raise NameLookupServerError("invalid-answer", "an array lookup answered something else than objects")
    if len(answer) != len(queries):
        raise NameLookupServerError(
            "invalid-answer", f"the service answered {len(answer)} results for {len(queries)} queries")
    position = {_id_key(q.id): n for n, q in enumerate(queries) if q.id is not None}
    if len(position) != len(queries):
        return list(answer)
    by_id: list[dict[str, Any] | None] = [None] * len(queries)
    for result in answer:
        echoed = result.get("input")
        n = position.get(_id_key(echoed["id"])) if isinstance(echoed, dict) and "id" in echoed else None
        if n is None or by_id[n] is not None:
            return list(answer)  # ids not echoed faithfully: the service keeps request order
        by_id[n] = result
    return [r for r in by_id if r is not None]


def gender_batch_call(queries: Sequence[Query], sizer: BatchSizer, policy: RetryPolicy,
                      stats: CallStats) -> Steps:
    """Look up one batch (at most the sizer's limit); split it on ``too-many-queries``."""
    if len(queries) > sizer.limit:
        results: list[dict[str, Any]] = []
        for chunk in sizer.chunks(queries):
            results.extend((yield from gender_batch_call(chunk, sizer, policy, stats)))
        return results
    payload = [q.to_payload() for q in queries]
    try:
        answer = yield from exchange(ApiRequest("POST", GENDER_PATH, payload, queries=len(queries)),
                                     policy, stats)
    except NameLookupValidationError as err:
        if err.status_id != "too-many-queries" or len(queries) == 1:
            raise
        sizer.limit = max(1, min(sizer.limit, len(queries) // 2))
        return (yield from gender_batch_call(queries, sizer, policy, stats))
    _count_credits(stats, answer)
    return match_results(queries, answer)


def prepare_queries(items: Iterable[Any], *, hints: bool = True, secrets: Collection[str] = ()) -> list[Query]:
    """Validate every item before anything is sent; the first bad one raises, naming its index.

    :raises TypeError: for one query given where a list is wanted (a string would otherwise
        be looked up letter by letter, a dict key by key).
    """
    if isinstance(items, str | bytes | Mapping | Query):
        raise TypeError(f"queries must be a list of queries (names or query objects), got one "
                        f"{type(items).__name__}: wrap it in a list, or look up one name with gender(first_name=...)")
    return [as_query(item, hints=hints, index=i, secrets=secrets) for i, item in enumerate(items)]
