"""The emulator's HTTP layer: a Starlette app that answers like Name Lookup Service API v2.

The admin endpoints under ``/emulator/...`` create accounts with any number of credits.
On loopback they are open; the emulator refuses to listen on another address unless an
admin token is given, and with a token every admin call must send it
(:mod:`~airflow_provider_namelookup.emulator.admin_access`).

Service endpoints (JSON bodies need ``Content-Type: application/json``)
-----------------------------------------------------------------------

=========================================  =============  ==================================
``POST /v2/sign-up``                       none           create an account (awaiting activation)
``POST /v2/gender``                        token or key   object → one result; array → a bare array
``POST /v2/gender/by-first-name``          token or key   as ``/v2/gender``, reads ``first_name`` only
``POST /v2/gender/by-full-name``           token or key   as ``/v2/gender``, reads ``full_name`` only
``POST /v2/gender/by-email-address``       token or key   as ``/v2/gender``, reads ``email`` only
``POST /v2/gender/by-...-multiple``        token or key   the same three for arrays
``POST /v2/country-of-origin``             token or key   one object; 2 credits
``GET /v2/statistic``                      token or key   credits left and last month's usage; 0 credits
=========================================  =============  ==================================

* The aliases fix the name field: ``by-first-name*`` read ``first_name``,
  ``by-full-name*`` read ``full_name``, ``by-email-address*`` read ``email``; other name
  fields of the object are ignored, and an object without the alias's field is
  ``mandatory-parameter-missing``. Every gender endpoint answers in the shape it was
  sent: an object gives one result, an array a bare array of results (in request
  order, each with its own ``input`` echo and ``details.credits_used``).
  ``/v2/gender`` picks the first present of ``first_name``, ``full_name``, ``email``.
* Hints localise gender answers with the precedence ``country`` > region of ``locale``
  > country of ``ip`` (:mod:`~airflow_provider_namelookup.emulator.geoip`);
  ``details.country`` is the hint country when its data was used, else null.
  Country of origin ignores hints.
* An empty array is ``mandatory-parameter-missing``; more than 100 queries is
  ``too-many-queries``; one invalid element fails the whole request with that
  element's identifier, its index named in ``detail`` (``query 3: ...``).

Answers come from gender-guesser's name data (:mod:`~airflow_provider_namelookup.emulator.names`,
:mod:`~airflow_provider_namelookup.emulator.origin`; full-name and e-mail splitting in
:mod:`~airflow_provider_namelookup.emulator.answers`). A name that is not in the data
answers ``result_found: false``, ``gender: "unknown"``, ``probability: 0`` and
``details.samples: 0``; a name the data gives exactly as often to both genders answers
``gender: "unknown"`` and ``result_found: false`` with ``probability: 0.5``.
``details.duration`` is the request's real processing time in whole milliseconds
(every element of an array carries the request's time). ``first_name`` is written as the
data spells it; other names are capitalised when sent all lower or all upper case.

Input rules beyond the spec's lengths (decided here, applied by the client's validation
alike, so a row the provider refuses costs nothing and one it sends is answered):

* An e-mail address needs a dot-atom local part: ``...@example.com`` and ``a..b@x.io`` are
  ``parameter-email-invalid``.
* A value from which no first name can be read is refused with its field's error, not
  answered: a ``first_name`` or ``full_name`` without a letter (``","``, ``"12345"``) is
  ``parameter-first-name-invalid`` / ``parameter-full-name-invalid``; an ``email`` whose
  part before ``@`` holds no letter (``12345@example.com``) is ``parameter-email-invalid``.
  Nothing is charged. Every answered result has ``first_name`` as a string (``""`` if a
  split still finds none), never null.
* ``id`` is an integer from -2^63 to 2^63-1 or a string of at most 50 characters; a
  longer integer (even one of 5,000 digits) is ``invalid-id``.
* ``invalid-json`` covers bodies that do not parse, are not UTF-8, hold ``NaN`` or
  ``Infinity`` or a number beyond a 64-bit float (``1e400``), or nest arrays or objects
  too deeply (100,000 levels); its ``detail`` says which, in words for a user.

Checks run in this order, and the first failure answers: the route
(``endpoint-not-found``, also for a wrong method or a trailing slash) → the body
(``content-type-missing``, ``missing-json``, ``invalid-json``) → authentication → the
query rules of :func:`~airflow_provider_namelookup.validation.validate_query`
(``too-many-queries-api-key``, ``too-many-queries``, then each query) → credits.

Authentication: ``Authorization: Bearer <token>``; without the header, the legacy
``?key=<token>`` query parameter is accepted instead (same tokens). Header absent and
no key → ``authorization-header-missing``; a header that is not ``Bearer <token>``, an
unknown token, or the token of an account still awaiting activation →
``invalid-auth-token``; ``key=`` empty → ``key-parameter-missing``; unknown or not yet
activated key → ``invalid-key``; more than 3 lookups in a request with a key →
``too-many-queries-api-key``.

Credits: a gender query costs 1, a country-of-origin query 2 (``details.credits_used``);
an array is charged per query, all or nothing: if the request costs more than is left,
it is refused whole with 401 ``limit-exceeded`` (with ``upgrade_url``) and nothing is
charged. Refused requests of any kind are never charged. The answer is built and
encoded before the credits are taken, so no 5xx ever costs a credit: for any body the
emulator answers either 2xx at the documented price or an error that charged nothing.
The allowance is monthly (calendar month, UTC).

Fault injection, when switched on, acts on every ``/v2/...`` request before all of this
(:mod:`~airflow_provider_namelookup.emulator.faults`), and so do the per-token limits of
requests in flight and per second (:mod:`~airflow_provider_namelookup.emulator.limits`):
429 ``too-many-requests`` with ``Retry-After``, never charged.

Errors are RFC 7807 problem details (``application/problem+json``)::

    {"status": 400, "type": "<base>/en/api-docs/v2/index/problem-details/invalid-json",
     "title": "invalid-json", "detail": "..."}

with the spec's HTTP code for each identifier. ``generic-error`` is answered with 400
for request problems the table has no identifier for (a body over 1 MiB, an unknown
activation link) and with 500 when something fails unexpectedly inside the emulator:
never a stack trace.

Sign-up: ``validate_signup`` rules (``email-invalid``, ``terms-not-accepted``;
``newsletter`` must be ``true`` or ``false`` when given, else ``generic-error`` naming
``newsletter``; ``locale`` is the account's language as the spec says, a two-letter
language code (``en``, ``de``, ``es`` get mails in that language, others in English),
else ``invalid-locale``); a disposable domain → ``signup-email-rejected``; an address already
registered (any case) → ``email-already-registered``; more than 20 attempts from one
client address in 10 minutes (configurable) → 429 ``signup-rate-limit`` with
``Retry-After``. The account gets a random password and token (``secrets``) and waits
for activation: the activation link goes to the outbox.

Emulator endpoints
------------------

Open on loopback. Started with an admin token (``--admin-token``, required to listen on
any other address), every one of them except ``activate``, ``health``, ``docs``,
``upgrade`` and ``map`` needs the header ``X-Emulator-Admin-Token: <token>``; without it
they answer 401 ``invalid-auth-token``.

* ``GET /emulator/activate?code=...``: the activation link from the outbox.
* ``GET /emulator/outbox[?email=...]``: sent messages ``[{to, subject, body, link, sent_at}]``.
* ``POST /emulator/accounts`` ``{api_token?, credits?=100, email?, monthly_allowance?}``:
  create an activated account; answers 201 with its ``api_token``.
* ``POST /emulator/accounts/credits`` ``{api_token, add?, remaining?, monthly_allowance?}``:
  top up (or set) credits; answers ``{remaining_credits}``.
* ``POST /emulator/accounts/usage`` ``{api_token, month: "YYYY-MM", credits_used}``:
  overwrite the recorded usage of a month.
* ``GET|PUT|DELETE /emulator/faults``: fault injection
  (:mod:`~airflow_provider_namelookup.emulator.faults`); PUT replaces the whole
  configuration, DELETE switches faults off.
* ``GET|DELETE /emulator/stats``: request, fault, query and credit counters, requests
  refused by a per-token limit (``requests_limited``) and the most requests of one
  token seen in flight at once (``token_peak_in_flight``).
* ``GET|PUT /emulator/signup-limit`` ``{max_attempts, window_seconds}``: PUT also forgets
  the attempts counted so far.
* ``GET|PUT|DELETE /emulator/clock`` ``{now: ISO-8601}``: freeze the clock that decides
  the calendar month (credits and usage); DELETE goes back to real time.
* ``GET /emulator/health``, ``GET /emulator/docs`` (this text),
  ``GET /emulator/map?name=...`` (the country-of-origin map),
  ``GET /emulator/upgrade`` (where ``upgrade_url`` points).

Example::

    >>> app = create_app()
    >>> sorted(r.path for r in app.routes if r.path.startswith("/v2/gender/"))[:2]
    ['/v2/gender/by-email-address', '/v2/gender/by-email-address-multiple']
"""

