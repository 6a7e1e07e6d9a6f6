"""Slow clients are cut off: a request head and a request body each have a time limit.

uvicorn closes a connection idle between requests (``timeout_keep_alive``), but neither
uvicorn nor its HTTP parsers limit how long one request may take to arrive: a client
sending a byte a second held its connection, and its request, forever (a "slowloris").

* **Head** (:func:`http_protocol`): from the connection, or from the first byte of the
  next request on a kept-alive one, the whole head must arrive within
  ``EmulatorConfig.header_timeout`` (default 10 s), however it trickles in. Then the
  emulator answers 408 problem details and closes the connection; a connection on which
  no byte of a request came is closed without an answer (as at the end of a keep-alive).
  A mixin over uvicorn's own HTTP protocol class (httptools, else h11), which the ASGI
  app cannot do: it is called only once a head is complete.
* **Body** (:class:`BodyDeadline`, ASGI middleware): once the head is there, the whole
  body must arrive within ``EmulatorConfig.body_timeout`` (default 30 s). Then the route
  sees the client as gone, nothing is charged, and the client gets 408 problem details
  with ``Connection: close``.
* A client that disconnects before its body arrived is marked ``client_gone`` for the
  middleware, which logs ``disconnected`` and counts it in ``client_disconnects``: neither
  a 500 nor a warning.

Example::

    config = uvicorn.Config(app, http=http_protocol(header_timeout=10.0, public_url=None))
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from starlette.types import Message, Receive, Scope, Send
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from namelookup_emulator.asgi import HttpMiddleware
from namelookup_emulator.links import base_url
from namelookup_emulator.problems import problem, problem_body

logger = logging.getLogger("namelookup_emulator")


class HeadDeadline:
    """Mixin for a uvicorn HTTP protocol class: a time limit on each request head.

    It relies on what uvicorn's HTTP/1.1 protocols (``HttpToolsProtocol``, ``H11Protocol``)
    share: ``transport``, ``server`` (the local address) and ``cycle``, the request being
    answered, replaced as soon as a new head has been read.
    """

    header_timeout: float = 10.0
    public_url: str | None = None
    transport: asyncio.Transport
    server: tuple[str, int | None] | None
    cycle: Any

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_bytes = False
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and (self.cycle is None or self.cycle.response_complete):
            self._arm()  # the first byte of the next request on a kept-alive connection
        if self._head_timer is not None:
            self._head_bytes = True
        super().data_received(data)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm(self) -> None:
        self._waiting_for = self.cycle
        self._head_bytes = False
        self._head_timer = asyncio.get_running_loop().call_later(self.header_timeout, self._head_late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.cycle is not self._waiting_for:
            return  # closed, or a new head was read in time
        if self._head_bytes:
            logger.info("- - request head not complete after %g s: 408, connection closed", self.header_timeout)
            self.transport.write(_raw_408(f"The request head did not arrive within {self.header_timeout:g} s; "
                                          "the connection is closed.", base_url({"server": self.server},
                                                                               self.public_url)))
        self.transport.close()


def _raw_408(detail: str, base: str) -> bytes:
    body = json.dumps(problem_body("generic-error", detail, base, http_status=408)).encode()
    return (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/problem+json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


def http_protocol(header_timeout: float, public_url: str | None,
                  base: type[asyncio.Protocol] = AutoHTTPProtocol) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class ``base`` with :class:`HeadDeadline` (``uvicorn.Config(http=...)``).

    :param header_timeout: seconds for a whole request head.
    :param public_url: the base of the 408 answer's ``type`` (None: the local address).
    :param base: uvicorn's protocol class; its default choice (httptools, else h11) by default.
    """
    return type(f"HeadDeadline{base.__name__}", (HeadDeadline, base),
                {"header_timeout": header_timeout, "public_url": public_url})


class BodyDeadline(HttpMiddleware):
    """ASGI middleware: a time limit on each request body (see the module docstring).

    :param app: the wrapped ASGI app.
    :param state: the emulator's state (its ``config.body_timeout`` and ``public_url``).
    """

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        seconds = self.state.config.body_timeout
        deadline = asyncio.get_running_loop().time() + seconds
        flags = scope.setdefault("state", {})
        reading, late, answered = True, False, False

        async def timed_receive() -> Message:
            nonlocal reading, late
            if late:
                return {"type": "http.disconnect"}
            if not reading:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                late, reading = True, False
                return {"type": "http.disconnect"}
            if message["type"] == "http.disconnect":
                flags["client_gone"] = True
                reading = False
            elif not message.get("more_body", False):
                reading = False
            return message

        async def checked_send(message: Message) -> None:
            nonlocal answered
            if late or flags.get("client_gone"):
                return  # nobody reads the route's answer to a request it did not get whole
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, timed_receive, checked_send)
        if late and not answered:
            response = problem("generic-error", f"The request body did not arrive within {seconds:g} s; nothing "
                               "was charged and the connection is closed.",
                               base_url(scope, self.state.config.public_url), http_status=408,
                               headers={"Connection": "close"})
            await response(scope, receive, send)
