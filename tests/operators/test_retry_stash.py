"""Where an XCom lookup keeps what it paid for until the task succeeds: the store chosen by
what the context offers, best effort on every path."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_namelookup.operators.retry_stash import (
    STATE_KEY,
    NoStash,
    TaskStateStash,
    VariableStash,
    fate_of_kept_answers,
    retry_stash_for,
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


def test_the_store_follows_what_the_context_offers() -> None:
    log = SimpleNamespace(warning=print)
    assert isinstance(retry_stash_for({"task_state_store": StateStore()}, log), TaskStateStash)
    ti = SimpleNamespace(dag_id="d", task_id="t", run_id="manual__1", map_index=3)
    variable = retry_stash_for({"ti": ti}, log)
    assert isinstance(variable, VariableStash) and variable.key == "namelookup_answers__d__t__manual__1__3"
    long = retry_stash_for({"ti": SimpleNamespace(dag_id="d" * 200, task_id="t" * 200, run_id="r", map_index=-1)},
                            log)
    assert isinstance(long, VariableStash) and len(long.key) <= 250
    assert isinstance(retry_stash_for({}, log), NoStash)


def test_the_log_says_kept_for_the_next_try_only_when_one_is_left() -> None:
    assert tries_left(_context(StateStore(), try_number=1, max_tries=2))
    assert not tries_left(_context(StateStore(), try_number=3, max_tries=2))
    assert not tries_left({})
    assert "next try" in fate_of_kept_answers(retry_coming=True, where="x")
    last = fate_of_kept_answers(retry_coming=False, where="the task state store")
    assert "next try" not in last and "no try is left" in last and "cleared" in last


def test_a_task_state_store_keeps_loads_and_clears_the_answers() -> None:
    state = StateStore()
    store = retry_stash_for(_context(state), logging.getLogger("test"))
    assert store.load() == {} and not store.save({})  # nothing to keep on a first try
    assert store.save({"h1": {"gender": "female"}}) and state.values[STATE_KEY] == {"h1": {"gender": "female"}}
    assert store.load() == {"h1": {"gender": "female"}}
    store.clear()
    assert STATE_KEY not in state.values


def test_a_store_that_fails_is_logged_never_a_reason_to_fail(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(StateStore):
        def get(self, key: str, default: Any = None) -> Any:
            raise ConnectionError("the API server is down")

        set = delete = get  # type: ignore[assignment]

    store = TaskStateStash(Broken(), logging.getLogger("test.store"))
    with caplog.at_level(logging.WARNING):
        assert store.load() == {} and not store.save({"h": {}})
        store.clear()
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "Could not read saved answers from the task state store",
        "Could not save 1 answers to the task state store",
        "Could not delete saved answers from the task state store"]
    garbage = StateStore()
    garbage.values[STATE_KEY] = ["not", "a", "mapping"]
    assert TaskStateStash(garbage, logging.getLogger("t")).load() == {}  # unreadable content: nothing saved
