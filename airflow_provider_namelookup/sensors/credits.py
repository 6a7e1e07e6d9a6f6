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

from airflow_provider_namelookup.errors import (
    NameLookupAuthError,
    NameLookupConnectionMisconfigured,
    NameLookupError,
)
from airflow_provider_namelookup.hooks.namelookup import NameLookupHook
from airflow_provider_namelookup.operators.token_masking import MasksTokenBeforeRendering
from airflow_provider_namelookup.triggers.credits import NameLookupCreditsTrigger
from airflow_provider_namelookup.usage.recorder import RecordsUsage, records_usage


class NameLookupCreditsSensor(MasksTokenBeforeRendering, RecordsUsage, BaseSensorOperator):
    """Wait until ``remaining_credits >= min_credits`` (each poke is a free statistic call).

    Transient errors (network, 5xx, 429) during a poke are logged and the next poke
    tries again. An authentication error (missing or invalid token) or a connection that
    can never answer (https to a plain-HTTP port) fails the sensor at once, even with
    ``soft_fail``: waiting cannot fix it, and skipping would hide it.
    Each execution (a try; each poke in ``reschedule`` mode) leaves a usage record with the
    remaining credits it read (:mod:`airflow_provider_namelookup.usage`).

    :param min_credits: credits that must remain (templated; may come from an XCom).
    :param namelookup_conn_id: connection of type ``namelookup``.
    :param deferrable: wait on the triggerer instead of a worker slot
        (default: ``[operators] default_deferrable``).
    """

    template_fields = ("min_credits",)
    ui_color = "#d7ecfb"

    def __init__(self, *, min_credits: int | str = 1,
                 namelookup_conn_id: str = NameLookupHook.default_conn_name,
                 deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.min_credits = min_credits
        self.namelookup_conn_id = namelookup_conn_id
        self.deferrable = deferrable

    @property
    def required(self) -> int:
        try:
            return int(self.min_credits)
        except (TypeError, ValueError):
            raise ValueError(f"min_credits must be an integer, got {self.min_credits!r}") from None

    _poke_hook: tuple[Any, NameLookupHook] | None = None

    def _hook_of_this_execution(self) -> NameLookupHook:
        """One hook per execution (its HTTP client closed after each poke), counted once in the
        usage record however many pokes a ``poke``-mode wait makes."""
        usage = self.usage
        if self._poke_hook is None or self._poke_hook[0] is not usage:
            self._poke_hook = (usage, usage.watch(NameLookupHook(self.namelookup_conn_id)))
        return self._poke_hook[1]

    def poke(self, context: Context) -> PokeReturnValue:
        required = self.required
        try:
            with self._hook_of_this_execution() as hook:
                statistic = hook.get_statistic()
        except (NameLookupAuthError, NameLookupConnectionMisconfigured):
            raise
        except NameLookupError as err:
            self.log.warning("Could not read the credits, trying again at the next poke: %s", err)
            return PokeReturnValue(is_done=False)
        remaining = statistic.get("remaining_credits")
        self.log.info("%s credits remaining, %d required", remaining, required)
        done = isinstance(remaining, int) and remaining >= required
        return PokeReturnValue(is_done=done, xcom_value=statistic if done else None)

    @records_usage
    def execute(self, context: Context) -> Any:
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

    @records_usage
    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired; only the trigger's two event kinds are accepted."""
        self.usage.note_statistic(event.get("statistic") if isinstance(event, dict) else None)
        if isinstance(event, dict) and event.get("status") == "success" and isinstance(event.get("statistic"), dict):
            self.log.info("%s credits remaining", event["statistic"].get("remaining_credits"))
            return event["statistic"]
        if isinstance(event, dict) and event.get("status") == "error":
            raise NameLookupAuthError(str(event.get("status_id") or "auth-error"), str(event.get("message")))
        if isinstance(event, dict) and event.get("status") == "timeout":
            raise AirflowSensorTimeout(f"Sensor has timed out: {event.get('message')}")
        raise AirflowException(f"NameLookupCreditsTrigger sent an unexpected event: {event!r}")
