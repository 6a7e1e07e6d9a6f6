"""Trigger that waits, on the triggerer, until an account has enough credits.

It polls the free statistic call through :class:`NameLookupAsyncHook` (the connection
is fetched asynchronously) and fires exactly one event:

* ``{"status": "success", "statistic": {...}}`` once ``remaining_credits >= min_credits``;
* ``{"status": "error", "status_id": ..., "message": ...}`` on a mistake waiting cannot fix
  (a wrong token or base URL, a connection that can never be answered:
  :data:`~airflow_provider_namelookup.errors.UNFIXABLE_SERVICE_ERRORS`; a ``namelookup_conn_id``
  that is not defined, ``connection-not-found``; a connection whose extras are wrong,
  ``connection-invalid``), the message saying what to change;
* ``{"status": "timeout", "statistic": <last one or None>, "message": ...}`` once the
  ``deadline`` passes (the trigger enforces it itself, so it never polls forever even
  where the triggerer's own timeout is not applied, as in ``dag.test()``).

Transient errors (network, 5xx, 429 after the hook's own retries) are logged and the
next poll goes on. The trigger holds no state, so a triggerer restart repeats nothing
but a free statistic call.

Example::

    self.defer(trigger=NameLookupCreditsTrigger("namelookup_default", min_credits=500,
                                                poke_interval=300),
               method_name="execute_complete")
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.providers.common.compat.sdk import AirflowNotFoundException
from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_namelookup.errors import UNFIXABLE_SERVICE_ERRORS, NameLookupError, with_what_to_change
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook


class NameLookupCreditsTrigger(BaseTrigger):
    """Fire when the account behind ``namelookup_conn_id`` has at least ``min_credits`` left.

    :param namelookup_conn_id: connection of type ``namelookup``.
    :param min_credits: credits that must remain.
    :param poke_interval: seconds between statistic calls.
    :param deadline: POSIX time after which the trigger gives up with a timeout event.
    """

    def __init__(self, namelookup_conn_id: str, min_credits: int, poke_interval: float = 60.0,
                 deadline: float | None = None) -> None:
        super().__init__()
        self.namelookup_conn_id = namelookup_conn_id
        self.min_credits = int(min_credits)
        self.poke_interval = float(poke_interval)
        self.deadline = None if deadline is None else float(deadline)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "namelookup_conn_id": self.namelookup_conn_id,
            "min_credits": self.min_credits,
            "poke_interval": self.poke_interval,
            "deadline": self.deadline,
        })

    def hook(self) -> NameLookupAsyncHook:
        return NameLookupAsyncHook(self.namelookup_conn_id)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        last: dict[str, Any] | None = None
        async with self.hook() as hook:
            try:
                await hook.aget_settings()
            except AirflowNotFoundException:
                yield TriggerEvent({"status": "error", "status_id": "connection-not-found",
                                    "message": f"namelookup_conn_id {self.namelookup_conn_id!r} is not defined: add a "
                                               "connection of type namelookup with that id (the API token in its "
                                               "password), or name one that exists"})
                return
            except ValueError as err:  # an extra out of its limits (its message names it)
                yield TriggerEvent({"status": "error", "status_id": "connection-invalid",
                                    "message": f"connection {self.namelookup_conn_id!r}: {err}"})
                return
            while True:
                try:
                    statistic = await hook.get_statistic()
                except UNFIXABLE_SERVICE_ERRORS as err:
                    yield TriggerEvent({"status": "error", "status_id": err.status_id,
                                        "message": with_what_to_change(err)})
                    return
                except NameLookupError as err:
                    self.log.warning("Could not read the credits, trying again in %.0f s: %s", self.poke_interval, err)
                else:
                    last = statistic
                    remaining = statistic.get("remaining_credits")
                    if isinstance(remaining, int) and remaining >= self.min_credits:
                        yield TriggerEvent({"status": "success", "statistic": statistic})
                        return
                    self.log.info("%s credits remaining, waiting for %d", remaining, self.min_credits)
                if self.deadline is not None and time.time() + self.poke_interval > self.deadline:
                    yield TriggerEvent({"status": "timeout", "statistic": last,
                                        "message": f"fewer than {self.min_credits} credits remained until the "
                                                   "sensor's timeout"})
                    return
                await asyncio.sleep(self.poke_interval)
