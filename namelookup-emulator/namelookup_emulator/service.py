"""The service's own endpoints under ``/v2/...``: sign-up, the gender lookups and their
aliases, country of origin and the statistic, with authentication, the query rules and
credits. :mod:`~namelookup_emulator.app` documents what they answer.

Example::

    routes = service_routes()   # Starlette routes, each guarded (see .endpoints.guarded)
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from namelookup_emulator.bodies import read_json
from namelookup_emulator.endpoints import Handler, emulator_state, fail, guarded, links_base
from namelookup_emulator.facts import GENDER_CREDITS, GENDER_PATHS, ORIGIN_CREDITS
from namelookup_emulator.lookup_results import gender_result, origin_result
from namelookup_emulator.problems import JSONAnswer
from namelookup_emulator.rules import LookupQuery, read_query, read_signup
from namelookup_emulator.signup import is_disposable
from namelookup_emulator.state import EmulatorState
from namelookup_emulator.statuses import Refusal
from namelookup_emulator.store import AWAITING_ACTIVATION, Account, AccountExists

SIGNUP_PATH = "/v2/sign-up"
ORIGIN_PATH = "/v2/country-of-origin"
STATISTIC_PATH = "/v2/statistic"
LIMIT_EXCEEDED_DETAIL = ("Limit exceeded. Thank you for using our service. "
                         "Please consider to buy more credits.")


# authentication, validation, credits


def _authenticate(request: Request, state: EmulatorState) -> tuple[Account, bool]:
    """The account making the request, and whether it came by the legacy ``key``."""
    header = request.headers.get("authorization", "").strip()
    if header:
        scheme, _, token = header.partition(" ")
        token = token.strip()
        account = state.store.account_for_token(token) if scheme.lower() == "bearer" and token else None
        if account is None:
            raise fail("invalid-auth-token", "The bearer token is invalid.")
        if account.status == AWAITING_ACTIVATION:
            raise fail("invalid-auth-token", "The bearer token is not active yet: confirm the "
                       "e-mail address with the activation link first.")
        return account, False
    if "key" in request.query_params:
        key = request.query_params["key"].strip()
        if not key:
            raise fail("key-parameter-missing", "The key parameter is empty.", "key")
        account = state.store.account_for_token(key)
        if account is None or account.status == AWAITING_ACTIVATION:
            raise fail("invalid-key", "The API key is invalid.", "key")
        return account, True
    raise fail("authorization-header-missing",
               "The header 'Authorization: Bearer <token>' is missing.", "Authorization")


def _read_batch(body: Any, state: EmulatorState, by_key: bool,
                fixed: str | None) -> tuple[list[LookupQuery], list[Any]]:
    if not isinstance(body, list):
        return [read_query(body, fixed=fixed)], [body]
    if not body:
        raise fail("mandatory-parameter-missing", "The array holds no queries.")
    if by_key and len(body) > state.config.key_max_queries:
        raise fail("too-many-queries-api-key", f"At most {state.config.key_max_queries} lookups per "
                   f"request with an API key; this request has {len(body)}.", "key")
    if len(body) > state.config.max_queries:
        raise fail("too-many-queries", f"At most {state.config.max_queries} queries per request; "
                   f"this request has {len(body)}.")
    queries = []
    for index, raw in enumerate(body):
        try:
            queries.append(read_query(raw, fixed=fixed))
        except Refusal as err:
            raise Refusal(err.status_id, f"query {index}: {err.detail}", field=err.field) from None
    return queries, body


def _charge(request: Request, state: EmulatorState, account: Account, queries: int, credits: int) -> None:
    if not state.store.spend(account.id, credits):
        left = state.store.remaining(account.id)
        raise Refusal("limit-exceeded", f"{LIMIT_EXCEEDED_DETAIL} This request needs {credits} credits; "
                      f"{left} are left. Nothing was charged.")
    request.state.credits_charged = credits
    state.stats.processed(queries, credits)


def _duration(started: float) -> str:
    return f"{round((time.perf_counter() - started) * 1000)}ms"


# the endpoints


def _gender_endpoint(fixed: str | None) -> Handler:
    async def gender(request: Request) -> Response:
        started = time.perf_counter()
        state = emulator_state(request)
        body = await read_json(request, state.config.max_body_bytes)
        account, by_key = _authenticate(request, state)
        queries, items = _read_batch(body, state, by_key, fixed)
        results = [gender_result(query, raw, state.names, credits=GENDER_CREDITS)
                   for query, raw in zip(queries, items, strict=True)]
        duration = _duration(started)
        for result in results:
            result["details"]["duration"] = duration
        answer = JSONAnswer(results if isinstance(body, list) else results[0])
        _charge(request, state, account, len(queries), GENDER_CREDITS * len(queries))
        return answer

    return gender


async def country_of_origin(request: Request) -> Response:
    started = time.perf_counter()
    state = emulator_state(request)
    body = await read_json(request, state.config.max_body_bytes)
    account, _ = _authenticate(request, state)
    query = read_query(body, hints=False)
    result = origin_result(query, body, state.names, base_url=links_base(request), credits=ORIGIN_CREDITS)
    result["details"]["duration"] = _duration(started)
    answer = JSONAnswer(result)
    _charge(request, state, account, 1, ORIGIN_CREDITS)
    return answer


async def statistic(request: Request) -> Response:
    started = time.perf_counter()
    state = emulator_state(request)
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
    state = emulator_state(request)
    body = await read_json(request, state.config.max_body_bytes)
    address = request.client.host if request.client else "unknown"
    wait = state.signup_limiter.attempt(address)
    if wait is not None:
        raise Refusal("signup-rate-limit", "Too many sign-up attempts from your network; try again later.",
                      retry_after=wait)
    if not isinstance(body, Mapping):
        raise fail("email-invalid", "The sign-up body must be a JSON object with email and accept_terms.",
                   "email")
    signup = read_signup(body)
    email = signup.email
    if is_disposable(email, state.config.disposable_domains):
        raise fail("signup-email-rejected", "This e-mail address is not accepted for sign-up "
                   "(disposable addresses are not).", "email")
    if state.store.email_registered(email):
        raise fail("email-already-registered", "An account with this e-mail address already exists.",
                   "email")
    token, password, code = secrets.token_urlsafe(32), secrets.token_urlsafe(12), secrets.token_urlsafe(24)
    try:
        state.store.create_account(
            email=email, token=token, password=password, activation_code=code, active=False,
            monthly_allowance=state.config.free_requests_per_month,
            newsletter=signup.newsletter, locale=signup.locale)
    except AccountExists:
        raise fail("email-already-registered", "An account with this e-mail address already exists.",
                   "email") from None
    base = links_base(request)
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


def service_routes() -> list[Route]:
    """The ``/v2/...`` routes, each answering failures as problem details."""
    return [Route(SIGNUP_PATH, guarded(sign_up), methods=["POST"]),
            *(Route(path, guarded(_gender_endpoint(fixed)), methods=["POST"]) for path, fixed in GENDER_PATHS.items()),
            Route(ORIGIN_PATH, guarded(country_of_origin), methods=["POST"]),
            Route(STATISTIC_PATH, guarded(statistic), methods=["GET"])]
