"""The synchronous hook: :class:`NameLookupHook` sends each request on one pooled ``httpx.Client``
and spends a wait before a retry in ``time.sleep``.

Import it from :mod:`airflow_provider_namelookup.hooks.namelookup`, its public module (and the
``__module__`` it carries, so the connection type's hook class name, pickles and log names stay
``airflow_provider_namelookup.hooks.namelookup.NameLookupHook``).

Example::

    from airflow_provider_namelookup.hooks.namelookup import NameLookupHook

    with NameLookupHook("namelookup_default") as hook:
        hook.gender(first_name="Theresa", country="DE")["gender"]      # 'female'
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import Any

import httpx

from airflow_provider_namelookup.api import ApiRequest, RawResponse, Send, Steps, prepare_queries
from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.errors import NameLookupConnectionError, NameLookupError
from airflow_provider_namelookup.hooks.base import NameLookupHookBase, hook_or_class_method
from airflow_provider_namelookup.models import Query


class NameLookupHook(NameLookupHookBase):
    """Synchronous hook for the Name Lookup Service API v2.

    :param namelookup_conn_id: connection of type ``namelookup`` (token in ``password``,
        base URL in ``host``).
    :param settings: use these instead of reading the connection (see :meth:`for_url`).

    Example::

        hook = NameLookupHook()
        result = hook.gender(full_name="Theresa Miller")
        result["gender"], result["probability"]          # ('female', 0.98)
    """

    __module__ = "airflow_provider_namelookup.hooks.namelookup"  # where it is imported from (see the module)

    # The connection form for Airflow 3.1; 3.2 and later read it from the provider info
    # and never call these (they must sit on the registered class itself, not a base).
    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """The form's extra fields as wtforms fields (imported only when Airflow asks)."""
        from airflow_provider_namelookup.connection_form import form_widgets

        return form_widgets()

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Hidden, relabelled and prefilled standard fields of the form."""
        from airflow_provider_namelookup.connection_form import hook_field_behaviour

        return hook_field_behaviour()

    @cached_property
    def client(self) -> httpx.Client:
        """The pooled HTTP client (created on first use)."""
        return httpx.Client(**self._client_options(self.settings, connections=4))

    def get_conn(self) -> httpx.Client:
        """The pooled HTTP client (Airflow's hook convention); base URL and timeouts set,
        the token added per request by the hook's own calls."""
        return self.client

    def close(self) -> None:
        if "client" in self.__dict__:
            self.__dict__.pop("client").close()

    def __enter__(self) -> NameLookupHook:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _send(self, request: ApiRequest) -> RawResponse | NameLookupConnectionError:
        headers = self._headers(request, self.settings)
        started = time.monotonic()
        try:
            response = self.client.request(request.method, request.path, content=self._body(request), headers=headers)
        except httpx.HTTPError as exc:
            self.counters.sent(request.path, None, time.monotonic() - started)
            return self._connection_error(exc, request)
        self.counters.sent(request.path, response.status_code, time.monotonic() - started)
        return self._raw(response)

    def run(self, steps: Steps) -> Any:
        """Drive one call definition to its result (sending and sleeping as asked)."""
        try:
            step = next(steps)
            while True:
                if isinstance(step, Send):
                    step = steps.send(self._send(step.request))
                else:
                    self._log_sleep(step)
                    time.sleep(step.seconds)
                    step = steps.send(None)
        except StopIteration as done:
            return done.value
        except NameLookupError as err:
            self._name_the_source(err)
            raise
        finally:
            steps.close()  # a call interrupted between steps (Ctrl-C, a timeout) ends its definition at once

    def gender(self, *, first_name: str | None = None, full_name: str | None = None,
               email: str | None = None, country: str | None = None, locale: str | None = None,
               ip: str | None = None, id: int | str | None = None) -> dict[str, Any]:
        """Gender of one first name, full name or e-mail address (1 credit).

        :raises NameLookupValidationError: before sending, if the input breaks a rule.
        """
        query = self._query(first_name=first_name, full_name=full_name, email=email, country=country,
                            locale=locale, ip=ip, id=id)
        return self.run(self._gender_steps(query))

    def iter_gender_batches(self, queries: Iterable[dict[str, Any] | str | Query]
                            ) -> Iterator[tuple[Sequence[Query], list[dict[str, Any]]]]:
        """Yield ``(queries, results)`` per array request, as each one is answered.

        Everything is validated before the first request. Each query travels with an id: its
        own, else its hash (:meth:`Query.identity`), and answers are matched by it. If a later
        request fails, the batches already yielded are kept by the caller: nothing answered is lost.
        """
        for batch in self._gender_batches(queries):
            yield batch, self.run(self._batch_steps(batch))

    def gender_batch(self, queries: Iterable[dict[str, Any] | str | Query]) -> list[dict[str, Any]]:
        """Gender of any number of queries, in input order (1 credit each); each result's
        ``input`` is the query as given.

        A string is a first name; a dict is a query object. Sent as arrays of at most the
        batch size; answers are matched to queries by ``id``.
        """
        given = prepare_queries(queries, secrets=self.secrets)
        results: list[dict[str, Any]] = []
        for batch in self._batched(given):
            results.extend(self.run(self._batch_steps(batch)))
        return [self._as_given(query, result) for query, result in zip(given, results, strict=True)]

    def country_of_origin(self, *, first_name: str | None = None, full_name: str | None = None,
                          email: str | None = None, id: int | str | None = None) -> dict[str, Any]:
        """Countries of origin, language, meaning and ethnicity of a name (2 credits)."""
        query = self._query(first_name=first_name, full_name=full_name, email=email, id=id)
        return self.run(self._origin_steps(query))

    def iter_country_of_origin(self, queries: Iterable[dict[str, Any] | str | Query]
                               ) -> Iterator[tuple[Query, dict[str, Any]]]:
        """Yield ``(query, result)`` per country-of-origin lookup, one request each (2 credits each)."""
        for query in prepare_queries(queries, hints=LookupKind.ORIGIN.takes_hints, secrets=self.secrets):
            yield query, self.run(self._origin_steps(query))

    def get_statistic(self) -> dict[str, Any]:
        """Remaining credits and last month's usage (0 credits)."""
        return self.run(self._statistic_steps())

    def test_connection(self) -> tuple[bool, str]:
        """Check the token with the free statistic call."""
        try:
            return True, self._describe_statistic(self.get_statistic())
        except (NameLookupError, ValueError) as err:
            return False, str(err)

    @hook_or_class_method
    def sign_up(cls, hook: NameLookupHook | None, email: str, *, accept_terms: bool,
                newsletter: bool | None = None, locale: str | None = None,
                base_url: str | None = None) -> dict[str, Any]:
        """Create a free account; no token needed. Ask the user for consent first.

        Called on a hook, it signs up at that hook's service (its connection's host, e.g.
        the emulator); called on the class, at ``base_url`` (the public service by default).
        The answer holds ``api_token`` and ``password``: store the token in a connection's
        password field; it works once the e-mail address is confirmed.

        Example::

            NameLookupHook("namelookup_local").sign_up("me@example.com", accept_terms=True)
            NameLookupHook.sign_up("me@example.com", accept_terms=True)   # https://gender-api.com
        """
        if hook is not None and base_url is None:
            return hook.run(hook._signup_steps(email, accept_terms, newsletter, locale))
        with cls._signup_hook(base_url) as fresh:
            return fresh.run(fresh._signup_steps(email, accept_terms, newsletter, locale))
