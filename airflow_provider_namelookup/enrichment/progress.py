"""Counters of one enrichment run, logged at an interval and returned as its summary.

Example::

    >>> progress = RunProgress(label="customers -> customers_gender", interval=60)
    >>> progress.rows_read += 10; progress.cache_hits += 4
    >>> progress.summary()["rows_read"]
    10
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger(__name__)
_NOT_IN_SUMMARY = ("started", "_last_log", "interval", "concurrency", "latency_ms")


@dataclass
class RunProgress:
    """What a run did so far; ``summary()`` is JSON-serialisable (the table operators' XCom).

    :param label: what is being enriched (for log lines).
    :param interval: seconds between progress lines.
    """

    label: str
    interval: float = 15.0
    pages: int = 0
    rows_read: int = 0
    rows_unchanged: int = 0
    rows_enriched: int = 0
    rows_invalid: int = 0
    rows_deferred: int = 0
    distinct_queries: int = 0
    cache_hits: int = 0
    lookups: int = 0
    credits_used: int = 0
    credits_needed: int = 0
    requests: int = 0
    retries: int = 0
    queries_maybe_charged_twice: int = 0
    lookups_while_reading: int = 0
    """Lookups answered before the distinct pass ended (pipelined country-of-origin runs)."""
    concurrency: int = field(default=0, repr=False)
    latency_ms: float = field(default=0.0, repr=False)
    started: float = field(default_factory=time.monotonic, repr=False)
    _last_log: float = field(default_factory=time.monotonic, repr=False)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        rate = self.rows_read / self.elapsed if self.elapsed > 0 else 0.0
        return (f"{self.label}: {self.pages} pages, {self.rows_read} rows ({rate:,.0f} rows/s), "
                f"{self.distinct_queries} distinct queries, {self.cache_hits} cache hits, "
                f"{self.lookups} lookups, {self.credits_used} credits spent, {self.rows_invalid} invalid, "
                f"{self.rows_deferred} deferred{self._network()}")

    def _network(self) -> str:
        """Requests allowed in flight now and the smoothed latency, once a request was answered."""
        if not self.concurrency:
            return ""
        return f", {self.concurrency} requests in flight allowed, latency {self.latency_ms:,.0f} ms"

    def tick(self, logger: logging.Logger | Any = log, *, force: bool = False) -> None:
        """Log a progress line if the interval has passed (or ``force``)."""
        now = time.monotonic()
        if force or now - self._last_log >= self.interval:
            self._last_log = now
            logger.info("Progress: %s", self.line())

    def log_summary(self, log) -> None:
        log.info("Summary: %s", self.line())

    def absorb_call_stats(self, stats: Any) -> None:
        """Copy the hook's request counters (requests, retries, maybe-charged-twice)."""
        self.requests = stats.requests
        self.retries = stats.retries
        self.queries_maybe_charged_twice = stats.queries_maybe_charged_twice
        self.concurrency = getattr(stats, "concurrency", 0)
        self.latency_ms = getattr(stats, "latency_ms", 0.0)

    def summary(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k not in _NOT_IN_SUMMARY}
        data["duration_seconds"] = round(self.elapsed, 3)
        return data
