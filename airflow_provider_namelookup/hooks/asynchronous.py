"""The asynchronous hook: :class:`NameLookupAsyncHook` runs batches and country-of-origin lookups
concurrently over pooled ``httpx.AsyncClient`` instances
(:mod:`airflow_provider_namelookup.hooks.lanes`), as many at once as its adaptive controller allows
(:mod:`airflow_provider_namelookup.hooks.concurrency`), and spends a wait before a retry in
``asyncio.sleep``.

Import it from :mod:`airflow_provider_namelookup.hooks.namelookup`, its public module (and the
``__module__`` it carries, so triggers, pickles and log names keep naming
``airflow_provider_namelookup.hooks.namelookup.NameLookupAsyncHook``).

Example::

    from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook

    async with NameLookupAsyncHook("namelookup_default") as hook:
        results = await hook.gender_batch(["Anna", "John"])
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

import httpx

from airflow_provider_namelookup.api import (
    ApiRequest,
    LostAnswers,
    RawResponse,
    Send,
    Steps,
    gender_batch_call,
    origin_call,
    prepare_queries,
)
from airflow_provider_namelookup.contract import STATISTIC_PATH, LookupKind
from airflow_provider_namelookup.engine.ports import NetworkState, Result
from airflow_provider_namelookup.errors import NameLookupConnectionError, NameLookupError, parse_retry_after
from airflow_provider_namelookup.hooks.base import NameLookupHookBase, hook_or_class_method
from airflow_provider_namelookup.hooks.concurrency import ConcurrencyGate, ConcurrencyLimit, Outcome
from airflow_provider_namelookup.hooks.lanes import ClientLanes
from airflow_provider_namelookup.hooks.settings import ClientSettings
from airflow_provider_namelookup.hooks.sockets import idle_checked_transport
from airflow_provider_namelookup.hooks.transport_errors import display_url
from airflow_provider_namelookup.models import Query


def _outcome(response: httpx.Response) -> tuple[Outcome, float | None]:
    """What an answer says about the service's load, and the ``Retry-After`` it asked for."""
    status = response.status_code
    if status == 429 or status >= 500:
        return Outcome.CONGESTED, parse_retry_after(response.headers.get("Retry-After"))
    return (Outcome.OK if 200 <= status < 300 else Outcome.NEUTRAL), None


def _with_id(payload: dict[str, Any], id: str) -> dict[str, Any]:
    payload["id"] = id
    return payload


class _Stopped(Exception):
    """A call ended, sending nothing more, because another call of the same lookups gave up for good."""


def _alike(error: BaseException, first: BaseException) -> bool:
    """Whether a later call's error says nothing the first one did not (the same kind, the same status)."""
    return error is first or (type(error) is type(first) and getattr(error, "status_id", None) ==
                              getattr(first, "status_id", None))


async def _pause(seconds: float, stop: asyncio.Event | None) -> bool:
    """Wait ``seconds``, unless ``stop`` is set first; whether it was."""
    if stop is None:
        await asyncio.sleep(seconds)
        return False
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True


