"""Per-token request limits of the emulator: requests in flight and requests per second.

Off by default; set with the fault configuration (:class:`~.faults.FaultConfig`:
``token_max_in_flight``, ``token_max_rps``, ``token_retry_after``), over HTTP with
``PUT /emulator/faults``, with ``set_faults()`` or with the CLI's ``--token-max-in-flight``
and ``--token-max-rps``. A ``/v2/...`` request over a limit of its token is answered
HTTP 429 with a ``Retry-After`` header and an RFC 7807 body titled ``too-many-requests``,
before anything is processed: it is never charged.

* **in flight**: a request that arrives while ``token_max_in_flight`` requests of the same
  token are being answered is refused; ``Retry-After`` is ``token_retry_after``.
* **per second**: a token bucket per token, ``token_max_rps`` requests per second with a
  burst of one second's worth; ``Retry-After`` is the time until the next request is
  allowed, rounded up to the millisecond (fractions are written as such, like the
  injected 429s).

Requests without a token (sign-up, or no credentials at all) are not limited here.

Example::

    >>> faults = FaultInjector()
    >>> _ = faults.configure(token_max_in_flight=1, token_retry_after=0.5)
    >>> limiter = TokenLimiter(faults)
    >>> first, second = limiter.enter("t"), limiter.enter("t")
    >>> first.retry_after, second.retry_after
    (None, 0.5)
    >>> first.leave(); limiter.enter("t").retry_after is None
    True
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from starlette.types import Scope

from namelookup_emulator.faults import FaultInjector


def token_of(scope: Scope) -> str | None:
    """The bearer token (or legacy ``key``) of a request, or None when it carries none."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    keys = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key")
    return keys[0].strip() or None if keys else None


@dataclass
class Admission:
    """The limiter's answer to one request: admitted (``retry_after`` None) or refused.

    An admitted request must :meth:`leave` once answered.
    """

    retry_after: float | None
    _leave: Callable[[], None] | None = field(default=None, repr=False)

    def leave(self) -> None:
        if self._leave is not None:
            self._leave()
            self._leave = None


@dataclass
class _Bucket:
    tokens: float
    updated: float


class TokenLimiter:
    """Counts each token's requests in flight and per second against the configured limits.

    :param faults: where the limits are configured (read at every request).
    :param clock: monotonic seconds.
    """

    def __init__(self, faults: FaultInjector, clock: Callable[[], float] = time.monotonic) -> None:
        self._faults = faults
        self._clock = clock
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._buckets: dict[str, _Bucket] = {}
        self.peak_in_flight = 0
        """The most requests of one token in flight at once since the last :meth:`reset`."""
        self.refused = 0

    def reset(self) -> None:
        """Forget the peak and the refusals (the limits and the requests in flight stay)."""
        with self._lock:
            self._buckets.clear()
            self.peak_in_flight = sum(self._in_flight.values()) and max(self._in_flight.values())
            self.refused = 0

    def enter(self, token: str | None) -> Admission:
        """Admit or refuse one request of ``token``."""
        config = self._faults.config
        if token is None:
            return Admission(None)
        with self._lock:
            busy = self._in_flight.get(token, 0)
            if config.token_max_in_flight is not None and busy >= config.token_max_in_flight:
                self.refused += 1
                return Admission(config.token_retry_after)
            if config.token_max_rps is not None:
                wait = self._take(token, config.token_max_rps)
                if wait is not None:
                    self.refused += 1
                    return Admission(wait)
            self._in_flight[token] = busy + 1
            self.peak_in_flight = max(self.peak_in_flight, busy + 1)
        return Admission(None, lambda: self._leave(token))

    def _take(self, token: str, rate: float) -> float | None:
        now = self._clock()
        bucket = self._buckets.setdefault(token, _Bucket(tokens=max(1.0, rate), updated=now))
        bucket.tokens = min(max(1.0, rate), bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        return math.ceil((1.0 - bucket.tokens) / rate * 1000) / 1000

    def _leave(self, token: str) -> None:
        with self._lock:
            left = self._in_flight.get(token, 1) - 1
            if left > 0:
                self._in_flight[token] = left
            else:
                self._in_flight.pop(token, None)
