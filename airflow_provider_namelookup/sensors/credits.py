"""Sensor that lets a DAG run go on only when the account has enough credits left.

Example::

    from airflow_provider_namelookup.sensors import NameLookupCreditsSensor

    wait = NameLookupCreditsSensor(
        task_id="wait_for_credits",
        min_credits="{{ ti.xcom_pull('plan')['credits_needed'] }}",  # or a number
        mode="reschedule", poke_interval=600, timeout=6 * 3600, soft_fail=True,
    )
    # XCom: the statistic, e.g. {"remaining_credits": 812, "is_limit_reached": false, ...}
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from airflow.providers.common.compat.sdk import (
    AirflowException,
    AirflowSensorTimeout,
    BaseSensorOperator,
    Context,
    PokeReturnValue,
    conf,
)

from airflow_provider_namelookup.errors import InvalidArgument, NameLookupError
from airflow_provider_namelookup.hooks.namelookup import NameLookupHook
from airflow_provider_namelookup.operators.base import (
    UNFIXABLE_BY_RETRY,
    fail_without_retry_on_unfixable_errors,
    service_connection,
)
from airflow_provider_namelookup.operators.token_masking import MasksTokenBeforeRendering
from airflow_provider_namelookup.triggers.credits import NameLookupCreditsTrigger
from airflow_provider_namelookup.usage.recorder import RecordsUsage, records_usage


class MinCreditsInvalid(InvalidArgument):
    """``min_credits`` is not a whole number of credits: no retry can fix it."""


def required_credits(value: Any) -> int:
    """``min_credits`` as a number: a whole number of at least 0, or its digits as text (what a
    template renders to).

    >>> required_credits(500), required_credits(" 40 ")
    (500, 40)
    >>> required_credits("lots")
    Traceback (most recent call last):
    ...
    MinCreditsInvalid: min_credits must be a whole number of credits (0 or more), got 'lots'
    """
    number = value.strip() if isinstance(value, str) else value
    if isinstance(number, str) and number.isascii() and number.isdigit():
        return int(number)
    if isinstance(number, int) and not isinstance(number, bool) and number >= 0:
        return number
    raise MinCreditsInvalid(f"min_credits must be a whole number of credits (0 or more), got {value!r}")


def _templated(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


class UnfixableWait(NameLookupError):
    """The trigger met a mistake no wait can fix (its ``error`` event), raised on the worker
    when the sensor resumes: it fails the task at once, like the same error met by a poke.
    Its message is the trigger's (which says what to change)."""

    def __str__(self) -> str:
        return self.detail