class NameLookupAsyncHook(NameLookupHookBase):
    """Asynchronous hook: the same calls as :class:`NameLookupHook`, awaited.

    Batches and country-of-origin lookups run concurrently over pooled ``httpx.AsyncClient``
    instances (:class:`~airflow_provider_namelookup.hooks.lanes.ClientLanes`); how many at once adapts
    to the service (:attr:`concurrency`, between 1 and ``max_concurrency``). The connection is
    fetched without blocking the event loop.

    :param max_concurrency: the most requests in flight at once; default: the
        connection's ``max_concurrency`` extra, else 64.

    Example::

        async with NameLookupAsyncHook(max_concurrency=16) as hook:
            results = await hook.gender_batch(names)
            hook.concurrency.current, hook.concurrency.latency   # e.g. (16, 0.104)
    """

    __module__ = "airflow_provider_namelookup.hooks.namelookup"  # where it is imported from (see the module)

    _lanes: ClientLanes | None = None
    _gate: ConcurrencyGate | None = None

    @property
    def concurrency(self) -> ConcurrencyLimit:
        """The controller of requests in flight, shared by every request of this hook."""
        if self._gate is None:
            self._gate = ConcurrencyGate(ConcurrencyLimit(self.max_concurrency))
        return self._gate.limit

    @property
    def gate(self) -> ConcurrencyGate:
        self.concurrency  # noqa: B018 (creates the gate)
        assert self._gate is not None
        return self._gate

    async def aget_settings(self) -> ClientSettings:
        if self._settings is None:
            from airflow.providers.common.compat.connection import get_async_connection

            conn = await get_async_connection(self.namelookup_conn_id, hook=self)
            self._settings = ClientSettings.from_connection(conn)
        return self._settings

    async def alanes(self) -> ClientLanes:
        if self._lanes is None:
            settings = await self.aget_settings()
            await self._atls(settings)
            self._lanes = ClientLanes(lambda size: httpx.AsyncClient(**self._async_client_options(settings, size)),
                                      self._ceiling(settings))
        return self._lanes

    def _async_client_options(self, settings: ClientSettings, connections: int) -> dict[str, Any]:
        """The client options, with httpx's transport checking its idle connections more cheaply
        (:mod:`.sockets`) unless a transport was given."""
        options = self._client_options(settings, connections)
        if options["transport"] is None:
            options["transport"] = idle_checked_transport(verify=options["verify"], limits=options["limits"])
        return options

    async def aclient(self) -> httpx.AsyncClient:
        """An HTTP client of this hook (the first of its
        :class:`~airflow_provider_namelookup.hooks.lanes.ClientLanes`)."""
        return (await self.alanes()).clients[0]

    async def get_async_conn(self) -> httpx.AsyncClient:
        """The pooled async HTTP client (the async counterpart of ``get_conn``)."""
        return await self.aclient()

    async def aclose(self) -> None:
        if self._lanes is not None:
            lanes, self._lanes = self._lanes, None
            await lanes.aclose()

    async def __aenter__(self) -> NameLookupAsyncHook:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _send(self, request: ApiRequest, stop: asyncio.Event | None = None
                    ) -> RawResponse | NameLookupConnectionError:
        lanes = await self.alanes()
        headers = self._headers(request, await self.aget_settings())
        gate = self.gate
        ticket = await gate.acquire(request.path, stop=stop)
        if ticket is None:  # the call's run stopped while it waited for a slot: nothing was sent
            raise _Stopped
        lane = lanes.least_busy()
        lanes.busy[lane] += 1
        started = time.monotonic()
        try:
            response = await lanes.clients[lane].request(request.method, request.path, content=self._body(request),
                                                         headers=headers)
        except httpx.HTTPError as exc:
            gate.release(ticket, Outcome.CONGESTED)
            self.counters.sent(request.path, None, time.monotonic() - started)
            return self._connection_error(exc, request)
        except BaseException:
            gate.cancel(ticket)
            raise
        finally:
            lanes.busy[lane] -= 1
        round_trip = time.monotonic() - started
        self.counters.sent(request.path, response.status_code, round_trip)
        outcome, retry_after = _outcome(response)
        gate.release(ticket, outcome, retry_after=retry_after)
        if request.path == STATISTIC_PATH and outcome is Outcome.OK:  # a lone request, sent before the lookups
            gate.limit.far_away(round_trip)
        return self._raw(response)

    async def run(self, steps: Steps, stop: asyncio.Event | None = None) -> Any:
        """Drive one call definition to its result (sending and sleeping as asked).

        :param stop: set when another call of the same lookups gave up for good: this one then sends
            nothing more (a request on its way is still answered; a wait for a slot or before a retry
            ends at once, raising :class:`_Stopped`).
        """
        await self.aget_settings()
        try:
            step = next(steps)
            while True:
                if isinstance(step, Send):
                    step = steps.send(await self._send(step.request, stop))
                    continue
                if stop is not None and stop.is_set():
                    raise _Stopped
                self._log_sleep(step)
                if await _pause(step.seconds, stop):
                    raise _Stopped
                step = steps.send(None)
        except StopIteration as done:
            return done.value
        except NameLookupError as err:
            self._name_the_source(err)
            raise
        finally:
            steps.close()

    async def _concurrently(self, calls: Sequence[Callable[[], Steps]]) -> AsyncIterator[tuple[int, Any]]:
        """Run calls as many at a time as the controller allows; yield ``(index, result)``
        as they end.

        On the first failure (a call that gave up for good) the others send nothing more: no new
        call starts, a call waiting for a slot or before a retry ends at once, and a request on its
        way is awaited and its result yielded (its credits are spent: its answer must not be lost)
        but not sent again if it fails; then the first error is raised.
        """
        pending = iter(range(len(calls)))
        running: dict[asyncio.Task[Any], int] = {}
        first_error: BaseException | None = None
        stop = asyncio.Event()
        await self.aget_settings()
        limit = self.concurrency

        def start_more() -> None:
            while len(running) < limit.current:
                index = next(pending, None)
                if index is None:
                    return
                running[asyncio.ensure_future(self.run(calls[index](), stop))] = index

        start_more()
        try:
            while running:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    index = running.pop(task)
                    error = task.exception()
                    if error is None:
                        yield index, task.result()
                        if first_error is None:
                            start_more()
                    elif first_error is None:
                        first_error = error
                        stop.set()
                        self.gate.wake_all()  # calls waiting for a slot see the stop
                    elif not (isinstance(error, _Stopped) or _alike(error, first_error)):
                        self.log.warning("Another call failed too: %s", error)
        finally:
            for task in running:
                task.cancel()
        if first_error is not None:
            raise first_error

    # The lookup run's service port (engine.ports.LookupService) ---------------------------------
    @property
    def shown_url(self) -> str:
        """The service's base URL as a log line may show it (no credentials)."""
        return display_url(httpx.URL(self.settings.base_url)).rstrip("/")

    def network(self) -> NetworkState:
        """Requests in flight now, how many are allowed, and the smoothed latency."""
        limit = self.concurrency
        return NetworkState(in_flight=limit.in_flight, allowed=limit.current,
                            latency_ms=round((limit.latency or 0.0) * 1000, 1))

    async def remaining_credits(self) -> int:
        """The account's remaining credits (one free statistic call)."""
        return int((await self.get_statistic()).get("remaining_credits") or 0)

    async def answers(self, lookup: LookupKind, queries: Mapping[str, Query], *,
                      lost_answers: LostAnswers | None = None) -> AsyncIterator[dict[str, Result]]:
        """Answers to the queries a lookup run planned, by their hash, as each request comes back.

        The queries were validated, with the connection's token refused, when they were planned
        (:mod:`airflow_provider_namelookup.engine.plan`): they are sent as they are, each with its
        hash as its id, gender ones in arrays. Up to :attr:`concurrency` requests are in flight; on
        a failure the answers of the requests in flight are yielded before the error is raised.

        :param queries: ``{hash: query}``.
        :param lost_answers: told of each answer lost after its request was sent, and asked before
            such a request is sent again (the run's budget, which may stop it).
        """
        await self.aget_settings()
        payloads = [_with_id(query.to_payload(), key) for key, query in queries.items()]
        if lookup is LookupKind.GENDER:
            batches = self.sizer.chunks(payloads)
            calls = [lambda batch=batch: gender_batch_call(batch, self.sizer, self.policy, self.counters, lost_answers)
                     for batch in batches]
            async for index, results in self._concurrently(calls):
                yield {payload["id"]: result for payload, result in zip(batches[index], results, strict=True)}
        else:
            calls = [lambda payload=payload: origin_call(payload, self.policy, self.counters, lost_answers)
                     for payload in payloads]
            async for index, result in self._concurrently(calls):
                yield {payloads[index]["id"]: result}

    async def gender(self, *, first_name: str | None = None, full_name: str | None = None,
                     email: str | None = None, country: str | None = None, locale: str | None = None,
                     ip: str | None = None, id: int | str | None = None) -> dict[str, Any]:
        """Gender of one first name, full name or e-mail address (1 credit)."""
        await self.aget_settings()
        query = self._query(first_name=first_name, full_name=full_name, email=email, country=country,
                            locale=locale, ip=ip, id=id)
        return await self.run(self._gender_steps(query))

    async def iter_gender_batches(self, queries: Iterable[dict[str, Any] | str | Query]
                                  ) -> AsyncIterator[tuple[Sequence[Query], list[dict[str, Any]]]]:
        """Yield ``(queries, results)`` per array request as each is answered (any order).

        Up to :attr:`concurrency` requests are in flight. On a failure the requests in
        flight are still collected and yielded before the error is raised.
        """
        await self.aget_settings()
        async for _, batch, results in self._answered_batches(self._gender_batches(queries)):
            yield batch, results

    async def _answered_batches(self, batches: list[Sequence[Query]]
                                ) -> AsyncIterator[tuple[int, Sequence[Query], list[dict[str, Any]]]]:
        calls = [lambda batch=batch: self._batch_steps(batch) for batch in batches]
        async for index, results in self._concurrently(calls):
            yield index, batches[index], results

    async def gender_batch(self, queries: Iterable[dict[str, Any] | str | Query]) -> list[dict[str, Any]]:
        """Gender of any number of queries, in input order (1 credit each); each result's
        ``input`` is the query as given."""
        await self.aget_settings()
        given = prepare_queries(queries, secrets=self.secrets)
        batches = self._batched(given)
        starts = list(itertools.accumulate(map(len, batches), initial=0))
        results: list[dict[str, Any]] = [{} for _ in given]
        async for index, _, answered in self._answered_batches(batches):
            results[starts[index]:starts[index] + len(answered)] = answered
        return [self._as_given(query, result) for query, result in zip(given, results, strict=True)]

    async def iter_country_of_origin(self, queries: Iterable[dict[str, Any] | str | Query]
                                     ) -> AsyncIterator[tuple[Query, dict[str, Any]]]:
        """Yield ``(query, result)`` per country-of-origin lookup, concurrently (2 credits each)."""
        await self.aget_settings()
        prepared = prepare_queries(queries, hints=LookupKind.ORIGIN.takes_hints, secrets=self.secrets)
        calls = [lambda q=q: self._origin_steps(q) for q in prepared]
        async for index, result in self._concurrently(calls):
            yield prepared[index], result

    async def country_of_origin(self, *, first_name: str | None = None, full_name: str | None = None,
                                email: str | None = None, id: int | str | None = None) -> dict[str, Any]:
        """Countries of origin, language, meaning and ethnicity of a name (2 credits)."""
        await self.aget_settings()
        query = self._query(first_name=first_name, full_name=full_name, email=email, id=id)
        return await self.run(self._origin_steps(query))

    async def get_statistic(self) -> dict[str, Any]:
        """Remaining credits and last month's usage (0 credits)."""
        return await self.run(self._statistic_steps())

    async def test_connection(self) -> tuple[bool, str]:
        """Check the token with the free statistic call."""
        try:
            return True, self._describe_statistic(await self.get_statistic())
        except (NameLookupError, ValueError) as err:
            return False, str(err)

    @hook_or_class_method
    async def sign_up(cls, hook: NameLookupAsyncHook | None, email: str, *, accept_terms: bool,
                      newsletter: bool | None = None, locale: str | None = None,
                      base_url: str | None = None) -> dict[str, Any]:
        """Create a free account; no token needed (see :meth:`NameLookupHook.sign_up`)."""
        if hook is not None and base_url is None:
            return await hook.run(hook._signup_steps(email, accept_terms, newsletter, locale))
        async with cls._signup_hook(base_url) as fresh:
            return await fresh.run(fresh._signup_steps(email, accept_terms, newsletter, locale))

