"""The middleware in front of every route: statistics, fault injection, per-token limits
and one log line per request.

:class:`ServiceMiddleware` counts ``/v2/...`` requests and their answers, applies the
injected faults (:mod:`~namelookup_emulator.faults`) and the per-token
limits (:mod:`~namelookup_emulator.limits`) before the service sees a
request, and logs one line per request: method, path without query string, outcome
(a status, ``dropped-before``/``dropped-after`` for an injected drop, ``disconnected`` for
a client that left before its body arrived) and time; never a token.

Example::

    app = Starlette(routes=..., middleware=[Middleware(ServiceMiddleware, state=state)])
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from starlette.responses import HTMLResponse, Response
from starlette.types import Message, Receive, Scope, Send

from namelookup_emulator.asgi import HttpMiddleware
from namelookup_emulator.faults import (
    SERVICE_UNAVAILABLE_HTML,
    FaultKind,
    drop_connection,
    format_retry_after,
)
from namelookup_emulator.limits import token_of
from namelookup_emulator.links import base_url
from namelookup_emulator.problems import problem

logger = logging.getLogger("namelookup_emulator")


class ServiceMiddleware(HttpMiddleware):
    """Counts requests, injects the configured faults into ``/v2/...`` requests and logs
    one line per request (method, path without query string, outcome, time: never a token).

    A client that left before its body arrived (``scope["state"]["client_gone"]``, set by
    :class:`~.read_timeouts.BodyDeadline`) is counted in ``client_disconnects`` and logged as
    ``disconnected`` at INFO level: whatever the route answered to nobody is not counted.

    :param app: the wrapped ASGI app.
    :param state: the emulator's state (faults and stats).
    """

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
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
                        if self.state.faults.draw_after(self.state.stats.credits_charged):
                            await self._drop_after(scope, receive, outcome)
                        else:
                            await self.app(scope, receive, observe)
            finally:
                admission.leave()
            if scope["state"].get("client_gone"):
                outcome["gone"] = True
                self.state.stats.client_gone()
            elif "status" in outcome and "dropped" not in outcome:
                self.state.stats.answered(outcome["status"])
            elif fault == "drop_before":
                outcome["dropped"] = "before"
        finally:
            self._log(scope, outcome, started)

    @staticmethod
    def _log(scope: Scope, outcome: dict[str, Any], started: float) -> None:
        failure = scope["state"].get("failure")
        if scope["state"].get("client_gone") or outcome.get("gone"):
            result: Any = "disconnected"
        elif "dropped" in outcome:
            result = f"dropped-{outcome['dropped']}"
        else:
            result = outcome.get("status", "-")
        logger.log(logging.WARNING if failure else logging.INFO, "%s %s %s %.1fms%s",
                   scope.get("method", "-"), scope["path"], result,
                   (time.perf_counter() - started) * 1000, f" failed: {failure}" if failure else "")

    async def _before(self, scope: Scope, receive: Receive, send: Send) -> FaultKind | None:
        faults = self.state.faults
        latency = faults.latency_seconds()
        if latency > 0:
            await asyncio.sleep(latency)
        kind = faults.draw_before(self.state.stats.credits_charged)
        if kind is None:
            return None
        self.state.stats.fault(kind)
        base = base_url(scope, self.state.config.public_url)
        response: Response
        if kind == "error_500":
            response = problem("generic-error", "Injected fault: internal server error.", base,
                               http_status=500)
        elif kind == "error_503":
            response = HTMLResponse(SERVICE_UNAVAILABLE_HTML, status_code=503)
        elif kind == "rate_limit_429":
            seconds = faults.config.retry_after
            response = problem("too-many-requests", "Injected fault: too many requests.", base,
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
                           "charged. Retry after the time in the Retry-After header.",
                           base_url(scope, self.state.config.public_url), http_status=429,
                           headers={"Retry-After": format_retry_after(retry_after)})
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
