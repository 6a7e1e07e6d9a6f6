"""What the one run (:mod:`~airflow_provider_namelookup.engine.run`) needs from its ends and the service.

A run reads distinct questions from a :class:`QuestionSource`, keeps and shares answers
in an :class:`AnswerCache`, asks the :class:`LookupService` what nobody answered yet, and
writes what it learned to a :class:`Sink`. Two sets of adapters implement the ends: an
XCom list (:mod:`airflow_provider_namelookup.xcom`, an in-memory cache seeded from the
retry stash) and a warehouse table (:mod:`airflow_provider_namelookup.warehouse`, the
shared answers table with leases); the async hook
(:class:`~airflow_provider_namelookup.hooks.namelookup.NameLookupAsyncHook`) is the service.

Example (the list adapters, which keep everything in memory)::

    run = LookupRun(spec, ListQuestions(items, spec), MemoryAnswerCache(saved), ListResults(), hook, log)
    summary = await run.run()
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from airflow_provider_namelookup.api import LostAnswers
from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import Query

Result = dict[str, Any]
"""One answer of the service, as it came (a gender or a country-of-origin result)."""


@dataclass(frozen=True, slots=True)
class SourceValue:
    """One distinct value of a source, before planning.

    :param ref: the sink's handle on the rows holding this value (a list index; a table's
        raw ``(name, country)``).
    :param query_object: the query object to plan (a mapping; None when refused).
    :param refusal: why the value cannot even be read as a query (a list item of the wrong
        shape), or None.
    :param rows: how many rows hold it.
    :param first_key: the lowest key of those rows (a table's rows carry prices by key).
    :param shown: the value as a log line may show it (the raw name).
    """

    ref: Any
    query_object: Mapping[str, Any] | None
    refusal: NameLookupValidationError | None = None
    rows: int = 1
    first_key: Any = None
    shown: Any = None


@dataclass(frozen=True, slots=True)
class Question:
    """A source value after planning (:func:`~.plan.plan_value`): its query and the query's hash,
    or the rule it broke (``error``; the hash then identifies the invalid value)."""

    ref: Any
    query: Query | None
    query_hash: str
    error: NameLookupValidationError | None = None
    rows: int = 1
    first_key: Any = None
    shown: Any = None

    @property
    def valid(self) -> bool:
        return self.query is not None


class QuestionSource(Protocol):
    """Distinct values to look up, in pages.

    :attr:`distinct_bound` is known once the first page is read: how many distinct values
    :meth:`pages` yields in all (at most), so a run can check a bound on its need before the
    last page; :attr:`total_rows` is set once :meth:`pages` is exhausted (rows the source holds,
    changed or not); :attr:`reads_while_writing` says whether it can read on a connection of its
    own while the run writes on another (else it reads everything before the first page);
    :attr:`asks_while_reading` whether the run may ask a page's queries before the next page
    (each page then costs statements of its own, which a cloud warehouse bills).
    """

    label: str
    reads_while_writing: bool
    asks_while_reading: bool
    total_rows: int
    distinct_bound: int | None

    async def prepare(self) -> bool:
        """Check the source can be read; False when it holds no row."""
        ...

    def pages(self, *, own_connection: bool = False) -> AsyncGenerator[Sequence[SourceValue]]:
        """Pages of distinct values that need an answer (new or changed rows only).

        :param own_connection: read on a connection of its own, so that the run may write to
            the cache between pages (it looks up while it reads).
        """
        ...

@dataclass
class ClaimOutcome:
    """What a claim found for the questions it asked for."""

    mine: list[str] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)
    held_by_others: set[str] = field(default_factory=set)


class Claim(Protocol):
    """A group of questions claimed together (see :meth:`AnswerCache.plan_claims`)."""

    hashes: list[str]


class AnswerCache(Protocol):
    """Where answers are kept and shared, and where concurrent runs divide the work.

    :attr:`fresh` says it holds no answer yet (made by this run), so every valid question will
    be asked; :attr:`lease_seconds` is None for a cache no other run shares (no claims to renew);
    :attr:`store_every` is the most seconds an answer waits to be stored (0: at once), so
    that a cache whose writes cost (a warehouse's statements) gets them together, and at the
    latest when :attr:`store_batch` answers wait.
    """

    name: str
    store_every: float
    store_batch: int
    fresh: bool

    @property
    def lease_seconds(self) -> float | None: ...

    async def prepare(self, *, create: bool) -> bool:
        """Find the cache (``create=False``: nothing is made) or make it; whether it is ready as it is
        (True: nothing to create or alter, so the run may go on without checking the service first)."""
        ...

    async def register(self, questions: Sequence[Question]) -> None:
        """Learn the questions of one page (the warehouse loads them beside its tables)."""
        ...

    async def answered(self, hashes: Collection[str]) -> set[str]:
        """Which of ``hashes`` have an answer that is still fresh."""
        ...

    def plan_claims(self, hashes: Sequence[str]) -> Sequence[Claim]:
        """Group the hashes to ask into claims, in this run's order."""
        ...

    async def claim(self, claim: Claim) -> ClaimOutcome:
        """Claim what nobody answered or holds; say what is now this run's to ask."""
        ...

    async def store(self, answers: Mapping[str, Result]) -> set[str]:
        """Keep answers this run paid for; the hashes kept (a claim taken over is not)."""
        ...

    async def release(self, claim: Claim | None = None) -> None:
        """Give up claims not answered (of ``claim``, or all this run holds)."""
        ...

    async def renew(self) -> None:
        """Extend this run's leases."""
        ...

    async def keep_lost(self, credits: int) -> None:
        """Keep what this run's lost answers may have cost (``credits`` charged for answers that never
        came), where later runs of its task instance count it (``max_credits_scope="dag_run"``)."""
        ...

    async def close(self) -> None:
        """The run is over: drop what it kept only for itself (staging tables)."""
        ...


@dataclass
class RunOutcome:
    """What a run learned, for its sink.

    :param questions: every planned question, in the order read.
    :param answered: hashes with an answer (before this run, from others, or paid here).
    :param paid_here: hashes this run paid for.
    :param deferred: hashes left for a later run (the budget).
    """

    questions: list[Question]
    answered: set[str]
    paid_here: set[str]
    deferred: set[str]


class Sink(Protocol):
    """Where a run's results go."""

    async def prepare(self, *, create: bool) -> bool:
        """Find the sink (``create=False``: nothing is made) or make it; whether it is ready as it is
        (True: nothing to create or alter)."""
        ...

    async def fill(self, outcome: RunOutcome) -> None:
        """Write the rows of every answered (or invalid) question."""
        ...


class StatementCounts(Protocol):
    """What a warehouse end counts of its SQL statements (read when a run's summary is made)."""

    @property
    def statements(self) -> int:
        """Every statement sent so far."""
        ...

    @property
    def store_statements(self) -> int:
        """Of them, those that stored answers."""
        ...


@dataclass(frozen=True)
class NetworkState:
    """The service connection right now: requests in flight, how many are allowed, the smoothed latency."""

    in_flight: int = 0
    allowed: int = 0
    latency_ms: float = 0.0


class CallCounts(Protocol):
    """What the service's calls cost so far (read when a summary is made)."""

    requests: int
    retries: int
    credits_used: int
    credits_maybe_charged: int
    queries_maybe_charged_twice: int


class LookupService(Protocol):
    """The service, as a run uses it: answers to planned queries, the account's credits, counters.

    :attr:`counters` counts the calls (the run's summary reads them, nothing copies them);
    :attr:`shown_url` is the base URL as a log line may show it.
    """

    @property
    def counters(self) -> CallCounts: ...

    @property
    def shown_url(self) -> str: ...

    def network(self) -> NetworkState: ...

    async def remaining_credits(self) -> int:
        """The account's remaining credits (a free call)."""
        ...

    def answers(self, lookup: LookupKind, queries: Mapping[str, Query], *,
                lost_answers: LostAnswers | None = None) -> AsyncIterator[dict[str, Result]]:
        """Answers by query hash, as each request comes back; on a failure, the answers of the
        requests in flight come first, then the error.

        :param queries: ``{hash: query}``: validated (the plan's), sent with the hash as id.
        :param lost_answers: told of each answer lost after its request was sent (it may have been
            charged), and asked before such a request is sent again (the run's budget).
        """
        ...
