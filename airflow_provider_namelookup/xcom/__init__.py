"""The XCom-list ends of a lookup run (the XCom operators): items in, aligned results out.

Example::

    from airflow_provider_namelookup.xcom import list_run

    run = list_run(QueryRules(LookupKind.GENDER), ["Anna", "anna", {"full_name": "John Smith"}], hook, log)
    await run.run()                        # 2 distinct queries, 2 credits
    run.results                            # 3 results, in input order
    run.answers                            # what is known, by query hash (what was paid, and saved ones)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_namelookup.engine.plan import QueryRules
from airflow_provider_namelookup.engine.ports import LookupService, Result
from airflow_provider_namelookup.engine.progress import RunProgress
from airflow_provider_namelookup.engine.run import LookupRun, RunOptions
from airflow_provider_namelookup.personal.pseudonym import Pseudonymiser
from airflow_provider_namelookup.personal.service import PseudonymisingService
from airflow_provider_namelookup.xcom.cache import MemoryAnswerCache
from airflow_provider_namelookup.xcom.sink import ListResults
from airflow_provider_namelookup.xcom.source import ListQuestions, as_item_list

__all__ = ["ListQuestions", "ListResults", "ListRun", "MemoryAnswerCache", "as_item_list", "list_run"]


@dataclass
class ListRun:
    """A lookup run over a list, with its ends typed.

    :param lookup: the run itself (its progress).
    :param cache: its answers: those an earlier try saved, and those it paid for.
    :param sink: the results, one per item.
    """

    lookup: LookupRun
    cache: MemoryAnswerCache
    sink: ListResults

    async def run(self) -> RunProgress:
        return await self.lookup.run()

    @property
    def progress(self) -> RunProgress:
        return self.lookup.state.progress

    @property
    def results(self) -> list[Result]:
        """One result per input item, in input order (after :meth:`run`)."""
        return self.sink.results

    @property
    def answers(self) -> dict[str, Result]:
        """Every answer known by query hash: saved by an earlier try, and paid for by this run."""
        return self.cache.answers

    @property
    def answered_here(self) -> int:
        """Answers this run received (not the saved ones)."""
        return len(self.cache.answers) - self.cache.reused

    @property
    def to_ask(self) -> int:
        """Distinct queries no answer was known for: the run's need."""
        return len(self.lookup.to_ask)


def list_run(rules: QueryRules, items: Sequence[Any], service: LookupService, log: logging.Logger | Any,
             options: RunOptions | None = None, *, query_field: str | int | None = None,
             saved: Mapping[str, dict[str, Any]] | None = None, label: str = "list",
             on_failure: Callable[[BaseException, ListRun], None] | None = None) -> ListRun:
    """A run over ``items``: answers saved by an earlier try (``saved``) are not paid again.

    :param on_failure: called with the error and the run when a step fails (after its answers are
        in its cache, before the summary), to keep what it paid for.
    """
    cache = MemoryAnswerCache(saved)
    pseudonymiser = Pseudonymiser(rules.identity_key) if rules.identity_key is not None else None
    if pseudonymiser is not None:  # the echoes are hashed as each answer comes, before the cache or the stash
        service = PseudonymisingService(service, pseudonymiser)
    sink = ListResults(cache, rules.abstain, pseudonymiser)
    run: ListRun

    def failed(err: BaseException, paid: int, maybe_charged: int) -> None:
        if on_failure is not None:
            on_failure(err, run)
    lookup = LookupRun(rules, ListQuestions(items, rules, query_field, label=label), cache, sink, service, log,
                       options, on_failure=failed)
    run = ListRun(lookup, cache, sink)
    return run
