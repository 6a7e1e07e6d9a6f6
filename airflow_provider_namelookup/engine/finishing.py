"""Finish a run, whether it succeeded or failed: claims not answered are given back, the sink is
filled with what the run learned, what its lost answers may have cost kept beside the answers
(``max_credits_scope="dag_run"`` counts it in later tries), the cache closed, and the summary
logged last.

After a failure the first error is the one raised and a later one is only logged; the run's
``on_failure`` hears of it (with how many queries this run paid for, and what its lost answers may
have cost) before the summary.

Example::

    finisher = Finisher(planner, sink, spending, state, plan_only=False)   # state: the run's RunState
    await finisher.finish(failure)        # failure: the error the run stopped on, or None
"""

from __future__ import annotations

from collections.abc import Callable

from airflow_provider_namelookup.engine.ledger import ANSWERED_STATES, HOLDING, Ledger, QueryState
from airflow_provider_namelookup.engine.ports import Question, RunOutcome, Sink, StatementCounts
from airflow_provider_namelookup.engine.reading import PagePlanner
from airflow_provider_namelookup.engine.spending import Spending
from airflow_provider_namelookup.engine.state import RunState


def run_outcome(questions: list[Question], ledger: Ledger) -> RunOutcome:
    """What a run learned, for its sink: its questions, and which hashes are answered, paid here, deferred."""
    return RunOutcome(questions, set(ledger.hashes(*ANSWERED_STATES)), set(ledger.hashes(QueryState.PAID)),
                      set(ledger.hashes(QueryState.DEFERRED)))


class Finisher:
    """The end of one run (see the module docstring).

    :param planner: the run's questions.
    :param sink: what the run fills (a target table, an XCom list).
    :param spending: the run's spending (what its lost answers may have cost is kept through it).
    :param state: the run's shared state (:class:`~.state.RunState`): the cache closed, the ledger read.
    :param plan_only: the run spends and writes nothing (nothing to give back or fill).
    :param statements: the warehouse's statement counts, for the summary.
    :param on_failure: told of the error, the queries paid for and the credits answers lost on the way
        may have cost, when the run failed.
    """

    def __init__(self, planner: PagePlanner, sink: Sink, spending: Spending, state: RunState, *, plan_only: bool,
                 statements: StatementCounts | None = None,
                 on_failure: Callable[[BaseException, int, int], None] | None = None) -> None:
        self.planner = planner
        self.sink = sink
        self.spending = spending
        self.state = state
        self.plan_only = plan_only
        self.statements = statements
        self.on_failure = on_failure

    async def finish(self, failure: BaseException | None, *, fill: bool = True) -> None:
        """Give back the claims not answered, fill the sink, close the cache and log the summary (also
        after a failure: the first error is the one raised, a later one is logged).

        :param fill: False when the sink or the cache was never made (the run stopped before: a budget
            refusal); nothing was claimed, and no table is made to hold the rows."""
        try:
            try:
                if not self.plan_only and fill:
                    if self.state.ledger.count(*HOLDING):
                        await self.state.cache.release()
                        self.state.ledger.move(self.state.ledger.hashes(*HOLDING), QueryState.RELEASED)
                    await self.sink.fill(run_outcome(self.planner.questions, self.state.ledger))
            finally:
                await self.spending.forget_remaining_ahead()
                try:
                    if not self.plan_only and self.state.progress.credits_maybe_charged:
                        await self.state.cache.keep_lost(self.state.progress.credits_maybe_charged)
                finally:
                    await self.state.cache.close()
        except BaseException as err:
            if failure is None:
                failure = err
                raise
            self.state.log.error("While stopping: %s", err)
        finally:
            self._count_outcomes()
            if failure is not None and self.on_failure is not None:
                self.on_failure(failure, self.state.ledger.count(QueryState.PAID),
                                self.state.progress.credits_maybe_charged)
            self.state.progress.log_summary(self.state.log)

    def _count_outcomes(self) -> None:
        p, ledger = self.state.progress, self.state.ledger
        p.rows_enriched = ledger.rows(*ANSWERED_STATES)
        p.cache_hits = ledger.rows(QueryState.CACHED, QueryState.ANSWERED)
        p.rows_deferred = ledger.rows(QueryState.DEFERRED)
        if self.statements is not None:
            p.statements, p.store_statements = self.statements.statements, self.statements.store_statements