from __future__ import annotations

import asyncio
import functools
import html
import json
import logging
import math
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pendulum
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from airflow_provider_namelookup.contract import (
    GENDER_ALIAS_PATHS,
    HINT_FIELDS,
    ID_FIELD,
    ORIGIN_PATH,
    SIGNUP_PATH,
    STATISTIC_PATH,
    LookupKind,
)
from airflow_provider_namelookup.emulator.admin_access import ADMIN_TOKEN_HEADER, admin_allowed
from airflow_provider_namelookup.emulator.answers import gender_answer, origin_answer
from airflow_provider_namelookup.emulator.faults import (
    SERVICE_UNAVAILABLE_HTML,
    FaultConfig,
    FaultKind,
    drop_connection,
    format_retry_after,
)
from airflow_provider_namelookup.emulator.limits import token_of
from airflow_provider_namelookup.emulator.origin import origin_of
from airflow_provider_namelookup.emulator.problems import JSONAnswer, problem
from airflow_provider_namelookup.emulator.signup import is_disposable
from airflow_provider_namelookup.emulator.state import EmulatorConfig, EmulatorState
from airflow_provider_namelookup.emulator.store import AWAITING_ACTIVATION, Account, AccountExists
from airflow_provider_namelookup.errors import (
    NameLookupError,
    NameLookupLimitExceeded,
    NameLookupRateLimited,
    NameLookupValidationError,
    make_error,
)
from airflow_provider_namelookup.models import NameKind, Query
from airflow_provider_namelookup.validation import OversizedInteger, validate_query, validate_signup

