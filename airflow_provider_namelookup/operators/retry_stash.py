"""Where an XCom lookup keeps the answers it paid for until the task succeeds.

A failed try saves its answers; the next try of the same task instance (same DAG, task,
run and map index: a retry, or a run after a clear) loads them and pays only for the rest;
success deletes them. A first try never reads them. The store is chosen by what the task's
context offers:

* ``context["task_state_store"]`` (Airflow 3.3 and later): the task instance's own state,
  which the execution API lets no other task read or write.
* otherwise an Airflow Variable named after the task instance
  (``namelookup_answers__<dag>__<task>__<run>__<map index>``, hashed when too long). Variables
  live in the metadata database, so a retry on another worker of a distributed executor
  finds them (a local file would not); but any DAG may write any Variable, so the answers
  are signed (HMAC-SHA256) with the service connection's token and with the Variable's own
  name: answers planted by another DAG, or copied from another task instance's Variable, are
  not reused (whoever holds the token could already spend its credits).

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
import hmac
import json
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


def signature(key: str, answers: Any, secret: str) -> str:
    """The HMAC-SHA256 of a Variable's answers, under ``secret`` (the service token) and its name.

    >>> signature("k", {"h": {"gender": "female"}}, "token") == signature("k", {"h": {"gender": "female"}}, "token")
    True
    >>> signature("k", {}, "token") == signature("other", {}, "token")
    False
    """
    body = json.dumps({"key": key, "answers": answers}, sort_keys=True, separators=(",", ":"), default=str)
    return hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()


class VariableStash(_BestEffort):
    """Airflow < 3.3: an Airflow Variable keyed by the task instance, signed with the service
    token, deleted on success.

    :param secret: the service connection's token (no token: nothing is kept).
    """

    def __init__(self, key: str, log: logging.Logger | Any, secret: str | None) -> None:
        super().__init__(log)
        self.key = key
        self.secret = secret
        self.where = f"the Airflow Variable {key!r}"

    def _raw(self) -> Any:
        from airflow.providers.common.compat.sdk import Variable

        # the default positionally: Airflow 2 calls it default_var, the Task SDK default
        return Variable.get(self.key, None, deserialize_json=True)

    def _get(self) -> Any:
        stored = self._raw()
        if stored is None:
            return None
        if not self.secret or not isinstance(stored, Mapping) or not hmac.compare_digest(
                str(stored.get("signature", "")), signature(self.key, stored.get("answers"), self.secret)):
            self.log.warning("%s holds answers this task instance did not sign: they are not reused", self.where)
            return None
        return stored.get("answers")

    def _set(self, answers: dict[str, dict[str, Any]]) -> None:
        from airflow.providers.common.compat.sdk import Variable

        if not self.secret:
            raise RuntimeError("the service connection has no token to sign them with")
        Variable.set(self.key, {"answers": answers, "signature": signature(self.key, answers, self.secret)},
                     serialize_json=True, description="Name Lookup answers kept for the next try of a failed task; "
                                                      "deleted when it succeeds")

    def _delete(self) -> None:
        from airflow.providers.common.compat.sdk import Variable

        if self._raw() is not None:
            Variable.delete(self.key)


class NoStash(_BestEffort):
    """No task instance in the context (a bare ``execute`` call): nothing is kept."""

    def _get(self) -> Any:
        return None

    def _set(self, answers: dict[str, dict[str, Any]]) -> None:
        raise RuntimeError("no task instance in the context to keep them for")

    def _delete(self) -> None:
        return None


class FirstTry(_BestEffort):
    """A first try: it reads nothing (no earlier try can have kept anything), and saves to ``store``."""

    def __init__(self, store: _BestEffort) -> None:
        super().__init__(store.log)
        self.store = store
        self.where = store.where

    def _get(self) -> Any:
        return None

    def _set(self, answers: dict[str, dict[str, Any]]) -> None:
        self.store._set(answers)

    def _delete(self) -> None:
        self.store._delete()


def retry_stash_for(context: Mapping[str, Any], log: logging.Logger | Any, secret: str | None = None) -> RetryStash:
    """The store this Airflow release offers the task: its state store, else a Variable signed
    with ``secret`` (the service token); read only from the second try on.

    >>> retry_stash_for({}, logging.getLogger()).where
    'nowhere'
    """
    ti = context.get("ti") or context.get("task_instance")
    accessor = context.get("task_state_store")
    store: _BestEffort
    if accessor is not None:
        store = TaskStateStash(accessor, log)
    elif ti is not None and getattr(ti, "run_id", None):
        map_index = getattr(ti, "map_index", -1)
        store = VariableStash(variable_key(ti.dag_id, ti.task_id, ti.run_id, -1 if map_index is None else map_index),
                              log, secret)
    else:
        return NoStash(log)
    return store if (getattr(ti, "try_number", None) or 1) > 1 else FirstTry(store)


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