class NameLookupCreditsSensor(MasksTokenBeforeRendering, RecordsUsage, BaseSensorOperator):
    """Wait until ``remaining_credits >= min_credits`` (each poke is a free statistic call).

    Transient errors (network, 5xx, 429) during a poke are logged and the next poke
    tries again. A mistake no wait and no retry can fix fails the sensor at its first try,
    without Airflow's retries (an ``AirflowFailException``) and **also with** ``soft_fail``:
    a wrong or missing token (the service answers 400, 401 or 403), a wrong base URL (404),
    a connection that can never answer (https to a plain-HTTP port), a ``namelookup_conn_id``
    that is not defined. ``soft_fail`` skips when the credits do not come in time, which
    is what it is for; a wrong token is a configuration error, and skipping would hide it
    (every run would skip, and its downstream tasks with it). The error says what to change
    (the connection's password, or its host). Only ``never_fail=True`` (skip whatever
    happens) still skips, and ``silent_fail=True`` still logs the error and pokes again
    until ``timeout``: both are asked for explicitly.
    Each execution (a try; each poke in ``reschedule`` mode) leaves a usage record with the
    remaining credits it read (:mod:`airflow_provider_namelookup.usage`).

    :param min_credits: credits that must remain, a whole number of at least 0 (templated; may come
        from an XCom). One that can never be a number fails when the DAG is parsed; a template that
        renders to no number fails the task at once (``AirflowFailException``), naming it.
    :param namelookup_conn_id: connection of type ``namelookup``.
    :param deferrable: wait on the triggerer instead of a worker slot
        (default: ``[operators] default_deferrable``).
    """

    template_fields = ("min_credits",)
    ui_color = "#d7ecfb"
    unfixable_errors: tuple[type[Exception], ...] = (*UNFIXABLE_BY_RETRY, UnfixableWait)
    """Errors that fail the sensor at once (see the class docstring)."""

    def __init__(self, *, min_credits: int | str = 1,
                 namelookup_conn_id: str = NameLookupHook.default_conn_name,
                 deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not _templated(min_credits):
            required_credits(min_credits)  # a value that can never be a number fails when the DAG is parsed
        self.min_credits = min_credits
        self.namelookup_conn_id = namelookup_conn_id
        self.deferrable = deferrable

    @property
    def required(self) -> int:
        """``min_credits`` after templating, as a number (:class:`MinCreditsInvalid` fails the task at once)."""
        return required_credits(self.min_credits)

    _poke_hook: tuple[Any, NameLookupHook] | None = None

    def _hook_of_this_execution(self) -> NameLookupHook:
        """One hook per execution (its HTTP client closed after each poke), counted once in the
        usage record however many pokes a ``poke``-mode wait makes."""
        usage = self.usage
        if self._poke_hook is None or self._poke_hook[0] is not usage:
            service_connection(self.namelookup_conn_id)  # a warehouse's connection here fails at once
            self._poke_hook = (usage, usage.watch(NameLookupHook(self.namelookup_conn_id)))
        return self._poke_hook[1]

    def poke(self, context: Context) -> PokeReturnValue:
        required = self.required
        try:
            with self._hook_of_this_execution() as hook:
                statistic = hook.get_statistic()
        except self.unfixable_errors:
            raise  # not an AirflowFailException here: the base sensor would turn it into a skip (soft_fail)
        except NameLookupError as err:
            self.log.warning("Could not read the credits, trying again at the next poke: %s", err)
            return PokeReturnValue(is_done=False)
        remaining = statistic.get("remaining_credits")
        self.log.info("%s credits remaining, %d required", remaining, required)
        done = isinstance(remaining, int) and remaining >= required
        return PokeReturnValue(is_done=done, xcom_value=statistic if done else None)

    @records_usage
    def execute(self, context: Context) -> Any:
        # Outside the base sensor's loop, which would skip an AirflowFailException under soft_fail.
        with fail_without_retry_on_unfixable_errors(self.unfixable_errors):
            self.required  # noqa: B018 - a min_credits that rendered to no number fails here, before any poke
            if not self.deferrable:
                return super().execute(context)
            first = self.poke(context)
        if first.is_done:
            return first.xcom_value
        self.defer(
            trigger=NameLookupCreditsTrigger(self.namelookup_conn_id, self.required, self.poke_interval,
                                             deadline=time.time() + self.timeout),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None, context: Context) -> Any:
        """Back from the trigger: an error event fails at once (the base sensor turns an
        ``AirflowException`` into a skip under ``soft_fail``, so it is converted after it)."""
        with fail_without_retry_on_unfixable_errors(self.unfixable_errors):
            return super().resume_execution(next_method, next_kwargs, context)

    @records_usage
    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired; only the trigger's two event kinds are accepted."""
        self.usage.note_statistic(event.get("statistic") if isinstance(event, dict) else None)
        if isinstance(event, dict) and event.get("status") == "success" and isinstance(event.get("statistic"), dict):
            self.log.info("%s credits remaining", event["statistic"].get("remaining_credits"))
            return event["statistic"]
        if isinstance(event, dict) and event.get("status") == "error":
            raise UnfixableWait(str(event.get("status_id") or "auth-error"), str(event.get("message")))
        if isinstance(event, dict) and event.get("status") == "timeout":
            raise AirflowSensorTimeout(f"Sensor has timed out: {event.get('message')}")
        raise AirflowException(f"NameLookupCreditsTrigger sent an unexpected event: {event!r}")
