"""The live state of each ``namelookup`` connection's account, for the credits view.

One free statistic call per connection, kept for :data:`STATISTIC_TTL_SECONDS`, so however
many people look at the view, the service is asked at most once a minute per connection
(concurrent requests wait for the one call in flight). An unreachable service, a refused
token or a missing connection is kept for the same minute as an ``error`` naming what
happened, never a token: the errors of the hook never hold one, and anything else is shown
by its class only. The call is made with a short timeout and one retry, so a dead service
costs the view seconds, not the hook's minutes of backoff.

Example::

    statistics = AccountStatistics()
    [state] = statistics.get_many(["namelookup_default"])
    state.remaining_credits, state.error            # (812, None) or (None, "unreachable: ...")
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from airflow_provider_namelookup.api import RetryPolicy
from airflow_provider_namelookup.connection_form import CONN_TYPE
from airflow_provider_namelookup.errors import NameLookupConnectionError, NameLookupError
from airflow_provider_namelookup.hooks.namelookup import NameLookupHook
from airflow_provider_namelookup.hooks.settings import ClientSettings
from airflow_provider_namelookup.token_guard import mask_secrets
from airflow_provider_namelookup.usage.report import ConnectionState

NO_SUCH_CONNECTION = "no such Name Lookup connection"
"""The state of a conn_id that names no connection, or one of another type: the same words for
both, so that a usage record naming a connection reveals nothing about it."""
STATISTIC_TTL_SECONDS = 60.0
VIEW_TIMEOUT_SECONDS = 5.0
VIEW_RETRY = RetryPolicy(max_retries=1, backoff_base=0.2)


def view_settings(conn: Any) -> ClientSettings:
    """The connection's settings with the view's short timeouts and single retry."""
    settings = ClientSettings.from_connection(conn)
    return dataclasses.replace(settings, retry=VIEW_RETRY, timeout=min(settings.timeout, VIEW_TIMEOUT_SECONDS),
                               connect_timeout=min(settings.connect_timeout, VIEW_TIMEOUT_SECONDS))


def account_of(settings: ClientSettings) -> str:
    """An opaque identity of the account behind ``settings`` (service and token); stays on the server."""
    return hashlib.sha256(f"{settings.base_url}\0{settings.token or ''}".encode()).hexdigest()[:16]


def describe(error: BaseException) -> str:
    """What the view says when a statistic could not be read.

    >>> describe(NameLookupConnectionError("no answer to GET /v2/statistic: ConnectError"))
    'unreachable: transport-error: no answer to GET /v2/statistic: ConnectError'
    >>> describe(KeyError("secret"))
    'KeyError'
    """
    if isinstance(error, NameLookupConnectionError):
        return f"unreachable: {error}"
    if isinstance(error, (NameLookupError, ValueError)):
        return str(error)
    if type(error).__name__ == "AirflowNotFoundException":
        return NO_SUCH_CONNECTION
    return type(error).__name__


def fetch_statistic(conn_id: str) -> ConnectionState:
    """Ask the service behind ``conn_id`` for its statistic (the api-server's connection lookup:
    environment, secrets backends, metadata database)."""
    from airflow.models.connection import Connection

    conn = None
    try:
        conn = Connection.get_connection_from_secrets(conn_id)
        if conn.conn_type != CONN_TYPE:
            return ConnectionState(conn_id, error=NO_SUCH_CONNECTION, account=conn_id)
        settings = view_settings(conn)
        with NameLookupHook(conn_id, settings=settings) as hook:
            statistic = hook.get_statistic()
    except Exception as err:  # shown in the view, next to the connection, never with its token
        return ConnectionState(conn_id, error=mask_secrets(describe(err), _secrets_of(conn), min_length=4),
                               account=conn_id)
    return ConnectionState.from_statistic(conn_id, statistic, account_of(settings))


def _secrets_of(conn: Any) -> set[str]:
    """What a message about ``conn`` must not show: its password, and its extras' text values
    (a token pasted into the wrong field)."""
    if conn is None:
        return set()
    secrets = {conn.password} if conn.password else set()
    with contextlib.suppress(Exception):
        secrets.update(v for v in conn.extra_dejson.values() if isinstance(v, str) and len(v) >= 8)
    return secrets


class AccountStatistics:
    """Each connection's :class:`ConnectionState`, fetched at most once per ``ttl`` seconds.

    :param fetch: reads one connection's state (default: :func:`fetch_statistic`).
    :param clock: seconds, monotonic.
    """

    def __init__(self, ttl: float = STATISTIC_TTL_SECONDS,
                 fetch: Callable[[str], ConnectionState] = fetch_statistic,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._fetch = fetch
        self._clock = clock
        self._cached: dict[str, tuple[float, ConnectionState]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, conn_id: str) -> ConnectionState:
        with self._guard:
            lock = self._locks.setdefault(conn_id, threading.Lock())
        with lock:
            cached = self._cached.get(conn_id)
            if cached is not None and self._clock() - cached[0] < self.ttl:
                return cached[1]
            state = self._fetch(conn_id)
            self._cached[conn_id] = (self._clock(), state)
            return state

    def get_many(self, conn_ids: Iterable[str]) -> list[ConnectionState]:
        """The states of ``conn_ids``, asked concurrently, in the order given."""
        ids = list(dict.fromkeys(conn_ids))
        if len(ids) <= 1:
            return [self.get(i) for i in ids]
        with ThreadPoolExecutor(max_workers=min(8, len(ids)), thread_name_prefix="namelookup-statistic") as pool:
            return list(pool.map(self.get, ids))
