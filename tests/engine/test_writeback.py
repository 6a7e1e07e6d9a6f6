"""Answers stored behind the lookups: together, on time, never lost, errors never swallowed.

Each step waits for what it needs (a store begun, a batch stored) rather than for a slept moment,
so that a busy machine does not reorder them (issue 36)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from airflow_provider_namelookup.engine.writeback import WriteBack


class Store:
    """Records each store; keeps every hash but ``refused``; fails when told to; a store waits
    for ``gate`` when one is given (it is open by default)."""

    def __init__(self, *, refused: frozenset[str] = frozenset()) -> None:
        self.batches: list[dict[str, Any]] = []
        self.begun: list[dict[str, Any]] = []
        self.refused = refused
        self.gate: asyncio.Event | None = None
        self.failure: BaseException | None = None
        self.kept: list[set[str]] = []

    async def __call__(self, answers: Mapping[str, Any]) -> set[str]:
        self.begun.append(dict(answers))
        if self.gate is not None:
            await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        self.batches.append(dict(answers))
        return set(answers) - self.refused

    def on_stored(self, answers: Mapping[str, Any], kept: set[str]) -> None:
        self.kept.append(kept)


async def until(condition: Callable[[], Any], what: str, seconds: float = 30.0) -> None:
    """Wait until ``condition()`` holds, failing after ``seconds`` (a margin, not a measure)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        assert loop.time() < deadline, f"{what}: not within {seconds:g} s"
        await asyncio.sleep(0.005)


def test_answers_wait_for_the_interval_and_go_together() -> None:
    store = Store()

    async def go() -> None:
        loop = asyncio.get_running_loop()
        writeback = WriteBack(store, interval=0.5, on_stored=store.on_stored)
        added = loop.time()
        for i in range(5):
            await writeback.add({f"h{i}": {"gender": "female"}})
        if loop.time() - added < 0.5:  # else the machine stalled longer than the interval
            assert store.batches == []  # nothing stored before the oldest waited the interval
        await until(lambda: store.batches, "the first store")
        assert loop.time() - added >= 0.5
        assert [sorted(b) for b in store.batches] == [[f"h{i}" for i in range(5)]]
        await writeback.drain()

    asyncio.run(go())
    assert store.kept == [{f"h{i}" for i in range(5)}]


def test_a_full_batch_is_stored_before_the_interval() -> None:
    store = Store()

    async def go() -> None:
        writeback = WriteBack(store, interval=60.0, batch=3, on_stored=store.on_stored)
        await writeback.add({"a": 1, "b": 2})
        await writeback.add({"c": 3})
        await until(lambda: store.batches, "the store of a full batch")
        assert len(store.batches) == 1 and sorted(store.batches[0]) == ["a", "b", "c"]
        await writeback.add({"d": 4})
        await writeback.drain()  # the rest at once, without waiting a minute

    asyncio.run(asyncio.wait_for(go(), 5))
    assert [sorted(b) for b in store.batches] == [["a", "b", "c"], ["d"]]


def test_drain_stores_everything_and_waits_for_a_store_under_way() -> None:
    store = Store(refused=frozenset({"b"}))

    async def go() -> None:
        store.gate = asyncio.Event()
        writeback = WriteBack(store, interval=0.01, on_stored=store.on_stored)
        await writeback.add({"a": 1, "b": 2})
        await until(lambda: store.begun, "the store of a and b")
        await writeback.add({"c": 3})
        asyncio.get_running_loop().call_later(0.05, store.gate.set)  # the store under way ends later
        await writeback.drain()

    asyncio.run(go())
    assert [sorted(b) for b in store.batches] == [["a", "b"], ["c"]]
    assert store.kept == [{"a"}, {"c"}]  # what the store did not keep is reported as such


def test_a_failed_store_is_raised_by_the_next_add_or_by_drain() -> None:
    store = Store()
    store.failure = ConnectionError("the warehouse is gone")

    async def by_add() -> None:
        writeback = WriteBack(store, interval=0.01, on_stored=store.on_stored)
        await writeback.add({"a": 1})
        await until(lambda: store.begun, "the failing store")
        await asyncio.sleep(0.01)  # its failure noted
        await writeback.add({"b": 2})

    async def by_drain() -> None:
        writeback = WriteBack(store, interval=0.01, on_stored=store.on_stored)
        await writeback.add({"a": 1})
        await until(lambda: store.begun, "the failing store")
        await writeback.drain()

    for go in (by_add, by_drain):
        with pytest.raises(ConnectionError, match="warehouse is gone"):
            asyncio.run(go())


def test_with_no_interval_answers_are_stored_continuously_behind_the_lookups() -> None:
    """A store begins as soon as answers wait and none runs, with all that came meanwhile: the
    lookups never wait for it, and what a kill could lose is what one store carries."""
    store = Store()

    async def go() -> None:
        store.gate = asyncio.Event()
        writeback = WriteBack(store, interval=0.0, on_stored=store.on_stored)
        await writeback.add({"a": 1})
        assert store.batches == []  # add returned at once: the store runs behind it
        await until(lambda: store.begun, "the store of a")
        await writeback.add({"b": 2})  # while a's store runs
        await writeback.add({"c": 3})
        store.gate.set()
        await until(lambda: len(store.batches) == 2, "the store of b and c")
        assert [sorted(b) for b in store.batches] == [["a"], ["b", "c"]]  # the next store took both
        await writeback.add({})
        await writeback.drain()

    asyncio.run(go())
    assert store.kept == [{"a"}, {"b", "c"}]
