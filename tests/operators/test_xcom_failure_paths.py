"""An XCom lookup keeps what it paid for on every failure path: an ``execution_timeout``
mid-run, SIGTERM (``on_kill``), any exception. Direct ``execute()`` calls with real HTTP
to the emulator; the task state store is an in-memory stand-in with Airflow's interface."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import structlog
from airflow.providers.common.compat.sdk import AirflowTaskTimeout

from airflow_provider_namelookup.operators import GenderLookupOperator
from airflow_provider_namelookup.operators.answer_store import (
    STATE_KEY,
    NoAnswerStore,
    TaskStateAnswerStore,
    VariableAnswerStore,
    answer_store_for,
    fate_of_kept_answers,
    tries_left,
)


class StateStore:
    """``context["task_state_store"]``'s interface (get, set, delete) over a dict."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value

    def delete(self, key: str) -> None:
        self.values.pop(key, None)


def _context(store: StateStore, try_number: int = 1, max_tries: int = 1) -> dict[str, Any]:
    ti = SimpleNamespace(dag_id="d", task_id="genders", run_id="r", map_index=-1, try_number=try_number,
                         max_tries=max_tries)
    return {"task_state_store": store, "ti": ti}


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
    from airflow_provider_namelookup.enrichment import list_run

    namelookup.set_credits(1000)
    store = StateStore()
    real_update = dict.update
    calls = {"n": 0}

    class Answers(dict):  # type: ignore[type-arg]
        def update(self, *args: Any, **kwargs: Any) -> None:
            calls["n"] += 1
            if calls["n"] > 1:
                raise MemoryError("the worker ran out of memory")
            real_update(self, *args, **kwargs)

    original_init = list_run.ListRun.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.answers = Answers(self.answers)

    monkeypatch.setattr(list_run.ListRun, "__init__", init)
    operator = GenderLookupOperator(task_id="genders", queries=[f"Name{i:03d}" for i in range(250)],
                                    max_concurrency=1, check_remaining_credits=False)
    with pytest.raises(MemoryError), structlog.testing.capture_logs() as logs:
        operator.execute(_context(store, try_number=2, max_tries=1))  # the last try
    assert len(store.values[STATE_KEY]) == 100
    stopped = next(e["event"] for e in logs if e["event"].startswith("Stopped after"))
    assert "next try" not in stopped and "no try is left" in stopped


def test_the_store_follows_what_the_context_offers() -> None:
    log = SimpleNamespace(warning=print)
    assert isinstance(answer_store_for({"task_state_store": StateStore()}, log), TaskStateAnswerStore)
    ti = SimpleNamespace(dag_id="d", task_id="t", run_id="manual__1", map_index=3)
    variable = answer_store_for({"ti": ti}, log)
    assert isinstance(variable, VariableAnswerStore) and variable.key == "namelookup_answers__d__t__manual__1__3"
    long = answer_store_for({"ti": SimpleNamespace(dag_id="d" * 200, task_id="t" * 200, run_id="r", map_index=-1)},
                            log)
    assert isinstance(long, VariableAnswerStore) and len(long.key) <= 250
    assert isinstance(answer_store_for({}, log), NoAnswerStore)


def test_the_log_says_kept_for_the_next_try_only_when_one_is_left() -> None:
    assert tries_left(_context(StateStore(), try_number=1, max_tries=2))
    assert not tries_left(_context(StateStore(), try_number=3, max_tries=2))
    assert not tries_left({})
    assert "next try" in fate_of_kept_answers(retry_coming=True, where="x")
    last = fate_of_kept_answers(retry_coming=False, where="the task state store")
    assert "next try" not in last and "no try is left" in last and "cleared" in last
