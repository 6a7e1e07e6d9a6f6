"""Hooks for the Name Lookup Service API v2: :class:`NameLookupHook` (sync) and
:class:`NameLookupAsyncHook` (async, for triggers and concurrent batches).

Both drive the same call definitions (:mod:`airflow_provider_namelookup.api`), so they
validate, batch, retry and parse identically; they differ only in how a request is
sent and how a wait is spent.

Retry policy (see :class:`~airflow_provider_namelookup.api.RetryPolicy`):

* retried: connection errors and timeouts, HTTP 5xx, HTTP 429 (``Retry-After`` is
  honoured, up to 120 s);
* never retried: any other 4xx, including ``limit-exceeded`` (HTTP 401: no credits
  left) and validation errors;
* ``max_retries`` (default 5) retries after the first attempt, waiting
  ``backoff_base * 2**n`` seconds (default base 0.5 s, at most 30 s) with jitter.

Concurrency (async hook): requests in flight adapt between 1 and ``max_concurrency``
(default 64; the ``max_concurrency`` connection extra or argument) with an AIMD
controller shared by all requests of the hook (:mod:`airflow_provider_namelookup.hooks.concurrency`): they grow while
answers come back fast and clean, and shrink on 429, 5xx, timeouts and lost
connections; a ``Retry-After`` stops every new request until it has passed.

Every call has a connect timeout (default 5 s) and a read timeout (default 30 s). The
HTTP clients (HTTP/1.1, keep-alive) live per hook instance; close them with ``close()`` /
``aclose()`` or use the hook as a context manager. The async hook spreads its
``max_concurrency`` connections over clients of at most 2 connections each, one TLS
context for all (:mod:`airflow_provider_namelookup.hooks.lanes` says why). The token is sent
only in the ``Authorization`` header: it never appears in logs, exception messages or ``repr()``, and a query that
carries it (as a name, id or hint) is refused before sending
(:mod:`airflow_provider_namelookup.token_guard`).

Errors say where they came from: an error from the service names the connection
(``invalid-auth-token (HTTP 400) from connection 'namelookup_local': ...``; a hook made
with :meth:`~airflow_provider_namelookup.hooks.base.NameLookupHookBase.for_url` names its base
URL), and a request that got no answer names the URL tried and the cause
(:mod:`airflow_provider_namelookup.hooks.transport_errors`).

This is the hooks' public module: the classes are written in modules of one job each, and
carry this module's name as their ``__module__`` (the connection type's hook class name, pickles
and log names say ``airflow_provider_namelookup.hooks.namelookup``):

* :mod:`airflow_provider_namelookup.hooks.base`: what both share (the connection, settings,
  token header, call definitions);
* :mod:`airflow_provider_namelookup.hooks.sync`: :class:`NameLookupHook`;
* :mod:`airflow_provider_namelookup.hooks.asynchronous`: :class:`NameLookupAsyncHook`.

Example::

    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook

    with NameLookupHook("namelookup_default") as hook:
        hook.gender(first_name="Theresa", country="DE")["gender"]      # 'female'
        hook.gender_batch(["Anna", {"full_name": "John Smith"}])       # one request
        hook.get_statistic()["remaining_credits"]
"""

from __future__ import annotations

from airflow_provider_namelookup.hooks.asynchronous import NameLookupAsyncHook
from airflow_provider_namelookup.hooks.base import NameLookupHookBase, hook_or_class_method
from airflow_provider_namelookup.hooks.settings import ClientSettings
from airflow_provider_namelookup.hooks.sync import NameLookupHook

# In the order the API reference shows them: the sync hook first.
__all__ = [  # noqa: RUF022
    "NameLookupHook", "NameLookupAsyncHook", "NameLookupHookBase", "ClientSettings", "hook_or_class_method",
]