logger = logging.getLogger("airflow_provider_namelookup.emulator")

GENDER_COST = LookupKind.GENDER.credits_per_query
ORIGIN_COST = LookupKind.ORIGIN.credits_per_query
HINT_AND_ID_FIELDS = (*HINT_FIELDS, ID_FIELD)
_MAX_INTEGER_DIGITS = 40
LIMIT_EXCEEDED_DETAIL = ("Limit exceeded. Thank you for using our service. "
                         "Please consider to buy more credits.")

GENDER_ROUTES = GENDER_ALIAS_PATHS
"""Gender endpoint path → the name field it reads (None: the first present one)."""

Handler = Callable[[Request], Awaitable[Response]]


def _admin_only(handler: Handler) -> Handler:
    """Require the admin token, when the emulator has one, before ``handler`` runs."""

    @functools.wraps(handler)
    async def run(request: Request) -> Response:
        if not admin_allowed(_state(request).config.admin_token, request.headers.get(ADMIN_TOKEN_HEADER)):
            return problem("invalid-auth-token", f"This admin endpoint needs the header "
                           f"'{ADMIN_TOKEN_HEADER}: <admin token>' the emulator was started with.",
                           _base(request), http_status=401)
        return await handler(request)

    return run


def _state(request: Request) -> EmulatorState:
    state: EmulatorState = request.app.state.emulator
    return state


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _fail(status_id: str, detail: str, field: str | None = None) -> NameLookupError:
    return make_error(status_id, detail, field=field)


def _problem_for(err: NameLookupError, request: Request) -> Response:
    extra: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if isinstance(err, NameLookupLimitExceeded):
        extra["upgrade_url"] = f"{_base(request)}/emulator/upgrade"
    if isinstance(err, NameLookupRateLimited) and err.retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(err.retry_after)))
    return problem(err.status_id, err.detail, _base(request), http_status=err.http_status,
                   headers=headers, **extra)


def _guarded(handler: Handler) -> Handler:
    """Answer every failure as problem details: service errors with their identifier,
    anything unexpected as 500 ``generic-error`` (named in the log, never sent to the client)."""

    @functools.wraps(handler)
    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except NameLookupError as err:
            return _problem_for(err, request)
        except Exception as exc:
            return _unexpected(request, exc)

    return run


def _unexpected(request: Request, exc: Exception) -> Response:
    """500 ``generic-error`` for a failure inside the emulator. The request's one log line
    names the exception; the traceback is logged at DEBUG level only."""
    request.state.failure = f"{type(exc).__name__}: {exc}"[:200]
    logger.debug("unexpected failure answering %s %s", request.method, request.url.path, exc_info=exc)
    return problem("generic-error", "The service failed unexpectedly; nothing was charged.",
                   _base(request), http_status=500)


# request reading, authentication, validation, credits


class _BodyRefused(ValueError):
    """A JSON body that parses but cannot be read as the service reads numbers; the message
    is written for the caller."""


