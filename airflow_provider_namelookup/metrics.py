"""What the provider tells Airflow's metrics: ``Stats``, so StatsD or OpenTelemetry, whichever
the deployment configured (``[metrics] statsd_on`` / ``otel_on``); nothing is sent when neither is.

Every name starts with ``namelookup.`` (the deployment's ``statsd_prefix``, ``airflow`` by
default, comes in front). Tags are low-cardinality: the connection id, the lookup kind, the
endpoint and the HTTP status class; never a name, a value or a token.

=====================================  =======  =============================================
metric                                 type     tags
=====================================  =======  =============================================
``namelookup.requests``                counter  conn_id, endpoint, status (one per HTTP attempt)
``namelookup.request_duration``        timer    conn_id, endpoint (ms, from sending to the answer)
``namelookup.retries``                 counter  conn_id (attempts repeated after a failure)
``namelookup.credits_used``            counter  conn_id, endpoint (``details.credits_used`` of answers)
``namelookup.remaining_credits``       gauge    conn_id (each free statistic call)
``namelookup.cache_hits``              counter  conn_id, lookup (per try, from the run's summary)
=====================================  =======  =============================================

Each hook counts its calls once, in a :class:`CallCounters` (requests, retries, credits, the
remaining credits it last read), which also sends the per-request metrics; the lookup
operators add the cache hits of each try. Metrics never fail a lookup: an error of the
metrics backend is logged at debug level and dropped.

Example::

    >>> counters = CallCounters("namelookup_default")
    >>> counters.answered({"remaining_credits": 812, "details": {"credits_used": 0}})["remaining_credits"]
    812
    >>> counters.answered([{"details": {"credits_used": 1}}, {"details": {"credits_used": 1}}]) and None
    >>> counters.credits_used, counters.remaining_now()
    (2, 810)
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from airflow_provider_namelookup.contract import GENDER_PATH, ORIGIN_PATH, SIGNUP_PATH, STATISTIC_PATH
from airflow_provider_namelookup.models import credits_used

log = logging.getLogger(__name__)

PREFIX = "namelookup."
REQUESTS = f"{PREFIX}requests"
REQUEST_DURATION = f"{PREFIX}request_duration"
RETRIES = f"{PREFIX}retries"
CREDITS_USED = f"{PREFIX}credits_used"
REMAINING_CREDITS = f"{PREFIX}remaining_credits"
CACHE_HITS = f"{PREFIX}cache_hits"

_ENDPOINTS = ((STATISTIC_PATH, "statistic"), (ORIGIN_PATH, "country_of_origin"), (GENDER_PATH, "gender"),
              (SIGNUP_PATH, "sign_up"))


def endpoint_of(path: str) -> str:
    """The endpoint family of a request path, as a tag (a fixed set of values).

    >>> endpoint_of("/v2/gender/by-full-name-multiple"), endpoint_of("/v2/statistic"), endpoint_of("/x")
    ('gender', 'statistic', 'other')
    """
    return next((name for prefix, name in _ENDPOINTS if path.startswith(prefix)), "other")


def status_class(status: int | None) -> str:
    """An HTTP status as a tag: ``2xx``, ``4xx``, ``5xx``, ``429`` (refused for load) or ``error`` (no answer).

    >>> status_class(200), status_class(401), status_class(429), status_class(503), status_class(None)
    ('2xx', '4xx', '429', '5xx', 'error')
    """
    if status is None:
        return "error"
    if status == 429:
        return "429"
    return f"{status // 100}xx"


@functools.cache
def _stats() -> Any:
    """Airflow's ``Stats`` of this release (resolved once: common-compat looks it up by name)."""
    from airflow.providers.common.compat.sdk import Stats

    return Stats


def _emit(kind: str, stat: str, *args: Any, tags: Mapping[str, str]) -> None:
    try:
        getattr(_stats(), kind)(stat, *args, tags=dict(tags))
    except Exception as err:  # a metrics backend must never fail a lookup
        log.debug("Could not emit %s %s: %s", kind, stat, err)


