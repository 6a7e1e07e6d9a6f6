"""Read and plan: a run's source pages become questions, each distinct query one ledger entry.

Each page's values are planned (:func:`~.plan.plan_value`): a query with its hash, or the rule it
broke (it costs nothing). The answer cache learns the page's questions and says which new hashes
it has an answer for; the rest is the run's need (:attr:`PagePlanner.to_ask`).

Example::

    planner = PagePlanner(rules, source, state)   # state: the run's RunState
    await planner.read(pages)                 # every page planned, the need sorted out at the end
    planner.to_ask                            # the hashes to claim and ask
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from airflow_provider_namelookup.engine.invalid import InvalidValues
from airflow_provider_namelookup.engine.ledger import QueryState
from airflow_provider_namelookup.engine.plan import QueryRules, plan_value
from airflow_provider_namelookup.engine.ports import Question, QuestionSource, SourceValue
from airflow_provider_namelookup.engine.queues import HashQueue
from airflow_provider_namelookup.engine.state import RunState


class PagePlanner:
    """Plans a run's pages into its ledger and finds what the cache answers already.

    :param rules: how values become queries.
    :param source: the run's source (its row count, read at the end).
    :param state: the run's shared state (:class:`~.state.RunState`): the cache learns each page's
        questions, every distinct query enters the ledger here, invalid values are told in the log.
    :param log_values: its lines show an example value beside the key (else the key alone).
    """

    def __init__(self, rules: QueryRules, source: QuestionSource, state: RunState, *,
                 log_values: bool = False) -> None:
        self.rules = rules
        self.source = source
        self.state = state
        self.questions: list[Question] = []
        """Every planned value, in the order read (the sink's input)."""
        self.to_ask: list[str] = []
        """The hashes no answer was found for when they were read: the run's need."""
        self.invalid = InvalidValues(rules.secrets, show_values=log_values)
        self._ahead: tuple[Sequence[SourceValue], tuple[list[Question], list[str]]] | None = None

    def plan_page(self, values: Sequence[SourceValue]) -> tuple[list[Question], list[str]]:
        """Plan a page's values and count them; the page's questions and its hashes new to the run
        (the ledger keeps each query without the caller's id: its hash is the id on the wire)."""
        page = [plan_value(value, self.rules) for value in values]
        self.questions += page
        new: list[str] = []
        progress, ledger = self.state.progress, self.state.ledger
        for question in page:
            progress.rows_read += question.rows
            if question.query is None:
                assert question.error is not None
                progress.rows_invalid += question.rows
                self.invalid.note(question.error, question)
            elif ledger.add(question.query_hash, question.query.with_id(None), rows=question.rows):
                new.append(question.query_hash)
        return page, new

    def plan_ahead(self, values: Sequence[SourceValue]) -> None:
        """Plan the first page now, while the run waits for something else (the statistic call of
        a first run); :meth:`read` takes the plan instead of planning the page again."""
        self._ahead = (values, self.plan_page(values))

    def _planned(self, values: Sequence[SourceValue]) -> tuple[list[Question], list[str]]:
        if self._ahead is not None and self._ahead[0] is values:
            planned, self._ahead = self._ahead[1], None
            return planned
        return self.plan_page(values)

    async def find_answered(self, page: list[Question], new: list[str]) -> list[str]:
        """Hand the questions to the cache; mark the new hashes it has an answer for; the others."""
        if not page:
            return []
        await self.state.cache.register(page)
        answered = await self.state.cache.answered(new) if new else set()
        self.state.ledger.move(answered, QueryState.CACHED)
        to_ask = [h for h in new if h not in answered]
        self.to_ask += to_ask
        self.state.progress.distinct_queries = len(self.to_ask)
        return to_ask

    async def read(self, pages: AsyncIterator[Sequence[SourceValue]], to_claim: HashQueue | None = None, *,
                   tell_progress: bool = True) -> None:
        """Plan every page. Without ``to_claim`` the pages are sorted out together at the end (one
        registration); with it each page is sorted out as it comes, and its hashes to ask go to the
        claimer at once (then None, when the source is read).

        :param tell_progress: log the reading's progress lines (not while lookups run beside the
            reading: theirs replace them).
        """
        try:
            async for values in pages:
                page, new = self._planned(values)
                if to_claim is not None and (to_ask := await self.find_answered(page, new)):
                    await to_claim.put(to_ask)
                    # the claimer sends the page's claim now, and the warehouse makes it while the
                    # next page (already read, where the source is read whole first) is planned
                    await asyncio.sleep(0)
                if tell_progress:
                    self.state.progress.tick(self.state.log)
            if to_claim is None:
                await self.find_answered(self.questions, self.state.ledger.hashes(QueryState.NEW))
            self.state.progress.lookups_while_reading = self.state.progress.lookups if to_claim is not None else 0
        finally:
            if to_claim is not None:
                await to_claim.put(None)
        self.state.progress.rows_unchanged = self.source.total_rows - self.state.progress.rows_read
        self.state.progress.rows_read = self.source.total_rows
        self.invalid.log(self.state.log, self.state.progress.label)