def _refuse_constant(name: str) -> Any:
    raise _BodyRefused(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BodyRefused(f"the number {text[:40]} is too large for a 64-bit floating-point number")
    return value


def _integer(text: str) -> int | OversizedInteger:
    return int(text) if len(text) <= _MAX_INTEGER_DIGITS else OversizedInteger(text)


def parse_body(body: bytes) -> Any:
    """Decode a request body as the service does, or raise ``invalid-json`` with a detail
    for a user (never a parser's internals).

    * ``NaN``/``Infinity`` and numbers beyond a 64-bit float (``1e400``) are refused.
    * An integer of more than 40 digits is kept as its digits
      (:class:`~airflow_provider_namelookup.validation.OversizedInteger`), so an ``id`` of
      5,000 digits answers ``invalid-id`` rather than a parser error.
    * Arrays and objects nested deeper than the reader can follow are refused.

    >>> parse_body(b'{"id": 7, "x": 1.5}')
    {'id': 7, 'x': 1.5}
    """
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float,
                          parse_int=_integer)
    except _BodyRefused as exc:
        raise _fail("invalid-json", f"The body is not valid JSON for this service: {exc}.") from None
    except RecursionError:
        raise _fail("invalid-json", "The body nests arrays or objects too deeply; a request is one "
                    "query object or an array of query objects.") from None
    except UnicodeDecodeError:
        raise _fail("invalid-json", "The body is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        raise _fail("invalid-json", f"The body is not valid JSON: {exc.msg} at line {exc.lineno}, "
                    f"column {exc.colno}.") from None
    except ValueError:
        raise _fail("invalid-json", "The body is not valid JSON.") from None


async def _read_json(request: Request, state: EmulatorState) -> Any:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise _fail("content-type-missing", "Send the body as JSON with the header "
                    "'Content-Type: application/json'.")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > state.config.max_body_bytes:
            raise _fail("generic-error", f"The body is larger than {state.config.max_body_bytes} bytes.")
    if not body.strip():
        raise _fail("missing-json", "No JSON body found in the call; send the body with POST.")
    return parse_body(bytes(body))


def _authenticate(request: Request, state: EmulatorState) -> tuple[Account, bool]:
    """The account making the request, and whether it came by the legacy ``key``."""
    header = request.headers.get("authorization", "").strip()
    if header:
        scheme, _, token = header.partition(" ")
        token = token.strip()
        account = state.store.account_for_token(token) if scheme.lower() == "bearer" and token else None
        if account is None:
            raise _fail("invalid-auth-token", "The bearer token is invalid.")
        if account.status == AWAITING_ACTIVATION:
            raise _fail("invalid-auth-token", "The bearer token is not active yet: confirm the "
                        "e-mail address with the activation link first.")
        return account, False
    if "key" in request.query_params:
        key = request.query_params["key"].strip()
        if not key:
            raise _fail("key-parameter-missing", "The key parameter is empty.", "key")
        account = state.store.account_for_token(key)
        if account is None or account.status == AWAITING_ACTIVATION:
            raise _fail("invalid-key", "The API key is invalid.", "key")
        return account, True
    raise _fail("authorization-header-missing",
                "The header 'Authorization: Bearer <token>' is missing.", "Authorization")


def _validate_one(raw: Any, fixed: NameKind | None, *, hints: bool) -> Query:
    if fixed is None or not isinstance(raw, Mapping):
        return validate_query(raw, hints=hints)
    if raw.get(fixed) is None:
        raise _fail("mandatory-parameter-missing", f"{fixed} must be set for this endpoint.", fixed)
    return validate_query({fixed: raw[fixed], **{f: raw.get(f) for f in HINT_AND_ID_FIELDS}}, hints=hints)


def _validate_batch(body: Any, state: EmulatorState, by_key: bool,
                    fixed: NameKind | None) -> tuple[list[Query], list[Any]]:
    if not isinstance(body, list):
        return [_validate_one(body, fixed, hints=True)], [body]
    if not body:
        raise _fail("mandatory-parameter-missing", "The array holds no queries.")
    if by_key and len(body) > state.config.key_max_queries:
        raise _fail("too-many-queries-api-key", f"At most {state.config.key_max_queries} lookups per "
                    f"request with an API key; this request has {len(body)}.", "key")
    if len(body) > state.config.max_queries:
        raise _fail("too-many-queries", f"At most {state.config.max_queries} queries per request; "
                    f"this request has {len(body)}.")
    queries = []
    for index, raw in enumerate(body):
        try:
            queries.append(_validate_one(raw, fixed, hints=True))
        except NameLookupValidationError as err:
            raise NameLookupValidationError(err.status_id, f"query {index}: {err.detail}",
                                            field=err.field) from None
    return queries, body


