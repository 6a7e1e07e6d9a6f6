"""Where an XCom lookup keeps what it paid for until the task succeeds: the store chosen by
what the context offers, best effort on every path."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_namelookup.operators.retry_stash import (
    STATE_KEY,
    FirstTry,
    NoStash,
    TaskStateStash,
    VariableStash,
    fate_of_kept_answers,
    retry_stash_for,
    signature,
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
    retry = SimpleNamespace(dag_id="d", task_id="t", run_id="manual__1", map_index=3, try_number=2)
    assert isinstance(retry_stash_for({"task_state_store": StateStore(), "ti": retry}, log), TaskStateStash)
    variable = retry_stash_for({"ti": retry}, log, "token")
    assert isinstance(variable, VariableStash) and variable.key == "namelookup_answers__d__t__manual__1__3"
    long = retry_stash_for({"ti": SimpleNamespace(dag_id="d" * 200, task_id="t" * 200, run_id="r", map_index=-1,
                                                  try_number=2)}, log)
    assert isinstance(long, VariableStash) and len(long.key) <= 250
    assert isinstance(retry_stash_for({}, log), NoStash)
    first = retry_stash_for({"ti": SimpleNamespace(dag_id="d", task_id="t", run_id="r", map_index=-1,
                                                   try_number=1)}, log, "token")
    assert isinstance(first, FirstTry) and isinstance(first.store, VariableStash)


def test_a_first_try_reads_nothing_another_try_reads_what_was_kept() -> None:
    """Issue 32, F5: the stash was read on the first try too, so answers put there before the task
    instance ever ran were returned as its own."""
    state = StateStore()
    state.values[STATE_KEY] = {"h1": {"gender": "male", "probability": 1.0}}  # planted before the first try
    first = retry_stash_for(_context(state, try_number=1), logging.getLogger("test"))
    assert first.load() == {}
    assert first.save({"h2": {"gender": "female"}}) and state.values[STATE_KEY] == {"h2": {"gender": "female"}}
    assert retry_stash_for(_context(state, try_number=2), logging.getLogger("test")).load() == {
        "h2": {"gender": "female"}}


class Variables:
    """``airflow.sdk.Variable``'s get/set/delete on a dict (the signing rule, without a task around it)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any = None, deserialize_json: bool = False) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any, serialize_json: bool = False, description: str | None = None) -> None:
        self.values[key] = value

    def delete(self, key: str) -> None:
        self.values.pop(key)


def test_a_variable_is_reused_only_when_signed_with_the_token_and_its_own_name(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    variables = Variables()
    monkeypatch.setattr("airflow.sdk.Variable", variables)
    log = logging.getLogger("test.variable")
    mine = VariableStash("namelookup_answers__d__t__r__-1", log, "the-token")
    assert mine.save({"h": {"gender": "female"}}) and mine.load() == {"h": {"gender": "female"}}
    assert "the-token" not in repr(variables.values)
    key = mine.key
    planted = [{"h": {"gender": "male"}},  # the earlier format: unsigned
               {"answers": {"h": {"gender": "male"}}, "signature": "0" * 64},
               {"answers": {"h": {"gender": "male"}}, "signature": signature(key, {"h": {"gender": "male"}}, "other")},
               {"answers": {"h": {"gender": "male"}},
                "signature": signature("namelookup_answers__other", {"h": {"gender": "male"}}, "the-token")}]
    with caplog.at_level(logging.WARNING):
        for plant in planted:
            variables.values[key] = plant
            assert mine.load() == {}
    assert [r.getMessage() for r in caplog.records] == [
        f"the Airflow Variable {key!r} holds answers this task instance did not sign: they are not reused"] * 4
    assert VariableStash(key, log, None).save({"h": {}}) is False  # no token: nothing to sign with, nothing kept


def test_the_log_says_kept_for_the_next_try_only_when_one_is_left() -> None:
    assert tries_left(_context(StateStore(), try_number=1, max_tries=2))
    assert not tries_left(_context(StateStore(), try_number=3, max_tries=2))
    assert not tries_left({})
    assert "next try" in fate_of_kept_answers(retry_coming=True, where="x")
    last = fate_of_kept_answers(retry_coming=False, where="the task state store")
    assert "next try" not in last and "no try is left" in last and "cleared" in last


def test_a_task_state_store_keeps_loads_and_clears_the_answers() -> None:
    state = StateStore()
    store = retry_stash_for(_context(state, try_number=2), logging.getLogger("test"))
    assert store.load() == {} and not store.save({})  # nothing kept yet, nothing to keep
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
