"""Adaptive concurrency for the async hook: how many requests may be in flight right now.

:class:`ConcurrencyLimit` is an AIMD controller with slow start, the rule TCP uses for
its congestion window, applied to requests instead of packets:

* **slow start**: the limit starts at ``initial`` (32: twice the 16 a hand-written client
  keeps in flight, so that a first run of a few thousand names is two round trips), or at 64
  once a lone request (the statistic call before the lookups) showed the service to be 40 ms
  or more away (:meth:`ConcurrencyLimit.far_away`: up to 6,400 names are then one wave), and
  grows by one for each fast, clean answer; above 32 it grows by at most 16 a round trip
  (*limited slow start*, RFC 3742), so that running into a service's limit costs a few
  refused requests, not as many as the limit itself. From 32, a run reaches the default
  ceiling of 64 in two round trips;
* **additive increase**: after that it grows by ``1 / limit`` per fast, clean answer,
  about one request per round trip;
* **multiplicative decrease**: an HTTP 429, a 5xx, a timeout or a lost connection
  multiplies it by ``decrease`` (0.7), at most once per round trip: answers to requests
  sent before the last decrease do not decrease it again;
* **fast** means within ``latency_tolerance`` times the quickest recent answer to the
  same path: when answers slow down (the service queues them), the limit stops growing;
* a ``Retry-After`` (of a 429 or 503) also stops every new request until it has passed;
* the limit stays between 1 and ``ceiling`` (the hook's ``max_concurrency``).

Other answers (a 4xx such as ``limit-exceeded`` or a validation error) change nothing.

:class:`ConcurrencyLimit` holds the rules and never waits (unit-testable with any
clock); :class:`ConcurrencyGate` lets coroutines wait for a free slot. One gate is shared
by all requests of one hook instance (one task run).

Example::

    >>> limit = ConcurrencyLimit(ceiling=64, initial=4, clock=lambda: 0.0)
    >>> tickets = [limit.try_start("/v2/gender") for _ in range(5)]
    >>> tickets[-1] is None, limit.in_flight          # the fifth waits for a free slot
    (True, 4)
    >>> limit.finish(tickets[0], Outcome.OK)
    >>> limit.limit                                   # slow start: one more per clean answer
    5.0
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from airflow_provider_namelookup.contract import CLIENT_DEFAULTS

DEFAULT_MAX_CONCURRENCY = int(CLIENT_DEFAULTS["max_concurrency"])
"""Default ceiling: at a 100 ms round trip, 64 requests in flight are ~640 requests/s,
about what one client process can drive with httpx; a higher ceiling would buy nothing
on one worker and would only let a burst hit the service harder."""
DEFAULT_INITIAL_CONCURRENCY = 32
"""Where a run starts near its service: twice the 16 in flight a competent hand-written client keeps.
Starting at 4 cost two round trips of creeping (0.2 s of a 1 s run over a WAN); at 16, 7,800 names
took three round trips, at 32 two (issue 23). A far service starts at :data:`FAR_START`."""
FAR_START = 64
"""Where a run starts once a service answered from :data:`FAR_ROUND_TRIP` or further (its statistic
call, sent before any lookup): over 80-120 ms a first run of 7,800 names took 0.71 s from 64 and
0.82 s from 32 (a window of 32 leaves the link idle for a round trip); on loopback, where the
service's work is the limit, a 1M-row run took 6.1 s from 64 and 5.5 s from 32 (issue 33)."""
FAR_ROUND_TRIP = 0.04
"""Seconds of a lone request's round trip from which a service counts as far away: above loopback's
milliseconds even on a busy machine, below a WAN's tens of milliseconds."""
LIMITED_SLOW_START = 32
"""Above this limit slow start adds at most half of it per round trip (RFC 3742's max_ssthresh)."""
_LATENCY_WINDOW = 100
_LATENCY_SMOOTHING = 0.1


class Outcome(enum.Enum):
    """What an answer says about the service's load."""

    OK = "ok"                # a 2xx answer: room to grow, if it came back fast
    CONGESTED = "congested"  # 429, 5xx, timeout, connection lost: back off
    NEUTRAL = "neutral"      # any other 4xx: says nothing about load