def _charge(request: Request, state: EmulatorState, account: Account, queries: int, credits: int) -> None:
    if not state.store.spend(account.id, credits):
        left = state.store.remaining(account.id)
        raise NameLookupLimitExceeded(
            "limit-exceeded", f"{LIMIT_EXCEEDED_DETAIL} This request needs {credits} credits; "
            f"{left} are left. Nothing was charged.", http_status=401)
    request.state.credits_charged = credits
    state.stats.processed(queries, credits)


def _duration(started: float) -> str:
    return f"{round((time.perf_counter() - started) * 1000)}ms"


# service endpoints


def _gender_endpoint(fixed: NameKind | None) -> Handler:
    async def gender(request: Request) -> Response:
        started = time.perf_counter()
        state = _state(request)
        body = await _read_json(request, state)
        account, by_key = _authenticate(request, state)
        queries, items = _validate_batch(body, state, by_key, fixed)
        results = [gender_answer(query, raw, state.names, credits=GENDER_COST)
                   for query, raw in zip(queries, items, strict=True)]
        duration = _duration(started)
        for result in results:
            result["details"]["duration"] = duration
        answer = JSONAnswer(results if isinstance(body, list) else results[0])
        _charge(request, state, account, len(queries), GENDER_COST * len(queries))
        return answer

    return gender


async def country_of_origin(request: Request) -> Response:
    started = time.perf_counter()
    state = _state(request)
    body = await _read_json(request, state)
    account, _ = _authenticate(request, state)
    query = _validate_one(body, None, hints=False)
    result = origin_answer(query, body, state.names, base_url=_base(request), credits=ORIGIN_COST)
    result["details"]["duration"] = _duration(started)
    answer = JSONAnswer(result)
    _charge(request, state, account, 1, ORIGIN_COST)
    return answer


async def statistic(request: Request) -> Response:
    started = time.perf_counter()
    state = _state(request)
    account, _ = _authenticate(request, state)
    remaining = state.store.remaining(account.id)
    last_month = state.store.last_month()
    return JSONAnswer({
        "is_limit_reached": remaining <= 0,
        "remaining_credits": remaining,
        "details": {"credits_used": 0, "duration": _duration(started)},
        "usage_last_month": {"date": last_month, "credits_used": state.store.usage(account.id, last_month)},
    })


async def sign_up(request: Request) -> Response:
    state = _state(request)
    body = await _read_json(request, state)
    address = request.client.host if request.client else "unknown"
    wait = state.signup_limiter.attempt(address)
    if wait is not None:
        raise NameLookupRateLimited("signup-rate-limit", "Too many sign-up attempts from your network; "
                                    "try again later.", retry_after=wait, http_status=429)
    if not isinstance(body, Mapping):
        raise _fail("email-invalid", "The sign-up body must be a JSON object with email and accept_terms.",
                    "email")
    payload = validate_signup(body.get("email"), body.get("accept_terms"), body.get("newsletter"),
                              body.get("locale"))
    email = payload["email"]
    if is_disposable(email, state.config.disposable_domains):
        raise _fail("signup-email-rejected", "This e-mail address is not accepted for sign-up "
                    "(disposable addresses are not).", "email")
    if state.store.email_registered(email):
        raise _fail("email-already-registered", "An account with this e-mail address already exists.",
                    "email")
    token, password, code = secrets.token_urlsafe(32), secrets.token_urlsafe(12), secrets.token_urlsafe(24)
    try:
        state.store.create_account(
            email=email, token=token, password=password, activation_code=code, active=False,
            monthly_allowance=state.config.free_requests_per_month,
            newsletter=bool(payload.get("newsletter")), locale=payload.get("locale"))
    except AccountExists:
        raise _fail("email-already-registered", "An account with this e-mail address already exists.",
                    "email") from None
    base = _base(request)
    link = f"{base}/emulator/activate?code={code}"
    state.store.send_mail(email, "Activate your Name Lookup account",
                          f"Welcome!\n\nFollow this link to confirm your e-mail address and activate "
                          f"your API token:\n\n{link}\n", link)
    return JSONAnswer({
        "email": email,
        "password": password,
        "api_token": token,
        "free_requests_per_month": state.config.free_requests_per_month,
        "status": AWAITING_ACTIVATION,
        "message": f"We sent an activation link to {email}. Follow it to confirm the address; "
                   f"the API token works from then on.",
        "docs_url": f"{base}/emulator/docs",
    })


