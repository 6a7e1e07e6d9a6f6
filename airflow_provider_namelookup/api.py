"""The service's wire protocol without I/O: requests, answers, retries and batching.

Every call is written once, as a generator of *steps*: it yields :class:`Send` (please
send this request and give me the outcome) and :class:`Sleep` (please wait before the
next attempt), and returns the decoded answer. The sync hook drives these generators
with ``httpx.Client`` and ``time.sleep``; the async hook with ``httpx.AsyncClient`` and
``asyncio.sleep``. Request building, error parsing, the retry policy, batching, the
``too-many-queries`` split and matching answers to queries therefore exist once.

Example (driving a call by hand, as the hooks do)::

    >>> steps = statistic_call(RetryPolicy(), CallCounters("namelookup_default"))
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

import random
import re
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import msgspec

from airflow_provider_namelookup.contract import (
    BACKOFF_MAX_SECONDS,
    CLIENT_DEFAULTS,
    GENDER_PATH,
    MAX_QUERIES_PER_REQUEST,
    MAX_RETRY_AFTER_SECONDS,
    ORIGIN_PATH,
    SIGNUP_PATH,
    STATISTIC_PATH,
    LookupKind,
)
from airflow_provider_namelookup.errors import (
    NameLookupConnectionError,
    NameLookupError,
    NameLookupServerError,
    NameLookupValidationError,
    error_from_response,
)
from airflow_provider_namelookup.metrics import CallCounters
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.token_guard import refuse_secret_in, validate_query_without_secrets
from airflow_provider_namelookup.validation import NAME_STATUS, validate_signup

DEFAULT_BATCH_SIZE = MAX_QUERIES_PER_REQUEST
T = TypeVar("T")


@dataclass(frozen=True)
class ApiRequest:
    """One HTTP request to the service.

    :param queries: how many lookups the request carries (for statistics and logs).
    :param credits: what the service charges when it processes the request (0: a free call).
    """

    method: str
    path: str
    json: Any = None
    auth: bool = True
    queries: int = 0
    credits: int = 0


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


class LostAnswers(Protocol):
    """What hears of answers lost after their request was sent (a connection reset or a read timeout
    once the request had gone): the service may have processed and charged it, and it has no
    idempotency key, so sending the request again may charge it again. A run's budget
    (:class:`~airflow_provider_namelookup.engine.budget.CreditBudget`) is one."""

    def lost(self, credits: int) -> None:
        """An answer worth ``credits`` was lost after its request was sent: they may have been charged."""
        ...

    def before_resend(self, credits: int) -> None:
        """The request of such an answer is about to be sent again; raise to stop it."""
        ...


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
    """The JSON body of ``response``; a body that is not JSON (RFC 8259: UTF-8, no ``NaN``) is a
    :class:`NameLookupServerError`.

    msgspec (which Airflow itself requires) decodes to the same dicts and lists as ``json.loads``
    in about half its CPU; an answer of 100 results is decoded on every request.

    >>> decode_json(RawResponse(200, b'[{"gender": "female", "probability": 0.98}]', None))
    [{'gender': 'female', 'probability': 0.98}]
    """
    try:
        return msgspec.json.decode(response.content)
    except (ValueError, UnicodeDecodeError):
        raise NameLookupServerError(
            "invalid-answer", "the service answered with a body that is not JSON",
            http_status=response.status) from None


def exchange(request: ApiRequest, policy: RetryPolicy, counters: CallCounters,
             lost_answers: LostAnswers | None = None) -> Steps:
    """Send one request with retries; return its decoded JSON (its credits counted) or raise its error.

    :param lost_answers: told of each answer lost after its request was sent (``counters`` count it
        too), and asked before such a request is sent again: it may stop it by raising.
    """
    attempt = 0
    while True:
        attempt += 1
        outcome = yield Send(request)
        counters.attempt(request.queries)  # sent (a driver whose run stopped sends nothing, and closes us)
        if isinstance(outcome, RawResponse) and 200 <= outcome.status < 300:
            return counters.answered(decode_json(outcome))
        if isinstance(outcome, NameLookupConnectionError):
            error: NameLookupError = outcome
        elif isinstance(outcome, RawResponse):
            error = error_from_response(outcome.status, outcome.content, retry_after=outcome.retry_after)
        else:
            raise RuntimeError("a step driver must answer Send with a RawResponse or a connection error")
        lost = isinstance(error, NameLookupConnectionError) and error.maybe_processed
        if lost:
            counters.lost(request.credits)
            if lost_answers is not None:
                lost_answers.lost(request.credits)
        wait = policy.delay(attempt, error)
        if wait is None:
            if attempt > 1:
                error.detail = f"{error.detail}; gave up after {attempt} attempts"
            raise error
        if lost and lost_answers is not None:
            lost_answers.before_resend(request.credits)
        yield Sleep(wait, f"{request.method} {request.path} failed ({error}); "
                          f"attempt {attempt + 1} of {policy.max_retries + 1}")
        counters.retried(request.queries, maybe_processed=lost)


def as_query(item: Any, *, hints: bool = True, index: int | None = None,
             secrets: Collection[str] = ()) -> Query:
    """A :class:`Query` from a Query, a query dict or a bare string (a first name).

    :param secrets: values no query may carry (the connection's token), see
        :mod:`airflow_provider_namelookup.token_guard`.
    :raises NameLookupValidationError: naming the position when ``index`` is given.
    """
    try:
        if isinstance(item, Query):
            return sendable(refuse_secret_in(item if hints else item.without_hints(), secrets))
        raw = {"first_name": item} if isinstance(item, str) else item
        return sendable(validate_query_without_secrets(raw, hints=hints, secrets=secrets))
    except NameLookupValidationError as err:
        if index is not None:
            err.detail = f"query {index}: {err.detail}"
        raise


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def sendable(query: Query) -> Query:
    """``query``, unless a name or id holds a lone surrogate, which UTF-8 (so the request body)
    cannot carry. The service's rules refuse one in a name, and the emulator echoes one in an
    id; the client cannot send it at all.

    >>> sendable(Query("first_name", "Anna", id="row-\\ud800"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    airflow_provider_namelookup.errors.NameLookupValidationError: invalid-id [id]: id holds a lone surrogate ...
    """
    for field_name, value in ((query.kind, query.name), ("id", query.id)):
        if isinstance(value, str) and not value.isascii() and _LONE_SURROGATE.search(value):
            status = "invalid-id" if field_name == "id" else NAME_STATUS[query.kind]
            raise NameLookupValidationError(
                status, f"{field_name} holds a lone surrogate (U+D800 to U+DFFF), which UTF-8 cannot carry; "
                        "it cannot be sent", field=field_name)
    return query


def single_gender_call(query: Query, policy: RetryPolicy, counters: CallCounters) -> Steps:
    """One gender lookup of ``query`` (``POST /v2/gender``); its answer object."""
    answer = yield from exchange(ApiRequest("POST", GENDER_PATH, query.to_payload(), queries=1,
                                            credits=LookupKind.GENDER.credits_per_query), policy, counters)
    if isinstance(answer, list) and len(answer) == 1:
        answer = answer[0]
    if not isinstance(answer, dict):
        raise NameLookupServerError("invalid-answer", "a gender lookup answered something else than an object")
    return answer


def origin_call(payload: Mapping[str, Any], policy: RetryPolicy, counters: CallCounters,
                lost_answers: LostAnswers | None = None) -> Steps:
    """One country-of-origin lookup of a query's payload (:meth:`Query.to_payload` of a query
    validated for it: without hints)."""
    answer = yield from exchange(ApiRequest("POST", ORIGIN_PATH, payload, queries=1,
                                            credits=LookupKind.ORIGIN.credits_per_query),
                                 policy, counters, lost_answers)
    if not isinstance(answer, dict):
        raise NameLookupServerError("invalid-answer", "country of origin answered something else than an object")
    return answer


def statistic_call(policy: RetryPolicy, counters: CallCounters) -> Steps:
    """The account's statistic (``GET /v2/statistic``, free): remaining credits and usage."""
    answer = yield from exchange(ApiRequest("GET", STATISTIC_PATH), policy, counters)
    if not isinstance(answer, dict):
        raise NameLookupServerError("invalid-answer", "the statistic answered something else than an object")
    return answer


def signup_call(email: str, accept_terms: bool, newsletter: bool | None, locale: str | None,
                policy: RetryPolicy, counters: CallCounters) -> Steps:
    """A sign-up (``POST /v2/sign-up``, no token), validated first; the new account's answer."""
    payload = validate_signup(email, accept_terms, newsletter, locale)
    answer = yield from exchange(ApiRequest("POST", SIGNUP_PATH, payload, auth=False), policy, counters)
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

    def chunks(self, items: Sequence[T]) -> list[Sequence[T]]:
        return [items[i:i + self.limit] for i in range(0, len(items), self.limit)]


def _id_key(value: Any) -> tuple[str, Any]:
    return type(value).__name__, value


def _echoed_in_order(payloads: Sequence[Mapping[str, Any]], answer: list[dict[str, Any]]) -> bool:
    """Whether every result echoes its own query's id (same type and value), in request order: the
    service's usual answer, checked in one pass."""
    for payload, result in zip(payloads, answer, strict=True):
        sent, echoed = payload.get("id"), result.get("input")
        if sent is None or type(echoed) is not dict:
            return False
        back = echoed.get("id")
        if type(back) is not type(sent) or back != sent:
            return False
    return True


def match_results(payloads: Sequence[Mapping[str, Any]], answer: Any) -> list[dict[str, Any]]:
    """Order an array answer like its request: by echoed ``input.id`` when every query
    carries a distinct id (the engine sends each query's hash as its id), else by position."""
    if not isinstance(answer, list) or not all(isinstance(r, dict) for r in answer):
        raise NameLookupServerError("invalid-answer", "an array lookup answered something else than objects")
    if len(answer) != len(payloads):
        raise NameLookupServerError(
            "invalid-answer", f"the service answered {len(answer)} results for {len(payloads)} queries")
    if _echoed_in_order(payloads, answer):
        return list(answer)  # what the matching below returns then, without its two maps
    position = {_id_key(p["id"]): n for n, p in enumerate(payloads) if p.get("id") is not None}
    if len(position) != len(payloads):
        return list(answer)
    by_id: list[dict[str, Any] | None] = [None] * len(payloads)
    for result in answer:
        echoed = result.get("input")
        n = position.get(_id_key(echoed["id"])) if isinstance(echoed, dict) and "id" in echoed else None
        if n is None or by_id[n] is not None:
            return list(answer)  # ids not echoed faithfully: the service keeps request order
        by_id[n] = result
    return [r for r in by_id if r is not None]


def gender_batch_call(payloads: Sequence[Mapping[str, Any]], sizer: BatchSizer, policy: RetryPolicy,
                      counters: CallCounters, lost_answers: LostAnswers | None = None) -> Steps:
    """Look up one batch of query payloads (at most the sizer's limit; :meth:`Query.to_payload`,
    each with its id); split it on ``too-many-queries``. The results are in the payloads' order."""
    if len(payloads) > sizer.limit:
        results: list[dict[str, Any]] = []
        for chunk in sizer.chunks(payloads):
            results.extend((yield from gender_batch_call(chunk, sizer, policy, counters, lost_answers)))
        return results
    request = ApiRequest("POST", GENDER_PATH, list(payloads), queries=len(payloads),
                         credits=len(payloads) * LookupKind.GENDER.credits_per_query)
    try:
        answer = yield from exchange(request, policy, counters, lost_answers)
    except NameLookupValidationError as err:
        if err.status_id != "too-many-queries" or len(payloads) == 1:
            raise
        sizer.limit = max(1, min(sizer.limit, len(payloads) // 2))
        return (yield from gender_batch_call(payloads, sizer, policy, counters, lost_answers))
    return match_results(payloads, answer)


def prepare_queries(items: Iterable[Any], *, hints: bool = True, secrets: Collection[str] = ()) -> list[Query]:
    """Validate every item before anything is sent; the first bad one raises, naming its index.

    :raises TypeError: for one query given where a list is wanted (a string would otherwise
        be looked up letter by letter, a dict key by key).
    """
    if isinstance(items, str | bytes | Mapping | Query):
        raise TypeError(f"queries must be a list of queries (names or query objects), got one "
                        f"{type(items).__name__}: wrap it in a list, or look up one name with gender(first_name=...)")
    return [as_query(item, hints=hints, index=i, secrets=secrets) for i, item in enumerate(items)]
