"""Where an XCom lookup keeps the answers it paid for until the task succeeds.

A failed try saves its answers; the next try of the same task instance (same DAG, task,
run and map index) loads them and pays only for the rest; success deletes them. The
store is chosen by what the task's context offers:

* ``context["task_state_store"]`` (Airflow 3.3 and later): the task instance's own state.
* otherwise an Airflow Variable named after the task instance
  (``namelookup_answers__<dag>__<task>__<run>__<map index>``, hashed when too long). Variables
  live in the metadata database, so a retry on another worker of a distributed executor
  finds them (a local file would not).

Every operation is best effort: a store that cannot be read or written is logged, never
a reason to fail the task.

Example::

    store = retry_stash_for(context, log)
    saved = store.load()                       # {} on the first try
    ...                                        # on failure: store.save(answers)
    store.clear()                              # on success
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import Any, Protocol

STATE_KEY = "namelookup_answers"
VARIABLE_PREFIX = "namelookup_answers__"
_VARIABLE_KEY_MAX = 250


class RetryStash(Protocol):
    """Answers by query hash, kept for the next try of one task instance."""

    where: str

    def load(self) -> dict[str, dict[str, Any]]: ...

    def save(self, answers: Mapping[str, dict[str, Any]]) -> bool: ...

    def clear(self) -> None: ...


def _answers(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, dict)}


class _BestEffort:
    where = "nowhere"

    def __init__(self, log: logging.Logger | Any) -> None:
        self.log = log

    def _get(self) -> Any:
        raise NotImplementedError

    def _set(self, answers: dict[str, dict[str, Any]]) -> None:
        raise NotImplementedError

    def _delete(self) -> None:
        raise NotImplementedError

    def load(self) -> dict[str, dict[str, Any]]:
        try:
            return _answers(self._get())
        except Exception as err:
            self.log.warning("Could not read saved answers from %s: %s", self.where, err)
            return {}

    def save(self, answers: Mapping[str, dict[str, Any]]) -> bool:
        if not answers:
            return False
        try:
            self._set(dict(answers))
        except Exception as err:
            self.log.warning("Could not save %d answers to %s: %s", len(answers), self.where, err)
            return False
        return True

    def clear(self) -> None:
        try:
            self._delete()
        except Exception as err:
            self.log.warning("Could not delete saved answers from %s: %s", self.where, err)


class TaskStateStash(_BestEffort):
    """Airflow 3.3+: the task instance's ``task_state_store``."""

    where = "the task state store"

    def __init__(self, accessor: Any, log: logging.Logger | Any) -> None:
        super().__init__(log)
        self.accessor = accessor

    def _get(self) -> Any:
        return self.accessor.get(STATE_KEY)

    def _set(self, answers: dict[str, dict[str, Any]]) -> None:
        self.accessor.set(STATE_KEY, answers)

    def _delete(self) -> None:
        self.accessor.delete(STATE_KEY)


def variable_key(dag_id: str, task_id: str, run_id: str, map_index: int) -> str:
    """The Variable holding one task instance's answers (at most 250 characters).

    >>> variable_key("d", "t", "manual__2026", -1)
    'namelookup_answers__d__t__manual__2026__-1'
    """
    key = f"{VARIABLE_PREFIX}{dag_id}__{task_id}__{run_id}__{map_index}"
    if len(key) <= _VARIABLE_KEY_MAX:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"{VARIABLE_PREFIX}{dag_id[:80]}__{task_id[:80]}__{digest}"


class VariableStash(_BestEffort):
    """Airflow < 3.3: an Airflow Variable keyed by the task instance, deleted on success."""

    def __init__(self, key: str, log: logging.Logger | Any) -> None:
        super().__init__(log)
        self.key = key
        self.where = f"the Airflow Variable {key!r}"

    def _get(self) -> Any:
        from airflow.sdk import Variable

        return Variable.get(self.key, default=None, deserialize_json=True)

    def _set(self, answers: dict[str, dict[str, Any]]) -> None:
        from airflow.sdk import Variable

        Variable.set(self.key, answers, serialize_json=True,
                     description="Name Lookup answers kept for the next try of a failed task; "
                                 "deleted when it succeeds")

    def _delete(self) -> None:
        from airflow.sdk import Variable

        if self._get() is not None:
            Variable.delete(self.key)


class NoStash(_BestEffort):
    """No task instance in the context (a bare ``execute`` call): nothing is kept."""

    def _get(self) -> Any:
        return None

    def _set(self, answers: dict[str, dict[str, Any]]) -> None:
        raise RuntimeError("no task instance in the context to keep them for")

    def _delete(self) -> None:
        return None


def retry_stash_for(context: Mapping[str, Any], log: logging.Logger | Any) -> RetryStash:
    """The store this Airflow release offers the task: its state store, else a Variable."""
    accessor = context.get("task_state_store")
    if accessor is not None:
        return TaskStateStash(accessor, log)
    ti = context.get("ti") or context.get("task_instance")
    if ti is not None and getattr(ti, "run_id", None):
        map_index = getattr(ti, "map_index", -1)
        return VariableStash(variable_key(ti.dag_id, ti.task_id, ti.run_id,
                                                -1 if map_index is None else map_index), log)
    return NoStash(log)


def tries_left(context: Mapping[str, Any]) -> bool:
    """Whether Airflow will run this task instance again after a failure of this try."""
    ti = context.get("ti") or context.get("task_instance")
    if ti is None:
        return False
    try_number = getattr(ti, "try_number", None) or 1
    max_tries = getattr(ti, "max_tries", None)
    if max_tries is None:
        task = getattr(ti, "task", None)
        max_tries = getattr(task, "retries", 0) or 0
    return bool(try_number <= max_tries)


def fate_of_kept_answers(*, retry_coming: bool, where: str) -> str:
    """What the log says happens to answers kept after a failed try.

    >>> fate_of_kept_answers(retry_coming=True, where="the task state store")
    "they are kept for the task's next try, which pays only for the rest"
    """
    if retry_coming:
        return "they are kept for the task's next try, which pays only for the rest"
    return (f"no try is left, so they stay in {where} and are reused if this task instance is cleared "
            "and run again; a new DAG run pays for them again")