async def activate(request: Request) -> Response:
    code = request.query_params.get("code", "")
    account = _state(request).store.activate(code) if code else None
    if account is None:
        raise _fail("generic-error", "This activation link is unknown.")
    return JSONAnswer({"email": account.email, "status": account.status,
                       "message": "The e-mail address is confirmed; the API token works now."})


# emulator (admin) endpoints


async def _admin_json(request: Request) -> dict[str, Any]:
    body = await request.body()
    if not body.strip():
        return {}
    data = parse_body(body)
    if not isinstance(data, dict):
        raise _fail("generic-error", "The body must be a JSON object.")
    return data


def _int_member(data: Mapping[str, Any], name: str, default: int | None, *,
                minimum: int | None = 0) -> int | None:
    value = data.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
        raise _fail("generic-error", f"{name} must be an integer" +
                    (f" of at least {minimum}" if minimum is not None else "") + f", got {value!r:.40}")
    return value


def _account_by_token(state: EmulatorState, data: Mapping[str, Any]) -> Account:
    token = data.get("api_token")
    account = state.store.account_for_token(token) if isinstance(token, str) and token else None
    if account is None:
        raise _fail("generic-error", "api_token must be the token of an existing account.")
    return account


async def admin_create_account(request: Request) -> Response:
    state = _state(request)
    data = await _admin_json(request)
    credits = _int_member(data, "credits", state.config.free_requests_per_month)
    allowance = _int_member(data, "monthly_allowance", None)
    token, email = data.get("api_token"), data.get("email")
    if token is not None and (not isinstance(token, str) or not token.strip() or token != token.strip()):
        raise _fail("generic-error", "api_token must be a non-empty string without surrounding spaces.")
    if email is not None and not isinstance(email, str):
        raise _fail("generic-error", "email must be a string.")
    try:
        token = state.create_account(token=token, credits=credits or 0, email=email,
                                     monthly_allowance=allowance)
    except AccountExists:
        raise _fail("generic-error", "An account with this token or e-mail address exists.") from None
    account = state.account(token)
    return JSONAnswer({"api_token": token, "email": account.email, "status": account.status,
                       "remaining_credits": account.remaining,
                       "monthly_allowance": account.monthly_allowance}, status_code=201)


async def admin_credits(request: Request) -> Response:
    state = _state(request)
    data = await _admin_json(request)
    account = _account_by_token(state, data)
    updated = state.store.top_up(account.id, add=_int_member(data, "add", 0, minimum=None) or 0,
                                 remaining=_int_member(data, "remaining", None),
                                 monthly_allowance=_int_member(data, "monthly_allowance", None))
    return JSONAnswer({"remaining_credits": updated.remaining, "monthly_allowance": updated.monthly_allowance})


async def admin_usage(request: Request) -> Response:
    state = _state(request)
    data = await _admin_json(request)
    account = _account_by_token(state, data)
    month = data.get("month")
    try:
        valid = isinstance(month, str) and pendulum.from_format(month, "YYYY-MM").format("YYYY-MM") == month
    except ValueError:
        valid = False
    if not valid:
        raise _fail("generic-error", "month must be a month as YYYY-MM.")
    credits_used = _int_member(data, "credits_used", 0) or 0
    state.store.set_usage(account.id, str(month), credits_used)
    return JSONAnswer({"month": month, "credits_used": credits_used})


async def admin_outbox(request: Request) -> Response:
    email = request.query_params.get("email")
    return JSONAnswer(_state(request).store.outbox(email.strip() if email else None))


async def admin_faults(request: Request) -> Response:
    faults = _state(request).faults
    if request.method == "PUT":
        data = await _admin_json(request)
        try:
            faults.configure(FaultConfig.from_json(data))
        except (TypeError, ValueError) as exc:
            raise _fail("generic-error", f"Invalid fault configuration: {exc}") from None
    elif request.method == "DELETE":
        faults.reset()
    return JSONAnswer(faults.config.to_json())


async def admin_stats(request: Request) -> Response:
    stats, limiter = _state(request).stats, _state(request).limiter
    if request.method == "DELETE":
        stats.reset()
        limiter.reset()
    return JSONAnswer({**stats.snapshot(), "token_peak_in_flight": limiter.peak_in_flight})