@dataclass(frozen=True)
class Ticket:
    """One request in flight: when and under which limit it was sent."""

    sequence: int
    started: float
    limit: float
    path: str


class _WindowedMinimum:
    """The smallest latency of the last one or two windows of samples (adapts to a
    service that gets slower for good, ignores one lucky outlier after a while)."""

    def __init__(self, window: int = _LATENCY_WINDOW) -> None:
        self.window = window
        self._count = 0
        self._current = math.inf
        self._previous = math.inf

    def add(self, sample: float) -> float:
        self._current = min(self._current, sample)
        self._count += 1
        if self._count >= self.window:
            self._previous, self._current, self._count = self._current, math.inf, 0
        return min(self._current, self._previous)


class ConcurrencyLimit:
    """The AIMD rules (see the module docstring); not thread-safe, one event loop.

    :param ceiling: the most requests in flight ever (``max_concurrency``).
    :param initial: the limit to start from (at most the ceiling).
    :param decrease: factor applied on congestion, between 0 and 1.
    :param latency_tolerance: an answer is fast while its latency is at most this many
        times the quickest recent one of the same path.
    :param clock: seconds, monotonic.
    """

    def __init__(self, ceiling: int = DEFAULT_MAX_CONCURRENCY, *, initial: int = DEFAULT_INITIAL_CONCURRENCY,
                 decrease: float = 0.7, latency_tolerance: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if ceiling < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {ceiling}")
        if not 0 < decrease < 1:
            raise ValueError(f"decrease must be between 0 and 1, got {decrease}")
        if latency_tolerance < 1:
            raise ValueError(f"latency_tolerance must be at least 1, got {latency_tolerance}")
        self.ceiling = ceiling
        self.limit = float(max(1, min(initial, ceiling)))
        self.decrease = decrease
        self.latency_tolerance = latency_tolerance
        self.clock = clock
        self.slow_start = True
        self.in_flight = 0
        self.peak_in_flight = 0
        self.decreases = 0
        self.paused_until = 0.0
        self.latency: float | None = None
        """Smoothed latency of recent answers (seconds), None before the first."""
        self._sent = 0
        self._last_full = 0
        self._recovery_from = 0
        self._fastest: dict[str, _WindowedMinimum] = {}
        self._started_at = clock()
        self._changed_at = self._started_at
        self._in_flight_seconds = 0.0

    @property
    def current(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    def pause_left(self, now: float | None = None) -> float:
        """Seconds until a ``Retry-After`` pause ends (0 when none)."""
        return max(0.0, self.paused_until - (self.clock() if now is None else now))

    def mean_in_flight(self) -> float:
        """Requests in flight on average since the controller was made (time-weighted)."""
        now = self.clock()
        total = self._in_flight_seconds + self.in_flight * (now - self._changed_at)
        return total / (now - self._started_at) if now > self._started_at else float(self.in_flight)

    def _account(self, now: float, delta: int) -> None:
        self._in_flight_seconds += self.in_flight * (now - self._changed_at)
        self._changed_at = now
        self.in_flight += delta

    def try_start(self, path: str = "") -> Ticket | None:
        """Take a slot for one request, or None if none is free (or a pause is on)."""
        now = self.clock()
        if self.in_flight >= self.current or now < self.paused_until:
            self._last_full = self._sent
            return None
        self._account(now, +1)
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        self._sent += 1
        if self.in_flight >= self.current:
            self._last_full = self._sent
        return Ticket(self._sent, now, self.limit, path)

    def finish(self, ticket: Ticket, outcome: Outcome, *, retry_after: float | None = None) -> None:
        """Give the slot back and learn from the answer."""
        now = self.clock()
        self._account(now, -1)
        latency = now - ticket.started
        if outcome is Outcome.OK:
            self._learn_latency(latency)
            if self._fast(ticket.path, latency):
                self._grow(ticket)
            else:
                self.slow_start = False
        elif outcome is Outcome.CONGESTED:
            self._back_off(ticket)
        if retry_after is not None and retry_after > 0:
            self.paused_until = max(self.paused_until, now + retry_after)

    def far_away(self, round_trip: float) -> bool:
        """A lone request came back cleanly after ``round_trip`` seconds: from a service
        :data:`FAR_ROUND_TRIP` or more away, a run still in slow start goes on from :data:`FAR_START`
        (at most the ceiling). Whether it did.

        Example::

            >>> limit = ConcurrencyLimit(ceiling=64, initial=32)
            >>> limit.far_away(0.1), limit.current
            (True, 64)
        """
        if round_trip < FAR_ROUND_TRIP or not self.slow_start or self.limit >= FAR_START:
            return False
        self.limit = float(min(self.ceiling, FAR_START))
        return True

    def cancel(self, ticket: Ticket) -> None:
        """Give the slot back without an answer (the request was cancelled)."""
        self._account(self.clock(), -1)

    def _learn_latency(self, latency: float) -> None:
        self.latency = latency if self.latency is None \
            else self.latency + _LATENCY_SMOOTHING * (latency - self.latency)

    def _fast(self, path: str, latency: float) -> bool:
        fastest = self._fastest.setdefault(path, _WindowedMinimum()).add(latency)
        return latency <= fastest * self.latency_tolerance

    def _grow(self, ticket: Ticket) -> None:
        if self._last_full < ticket.sequence:
            return  # the limit was never full while this request was out: growing it would prove nothing
        if not self.slow_start:
            step = 1.0 / self.limit
        elif self.limit <= LIMITED_SLOW_START:
            step = 1.0
        else:
            step = LIMITED_SLOW_START / 2 / ticket.limit  # the answers of one round trip add half of it
        self.limit = min(float(self.ceiling), self.limit + step)

    def _back_off(self, ticket: Ticket) -> None:
        self.slow_start = False
        if ticket.sequence <= self._recovery_from:
            return  # sent before the last decrease: this trouble is already accounted for
        self.limit = max(1.0, min(self.limit, ticket.limit) * self.decrease)
        self._recovery_from = self._sent
        self.decreases += 1


class ConcurrencyGate:
    """Lets coroutines wait for a slot of a :class:`ConcurrencyLimit`.

    Example::

        gate = ConcurrencyGate(ConcurrencyLimit(ceiling=64))
        ticket = await gate.acquire("/v2/country-of-origin")
        try:
            response = await client.post(...)
        except httpx.HTTPError:
            gate.release(ticket, Outcome.CONGESTED)
            raise
        gate.release(ticket, Outcome.OK if response.is_success else Outcome.NEUTRAL)
    """

    def __init__(self, limit: ConcurrencyLimit) -> None:
        self.limit = limit
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self, path: str = "", *, stop: asyncio.Event | None = None) -> Ticket | None:
        """Wait for a free slot (and for any ``Retry-After`` pause to end); take it. None, taking
        nothing, once ``stop`` is set (waiting callers hear of it through :meth:`wake_all`)."""
        while True:
            if stop is not None and stop.is_set():
                return None
            ticket = self.limit.try_start(path)
            if ticket is not None:
                return ticket
            pause = self.limit.pause_left()
            if pause > 0:
                if stop is None:
                    await asyncio.sleep(pause)
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), pause)
                continue
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # woken but leaving: pass the free slot on
                waiter.cancel()
                raise

    def release(self, ticket: Ticket, outcome: Outcome, *, retry_after: float | None = None) -> None:
        """Give a slot back with what its answer said; wake as many waiters as slots are free."""
        self.limit.finish(ticket, outcome, retry_after=retry_after)
        self._wake()

    def cancel(self, ticket: Ticket) -> None:
        """Give a slot back after a cancelled request."""
        self.limit.cancel(ticket)
        self._wake()

    def wake_all(self) -> None:
        """Wake every waiting caller (they look again: at a slot, and at their ``stop``)."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _wake(self) -> None:
        free = self.limit.current - self.limit.in_flight
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1
