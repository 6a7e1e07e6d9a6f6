"""Client settings read from an Airflow connection of type ``namelookup``.

The connection holds the bearer token in ``password`` and the base URL in ``host``
(with or without scheme; ``https`` is assumed, or the ``scheme`` extra). Extras tune
the client: ``timeout``, ``connect_timeout``, ``batch_size``, ``max_retries``,
``backoff_base``, ``max_concurrency``.

Example::

    >>> from airflow.sdk import Connection
    >>> conn = Connection(conn_id="nl", conn_type="namelookup", host="http://127.0.0.1:8765",
    ...                   password="secret-token", extra='{"batch_size": 50, "max_concurrency": 16}')
    >>> settings = ClientSettings.from_connection(conn)
    >>> settings.base_url, settings.batch_size, settings.max_concurrency
    ('http://127.0.0.1:8765', 50, 16)
    >>> "secret-token" in repr(settings)
    False
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_namelookup import DEFAULT_BASE_URL
from airflow_provider_namelookup.api import DEFAULT_BATCH_SIZE, RetryPolicy
from airflow_provider_namelookup.hooks.concurrency import DEFAULT_MAX_CONCURRENCY


def _number(extra: Mapping[str, Any], key: str, default: float, *, integer: bool = False,
            minimum: float = 0) -> Any:
    value = extra.get(key)
    if value is None or value == "":
        return default
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"connection extra {key!r} must be a number, got {value!r}") from None
    if number < minimum:
        raise ValueError(f"connection extra {key!r} must be at least {minimum}, got {value!r}")
    return number


def base_url_from(host: str | None, port: int | None = None, scheme: str | None = None) -> str:
    """The service's base URL from a connection's host (and optional port and scheme)."""
    host = (host or "").strip().rstrip("/")
    if not host:
        return DEFAULT_BASE_URL
    if "://" not in host:
        host = f"{scheme or 'https'}://{host}"
    if port and host.count(":") < 2:
        host = f"{host}:{port}"
    return host.removesuffix("/v2")


@dataclass(frozen=True)
class ClientSettings:
    """Everything a hook needs to reach the service.

    :param base_url: scheme, host and port, without the ``/v2`` prefix.
    :param token: the bearer token; never shown by ``repr``.
    :param timeout: read/write/pool timeout in seconds.
    :param connect_timeout: connect timeout in seconds.
    :param batch_size: most queries sent in one array request.
    :param retry: the retry policy.
    :param max_concurrency: the most requests in flight at once (async hook); the
        number actually in flight adapts below it.
    """

    base_url: str = DEFAULT_BASE_URL
    token: str | None = field(default=None, repr=False)
    timeout: float = 30.0
    connect_timeout: float = 5.0
    batch_size: int = DEFAULT_BATCH_SIZE
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY

    @classmethod
    def from_connection(cls, conn: Any) -> ClientSettings:
        """Read a connection (``airflow.sdk.Connection`` or anything with the same fields)."""
        extra = conn.extra_dejson if hasattr(conn, "extra_dejson") else {}
        return cls.from_parts(host=conn.host, port=conn.port, password=conn.password, extra=extra)

    @classmethod
    def from_parts(cls, *, host: str | None, port: int | None, password: str | None,
                   extra: Mapping[str, Any]) -> ClientSettings:
        defaults = RetryPolicy()
        return cls(
            base_url=base_url_from(host, port, extra.get("scheme")),
            token=password or None,
            timeout=_number(extra, "timeout", 30.0, minimum=0.001),
            connect_timeout=_number(extra, "connect_timeout", 5.0, minimum=0.001),
            batch_size=_number(extra, "batch_size", DEFAULT_BATCH_SIZE, integer=True, minimum=1),
            retry=RetryPolicy(
                max_retries=_number(extra, "max_retries", defaults.max_retries, integer=True),
                backoff_base=_number(extra, "backoff_base", defaults.backoff_base),
            ),
            max_concurrency=_number(extra, "max_concurrency", DEFAULT_MAX_CONCURRENCY, integer=True, minimum=1),
        )
