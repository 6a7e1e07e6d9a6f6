"""The emulator's own endpoints under ``/emulator/...``: the admin calls (accounts, credits,
usage, outbox, faults, stats, sign-up limit, clock), each behind :func:`admin_only`, and
the public pages (activation link, health, docs, upgrade page, origin map).

Who may call an admin endpoint is decided in
:func:`~namelookup_emulator.admin_access.admin_refusal` (Host, Origin,
admin token, JSON); :mod:`~namelookup_emulator.app` documents what each
one answers.

Example::

    routes = admin_routes(docs="...")   # Starlette routes under /emulator
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Mapping
from typing import Any

import pendulum
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from namelookup_emulator.admin_access import admin_refusal
from namelookup_emulator.bodies import parse_body, read_body
from namelookup_emulator.endpoints import Handler, emulator_state, fail, guarded, links_base
from namelookup_emulator.faults import FaultConfig
from namelookup_emulator.origin import origin_of
from namelookup_emulator.problems import JSONAnswer, problem
from namelookup_emulator.state import EmulatorState
from namelookup_emulator.store import Account, AccountExists


def admin_only(handler: Handler) -> Handler:
    """Let ``handler`` run only for a call :func:`~.admin_access.admin_refusal` allows."""

    @functools.wraps(handler)
    async def run(request: Request) -> Response:
        config = emulator_state(request).config
        server = request.scope.get("server")
        refusal = admin_refusal(request.method, request.headers, local_address=server[0] if server else None,
                                admin_token=config.admin_token, public_url=config.public_url)
        if refusal is not None:
            status_id, http_status, detail = refusal
            return problem(status_id, detail, links_base(request), http_status=http_status)
        return await handler(request)

    return run


async def _admin_json(request: Request) -> dict[str, Any]:
    body = await read_body(request, emulator_state(request).config.max_body_bytes)
    if not body.strip():
        return {}
    data = parse_body(body)
    if not isinstance(data, dict):
        raise fail("generic-error", "The body must be a JSON object.")
    return data


def _int_member(data: Mapping[str, Any], name: str, default: int | None, *,
                minimum: int | None = 0) -> int | None:
    value = data.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
        raise fail("generic-error", f"{name} must be an integer" +
                   (f" of at least {minimum}" if minimum is not None else "") + f", got {value!r:.40}")
    return value


def _account_by_token(state: EmulatorState, data: Mapping[str, Any]) -> Account:
    token = data.get("api_token")
    account = state.store.account_for_token(token) if isinstance(token, str) and token else None
    if account is None:
        raise fail("generic-error", "api_token must be the token of an existing account.")
    return account


# admin calls


async def admin_create_account(request: Request) -> Response:
    state = emulator_state(request)
    data = await _admin_json(request)
    credits = _int_member(data, "credits", state.config.free_requests_per_month)
    allowance = _int_member(data, "monthly_allowance", None)
    token, email = data.get("api_token"), data.get("email")
    if token is not None and (not isinstance(token, str) or not token.strip() or token != token.strip()):
        raise fail("generic-error", "api_token must be a non-empty string without surrounding spaces.")
    if email is not None and not isinstance(email, str):
        raise fail("generic-error", "email must be a string.")
    try:
        token = state.create_account(token=token, credits=credits or 0, email=email,
                                     monthly_allowance=allowance)
    except AccountExists:
        raise fail("generic-error", "An account with this token or e-mail address exists.") from None
    account = state.account(token)
    return JSONAnswer({"api_token": token, "email": account.email, "status": account.status,
                       "remaining_credits": account.remaining,
                       "monthly_allowance": account.monthly_allowance}, status_code=201)


async def admin_credits(request: Request) -> Response:
    state = emulator_state(request)
    data = await _admin_json(request)
    account = _account_by_token(state, data)
    updated = state.store.top_up(account.id, add=_int_member(data, "add", 0, minimum=None) or 0,
                                 remaining=_int_member(data, "remaining", None),
                                 monthly_allowance=_int_member(data, "monthly_allowance", None))
    return JSONAnswer({"remaining_credits": updated.remaining, "monthly_allowance": updated.monthly_allowance})


async def admin_usage(request: Request) -> Response:
    state = emulator_state(request)
    data = await _admin_json(request)
    account = _account_by_token(state, data)
    month = data.get("month")
    try:
        valid = isinstance(month, str) and pendulum.from_format(month, "YYYY-MM").format("YYYY-MM") == month
    except ValueError:
        valid = False
    if not valid:
        raise fail("generic-error", "month must be a month as YYYY-MM.")
    credits_used = _int_member(data, "credits_used", 0) or 0
    state.store.set_usage(account.id, str(month), credits_used)
    return JSONAnswer({"month": month, "credits_used": credits_used})


async def admin_outbox(request: Request) -> Response:
    email = request.query_params.get("email")
    return JSONAnswer(emulator_state(request).store.outbox(email.strip() if email else None))


async def admin_faults(request: Request) -> Response:
    faults = emulator_state(request).faults
    if request.method == "PUT":
        data = await _admin_json(request)
        try:
            faults.configure(FaultConfig.from_json(data))
        except (TypeError, ValueError) as exc:
            raise fail("generic-error", f"Invalid fault configuration: {exc}") from None
    elif request.method == "DELETE":
        faults.reset()
    return JSONAnswer(faults.config.to_json())


async def admin_stats(request: Request) -> Response:
    stats, limiter = emulator_state(request).stats, emulator_state(request).limiter
    if request.method == "DELETE":
        stats.reset()
        limiter.reset()
    return JSONAnswer({**stats.snapshot(), "token_peak_in_flight": limiter.peak_in_flight})


async def admin_signup_limit(request: Request) -> Response:
    limiter = emulator_state(request).signup_limiter
    if request.method == "PUT":
        data = await _admin_json(request)
        window = data.get("window_seconds")
        if window is not None and (isinstance(window, bool) or not isinstance(window, (int, float))
                                   or not 0 < window < math.inf):
            raise fail("generic-error", "window_seconds must be a positive number.")
        limiter.configure(max_attempts=_int_member(data, "max_attempts", None), window_seconds=window)
    return JSONAnswer(limiter.to_json())


async def admin_clock(request: Request) -> Response:
    store = emulator_state(request).store
    if request.method == "PUT":
        data = await _admin_json(request)
        try:
            moment = pendulum.parse(data["now"]) if isinstance(data.get("now"), str) else None
        except (ValueError, TypeError):
            moment = None
        if not isinstance(moment, pendulum.DateTime):
            raise fail("generic-error", "now must be an ISO-8601 date and time.")
        store.freeze_clock(moment)
    elif request.method == "DELETE":
        store.freeze_clock(None)
    return JSONAnswer({"now": store.clock().to_iso8601_string(), "frozen": store.clock_frozen})


# public pages


async def activate(request: Request) -> Response:
    code = request.query_params.get("code", "")
    account = emulator_state(request).store.activate(code) if code else None
    if account is None:
        raise fail("generic-error", "This activation link is unknown.")
    return JSONAnswer({"email": account.email, "status": account.status,
                       "message": "The e-mail address is confirmed; the API token works now."})


async def health(request: Request) -> Response:
    return JSONAnswer({"status": "ok", "names": len(emulator_state(request).names)})


async def upgrade(request: Request) -> Response:
    return PlainTextResponse(
        "This is the Name Lookup emulator: credits are not sold here. Add credits with\n"
        f"POST {links_base(request)}/emulator/accounts/credits  {{\"api_token\": \"...\", \"add\": 1000}}\n")


async def origin_map(request: Request) -> Response:
    state = emulator_state(request)
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


def admin_routes(docs: str) -> list[Route]:
    """The ``/emulator/...`` routes.

    :param docs: the text ``GET /emulator/docs`` serves (Markdown).
    """

    async def show_docs(request: Request) -> Response:
        return PlainTextResponse(docs, media_type="text/markdown")

    def admin(handler: Handler) -> Handler:
        return admin_only(guarded(handler))

    return [Route("/emulator/activate", guarded(activate), methods=["GET"]),
            Route("/emulator/outbox", admin(admin_outbox), methods=["GET"]),
            Route("/emulator/accounts", admin(admin_create_account), methods=["POST"]),
            Route("/emulator/accounts/credits", admin(admin_credits), methods=["POST"]),
            Route("/emulator/accounts/usage", admin(admin_usage), methods=["POST"]),
            Route("/emulator/faults", admin(admin_faults), methods=["GET", "PUT", "DELETE"]),
            Route("/emulator/stats", admin(admin_stats), methods=["GET", "DELETE"]),
            Route("/emulator/signup-limit", admin(admin_signup_limit), methods=["GET", "PUT"]),
            Route("/emulator/clock", admin(admin_clock), methods=["GET", "PUT", "DELETE"]),
            Route("/emulator/health", guarded(health), methods=["GET"]),
            Route("/emulator/docs", guarded(show_docs), methods=["GET"]),
            Route("/emulator/upgrade", guarded(upgrade), methods=["GET"]),
            Route("/emulator/map", guarded(origin_map), methods=["GET"])]
