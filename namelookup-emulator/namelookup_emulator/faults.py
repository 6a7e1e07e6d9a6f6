"""Fault injection and request statistics, for reliability tests of clients.

Off by default. When configured (from Python through :class:`FaultInjector` or over
HTTP with ``PUT /emulator/faults``), every request to a ``/v2/...`` path first waits the
configured latency, then draws once to decide whether it fails *before* processing:

* ``error_500``: HTTP 500 with an RFC 7807 body (title ``generic-error``), like an
  unexpected failure of the service;
* ``error_503``: HTTP 503 with an HTML body, like an overloaded proxy in front of it;
* ``rate_limit_429``: HTTP 429 with a ``Retry-After`` header of ``retry_after`` seconds
  (fractional values such as ``0.05`` are written as such) and an RFC 7807 body
  titled ``too-many-requests``;
* ``drop_before``: the TCP connection is aborted before anything is processed;

and, independently, whether the answer is lost *after* processing:

* ``drop_after``: the request is processed (and charged) in full, then the connection
  is aborted instead of answering. A client that retries pays twice; the stats count
  these as ``answers_lost_after_charge`` / ``credits_lost_after_charge``.

The shares are probabilities between 0 and 1; the four "before" shares may add up to at
most 1. ``latency_ms`` is a fixed number or a ``[low, high]`` range drawn uniformly.
``seed`` makes the draws repeatable. ``after_credits`` holds the draws back (latency still
applies) until the emulator has charged that many credits since its stats were last reset:
a client's run then meets the faults part-way through its spending, at a point that does
not depend on how fast anyone polls.

Per-token limits are set here too, and answered with 429 and ``Retry-After`` after
the latency and before the draws (:mod:`~namelookup_emulator.limits`):
``token_max_in_flight`` (requests of one token being answered at once),
``token_max_rps`` (requests of one token per second) and ``token_retry_after`` (the
``Retry-After`` seconds of an in-flight refusal). Unlike the shares, they act only
when a client goes over them, as a real service's limits would.

Example::

    >>> injector = FaultInjector()
    >>> injector.configure(error_503=1.0).error_503
    1.0
    >>> injector.draw_before()
    'error_503'
    >>> injector.reset().active
    False
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import random
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal

from starlette.types import Receive

FaultKind = Literal["error_500", "error_503", "rate_limit_429", "drop_before", "drop_after"]
BEFORE_KINDS: tuple[FaultKind, ...] = ("error_500", "error_503", "rate_limit_429", "drop_before")

SERVICE_UNAVAILABLE_HTML = (
    "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
    "<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n")


@dataclasses.dataclass(frozen=True)
class FaultConfig:
    """What to inject; every share is a probability per request.

    :param error_500: share of HTTP 500 answers.
    :param error_503: share of HTTP 503 answers (HTML body).
    :param rate_limit_429: share of HTTP 429 answers with ``Retry-After``.
    :param retry_after: the ``Retry-After`` seconds of injected 429s.
    :param latency_ms: added latency: milliseconds, or a (low, high) range.
    :param drop_before: share of connections aborted before processing.
    :param drop_after: share of connections aborted after processing and charging.
    :param seed: seeds the random draws when set, for repeatable runs.
    :param after_credits: no fault is drawn before the emulator has charged this many credits
        (counted by :class:`Stats` since its last reset); 0: from the first request.
    :param token_max_in_flight: requests of one token answered at once; None: no limit.
    :param token_max_rps: requests of one token per second; None: no limit.
    :param token_retry_after: the ``Retry-After`` seconds when ``token_max_in_flight`` refuses.
    """

    error_500: float = 0.0
    error_503: float = 0.0
    rate_limit_429: float = 0.0
    retry_after: float = 1.0
    latency_ms: float | tuple[float, float] = 0.0
    drop_before: float = 0.0
    drop_after: float = 0.0
    seed: int | None = None
    after_credits: int = 0
    token_max_in_flight: int | None = None
    token_max_rps: float | None = None
    token_retry_after: float = 1.0

    def __post_init__(self) -> None:
        for name in (*BEFORE_KINDS, "drop_after"):
            value = getattr(self, name)
            if not _is_number(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a number from 0 to 1, got {value!r}")
        if sum(getattr(self, name) for name in BEFORE_KINDS) > 1.0 + 1e-9:
            raise ValueError("error_500 + error_503 + rate_limit_429 + drop_before must be at most 1")
        if not _is_number(self.retry_after) or not 0.0 <= self.retry_after <= 3600 \
                or not math.isfinite(self.retry_after):
            raise ValueError(f"retry_after must be 0 to 3600 seconds, got {self.retry_after!r}")
        latency = self.latency_ms
        bounds = tuple(latency) if isinstance(latency, (list, tuple)) else (latency, latency)
        if len(bounds) != 2 or not all(_is_number(b) and 0.0 <= b <= 60_000 for b in bounds) \
                or bounds[0] > bounds[1]:
            raise ValueError(f"latency_ms must be 0 to 60000 ms or a [low, high] range, got {latency!r}")
        object.__setattr__(self, "latency_ms", bounds if isinstance(latency, (list, tuple)) else latency)
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ValueError(f"seed must be an integer or null, got {self.seed!r}")
        gate = self.after_credits
        if isinstance(gate, bool) or not isinstance(gate, int) or gate < 0:
            raise ValueError(f"after_credits must be an integer of at least 0, got {gate!r}")
        flight = self.token_max_in_flight
        if flight is not None and (isinstance(flight, bool) or not isinstance(flight, int) or flight < 1):
            raise ValueError(f"token_max_in_flight must be an integer of at least 1 or null, got {flight!r}")
        rps = self.token_max_rps
        if rps is not None and (not _is_number(rps) or rps <= 0):
            raise ValueError(f"token_max_rps must be a number above 0 or null, got {rps!r}")
        wait = self.token_retry_after
        if not _is_number(wait) or not 0.0 <= wait <= 3600:
            raise ValueError(f"token_retry_after must be 0 to 3600 seconds, got {wait!r}")

    @classmethod
    def from_json(cls, data: Any) -> FaultConfig:
        """Build from a JSON object; missing members take their defaults.

        :raises ValueError: for unknown members or values out of range.
        """
        if not isinstance(data, Mapping):
            raise ValueError("the fault configuration must be a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown fault settings: {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**data)

    def to_json(self) -> dict[str, Any]:
        """The JSON form ``GET /emulator/faults`` answers."""
        data = dataclasses.asdict(self)
        if isinstance(self.latency_ms, tuple):
            data["latency_ms"] = list(self.latency_ms)
        return data

    @property
    def active(self) -> bool:
        """Whether anything at all is injected."""
        latency = self.latency_ms
        return any(getattr(self, name) for name in (*BEFORE_KINDS, "drop_after")) \
            or (max(latency) if isinstance(latency, tuple) else latency) > 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class FaultInjector:
    """The current :class:`FaultConfig` and the random draws made from it; thread-safe."""

    def __init__(self) -> None:
        self._config = FaultConfig()
        self._random = random.Random()
        self._lock = threading.Lock()

    @property
    def config(self) -> FaultConfig:
        """The configuration in force."""
        return self._config

    def configure(self, config: FaultConfig | None = None, **settings: Any) -> FaultConfig:
        """Replace the whole configuration (settings not given go back to their defaults).

        :param config: a ready configuration, or None to build one from ``settings``.
        :param settings: :class:`FaultConfig` fields.
        """
        new = config if config is not None else FaultConfig(**settings)
        with self._lock:
            self._config = new
            if new.seed is not None:
                self._random.seed(new.seed)
        return new

    def update(self, **settings: Any) -> FaultConfig:
        """Change some settings and keep the others."""
        return self.configure(dataclasses.replace(self._config, **settings))

    def reset(self) -> FaultConfig:
        """Switch every fault off."""
        return self.configure(FaultConfig())

    def latency_seconds(self) -> float:
        """The latency to add to this request."""
        latency = self._config.latency_ms
        if isinstance(latency, tuple):
            with self._lock:
                return self._random.uniform(*latency) / 1000.0
        return latency / 1000.0

    def draw_before(self, charged: int = 0) -> FaultKind | None:
        """The fault this request suffers before processing, if any.

        :param charged: credits the emulator has charged so far (held against ``after_credits``).
        """
        config = self._config
        if charged < config.after_credits:
            return None
        with self._lock:
            point = self._random.random()
        for kind in BEFORE_KINDS:
            share = getattr(config, kind)
            if point < share:
                return kind
            point -= share
        return None

    def draw_after(self, charged: int = 0) -> bool:
        """Whether this request's answer is lost after processing.

        :param charged: credits the emulator has charged so far (held against ``after_credits``).
        """
        share = self._config.drop_after
        if not share or charged < self._config.after_credits:
            return False
        with self._lock:
            return self._random.random() < share


class Stats:
    """Counters of what the emulator did, for reliability tests; thread-safe.

    ``GET /emulator/stats`` answers :meth:`snapshot`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Set every counter to zero."""
        with self._lock:
            self._requests = 0
            self._statuses: Counter[str] = Counter()
            self._faults: Counter[str] = Counter({kind: 0 for kind in (*BEFORE_KINDS, "drop_after")})
            self._queries = 0
            self._credits = 0
            self._lost_answers = 0
            self._lost_credits = 0
            self._limited = 0
            self._gone = 0

    def request(self) -> None:
        with self._lock:
            self._requests += 1

    def answered(self, status: int) -> None:
        with self._lock:
            self._statuses[str(status)] += 1

    def fault(self, kind: FaultKind) -> None:
        with self._lock:
            self._faults[kind] += 1

    def limited(self) -> None:
        with self._lock:
            self._limited += 1

    def client_gone(self) -> None:
        with self._lock:
            self._gone += 1

    def processed(self, queries: int, credits: int) -> None:
        with self._lock:
            self._queries += queries
            self._credits += credits

    @property
    def credits_charged(self) -> int:
        """Credits charged since the last reset."""
        with self._lock:
            return self._credits

    def lost_after_charge(self, credits: int) -> None:
        with self._lock:
            self._lost_answers += 1
            self._lost_credits += credits

    def snapshot(self) -> dict[str, Any]:
        """All counters as JSON."""
        with self._lock:
            return {
                "requests": self._requests,
                "responses_by_status": dict(sorted(self._statuses.items())),
                "faults": dict(self._faults),
                "requests_limited": self._limited,
                "client_disconnects": self._gone,
                "queries_processed": self._queries,
                "credits_charged": self._credits,
                "answers_lost_after_charge": self._lost_answers,
                "credits_lost_after_charge": self._lost_credits,
            }


class ConnectionDropUnsupported(RuntimeError):
    """The ASGI server gives no access to the connection, so it cannot be dropped."""


async def drop_connection(receive: Receive) -> None:
    """Abort the TCP connection of the current request (uvicorn only).

    uvicorn's ``receive`` is a bound method of its request cycle, which holds the
    asyncio transport; aborting it resets the connection without an answer. Then wait
    (briefly) until uvicorn has noticed, so that it does not try to answer itself.

    :raises ConnectionDropUnsupported: under another server; the request then fails
        with an exception instead.
    """
    transport = getattr(getattr(receive, "__self__", None), "transport", None)
    if transport is None or not hasattr(transport, "abort"):
        raise ConnectionDropUnsupported("cannot reach the connection to drop it")
    transport.abort()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(1.0):
            while (await receive())["type"] != "http.disconnect":
                pass


def format_retry_after(seconds: float) -> str:
    """``Retry-After`` text: whole seconds as an integer, fractions as a decimal."""
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"
