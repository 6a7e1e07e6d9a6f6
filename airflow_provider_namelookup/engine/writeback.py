"""Answers paid for, stored in the answer cache behind the lookups, while the lookups go on.

A store is a statement or two in the warehouse. Where a statement costs milliseconds (SQLite,
PostgreSQL, MySQL, DuckDB) answers are stored **continuously**: a store begins as soon as
answers wait and no store runs, with every answer that came meanwhile, so a task killed
outright (SIGKILL, a lost worker) loses only the answers of its requests in flight and those of
the one store under way. Where a statement costs a second and money (the cloud warehouses),
answers collect and go together, at most ``interval`` seconds after the oldest came (or once
``batch`` wait), and a kill loses up to that long's answers. Every other failure stores
everything first (:meth:`WriteBack.drain`).

Example::

    writeback = WriteBack(cache.store, interval=0.0, on_stored=paid.update)
    await writeback.add({"<hash>": result})     # returns at once; stored behind the lookups
    await writeback.drain()                     # everything stored (or the store's error)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

Store = Callable[[Mapping[str, Any]], Awaitable[set[str]]]


class WriteBack:
    """A buffer of answers with one store running at a time.

    :param store: writes answers, returns the hashes kept.
    :param interval: most seconds an answer waits before its store starts; 0 stores continuously.
    :param batch: with an interval, a store also starts once this many answers wait.
    :param on_stored: called with each store's answers and the hashes it kept.
    """

    def __init__(self, store: Store, *, interval: float,
                 on_stored: Callable[[Mapping[str, Any], set[str]], None], batch: int = 10_000) -> None:
        self._store = store
        self.interval = interval
        self.batch = batch
        self._on_stored = on_stored
        self._pending: dict[str, Any] = {}
        self._oldest: float | None = None
        self._worker: asyncio.Task[None] | None = None
        self._storing: asyncio.Task[None] | None = None
        self._due = asyncio.Event()

    async def add(self, answers: Mapping[str, Any]) -> None:
        """Buffer answers; their store begins behind the lookups. Raises the error of a store that
        failed meanwhile."""
        self._raise_failed()
        if not answers:
            return
        self._pending.update(answers)
        if self._oldest is None:
            self._oldest = time.monotonic()
        if self.interval <= 0 or len(self._pending) >= self.batch:
            self._due.set()  # due now: the next store starts as soon as none runs
        if self._worker is None:
            self._worker = asyncio.ensure_future(self._store_while_pending())

    def _raise_failed(self) -> None:
        if self._worker is not None and self._worker.done():
            worker, self._worker = self._worker, None
            worker.result()

    async def _store_while_pending(self) -> None:
        while self._pending:
            assert self._oldest is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._due.wait(), max(0.0, self._oldest + self.interval - time.monotonic()))
            self._due.clear()
            self._storing = asyncio.ensure_future(self._flush())
            await asyncio.shield(self._storing)  # a store once begun is never cut off
        self._worker = None

    async def _flush(self) -> None:
        batch, self._pending, self._oldest = self._pending, {}, None
        if batch:
            kept = await self._store(batch)
            self._on_stored(batch, kept)

    async def drain(self) -> None:
        """Store everything buffered now; raise the error of a store that failed."""
        worker, self._worker = self._worker, None
        if worker is not None and not worker.done():
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        failure = worker.exception() if worker is not None and not worker.cancelled() else None
        storing, self._storing = self._storing, None
        if storing is not None:
            try:
                await storing  # the last store the worker began: its error, if it failed
            except Exception as err:
                failure = failure or err
        if failure is not None:
            raise failure
        await self._flush()
