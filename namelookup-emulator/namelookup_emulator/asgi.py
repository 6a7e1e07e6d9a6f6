"""What the emulator's ASGI middlewares share: the app they wrap, the emulator's state, and every
scope but an HTTP request's (lifespan) passed straight through.

Example::

    class Stamped(HttpMiddleware):
        async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
            scope.setdefault("state", {})["stamped"] = True
            await self.app(scope, receive, send)

    app = Starlette(routes=..., middleware=[Middleware(Stamped, state=state)])
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from starlette.types import ASGIApp, Receive, Scope, Send

from namelookup_emulator.state import EmulatorState


class HttpMiddleware(ABC):
    """ASGI middleware in front of ``app`` for HTTP requests (:meth:`http`); other scopes pass through.

    :param app: the wrapped ASGI app.
    :param state: the emulator's state.
    """

    def __init__(self, app: ASGIApp, state: EmulatorState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    @abstractmethod
    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one HTTP request, or pass it on to ``self.app``."""