def count(stat: str, value: int = 1, **tags: str) -> None:
    """Add ``value`` to a counter (nothing is sent for 0)."""
    if value:
        _emit("incr", stat, value, tags=tags)


def gauge(stat: str, value: float, **tags: str) -> None:
    """Set a gauge to ``value``."""
    _emit("gauge", stat, value, tags=tags)


def timing(stat: str, seconds: float, **tags: str) -> None:
    """Send a duration of ``seconds`` to a timer (Airflow's ``Stats`` takes it as a ``timedelta``)."""
    _emit("timing", stat, timedelta(seconds=seconds), tags=tags)


@dataclass
class CallCounters:
    """What one hook's calls did, counted once: read by the run's summary and the usage record, and
    sent to Airflow's metrics as it happens.

    ``credits_maybe_charged`` counts the credits of answers lost after their request was sent
    (connection reset, read timeout): the service may have charged them, once per lost answer, and it
    has no idempotency key. ``queries_maybe_charged_twice`` counts the lookups of such requests that
    were then sent again: the service may have charged them twice.

    :param conn_id: the hook's connection id (a tag of every metric).
    """

    conn_id: str
    requests: int = 0
    retries: int = 0
    queries_sent: int = 0
    credits_used: int = 0
    credits_maybe_charged: int = 0
    queries_maybe_charged_twice: int = 0
    remaining_credits: int | None = None
    """``remaining_credits`` of the last statistic answer, None before one came."""
    credits_since_statistic: int = 0
    """Credits charged after that answer."""

    def attempt(self, queries: int) -> None:
        """A request carrying ``queries`` lookups was sent (first try or a retry)."""
        self.requests += 1
        self.queries_sent += queries

    def sent(self, path: str, status: int | None, seconds: float) -> None:
        """One HTTP attempt ended: with an answer (``status``) or without one (None)."""
        endpoint = endpoint_of(path)
        count(REQUESTS, conn_id=self.conn_id, endpoint=endpoint, status=status_class(status))
        timing(REQUEST_DURATION, seconds, conn_id=self.conn_id, endpoint=endpoint)

    def lost(self, credits: int) -> None:
        """An answer worth ``credits`` was lost after its request was sent: they may have been charged."""
        self.credits_maybe_charged += credits

    def retried(self, queries: int, *, maybe_processed: bool) -> None:
        """A failed attempt is repeated; ``maybe_processed``: it may have been charged."""
        self.retries += 1
        if maybe_processed:
            self.queries_maybe_charged_twice += queries
        count(RETRIES, conn_id=self.conn_id)

    def answered(self, answer: Any) -> Any:
        """An exchange ended with ``answer`` (returned unchanged): count its credits; a statistic sets the gauge."""
        if isinstance(answer, Mapping) and isinstance(answer.get("remaining_credits"), int):
            self.remaining_credits = answer["remaining_credits"]
            self.credits_since_statistic = 0
            gauge(REMAINING_CREDITS, answer["remaining_credits"], conn_id=self.conn_id)
            return answer
        results = answer if isinstance(answer, list) else [answer]
        spent = sum(credits_used(r) for r in results)  # 0 for anything but a result
        if spent:
            self.credits_used += spent
            self.credits_since_statistic += spent
            kind = "gender" if isinstance(answer, list) or "country_of_origin" not in answer else "country_of_origin"
            count(CREDITS_USED, spent, conn_id=self.conn_id, endpoint=kind)
        return answer

    def remaining_now(self) -> int | None:
        """The remaining credits as far as this hook knows: the last statistic less what it spent since."""
        if self.remaining_credits is None:
            return None
        return max(0, self.remaining_credits - self.credits_since_statistic)

    def as_dict(self) -> dict[str, int]:
        """The counters a run's summary reports."""
        return {"requests": self.requests, "retries": self.retries, "queries_sent": self.queries_sent,
                "credits_used": self.credits_used, "credits_maybe_charged": self.credits_maybe_charged,
                "queries_maybe_charged_twice": self.queries_maybe_charged_twice}