async def admin_signup_limit(request: Request) -> Response:
    limiter = _state(request).signup_limiter
    if request.method == "PUT":
        data = await _admin_json(request)
        window = data.get("window_seconds")
        if window is not None and (isinstance(window, bool) or not isinstance(window, (int, float))
                                   or not 0 < window < math.inf):
            raise _fail("generic-error", "window_seconds must be a positive number.")
        limiter.configure(max_attempts=_int_member(data, "max_attempts", None), window_seconds=window)
    return JSONAnswer(limiter.to_json())


async def admin_clock(request: Request) -> Response:
    store = _state(request).store
    if request.method == "PUT":
        data = await _admin_json(request)
        try:
            moment = pendulum.parse(data["now"]) if isinstance(data.get("now"), str) else None
        except (ValueError, TypeError):
            moment = None
        if not isinstance(moment, pendulum.DateTime):
            raise _fail("generic-error", "now must be an ISO-8601 date and time.")
        store.freeze_clock(moment)
    elif request.method == "DELETE":
        store.freeze_clock(None)
    return JSONAnswer({"now": store.clock().to_iso8601_string(), "frozen": store.clock_frozen})


async def admin_health(request: Request) -> Response:
    return JSONAnswer({"status": "ok", "names": len(_state(request).names)})


async def admin_docs(request: Request) -> Response:
    return PlainTextResponse(sys.modules[__name__].__doc__ or "", media_type="text/markdown")


async def admin_upgrade(request: Request) -> Response:
    return PlainTextResponse(
        "This is the Name Lookup emulator: credits are not sold here. Add credits with\n"
        f"POST {_base(request)}/emulator/accounts/credits  {{\"api_token\": \"...\", \"add\": 1000}}\n")


async def admin_map(request: Request) -> Response:
    state = _state(request)
    name = request.query_params.get("name", "")
    entry = state.names.find(name) if name else None
    rows = "".join(
        f"<tr><td>{html.escape(str(r['country_name']))}</td><td>{r['country']}</td>"
        f"<td>{100 * float(r['probability']):.2f} %</td></tr>" for r in origin_of(entry).countries)
    title = html.escape(entry.name if entry else name or "?")
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>Origin of {title}</title></head>"
        f"<body><h1>Countries of origin of {title}</h1><table><tr><th>Country</th><th>Code</th>"
        f"<th>Share</th></tr>{rows}</table></body></html>")


async def not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status in (404, 405):
        return problem("endpoint-not-found", f"The endpoint {request.method} {request.url.path} does not exist.",
                       _base(request))
    return problem("generic-error", str(getattr(exc, "detail", "") or "Request failed."), _base(request),
                   http_status=status)


async def _unexpected_outside_routes(request: Request, exc: Exception) -> Response:
    """Starlette's last resort (a failure outside the routes' own guard): still problem details."""
    return _unexpected(request, exc)


# the middleware: statistics, fault injection, one log line per request


class ServiceMiddleware:
    """Counts requests, injects the configured faults into ``/v2/...`` requests and logs
    one line per request (method, path without query string, outcome, time: never a token).

    :param app: the wrapped ASGI app.
    :param state: the emulator's state (faults and stats).
    """

    def __init__(self, app: ASGIApp, state: EmulatorState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        scope.setdefault("state", {})
        service = scope["path"].startswith("/v2/")
        outcome: dict[str, Any] = {}

        async def observe(message: Message) -> None:
            if message["type"] == "http.response.start":
                outcome["status"] = message["status"]
            await send(message)

        try:
            if not service:
                await self.app(scope, receive, observe)
                return
            self.state.stats.request()
            admission = self.state.limiter.enter(token_of(scope))
            try:
                if admission.retry_after is not None:
                    await self._refuse(scope, receive, observe, admission.retry_after)
                    fault = None
                else:
                    fault = await self._before(scope, receive, observe)
                    if fault is None:
                        if self.state.faults.draw_after():
                            await self._drop_after(scope, receive, outcome)
                        else:
                            await self.app(scope, receive, observe)
            finally:
                admission.leave()
            if "status" in outcome and "dropped" not in outcome:
                self.state.stats.answered(outcome["status"])
            elif fault == "drop_before":
                outcome["dropped"] = "before"
        finally:
            failure = scope["state"].get("failure")
            logger.log(logging.WARNING if failure else logging.INFO, "%s %s %s %.1fms%s",
                       scope.get("method", "-"), scope["path"],
                       f"dropped-{outcome['dropped']}" if "dropped" in outcome else outcome.get("status", "-"),
                       (time.perf_counter() - started) * 1000, f" failed: {failure}" if failure else "")

    async def _before(self, scope: Scope, receive: Receive, send: Send) -> FaultKind | None:
        faults = self.state.faults
        latency = faults.latency_seconds()
        if latency > 0:
            await asyncio.sleep(latency)
        kind = faults.draw_before()
        if kind is None:
            return None
        self.state.stats.fault(kind)
        request = Request(scope)
        response: Response
        if kind == "error_500":
            response = problem("generic-error", "Injected fault: internal server error.", _base(request),
                               http_status=500)
        elif kind == "error_503":
            response = HTMLResponse(SERVICE_UNAVAILABLE_HTML, status_code=503)
        elif kind == "rate_limit_429":
            seconds = faults.config.retry_after
            response = problem("too-many-requests", "Injected fault: too many requests.", _base(request),
                               http_status=429, headers={"Retry-After": format_retry_after(seconds)})
        else:
            await drop_connection(receive)
            return kind
        await response(scope, receive, send)
        return kind

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, retry_after: float) -> None:
        """429 for a token over its limit, after the same latency as any answer."""
        latency = self.state.faults.latency_seconds()
        if latency > 0:
            await asyncio.sleep(latency)
        self.state.stats.limited()
        response = problem("too-many-requests", "Too many requests for this API token; nothing was "
                           "charged. Retry after the time in the Retry-After header.", _base(Request(scope)),
                           http_status=429, headers={"Retry-After": format_retry_after(retry_after)})
        await response(scope, receive, send)

    async def _drop_after(self, scope: Scope, receive: Receive, outcome: dict[str, Any]) -> None:
        async def swallow(message: Message) -> None:
            if message["type"] == "http.response.start":
                outcome["lost_status"] = message["status"]

        await self.app(scope, receive, swallow)
        self.state.stats.fault("drop_after")
        charged = int(scope["state"].get("credits_charged") or 0)
        if charged:
            self.state.stats.lost_after_charge(charged)
        outcome["dropped"] = "after"
        await drop_connection(receive)


