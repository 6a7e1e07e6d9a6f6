"""What every emulator endpoint shares: the emulator state of a request, the base of its
links, and the guard that answers any failure as problem details.

A handler raises :class:`~.statuses.Refusal` for an answer the spec names;
:func:`guarded` turns it into problem details with the spec's HTTP code, anything
unexpected into 500 ``generic-error`` (named in the log, never in the answer), and a
client gone before its body arrived into no answer at all (the middleware counts it as a
disconnect, not as a failure).

Example::

    guarded_handler = guarded(handler)   # async def handler(request) -> Response
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from namelookup_emulator.links import base_url
from namelookup_emulator.problems import problem
from namelookup_emulator.state import EmulatorState
from namelookup_emulator.statuses import Refusal

logger = logging.getLogger("namelookup_emulator")

Handler = Callable[[Request], Awaitable[Response]]


def emulator_state(request: Request) -> EmulatorState:
    """The state of the emulator serving ``request``."""
    state: EmulatorState = request.app.state.emulator
    return state


def links_base(request: Request) -> str:
    """The base of every link in the answer (:func:`~.links.base_url`): never the request's ``Host``."""
    return base_url(request.scope, emulator_state(request).config.public_url)


def fail(status_id: str, detail: str, field: str | None = None) -> Refusal:
    """The error to raise for a refusal the spec names (``raise fail("invalid-json", ...)``)."""
    return Refusal(status_id, detail, field=field)


def problem_for(err: Refusal, request: Request) -> Response:
    """Problem details for a service error, with ``upgrade_url`` and ``Retry-After`` where they belong."""
    extra: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if err.status_id == "limit-exceeded":
        extra["upgrade_url"] = f"{links_base(request)}/emulator/upgrade"
    if err.retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(err.retry_after)))
    return problem(err.status_id, err.detail, links_base(request), http_status=err.http_status,
                   headers=headers, **extra)


def guarded(handler: Handler) -> Handler:
    """Answer every failure of ``handler`` as problem details (see the module docstring)."""

    @functools.wraps(handler)
    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except Refusal as err:
            return problem_for(err, request)
        except ClientDisconnect:
            return Response(status_code=400)  # the client is gone: nobody reads this
        except Exception as exc:
            return unexpected(request, exc)

    return run


def unexpected(request: Request, exc: Exception) -> Response:
    """500 ``generic-error`` for a failure inside the emulator. The request's one log line
    names the exception; the traceback is logged at DEBUG level only."""
    request.state.failure = f"{type(exc).__name__}: {exc}"[:200]
    logger.debug("unexpected failure answering %s %s", request.method, request.url.path, exc_info=exc)
    return problem("generic-error", "The service failed unexpectedly; nothing was charged.",
                   links_base(request), http_status=500)


async def not_found(request: Request, exc: Exception) -> Response:
    """Starlette's answer to an unknown route or method: ``endpoint-not-found``."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status in (404, 405):
        return problem("endpoint-not-found", f"The endpoint {request.method} {request.url.path} does not exist.",
                       links_base(request))
    return problem("generic-error", str(getattr(exc, "detail", "") or "Request failed."), links_base(request),
                   http_status=status)


async def unexpected_outside_routes(request: Request, exc: Exception) -> Response:
    """Starlette's last resort (a failure outside the routes' own guard): still problem details."""
    return unexpected(request, exc)
