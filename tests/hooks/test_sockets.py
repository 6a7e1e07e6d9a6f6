"""The async hook's transport (:mod:`airflow_provider_namelookup.hooks.sockets`): idle connections the
server closed are still found and never reused, over real sockets."""

from __future__ import annotations

import asyncio
import socket

import httpcore
import httpx

from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.hooks.sockets import _Backend, idle_checked_transport, socket_readable


async def _one_answer_per_connection() -> tuple[asyncio.AbstractServer, list[int]]:
    """A server that answers one request per connection, then closes it without saying so (no
    ``Connection: close``), as a server whose keep-alive timed out does."""
    served: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        served.append(1)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}")
        await writer.drain()
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0), served


def test_a_connection_the_server_closed_is_not_reused() -> None:
    async def scenario() -> tuple[list[int], list[int]]:
        server, served = await _one_answer_per_connection()
        port = server.sockets[0].getsockname()[1]
        transport = idle_checked_transport(limits=httpx.Limits(max_connections=1))
        statuses = []
        async with server, httpx.AsyncClient(transport=transport, base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(3):
                statuses.append((await client.get("/")).status_code)
                await asyncio.sleep(0.05)  # the server's close reaches the client's socket
        return statuses, served

    statuses, served = asyncio.run(scenario())
    assert statuses == [200, 200, 200]
    assert len(served) == 3


def test_readable_means_data_or_the_peer_gone() -> None:
    left, right = socket.socketpair()
    try:
        assert not socket_readable(left)
        right.sendall(b"x")
        assert socket_readable(left)
        left.recv(1)
        right.close()
        assert socket_readable(left)
    finally:
        left.close()
    assert socket_readable(None)


def test_the_async_hook_uses_it_unless_given_a_transport() -> None:
    async def backends() -> tuple[object, object]:
        made = NameLookupAsyncHook.for_url("http://127.0.0.1:1", token="t")
        given = NameLookupAsyncHook.for_url("http://127.0.0.1:1", token="t",
                                            transport=httpx.MockTransport(lambda request: httpx.Response(200)))
        try:
            ours = (await made.aclient())._transport
            theirs = (await given.aclient())._transport
        finally:
            await made.aclose()
            await given.aclose()
        return ours, theirs

    ours, theirs = asyncio.run(backends())
    assert isinstance(ours, httpx.AsyncHTTPTransport)
    assert isinstance(ours._pool, httpcore.AsyncConnectionPool)
    assert isinstance(ours._pool._network_backend, _Backend)
    assert isinstance(theirs, httpx.MockTransport)