def create_app(config: EmulatorConfig | None = None, *, state: EmulatorState | None = None) -> Starlette:
    """Build the emulator's ASGI app.

    :param config: settings for a new :class:`EmulatorState` (ignored when ``state`` is given).
    :param state: an existing state to serve (shared with the caller, e.g. a test).

    Example::

        app = create_app(EmulatorConfig(db_path="/tmp/emulator.db"))
        token = app.state.emulator.create_account(credits=1000)
        # uvicorn.run(app, host="127.0.0.1", port=8765)
    """
    state = state if state is not None else EmulatorState(config)
    service_routes = [Route(SIGNUP_PATH, _guarded(sign_up), methods=["POST"]),
                      *(Route(path, _guarded(_gender_endpoint(fixed)), methods=["POST"])
                        for path, fixed in GENDER_ROUTES.items()),
                      Route(ORIGIN_PATH, _guarded(country_of_origin), methods=["POST"]),
                      Route(STATISTIC_PATH, _guarded(statistic), methods=["GET"])]
    admin_routes = [Route("/emulator/activate", _guarded(activate), methods=["GET"]),
                    Route("/emulator/outbox", _admin_only(_guarded(admin_outbox)), methods=["GET"]),
                    Route("/emulator/accounts", _admin_only(_guarded(admin_create_account)), methods=["POST"]),
                    Route("/emulator/accounts/credits", _admin_only(_guarded(admin_credits)), methods=["POST"]),
                    Route("/emulator/accounts/usage", _admin_only(_guarded(admin_usage)), methods=["POST"]),
                    Route("/emulator/faults", _admin_only(_guarded(admin_faults)), methods=["GET", "PUT", "DELETE"]),
                    Route("/emulator/stats", _admin_only(_guarded(admin_stats)), methods=["GET", "DELETE"]),
                    Route("/emulator/signup-limit", _admin_only(_guarded(admin_signup_limit)), methods=["GET", "PUT"]),
                    Route("/emulator/clock", _admin_only(_guarded(admin_clock)), methods=["GET", "PUT", "DELETE"]),
                    Route("/emulator/health", _guarded(admin_health), methods=["GET"]),
                    Route("/emulator/docs", _guarded(admin_docs), methods=["GET"]),
                    Route("/emulator/upgrade", _guarded(admin_upgrade), methods=["GET"]),
                    Route("/emulator/map", _guarded(admin_map), methods=["GET"])]
    app = Starlette(routes=[*service_routes, *admin_routes],
                    middleware=[Middleware(ServiceMiddleware, state=state)],
                    exception_handlers={HTTPException: not_found, Exception: _unexpected_outside_routes})
    app.router.redirect_slashes = False
    app.state.emulator = state
    return app
