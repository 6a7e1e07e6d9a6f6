"""An XCom lookup keeps what it paid for on every failure path: an ``execution_timeout``
mid-run, SIGTERM (``on_kill``), any exception. Direct ``execute()`` calls with real HTTP
to the emulator; the task state store is an in-memory stand-in with Airflow's interface."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from airflow.providers.common.compat.sdk import AirflowTaskTimeout

from airflow_provider_namelookup.operators import GenderLookupOperator
from airflow_provider_namelookup.operators.retry_stash import STATE_KEY
from tests.operators.test_retry_stash import StateStore, _context


@pytest.fixture
def timeout_after() -> Iterator[Any]:
    """``timeout_after(seconds)``: raise AirflowTaskTimeout in the main thread, as execution_timeout does."""
    def fire(signum: int, frame: Any) -> None:
        raise AirflowTaskTimeout("Timeout, PID: test")

    previous = signal.signal(signal.SIGALRM, fire)
    yield lambda seconds: signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def test_an_execution_timeout_midway_keeps_the_answers_for_the_retry(namelookup: Any, emulator: Any,
                                                                     timeout_after: Any) -> None:
    namelookup.set_credits(1000)
    names = [f"Name{i:03d}" for i in range(250)]
    store = StateStore()
    operator = GenderLookupOperator(task_id="genders", queries=names, max_concurrency=1,
                                    check_remaining_credits=False)
    emulator.set_faults(latency_ms=1000)  # batch 1 answers at ~1 s, batch 2 at ~2 s
    timeout_after(1.5)
    with pytest.raises(AirflowTaskTimeout), structlog.testing.capture_logs() as logs:
        operator.execute(_context(store))
    emulator.set_faults()
    assert len(store.values[STATE_KEY]) == 100
    events = [e["event"] for e in logs]
    assert any("Stopped after 100 of 250" in e and "kept for the task's next try" in e for e in events)
    assert events[-1].startswith("Summary: genders: ") and sum(e.startswith("Summary:") for e in events) == 1

    store.values.clear()
    operator.on_kill()  # SIGTERM: Airflow calls on_kill, which saves them as well
    assert len(store.values[STATE_KEY]) == 100

    before = emulator.stats()["requests"]
    retry = GenderLookupOperator(task_id="genders", queries=names, max_concurrency=1, check_remaining_credits=False)
    with structlog.testing.capture_logs() as logs:
        results = retry.execute(_context(store, try_number=2))
    assert any("Reusing 100 answers" in e["event"] for e in logs)
    assert logs[-1]["event"].startswith("Summary: genders: ") and "150 lookups" in logs[-1]["event"]
    assert all("gender" in r for r in results) and len(results) == 250
    assert emulator.stats()["requests"] - before == 2  # 150 names left: 100 + 50, nothing paid twice
    assert STATE_KEY not in store.values  # deleted on success


def test_any_exception_keeps_the_answers(namelookup: Any, emulator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook

    namelookup.set_credits(1000)
    store = StateStore()
    real_answers = NameLookupAsyncHook.answers

    async def one_batch_then_out_of_memory(self: Any, lookup: Any, queries: Any, **kwargs: Any) -> Any:
        async for answered in real_answers(self, lookup, queries, **kwargs):
            yield answered
            raise MemoryError("the worker ran out of memory")

    monkeypatch.setattr(NameLookupAsyncHook, "answers", one_batch_then_out_of_memory)
    operator = GenderLookupOperator(task_id="genders", queries=[f"Name{i:03d}" for i in range(250)],
                                    max_concurrency=1, check_remaining_credits=False)
    with pytest.raises(MemoryError), structlog.testing.capture_logs() as logs:
        operator.execute(_context(store, try_number=2, max_tries=1))  # the last try
    assert len(store.values[STATE_KEY]) == 100
    stopped = next(e["event"] for e in logs if e["event"].startswith("Stopped after"))
    assert "next try" not in stopped and "no try is left" in stopped
