"""The async hook's HTTP transport: httpx's own, with a cheaper check of idle connections.

Before each request it starts and after each it ends, httpcore asks every idle connection of
the pool whether its socket is readable (an idle connection whose socket is readable has been
closed by the server and must not be reused). Through anyio, each such question rebuilds the
stream's whole attribute table, a ``getpeername`` system call included, to find the raw socket:
a quarter of the hook's CPU in a 200,000-row run (``benchmarks/cpu_phases.py``). Here the raw
socket is looked up once per connection and the same readability test (a ``poll`` with no
wait) runs on it, so a connection the server closed is still never reused.

Example::

    client = httpx.AsyncClient(transport=idle_checked_transport(limits=httpx.Limits(max_connections=2)))
"""

from __future__ import annotations

import select
import socket
import ssl
from typing import Any

import httpcore
import httpx

from airflow_provider_namelookup.third_party import with_network_backend

__all__ = ["idle_checked_transport", "socket_readable"]


def socket_readable(sock: socket.socket | None) -> bool:
    """Whether reading ``sock`` would return at once: data waiting, or the peer's close (httpcore's
    test; a socket that is gone counts as readable, so that its connection is dropped)."""
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    if getattr(select, "poll", None) is None:  # pragma: no cover - not on Linux or macOS
        return bool(select.select([fd], [], [], 0)[0])
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class _Stream(httpcore.AsyncNetworkStream):
    """A stream of httpcore's backend that knows its raw socket (see the module docstring)."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream
        self._socket: socket.socket | None = stream.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._stream.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return socket_readable(self._socket)
        return self._stream.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    """httpcore's anyio backend, its streams wrapped in :class:`_Stream`."""

    def __init__(self) -> None:
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._backend.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def idle_checked_transport(**options: Any) -> httpx.AsyncHTTPTransport:
    """``httpx.AsyncHTTPTransport(**options)`` whose connections are checked as the module docstring
    says. Should a later httpx build its pool otherwise, the transport is httpx's, unchanged."""
    transport = httpx.AsyncHTTPTransport(**options)
    with_network_backend(transport, _Backend())
    return transport
