"""Client settings read from an Airflow connection of type ``namelookup``.

The connection holds the bearer token in ``password`` and the base URL in ``host``
(with or without scheme; ``https`` is assumed, or the ``scheme`` extra). Extras tune
the client; their names, defaults and limits are
:data:`~airflow_provider_namelookup.contract.CLIENT_SETTINGS`.

Example::

    >>> from airflow.providers.common.compat.sdk import Connection
    >>> conn = Connection(conn_id="nl", conn_type="namelookup", host="http://127.0.0.1:8765",
    ...                   password="secret-token", extra='{"batch_size": 50, "max_concurrency": 16}')
    >>> settings = ClientSettings.from_connection(conn)
    >>> settings.base_url, settings.batch_size, settings.max_concurrency, settings.timeout
    ('http://127.0.0.1:8765', 50, 16, 30.0)
    >>> "secret-token" in repr(settings)
    False
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_namelookup.api import RetryPolicy
from airflow_provider_namelookup.contract import CLIENT_DEFAULTS, CLIENT_SETTINGS, DEFAULT_BASE_URL, ClientSetting

_SETTINGS = {s.name: s for s in CLIENT_SETTINGS}


def _read(extra: Mapping[str, Any], setting: ClientSetting) -> Any:
    """A setting's value from the connection extras, checked against its limits; its default when absent."""
    value = extra.get(setting.name)
    integer = setting.kind == "integer"
    if value is None or value == "":
        return int(setting.default) if integer else setting.default
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"connection extra {setting.name!r} must be {'an integer' if integer else 'a number'}, "
                         f"got {_described(value)}") from None
    if number < setting.minimum or (setting.maximum is not None and number > setting.maximum):
        bounds = f"at least {setting.minimum:g}" if setting.maximum is None else \
            f"from {setting.minimum:g} to {setting.maximum:g}"
        raise ValueError(f"connection extra {setting.name!r} must be {bounds}, got {number:g}")
    return number


def _described(value: Any) -> str:
    """What a wrong extra holds, without quoting text: a token pasted into the wrong field would
    be shown wherever the message goes (a task log, the credits view).

    >>> _described("Zq8wJd3XkP0s9LmN"), _described([1, 2])
    ('a text of 16 characters', 'a list')
    """
    if isinstance(value, str):
        return f"a text of {len(value)} characters"
    return f"a {type(value).__name__}"


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
    timeout: float = CLIENT_DEFAULTS["timeout"]
    connect_timeout: float = CLIENT_DEFAULTS["connect_timeout"]
    batch_size: int = int(CLIENT_DEFAULTS["batch_size"])
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_concurrency: int = int(CLIENT_DEFAULTS["max_concurrency"])

    @classmethod
    def from_connection(cls, conn: Any) -> ClientSettings:
        """Read a connection (``airflow.sdk.Connection`` or anything with the same fields)."""
        extra = conn.extra_dejson if hasattr(conn, "extra_dejson") else {}
        return cls.from_parts(host=conn.host, port=conn.port, password=conn.password, extra=extra)

    @classmethod
    def from_parts(cls, *, host: str | None, port: int | None, password: str | None,
                   extra: Mapping[str, Any]) -> ClientSettings:
        value = {name: _read(extra, setting) for name, setting in _SETTINGS.items()}
        return cls(
            base_url=base_url_from(host, port, extra.get("scheme")),
            token=password or None,
            timeout=value["timeout"],
            connect_timeout=value["connect_timeout"],
            batch_size=value["batch_size"],
            retry=RetryPolicy(max_retries=value["max_retries"], backoff_base=value["backoff_base"]),
            max_concurrency=value["max_concurrency"],
        )
