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
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_namelookup.contract import (
    GENDER_PATH,
    MAX_QUERIES_PER_REQUEST,
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
from airflow_provider_namelookup.validation import validate_query, validate_signup

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

    max_retries: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
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
            raise error
        if isinstance(error, NameLookupConnectionError) and error.maybe_processed:
            stats.queries_maybe_charged_twice += request.queries
        stats.retries += 1
        yield Sleep(wait, f"{request.method} {request.path} failed ({error}); "
                          f"attempt {attempt + 1} of {policy.max_retries + 1}")


def _count_credits(stats: CallStats, answer: Any) -> None:
    results = answer if isinstance(answer, list) else [answer]
    stats.credits_used += sum(credits_used(r) for r in results if isinstance(r, Mapping))


def as_query(item: Any, *, hints: bool = True, index: int | None = None) -> Query:
    """A :class:`Query` from a Query, a query dict or a bare string (a first name).

    :raises NameLookupValidationError: naming the position when ``index`` is given.
    """
    if isinstance(item, Query):
        return item if hints else item.without_hints()
    raw = {"first_name": item} if isinstance(item, str) else item
    try:
        return validate_query(raw, hints=hints)
    except NameLookupValidationError as err:
        if index is not None:
            err.detail = f"query {index}: {err.detail}"
        raise


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
    answer = yield from exchange(ApiRequest("POST", ORIGIN_PATH, query.without_hints().to_payload(),
                                            queries=1), policy, stats)
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


_TAG_PREFIX = "nl#"


def _wire_ids(queries: Sequence[Query]) -> tuple[list[Any], bool]:
    """Ids to send: the caller's where given, a private tag otherwise; and whether unique."""
    ids = [q.id if q.id is not None else f"{_TAG_PREFIX}{i}" for i, q in enumerate(queries)]
    keys = {(type(i).__name__, i) for i in ids}
    return ids, len(keys) == len(ids)


def match_results(queries: Sequence[Query], wire_ids: Sequence[Any], unique: bool,
                  answer: Any) -> list[dict[str, Any]]:
    """Order an array answer like its request: by echoed ``input.id``, else by position.

    Private tags added by :func:`gender_batch_call` are removed from the echoed input.
    """
    if not isinstance(answer, list) or not all(isinstance(r, dict) for r in answer):
        raise NameLookupServerError("invalid-answer", "an array lookup answered something else than objects")
    if len(answer) != len(queries):
        raise NameLookupServerError(
            "invalid-answer", f"the service answered {len(answer)} results for {len(queries)} queries")
    ordered: list[dict[str, Any] | None] = list(answer)
    if unique:
        position = {(type(i).__name__, i): n for n, i in enumerate(wire_ids)}
        by_id: list[dict[str, Any] | None] = [None] * len(queries)
        for result in answer:
            echoed = result.get("input")
            key = None
            if isinstance(echoed, dict) and "id" in echoed:
                key = (type(echoed["id"]).__name__, echoed["id"])
            n = position.get(key) if key is not None else None
            if n is None or by_id[n] is not None:
                break
            by_id[n] = result
        else:
            ordered = by_id
    final: list[dict[str, Any]] = []
    for query, result in zip(queries, ordered, strict=True):
        assert result is not None
        echoed = result.get("input")
        if query.id is None and isinstance(echoed, dict) and str(echoed.get("id", "")).startswith(_TAG_PREFIX):
            result = {**result, "input": {k: v for k, v in echoed.items() if k != "id"}}
        final.append(result)
    return final


def gender_batch_call(queries: Sequence[Query], sizer: BatchSizer, policy: RetryPolicy,
                      stats: CallStats) -> Steps:
    """Look up one batch (at most the sizer's limit); split it on ``too-many-queries``."""
    if len(queries) > sizer.limit:
        results: list[dict[str, Any]] = []
        for chunk in sizer.chunks(queries):
            results.extend((yield from gender_batch_call(chunk, sizer, policy, stats)))
        return results
    wire_ids, unique = _wire_ids(queries)
    payload = [{**q.to_payload(), "id": wire_id} for q, wire_id in zip(queries, wire_ids, strict=True)]
    try:
        answer = yield from exchange(ApiRequest("POST", GENDER_PATH, payload, queries=len(queries)),
                                     policy, stats)
    except NameLookupValidationError as err:
        if err.status_id != "too-many-queries" or len(queries) == 1:
            raise
        sizer.limit = max(1, min(sizer.limit, len(queries) // 2))
        return (yield from gender_batch_call(queries, sizer, policy, stats))
    _count_credits(stats, answer)
    return match_results(queries, wire_ids, unique, answer)


def prepare_queries(items: Iterable[Any], *, hints: bool = True) -> list[Query]:
    """Validate every item before anything is sent; the first bad one raises, naming its index."""
    return [as_query(item, hints=hints, index=i) for i, item in enumerate(items)]
