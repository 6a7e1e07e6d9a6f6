"""Every reach of the provider into a third-party library's private attributes, each with its reason.

A private attribute may change in any release of the library without notice: each reach is
here, named in :data:`PRIVATE_REACHES` with why no public way serves, so that an upgrade of the
library is checked in one place. Nothing else in the package reads or writes another library's
``_`` attribute (``tests/test_third_party.py`` checks the source for it).

Example::

    connection = fresh_databricks_connection(DatabricksSqlHook("warehouse"))
    column = variable_value_column(Variable)          # Variable._val, read without decrypting
"""

from __future__ import annotations

from typing import Any

PRIVATE_REACHES: dict[str, str] = {
    "airflow.providers.databricks.hooks.databricks_sql.DatabricksSqlHook._sql_conn":
        "DatabricksSqlHook.get_conn() hands back the last connection it made, closed or lost included, and has no "
        "public way to forget it (its own run() sets it to None after closing it): a run's store after a lost "
        "connection would fail on the dead one and lose answers paid for, and a run's second session would "
        "share the first's (fresh_databricks_connection)",
    "airflow.models.variable.Variable._val":
        "the column of a Variable's stored (maybe encrypted) value: reading the column, not Variable objects, keeps "
        "every usage record read out of the secrets masker (variable_value_column)",
    "httpx.AsyncHTTPTransport._pool":
        "httpx builds its transport's httpcore pool itself and takes no network backend: the async hook's transport "
        "swaps the pool's backend for one that checks idle connections more cheaply (hooks/sockets.py; "
        "with_network_backend)",
    "httpcore.AsyncConnectionPool._network_backend":
        "the backend the pool opens its connections with, a constructor argument httpx does not pass on: set on "
        "the pool httpx built, before any connection is made (with_network_backend)",
}
"""``module.Class._attribute`` -> why the provider reaches it."""


def fresh_databricks_connection(hook: Any) -> Any:
    """A new connection of a ``DatabricksSqlHook`` (see :data:`PRIVATE_REACHES`)."""
    if hasattr(hook, "_sql_conn"):
        hook._sql_conn = None
    return hook.get_conn()


def variable_value_column(variable_model: Any) -> Any:
    """The SQLAlchemy column of a Variable's stored value (see :data:`PRIVATE_REACHES`)."""
    return variable_model._val


def with_network_backend(transport: Any, backend: Any) -> bool:
    """Give the httpcore pool of an ``httpx.AsyncHTTPTransport`` ``backend`` (see :data:`PRIVATE_REACHES`);
    False, and the transport left as it was, when httpx no longer builds such a pool."""
    import httpcore

    pool = getattr(transport, "_pool", None)
    if not (isinstance(pool, httpcore.AsyncConnectionPool) and hasattr(pool, "_network_backend")):
        return False
    pool._network_backend = backend
    return True
