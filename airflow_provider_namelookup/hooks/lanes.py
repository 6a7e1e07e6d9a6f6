"""The async hook's HTTP clients: its connections spread over small pools, each request sent on the
least busy one.

httpx's pool scans every connection of a client for each request, so one pool of 64 costs about
three times the CPU per request of eight pools of 8, and pools of 2 are cheaper still. HTTP/2 (one
connection) was measured too and did not beat that (``benchmarks/http2_probe.py``).

Example::

    lanes = ClientLanes(lambda size: httpx.AsyncClient(limits=httpx.Limits(max_connections=size)), 5)
    lanes.sizes                                  # [2, 2, 1]: one client made, the others when needed
    lane = lanes.least_busy()
    lanes.busy[lane] += 1
    await lanes.clients[lane].get(url)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import httpx

LANE_CONNECTIONS = 2
"""Connections per httpx client of the async hook. httpcore scans its whole pool on every
request start and end; pools of 2 cut the client's CPU per one-name request by ~15 %
against pools of 8 (country of origin sends one request per distinct name)."""


class ClientLanes:
    """The async hook's HTTP clients: ``connections`` split over clients of at most
    ``LANE_CONNECTIONS`` connections each, made as they are needed (a statistic call makes one); each request
    goes to the least busy client.

    :param make: builds one client with the given number of connections.
    """

    def __init__(self, make: Callable[[int], httpx.AsyncClient], connections: int) -> None:
        count = math.ceil(connections / LANE_CONNECTIONS)
        self.sizes = [connections // count + (1 if i < connections % count else 0) for i in range(count)]
        self._make = make
        self.clients = [make(self.sizes[0])]
        self.busy = [0]

    def least_busy(self) -> int:
        """The lane for the next request (a new one when every lane made so far is full)."""
        index = min(range(len(self.clients)), key=self.busy.__getitem__)
        if self.busy[index] >= self.sizes[index] and len(self.clients) < len(self.sizes):
            self.clients.append(self._make(self.sizes[len(self.clients)]))
            self.busy.append(0)
            return len(self.clients) - 1
        return index

    async def aclose(self) -> None:
        """Close every client made so far."""
        for client in self.clients:
            await client.aclose()
