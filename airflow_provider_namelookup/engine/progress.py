"""Counters of one lookup run, logged while it works and returned as its summary.

Example::

    >>> progress = RunProgress(label="customers -> customers_gender", interval=60)
    >>> progress.rows_read += 10; progress.rows_enriched += 4; progress.rows_unchanged += 6
    >>> progress.summary()["rows_read"]
    10
    >>> progress.line().split("; ")[0]
    'customers -> customers_gender: 10 rows read, 4 enriched, 6 unchanged, 0 invalid, 0 deferred'
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, fields
from typing import Any

log = logging.getLogger(__name__)
_NOT_IN_SUMMARY = ("started", "_last_log", "interval", "concurrency", "in_flight", "latency_ms", "reads_pages",
                   "calls")
_FROM_CALLS = ("requests", "retries", "credits_used", "credits_maybe_charged", "queries_maybe_charged_twice")


@dataclass
class RunProgress:
    """What a run did so far; ``summary()`` is JSON-serialisable (the table operators' XCom).

    :param label: what is being enriched (for log lines).
    :param interval: seconds between progress lines.
    :param reads_pages: the source is read in pages (a table), so lines count them.
    :param calls: the service's call counters (requests, retries, credits), read when a line
        or the summary is made.
    """

    label: str
    interval: float = 15.0
    reads_pages: bool = field(default=False, repr=False)
    pages: int = 0
    rows_read: int = 0
    rows_unchanged: int = 0
    rows_enriched: int = 0
    rows_invalid: int = 0
    rows_deferred: int = 0
    distinct_queries: int = 0
    cache_hits: int = 0
    lookups: int = 0
    credits_needed: int = 0
    lookups_while_reading: int = 0
    """Lookups answered before the source was read to its end (pipelined country-of-origin runs)."""
    statements: int = 0
    """SQL statements the run sent to the warehouse (0 for lists)."""
    store_statements: int = 0
    """Of them, the statements that stored answers (continuous on a local warehouse: as many as
    the lookups' pace makes, where a statement costs milliseconds)."""
    concurrency: int = field(default=0, repr=False)
    in_flight: int = field(default=0, repr=False)
    latency_ms: float = field(default=0.0, repr=False)
    calls: Any = field(default=None, repr=False)
    started: float = field(default_factory=time.monotonic, repr=False)
    _last_log: float = field(default_factory=time.monotonic, repr=False)

    def _calls(self, name: str) -> int:
        return int(getattr(self.calls, name, 0)) if self.calls is not None else 0

    @property
    def requests(self) -> int:
        return self._calls("requests")

    @property
    def credits_used(self) -> int:
        return self._calls("credits_used")

    @property
    def credits_maybe_charged(self) -> int:
        """Credits of answers lost after their request was sent (the service may have charged them)."""
        return self._calls("credits_maybe_charged")

    def _credits(self) -> str:
        lost = self.credits_maybe_charged
        return f"{self.credits_used} credits spent" + (f" ({lost} more maybe charged for answers lost on the way)"
                                                       if lost else "")

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _rows(self) -> str:
        pages = f" in {self.pages} page{'s' if self.pages != 1 else ''}" if self.reads_pages and self.pages else ""
        return (f"{self.rows_read} rows read{pages}, {self.rows_enriched} enriched, {self.rows_unchanged} unchanged, "
                f"{self.rows_invalid} invalid, {self.rows_deferred} deferred")

    def _spending(self) -> str:
        statements = f", {self.statements} SQL statements" if self.statements else ""
        return (f"{self.distinct_queries} distinct new queries, {self.cache_hits} cache hits, {self.lookups} lookups, "
                f"{self._credits()}, {self.requests} requests{statements}")

    def line(self) -> str:
        """The summary: what happened to the rows, and what it cost."""
        return f"{self.label}: {self._rows()}; {self._spending()}"

    def lookup_line(self) -> str:
        """A progress line while looking up: lookups and credits so far, the network's state."""
        rate = self.lookups / self.elapsed if self.elapsed > 0 else 0.0
        network = (f", {self.in_flight} requests in flight (up to {self.concurrency} allowed), "
                   f"latency {self.latency_ms:,.0f} ms" if self.concurrency else "")
        return (f"{self.label}: {self.lookups} of {self.distinct_queries} lookups done ({rate:,.0f}/s), "
                f"{self._credits()}, {self.requests} requests{network}")

    def reading_line(self) -> str:
        """A progress line while reading the source."""
        return f"{self.label}: {self.pages} pages read, {self.rows_read} rows, {self.distinct_queries} new queries"

    def due(self) -> bool:
        """Whether a progress line is due (the interval has passed since the last one)."""
        now = time.monotonic()
        if now - self._last_log < self.interval:
            return False
        self._last_log = now
        return True

    def tick(self, logger: logging.Logger | Any = log, *, looking_up: bool = False) -> None:
        """Log a progress line if the interval has passed."""
        if self.due():
            logger.info("Progress: %s", self.lookup_line() if looking_up else self.reading_line())

    def log_summary(self, logger: logging.Logger | Any = log) -> None:
        logger.info("Summary: %s", self.line())

    def summary(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_IN_SUMMARY}
        data.update({name: self._calls(name) for name in _FROM_CALLS})
        data["duration_seconds"] = round(self.elapsed, 3)
        return data
