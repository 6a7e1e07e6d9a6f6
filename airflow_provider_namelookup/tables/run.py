"""One table enrichment run: plan pass, credit check, then the enrichment pass.

1. **Plan pass** — read the source page by page (joined to the target's hashes) and
   count the distinct queries that are neither unchanged, invalid, nor already answered
   in the target (the cross-run cache). That count times the lookup's price is what
   the run needs; it is checked against ``max_credits`` and the account's remaining
   credits (one free statistic call) before anything is spent.
2. **Enrichment pass** — read the pages again. Unchanged rows are skipped; invalid rows
   are written at once as ``error`` with the rule they broke; rows whose answer is known
   (this run or an earlier one) are written at once from the cache; new queries are
   collected across pages and sent as full batches, up to ``max_concurrency`` at a time,
   and their rows written as the answers arrive.
3. If a lookup fails (credits exhausted, network gone after retries), every answer
   received is written first, then the error is raised: the next run only pays for
   what is missing.

Example::

    job = TableJob(source, target, RowSpec(LookupKind.GENDER), page_size=1000)
    summary = asyncio.run(run_table_job(job, async_hook, log))
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from airflow_provider_namelookup.enrichment.budget import InsufficientCreditsMode
from airflow_provider_namelookup.enrichment.calls import QueryAnswerer, decide_budget
from airflow_provider_namelookup.enrichment.plan import PlannedRow, RowSpec, plan_row
from airflow_provider_namelookup.enrichment.progress import RunProgress
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.models import Query
from airflow_provider_namelookup.tables.schema import (
    STATUS_ERROR,
    STATUS_OK,
    result_columns,
    result_values,
    timestamp_value,
)
from airflow_provider_namelookup.tables.source import SourceRow, TableSource
from airflow_provider_namelookup.tables.target import TargetTable

_INVALID_ROWS_LOGGED = 20
_PLAN_MEMO_SIZE = 16_384


@dataclass
class TableJob:
    """What one table operator run does.

    :param max_waiting_rows: rows held while their queries wait for a full batch; beyond
        this the partial batch is sent anyway.
    :param cache_size: answers kept in memory (older ones are re-read from the target).
    :param plan_only: only plan: count the credits the run needs, spend and write nothing.
    """

    source: TableSource
    target: TargetTable
    spec: RowSpec
    page_size: int = 1000
    max_credits: int | None = None
    on_insufficient_credits: InsufficientCreditsMode = "fail"
    check_remaining_credits: bool = True
    max_waiting_rows: int = 20_000
    cache_size: int = 50_000
    progress_interval: float = 15.0
    plan_only: bool = False


class AnswerCache:
    """Answers by query hash: recent ones in memory (LRU), older ones found in the target."""

    def __init__(self, target: TargetTable, known: dict[str, Any], size: int) -> None:
        self.target = target
        self.known = known
        self.size = size
        self._recent: OrderedDict[str, tuple[Any, ...]] = OrderedDict()

    def __contains__(self, query_hash: str) -> bool:
        return query_hash in self._recent or query_hash in self.known

    def put(self, query_hash: str, values: tuple[Any, ...]) -> None:
        self._recent[query_hash] = values
        self._recent.move_to_end(query_hash)
        while len(self._recent) > self.size:
            self._recent.popitem(last=False)

    def remember_key(self, query_hash: str, key: Any) -> None:
        self.known.setdefault(query_hash, key)

    def get_many(self, hashes: set[str]) -> dict[str, tuple[Any, ...]]:
        """Values for hashes known to be answered; one query for those not in memory."""
        found = {h: self._recent[h] for h in hashes if h in self._recent}
        missing = {self.known[h]: h for h in hashes - found.keys() if h in self.known}
        if missing:
            for key, values in self.target.fetch_results(missing).items():
                found[missing[key]] = values
                self.put(missing[key], values)
        return found


@dataclass
class _Waiting:
    """New queries not yet sent, and the rows that wait for them."""

    queries: dict[str, Query] = field(default_factory=dict)
    rows: list[PlannedRow] = field(default_factory=list)


class TableRun:
    """State of one run; see the module docstring for the passes."""

    def __init__(self, job: TableJob, hook: NameLookupAsyncHook, log: logging.Logger | Any) -> None:
        self.job = job
        self.hook = hook
        self.log = log
        self.progress = RunProgress(label=f"{job.source.label} -> {job.target.name}",
                                    interval=job.progress_interval)
        self.lookup = job.spec.lookup
        self.empty_result = (None,) * len(result_columns(self.lookup))
        self.waiting = _Waiting()
        self.cache: AnswerCache
        self.answerer: QueryAnswerer
        self.target_exists = True
        # Real tables repeat a few names very often: validate each (name, country) once.
        self._plan_values = functools.lru_cache(maxsize=_PLAN_MEMO_SIZE, typed=True)(self._plan_uncached)

    def _plan_uncached(self, name: Any, country: Any) -> PlannedRow:
        return plan_row(None, name, self.job.spec, country=country)

    def _plan(self, row: SourceRow) -> PlannedRow:
        key, name, country, _ = row
        try:
            planned = self._plan_values(name, country)
        except TypeError:  # an unhashable value (a driver's JSON or array type): plan it uncached
            planned = self._plan_uncached(name, country)
        return PlannedRow(key, planned.query, planned.query_hash, planned.error)

    def _pages(self) -> Iterator[list[SourceRow]]:
        return self.job.source.pages(self.job.target, self.job.page_size, joined=self.target_exists)

    async def _read_pages(self) -> Any:
        pages = self._pages()
        while True:
            page = await asyncio.to_thread(next, pages, None)
            if page is None:
                return
            yield page

    def _stamp(self) -> Any:
        """``enriched_at`` for the rows written now."""
        return timestamp_value(datetime.now(UTC), self.job.target.dialect)

    @staticmethod
    def _row(planned: PlannedRow, values: tuple[Any, ...], status: str, error: str | None,
             credits: int, stamp: Any) -> tuple[Any, ...]:
        return (planned.ref, *values, status, error, credits, planned.query_hash, stamp)

    async def _write(self, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            await asyncio.to_thread(self.job.target.upsert, rows)
            status_at = 1 + len(self.empty_result)  # key, result columns, status, error, credits, hash
            for row in rows:
                if row[status_at] == STATUS_OK:
                    self.cache.remember_key(row[status_at + 3], row[0])

    # Plan pass --------------------------------------------------------------------------------
    async def count_needed(self) -> int:
        needed: set[str] = set()
        async for page in self._read_pages():
            for row in page:
                planned = self._plan(row)
                if planned.query is not None and planned.query_hash != row[3] \
                        and planned.query_hash not in self.cache:
                    needed.add(planned.query_hash)
        self.progress.distinct_queries = len(needed)
        return len(needed) * self.lookup.credits_per_query

    # Enrichment pass --------------------------------------------------------------------------
    async def enrich(self) -> None:
        wave = self.hook.sizer.limit * self.hook.max_concurrency if self.lookup.takes_hints \
            else self.hook.max_concurrency * 8
        async for page in self._read_pages():
            self.progress.pages += 1
            self.progress.rows_read += len(page)
            stamp = self._stamp()
            ready: list[tuple[Any, ...]] = []
            lookups: list[PlannedRow] = []
            for row in page:
                planned = self._plan(row)
                if planned.query_hash == row[3]:
                    self.progress.rows_unchanged += 1
                elif planned.error is not None:
                    self._note_invalid(planned)
                    ready.append(self._row(planned, self.empty_result, STATUS_ERROR, str(planned.error), 0, stamp))
                else:
                    lookups.append(planned)
            cached = self.cache.get_many({p.query_hash for p in lookups if p.query_hash in self.cache})
            for planned in lookups:
                if planned.query_hash in cached:
                    self.progress.cache_hits += 1
                    self.progress.rows_enriched += 1
                    ready.append(self._row(planned, cached[planned.query_hash], STATUS_OK, None, 0, stamp))
                else:
                    assert planned.query is not None
                    self.waiting.queries.setdefault(planned.query_hash, planned.query.with_id(None))
                    self.waiting.rows.append(planned)
            await self._write(ready)
            if len(self.waiting.queries) >= wave or len(self.waiting.rows) >= self.job.max_waiting_rows:
                await self._send(whole_batches_only=len(self.waiting.rows) < self.job.max_waiting_rows)
            self.progress.tick(self.log)
        await self._send(whole_batches_only=False)

    def _note_invalid(self, planned: PlannedRow) -> None:
        self.progress.rows_invalid += 1
        if self.progress.rows_invalid <= _INVALID_ROWS_LOGGED:
            self.log.warning("Row %s=%r is invalid and costs nothing: %s", self.job.target.key_column,
                             planned.ref, planned.error)
        elif self.progress.rows_invalid == _INVALID_ROWS_LOGGED + 1:
            self.log.warning("More invalid rows follow; see the error column of %s", self.job.target.name)

    async def _send(self, *, whole_batches_only: bool) -> None:
        """Send waiting queries (whole batches only, unless flushing) and write their rows."""
        items = list(self.waiting.queries.items())
        if whole_batches_only and self.lookup.takes_hints:
            items = items[: len(items) - len(items) % self.hook.sizer.limit]
        if not items:
            return
        sending = dict(items)
        for h in sending:
            del self.waiting.queries[h]
        answered: dict[str, dict[str, Any]] = {}
        try:
            async for chunk in self.answerer.answer(sending):
                answered.update(chunk)
        finally:
            await self._write_answered(sending, answered)

    async def _write_answered(self, sent: dict[str, Query], answered: dict[str, dict[str, Any]]) -> None:
        stamp = self._stamp()
        values = {h: result_values(self.lookup, result) for h, result in answered.items()}
        charged: set[str] = set()
        rows: list[tuple[Any, ...]] = []
        still_waiting: list[PlannedRow] = []
        for planned in self.waiting.rows:
            h = planned.query_hash
            if h in values:
                credits = 0
                if h not in charged:
                    charged.add(h)
                    credits = self.lookup.credits_per_query
                rows.append(self._row(planned, values[h], STATUS_OK, None, credits, stamp))
            elif h in self.answerer.deferred:
                self.progress.rows_deferred += 1
            elif h in sent:
                continue  # the lookup failed: left for the next run
            else:
                still_waiting.append(planned)
        for h, answer_values in values.items():
            self.cache.put(h, answer_values)
        self.waiting.rows = still_waiting
        await self._write(rows)
        self.progress.rows_enriched += len(rows)

    async def run(self) -> dict[str, Any]:
        job = self.job
        key_sample = await asyncio.to_thread(job.source.peek_key)
        if key_sample is None:
            self.log.info("Source %s is empty: nothing to enrich", job.source.label)
            return self.progress.summary()
        if job.plan_only:
            self.target_exists = await asyncio.to_thread(job.target.exists)
        elif await asyncio.to_thread(job.target.ensure, key_sample):
            self.log.info("Created target table %s", job.target.name)
        known = await asyncio.to_thread(job.target.known_hashes) if self.target_exists else {}
        self.cache = AnswerCache(job.target, known, job.cache_size)
        needed = await self.count_needed()
        self.progress.credits_needed = needed
        if job.plan_only:
            self.log.info("Plan only: %d distinct new queries would need %d credits; nothing was spent",
                          self.progress.distinct_queries, needed)
            return self.progress.summary()
        budget = await decide_budget(self.hook, needed, max_credits=job.max_credits,
                                     mode=job.on_insufficient_credits, check_remaining=job.check_remaining_credits)
        if needed:
            self.log.info("Plan for %s: %d distinct new queries need %d credits (available: %s)",
                          self.progress.label, self.progress.distinct_queries, needed,
                          "no limit" if budget.allowance is None else f"{budget.allowance}, {budget.limited_by}")
        else:
            self.log.info("Plan for %s: nothing new to look up", self.progress.label)
        self.answerer = QueryAnswerer(self.hook, self.lookup, budget, self.progress)
        try:
            await self.enrich()
        finally:
            self.progress.tick(self.log, force=True)
        return self.progress.summary()


async def run_table_job(job: TableJob, hook: NameLookupAsyncHook, log: logging.Logger | Any) -> dict[str, Any]:
    """Run one table enrichment and return its summary (see :class:`RunProgress`)."""
    return await TableRun(job, hook, log).run()
