"""What the one run (:mod:`~airflow_provider_namelookup.engine.run`) needs from its two ends.

A run reads distinct questions from a :class:`QuestionSource`, keeps and shares answers
in an :class:`AnswerCache`, and writes what it learned to a :class:`Sink`. Two sets of
adapters implement them: an XCom list (:mod:`airflow_provider_namelookup.lists`, an
in-memory cache seeded from the retry stash) and a warehouse table
(:mod:`airflow_provider_namelookup.warehouse`, the shared answers table with leases).

Example (the list adapters, which keep everything in memory)::

    run = LookupRun(spec, ListQuestions(items, spec), MemoryAnswers(saved), ListResults(), hook, log)
    summary = await run.run()
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from airflow_provider_namelookup.engine.plan import PlannedRow
from airflow_provider_namelookup.errors import NameLookupValidationError

Result = dict[str, Any]
"""One answer of the service, as it came (a gender or a country-of-origin result)."""


@dataclass(frozen=True, slots=True)
class SourceValue:
    """One distinct value of a source, before planning.

    :param ref: the sink's handle on the rows holding this value (a list index; a table's
        raw ``(name, country)``).
    :param raw: the query object to plan (a mapping), or the error that refuses it outright
        (None once planned: the run keeps its values, not their query objects).
    :param rows: how many rows hold it.
    :param first_key: the lowest key of those rows (a table's rows carry prices by key).
    :param shown: the value as a log line may show it (the raw name).
    """

    ref: Any
    raw: Mapping[str, Any] | NameLookupValidationError | None
    rows: int = 1
    first_key: Any = None
    shown: Any = None


@dataclass(frozen=True, slots=True)
class Question:
    """A source value after planning: a query (with its hash) or the rule it broke."""

    value: SourceValue
    planned: PlannedRow

    @property
    def query_hash(self) -> str:
        return self.planned.query_hash

    @property
    def valid(self) -> bool:
        return self.planned.query is not None


class QuestionSource(Protocol):
    """Distinct values to look up, in pages.

    :attr:`total_rows` is set once :meth:`pages` is exhausted (rows the source holds,
    changed or not); :attr:`reads_while_writing` says whether lookups may start before
    the last page (the source reads on a connection of its own).
    """

    label: str
    reads_while_writing: bool
    total_rows: int

    async def prepare(self) -> bool:
        """Check the source can be read; False when it holds no row."""
        ...

    def pages(self, *, separately: bool = False) -> AsyncIterator[Sequence[SourceValue]]:
        """Pages of distinct values that need an answer (new or changed rows only).

        :param separately: read on a connection of its own, so that the run may write to the
            cache between pages (it looks up while it reads).
        """
        ...

    async def row_bound(self) -> int:
        """An upper bound on the distinct values :meth:`pages` may yield (its row count)."""
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

    :attr:`lease_seconds` is None for a cache no other run shares (no claims to renew);
    :attr:`store_every` is the most seconds an answer waits to be stored (0: at once), so
    that a cache whose writes cost (a warehouse's statements) gets them together, and at the
    latest when :attr:`store_batch` answers wait.
    """

    name: str
    lease_seconds: float | None
    store_every: float
    store_batch: int

    async def prepare(self, *, create: bool) -> None: ...

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

    async def prepare(self, *, create: bool) -> None: ...

    async def fill(self, outcome: RunOutcome) -> None:
        """Write the rows of every answered (or invalid) question."""
        ...
