"""Answers paid for, stored in the answer cache behind the lookups, a few times a run.

A store is a statement in the warehouse (on a cloud warehouse, a second and real money),
so answers are not stored one request at a time: they collect here and go to the cache
together, at most ``interval`` seconds after the oldest one came, while the lookups go
on. A task killed outright (SIGKILL, a lost worker) therefore loses at most the answers
of the last ``interval`` seconds and those still in flight; every other failure stores
everything first (:meth:`WriteBack.drain`).

Example::

    writeback = WriteBack(cache.store, interval=2.0, on_stored=paid.update)
    await writeback.add({"<hash>": result})     # returns at once; stored within 2 s
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
    :param interval: most seconds an answer waits before its store starts (0: stored at once).
    :param batch: a store also starts once this many answers wait (and no store runs).
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
        self._timer: asyncio.Task[None] | None = None
        self._storing: asyncio.Task[None] | None = None
        self._due = asyncio.Event()

    async def add(self, answers: Mapping[str, Any]) -> None:
        """Buffer answers; a store starts once the oldest has waited ``interval`` seconds.
        Raises the error of a store that failed meanwhile."""
        self._raise_failed()
        if not answers:
            return
        self._pending.update(answers)
        if self.interval <= 0:
            await self._flush()
            return
        if self._oldest is None:
            self._oldest = time.monotonic()
        if len(self._pending) >= self.batch:
            self._due.set()  # due now: the next store starts as soon as none runs
        if self._timer is None:
            self._timer = asyncio.ensure_future(self._flush_later())

    def _raise_failed(self) -> None:
        if self._timer is not None and self._timer.done():
            timer, self._timer = self._timer, None
            timer.result()

    async def _flush_later(self) -> None:
        while self._pending:
            assert self._oldest is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._due.wait(), max(0.0, self._oldest + self.interval - time.monotonic()))
            self._due.clear()
            self._storing = asyncio.ensure_future(self._flush())
            await asyncio.shield(self._storing)  # a store once begun is never cut off

    async def _flush(self) -> None:
        batch, self._pending, self._oldest = self._pending, {}, None
        if batch:
            kept = await self._store(batch)
            self._on_stored(batch, kept)

    async def drain(self) -> None:
        """Store everything buffered now; raise the error of a store that failed."""
        timer, self._timer = self._timer, None
        if timer is not None and not timer.done():
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer
        storing, self._storing = self._storing, None
        if storing is not None:
            await storing  # the store the timer began (its error, if it failed)
        elif timer is not None and timer.done() and not timer.cancelled():
            timer.result()
        await self._flush()
